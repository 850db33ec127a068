"""The one rule from a written word, French or English, to the Quick, Draw! categories it names.

Every part of Griffon that reads a word as a category calls :meth:`WordLookup.categories` (or
:meth:`WordLookup.category`, its first answer): the vocabulary (``Vocabulary.category_for``,
``.resolve``), the service (``Shared.key_for``), the bot's candidates and players' guesses
(``service.bot.word_index``) and ``POST /v1/words/check``. The rule:

1. ``keys_first`` (callers that pass category keys: games, the bot's candidates): the text as it
   is, when it is a category key (``"crayon"`` is then the wax crayon's key);
2. else its comparison form (:func:`comparison_form`): ``vocab.normalize`` (Unicode NFKC, case
   folding, accents and punctuation dropped, spaces collapsed, one leading French article
   removed), then one leading English article (the, a, an) removed;
3. that form looked up in the French table (the vocabulary's words, variants, synonyms, everyday
   forms, and the ``fr`` aliases of ``vocab/data/aliases.yaml``) and the English table (the
   category keys, the ``en`` aliases, and their plurals made by ``inflect``: mice, knives,
   strawberries), the ``language``'s table first; each table is also read without spaces, so
   ``icecream``, ``ice-cream`` and ``ice cream`` are one form;
4. else, in French, the form with a word replaced by its DELA noun lemma (``chevaux`` → ``cheval``,
   ``pommes de terre`` → ``pomme de terre``); then, in either language, without a final ``s`` or
   ``x`` (``chapeaux``), or in English ``es`` (``buses``).

An alias may name several categories (``phone`` → cell phone, telephone; the most drawn first):
:meth:`WordLookup.categories` gives them all (a round's candidates, a drawing turn); a caller that
needs one category (:meth:`WordLookup.category`: the vocabulary, a round's answer) gets None for
such a word, as for an unknown one. Unknown: an empty tuple.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from vocab.normalize import normalize

if TYPE_CHECKING:
    from vocab.lexicon import Lexicon

__all__ = ["ALIASES_FILE", "AliasError", "WordLookup", "comparison_form", "read_aliases", "word_lookup"]

ALIASES_FILE = Path(__file__).parent / "data" / "aliases.yaml"
ENGLISH_ARTICLES = ("the", "a", "an")
MAX_TEXT = 200  # characters of a word read at most (a longer text names no category)
MAX_LEMMA_TOKENS = 4  # words of a French form whose lemmas are tried


class AliasError(ValueError):
    """``aliases.yaml`` does not follow its schema or names an unknown category."""


def comparison_form(text: str) -> str:
    """``text`` as words are compared: ``vocab.normalize``, then without a leading English article."""
    words = normalize(text[:MAX_TEXT]).split()
    if len(words) > 1 and words[0] in ENGLISH_ARTICLES:
        words = words[1:]
    return " ".join(words)


def _spaceless(form: str) -> str:
    return form.replace(" ", "")


def read_aliases(path: Path = ALIASES_FILE) -> dict[str, dict[str, tuple[str, ...]]]:
    """``{"en": {alias: categories}, "fr": {...}}`` from ``aliases.yaml`` (categories not checked)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise AliasError(f"cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict) or set(raw) - {"en", "fr"}:
        raise AliasError(f"{path}: expected a mapping with the sections en and fr")
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for language in ("en", "fr"):
        section = raw.get(language) or {}
        if not isinstance(section, dict):
            raise AliasError(f"{path}: section {language} must map an alias to its categories")
        table: dict[str, tuple[str, ...]] = {}
        for alias, target in section.items():
            targets = (target,) if isinstance(target, str) else target
            if not isinstance(alias, str) or not isinstance(targets, list | tuple) or not targets or \
                    not all(isinstance(t, str) for t in targets):
                raise AliasError(f"{path}: {language} alias {alias!r}: one category or a list of them")
            if len(set(targets)) != len(targets):
                raise AliasError(f"{path}: {language} alias {alias!r} repeats a category")
            table[alias] = tuple(targets)
        out[language] = table
    return out


class _Table:
    """Forms (and their spaceless spellings) → categories; the first entry of a form wins."""

    def __init__(self) -> None:
        self.forms: dict[str, tuple[str, ...]] = {}
        self.spaceless: dict[str, tuple[str, ...]] = {}

    def add(self, form: str, categories: tuple[str, ...]) -> None:
        if form:
            self.forms.setdefault(form, categories)
            self.spaceless.setdefault(_spaceless(form), categories)

    def get(self, form: str) -> tuple[str, ...]:
        return self.forms.get(form) or self.spaceless.get(_spaceless(form)) or ()


class WordLookup:
    """The word → categories rule (see the module) over one set of categories."""

    def __init__(self, keys: Collection[str], french_forms: Mapping[str, str],
                 aliases: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None,
                 lexicon: Lexicon | None = None, plural: bool = True) -> None:
        """``keys``: the category keys; ``french_forms``: normalised French form → key (the
        vocabulary's ``form_index``); ``aliases``: :func:`read_aliases`' tables; ``lexicon``: the
        DELA index (loaded on first need when None); ``plural``: add English plurals (``inflect``)."""
        self.keys = frozenset(keys)
        aliases = aliases if aliases is not None else read_aliases()
        for language, table in aliases.items():
            for alias, targets in table.items():
                unknown = [t for t in targets if t not in self.keys]
                if unknown:
                    raise AliasError(f"{language} alias {alias!r} names unknown categories {unknown}")
        self._lexicon = lexicon
        self.french = _Table()
        for form, key in french_forms.items():
            if key in self.keys:
                self.french.add(comparison_form(form), (key,))
        for alias, targets in aliases.get("fr", {}).items():
            self.french.add(comparison_form(alias), targets)
        self.english = _Table()
        self._names: list[tuple[str, tuple[str, ...]]] = [(key, (key,)) for key in sorted(self.keys)]
        self._names += list(aliases.get("en", {}).items())
        for name, targets in self._names:
            self.english.add(comparison_form(name), targets)
        self._plural = plural
        self._plurals: _Table | None = None  # the names' English plurals, made on first need

    @property
    def plurals(self) -> _Table:
        """The English names' plurals (``inflect``: mice, knives, strawberries), made once."""
        if self._plurals is None:
            table = _Table()
            if self._plural:
                for (_, targets), form in zip(self._names, _plurals(n for n, _ in self._names), strict=True):
                    if form:
                        table.add(comparison_form(form), targets)
            self._plurals = table
        return self._plurals

    @property
    def lexicon(self) -> Lexicon:
        if self._lexicon is None:
            from vocab.lexicon import get_lexicon

            self._lexicon = get_lexicon()
        return self._lexicon

    def categories(self, text: str, language: str = "fr", keys_first: bool = True) -> tuple[str, ...]:
        """The categories ``text`` names, best first (see the module's rule); () when none."""
        if not isinstance(text, str):
            return ()
        if keys_first and text in self.keys:
            return (text,)
        form = comparison_form(text)
        if not form:
            return ()
        tables = (self.french, self.english) if language != "en" else (self.english, self.french)
        for table in (*tables, self.plurals):
            if found := table.get(form):
                return found
        for variant in self._lemmas(form):
            if found := self.french.get(variant):
                return found
        for variant, among in _singulars(form, tables, self.english):
            for table in among:
                if found := table.get(variant):
                    return found
        return ()

    def category(self, text: str, language: str = "fr", keys_first: bool = True) -> str | None:
        """The one category ``text`` names; None when it names none, or several (``phone``,
        ``boat``: a caller that needs one category cannot tell which)."""
        found = self.categories(text, language, keys_first)
        return found[0] if len(found) == 1 else None

    def _lemmas(self, form: str) -> Iterable[str]:
        """The form with its words replaced by their French noun lemmas (DELA), where they differ."""
        words = form.split()
        if len(words) > MAX_LEMMA_TOKENS:
            return ()
        options = [(w, *self.lexicon.lemmas(w)) for w in words]
        if all(len(o) == 1 for o in options):
            return ()
        return [" ".join(c) for c in itertools.islice(itertools.product(*options), 1, 64)]


def _singulars(form: str, tables: tuple[_Table, _Table],
               english: _Table) -> list[tuple[str, tuple[_Table, ...]]]:
    """The form without a final ``s`` or ``x`` (both tables), or ``es`` (the English one)."""
    out: list[tuple[str, tuple[_Table, ...]]] = []
    if form.endswith(("s", "x")) and len(form) > 2:
        out.append((form[:-1], tables))
    if form.endswith("es") and len(form) > 3:
        out.append((form[:-2], (english,)))
    return out


def _plurals(names: Iterable[str]) -> list[str | None]:
    """Each English name's plural (``inflect``), or None for a name that already reads as a plural."""
    import inflect

    engine = inflect.engine()
    out: list[str | None] = []
    for name in names:
        words = comparison_form(name).split()
        if not words or (words[-1].endswith("s") and engine.singular_noun(words[-1])):
            out.append(None)
            continue
        out.append(" ".join([*words[:-1], engine.plural_noun(words[-1])]))
    return out


class Categories(Protocol):
    """What the rule reads of a vocabulary (`vocab.vocabulary.Vocabulary`): its categories, and the
    French forms that name each."""

    @property
    def words(self) -> Mapping[str, Any]: ...

    @property
    def form_index(self) -> Mapping[str, str]: ...


@functools.lru_cache(maxsize=4)
def word_lookup(vocabulary: Categories) -> WordLookup:
    """The rule over a vocabulary's categories, built once (the shipped vocabulary's:
    ``load_vocabulary().lookup``)."""
    return WordLookup(vocabulary.words.keys(), vocabulary.form_index)
