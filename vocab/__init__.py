"""French vocabulary, game decks and the answer matcher of Griffon.

>>> from vocab import match, french, category_for
>>> match("médecin", "Docteur")  # doctest: +SKIP
"""

from vocab.decks import (
    DeckError,
    KontourCard,
    PictomaniaCard,
    PictomaniaSide,
    deal_table,
    kontour_deck,
    pictomania_deck,
)
from vocab.matcher import ACCEPT_REASONS, REASONS, Match, edit_budget, match, warm_up
from vocab.normalize import normalize
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

__all__ = [
    "ACCEPT_REASONS",
    "REASONS",
    "DeckError",
    "KontourCard",
    "Match",
    "PictomaniaCard",
    "PictomaniaSide",
    "UnknownCategoryError",
    "UnknownWordError",
    "Vocabulary",
    "VocabularyError",
    "Word",
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
]
