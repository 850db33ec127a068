"""Data preparation: read a Quick, Draw! folder once and write simplified strokes as arrays + ``meta.json``.

Re-runnable and deterministic: preparing the same folder twice gives identical arrays and metadata.
Every drawing goes through :func:`model.strokes.simplify_drawing` (the dataset's own preprocessing),
so raw and simplified files end up alike. Drawings our validator refuses are counted, not kept.

Arrays (``drawings.npz``): ``points`` (all points, float32 ``(P, 2)``), ``stroke_ends`` (end offset of
every stroke into ``points``), ``drawing_ends`` (end offset of every drawing into the strokes),
``labels`` (class index per drawing), ``splits`` (0 = train, 1 = validation, 2 = dev: a part of the
training split that experiments hold out to choose settings without touching validation), ``key_ids``
(each drawing's ``key_id``: what the teachers' cache of :mod:`training.teachers` is keyed by).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from model.strokes import DrawingError, simplify_drawing, validate_drawing
from training.data import ReadStats, assign_splits, in_dev_band, load_dataset, read_categories

SPLIT_CODES = {"train": 0, "val": 1, "dev": 2, "extra": 3}  # extra: added training drawings (icons)


@dataclass
class PreparedData:
    """Simplified drawings in flat arrays, with their labels and split codes."""

    points: np.ndarray
    stroke_ends: np.ndarray
    drawing_ends: np.ndarray
    labels: np.ndarray
    splits: np.ndarray
    classes: list[str]
    meta: dict
    key_ids: np.ndarray | None = None  # each drawing's key_id ("" for added drawings without one)

    def __len__(self) -> int:
        return len(self.labels)

    def strokes(self, index: int) -> list[np.ndarray]:
        """The simplified strokes of drawing ``index`` as ``(n, 2)`` float arrays."""
        first = 0 if index == 0 else int(self.drawing_ends[index - 1])
        last = int(self.drawing_ends[index])
        out = []
        for stroke in range(first, last):
            start = 0 if stroke == 0 else int(self.stroke_ends[stroke - 1])
            out.append(self.points[start : int(self.stroke_ends[stroke])].astype(np.float64))
        return out

    def indices(self, split: str) -> np.ndarray:
        """Indices of one split: ``train`` (includes dev unless excluded by the caller, and the extra
        drawings), ``val``, ``dev``, ``extra``."""
        if split == "train":
            return np.flatnonzero(self.splits != SPLIT_CODES["val"])
        return np.flatnonzero(self.splits == SPLIT_CODES[split])

    def with_extra(
        self, drawings: list[list], labels: list[int], key_ids: list[str] | None = None
    ) -> PreparedData:
        """A copy with more training-only drawings (Quick, Draw! strokes, simplified here like the
        dataset's) in the ``extra`` split: never in validation or dev, so every report stays comparable.
        ``key_ids``: theirs, when they have one (e.g. the extra Quick, Draw! folder's drawings)."""
        simplified = [simplify_drawing(validate_drawing(drawing)) for drawing in drawings]
        own = self.key_ids if self.key_ids is not None else np.full(len(self), "")
        added = np.asarray(key_ids if key_ids is not None else [""] * len(drawings), dtype=str)
        points, stroke_ends, drawing_ends = _flatten(simplified, len(self.points), len(self.stroke_ends))
        extra = len(drawings)
        return PreparedData(
            points=np.concatenate([self.points, *points]),
            stroke_ends=np.concatenate([self.stroke_ends, np.asarray(stroke_ends, dtype=np.int64)]),
            drawing_ends=np.concatenate([self.drawing_ends, np.asarray(drawing_ends, dtype=np.int64)]),
            labels=np.concatenate([self.labels, np.asarray(labels, dtype=np.int64)]),
            splits=np.concatenate([self.splits, np.full(extra, SPLIT_CODES["extra"], dtype=np.int8)]),
            classes=self.classes,
            meta={**self.meta, "extra_drawings": self.meta.get("extra_drawings", 0) + extra},
            key_ids=np.concatenate([own.astype(str), added]),
        )


def _flatten(
    drawings: list[list[np.ndarray]], points_before: int = 0, strokes_before: int = 0
) -> tuple[list[np.ndarray], list[int], list[int]]:
    """Simplified drawings as flat arrays: their points (float32, per stroke), the end offset of
    every stroke and of every drawing, counted after ``points_before`` points and ``strokes_before``
    strokes already stored."""
    points, stroke_ends, drawing_ends = [], [], []
    total_points, total_strokes = points_before, strokes_before
    for strokes in drawings:
        for stroke in strokes:
            points.append(stroke.astype(np.float32))
            total_points += len(stroke)
            stroke_ends.append(total_points)
        total_strokes += len(strokes)
        drawing_ends.append(total_strokes)
    return points, stroke_ends, drawing_ends


def prepare(root: Path | str, out: Path | str, classes: list[str] | None = None) -> PreparedData:
    """Read ``root`` and write ``out/drawings.npz`` and ``out/meta.json``; return the prepared data."""
    out = Path(out)
    classes = classes or read_categories(root)
    stats = ReadStats()
    records = load_dataset(root, "all", categories=classes, stats=stats)
    split_of = assign_splits(records)
    index_of = {name: i for i, name in enumerate(classes)}
    records.sort(key=lambda r: (index_of[r.word], r.key_id))
    kept, labels, splits, key_ids, rejected = [], [], [], [], 0
    for record in tqdm(records, desc="prepare", unit="drawing", leave=False):
        try:
            kept.append(simplify_drawing(validate_drawing(record.strokes)))
        except DrawingError:
            rejected += 1
            continue
        labels.append(index_of[record.word])
        key_ids.append(str(record.key_id))
        code = split_of[record.key_id]
        dev = code == "train" and in_dev_band(record.key_id)
        splits.append(SPLIT_CODES["dev" if dev else code])
    points, stroke_ends, drawing_ends = _flatten(kept)
    data = PreparedData(
        points=np.concatenate(points),
        stroke_ends=np.asarray(stroke_ends, dtype=np.int64),
        drawing_ends=np.asarray(drawing_ends, dtype=np.int64),
        labels=np.asarray(labels, dtype=np.int64),
        splits=np.asarray(splits, dtype=np.int8),
        classes=list(classes),
        meta={},
        key_ids=np.asarray(key_ids, dtype=str),
    )
    digest = hashlib.sha256()
    for array in (data.points, data.stroke_ends, data.drawing_ends, data.labels, data.splits):
        digest.update(np.ascontiguousarray(array).tobytes())
    data.meta = {
        "source": str(Path(root).resolve()),
        "classes": data.classes,
        "drawings": len(data),
        "per_split": {name: int((data.splits == code).sum()) for name, code in SPLIT_CODES.items()},
        "rejected_drawings": rejected,
        "corrupt_records": stats.corrupt,
        "duplicates": stats.duplicates,
        "sha256": digest.hexdigest(),
    }
    out.mkdir(parents=True, exist_ok=True)
    # Written under temporary names, then renamed: `make train` starts two runs at once on a fresh
    # clone, both may prepare the same cache, and a reader must never meet a half-written file.
    # meta.json comes last: it is what marks the cache as ready (prepare_cached).
    arrays = out / f"drawings.{os.getpid()}.{threading.get_ident()}.tmp.npz"
    np.savez(
        arrays,
        points=data.points,
        stroke_ends=data.stroke_ends,
        drawing_ends=data.drawing_ends,
        labels=data.labels,
        splits=data.splits,
        key_ids=data.key_ids,
    )
    os.replace(arrays, out / "drawings.npz")
    meta = arrays.with_name(f"meta.{os.getpid()}.{threading.get_ident()}.tmp.json")
    meta.write_text(json.dumps(data.meta, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(meta, out / "meta.json")
    return data


def load_prepared(out: Path | str) -> PreparedData:
    """Read what :func:`prepare` wrote."""
    out = Path(out)
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    with np.load(out / "drawings.npz") as arrays:
        return PreparedData(**{k: arrays[k] for k in arrays.files}, classes=meta["classes"], meta=meta)


def prepare_cached(root: Path | str, cache_dir: Path | str, classes: list[str] | None = None) -> PreparedData:
    """Prepared data for ``root``, re-used from ``cache_dir`` when it was prepared from the same folder
    (and stores the drawings' key ids)."""
    cache_dir = Path(cache_dir)
    meta_path = cache_dir / "meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("source") == str(Path(root).resolve()) and (
            classes is None or meta["classes"] == classes
        ):
            data = load_prepared(cache_dir)
            if data.key_ids is not None:
                return data
    return prepare(root, cache_dir, classes)
