"""Game-condition metrics: Kontour restricted to the Kontour deck, real Pictomania tables."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from model import DEFAULT_WEIGHTS
from training.metrics import (
    kontour_deck_metrics,
    per_row_table_top1,
    pictomania_metrics,
    pictomania_tables,
    restricted_topk,
    table_accuracy,
)
from vocab import kontour_deck, pictomania_deck

LABELS = [line for line in (DEFAULT_WEIGHTS.parent / "categories.txt").read_text().splitlines() if line]
INDEX = {label: i for i, label in enumerate(LABELS)}
KONTOUR_WORDS = {word for card in kontour_deck() for word in card.words}


def peaked(rows: list[tuple[str, dict[str, float]]]) -> tuple[np.ndarray, np.ndarray]:
    """Probability rows (uniform floor, given peaks) and true labels from ``(true word, peaks)``."""
    probs = np.full((len(rows), len(LABELS)), 1e-4)
    for row, (_, peaks) in zip(probs, rows, strict=True):
        for word, value in peaks.items():
            row[INDEX[word]] = value
    return probs, np.array([INDEX[word] for word, _ in rows])


def test_restricted_topk_by_hand() -> None:
    probs = np.array([[0.5, 0.3, 0.2], [0.1, 0.3, 0.6], [0.6, 0.3, 0.1]])
    labels = np.array([1, 1, 0])
    # restricted to classes {1, 2}: row 0 → 1 (right), row 1 → 2 (wrong), row 2 not counted
    assert restricted_topk(probs, labels, np.array([1, 2]), 1) == pytest.approx(0.5)
    assert restricted_topk(probs, labels, np.array([1, 2]), 2) == pytest.approx(1.0)
    assert restricted_topk(probs, labels, np.array([2]), 1) is None
    tables = [np.array([0, 1]), np.array([1, 2]), np.array([0, 2])]
    assert per_row_table_top1(probs, labels, tables).tolist() == [False, False, True]


def test_kontour_deck_restriction() -> None:
    outside = sorted(set(LABELS) - KONTOUR_WORDS)
    assert "door" in outside and "cat" in KONTOUR_WORDS and "dog" in KONTOUR_WORDS
    rows = [
        ("cat", {"door": 0.6, "cat": 0.3}),  # right once « door » (not a deck word) is out
        ("cat", {"dog": 0.6, "cat": 0.3}),  # wrong: « dog » is a deck word
        ("door", {"door": 0.9}),  # not a deck word: not counted
    ]
    probs, truth = peaked(rows)
    result = kontour_deck_metrics(LABELS, truth, probs)
    assert result["words"] == len(KONTOUR_WORDS) and result["deck_words_unknown_to_model"] == 0
    assert result["drawings"] == 2
    assert result["top1"] == pytest.approx(0.5) and result["top3"] == pytest.approx(1.0)


def test_pictomania_tables_are_real_deals() -> None:
    words = ["apple", "cat", "angel", "apple"]  # « angel » is on no Pictomania card
    levels = {side.words: card.level for card in pictomania_deck() for side in card.sides}
    first = pictomania_tables(words, 2, seed=0)
    assert first == pictomania_tables(words, 2, seed=0)  # fixed by (level, seed)
    assert first != pictomania_tables(words, 2, seed=1)
    assert first[2] is None
    for word, table in zip(words, first, strict=True):
        if table is None:
            continue
        assert word in table and len(table) == 42 and len(set(table)) == 42
        sides = [table[i : i + 7] for i in range(0, 42, 7)]
        assert all(levels[side] == 2 for side in sides)  # six sides of the asked level
    # cat is not on a level-2 card
    on_level_2 = {w for card in pictomania_deck() if card.level == 2 for s in card.sides for w in s.words}
    assert ("cat" in on_level_2) == (first[1] is not None)


def test_pictomania_is_harder_than_random_tables() -> None:
    """A model that always prefers a word of the same theme fails every real table (the rival is on
    the same card side) but almost never a random table of 42."""
    rows = [("apple", {"pear": 0.5, "apple": 0.4})] * 20
    probs, truth = peaked(rows)
    result = pictomania_metrics(LABELS, truth, probs, levels=(2, 4), seeds=(0, 1))
    assert result["top1"] == 0.0
    assert result["levels"]["2"] == {"drawings": 20, "top1": 0.0}
    assert set(result["levels"]) == {"2", "4"} and set(result["by_seed"]) == {"0", "1"}
    assert table_accuracy(probs, truth, 42, seed=0) > 0.7  # pear is one of 344 others
    right = pictomania_metrics(LABELS, truth, peaked([("apple", {"apple": 0.9})] * 20)[0], (2, 4), (0, 1))
    assert right["top1"] == 1.0


def test_pictomania_needs_every_deck_word() -> None:
    probs, truth = peaked([("apple", {"apple": 0.9})])
    few = LABELS[:50]
    result = pictomania_metrics(few, np.array([0]), probs[:, :50])
    assert result["top1"] is None and result["unknown_deck_words"] > 0
    counts = Counter(w for card in pictomania_deck() for side in card.sides for w in side.words)
    assert result["unknown_deck_words"] == len(set(counts) - set(few))
