"""What an evaluation measures (:class:`EvalSettings`) and its error type (shared by every eval module)."""

from __future__ import annotations

from dataclasses import dataclass

from training.metrics import PICTOMANIA_LEVELS, PICTOMANIA_SEEDS

FULL = "f1.0"  # condition name of whole drawings
KONTOUR = "kontour"  # condition name of Kontour-style drawings (≤ 15 straight lines)


class EvalError(ValueError):
    """Evaluation cannot run as asked: unknown categories, a model/data mismatch, no drawings left."""


@dataclass(frozen=True)
class EvalSettings:
    """What an evaluation measures and how (recorded in ``report.json`` under ``settings``)."""

    fractions: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    kontour_lines: int = 15
    pictomania_levels: tuple[int, ...] = PICTOMANIA_LEVELS
    pictomania_seeds: tuple[int, ...] = PICTOMANIA_SEEDS
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
