"""The recognizer's headline metrics in each game's conditions (shared by training and evaluation).

- ``full``: whole drawings, top-1 / top-3 over all classes;
- ``kontour``: the same drawings turned into at most 15 straight lines;
- ``half``: only the first half of the strokes (rounded up);
- ``table42``: top-1 when the answer is restricted to a random table of 42 candidate classes that
  contains the true one (fixed seed); ``griffon eval`` also gives its exact mean over every such
  table (:func:`expected_table_accuracy`), free of the seeds' sampling noise;
- ``kontour_deck``: Kontour style with the answer restricted to the Kontour deck's words (what the
  Kontour AI guesser chooses from), over the drawings of those words;
- ``pictomania``: top-1 among a real Pictomania table (6 dealt cards of 7 related words,
  ``vocab.deal_table``, fixed seeds): harder than 42 random words.

The last two read the decks of ``vocab`` (imported when used).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from model.raster import RasterSpec, rasterize
from training.augment import first_fraction, kontour_style

TABLE_SIZE = 42
PICTOMANIA_LEVELS = (1, 2, 3, 4)
PICTOMANIA_SEEDS = (0, 1, 2)
PICTOMANIA_DEALS = 200  # tables dealt per (level, seed) before each drawing picks one holding its word
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


def expected_table_accuracy(ranks: np.ndarray, classes: int, size: int = TABLE_SIZE) -> float:
    """:func:`table_accuracy` averaged exactly over every table of ``size`` classes holding the true one.

    A drawing whose true class ranks ``r`` (1-based, :func:`true_ranks`) is answered right when none of
    the ``r - 1`` classes above it is among the ``size - 1`` others dealt:
    ``C(classes - r, size - 1) / C(classes - 1, size - 1)``.
    """
    if len(ranks) == 0:
        return 0.0
    others = min(size, classes) - 1
    steps = np.arange(classes - 1, dtype=np.float64)  # the k-th class above the true one
    survive = np.clip((classes - 1 - others - steps) / (classes - 1 - steps), 0.0, None)
    chance = np.concatenate([[1.0], np.cumprod(survive)])  # chance[r - 1] for rank r
    return float(chance[np.asarray(ranks) - 1].mean())


def headline_metrics(
    predict: Callable[[np.ndarray], np.ndarray],
    drawings: Sequence[list[np.ndarray]],
    labels: np.ndarray,
    spec: RasterSpec,
    seed: int = 0,
    batch: int = 256,
    class_names: Sequence[str] | None = None,
    inputs: Callable[[list[list[np.ndarray]]], Any] | None = None,
    calibrated: bool = False,
) -> dict[str, float]:
    """Top-1/top-3 for each condition and the 42-candidate table accuracy; with ``class_names``
    (the model's labels) also the Kontour-deck and Pictomania-table game conditions; with
    ``calibrated``, the whole drawings' ``ece`` (:func:`calibration`) and ``mean_confidence`` too.

    ``predict`` maps rasters ``(n, channels, size, size)`` to probabilities ``(n, classes)``; with
    ``inputs``, it maps ``inputs(drawings)`` instead (a model that does not read rasters).
    """
    probs_of = {}
    for name, transform in CONDITIONS.items():
        chunks = []
        for start in range(0, len(drawings), batch):
            part = [transform(strokes) for strokes in drawings[start : start + batch]]
            chunks.append(predict(inputs(part) if inputs else rasterize_all(part, spec)))
        probs_of[name] = np.concatenate(chunks)
    metrics = metrics_from_probabilities(probs_of, labels, seed, class_names)
    if calibrated:
        whole = probs_of["full"]
        metrics |= {"ece": calibration(whole, labels)["ece"],
                    "mean_confidence": float(whole.max(axis=1).mean())}
    return metrics


def metrics_from_probabilities(
    probs_of: dict[str, np.ndarray],
    labels: np.ndarray,
    seed: int = 0,
    class_names: Sequence[str] | None = None,
) -> dict[str, float]:
    """:func:`headline_metrics` from each condition's probabilities (``probs_of[name]``, one row per
    drawing, for every name of :data:`CONDITIONS`)."""
    results: dict[str, float] = {"count": float(len(labels))}
    for name in CONDITIONS:
        probs = probs_of[name]
        results[f"{name}_top1"] = topk_accuracy(probs, labels, 1)
        results[f"{name}_top3"] = topk_accuracy(probs, labels, 3)
        if name == "full":
            results["table42_top1"] = table_accuracy(probs, labels, TABLE_SIZE, seed)
    if class_names is not None:
        names = list(class_names)
        deck = kontour_deck_metrics(names, labels, probs_of["kontour"])
        picto = pictomania_metrics(names, labels, probs_of["full"])
        for key, value in (
            ("kontour_deck_top1", deck["top1"]),
            ("kontour_deck_top3", deck["top3"]),
            ("pictomania_top1", picto["top1"]),
        ):
            if value is not None:
                results[key] = value
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
# -- game conditions ---------------------------------------------------------------------------------


def kontour_deck_metrics(labels: list[str], truth: np.ndarray, kontour_probs: np.ndarray) -> dict[str, Any]:
    """Kontour as the AI guesser plays it: Kontour-style drawings (≤ 15 straight lines), answers
    restricted to the Kontour deck's words, over the drawings of those words."""
    from vocab import kontour_deck

    deck = {word for card in kontour_deck() for word in card.words}
    index = {label: i for i, label in enumerate(labels)}
    candidates = np.array(sorted(index[w] for w in deck if w in index), dtype=np.int64)
    rows = np.isin(truth, candidates)
    return {
        "words": len(candidates),
        "deck_words_unknown_to_model": len(deck - index.keys()),
        "drawings": int(rows.sum()),
        "top1": restricted_topk(kontour_probs, truth, candidates, 1),
        "top3": restricted_topk(kontour_probs, truth, candidates, 3),
    }


