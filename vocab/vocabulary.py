"""The French vocabulary: schema, loading (cached) and look-ups by category or French word.

Data lives in ``vocab/data/words.yaml`` (hand-written) and ``vocab/data/category_stats.csv``
(measured difficulty, see ``vocab.build_stats``); both are joined here into ``Word`` records.
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from vocab.normalize import normalize

if TYPE_CHECKING:
    from vocab.lookup import WordLookup

__all__ = [
    "DATA_DIR",
    "UnknownCategoryError",
    "UnknownWordError",
    "VocabularyError",
    "Vocabulary",
    "Word",
    "WordEntry",
    "category_for",
    "french",
    "load_vocabulary",
]

DATA_DIR = Path(__file__).parent / "data"
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
VOWELS_AND_H = tuple("aeiouyhâàéèêëîïôœûüAEIOUYHÉÈÊÎÔŒ")


class VocabularyError(ValueError):
    """A vocabulary data file is missing or does not follow its schema."""


class UnknownCategoryError(KeyError):
    """No vocabulary entry has this Quick, Draw! category key."""


class UnknownWordError(KeyError):
    """No vocabulary entry has this French word, synonym or variant."""


class WordEntry(BaseModel):
    """One hand-written entry of ``words.yaml`` (schema of the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    word: str = Field(min_length=1)
    article: Literal["le", "la", "l'", "les"]
    gender: Literal["m", "f"]
    synonyms: tuple[str, ...] = Field(default=(), max_length=3)
    variants: tuple[str, ...] = ()
    everyday: dict[str, str] = {}  # everyday or short form → one-line reason it is accepted
    drawable: bool = True
    reason: str | None = None
    note: str | None = None

    @field_validator("word", "synonyms", "variants", "everyday", mode="after")
    @classmethod
    def _no_blank(cls, value: str | tuple | dict) -> str | tuple | dict:
        for text in (value,) if isinstance(value, str) else value:
            if not normalize(text) or text != text.strip():
                raise ValueError(f"blank or untrimmed word {text!r}")
        if isinstance(value, dict) and not all(len(r.split()) >= 3 for r in value.values()):
            raise ValueError("every everyday form needs a one-line reason")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> WordEntry:
        if self.article == "le" and self.gender != "m":
            raise ValueError(f"« le {self.word} » must be masculine")
        if self.article == "la" and self.gender != "f":
            raise ValueError(f"« la {self.word} » must be feminine")
        if self.article == "l'" and not self.word.startswith(VOWELS_AND_H):
            raise ValueError(f"« l'{self.word} »: elision needs a vowel or a mute h")
        if self.article in ("le", "la") and self.word.startswith(tuple("aeiouâàéèêîôœ")):
            raise ValueError(f"« {self.article} {self.word} » should be elided (l')")
        if not self.drawable and not self.reason:
            raise ValueError(f"{self.word}: drawable: false needs a reason")
        forms = [normalize(f) for f in (self.word, *self.synonyms, *self.variants, *self.everyday)]
        if len(set(forms)) != len(forms):
            raise ValueError(f"{self.word}: a synonym or variant repeats another form")
        return self


class Word(BaseModel):
    """A vocabulary word with its measured difficulty (what the rest of Griffon uses)."""

    model_config = ConfigDict(frozen=True)

    category: str
    word: str
    article: str
    gender: Literal["m", "f"]
    synonyms: tuple[str, ...]
    variants: tuple[str, ...]
    everyday: tuple[str, ...] = ()
    drawable: bool
    reason: str | None
    difficulty: int = Field(ge=1, le=4)
    recognized_rate: float
    model_accuracy: float | None = None

    @property
    def with_article(self) -> str:
        """« le chat », « l'avion », « les tongs »."""
        sep = "" if self.article == "l'" else " "
        return f"{self.article}{sep}{self.word}"

    @property
    def forms(self) -> tuple[str, ...]:
        """Every accepted written form: the word, its variants, synonyms and everyday forms."""
        return (self.word, *self.variants, *self.synonyms, *self.everyday)


class Vocabulary:
    """All words, keyed by category, with reverse look-up by any normalised form."""

    def __init__(self, words: dict[str, Word]) -> None:
        self.words = words
        self._by_form: dict[str, str] = {}
        for key, w in words.items():
            for form in w.forms:
                norm = normalize(form)
                other = self._by_form.setdefault(norm, key)
                if other != key:
                    raise VocabularyError(
                        f"form {form!r} of {key!r} is also a form of {other!r}: homonyms are not allowed"
                    )

    def __len__(self) -> int:
        return len(self.words)

    def __iter__(self) -> Iterator[Word]:
        return iter(self.words.values())

    def __getitem__(self, category: str) -> Word:
        try:
            return self.words[category]
        except KeyError:
            raise UnknownCategoryError(f"unknown Quick, Draw! category {category!r}") from None

    def __contains__(self, category: object) -> bool:
        return category in self.words

    @property
    def form_index(self) -> dict[str, str]:
        """Normalised form (word, synonym or variant) → category key."""
        return self._by_form

    def french(self, category: str) -> str:
        """The French word (without article) of a category key."""
        return self[category].word

    def category_for(self, text: str) -> str:
        """Category key of a French word, synonym or variant, else of an English name or a
        category key, by the one rule of ``vocab.lookup`` (plurals, aliases, spacing).

        French forms win: ``category_for("crayon") == "pencil"`` although "crayon" is also the
        key of the wax crayon (« crayon de couleur »); see ``key_form_clashes``.
        """
        key = self.lookup.category(text, "fr", keys_first=False)
        if key is None:
            raise UnknownWordError(f"no vocabulary word matches {text!r}")
        return key

    @property
    def lookup(self) -> WordLookup:
        """The one word → categories rule over these categories (``vocab.lookup``)."""
        from vocab.lookup import word_lookup

        return word_lookup(self)

    def key_form_clashes(self) -> dict[str, str]:
        """Category keys that are also a French form of another category: key → that category."""
        return {k: self._by_form[normalize(k)] for k in self.words if self._by_form.get(normalize(k), k) != k}

    def resolve(self, text: str) -> Word | None:
        """The Word for a category key (keys win, as games pass keys) or any name of one
        (``vocab.lookup``'s rule), or None."""
        key = self.lookup.category(text, "fr", keys_first=True)
        return self.words[key] if key is not None else None

    def drawable(self) -> list[Word]:
        """Words that may appear on cards."""
        return [w for w in self.words.values() if w.drawable]


def _read_stats(path: Path) -> dict[str, dict[str, str]]:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return {row["category"]: row for row in csv.DictReader(fh)}
    except (OSError, KeyError) as exc:
        raise VocabularyError(f"cannot read difficulty stats {path}: {exc}") from exc


def read_vocabulary(data_dir: Path = DATA_DIR) -> Vocabulary:
    """Parse and validate ``words.yaml`` joined with ``category_stats.csv`` (not cached)."""
    path = data_dir / "words.yaml"
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise VocabularyError(f"cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise VocabularyError(f"{path}: expected a mapping category → entry")
    stats = _read_stats(data_dir / "category_stats.csv")
    words: dict[str, Word] = {}
    for key, body in raw.items():
        try:
            entry = WordEntry.model_validate(body)
        except ValidationError as exc:
            raise VocabularyError(f"{path}: entry {key!r}: {exc}") from exc
        if key not in stats:
            raise VocabularyError(f"{key!r} has no row in category_stats.csv (run vocab.build_stats)")
        row = stats[key]
        acc = row.get("model_accuracy") or ""
        words[key] = Word(
            category=key,
            word=entry.word,
            article=entry.article,
            gender=entry.gender,
            synonyms=entry.synonyms,
            variants=entry.variants,
            everyday=tuple(entry.everyday),
            drawable=entry.drawable,
            reason=entry.reason,
            difficulty=int(row["difficulty"]),
            recognized_rate=float(row["recognized_rate"]),
            model_accuracy=float(acc) if acc else None,
        )
    return Vocabulary(words)


@functools.lru_cache(maxsize=1)
def load_vocabulary() -> Vocabulary:
    """The shipped vocabulary, read once and cached."""
    return read_vocabulary(DATA_DIR)


@functools.lru_cache(maxsize=1)
def _extra_groups(data_dir: Path = DATA_DIR) -> tuple[dict[str, tuple[str, ...]], frozenset[str]]:
    path = data_dir / "extra_synonyms.yaml"
    try:
        groups = yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise VocabularyError(f"cannot read {path}: {exc}") from exc
    vocab_forms = load_vocabulary().form_index
    out: dict[str, tuple[str, ...]] = {}
    everyday: set[str] = set()
    for group in groups:
        if isinstance(group, dict):  # {word: …, synonyms: […], everyday: {form: reason}}
            daily = group.get("everyday") or {}
            if not isinstance(group.get("word"), str) or set(group) - {"word", "synonyms", "everyday"}:
                raise VocabularyError(f"{path}: a group mapping has a word, synonyms, everyday: {group!r}")
            if not isinstance(daily, dict) or not all(len(str(r).split()) >= 3 for r in daily.values()):
                raise VocabularyError(f"{path}: every everyday form needs a one-line reason: {group!r}")
            everyday.update(normalize(str(w)) for w in daily)
            group = [group.get("word"), *(group.get("synonyms") or ()), *daily]
        if not isinstance(group, list) or len(group) < 2:
            raise VocabularyError(f"{path}: each group is a list of ≥ 2 words, got {group!r}")
        norms = tuple(normalize(str(w)) for w in group)
        for n in norms:
            if not n or n in vocab_forms or n in out:
                raise VocabularyError(f"{path}: {n!r} is empty, a vocabulary form, or repeated")
            out[n] = norms
    return out, frozenset(everyday)


def extra_synonyms(data_dir: Path = DATA_DIR) -> dict[str, tuple[str, ...]]:
    """Normalised form → (headword, synonyms…) for words outside the categories (médecin…)."""
    return _extra_groups(data_dir)[0]


def extra_everyday(data_dir: Path = DATA_DIR) -> frozenset[str]:
    """Normalised everyday forms among ``extra_synonyms`` (« frigo » for « réfrigérateur »)."""
    return _extra_groups(data_dir)[1]


def french(category: str) -> str:
    """French word of a Quick, Draw! category key (``french("cat") == "chat"``)."""
    return load_vocabulary().french(category)


def category_for(text: str) -> str:
    """Category key of a French word, synonym or variant (``category_for("Bicyclette") == "bicycle"``)."""
    return load_vocabulary().category_for(text)
