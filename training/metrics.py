"""The recognizer's headline metrics in each game's conditions (shared by training and evaluation).

- ``full``: whole drawings, top-1 / top-3 over all classes;
- ``kontour``: the same drawings turned into at most 15 straight lines;
- ``half``: only the first half of the strokes (rounded up);
- ``table42``: top-1 when the answer is restricted to a random table of 42 candidate classes that
  contains the true one (fixed seed), as in Pictomania.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from model.raster import RasterSpec, rasterize
from training.augment import first_fraction, kontour_style

TABLE_SIZE = 42
CONDITIONS: dict[str, Callable[[list[np.ndarray]], list[np.ndarray]]] = {
    "full": lambda strokes: strokes,
    "kontour": kontour_style,
    "half": lambda strokes: first_fraction(strokes, 0.5),
}


def rasterize_all(drawings: Sequence[list[np.ndarray]], spec: RasterSpec) -> np.ndarray:
    """Stack the rasters of many simplified drawings."""
    return np.stack([rasterize(strokes, spec) for strokes in drawings])


def topk_accuracy(probs: np.ndarray, labels: np.ndarray, k: int) -> float:
    """Fraction of rows whose true label is among the ``k`` highest probabilities."""
    top = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    return float((top == labels[:, None]).any(axis=1).mean())


def table_accuracy(probs: np.ndarray, labels: np.ndarray, size: int = TABLE_SIZE, seed: int = 0) -> float:
    """Top-1 among a random table of ``size`` classes that includes the true class (fixed seed)."""
    rng = np.random.default_rng(seed)
    classes = probs.shape[1]
    hits = 0
    for row, label in zip(probs, labels, strict=True):
        others = rng.choice(np.delete(np.arange(classes), label), size=min(size, classes) - 1, replace=False)
        table = np.append(others, label)
        hits += int(table[np.argmax(row[table])] == label)
    return hits / max(len(labels), 1)


def headline_metrics(
    predict: Callable[[np.ndarray], np.ndarray],
    drawings: Sequence[list[np.ndarray]],
    labels: np.ndarray,
    spec: RasterSpec,
    seed: int = 0,
    batch: int = 256,
) -> dict[str, float]:
    """Top-1/top-3 for each condition and the 42-candidate table accuracy.

    ``predict`` maps rasters ``(n, channels, size, size)`` to probabilities ``(n, classes)``.
    """
    results: dict[str, float] = {"count": float(len(labels))}
    for name, transform in CONDITIONS.items():
        chunks = []
        for start in range(0, len(drawings), batch):
            part = [transform(strokes) for strokes in drawings[start : start + batch]]
            chunks.append(predict(rasterize_all(part, spec)))
        probs = np.concatenate(chunks)
        results[f"{name}_top1"] = topk_accuracy(probs, labels, 1)
        results[f"{name}_top3"] = topk_accuracy(probs, labels, 3)
        if name == "full":
            results["table42_top1"] = table_accuracy(probs, labels, TABLE_SIZE, seed)
    return results
