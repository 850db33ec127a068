"""Evaluation metrics on small probability tables worked out by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from training.metrics import (
    calibration,
    confused_pairs,
    expected_table_accuracy,
    map_at_k,
    mcnemar_p,
    per_class_counts,
    table_accuracies,
    table_accuracy,
    topk_accuracy,
    true_ranks,
)

# four drawings, three classes; true labels 0, 1, 2, 0
PROBS = np.array(
    [
        [0.70, 0.20, 0.10],  # true 0: rank 1, confidence 0.70 (right)
        [0.50, 0.30, 0.20],  # true 1: rank 2, confidence 0.50 (wrong: 1 → 0)
        [0.15, 0.05, 0.80],  # true 2: rank 1, confidence 0.80 (right)
        [0.10, 0.60, 0.30],  # true 0: rank 3, confidence 0.60 (wrong: 0 → 1)
    ]
)
LABELS = np.array([0, 1, 2, 0])


def test_ranks_topk_and_map() -> None:
    assert true_ranks(PROBS, LABELS).tolist() == [1, 2, 1, 3]
    assert topk_accuracy(PROBS, LABELS, 1) == pytest.approx(0.5)
    assert topk_accuracy(PROBS, LABELS, 2) == pytest.approx(0.75)
    # MAP@3 = (1 + 1/2 + 1 + 1/3) / 4
    assert map_at_k(PROBS, LABELS, 3) == pytest.approx((1 + 0.5 + 1 + 1 / 3) / 4)
    # MAP@2 drops the rank-3 hit
    assert map_at_k(PROBS, LABELS, 2) == pytest.approx((1 + 0.5 + 1) / 4)


def test_ties_rank_by_class_order() -> None:
    probs = np.array([[0.4, 0.4, 0.2]])
    assert true_ranks(probs, np.array([1])).tolist() == [2]
    assert true_ranks(probs, np.array([0])).tolist() == [1]


def test_per_class_counts() -> None:
    counts = per_class_counts(PROBS, LABELS, 3)
    assert counts["count"].tolist() == [2, 1, 1]
    assert counts["top1"].tolist() == [1, 0, 1]
    assert counts["top3"].tolist() == [2, 1, 1]


def test_confused_pairs_sorted_and_deterministic() -> None:
    assert confused_pairs(PROBS, LABELS) == [(0, 1, 1), (1, 0, 1)]
    probs = np.vstack([PROBS, [[0.2, 0.7, 0.1]]])  # another 0 → 1 mistake
    assert confused_pairs(probs, np.append(LABELS, 0), top=1) == [(0, 1, 2)]


def test_calibration_bins_and_ece() -> None:
    result = calibration(PROBS, LABELS, bins=10)
    filled = {round(b["low"], 1): b for b in result["bins"] if b["count"]}
    assert sorted(filled) == [0.5, 0.6, 0.7, 0.8]
    assert filled[0.5]["accuracy"] == 0.0 and filled[0.5]["confidence"] == pytest.approx(0.5)
    assert filled[0.7]["accuracy"] == 1.0 and filled[0.8]["accuracy"] == 1.0
    # ECE = (|0 - .5| + |0 - .6| + |1 - .7| + |1 - .8|) / 4 = 1.6 / 4
    assert result["ece"] == pytest.approx(0.4)
    assert sum(b["count"] for b in result["bins"]) == 4
    empty = [b for b in result["bins"] if not b["count"]]
    assert all(b["accuracy"] is None and b["confidence"] is None for b in empty)


def test_confidence_one_falls_in_last_bin() -> None:
    result = calibration(np.array([[1.0, 0.0]]), np.array([0]), bins=4)
    assert result["bins"][-1]["count"] == 1
    assert result["ece"] == pytest.approx(0.0)


def test_table_accuracy_with_all_classes_is_top1() -> None:
    # a table of 42 among 3 classes holds every class: same as top-1
    assert table_accuracy(PROBS, LABELS, 42, seed=5) == pytest.approx(0.5)
    assert table_accuracies(PROBS, LABELS, 42, (0, 1)) == {0: 0.5, 1: 0.5}


def test_table_accuracy_helps_when_the_winner_is_left_out() -> None:
    # 50 classes; the true class 0 is second only to class 1, so it wins whenever 1 is not drawn
    probs = np.full((200, 50), 0.001)
    probs[:, 1], probs[:, 0] = 0.5, 0.4
    labels = np.zeros(200, dtype=int)
    accuracy = table_accuracy(probs, labels, size=42, seed=0)
    # P(class 1 not among 41 of the 49 others) = 8/49
    assert accuracy == pytest.approx(8 / 49, abs=0.08)
    assert accuracy == table_accuracy(probs, labels, size=42, seed=0)  # fixed seed, same tables


def test_expected_table_accuracy_is_the_mean_over_every_table() -> None:
    # 7 classes, tables of 4: enumerate all C(6, 3) = 20 tables holding the true class, by hand
    rng = np.random.default_rng(3)
    probs = rng.random((30, 7))
    labels = rng.integers(0, 7, size=30)
    wins = []
    for row, label in zip(probs, labels, strict=True):
        others = [c for c in range(7) if c != label]
        tables = [[*t, label] for t in itertools.combinations(others, 3)]
        wins.append(np.mean([max(t, key=lambda c: row[c]) == label for t in tables]))
    exact = expected_table_accuracy(true_ranks(probs, labels), 7, size=4)
    assert exact == pytest.approx(float(np.mean(wins)))
    assert 0.0 < exact < 1.0


def test_expected_table_accuracy_edges() -> None:
    probs = np.full((200, 50), 0.001)
    probs[:, 1], probs[:, 0] = 0.5, 0.4  # rank 2: wins when class 1 is not dealt, 8/49
    ranks = true_ranks(probs, np.zeros(200, dtype=int))
    assert expected_table_accuracy(ranks, 50, 42) == pytest.approx(8 / 49)
    assert expected_table_accuracy(np.array([50]), 50, 42) == 0.0  # last of 50: always beaten
    assert expected_table_accuracy(np.array([1, 3]), 3, 42) == pytest.approx(0.5)  # table = all classes
    assert expected_table_accuracy(np.array([], dtype=int), 50) == 0.0


def test_mcnemar() -> None:
    assert mcnemar_p(0, 0) is None
    assert mcnemar_p(5, 5) == pytest.approx(math.erfc(math.sqrt(0.1 / 2)))
    assert mcnemar_p(0, 12) == pytest.approx(math.erfc(math.sqrt((11**2 / 12) / 2)))
    assert mcnemar_p(0, 12) < 0.01
