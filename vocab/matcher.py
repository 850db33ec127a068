"""The answer matcher: does a spoken/typed guess name the word being drawn?

``match(answer, guess, table=None, *, answer_kind=None) -> Match`` gives a verdict for any ``str``
guess. Rules (RULES.md, Kontour « réponses acceptées »), tried from the closest to the loosest:

====================  ==========================================================================
reason                meaning
====================  ==========================================================================
exact                 the word itself, whatever case, accents, punctuation, leading article
variant               another spelling of the word (clé / clef)
synonym               a hand-written true synonym (docteur / médecin, vélo / bicyclette)
everyday              a reviewed everyday or short form, each with its reason (TV, frigo, croco)
inflection            the other gender or number, through the DELA lexicon (chevaux, danseuse)
                      and the reviewed links of ``vocab/data/inflections.yaml`` (louve, cane)
contains              the guess contains the word as whole words (« raquette de tennis »)
typo                  within an edit budget (OSA: 0 up to 3 letters, 1 for 4–7, 2 from 8), and the
                      guess is not itself a French word (« gâteau » is never a typo of « bateau »)
rejected_empty        nothing left after normalisation (empty, blank, only articles/punctuation)
rejected_junk         no letter at all, or absurdly long
rejected_bad_answer   the answer itself is empty after normalisation
rejected_different_word  the guess is another word (of the vocabulary or of French)
rejected_ambiguous    the guess is at least as close to another vocabulary word, or names several
rejected_closer_to_table  the guess is at least as close to another word of the table
rejected_no_match     nothing above applies
====================  ==========================================================================

``answer`` is a category key (« cat ») or a French word: a vocabulary form (« chat »,
« Bicyclette ») or any other French word (then only the lexicon rules and ``extra_synonyms.yaml``
apply). ``answer_kind="key"`` or ``"word"`` says which; without it a string that is both — the key
``crayon`` (« crayon de couleur ») and the French word « crayon » (pencil) — raises
``AmbiguousAnswerError`` instead of guessing. ``table`` lists the other words in play, read the same
way; a guess at least as close to one of them is never accepted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rapidfuzz import process
from rapidfuzz.distance import OSA

from vocab.inflections import load_links
from vocab.lexicon import Lexicon, get_lexicon
from vocab.normalize import normalize
from vocab.vocabulary import (
    UnknownCategoryError,
    Vocabulary,
    Word,
    extra_everyday,
    extra_synonyms,
    load_vocabulary,
)

__all__ = [
    "ACCEPT_REASONS",
    "REASONS",
    "AmbiguousAnswerError",
    "AnswerKind",
    "Match",
    "edit_budget",
    "match",
    "warm_up",
]

REASONS: dict[str, str] = {
    "exact": "the word itself (case, accents, punctuation and articles ignored)",
    "variant": "another spelling of the word",
    "synonym": "a true synonym from the vocabulary",
    "everyday": "an everyday or short form of the word (reviewed, with its reason)",
    "inflection": "the other gender or number of the word (DELA lexicon and reviewed links)",
    "contains": "the guess contains the word as whole words",
    "typo": "a small misspelling that is not itself another word",
    "rejected_empty": "empty or blank guess",
    "rejected_junk": "no letters, or too long to be a guess",
    "rejected_bad_answer": "the answer is empty",
    "rejected_different_word": "another word, even if it looks close",
    "rejected_ambiguous": "as close to another vocabulary word, or several words at once",
    "rejected_closer_to_table": "at least as close to another word on the table",
    "rejected_no_match": "does not name the word",
}
ACCEPT_REASONS = frozenset({"exact", "variant", "synonym", "everyday", "inflection", "contains", "typo"})
AnswerKind = Literal["key", "word"]
MAX_GUESS_CHARS = 80
MAX_GUESS_WORDS = 10
MAX_PRODUCT = 64  # cap on lemma combinations of one multi-word phrase
LEMMA_CACHE_SIZE = 50_000  # tokens whose lemma sets are kept
ADHOC_CACHE_SIZE = 4_096  # targets of free answers (French words outside the vocabulary) kept


class AmbiguousAnswerError(ValueError):
    """The answer is both a category key and a French word of another category (``crayon``)."""


@dataclass(frozen=True, slots=True)
class Match:
    """Verdict of one guess: ``accepted``, a ``reason`` from ``REASONS``, and context."""

    accepted: bool
    reason: str
    category: str | None = None  # category of the answer, when it is a vocabulary word
    guess: str = ""  # the normalised guess
    other: str | None = None  # the competing word, for rejected_* reasons that name one
    distance: int | None = None  # edit distance, for typo


def edit_budget(form: str) -> int:
    """Edits forgiven for a normalised form: 0 up to 3 letters, 1 for 4–7, 2 from 8."""
    n = len(form.replace(" ", ""))
    return 0 if n <= 3 else 1 if n <= 7 else 2


@dataclass(frozen=True, slots=True)
class _Target:
    """Precomputed comparison data for one word (a vocabulary entry or an ad-hoc answer)."""

    key: str  # category key, or the normalised ad-hoc word
    exact: dict[str, str]  # normalised form -> exact | variant | synonym | everyday
    lemma_keys: dict[int, frozenset[tuple[str, ...]]]  # number of words -> lemma tuples
    typo_forms: tuple[str, ...]


def _product(sets: Sequence[Iterable[str]]) -> frozenset[tuple[str, ...]]:
    """Lemma tuples of a phrase (one lemma per word), at most ``MAX_PRODUCT`` of them."""
    out: list[tuple[str, ...]] = [()]
    for options in sets:
        out = [(*prefix, lem) for prefix in out for lem in sorted(options)][:MAX_PRODUCT]
    return frozenset(out)


@dataclass(slots=True)
class _Guess:
    """A normalised guess with its lemma tuples, computed once per match and reused per target."""

    text: str
    words: tuple[str, ...]
    real: bool
    lemma_set: Callable[[str], frozenset[str]]
    _windows: dict[tuple[int, int], frozenset[tuple[str, ...]]] = field(default_factory=dict)

    def keys(self, start: int = 0, end: int | None = None) -> frozenset[tuple[str, ...]]:
        """Lemma tuples of ``words[start:end]`` (cached)."""
        span = (start, len(self.words) if end is None else end)
        got = self._windows.get(span)
        if got is None:
            got = self._windows[span] = _product([self.lemma_set(w) for w in self.words[span[0] : span[1]]])
        return got


class _Index:
    """Everything the matcher needs, built once from the vocabulary and the lexicon."""

    def __init__(self, vocab: Vocabulary, lex: Lexicon, links: dict[str, frozenset[str]]) -> None:
        self.vocab = vocab
        self.lex = lex
        self.links = links
        self.extra = extra_synonyms()
        self.extra_everyday = extra_everyday()
        self.targets: dict[str, _Target] = {}
        self.by_lemmas: dict[tuple[str, ...], set[str]] = {}
        self.vocab_tokens: set[str] = set(links)
        self.clashes = vocab.key_form_clashes()  # keys that are another category's French word
        self._lemma_cache: dict[str, frozenset[str]] = {}
        self._adhoc: dict[str, _Target] = {}  # targets of French words outside the vocabulary
        single_forms: dict[str, str] = {}
        for w in vocab:
            for form in w.forms:
                norm = normalize(form)
                self.vocab_tokens.update(norm.split())
                if " " not in norm:
                    single_forms[norm] = w.category
        inflected: dict[str, set[str]] = {}
        pairs = [*lex.noun_lemmas.items(), *links.items()]
        for form, lemmas in pairs:
            for lem in lemmas:
                if lem in single_forms:
                    inflected.setdefault(single_forms[lem], set()).add(form)
        self.max_words = 1
        typo_choices: list[str] = []
        typo_owner: list[str] = []
        for w in vocab:
            target = self._build(w.category, w, extra_typo=inflected.get(w.category, ()))
            self.targets[w.category] = target
            for n, keys in target.lemma_keys.items():
                self.max_words = max(self.max_words, n)
                for k in keys:
                    self.by_lemmas.setdefault(k, set()).add(w.category)
            for f in target.typo_forms:
                typo_choices.append(f)
                typo_owner.append(w.category)
        self.typo_choices = typo_choices
        self.typo_owner = typo_owner

    def lemma_set(self, token: str) -> frozenset[str]:
        """The token, its DELA noun lemmas and its reviewed links (« louves » → louve, loup)."""
        got = self._lemma_cache.get(token)
        if got is None:
            got = self.lex.lemma_set(token)
            extra = [self.links[t] for t in got if t in self.links]
            if extra:
                got = got.union(*extra)
            if len(self._lemma_cache) >= LEMMA_CACHE_SIZE:
                self._lemma_cache.clear()  # bounded: guesses are arbitrary text
            self._lemma_cache[token] = got
        return got

    def _build(
        self,
        key: str,
        word: Word | None,
        extra_typo: Iterable[str] = (),
        synonyms: Sequence[str] = (),
    ) -> _Target:
        if word is None:
            exact = {key: "exact"}
            for s in synonyms:
                if s != key:
                    exact[s] = "everyday" if s in self.extra_everyday else "synonym"
        else:
            exact = {normalize(word.word): "exact"}
            for v in word.variants:
                exact.setdefault(normalize(v), "variant")
            for s in word.synonyms:
                exact.setdefault(normalize(s), "synonym")
            for e in word.everyday:
                exact.setdefault(normalize(e), "everyday")
        lemma_keys: dict[int, set[tuple[str, ...]]] = {}
        for form in exact:
            words = form.split()
            lemma_keys.setdefault(len(words), set()).update(_product([self.lemma_set(w) for w in words]))
        typo = tuple(dict.fromkeys([*exact, *sorted(extra_typo)]))
        return _Target(key, exact, {n: frozenset(v) for n, v in lemma_keys.items()}, typo)

    def target_for(self, text: str, kind: AnswerKind | None) -> _Target | None:
        """Target of a category key or a French word (None if empty); see ``match`` for ``kind``."""
        if kind == "key":
            if text not in self.vocab:
                raise UnknownCategoryError(f"unknown category key {text!r} (answer_kind='key')")
            return self.targets[text]
        if kind is None and text in self.vocab:
            owner = self.clashes.get(text)
            if owner is not None:
                norm = normalize(text)
                raise AmbiguousAnswerError(
                    f"{text!r} is both the category key {text!r} (« {self.vocab.french(text)} ») and the "
                    f"French word « {norm} » of category {owner!r}: pass answer_kind='key' or 'word', "
                    f"or give « {self.vocab.french(text)} » or the key {owner!r}"
                )
            return self.targets[text]
        norm = normalize(text)
        owner = self.vocab.form_index.get(norm)
        if owner is not None:
            return self.targets[owner]
        if not norm:
            return None
        got = self._adhoc.get(norm)
        if got is None:
            group = self.extra.get(norm, ())
            got = self._build(norm, None, synonyms=[w for w in group if w != norm])
            if len(self._adhoc) >= ADHOC_CACHE_SIZE:
                self._adhoc.clear()  # bounded: answers and table words may be any text
            self._adhoc[norm] = got
        return got

    def is_real(self, words: Sequence[str]) -> bool:
        """Whether every word of a phrase is a known French (or vocabulary) word."""
        return all(self.lex.is_word(w) or w in self.vocab_tokens for w in words)

    def vocab_windows(self, g: _Guess) -> list[tuple[int, int, str]]:
        """(start, end, category) of every vocabulary word found in a phrase, any inflection."""
        hits = []
        n = len(g.words)
        for size in range(1, min(self.max_words, n) + 1):
            for start in range(0, n - size + 1):
                cats: set[str] = set()
                for key in g.keys(start, start + size):
                    cats |= self.by_lemmas.get(key, set())
                hits.extend((start, start + size, c) for c in cats)
        return hits


def _closeness(g: _Guess, t: _Target) -> tuple[int, str, int | None] | None:
    """(rank, reason, distance) of how the guess names target ``t``; lower rank = closer."""
    kind = t.exact.get(g.text)
    if kind:
        return 0, kind, None
    n = len(g.words)
    mine = t.lemma_keys.get(n)
    if mine and not mine.isdisjoint(g.keys()):
        return 1, "inflection", None
    for size, keys in t.lemma_keys.items():
        if size >= n:
            continue
        for start in range(0, n - size + 1):
            if not keys.isdisjoint(g.keys(start, start + size)):
                return 2, "contains", None
    if not g.real:
        best: int | None = None
        for form in t.typo_forms:
            budget = edit_budget(form)
            if budget:
                d = OSA.distance(g.text, form, score_cutoff=budget)
                if d <= budget and (best is None or d < best):
                    best = d
        if best is not None:
            return 2 + best, "typo", best
    return None


_LOCK = threading.Lock()
_INDEX: _Index | None = None


def _index() -> _Index:
    global _INDEX
    if _INDEX is None:
        with _LOCK:
            if _INDEX is None:
                _INDEX = _Index(load_vocabulary(), get_lexicon(), load_links())
    return _INDEX


def warm_up() -> None:
    """Load the lexicon and build the matcher's index now (otherwise done on first match)."""
    _index()


