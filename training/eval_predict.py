"""Prediction: rasterize every drawing in each condition (in worker processes) and run batched
inference; also the batch-1 latency. Partial drawings are cut after the dataset's simplification."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm import tqdm

from model.raster import RasterSpec, rasterize
from model.sequence import featurize
from model.strokes import DrawingError, simplify_drawing, validate_drawing
from training.augment import first_fraction, kontour_style
from training.eval_data import EvalData
from training.eval_models import ModelUnderTest
from training.eval_settings import KONTOUR, EvalError, EvalSettings
from training.metrics import true_ranks

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
    prefix_sequences: list[np.ndarray] | None = None  # pen paths of ``prefixes`` (two-view models)
    kontour_sequences: list[np.ndarray] | None = None  # pen paths of the Kontour-style drawings


def prepare_chunk(
    drawings: Sequence[list],
    specs: Sequence[RasterSpec],
    fractions: Sequence[float],
    kontour_lines: int,
    sequences: bool = False,
) -> PreparedChunk:
    """Validate, simplify and rasterize drawings: every stroke fraction and the Kontour style (and
    their pen paths, ``sequences``, when a model reads them)."""
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
        [featurize(strokes) for strokes in prefix_strokes] if sequences else None,
        [featurize(strokes) for strokes in kontour] if sequences else None,
    )


def _raster_stack(drawings: Sequence[list[np.ndarray]], spec: RasterSpec) -> np.ndarray:
    if not drawings:
        return np.zeros((0, len(spec.channels), spec.size, spec.size), dtype=np.uint8)
    return np.round(np.stack([rasterize(strokes, spec) for strokes in drawings]) * 255).astype(np.uint8)


def _chunks(
    data: EvalData,
    specs: Sequence[RasterSpec],
    settings: EvalSettings,
    pool: Executor | None,
    sequences: bool = False,
) -> Iterator[tuple[range, PreparedChunk]]:
    """Prepared chunks in order; with a pool, at most ``2 × workers`` chunks are in flight."""
    size = settings.batch_size
    spans = [range(s, min(s + size, len(data))) for s in range(0, len(data), size)]
    args = (tuple(specs), settings.fractions, settings.kontour_lines, sequences)
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


def _predict(
    model: ModelUnderTest, images: np.ndarray, batch_size: int, sequences: list[np.ndarray] | None = None
) -> np.ndarray:
    """Probabilities for ``uint8`` rasters (and their pen paths, for a two-view model), ``batch_size``
    at a time, with the output shape checked."""
    parts = []
    for start in range(0, len(images), batch_size):
        batch = images[start : start + batch_size].astype(np.float32) / 255.0
        if model.predict_views is not None and sequences is not None:
            probs = model.predict_views(batch, sequences[start : start + batch_size])
        else:
            probs = model.predict(batch)
        probs = np.asarray(probs, dtype=np.float64)
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
        for span, chunk in _chunks(data, specs, settings, pool, any(m.reads_sequences for m in models)):
            preprocess += chunk.seconds
            valid_all.append(chunk.valid)
            words = [data.words[i] for i, ok in zip(span, chunk.valid, strict=True) if ok]
            for m, model in enumerate(models):
                truth = np.array([model.index[w] for w in words], dtype=np.int64)
                labels[m].append(truth)
                tick = time.perf_counter()
                prefix_probs = _predict(
                    model, chunk.prefixes[spec_of[m]], settings.batch_size, chunk.prefix_sequences
                )
                kontour[m].append(
                    _predict(model, chunk.kontour[spec_of[m]], settings.batch_size, chunk.kontour_sequences)
                )
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
            if model.predict_views is not None:  # a two-view model: its raster and its pen path
                strokes = simplify_drawing(validate_drawing(data.strokes[int(index)]))
                image, sequence = rasterize(strokes, model.spec), featurize(strokes)
            else:
                image = model.prepare_one(data.strokes[int(index)])
        except DrawingError:
            continue
        mid = time.perf_counter()
        if model.predict_views is not None:
            model.predict_views(image[None].astype(np.float32), [sequence])
        else:
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
