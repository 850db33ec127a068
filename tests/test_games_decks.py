"""Decks on a fresh clone: with no Quick, Draw! folder, the AI draws from the shipped drawing pack,
so the service and `griffon simulate` deal the REAL Kontour deck (all 84 cards) and the REAL
Pictomania cards; and the refusals of impossible games."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from games.core import BadSetup
from games.pictomania import PictomaniaRules
from games.words import kontour_deck, load_game_words, synthetic_kontour_deck
from griffon.launch import patient
from vocab import kontour_deck as real_kontour
from vocab import pictomania_deck as real_pictomania

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import json
from games.pictomania import PictomaniaConfig
from service.play.table_words import kontour_deck, load_words, pictomania_deck
from vocab import PictomaniaDeckCard
words = load_words()
cards, half = kontour_deck(words, seed=1)
deck, config = pictomania_deck(words, PictomaniaConfig.load(), seed=1)
print(json.dumps({"kontour": len(cards), "half": half, "drawable": len(words.drawable),
                  "pictomania_real": all(isinstance(c, PictomaniaDeckCard) for c in deck),
                  "pictomania": len(deck)}))
"""


def test_a_fresh_clone_with_no_data_folder_deals_the_real_decks(tmp_path: Path) -> None:
    empty = tmp_path / "no-data"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRIFFON_")}
    env["GRIFFON_DATA"] = str(empty)  # a data folder with nothing in it
    if "GRIFFON_CACHE_DIR" in os.environ:
        env["GRIFFON_CACHE_DIR"] = os.environ["GRIFFON_CACHE_DIR"]
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=patient(120), check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["kontour"] == len(real_kontour())  # all of them (84 today)
    assert found["pictomania_real"] and found["pictomania"] == len(real_pictomania())
    words = load_game_words()
    assert found["drawable"] >= len(words.deck_words())


def test_kontour_deck_rule_real_half_or_synthetic() -> None:
    words = load_game_words()
    cards = list(words.kontour_cards)
    everything = {w for c in cards for h in (c.top, c.bottom) for w in (h.blue, h.orange)}
    dealt, half = kontour_deck(cards, everything, seed=4)
    assert dealt == cards and half in ("top", "bottom")
    tops = {c.top.blue for c in cards}
    dealt, half = kontour_deck(cards, tops, seed=4)  # only the top halves can be drawn
    assert half == "top" and len(dealt) == len(cards)
    few = sorted(everything)[:8]
    dealt, half = kontour_deck(cards, few, seed=4)
    assert dealt == synthetic_kontour_deck(few, 4)


def test_pictomania_with_one_opponent_is_refused_with_a_typed_error() -> None:
    with pytest.raises(BadSetup, match="3-6 players, got 2"):
        PictomaniaRules().setup(players=["joueur", "ia1"], deck=list(real_pictomania()), seed=1)
