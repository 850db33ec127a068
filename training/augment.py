"""Stroke-space augmentation that matches how the games are drawn.

All functions take and return strokes as ``(n, 2)`` float arrays and an explicit
``numpy.random.Generator``; none mutates its input.

- :func:`random_affine` — rotation, anisotropic scale, shear and mirror;
- :func:`stroke_dropout` — forget some strokes (never all);
- :func:`jitter` — small Gaussian noise on every point;
- :func:`partial` — only the first *k* strokes, as the live guesser sees an unfinished drawing;
- :func:`kontour_style` — at most 15 straight segments, the only strokes Kontour allows;
- :func:`stroke_deform` — each stroke its own small rotation, scale and shift (hands are not rigid);
- :func:`order_dropout` — forget strokes, later ones more often (people draw the gist first);
- :func:`line_width_view` — a raster spec with a jittered line width (pens differ).

The last three are off by default (probability or amount 0): a run without them draws exactly the
same random numbers as before they existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from model.raster import RasterSpec
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
    stroke_deform_p: float = 0.0  # probability that a drawing's strokes are deformed one by one
    stroke_deform_degrees: float = 8.0
    stroke_deform_scale: float = 0.12
    stroke_deform_shift: float = 6.0  # drawing units (the drawing spans 0–255)
    order_dropout_p: float = 0.0  # probability of an order-weighted stroke removal
    order_dropout_max: float = 0.5  # drop probability of the last stroke (0 for the first, linear between)
    line_width_jitter: float = 0.0  # line width × uniform(1 − j, 1 + j)

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


def stroke_deform(strokes: Sequence[np.ndarray], rng: np.random.Generator, config: AugmentConfig) -> Strokes:
    """Rotate, scale and shift each stroke about its own centre by small independent amounts."""
    out = []
    for stroke in strokes:
        angle = np.radians(rng.uniform(-config.stroke_deform_degrees, config.stroke_deform_degrees))
        scale = 1.0 + rng.uniform(-config.stroke_deform_scale, config.stroke_deform_scale)
        shift = rng.uniform(-config.stroke_deform_shift, config.stroke_deform_shift, size=2)
        cos, sin = np.cos(angle), np.sin(angle)
        matrix = scale * np.array([[cos, -sin], [sin, cos]])
        centre = stroke.mean(axis=0)
        out.append((stroke - centre) @ matrix.T + centre + shift)
    return out


def order_dropout(strokes: Sequence[np.ndarray], rng: np.random.Generator, max_p: float) -> Strokes:
    """Drop stroke ``i`` of ``n`` with probability ``max_p · i / (n − 1)``: the first stroke is always
    kept, the last is the likeliest to go (details come last)."""
    if len(strokes) < 2:
        return list(strokes)
    chance = max_p * np.arange(len(strokes)) / (len(strokes) - 1)
    keep = rng.random(len(strokes)) >= chance
    return [stroke for stroke, kept in zip(strokes, keep, strict=True) if kept]


def line_width_view(spec: RasterSpec, rng: np.random.Generator, jitter: float) -> RasterSpec:
    """``spec`` with its line width multiplied by ``uniform(1 − jitter, 1 + jitter)`` (unchanged at 0)."""
    if not jitter:
        return spec
    return replace(spec, line_width=spec.line_width * float(rng.uniform(1 - jitter, 1 + jitter)))


def augment(strokes: Sequence[np.ndarray], rng: np.random.Generator, config: AugmentConfig) -> Strokes:
    """One random training view of a drawing: game-style variants first, then geometry and noise."""
    out = list(strokes)
    if rng.random() < config.partial_p:
        out = partial(out, rng)
    elif rng.random() < config.dropout_p:
        out = stroke_dropout(out, rng, config.dropout_stroke_p)
    elif config.order_dropout_p and rng.random() < config.order_dropout_p:
        out = order_dropout(out, rng, config.order_dropout_max)
    if rng.random() < config.kontour_p:
        out = kontour_style(out, config.max_lines)
    elif config.stroke_deform_p and rng.random() < config.stroke_deform_p:
        out = stroke_deform(out, rng, config)
    out = random_affine(out, rng, config)
    if rng.random() < config.jitter_p:
        out = jitter(out, rng, config.jitter_sigma)
    return out
