"""The recognizer's headline metrics in each game's conditions (shared by training and evaluation).

- ``full``: whole drawings, top-1 / top-3 over all classes;
- ``kontour``: the same drawings turned into at most 15 straight lines;
- ``half``: only the first half of the strokes (rounded up);
- ``table42``: top-1 when the answer is restricted to a random table of 42 candidate classes that
  contains the true one (fixed seed), as in Pictomania.
"""

from __future__ import annotations

import math
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


# -- evaluation metrics (used by ``training.evaluate``) -------------------------------------------


def true_ranks(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """1-based rank of the true label in each row (ties broken by class order, as ``argsort`` stable)."""
    order = np.argsort(-probs, axis=1, kind="stable")
    return np.argmax(order == labels[:, None], axis=1) + 1


def map_at_k(probs: np.ndarray, labels: np.ndarray, k: int = 3) -> float:
    """Mean average precision at ``k`` with one true label: mean of ``1/rank`` when rank ≤ ``k``, else 0."""
    if len(labels) == 0:
        return 0.0
    ranks = true_ranks(probs, labels)
    return float(np.where(ranks <= k, 1.0 / ranks, 0.0).mean())


def table_accuracies(
    probs: np.ndarray, labels: np.ndarray, size: int = TABLE_SIZE, seeds: Sequence[int] = (0, 1, 2)
) -> dict[int, float]:
    """:func:`table_accuracy` for each fixed seed."""
    return {seed: table_accuracy(probs, labels, size, seed) for seed in seeds}


def per_class_counts(
    probs: np.ndarray, labels: np.ndarray, classes: int, k: int = 3
) -> dict[str, np.ndarray]:
    """Per true class: drawings, top-1 hits and top-``k`` hits (arrays of length ``classes``)."""
    ranks = true_ranks(probs, labels) if len(labels) else np.zeros(0, dtype=int)
    return {
        "count": np.bincount(labels, minlength=classes),
        "top1": np.bincount(labels, weights=(ranks == 1).astype(float), minlength=classes).astype(int),
        f"top{k}": np.bincount(labels, weights=(ranks <= k).astype(float), minlength=classes).astype(int),
    }


def confused_pairs(probs: np.ndarray, labels: np.ndarray, top: int = 10) -> list[tuple[int, int, int]]:
    """The most frequent ``(true, predicted, count)`` top-1 mistakes, most frequent first.

    Ties are ordered by true then predicted class index, so the list is deterministic.
    """
    predicted = np.argmax(probs, axis=1)
    wrong = predicted != labels
    pairs: dict[tuple[int, int], int] = {}
    for true, guess in zip(labels[wrong].tolist(), predicted[wrong].tolist(), strict=True):
        pairs[(true, guess)] = pairs.get((true, guess), 0) + 1
    ranked = sorted(pairs.items(), key=lambda item: (-item[1], item[0]))
    return [(true, guess, count) for (true, guess), count in ranked[:top]]


def calibration(probs: np.ndarray, labels: np.ndarray, bins: int = 10) -> dict:
    """Reliability diagram of the top-1 confidence in ``bins`` equal-width bins, and the ECE.

    A confidence ``c`` falls in bin ``min(floor(c × bins), bins − 1)``. ECE is
    ``Σ_b (n_b / n) · |accuracy_b − confidence_b|`` over non-empty bins.
    """
    confidence = probs.max(axis=1) if len(labels) else np.zeros(0)
    correct = (np.argmax(probs, axis=1) == labels) if len(labels) else np.zeros(0, dtype=bool)
    index = np.minimum((confidence * bins).astype(int), bins - 1)
    rows, ece = [], 0.0
    for b in range(bins):
        mask = index == b
        count = int(mask.sum())
        conf = float(confidence[mask].mean()) if count else None
        acc = float(correct[mask].mean()) if count else None
        if count:
            ece += count / len(labels) * abs(acc - conf)
        rows.append(
            {"low": b / bins, "high": (b + 1) / bins, "count": count, "confidence": conf, "accuracy": acc}
        )
    return {"bins": rows, "ece": float(ece)}


def mcnemar_p(only_a: int, only_b: int) -> float | None:
    """Two-sided McNemar test (chi-square, continuity-corrected) p-value for paired right/wrong
    outcomes: ``only_a`` drawings only model A got right, ``only_b`` only B; ``None`` without
    disagreement."""
    if only_a < 0 or only_b < 0:
        raise ValueError("disagreement counts cannot be negative")
    if only_a + only_b == 0:
        return None
    chi2 = (abs(only_a - only_b) - 1) ** 2 / (only_a + only_b)
    return float(math.erfc(math.sqrt(chi2 / 2)))


def restricted_topk(
    probs: np.ndarray, labels: np.ndarray, candidates: np.ndarray, k: int = 1
) -> float | None:
    """Top-``k`` accuracy when the answer is restricted to the ``candidates`` class indices, over the
    rows whose true class is a candidate (``None`` when there is none)."""
    candidates = np.asarray(candidates, dtype=np.int64)
    rows = np.isin(labels, candidates)
    if not rows.any():
        return None
    position = {int(c): i for i, c in enumerate(candidates)}
    sub_labels = np.array([position[int(label)] for label in labels[rows]])
    return topk_accuracy(probs[rows][:, candidates], sub_labels, k)


def per_row_table_top1(probs: np.ndarray, labels: np.ndarray, tables: Sequence[np.ndarray]) -> np.ndarray:
    """Per row: whether the true class has the highest probability within that row's own table of
    class indices (each table holds the true class)."""
    hits = np.zeros(len(labels), dtype=bool)
    for i, (row, label, table) in enumerate(zip(probs, labels, tables, strict=True)):
        table = np.asarray(table, dtype=np.int64)
        hits[i] = table[np.argmax(row[table])] == label
    return hits
