"""Batch evaluation of one recognizer (or two, side by side) on a Quick, Draw! folder.

The core of ``griffon eval``. Three steps, each usable on its own:

1. :func:`load_eval_data` reads every file of a data folder (any official format), counting corrupt
   records per file, de-duplicating by ``key_id`` and keeping one split (see ``training.data``);
   :func:`restrict` then checks the data's categories against the models' class lists.
2. :func:`evaluate` turns every drawing into the conditions that matter for the games (the first
   10 %, 20 % … 100 % of its strokes, and the Kontour style of at most 15 straight lines), rasterizes
   them in a pool of worker processes, runs batched inference in this process and computes the
   metrics (``training.metrics``). Any predictor works: a :class:`model.Guesser`, a small object with
   ``labels``/``spec``/``probabilities_from_images``, or a plain function images → probabilities
   wrapped with :func:`as_model`.
3. :func:`write_report` writes ``report.json`` (keys documented in ``docs/EVAL_REPORT.md``) and the
   self-contained ``report.html`` (``training.report``).

Partial drawings are cut after the dataset's simplification (as training's headline metrics do).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm import tqdm

from model.checkpoint import fingerprint, make_input_contract
from model.raster import RasterSpec, rasterize
from model.strokes import DrawingError, simplify_drawing, validate_drawing
from training.augment import first_fraction, kontour_style
from training.data import (
    SPLITS,
    DataError,
    DrawingRecord,
    ReadStats,
    assign_splits,
    data_files,
    read_file,
)
from training.metrics import (
    calibration,
    confused_pairs,
    map_at_k,
    per_class_counts,
    table_accuracies,
    true_ranks,
)

SCHEMA = "griffon-eval-report/1"
FULL = "f1.0"
KONTOUR = "kontour"


class EvalError(ValueError):
    """Evaluation cannot run as asked: unknown categories, a model/data mismatch, no drawings left."""


@dataclass(frozen=True)
class EvalSettings:
    """What an evaluation measures and how (recorded in ``report.json`` under ``settings``)."""

    fractions: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    kontour_lines: int = 15
    table_size: int = 42
    table_seeds: tuple[int, ...] = (0, 1, 2)
    calibration_bins: int = 10
    top_pairs: int = 12
    examples_per_pair: int = 4
    per_category_changes: int = 15
    latency_samples: int = 200
    batch_size: int = 256
    workers: int = 2
    limit: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.fractions or any(not 0 < f <= 1 for f in self.fractions) or 1.0 not in self.fractions:
            raise EvalError("stroke fractions must lie in (0, 1] and include 1.0")
        if self.batch_size < 1 or self.workers < 0 or self.latency_samples < 0:
            raise EvalError("batch size must be ≥ 1, workers and latency samples ≥ 0")
        if self.limit is not None and self.limit < 1:
            raise EvalError("--limit must be at least 1")

    def conditions(self) -> tuple[str, ...]:
        """Names of the rasterized conditions: ``f0.1`` … ``f1.0`` then ``kontour``."""
        return tuple(f"f{f:.1f}" for f in self.fractions) + (KONTOUR,)


# -- models -----------------------------------------------------------------------------------------


class Predictor(Protocol):
    """What evaluation needs from a recognizer (a :class:`model.Guesser` qualifies)."""

    labels: list[str]
    spec: RasterSpec

    def probabilities_from_images(self, images: np.ndarray) -> np.ndarray:
        """Probabilities ``(n, classes)`` for rasters ``(n, channels, size, size)``."""
        ...


@dataclass
class ModelUnderTest:
    """A recognizer as evaluation sees it: class labels, raster spec, a predict function, a description."""

    name: str
    labels: list[str]
    spec: RasterSpec
    predict: Callable[[np.ndarray], np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)
    prepare: Callable[[Any], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if len(set(self.labels)) != len(self.labels) or not self.labels:
            raise EvalError(f"model {self.name!r}: class labels are empty or repeated")
        self.index = {label: i for i, label in enumerate(self.labels)}
        self.info.setdefault("name", self.name)
        self.info.setdefault("classes", len(self.labels))
        self.info.setdefault("raster", self.spec.to_dict())
        self.info.setdefault("fingerprint", fingerprint(self.labels, make_input_contract(self.spec)))

    def prepare_one(self, drawing: Any) -> np.ndarray:
        """Validate, simplify and rasterize one drawing (the model's own ``prepare`` when it has one)."""
        if self.prepare is not None:
            return self.prepare(drawing)
        return rasterize(simplify_drawing(validate_drawing(drawing)), self.spec)


def as_model(
    predictor: Predictor | Callable[[np.ndarray], np.ndarray] | ModelUnderTest,
    labels: Sequence[str] | None = None,
    spec: RasterSpec | None = None,
    name: str = "model",
    info: dict[str, Any] | None = None,
) -> ModelUnderTest:
    """Wrap a predictor object, or a function images → probabilities plus ``labels`` and ``spec``."""
    if isinstance(predictor, ModelUnderTest):
        return predictor
    if hasattr(predictor, "probabilities_from_images"):
        labels = list(labels if labels is not None else predictor.labels)
        spec = spec or predictor.spec
        predict = predictor.probabilities_from_images
        prepare = getattr(predictor, "prepare", None)
    elif callable(predictor):
        if labels is None or spec is None:
            raise EvalError("a plain predict function needs explicit labels and a raster spec")
        predict, prepare = predictor, None
    else:
        raise EvalError(f"not a predictor: {type(predictor).__name__}")
    return ModelUnderTest(name, list(labels), spec, predict, dict(info or {}), prepare)


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_model(path: Path | str | None = None, name: str | None = None) -> ModelUnderTest:
    """Load a checkpoint (default: the shipped weights) as a :class:`ModelUnderTest` with its metadata."""
    from model import DEFAULT_WEIGHTS, Guesser

    path = Path(path) if path is not None else DEFAULT_WEIGHTS
    guesser = Guesser.load(path)  # raises CheckpointError with a clear message
    meta = guesser.metadata
    training = meta.get("training") or {}
    generic = path.stem in {"model", "best", "last", "checkpoint", "final"}
    info = {
        "name": name or (f"{path.parent.name}/{path.stem}" if generic else path.stem),
        "path": str(path),
        "file_sha256": file_sha256(path),
        "file_bytes": path.stat().st_size,
        "architecture": meta.get("architecture"),
        "temperature": guesser.temperature,
        "flip_tta": guesser.flip_tta,
        "training_command": training.get("command"),
        "training_data_sha256": training.get("data_sha256"),
        "training_metrics": meta.get("metrics") or {},
    }
    return as_model(guesser, name=info["name"], info=info)


# -- data -------------------------------------------------------------------------------------------


@dataclass
class EvalData:
    """Drawings to evaluate (raw strokes as read) with their words, keys and source file."""

    root: Path
    split: str
    strokes: list[list]
    words: list[str]
    key_ids: list[str]
    file_of: list[int]
    files: list[dict[str, Any]]
    available: int = 0
    skipped_unknown: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.words)

    def subset(self, keep: Sequence[int]) -> EvalData:
        """The drawings at positions ``keep`` (file summaries are shared)."""
        return EvalData(
            self.root,
            self.split,
            [self.strokes[i] for i in keep],
            [self.words[i] for i in keep],
            [self.key_ids[i] for i in keep],
            [self.file_of[i] for i in keep],
            self.files,
            self.available,
            dict(self.skipped_unknown),
        )