def _vocab_guard(idx: _Index, target: _Target, g: _Guess, close: tuple) -> Match | None:
    """Reject a guess that is (or is as close to) another vocabulary word than the answer."""
    rank = close[0]
    guess = g.text
    owner = idx.vocab.form_index.get(guess)
    if owner is not None and owner != target.key:
        return Match(False, "rejected_different_word", target.key, guess, owner)
    if rank == 1:
        others = set()
        for key in g.keys():
            others |= idx.by_lemmas.get(key, set())
        others.discard(target.key)
        if others:
            return Match(False, "rejected_ambiguous", target.key, guess, min(others))
    elif rank == 2 and close[1] == "contains":
        windows = idx.vocab_windows(g)
        mine = [(s, e) for s, e, c in windows if c == target.key]
        theirs = [(s, e, c) for s, e, c in windows if c != target.key]
        valid = [
            (s, e)
            for s, e in mine
            if not any(s2 <= s and e <= e2 and e2 - s2 > e - s for s2, e2, _ in theirs)
        ]
        if not valid:
            bigger = max(theirs, key=lambda h: h[1] - h[0])
            return Match(False, "rejected_different_word", target.key, guess, bigger[2])
        for s2, e2, c in theirs:
            if not any(s <= s2 and e2 <= e for s, e in valid):
                return Match(False, "rejected_ambiguous", target.key, guess, c)
    elif close[1] == "typo":
        d = close[2]
        for _, score, i in process.extract(
            guess, idx.typo_choices, scorer=OSA.distance, score_cutoff=d, limit=None
        ):
            if idx.typo_owner[i] != target.key and score <= d:
                return Match(False, "rejected_ambiguous", target.key, guess, idx.typo_owner[i])
    return None


