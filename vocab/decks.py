"""Card decks of both games, read from YAML, validated, and dealt.

- Kontour (``data/kontour_deck.yaml``): cards with a top and a bottom half, each half a **blue**
  word (easier, 1 pt) and an **orange** word (harder, 2 pts). Generated from the measured
  difficulty by ``python -m vocab.build_decks`` (blue from levels 1–2, orange from levels 3–4).
- Pictomania (``data/pictomania_deck.yaml``, hand-written): double-sided cards of one level
  (1–4), each side a theme of exactly 7 category keys numbered 1–7.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vocab.vocabulary import DATA_DIR, Vocabulary, VocabularyError, load_vocabulary

__all__ = [
    "DeckError",
    "KontourDeckCard",
    "KontourHalf",
    "PictomaniaDeckCard",
    "PictomaniaSide",
    "deal_table",
    "kontour_deck",
    "pictomania_deck",
]

WORDS_PER_SIDE = 7
LEVELS = (1, 2, 3, 4)


class DeckError(ValueError):
    """A deck file is invalid, or a table cannot be dealt."""


class KontourHalf(BaseModel):
    """One half of a Kontour card: a blue word (1 pt) and an orange word (2 pts)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    blue: str
    orange: str

    def word(self, colour: Literal["blue", "orange"]) -> str:
        """Category key of the chosen colour."""
        return self.blue if colour == "blue" else self.orange

    @staticmethod
    def points(colour: Literal["blue", "orange"]) -> int:
        """Points to the drawer: 1 for blue, 2 for orange."""
        return 1 if colour == "blue" else 2


class KontourDeckCard(BaseModel):
    """A Kontour card: ``top`` and ``bottom`` halves."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: int
    top: KontourHalf
    bottom: KontourHalf

    def half(self, which: Literal["top", "bottom"]) -> KontourHalf:
        """The half the table plays."""
        return self.top if which == "top" else self.bottom

    @property
    def words(self) -> tuple[str, ...]:
        """The four category keys of the card."""
        return (self.top.blue, self.top.orange, self.bottom.blue, self.bottom.orange)

    @model_validator(mode="after")
    def _distinct(self) -> KontourDeckCard:
        if len(set(self.words)) != 4:
            raise ValueError(f"card {self.id}: a word appears twice: {self.words}")
        return self


class PictomaniaSide(BaseModel):
    """One side of a Pictomania card: a theme and 7 category keys (numbers 1–7 = order)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    theme: str = Field(min_length=1)
    words: tuple[str, ...] = Field(min_length=WORDS_PER_SIDE, max_length=WORDS_PER_SIDE)
    level: int = 0  # filled from the card

    def word(self, number: int) -> str:
        """Category key of word number 1–7."""
        if not 1 <= number <= WORDS_PER_SIDE:
            raise DeckError(f"Pictomania word numbers are 1–7, got {number}")
        return self.words[number - 1]

    @model_validator(mode="after")
    def _distinct(self) -> PictomaniaSide:
        if len(set(self.words)) != len(self.words):
            raise ValueError(f"side {self.theme!r}: a word appears twice")
        return self


