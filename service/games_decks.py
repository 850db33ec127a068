"""The words of a solo game: decks the AI can draw, French words, the answer judge.

The AI drawer can only draw words its `DrawingSource` has drawings of (the 55 shipped line
drawings, or a Quick, Draw! folder). Kontour keeps the real deck's cards whose played half has a
drawable word (the half with most such cards); Pictomania uses the real deck when every word is
drawable, else tables cut from the drawable words (as `griffon simulate` does).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import vocab
from games.ai.base import Related, no_relations, relations_from_groups
from games.ai.drawer import DrawingSource, ShippedLineDrawings, default_source
from games.kontour import KontourCard, WordPair
from games.pictomania import PictoCard, PictomaniaConfig
from games.simulate import synthetic_kontour_deck, synthetic_pictomania_deck

MIN_KONTOUR_CARDS = 10


class DeckSetupError(ValueError):
    """No playable deck can be built from the drawable words."""


@dataclass(frozen=True)
class Words:
    """Everything a game needs to know about words (shared by every game of the service)."""

    source: DrawingSource
    drawable: frozenset[str]
    related: Related
    kontour_cards: tuple[KontourCard, ...]
    picto_sides: tuple[PictoCard, ...]

    def french(self, key: str) -> str:
        """The French word of a category key (the key itself when unknown)."""
        try:
            return vocab.french(key)
        except KeyError:
            return key

    def key_for(self, text: str | None) -> str | None:
        """The category key a guess names, or None."""
        if not text:
            return None
        try:
            return vocab.category_for(text)
        except KeyError:
            return None

    def judge(self, key: str, text: str) -> bool:
        """Kontour judge: the French answer matcher."""
        return vocab.match(key, text).accepted


@cache
def load_words(drawings: Path | None = None) -> Words:
    """The shared word data: drawings from `drawings` (a Quick, Draw! folder) or the shipped lines."""
    sides = [side for card in vocab.pictomania_deck() for side in card.sides]
    source: DrawingSource = ShippedLineDrawings()
    if drawings is not None:
        words = {w for s in sides for w in s.words} | {w for c in vocab.kontour_deck() for w in c.words}
        source = default_source(drawings, categories=sorted(words))
    drawable = frozenset(k for k in source.keys() if source.drawings(k))
    vocabulary = vocab.load_vocabulary()
    drawable = frozenset(k for k in drawable if k in vocabulary)
    kontour = tuple(
        KontourCard(
            top=WordPair(blue=c.top.blue, orange=c.top.orange),
            bottom=WordPair(blue=c.bottom.blue, orange=c.bottom.orange),
        )
        for c in vocab.kontour_deck()
    )
    picto = tuple(PictoCard(level=s.level, words=s.words) for s in sides)
    related = relations_from_groups(s.words for s in sides) if sides else no_relations
    return Words(source, drawable, related, kontour, picto)


def kontour_deck(words: Words, seed: int) -> tuple[list[KontourCard], Literal["top", "bottom"]]:
    """Cards whose played half has a word the AI can draw, and that half."""
    best: tuple[list[KontourCard], Literal["top", "bottom"]] = ([], "top")
    for half in ("top", "bottom"):
        cards = [c for c in words.kontour_cards if {c.half(half).blue, c.half(half).orange} & words.drawable]
        if len(cards) > len(best[0]):
            best = (cards, half)
    if len(best[0]) >= MIN_KONTOUR_CARDS:
        return best
    if len(words.drawable) < 4:
        raise DeckSetupError("fewer than 4 drawable words: no Kontour deck")
    return synthetic_kontour_deck(words.drawable, seed), "top"


def kontour_candidates(cards: Sequence[KontourCard], half: str, labels: Collection[str]) -> list[str]:
    """The words an AI guesser considers: every word of the played half the model knows."""
    keys = {w for c in cards for w in (c.half(half).blue, c.half(half).orange)}  # type: ignore[arg-type]
    return sorted(keys & set(labels))


def pictomania_deck(
    words: Words, config: PictomaniaConfig, seed: int
) -> tuple[list[PictoCard], PictomaniaConfig]:
    """The real deck when the AI can draw every word on it, else tables of drawable words."""
    sides = list(words.picto_sides)
    if sides and all(w in words.drawable for s in sides for w in s.words):
        return sides, config
    try:
        return synthetic_pictomania_deck(words.drawable, config, random.Random(seed).randrange(10**9))
    except ValueError as error:
        raise DeckSetupError(str(error)) from error
