"""The cache of the teachers' answers on every training drawing (`write_cache`, `read_cache`),
what ``--teacher-cache`` distils from (:mod:`training.taught`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.teachers.published import TeacherError, geometric_mean

CACHE_VERSION = 1


@dataclass
class TeacherCache:
    """The teachers' answers on whole drawings, keyed by ``key_id`` (what :func:`write_cache` stores).

    ``probabilities[name]`` is ``(n, classes)`` float32 in our class order; a cache written with
    ``top_k`` holds zeros outside each row's ``top_k`` largest answers."""

    key_ids: np.ndarray
    labels: np.ndarray
    extra: np.ndarray  # True for the drawings of the extra folder
    probabilities: dict[str, np.ndarray]
    classes: list[str]
    meta: dict

    def rows(self, key_ids: Iterable[str]) -> np.ndarray:
        """Row indices of ``key_ids``; raises ``KeyError`` naming the first one not cached."""
        if not hasattr(self, "_row_of"):
            self._row_of = {str(key): row for row, key in enumerate(self.key_ids)}
        out = []
        for key in key_ids:
            if key not in self._row_of:
                raise KeyError(f"drawing {key} is not in the teachers' cache")
            out.append(self._row_of[key])
        return np.asarray(out, dtype=np.int64)

    def committee(self, names: Sequence[str] = (), floor: float = 1e-8) -> np.ndarray:
        """The normalized geometric mean of the cached teachers ``names`` (default: every one),
        ``(n, classes)``; raises :class:`TeacherError` for a teacher the cache does not hold."""
        unknown = [name for name in names if name not in self.probabilities]
        if unknown:
            raise TeacherError(f"the cache holds no teacher {unknown[0]!r} ({', '.join(self.probabilities)})")
        chosen = [self.probabilities[name] for name in (names or self.probabilities)]
        return geometric_mean(chosen, floor)


def write_cache(
    path: Path | str,
    key_ids: Sequence[str],
    labels: np.ndarray,
    extra: np.ndarray,
    probabilities: dict[str, np.ndarray],
    classes: Sequence[str],
    meta: dict,
    top_k: int = 0,
) -> Path:
    """Store the teachers' answers as one compressed ``.npz``: float16 probabilities, dense or (with
    ``top_k``) each row's ``top_k`` largest as ``<name>.index`` (int16) and ``<name>.value``."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {
        "key_ids": np.asarray([str(key) for key in key_ids]),
        "labels": np.asarray(labels, dtype=np.int16),
        "extra": np.asarray(extra, dtype=bool),
        "classes": np.asarray(list(classes)),
    }
    for name, answers in probabilities.items():
        if top_k and top_k < answers.shape[1]:
            index = np.argsort(-answers, axis=1, kind="stable")[:, :top_k]
            arrays[f"{name}.index"] = index.astype(np.int16)
            arrays[f"{name}.value"] = np.take_along_axis(answers, index, axis=1).astype(np.float16)
        else:
            arrays[name] = answers.astype(np.float16)
    meta = {**meta, "version": CACHE_VERSION, "teachers": list(probabilities), "top_k": int(top_k)}
    arrays["meta"] = np.asarray(json.dumps(meta, sort_keys=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial_path = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez_compressed(partial_path, **arrays)
    os.replace(partial_path, path)
    return path


def read_cache(path: Path | str) -> TeacherCache:
    """Read what :func:`write_cache` stored (probabilities back to dense float32)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"]))
            if meta.get("version") != CACHE_VERSION:
                raise TeacherError(f"{path}: cache version {meta.get('version')}, expected {CACHE_VERSION}")
            classes = [str(name) for name in archive["classes"]]
            count = len(archive["key_ids"])
            probabilities = {}
            for name in meta["teachers"]:
                if name in archive.files:
                    probabilities[name] = archive[name].astype(np.float32)
                else:
                    dense = np.zeros((count, len(classes)), dtype=np.float32)
                    index = archive[f"{name}.index"].astype(np.int64)
                    np.put_along_axis(dense, index, archive[f"{name}.value"].astype(np.float32), axis=1)
                    probabilities[name] = dense
            return TeacherCache(
                key_ids=archive["key_ids"],
                labels=archive["labels"].astype(np.int64),
                extra=archive["extra"],
                probabilities=probabilities,
                classes=classes,
                meta=meta,
            )
    except (OSError, ValueError, KeyError) as error:
        raise TeacherError(f"cannot read the teachers' cache {path}: {error}") from error


