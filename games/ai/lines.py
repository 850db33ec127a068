"""Turn any drawing into at most 15 straight lines (Kontour's rule), by pure geometry.

`to_kontour_lines` is the Quick, Draw! list-format front end of `model.strokes.straight_lines`, the
one implementation shared with training's Kontour-style augmentation: Ramer-Douglas-Peucker with a
growing epsilon until the whole drawing has at most `max_lines` segments, else the longest segments
in drawing order. Each output stroke is a 2-point stroke ``[[x0, x1], [y0, y1]]`` (``[t0, t1]``
kept when the input has times).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from model import strokes

KONTOUR_MAX_LINES = 15


class LineError(ValueError):
    """A drawing that cannot be turned into lines (malformed, or no extent at all)."""


def rdp(points: Sequence[tuple[float, ...]], epsilon: float) -> list[tuple[float, ...]]:
    """Ramer-Douglas-Peucker: the points of a polyline kept at tolerance `epsilon` (x, y first)."""
    if len(points) < 3:
        return list(points)
    kept = strokes.rdp(np.asarray(points, dtype=np.float64), epsilon)
    return [tuple(float(v) for v in row) for row in kept]


def _points(drawing: Any) -> list[list[tuple[float, ...]]]:
    if not isinstance(drawing, Sequence) or isinstance(drawing, (str, bytes)) or not drawing:
        raise LineError("a drawing must be a non-empty list of strokes")
    strokes = []
    for index, stroke in enumerate(drawing):
        if not isinstance(stroke, Sequence) or len(stroke) not in (2, 3):
            raise LineError(f"stroke {index} must be [[x...], [y...]] or [[x...], [y...], [t...]]")
        lengths = {len(axis) for axis in stroke}
        if len(lengths) != 1:
            raise LineError(f"stroke {index}: coordinate lists differ in length")
        try:
            pts = [tuple(float(axis[i]) for axis in stroke) for i in range(len(stroke[0]))]
        except (TypeError, ValueError) as error:
            raise LineError(f"stroke {index}: coordinates must be numbers") from error
        if not all(math.isfinite(v) for p in pts for v in p):
            raise LineError(f"stroke {index}: coordinates must be finite")
        strokes.append(pts)
    return strokes


def to_kontour_lines(drawing: Any, max_lines: int = KONTOUR_MAX_LINES) -> list[list[list[float]]]:
    """At most `max_lines` straight 2-point strokes that approximate `drawing` (see module doc)."""
    arrays = [np.asarray(pts, dtype=np.float64) for pts in _points(drawing)]
    try:
        segments = strokes.straight_lines(arrays, max_lines)
    except strokes.DrawingError as error:
        raise LineError(str(error)) from error
    return [segment.T.tolist() for segment in segments]


def segment_count(drawing: Any) -> int:
    """How many straight segments a drawing of polylines has (points - 1 per stroke)."""
    return sum(max(0, len(pts) - 1) for pts in _points(drawing))
