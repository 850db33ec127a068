"""Golden move logs: recorded games replayed through the rules engines, checked against the file.

``tests/data/golden/{kontour,pictomania}.json`` each hold a setup, a move log recorded from an
AI-vs-AI game (the real AI driver, drawings from the shipped pack, an oracle recognizer that knows
the words) and the expected outcome: scores, winners, every turn / round result, and a SHA-256 of
the whole final state. Replaying the log must give exactly that: any change to the rules, the deal
or the scoring shows up here. Re-record on purpose only (and review the diff):
``.venv/bin/python -m tests.test_games_golden``.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from games.core import LoggedMove, replay
from games.kontour import KontourCard, KontourConfig, KontourRules, exact_judge
from games.pictomania import PictomaniaConfig, PictomaniaRules
from vocab import PictomaniaDeckCard, kontour_deck, pictomania_deck

GOLDEN = Path(__file__).parent / "data" / "golden"
KONTOUR_SETUP = {"players": ["ana", "bob", "cy"], "seed": 2026, "half": "top"}
KONTOUR_CONFIG = {"target_score": 7}
PICTO_SETUP = {"players": ["ana", "bob", "cy", "dan"], "seed": 2026}
PICTO_CONFIG = {"rounds": 2, "levels_per_round": [1, 2]}


def kontour_cards() -> list[KontourCard]:
    """The first 12 cards of the real deck (the replay needs only the words)."""
    return [
        KontourCard.model_validate({"top": c.top.model_dump(), "bottom": c.bottom.model_dump()})
        for c in kontour_deck()[:12]
    ]


def digest(state: Any) -> str:
    """SHA-256 of a state's canonical JSON."""
    text = json.dumps(state.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def kontour_outcome(state: Any) -> dict[str, Any]:
    return {
        "phase": state.phase,
        "scores": state.scores,
        "winners": list(state.winners),
        "history": [h.to_dict() for h in state.history],
        "sha256": digest(state),
    }


def pictomania_outcome(state: Any) -> dict[str, Any]:
    return {
        "phase": state.phase,
        "totals": state.totals,
        "winners": list(state.winners),
        "tables": [[list(card.words) for card in cards] for cards in state.round_cards],
        "results": [r.to_dict() for r in state.results],
        "sha256": digest(state),
    }


def picto_deck(golden: dict[str, Any]) -> list[PictomaniaDeckCard]:
    """The double-sided cards stored in the golden file (independent of later deck edits)."""
    return [PictomaniaDeckCard.model_validate(card) for card in golden["deck"]]


def load(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))


def test_kontour_golden_log_replays_to_the_recorded_outcome() -> None:
    golden = load("kontour")
    rules = KontourRules(KontourConfig.load(**golden["config"]), judge=exact_judge)
    setup = dict(golden["setup"], deck=golden["deck"])
    log = [LoggedMove.model_validate(m) for m in golden["moves"]]
    assert len(log) > 50 and {m.move["kind"] for m in log} >= {"draw_card", "choose_word", "stroke", "guess"}
    state, events = replay(rules, setup, log)
    assert kontour_outcome(state) == golden["expected"]
    assert events[-1].kind == "game_ended"


def test_pictomania_golden_log_replays_to_the_recorded_outcome() -> None:
    golden = load("pictomania")
    rules = PictomaniaRules(PictomaniaConfig.load(**golden["config"]))
    setup = dict(golden["setup"], deck=picto_deck(golden))  # real double-sided cards, as recorded
    log = [LoggedMove.model_validate(m) for m in golden["moves"]]
    assert {m.move["kind"] for m in log} >= {"stroke", "guess", "done", "next_round"}
    state, events = replay(rules, setup, log)
    assert pictomania_outcome(state) == golden["expected"]
    assert events[-1].kind == "game_ended"


@pytest.mark.parametrize("name", ["kontour", "pictomania"])
def test_a_changed_move_changes_the_outcome(name: str) -> None:
    """The comparison can fail: drop the first accepted answer / bet and the outcome differs."""
    golden = load(name)
    kind = "guess"
    moves = list(golden["moves"])
    index = next(i for i, m in enumerate(moves) if m["move"]["kind"] == kind)
    del moves[index]
    if name == "kontour":
        rules: Any = KontourRules(KontourConfig.load(**golden["config"]), judge=exact_judge)
        setup = dict(golden["setup"], deck=golden["deck"])
        outcome = kontour_outcome
    else:
        rules = PictomaniaRules(PictomaniaConfig.load(**golden["config"]))
        setup = dict(golden["setup"], deck=picto_deck(golden))
        outcome = pictomania_outcome
    try:
        state, _ = replay(rules, setup, [LoggedMove.model_validate(m) for m in moves])
    except Exception:  # a later move may now be refused: also a difference
        return
    assert outcome(state)["sha256"] != golden["expected"]["sha256"]