def load_eval_data(root: Path | str, split: str = "val") -> EvalData:
    """Read every Quick, Draw! file under ``root`` and keep one split (``train``, ``val`` or ``all``).

    Corrupt records are skipped and counted per file; a drawing read twice (same ``key_id``) is
    counted as a duplicate of the later file. Raises :class:`training.data.DataError` for a missing
    folder, a folder without Quick, Draw! files, or an unreadable file.
    """
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    root = Path(root)
    records: dict[str, tuple[DrawingRecord, int]] = {}
    files: list[dict[str, Any]] = []
    for fmt, word, path in data_files(root):
        stats = ReadStats()
        entry = {"path": str(path.relative_to(root)), "format": fmt, "word": word, "duplicates": 0}
        for record in read_file(fmt, word, path, stats):
            if record.key_id in records:
                entry["duplicates"] += 1
                continue
            records[record.key_id] = (record, len(files))
        entry.update(records=stats.records, corrupt=stats.corrupt, rejected=0, evaluated=0)
        files.append(entry)
    everything = [record for record, _ in records.values()]
    assignment = assign_splits(everything) if split != "all" else {}
    chosen = [
        (record, index)
        for record, index in records.values()
        if split == "all" or assignment[record.key_id] == split
    ]
    chosen.sort(key=lambda item: (item[0].word, item[0].key_id))
    return EvalData(
        root=root,
        split=split,
        strokes=[record.strokes for record, _ in chosen],
        words=[record.word for record, _ in chosen],
        key_ids=[record.key_id for record, _ in chosen],
        file_of=[index for _, index in chosen],
        files=files,
        available=len(chosen),
    )