class PictomaniaDeckCard(BaseModel):
    """A double-sided Pictomania card of one level."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: int
    level: int = Field(ge=1, le=4)
    sides: tuple[PictomaniaSide, PictomaniaSide]

    @model_validator(mode="before")
    @classmethod
    def _level_to_sides(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("sides"), list):
            lvl = data.get("level", 0)
            data = {
                **data,
                "sides": [{**s, "level": lvl} if isinstance(s, dict) else s for s in data["sides"]],
            }
        return data


def _load_yaml(path: Path) -> list[dict]:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        cards = raw["cards"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise DeckError(f"cannot read deck {path}: {exc}") from exc
    if not isinstance(cards, list):
        raise DeckError(f"{path}: `cards` must be a list")
    return cards


def _check_keys(words: Sequence[str], vocab: Vocabulary, where: str) -> None:
    for key in words:
        if key not in vocab:
            raise DeckError(f"{where}: {key!r} is not a vocabulary category key")
        if not vocab[key].drawable:
            raise DeckError(f"{where}: {key!r} is marked drawable: false")


Card = TypeVar("Card", "KontourDeckCard", "PictomaniaDeckCard")


def _read_cards(path: Path, model: type[Card]) -> tuple[Card, ...]:
    """Parse every card of a deck file with ``model``; card ids must be unique."""
    cards = []
    for raw in _load_yaml(path):
        try:
            cards.append(model.model_validate(raw))
        except ValidationError as exc:
            raise DeckError(f"{path}: {exc}") from exc
    if len({c.id for c in cards}) != len(cards):
        raise DeckError(f"{path}: card ids repeat")
    return tuple(cards)


def read_kontour_deck(path: Path, vocab: Vocabulary) -> tuple[KontourDeckCard, ...]:
    """Parse and validate a Kontour deck file against the vocabulary."""
    cards = _read_cards(path, KontourDeckCard)
    for card in cards:
        _check_keys(card.words, vocab, f"{path} card {card.id}")
    return cards


def read_pictomania_deck(path: Path, vocab: Vocabulary) -> tuple[PictomaniaDeckCard, ...]:
    """Parse and validate a Pictomania deck file against the vocabulary."""
    cards = _read_cards(path, PictomaniaDeckCard)
    for card in cards:
        for side in card.sides:
            _check_keys(side.words, vocab, f"{path} card {card.id} {side.theme!r}")
    return cards


@functools.lru_cache(maxsize=1)
def kontour_deck() -> tuple[KontourDeckCard, ...]:
    """The shipped Kontour deck (cached)."""
    try:
        return read_kontour_deck(DATA_DIR / "kontour_deck.yaml", load_vocabulary())
    except VocabularyError as exc:
        raise DeckError(str(exc)) from exc


@functools.lru_cache(maxsize=1)
def pictomania_deck() -> tuple[PictomaniaDeckCard, ...]:
    """The shipped Pictomania deck (cached)."""
    return read_pictomania_deck(DATA_DIR / "pictomania_deck.yaml", load_vocabulary())


def _unseen_first(
    sides: tuple[PictomaniaSide, ...], seen: Collection[tuple[str, ...]]
) -> tuple[PictomaniaSide, ...]:
    """The sides not shown yet, or both when each was."""
    return tuple(s for s in sides if tuple(s.words) not in seen) or sides


def deal_table(
    levels: int | Sequence[int],
    rng: random.Random,
    n: int = 6,
    cards: Sequence[PictomaniaDeckCard] | None = None,
    seen: Collection[tuple[str, ...]] = (),
) -> list[PictomaniaSide]:
    """Lay out ``n`` card sides of the given level(s) with no word shown twice.

    ``seen``: the word lists of sides already shown this game: a card coming back is laid on its
    other side when that one was not shown (as players flip a card they have seen).

    ``levels`` is one level (1–4) or a collection of allowed levels. Distinct cards are drawn
    in a random order from ``rng`` and one random side of each is kept when it shares no word
    with the sides already laid (depth-first search with backtracking, so a table is found
    whenever one exists). Raises ``DeckError`` when no such table exists.
    """
    wanted = {levels} if isinstance(levels, int) else set(levels)
    if not wanted or not wanted <= set(LEVELS):
        raise DeckError(f"levels must be among {LEVELS}, got {levels!r}")
    if n < 1:
        raise DeckError(f"n must be ≥ 1, got {n}")
    pool = [c for c in (cards if cards is not None else pictomania_deck()) if c.level in wanted]
    rng.shuffle(pool)
    options = [_unseen_first(tuple(rng.sample(c.sides, 2)), seen) for c in pool]
    chosen: list[PictomaniaSide] = []
    budget = [20_000]  # search steps; tables are found in a few dozen

    def search(start: int, used: set[str]) -> bool:
        if len(chosen) == n:
            return True
        for i in range(start, len(options)):
            if len(options) - i < n - len(chosen):
                return False
            for side in options[i]:
                budget[0] -= 1
                if budget[0] < 0:
                    return False
                if used.isdisjoint(side.words):
                    chosen.append(side)
                    if search(i + 1, used | set(side.words)):
                        return True
                    chosen.pop()
        return False

    if not search(0, set()):
        raise DeckError(f"cannot lay {n} cards of level(s) {sorted(wanted)} without a repeated word")
    return chosen
