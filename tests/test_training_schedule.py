"""The training loops' shared epoch sampler and learning-rate curve (`training.schedule`)."""

from __future__ import annotations

import numpy as np
import pytest

from training.schedule import balanced_epoch, warmup_cosine


def test_a_balanced_epoch_has_per_class_drawings_of_every_class_and_only_from_the_pool():
    labels = np.array([0] * 10 + [1] * 2 + [2] * 5)
    pool = np.array([0, 1, 2, 3, 10, 11, 12, 13])  # class 2 only through 12 and 13
    order = balanced_epoch(labels, pool, per_class=4, rng=np.random.default_rng(0))
    assert sorted(np.bincount(labels[order]).tolist()) == [4, 4, 4]
    assert set(order.tolist()) <= set(pool.tolist())
    large = order[labels[order] == 0]
    assert len(set(large.tolist())) == 4  # a large class is sub-sampled without repeats
    small = order[labels[order] == 1]
    assert np.bincount(small).max() == 2  # a small class cycles through all before repeating one


def test_the_learning_rate_warms_up_then_follows_a_cosine_to_zero():
    assert warmup_cosine(0, warmup_steps=10, progress=0.0) == pytest.approx(0.1)
    assert warmup_cosine(9, warmup_steps=10, progress=0.0) == pytest.approx(1.0)
    assert warmup_cosine(50, warmup_steps=10, progress=0.5) == pytest.approx(0.5)
    assert warmup_cosine(99, warmup_steps=10, progress=1.0) == pytest.approx(0.0)
    assert warmup_cosine(99, warmup_steps=10, progress=1.5) == pytest.approx(0.0)  # past the budget
    assert warmup_cosine(0, warmup_steps=0, progress=0.0) == pytest.approx(1.0)
