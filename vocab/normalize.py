"""One pure text normalisation for every comparison the matcher makes.

``normalize`` lower-cases (Unicode case folding), expands ligatures (œ→oe, æ→ae), strips accents,
turns every punctuation or symbol (apostrophes ' ’ ʼ, hyphens, dots…) into a space, collapses spaces
and removes leading French articles (l' le la les un une des du de la de l' d'). It is idempotent:
``normalize(normalize(s)) == normalize(s)`` for every ``str`` (property-tested).
"""

from __future__ import annotations

import unicodedata

__all__ = ["fold", "normalize", "normalize_reference", "tokens", "LEADING_ARTICLES"]

LIGATURES = {"œ": "oe", "æ": "ae"}
# Longest first, so « de la » is removed before « de ».
LEADING_ARTICLES: tuple[tuple[str, ...], ...] = (
    ("de", "la"),
    ("de", "l"),
    ("les",),
    ("le",),
    ("la",),
    ("l",),
    ("une",),
    ("un",),
    ("des",),
    ("du",),
    ("d",),
)
_MAX_PASSES = 4


def fold(text: str) -> str:
    """Case-fold, expand œ/æ and strip accents; keeps punctuation (used for lexicon keys)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    for lig, repl in LIGATURES.items():
        text = text.replace(lig, repl)
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _strip_articles(words: list[str]) -> list[str]:
    changed = True
    while changed:
        changed = False
        for art in LEADING_ARTICLES:
            n = len(art)
            if len(words) > n and tuple(words[:n]) == art:
                words = words[n:]
                changed = True
                break
    return words


def _normalize_once(text: str) -> str:
    folded = fold(text)
    spaced = "".join(ch if ch.isalnum() else " " for ch in folded)
    return " ".join(_strip_articles(spaced.split()))


_ASCII_PUNCT = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})


def normalize(text: str) -> str:
    """Canonical comparison form of ``text``: « L’Œil ! » → « oeil », « des Arbres » → « arbres ».

    Raises ``TypeError`` for a non-``str``. The single pass is repeated until it is stable (a few
    exotic Unicode sequences recompose under NFKC), which makes idempotence hold by construction.
    Plain ASCII text (most typed guesses) takes a fast path with the same result (NFKC, accents
    and ligatures do not touch it, and one pass is stable); property tests compare it with
    ``normalize_reference``.
    """
    if not isinstance(text, str):
        raise TypeError(f"normalize() expects a str, got {type(text).__name__}")
    if text.isascii():
        return " ".join(_strip_articles(text.lower().translate(_ASCII_PUNCT).split()))
    return normalize_reference(text)


def normalize_reference(text: str) -> str:
    """``normalize`` without the ASCII fast path (the readable reference it is tested against)."""
    if not isinstance(text, str):
        raise TypeError(f"normalize() expects a str, got {type(text).__name__}")
    out = _normalize_once(text)
    for _ in range(_MAX_PASSES):
        again = _normalize_once(out)
        if again == out:
            return out
        out = again
    return out


def tokens(text: str) -> tuple[str, ...]:
    """Words of ``normalize(text)``."""
    return tuple(normalize(text).split())
