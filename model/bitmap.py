"""The dataset's ``numpy_bitmap`` render: what the public models (:mod:`model.tfjs`) learned to read.

Both public models learned from the dataset's ``numpy_bitmap`` files (28 × 28, divided by 255), the
render googlecreativelab/quickdraw-dataset issue 19 reproduces with Cairo: the simplified drawing
(:func:`model.strokes.simplify_drawing`, 0–255) centred in a 256 box, padded by 16 units on each side
plus half a line, drawn with round caps and joins and a 16-unit anti-aliased line, reduced to
28 × 28; white ink on black, floats in [0, 1]. :func:`render` differs from that Cairo code by 0.002
a pixel on average and gives the public models the same top-1 within a point.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import cv2
import numba
import numpy as np

from model.strokes import DrawingError, simplify_drawing, validate_drawing


@dataclass(frozen=True)
class BitmapSpec:
    """The ``numpy_bitmap`` render: units are those of the simplified drawing's 256 box."""

    size: int = 28
    line_width: float = 16.0
    padding: float = 16.0
    supersample: int = 4

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


def as_strokes(drawing: Any) -> list[np.ndarray]:
    """A drawing as ``(n, 2)`` float arrays: Quick, Draw! lists are validated, arrays taken as they are."""
    if isinstance(drawing, Sequence) and drawing and all(isinstance(s, np.ndarray) for s in drawing):
        strokes = [np.asarray(s, dtype=np.float64)[:, :2] for s in drawing if len(s)]
        if not strokes or not all(np.isfinite(s).all() for s in strokes):
            raise DrawingError("a drawing needs at least one stroke of finite points")
        return strokes
    return validate_drawing(drawing)


@numba.njit(cache=True, nogil=True)
def _draw_strokes(
    starts: np.ndarray, ends: np.ndarray, stroke_ends: np.ndarray, half_width: float, canvas: np.ndarray
) -> None:
    """Draw strokes (segments ``starts[i] → ends[i]``, stroke ``s`` ending at ``stroke_ends[s]``) in white
    on ``canvas``, coordinates in pixels. Within a stroke a pixel's ink is ``clip(half_width + 0.5 −
    distance, 0, 1)`` from its centre to the nearest segment (round caps and joins, a one-pixel
    anti-aliasing ramp; a zero-length segment is a dot); strokes are laid over one another as Cairo
    paints them (``ink + stroke × (1 − ink)``)."""
    height, width = canvas.shape
    layer = np.zeros_like(canvas)
    reach = half_width + 1.0
    first = 0
    for last in stroke_ends:
        x0, x1, y0, y1 = width, -1, height, -1
        for k in range(first, last):
            ax, ay, bx, by = starts[k, 0], starts[k, 1], ends[k, 0], ends[k, 1]
            dx, dy = bx - ax, by - ay
            length2 = dx * dx + dy * dy
            left = max(int(math.floor(min(ax, bx) - reach)), 0)
            right = min(int(math.ceil(max(ax, bx) + reach)), width - 1)
            top = max(int(math.floor(min(ay, by) - reach)), 0)
            bottom = min(int(math.ceil(max(ay, by) + reach)), height - 1)
            x0, x1, y0, y1 = min(x0, left), max(x1, right), min(y0, top), max(y1, bottom)
            for py in range(top, bottom + 1):
                cy = py + 0.5 - ay
                for px in range(left, right + 1):
                    cx = px + 0.5 - ax
                    t = 0.0
                    if length2 > 0.0:
                        t = min(max((cx * dx + cy * dy) / length2, 0.0), 1.0)
                    ink = min(half_width + 0.5 - math.hypot(cx - t * dx, cy - t * dy), 1.0)
                    if ink > layer[py, px]:
                        layer[py, px] = ink
        for py in range(y0, y1 + 1):
            for px in range(x0, x1 + 1):
                canvas[py, px] += layer[py, px] * (1.0 - canvas[py, px])
                layer[py, px] = 0.0
        first = last


def render(strokes: Sequence[np.ndarray], spec: BitmapSpec = BitmapSpec()) -> np.ndarray:
    """The ``numpy_bitmap`` image of simplified strokes: ``(size, size)`` float32 in [0, 1], white on black.

    As the reproduction published with the dataset (quickdraw-dataset issue 19, drawn with Cairo): the
    strokes keep their simplified coordinates (0–255, not scaled again), are shifted by ``(256 −
    max) / 2`` to centre them in the 256 box, the box is padded by ``padding + line_width / 2`` on
    each side and scaled to ``size`` pixels, and the lines are round-capped and anti-aliased
    (:func:`_draw_strokes`, at ``supersample`` times the size, then area-averaged)."""
    every = np.concatenate(strokes)[:, :2]
    big = spec.size * spec.supersample
    scale = big / (256.0 + 2.0 * spec.padding + spec.line_width)
    shift = (256.0 - every.max(axis=0)) / 2.0 + spec.padding + spec.line_width / 2.0
    starts, ends, stroke_ends = [], [], []
    for stroke in strokes:
        points = (np.asarray(stroke[:, :2], dtype=np.float64) + shift) * scale
        starts.append(points[:-1] if len(points) > 1 else points)
        ends.append(points[1:] if len(points) > 1 else points)
        stroke_ends.append(len(starts[-1]) + (stroke_ends[-1] if stroke_ends else 0))
    canvas = np.zeros((big, big), dtype=np.float32)
    _draw_strokes(
        np.concatenate(starts),
        np.concatenate(ends),
        np.asarray(stroke_ends, dtype=np.int64),
        spec.line_width * scale / 2.0,
        canvas,
    )
    if spec.supersample > 1:
        canvas = cv2.resize(canvas, (spec.size, spec.size), interpolation=cv2.INTER_AREA)
    return canvas


def render_many(
    drawings: Iterable[Any], spec: BitmapSpec = BitmapSpec(), simplified: bool = False
) -> np.ndarray:
    """``(n, size, size)`` renders of drawings (Quick, Draw! lists or arrays), simplified here unless
    ``simplified`` says they are (the dataset's simplified drawings are drawn as they are, not
    simplified and scaled again)."""
    images = []
    for drawing in drawings:
        strokes = as_strokes(drawing)
        images.append(render(strokes if simplified else simplify_drawing(strokes), spec))
    if not images:
        return np.zeros((0, spec.size, spec.size), dtype=np.float32)
    return np.stack(images)



def in_box(strokes: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Strokes moved and scaled uniformly as the dataset's simplification leaves them: the top-left
    corner at 0 and the longer side 255 long (simplified drawings are already so: no change)."""
    every = np.concatenate(strokes)[:, :2]
    low = every.min(axis=0)
    extent = float((every.max(axis=0) - low).max())
    scale = 255.0 / extent if extent > 1e-9 else 1.0
    return [(np.asarray(stroke[:, :2], dtype=np.float64) - low) * scale for stroke in strokes]