def match(
    answer: str,
    guess: str,
    table: Sequence[str] | None = None,
    *,
    answer_kind: AnswerKind | None = None,
) -> Match:
    """Judge ``guess`` against ``answer`` (see the module docstring for the rules and reasons).

    ``answer_kind`` says how ``answer`` and the ``table`` entries are read: ``"key"`` (a category
    key, as games pass them: ``"crayon"`` is the wax crayon), ``"word"`` (a French word:
    « crayon » is the pencil), or ``None`` (either, when only one reading exists). Raises
    ``TypeError`` when ``answer``/``guess`` are not ``str`` or ``table`` is not a sequence of
    ``str``; ``AmbiguousAnswerError`` (a ``ValueError``) for a string that is both a key and
    another category's French word with ``answer_kind=None``; ``UnknownCategoryError`` (a
    ``KeyError``) for an unknown key with ``answer_kind="key"``. Any guess string gets a verdict.
    """
    if not isinstance(answer, str) or not isinstance(guess, str):
        raise TypeError("match(answer, guess) expects two str")
    if table is not None and (isinstance(table, str) or not all(isinstance(t, str) for t in table)):
        raise TypeError("match(table=...) expects a sequence of str")
    if answer_kind not in (None, "key", "word"):
        raise ValueError(f"answer_kind must be 'key', 'word' or None, not {answer_kind!r}")
    idx = _index()
    target = idx.target_for(answer, answer_kind)
    others = [(o, t) for o in table or () if (t := idx.target_for(o, answer_kind)) is not None]
    if target is None:
        return Match(False, "rejected_bad_answer")
    category = target.key if target.key in idx.targets else None
    g = normalize(guess)
    if not g:
        return Match(False, "rejected_empty", category, g)
    words = tuple(g.split())
    if not any(ch.isalpha() for ch in g) or len(g) > MAX_GUESS_CHARS or len(words) > MAX_GUESS_WORDS:
        return Match(False, "rejected_junk", category, g)
    real = idx.is_real(words) or g in idx.vocab.form_index
    gs = _Guess(g, words, real, idx.lemma_set)
    close = _closeness(gs, target)
    if close is None:
        owner = idx.vocab.form_index.get(g)
        reason = "rejected_different_word" if real or owner else "rejected_no_match"
        return Match(False, reason, category, g, owner)
    rank, reason, dist = close
    if category is not None and rank > 0:
        refused = _vocab_guard(idx, target, gs, close)
        if refused is not None:
            return refused
    for other, t in others:
        if t.key == target.key:
            continue
        theirs = _closeness(gs, t)
        if theirs is not None and theirs[0] <= rank:
            return Match(False, "rejected_closer_to_table", category, g, other)
    return Match(True, reason, category, g, None, dist)