def restrict(
    data: EvalData,
    models: Sequence[ModelUnderTest],
    skip_unknown: bool = False,
    limit: int | None = None,
    seed: int = 0,
) -> EvalData:
    """Check the data's categories against every model; optionally drop unknown ones and sample.

    Raises :class:`EvalError` listing the categories some model does not know (unless
    ``skip_unknown``), or when no drawing is left. ``limit`` keeps a seeded random sample.
    """
    known = set.intersection(*(set(m.labels) for m in models))
    unknown = sorted(set(data.words) - known)
    if unknown and not skip_unknown:
        shown = ", ".join(repr(word) for word in unknown[:20])
        more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
        which = " / ".join(f"{m.name} ({len(m.labels)} classes)" for m in models)
        raise EvalError(
            f"the data has {len(unknown)} categories the model does not know: {shown}{more} "
            f"[model: {which}]; pass --skip-unknown to leave them out"
        )
    keep = [i for i, word in enumerate(data.words) if word in known]
    skipped: dict[str, int] = {}
    for word in data.words:
        if word not in known:
            skipped[word] = skipped.get(word, 0) + 1
    if not keep:
        raise EvalError(
            f"no drawing of {data.root} ({data.split} split) belongs to a category the model knows"
        )
    if limit is not None and limit < len(keep):
        rng = np.random.default_rng(seed)
        keep = sorted(rng.choice(keep, size=limit, replace=False).tolist())
    out = data.subset(keep)
    out.skipped_unknown = skipped
    return out


# -- preprocessing (runs in worker processes) -------------------------------------------------------


@dataclass
class PreparedChunk:
    """Rasters of a chunk of drawings, as ``uint8`` (value × 255, exact for ``rasterize``).

    A drawing of ``n`` strokes has at most ``n`` distinct stroke prefixes, so each distinct prefix is
    rasterized (and later classified) once: ``prefix_of[i, j]`` is the row of ``prefixes`` that
    shows valid drawing ``i`` at the ``j``-th stroke fraction.
    """

    valid: np.ndarray  # per drawing: passed validation
    prefixes: dict[int, np.ndarray]  # raster spec index → distinct stroke prefixes
    prefix_of: np.ndarray  # (valid drawings, fractions) → row of ``prefixes``
    kontour: dict[int, np.ndarray]  # raster spec index → Kontour-style rasters, one per valid drawing
    seconds: float


def prepare_chunk(
    drawings: Sequence[list], specs: Sequence[RasterSpec], fractions: Sequence[float], kontour_lines: int
) -> PreparedChunk:
    """Validate, simplify and rasterize drawings: every stroke fraction and the Kontour style."""
    start = time.perf_counter()
    valid, simplified = [], []
    for drawing in drawings:
        try:
            simplified.append(simplify_drawing(validate_drawing(drawing)))
            valid.append(True)
        except DrawingError:
            valid.append(False)
    prefix_strokes: list[list[np.ndarray]] = []
    prefix_of = np.zeros((len(simplified), len(fractions)), dtype=np.int64)
    for i, strokes in enumerate(simplified):
        rows: dict[int, int] = {}
        for j, fraction in enumerate(fractions):
            count = len(first_fraction(strokes, fraction))
            if count not in rows:
                rows[count] = len(prefix_strokes)
                prefix_strokes.append(strokes[:count])
            prefix_of[i, j] = rows[count]
    kontour = [kontour_style(strokes, kontour_lines) for strokes in simplified]
    return PreparedChunk(
        np.array(valid, dtype=bool),
        {index: _raster_stack(prefix_strokes, spec) for index, spec in enumerate(specs)},
        prefix_of,
        {index: _raster_stack(kontour, spec) for index, spec in enumerate(specs)},
        time.perf_counter() - start,
    )


