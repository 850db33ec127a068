"""French vocabulary, game decks and the answer matcher of Griffon.

>>> from vocab import match, french, category_for
>>> match("médecin", "Docteur")  # doctest: +SKIP

Names are imported from their submodules on first use (PEP 562), so ``import vocab`` (done by
every ``griffon`` command) costs nothing until a word or a match is needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Eager (cheap, standard library only): the submodule vocab.normalize would otherwise shadow the
# function of the same name as soon as any other module imports it.
from vocab.normalize import normalize

_EXPORTS = {
    "decks": ("DeckError", "KontourDeckCard", "PictomaniaDeckCard", "PictomaniaSide", "deal_table",
              "kontour_deck", "pictomania_deck"),
    "lookup": ("WordLookup", "word_lookup"),
    "matcher": ("ACCEPT_REASONS", "REASONS", "AmbiguousAnswerError", "AnswerKind", "Match",
                "edit_budget", "match", "warm_up"),
    "vocabulary": ("UnknownCategoryError", "UnknownWordError", "Vocabulary", "VocabularyError",
                   "Word", "category_for", "french", "load_vocabulary"),
}  # fmt: skip
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = [
    "ACCEPT_REASONS",
    "AmbiguousAnswerError",
    "AnswerKind",
    "DeckError",
    "KontourDeckCard",
    "Match",
    "PictomaniaDeckCard",
    "PictomaniaSide",
    "REASONS",
    "UnknownCategoryError",
    "UnknownWordError",
    "Vocabulary",
    "VocabularyError",
    "Word",
    "WordLookup",
    "category_for",
    "deal_table",
    "edit_budget",
    "french",
    "kontour_deck",
    "load_vocabulary",
    "match",
    "normalize",
    "pictomania_deck",
    "warm_up",
    "word_lookup",
]

if TYPE_CHECKING:
    from vocab.decks import (
        DeckError,
        KontourDeckCard,
        PictomaniaDeckCard,
        PictomaniaSide,
        deal_table,
        kontour_deck,
        pictomania_deck,
    )
    from vocab.lookup import WordLookup, word_lookup
    from vocab.matcher import (
        ACCEPT_REASONS,
        REASONS,
        AmbiguousAnswerError,
        AnswerKind,
        Match,
        edit_budget,
        match,
        warm_up,
    )
    from vocab.vocabulary import (
        UnknownCategoryError,
        UnknownWordError,
        Vocabulary,
        VocabularyError,
        Word,
        category_for,
        french,
        load_vocabulary,
    )


def __getattr__(name: str) -> Any:  # whatever the submodule defines
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'vocab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"vocab.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
