"""What every training loop here shares: class-balanced epochs and the learning-rate curve."""

from __future__ import annotations

import math

import numpy as np


def balanced_epoch(
    labels: np.ndarray, pool: np.ndarray, per_class: int, rng: np.random.Generator
) -> np.ndarray:
    """``per_class`` drawings of every class (cycling through a class's drawings without
    replacement before repeating one), shuffled. Large classes are sub-sampled, small ones repeated."""
    chosen = []
    for label in np.unique(labels[pool]):
        members = pool[labels[pool] == label]
        repeats = math.ceil(per_class / len(members))
        cycle = np.concatenate([rng.permutation(members) for _ in range(repeats)])
        chosen.append(cycle[:per_class])
    return rng.permutation(np.concatenate(chosen))


def warmup_cosine(step: int, warmup_steps: int, progress: float) -> float:
    """Learning-rate factor: a linear warm-up over ``warmup_steps``, then a cosine from 1 to 0 as
    ``progress`` (the fraction of training done, by steps or by time) goes from 0 to 1."""
    return min(1.0, (step + 1) / max(1, warmup_steps)) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
