"""The words of a table: what the AI can draw, French words, the answer judge, the decks.

Thin service side of `games.words` (the one vocabulary → games adapter, shared with
`griffon simulate`): it adds the AI drawer's drawings (the shipped pack of validation-split Quick,
Draw! drawings, the hand-made line drawings for words it lacks) and the straight-line cutter of
`model/`, and applies the same deck rules.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from games.ai.base import Related
from games.ai.drawer import DrawingSource, default_source
from games.ai.driver import AIKit
from games.kontour import KontourCard
from games.pictomania import PictomaniaConfig
from games.words import DeckSetupError, GameWords, load_game_words
from games.words import kontour_candidates as _kontour_candidates
from games.words import kontour_deck as _kontour_deck
from games.words import pictomania_deck as _pictomania_deck
from model.strokes import straight_lines

__all__ = ["DeckSetupError", "Words", "kontour_candidates", "kontour_deck", "load_words", "pictomania_deck"]


@dataclass(frozen=True)
class Words:
    """Everything a game needs to know about words (shared by every game of the service)."""

    game: GameWords
    source: DrawingSource
    drawable: frozenset[str]

    @property
    def related(self) -> Related:
        return self.game.related

    def french(self, key: str) -> str:
        """The French word of a category key (the key itself when unknown)."""
        return self.game.french(key)

    def key_for(self, text: str | None) -> str | None:
        """The category key a guess names, or None."""
        return self.game.key_for(text)

    def judge(self, key: str, text: str) -> bool:
        """Kontour judge: the French answer matcher."""
        return self.game.judge(key, text)

    def kit(self) -> AIKit:
        """What the AI players borrow from outside `games/`."""
        return AIKit(self.source, straight_lines, self.french, self.related, self.key_for)


@cache
def load_words(drawings: Path | None = None) -> Words:
    """The shared word data; the AI draws from the pack at `drawings` (default: the shipped pack)."""
    game = load_game_words()
    source = default_source(drawings)
    drawable = frozenset(k for k in source.keys() if k in game.drawable and source.drawings(k))
    return Words(game, source, drawable)


def kontour_deck(words: Words, seed: int) -> tuple[list[KontourCard], Literal["top", "bottom"]]:
    """The cards to play and the half (`games.words.kontour_deck`)."""
    return _kontour_deck(words.game.kontour_cards, words.drawable, seed)


def kontour_candidates(cards: Sequence[KontourCard], half: str, labels: Collection[str]) -> list[str]:
    """The words an AI guesser considers: every word of the played half the model knows."""
    return _kontour_candidates(cards, half, labels)  # type: ignore[arg-type]


def pictomania_deck(words: Words, config: PictomaniaConfig, seed: int) -> tuple[list[Any], PictomaniaConfig]:
    """The real double-sided cards when the AI can draw every word, else synthetic tables."""
    return _pictomania_deck(words.game.picto_cards, words.drawable, config, seed)
