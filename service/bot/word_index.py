"""How the bot reads a word (a round's candidates, the other players' guesses, the answer): the
one rule of ``vocab.lookup``, kept to the labels the model knows.

``WordIndex.keys(text, language)`` gives the labels a word stands for, best first (``phone`` →
cell phone, telephone); ``WordIndex.key`` the one label a word names, or None (none, or
several). See ``vocab/lookup.py`` for the rule (a category key as it is, then case, accents,
articles, plurals, spacing and the aliases of ``vocab/data/aliases.yaml``, the round's language
first).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from vocab.lookup import WordLookup, comparison_form

__all__ = ["CandidateList", "WordIndex", "comparison_form"]


@dataclass(frozen=True)
class CandidateList:
    """A round's candidates read: the labels to guess among, the room's spelling of each label
    (the candidate that names it), the labels of each candidate, and the words no label names."""

    labels: list[str]
    spelling: dict[str, str]  # label → the candidate as the room sent it
    siblings: dict[str, tuple[str, ...]]  # label → every label of its candidate (phone: both phones)
    unknown: list[str]


class WordIndex:
    """The word rule over one model's labels."""

    def __init__(self, labels: Collection[str], lookup: WordLookup) -> None:
        self.labels = frozenset(labels)
        self.lookup = lookup

    def keys(self, text: str, language: str = "fr") -> tuple[str, ...]:
        """The labels ``text`` names, best first; () when none."""
        return tuple(k for k in self.lookup.categories(text, language) if k in self.labels)

    def key(self, text: str, language: str = "fr") -> str | None:
        """The one label ``text`` names; None when it names none or several (``phone``)."""
        found = self.keys(text, language)
        return found[0] if len(found) == 1 else None

    def candidates(self, texts: Sequence[str], language: str = "fr") -> CandidateList:
        """Read a round's candidates: each label goes to the candidate naming it most directly
        (a word's first category before another's second; then the first sent), so ``canoe``
        keeps the canoe and ``boat`` the other boats."""
        owner: dict[str, tuple[int, int, str]] = {}  # label → (rank, order, candidate)
        named: dict[str, tuple[str, ...]] = {}
        unknown: list[str] = []
        for order, text in enumerate(texts):
            keys = self.keys(text, language)
            if not keys:
                if text not in unknown:
                    unknown.append(text)
                continue
            named[text] = keys
            for rank, key in enumerate(keys):
                if key not in owner or (rank, order) < owner[key][:2]:
                    owner[key] = (rank, order, text)
        labels = sorted(owner, key=lambda k: owner[k][:2])
        spelling = {k: owner[k][2] for k in labels}
        siblings = {k: tuple(s for s in named[spelling[k]] if spelling.get(s) == spelling[k]) for k in labels}
        return CandidateList(labels, spelling, siblings, unknown)