def _raster_stack(drawings: Sequence[list[np.ndarray]], spec: RasterSpec) -> np.ndarray:
    if not drawings:
        return np.zeros((0, len(spec.channels), spec.size, spec.size), dtype=np.uint8)
    return np.round(np.stack([rasterize(strokes, spec) for strokes in drawings]) * 255).astype(np.uint8)


def _chunks(
    data: EvalData, specs: Sequence[RasterSpec], settings: EvalSettings, pool: Executor | None
) -> Iterator[tuple[range, PreparedChunk]]:
    """Prepared chunks in order; with a pool, at most ``2 × workers`` chunks are in flight."""
    size = settings.batch_size
    spans = [range(s, min(s + size, len(data))) for s in range(0, len(data), size)]
    args = (tuple(specs), settings.fractions, settings.kontour_lines)
    if pool is None:
        for span in spans:
            yield span, prepare_chunk([data.strokes[i] for i in span], *args)
        return
    pending: deque[tuple[range, Future]] = deque()
    queue = iter(spans)
    for span in queue:
        pending.append((span, pool.submit(prepare_chunk, [data.strokes[i] for i in span], *args)))
        if len(pending) >= 2 * settings.workers:
            break
    while pending:
        span, future = pending.popleft()
        nxt = next(queue, None)
        if nxt is not None:
            pending.append((nxt, pool.submit(prepare_chunk, [data.strokes[i] for i in nxt], *args)))
        yield span, future.result()


# -- evaluation -------------------------------------------------------------------------------------


@dataclass
class ModelOutputs:
    """Everything one model produced on the evaluated drawings."""

    labels: np.ndarray  # true class index (model's own order) per valid drawing
    full: np.ndarray  # probabilities on whole drawings
    kontour: np.ndarray  # probabilities on Kontour-style drawings
    ranks: dict[str, np.ndarray]  # rank of the true class per condition
    inference_seconds: float = 0.0
    images: int = 0


@dataclass
class EvalResult:
    """The report (``report.json``'s content) and the simplified strokes of its example drawings."""

    report: dict[str, Any]
    examples: dict[str, list[np.ndarray]]
    outputs: list[ModelOutputs]


def _predict(model: ModelUnderTest, images: np.ndarray, batch_size: int) -> np.ndarray:
    """Probabilities for ``uint8`` rasters, ``batch_size`` at a time, with the output shape checked."""
    parts = []
    for start in range(0, len(images), batch_size):
        batch = images[start : start + batch_size]
        probs = np.asarray(model.predict(batch.astype(np.float32) / 255.0), dtype=np.float64)
        if probs.shape != (len(batch), len(model.labels)):
            raise EvalError(
                f"model {model.name!r} returned probabilities of shape {probs.shape}, expected "
                f"{(len(batch), len(model.labels))}: the model and its class list do not match"
            )
        parts.append(probs)
    return np.concatenate(parts) if parts else np.zeros((0, len(model.labels)))