# ------------------------------------------------------------------------------------------------
# Recording (run this module as a script to re-record)


def _record() -> None:  # pragma: no cover - a maintenance script
    from games.ai import AIKit, KontourDriver, PictomaniaDriver, default_source, load_level
    from games.ai.driver import _as_strokes
    from model.strokes import straight_lines

    GOLDEN.mkdir(parents=True, exist_ok=True)
    kit = AIKit(default_source(), straight_lines)
    level = load_level("normal")

    class Recorder:
        def __init__(self, rules: Any, state: Any) -> None:
            self.rules, self.state, self.now, self.log, self.driver = rules, state, 0.0, [], None

        def apply(self, move: Any) -> list[Any]:
            self.state, events = self.rules.apply(self.state, move, self.now)
            self.log.append({"now": self.now, "move": move.to_dict()})
            self.driver.on_events(self.state, events, self.now)
            return events

    def oracle(word: str | None, drawing: list, candidates: tuple[str, ...], rng: random.Random) -> dict:
        strokes = len(drawing)
        sure = min(0.9, 0.12 * strokes) if word in candidates else 0.0
        rest = {c: rng.random() for c in candidates if c != word}
        total = sum(rest.values()) or 1.0
        probs = {c: (1 - sure) * v / total for c, v in rest.items()}
        if word in candidates:
            probs[word] = sure
        return probs

    rng = random.Random(7)
    rules = KontourRules(KontourConfig.load(**KONTOUR_CONFIG), judge=exact_judge)
    deck = [c.to_dict() for c in kontour_cards()]
    state, _ = rules.setup(deck=deck, **KONTOUR_SETUP)
    words = sorted({w for c in kontour_cards() for h in (c.top, c.bottom) for w in (h.blue, h.orange)})
    table = Recorder(rules, state)
    table.driver = KontourDriver(rules, KONTOUR_SETUP["players"], level, kit, 2026, words)
    while table.state.phase != "game_over":
        table.now = round(table.now + 0.1, 6)
        table.driver.step(table, table.now)
        for look in table.driver.looks():
            turn = table.state.turn
            word = turn.word if turn is not None else None
            table.driver.seen(look, oracle(word, look.drawing, look.candidates, rng), table.now)
    payload = {"setup": KONTOUR_SETUP, "config": KONTOUR_CONFIG, "deck": deck, "moves": table.log,
               "expected": kontour_outcome(table.state)}
    (GOLDEN / "kontour.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")

    rules_p = PictomaniaRules(PictomaniaConfig.load(**PICTO_CONFIG))
    state, _ = rules_p.setup(deck=list(pictomania_deck()), **PICTO_SETUP)
    table = Recorder(rules_p, state)
    players = PICTO_SETUP["players"]
    table.driver = PictomaniaDriver(rules_p, players, level, kit, 2026, state, next_round_s=1.0)
    while table.state.phase != "game_over":
        table.now = round(table.now + 0.25, 6)
        table.driver.step(table, table.now)
        for look in table.driver.looks():
            rnd = table.state.round
            word = rnd.word(look.subject) if _as_strokes(rnd.drawings[look.subject]) == look.drawing else None
            table.driver.seen(look, oracle(word, look.drawing, look.candidates, rng), table.now)
    payload = {"setup": PICTO_SETUP, "config": PICTO_CONFIG,
               "deck": [c.model_dump(mode="json") for c in pictomania_deck()],
               "moves": table.log, "expected": pictomania_outcome(table.state)}
    text = json.dumps(payload, separators=(",", ":"))
    (GOLDEN / "pictomania.json").write_text(text + "\n", encoding="utf-8")


def _refresh_expected() -> None:
    """Rewrite only the expected outcomes, by replaying the stored move logs (for a change of the
    state's shape, e.g. a new field: the recorded games stay the same)."""
    golden = load("kontour")
    rules = KontourRules(KontourConfig.load(**golden["config"]), judge=exact_judge)
    log = [LoggedMove.model_validate(m) for m in golden["moves"]]
    state, _ = replay(rules, dict(golden["setup"], deck=golden["deck"]), log)
    golden["expected"] = kontour_outcome(state)
    (GOLDEN / "kontour.json").write_text(json.dumps(golden, indent=1) + "\n", encoding="utf-8")
    golden = load("pictomania")
    rules_p = PictomaniaRules(PictomaniaConfig.load(**golden["config"]))
    log = [LoggedMove.model_validate(m) for m in golden["moves"]]
    state_p, _ = replay(rules_p, dict(golden["setup"], deck=picto_deck(golden)), log)
    golden["expected"] = pictomania_outcome(state_p)
    text = json.dumps(golden, separators=(",", ":"))
    (GOLDEN / "pictomania.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    import sys

    _refresh_expected() if "--expected" in sys.argv[1:] else _record()