def pictomania_tables(
    words: Sequence[str], level: int, seed: int, deals: int = PICTOMANIA_DEALS, cards: Sequence | None = None
) -> list[tuple[str, ...] | None]:
    """One real Pictomania table (6 dealt card sides of one level, 7 related words each:
    ``vocab.deal_table``) holding each word, or ``None`` for a word not on that level's cards.

    At least ``deals`` tables are dealt (more until every word of the level is on one); each word
    then gets one of the tables that hold it, picked at random. Fixed by ``(level, seed)``.
    """
    from vocab import deal_table, pictomania_deck

    cards = cards if cards is not None else pictomania_deck()
    on_level = {w for card in cards if card.level == level for side in card.sides for w in side.words}
    rng = random.Random(f"pictomania:{level}:{seed}")
    holding: dict[str, list[tuple[str, ...]]] = {}
    dealt = 0
    while dealt < deals or (on_level - holding.keys() and dealt < 50 * deals):
        table = tuple(word for side in deal_table(level, rng, cards=cards) for word in side.words)
        for word in table:
            holding.setdefault(word, []).append(table)
        dealt += 1
    return [rng.choice(holding[w]) if w in holding else None for w in words]


def pictomania_metrics(
    labels: list[str],
    truth: np.ndarray,
    probs: np.ndarray,
    levels: Sequence[int] = PICTOMANIA_LEVELS,
    seeds: Sequence[int] = PICTOMANIA_SEEDS,
) -> dict[str, Any]:
    """Pictomania as it is played: top-1 among the 42 words of a dealt table (6 cards of 7 related
    words, one level), for the drawings whose word is on that level's cards, for every level and seed.
    ``top1`` pools every (level, seed, drawing). ``None`` when the model lacks a deck word."""
    from vocab import pictomania_deck

    index = {label: i for i, label in enumerate(labels)}
    deck_words = {w for card in pictomania_deck() for side in card.sides for w in side.words}
    unknown = sorted(deck_words - index.keys())
    if unknown:
        return {"top1": None, "unknown_deck_words": len(unknown), "levels": {}, "by_seed": {}}
    names = [labels[i] for i in truth]
    by_level, by_seed = {}, {str(seed): [0, 0] for seed in seeds}
    hits = total = 0
    for level in levels:
        level_hits = level_total = 0
        for seed in seeds:
            tables = pictomania_tables(names, level, seed)
            rows = np.array([t is not None for t in tables], dtype=bool)
            chosen = [np.array([index[w] for w in t]) for t in tables if t is not None]
            right = int(per_row_table_top1(probs[rows], truth[rows], chosen).sum())
            level_hits, level_total = level_hits + right, level_total + int(rows.sum())
            by_seed[str(seed)][0] += right
            by_seed[str(seed)][1] += int(rows.sum())
        by_level[str(level)] = {
            "drawings": level_total // len(seeds),
            "top1": level_hits / level_total if level_total else None,
        }
        hits, total = hits + level_hits, total + level_total
    return {
        "table_size": 42,
        "top1": hits / total if total else None,
        "levels": by_level,
        "by_seed": {seed: (h / n if n else None) for seed, (h, n) in by_seed.items()},
    }