def run_models(
    models: Sequence[ModelUnderTest], data: EvalData, settings: EvalSettings, progress: bool = True
) -> tuple[list[ModelOutputs], np.ndarray, dict[str, float]]:
    """Preprocess in worker processes, infer in batches; returns outputs, valid mask and timings."""
    specs = list(dict.fromkeys(m.spec for m in models))
    spec_of = [specs.index(m.spec) for m in models]
    names = [f"f{f:.1f}" for f in settings.fractions]
    whole = settings.fractions.index(1.0)
    full: list[list[np.ndarray]] = [[] for _ in models]
    kontour: list[list[np.ndarray]] = [[] for _ in models]
    ranks: list[dict[str, list[np.ndarray]]] = [{c: [] for c in names} for _ in models]
    labels: list[list[np.ndarray]] = [[] for _ in models]
    valid_all: list[np.ndarray] = []
    infer = [0.0 for _ in models]
    counted = [0 for _ in models]
    preprocess = 0.0
    started = time.perf_counter()
    workers = min(settings.workers, math.ceil(len(data) / settings.batch_size))
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    bar = tqdm(total=len(data), desc="eval", unit="drawing", disable=not progress, leave=False)
    try:
        for span, chunk in _chunks(data, specs, settings, pool):
            preprocess += chunk.seconds
            valid_all.append(chunk.valid)
            words = [data.words[i] for i, ok in zip(span, chunk.valid, strict=True) if ok]
            for m, model in enumerate(models):
                truth = np.array([model.index[w] for w in words], dtype=np.int64)
                labels[m].append(truth)
                tick = time.perf_counter()
                prefix_probs = _predict(model, chunk.prefixes[spec_of[m]], settings.batch_size)
                kontour[m].append(_predict(model, chunk.kontour[spec_of[m]], settings.batch_size))
                infer[m] += time.perf_counter() - tick
                counted[m] += len(prefix_probs) + len(truth)
                for j, name in enumerate(names):
                    ranks[m][name].append(true_ranks(prefix_probs[chunk.prefix_of[:, j]], truth))
                full[m].append(prefix_probs[chunk.prefix_of[:, whole]])
            bar.update(len(span))
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    wall = time.perf_counter() - started
    valid = np.concatenate(valid_all) if valid_all else np.zeros(0, dtype=bool)
    outputs = []
    for m in range(len(models)):
        truth = np.concatenate(labels[m])
        if not len(truth):
            raise EvalError("no drawing passed validation; nothing to evaluate")
        model_ranks = {name: np.concatenate(parts) for name, parts in ranks[m].items()}
        kontour_probs = np.concatenate(kontour[m])
        model_ranks[KONTOUR] = true_ranks(kontour_probs, truth)
        outputs.append(
            ModelOutputs(truth, np.concatenate(full[m]), kontour_probs, model_ranks, infer[m], counted[m])
        )
    timings = {"wall_seconds": wall, "preprocess_cpu_seconds": preprocess, "workers": max(workers, 1)}
    return outputs, valid, timings


def _percentiles(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"samples": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}
    array = np.asarray(values)
    return {
        "samples": len(values),
        "mean": float(array.mean()),
        "p50": float(np.percentile(array, 50)),
        "p90": float(np.percentile(array, 90)),
        "p99": float(np.percentile(array, 99)),
        "max": float(array.max()),
    }


def measure_latency(model: ModelUnderTest, data: EvalData, samples: int, seed: int) -> dict[str, Any]:
    """Per-drawing preprocessing and inference time at batch 1, in milliseconds, on a seeded sample."""
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(data), size=min(samples, len(data)), replace=False) if samples else []
    prep, infer, total = [], [], []
    warm = 3
    for n, index in enumerate(chosen):
        tick = time.perf_counter()
        try:
            image = model.prepare_one(data.strokes[int(index)])
        except DrawingError:
            continue
        mid = time.perf_counter()
        model.predict(image[None].astype(np.float32))
        end = time.perf_counter()
        if n < warm and len(chosen) > 2 * warm:
            continue  # first calls pay one-off costs (allocator, lazy init)
        prep.append((mid - tick) * 1000)
        infer.append((end - mid) * 1000)
        total.append((end - tick) * 1000)
    return {
        "batch1_total_ms": _percentiles(total),
        "batch1_preprocess_ms": _percentiles(prep),
        "batch1_inference_ms": _percentiles(infer),
        "histogram_ms": [round(v, 4) for v in total],
    }


