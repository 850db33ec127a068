"""Stroke-space augmentation that matches how the games are drawn.

All functions take and return strokes as ``(n, 2)`` float arrays and an explicit
``numpy.random.Generator``; none mutates its input.

- :func:`random_affine` — rotation, anisotropic scale, shear and mirror;
- :func:`stroke_dropout` — forget some strokes (never all);
- :func:`jitter` — small Gaussian noise on every point;
- :func:`partial` — only the first *k* strokes, as the live guesser sees an unfinished drawing;
- :func:`kontour_style` — at most 15 straight segments, the only strokes Kontour allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from model.strokes import DrawingError, straight_lines

Strokes = list[np.ndarray]


@dataclass(frozen=True)
class AugmentConfig:
    """Probabilities and magnitudes of each augmentation (stored in the checkpoint's training config)."""

    rotate_degrees: float = 12.0
    scale_range: float = 0.18
    shear: float = 0.15
    mirror_p: float = 0.5
    dropout_p: float = 0.25
    dropout_stroke_p: float = 0.15
    jitter_p: float = 0.3
    jitter_sigma: float = 1.5
    partial_p: float = 0.25
    kontour_p: float = 0.2
    max_lines: int = 15

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


def random_affine(strokes: Sequence[np.ndarray], rng: np.random.Generator, config: AugmentConfig) -> Strokes:
    """Rotate, scale (independently in x and y), shear and maybe mirror a drawing about its centre."""
    angle = np.radians(rng.uniform(-config.rotate_degrees, config.rotate_degrees))
    scale_x, scale_y = 1.0 + rng.uniform(-config.scale_range, config.scale_range, size=2)
    shear = rng.uniform(-config.shear, config.shear)
    mirror = -1.0 if rng.random() < config.mirror_p else 1.0
    cos, sin = np.cos(angle), np.sin(angle)
    matrix = np.array([[cos, -sin], [sin, cos]]) @ np.array([[scale_x * mirror, shear], [0.0, scale_y]])
    centre = np.concatenate(strokes).mean(axis=0)
    return [(stroke - centre) @ matrix.T + centre for stroke in strokes]


def stroke_dropout(strokes: Sequence[np.ndarray], rng: np.random.Generator, p: float) -> Strokes:
    """Drop each stroke with probability ``p``, always keeping at least one (the first kept)."""
    keep = rng.random(len(strokes)) >= p
    if not keep.any():
        keep[0] = True
    return [stroke for stroke, kept in zip(strokes, keep, strict=True) if kept]


def jitter(strokes: Sequence[np.ndarray], rng: np.random.Generator, sigma: float) -> Strokes:
    """Add Gaussian noise of standard deviation ``sigma`` (drawing units) to every point."""
    return [stroke + rng.normal(0.0, sigma, size=stroke.shape) for stroke in strokes]


def partial(strokes: Sequence[np.ndarray], rng: np.random.Generator) -> Strokes:
    """Keep only the first ``k`` strokes, ``k`` uniform in ``[1, n - 1]`` (whole drawing if n = 1)."""
    if len(strokes) < 2:
        return list(strokes)
    return list(strokes[: int(rng.integers(1, len(strokes)))])


def first_fraction(strokes: Sequence[np.ndarray], fraction: float) -> Strokes:
    """The first ``ceil(fraction × n)`` strokes (at least one): a drawing cut part-way."""
    count = max(1, int(np.ceil(fraction * len(strokes) - 1e-9)))
    return list(strokes[:count])


def kontour_style(strokes: Sequence[np.ndarray], max_lines: int = 15) -> Strokes:
    """At most ``max_lines`` straight segments, each its own 2-point stroke (see
    :func:`model.strokes.straight_lines`); a drawing made only of dots is returned unchanged."""
    try:
        return straight_lines(strokes, max_lines)
    except DrawingError:
        return list(strokes)


def augment(strokes: Sequence[np.ndarray], rng: np.random.Generator, config: AugmentConfig) -> Strokes:
    """One random training view of a drawing: game-style variants first, then geometry and noise."""
    out = list(strokes)
    if rng.random() < config.partial_p:
        out = partial(out, rng)
    elif rng.random() < config.dropout_p:
        out = stroke_dropout(out, rng, config.dropout_stroke_p)
    if rng.random() < config.kontour_p:
        out = kontour_style(out, config.max_lines)
    out = random_affine(out, rng, config)
    if rng.random() < config.jitter_p:
        out = jitter(out, rng, config.jitter_sigma)
    return out
