"""Distillation from the public teachers' cached answers (``--teacher-cache``): the teachers speak for
the whole drawing, the student learns to read every view of it.

``griffon teachers cache`` stores both teachers' answers on every training drawing (our
training split and the extra Quick, Draw! folder, never validation). A run with ``--teacher-cache
FILE`` reads that file once: each training drawing's target is the normalized geometric mean of the
teachers' answers on the *whole* drawing, softened by ``--distill-temperature``, whatever view of it
the student is shown (partial, Kontour lines, strokes dropped or jittered, strokes of another drawing
mixed in). The teachers read degraded drawings worse than whole ones (Kontour lines 54.6 % top-1 on
our training split, half the strokes 43.9 %, against 74.7 % whole), so their whole-drawing answer is
the better target for a degraded view. No teacher runs during training: a step costs the student's
work alone.

The extra folder named in the cache (``meta["extra"]``) joins the training drawings (split ``extra``:
never validation or dev); drawings the cache does not know (outline icons) learn their label alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from training.data import DataError, load_dataset
from training.prepare import SPLIT_CODES, PreparedData
from training.teachers import TeacherError, read_cache

Strokes = list[np.ndarray]


def soften(probabilities: np.ndarray, temperature: float, floor: float = 1e-8) -> np.ndarray:
    """``softmax(log p / τ)`` row by row: the teachers' probabilities at temperature ``τ``."""
    logits = np.log(np.maximum(probabilities.astype(np.float64), floor)) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    out = np.exp(logits)
    return (out / out.sum(axis=1, keepdims=True)).astype(np.float32)


def with_cached_targets(
    data: PreparedData, cache_path: Path | str, temperature: float, teachers: Sequence[str] = ()
) -> tuple[PreparedData, np.ndarray, np.ndarray]:
    """The prepared data with the cache's extra drawings added, each drawing's softened target
    ``(n, classes)`` and whether it has one (``has_target``; the others learn their label alone).

    A run on a subset of the classes learns the teachers' answers restricted to those classes;
    ``teachers`` names the cached teachers whose geometric mean is the target (default: all).
    Raises ``TeacherError`` when the cache lacks one of the data's classes, or when a drawing of the
    training split (dev included) is not in it: the cache was made from another data folder."""
    cache = read_cache(cache_path)
    column_of = {name: i for i, name in enumerate(cache.classes)}
    unknown = [name for name in data.classes if name not in column_of]
    if unknown:
        raise TeacherError(f"{cache_path}: the cache has no class {unknown[0]!r}; rebuild the cache")
    columns = np.asarray([column_of[name] for name in data.classes], dtype=np.int64)
    if data.key_ids is None:
        raise TeacherError("the prepared data has no key ids; delete its cache folder to prepare it again")
    extra_keys = {str(key) for key in cache.key_ids[cache.extra]}
    extra_root = cache.meta.get("extra")
    if extra_keys:
        if not extra_root or not Path(extra_root).is_dir():
            raise TeacherError(
                f"{cache_path}: its extra drawings came from {extra_root}, which is not a folder here"
            )
        try:
            records = [r for r in load_dataset(Path(extra_root), "all") if r.key_id in extra_keys]
        except DataError as error:
            raise TeacherError(f"cannot read the extra drawings of {cache_path}: {error}") from error
        index_of = {name: i for i, name in enumerate(data.classes)}
        records = [r for r in records if r.word in index_of]
        data = data.with_extra(
            [r.strokes for r in records], [index_of[r.word] for r in records], [r.key_id for r in records]
        )
    row_of = {str(key): row for row, key in enumerate(cache.key_ids)}
    keys = data.key_ids if data.key_ids is not None else np.full(len(data), "")
    rows = np.asarray([row_of.get(str(key), -1) for key in keys], dtype=np.int64)
    training = data.splits != SPLIT_CODES["val"]
    missing = np.flatnonzero(training & (rows < 0) & (keys != ""))
    if len(missing):
        raise TeacherError(
            f"{len(missing)} training drawings (e.g. {keys[missing[0]]}) are not in the teachers' cache "
            f"{cache_path}; build it from this data folder: griffon teachers cache --out FILE"
        )
    has_target = rows >= 0
    targets = np.zeros((len(data), len(data.classes)), dtype=np.float32)
    committee = cache.committee(teachers)[rows[has_target]][:, columns]
    committee /= np.maximum(committee.sum(axis=1, keepdims=True), 1e-12)
    targets[has_target] = soften(committee, temperature)
    return data, targets, has_target


def drawing_target(
    targets: np.ndarray, has_target: np.ndarray, labels: np.ndarray, index: int
) -> np.ndarray:
    """Drawing ``index``'s target: the teachers' softened answer, or its label one-hot when the cache
    does not know it."""
    if has_target[index]:
        return targets[index]
    out = np.zeros(targets.shape[1], dtype=np.float32)
    out[int(labels[index])] = 1.0
    return out


def ink_length(strokes: Sequence[np.ndarray]) -> float:
    """The total length of the strokes' segments (a dot counts as one unit)."""
    return float(sum(max(np.linalg.norm(np.diff(s, axis=0), axis=1).sum(), 1.0) for s in strokes))


def mix_strokes(
    own: Sequence[np.ndarray], partner: Sequence[np.ndarray], rng: np.random.Generator
) -> tuple[Strokes, float]:
    """The first strokes of a drawing, then the first strokes of another one drawn over them (both
    in the dataset's 0–255 box), and the share of the ink that is the first drawing's (``λ``).

    The first drawing keeps at least half its strokes (rounded up) and the partner gives between one
    and half of its own, so the first drawing stays the larger part."""
    keep = int(rng.integers((len(own) + 1) // 2, len(own) + 1))
    give = int(rng.integers(1, max(1, len(partner) // 2) + 1))
    mine, theirs = list(own[: max(1, keep)]), list(partner[:give])
    mine_ink, their_ink = ink_length(mine), ink_length(theirs)
    return mine + theirs, mine_ink / (mine_ink + their_ink)