def model_metrics(
    model: ModelUnderTest, out: ModelOutputs, data: EvalData, valid: np.ndarray, settings: EvalSettings
) -> dict[str, Any]:
    """Every metric of one model (the ``metrics`` object of ``report.json``)."""
    truth, probs = out.labels, out.full
    ranks = out.ranks[FULL]
    tables = table_accuracies(probs, truth, settings.table_size, settings.table_seeds)
    calib = calibration(probs, truth, settings.calibration_bins)
    headline = {
        "drawings": int(len(truth)),
        "top1": float((ranks == 1).mean()),
        "top3": float((ranks <= 3).mean()),
        "map3": map_at_k(probs, truth, 3),
        "kontour_top1": float((out.ranks[KONTOUR] == 1).mean()),
        "kontour_top3": float((out.ranks[KONTOUR] <= 3).mean()),
        "half_top1": float((out.ranks["f0.5"] == 1).mean()) if "f0.5" in out.ranks else None,
        f"table{settings.table_size}_top1": float(np.mean(list(tables.values()))),
        "ece": calib["ece"],
        "mean_confidence": float(probs.max(axis=1).mean()),
        "mean_true_probability": float(probs[np.arange(len(truth)), truth].mean()),
    }
    curve = [
        {
            "fraction": fraction,
            "top1": float((out.ranks[f"f{fraction:.1f}"] == 1).mean()),
            "top3": float((out.ranks[f"f{fraction:.1f}"] <= 3).mean()),
        }
        for fraction in settings.fractions
    ]
    counts = per_class_counts(probs, truth, len(model.labels), 3)
    per_category = {
        model.labels[c]: {
            "count": int(counts["count"][c]),
            "top1": counts["top1"][c] / counts["count"][c],
            "top3": counts["top3"][c] / counts["count"][c],
        }
        for c in sorted(set(truth.tolist()), key=lambda c: model.labels[c])
    }
    valid_keys = [key for key, ok in zip(data.key_ids, valid, strict=True) if ok]
    predicted = np.argmax(probs, axis=1)
    pairs = []
    for true, guess, count in confused_pairs(probs, truth, settings.top_pairs):
        where = np.flatnonzero((truth == true) & (predicted == guess))[: settings.examples_per_pair]
        pairs.append(
            {
                "true": model.labels[true],
                "predicted": model.labels[guess],
                "count": int(count),
                "share_of_true": count / int(counts["count"][true]),
                "examples": [valid_keys[i] for i in where],
            }
        )
    return {
        "headline": headline,
        "table_by_seed": {str(seed): value for seed, value in tables.items()},
        "strokes_curve": curve,
        "per_category": per_category,
        "confused_pairs": pairs,
        "calibration": calib,
    }


def _mcnemar_p(only_a: int, only_b: int) -> float | None:
    """Two-sided McNemar test (chi-square, continuity-corrected) p-value; ``None`` without disagreement."""
    if only_a + only_b == 0:
        return None
    chi2 = (abs(only_a - only_b) - 1) ** 2 / (only_a + only_b)
    return float(math.erfc(math.sqrt(chi2 / 2)))


def compare_models(
    reports: Sequence[dict[str, Any]], outputs: Sequence[ModelOutputs], settings: EvalSettings
) -> dict[str, Any]:
    """Differences of model B against model A: headline deltas, curve deltas, categories, agreement."""
    a, b = reports[0]["metrics"], reports[1]["metrics"]
    headline = {
        key: {"a": a["headline"][key], "b": b["headline"][key], "delta": _delta(a, b, key)}
        for key in a["headline"]
        if key != "drawings"
    }
    curve = [
        {
            "fraction": pa["fraction"],
            "delta_top1": pb["top1"] - pa["top1"],
            "delta_top3": pb["top3"] - pa["top3"],
        }
        for pa, pb in zip(a["strokes_curve"], b["strokes_curve"], strict=True)
    ]
    changes = [
        {
            "category": word,
            "count": stats["count"],
            "a": stats["top1"],
            "b": b["per_category"][word]["top1"],
            "delta": b["per_category"][word]["top1"] - stats["top1"],
        }
        for word, stats in a["per_category"].items()
    ]
    changes.sort(key=lambda row: (-abs(row["delta"]), row["category"]))
    right_a = outputs[0].ranks[FULL] == 1
    right_b = outputs[1].ranks[FULL] == 1
    only_a, only_b = int((right_a & ~right_b).sum()), int((right_b & ~right_a).sum())
    return {
        "headline": headline,
        "strokes_curve": curve,
        "categories_changed_most": changes[: settings.per_category_changes],
        "agreement": {
            "both_right": int((right_a & right_b).sum()),
            "only_a_right": only_a,
            "only_b_right": only_b,
            "both_wrong": int((~right_a & ~right_b).sum()),
            "mcnemar_p": _mcnemar_p(only_a, only_b),
        },
    }


def _delta(a: dict, b: dict, key: str) -> float | None:
    if a["headline"][key] is None or b["headline"][key] is None:
        return None
    return b["headline"][key] - a["headline"][key]


