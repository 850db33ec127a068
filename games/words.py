"""The one adapter from the vocabulary (`vocab/`) to the games: French words, the answer judge,
related words, and the decks the AI players can play.

Both `griffon simulate` and the service build their decks here, by the same rules:

- **Kontour**: the real deck when the AI can draw every word of it; otherwise the half of the real
  deck with most cards whose played half has a drawable word (at least `MIN_KONTOUR_CARDS`);
  otherwise a synthetic deck cut from the drawable words.
- **Pictomania**: the real double-sided cards when the AI can draw every word (the engine deals
  whole cards with `vocab.deal_table`); otherwise synthetic tables of drawable words.

Related words (for « proche » / « hors sujet ») are the words that share a Pictomania card side.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

import vocab
from games.ai.base import Related, no_relations, relations_from_groups
from games.kontour import KontourCard, WordPair
from games.pictomania import PictoCard, PictomaniaConfig

MIN_KONTOUR_CARDS = 10
Half = Literal["top", "bottom"]


class DeckSetupError(ValueError):
    """No playable deck can be built from the drawable words."""


@dataclass(frozen=True)
class GameWords:
    """Words as the games need them: French names, the judge, relations, the real decks."""

    kontour_cards: tuple[KontourCard, ...]
    picto_cards: tuple[vocab.PictomaniaDeckCard, ...]
    related: Related
    known: frozenset[str]  # every vocabulary category key
    drawable: frozenset[str]  # the keys the vocabulary allows drawing (not "drawable: false")

    def french(self, key: str) -> str:
        """The French word of a category key (the key itself when unknown)."""
        try:
            return vocab.french(key)
        except KeyError:
            return key

    def key_for(self, text: str | None) -> str | None:
        """The category key a guess names (French forms first: « crayon » is the pencil), or None."""
        if not text:
            return None
        try:
            return vocab.category_for(text)
        except (KeyError, ValueError):
            return text if text in self.known else None

    def judge(self, key: str, text: str) -> bool:
        """Kontour judge: the French answer matcher."""
        return vocab.match(key, text, answer_kind="key").accepted

    def deck_words(self) -> set[str]:
        """Every word of both real decks."""
        halves = [h for c in self.kontour_cards for h in (c.top, c.bottom)]
        words = {w for h in halves for w in (h.blue, h.orange)}
        return words | {w for c in self.picto_cards for s in c.sides for w in s.words}


def pictomania_relations(cards: Iterable[vocab.PictomaniaDeckCard]) -> Related:
    """Words are related when they share a Pictomania card side (one theme)."""
    groups = [side.words for card in cards for side in card.sides]
    return relations_from_groups(groups) if groups else no_relations


@cache
def load_game_words() -> GameWords:
    """The shipped vocabulary and decks, converted once per process."""
    vocabulary = vocab.load_vocabulary()
    kontour = tuple(
        KontourCard(
            top=WordPair(blue=c.top.blue, orange=c.top.orange),
            bottom=WordPair(blue=c.bottom.blue, orange=c.bottom.orange),
        )
        for c in vocab.kontour_deck()
    )
    picto = tuple(vocab.pictomania_deck())
    known = frozenset(w.category for w in vocabulary.words.values())
    drawable = frozenset(w.category for w in vocabulary.drawable())
    return GameWords(kontour, picto, pictomania_relations(picto), known, drawable)


# --------------------------------------------------------------------------------------------
# Kontour


def synthetic_kontour_deck(keys: Collection[str], seed: int | str) -> list[KontourCard]:
    """Cards made of the drawable words, 4 per card (top blue/orange, bottom blue/orange)."""
    words = sorted(keys)
    if len(words) < 4:
        raise DeckSetupError(f"need at least 4 drawable words for a Kontour deck, got {len(words)}")
    random.Random(f"{seed}:kontour-deck").shuffle(words)
    cards = []
    for i in range(0, len(words) - 3, 4):
        a, b, c, d = words[i : i + 4]
        cards.append(KontourCard(top=WordPair(blue=a, orange=b), bottom=WordPair(blue=c, orange=d)))
    return cards


def kontour_deck(
    cards: Sequence[KontourCard], drawable: Collection[str], seed: int | str
) -> tuple[list[KontourCard], Half]:
    """The cards to play and the half (see the module doc for the rule)."""
    drawable = set(drawable)
    every = {w for c in cards for h in (c.top, c.bottom) for w in (h.blue, h.orange)}
    if cards and every <= drawable:
        return list(cards), random.Random(f"{seed}:kontour-half").choice(["top", "bottom"])
    best: tuple[list[KontourCard], Half] = ([], "top")
    for half in ("top", "bottom"):
        kept = [c for c in cards if {c.half(half).blue, c.half(half).orange} & drawable]
        if len(kept) > len(best[0]):
            best = (kept, half)
    if len(best[0]) >= MIN_KONTOUR_CARDS:
        return best
    return synthetic_kontour_deck(drawable, seed), "top"


def kontour_candidates(cards: Sequence[KontourCard], half: Half, labels: Collection[str]) -> list[str]:
    """The words an AI guesser considers: every word of the played half the model knows."""
    keys = {w for c in cards for w in (c.half(half).blue, c.half(half).orange)}
    return sorted(keys & set(labels))


# --------------------------------------------------------------------------------------------
# Pictomania


def synthetic_pictomania_deck(
    keys: Collection[str], config: PictomaniaConfig, seed: int | str
) -> tuple[list[PictoCard], PictomaniaConfig]:
    """One level per round (levels 1..rounds), each level's cards a fresh shuffle of the drawable
    words cut into cards of 7 (so no word appears twice on a table). Returns the deck and the
    config with `levels_per_round` set to match."""
    words = sorted(keys)
    per_round = config.cards_per_round * config.words_per_card
    if len(words) < per_round:
        raise DeckSetupError(
            f"need at least {per_round} drawable words for a Pictomania table, got {len(words)}"
        )
    deck = []
    for level in range(1, config.rounds + 1):
        shuffled = list(words)
        random.Random(f"{seed}:picto-deck:{level}").shuffle(shuffled)
        for c in range(config.cards_per_round):
            chunk = shuffled[c * config.words_per_card : (c + 1) * config.words_per_card]
            deck.append(PictoCard(level=level, words=tuple(chunk)))
    levels = tuple(range(1, config.rounds + 1))
    return deck, config.model_copy(update={"levels_per_round": levels})


def pictomania_deck(
    cards: Sequence[vocab.PictomaniaDeckCard],
    drawable: Collection[str],
    config: PictomaniaConfig,
    seed: int | str,
) -> tuple[list[vocab.PictomaniaDeckCard] | list[PictoCard], PictomaniaConfig]:
    """The real double-sided cards when the AI can draw every word on them, else synthetic tables."""
    drawable = set(drawable)
    if cards and all(w in drawable for c in cards for s in c.sides for w in s.words):
        return list(cards), config
    return synthetic_pictomania_deck(drawable, config, seed)