def data_summary(data: EvalData, valid: np.ndarray) -> dict[str, Any]:
    """The ``data`` object of ``report.json``: files with corrupt/rejected counts, categories, totals."""
    files = [dict(entry) for entry in data.files]
    for file_index, ok in zip(data.file_of, valid, strict=True):
        files[file_index]["evaluated" if ok else "rejected"] += 1
    per_category: dict[str, int] = {}
    for word, ok in zip(data.words, valid, strict=True):
        if ok:
            per_category[word] = per_category.get(word, 0) + 1
    return {
        "root": str(data.root),
        "split": data.split,
        "available_in_split": data.available,
        "evaluated": int(valid.sum()),
        "rejected_drawings": int((~valid).sum()),
        "corrupt_records": sum(entry["corrupt"] for entry in files),
        "duplicates": sum(entry["duplicates"] for entry in files),
        "skipped_unknown": dict(sorted(data.skipped_unknown.items())),
        "categories": len(per_category),
        "per_category": dict(sorted(per_category.items())),
        "files_with_problems": [
            entry for entry in files if entry["corrupt"] or entry["rejected"] or entry["duplicates"]
        ],
        "files": len(files),
    }


def evaluate(
    models: Sequence[ModelUnderTest | Predictor],
    data: EvalData,
    settings: EvalSettings = EvalSettings(),
    progress: bool = True,
    skip_unknown: bool = False,
) -> EvalResult:
    """Evaluate one model (or two, the first as the reference) on ``data``; see the module docstring."""
    models = [as_model(m, name=getattr(m, "name", f"model{i + 1}")) for i, m in enumerate(models)]
    if not 1 <= len(models) <= 2:
        raise EvalError("evaluate one model, or two to compare")
    data = restrict(data, models, skip_unknown, settings.limit, settings.seed)
    environment = machine_environment()
    outputs, valid, timings = run_models(models, data, settings, progress)
    valid_data = data.subset([i for i, ok in enumerate(valid) if ok])
    reports = []
    for model, out in zip(models, outputs, strict=True):
        latency = measure_latency(model, valid_data, settings.latency_samples, settings.seed)
        latency["throughput"] = {
            "batch_size": settings.batch_size,
            "workers": timings["workers"],
            "pipeline_drawings_per_s": len(data) / timings["wall_seconds"],
            "inference_images_per_s": out.images / out.inference_seconds if out.inference_seconds else None,
            "preprocess_cpu_ms_per_drawing": 1000 * timings["preprocess_cpu_seconds"] / len(data),
            "conditions_per_drawing": len(settings.conditions()),
            "images_per_drawing": out.images / max(len(out.labels), 1),
            "wall_seconds": timings["wall_seconds"],
        }
        metrics = model_metrics(model, out, data, valid, settings)
        metrics["latency"] = latency
        reports.append({**_json_safe(model.info), "metrics": metrics})
    examples = {}
    wanted = {key for r in reports for pair in r["metrics"]["confused_pairs"] for key in pair["examples"]}
    for key, strokes in zip(data.key_ids, data.strokes, strict=True):
        if key in wanted:
            examples[key] = simplify_drawing(validate_drawing(strokes))
    settings_dict = asdict(settings)
    settings_dict["conditions"] = list(settings.conditions())
    report = {
        "schema": SCHEMA,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": settings_dict,
        "environment": {**environment, "load_average_end": _load_average()},
        "data": data_summary(data, valid),
        "models": reports,
        "comparison": compare_models(reports, outputs, settings) if len(models) == 2 else None,
    }
    return EvalResult(report, examples, outputs)


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def machine_environment() -> dict[str, Any]:
    """Where timings were taken: CPU count, torch threads, load average (1 min) at the start."""
    import platform

    import torch

    return {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "load_average_start": _load_average(),
    }


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def write_report(result: EvalResult, out: Path | str, html: bool = True) -> dict[str, Path]:
    """Write ``report.json`` (and ``report.html`` + ``strokes_curve.png``) under ``out``; returns paths."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "report.json"}
        paths["json"].write_text(json.dumps(result.report, indent=1, allow_nan=False), encoding="utf-8")
        if html:
            from training.report import render_html, strokes_curve_png

            paths["html"] = out / "report.html"
            paths["html"].write_text(render_html(result.report, result.examples), encoding="utf-8")
            paths["curve"] = out / "strokes_curve.png"
            paths["curve"].write_bytes(strokes_curve_png(result.report))
    except OSError as error:
        raise EvalError(f"cannot write the report under {out}: {error}") from error
    return paths


def default_workers() -> int:
    """Worker processes for preprocessing: the CPU count, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))
