"""Turn any drawing into at most 15 straight lines (Kontour's rule), by pure geometry.

`to_kontour_lines` simplifies every stroke with Ramer-Douglas-Peucker, growing epsilon until the
whole drawing has at most `max_lines` segments; if even one segment per stroke is too many it
keeps the longest segments, in drawing order. Each output stroke is a 2-point stroke
``[[x0, x1], [y0, y1]]`` (``[t0, t1]`` kept when the input has times). Usable by training
augmentation as well as the AI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

KONTOUR_MAX_LINES = 15
_GROWTH = 1.35
_BISECT_STEPS = 8


class LineError(ValueError):
    """A drawing that cannot be turned into lines (malformed, or no extent at all)."""


def rdp(points: Sequence[tuple[float, ...]], epsilon: float) -> list[tuple[float, ...]]:
    """Ramer-Douglas-Peucker: the points of a polyline kept at tolerance `epsilon` (x, y first)."""
    if len(points) < 3:
        return list(points)
    keep = [False] * len(points)
    keep[0] = keep[-1] = True
    stack = [(0, len(points) - 1)]
    while stack:
        first, last = stack.pop()
        x0, y0 = points[first][0], points[first][1]
        x1, y1 = points[last][0], points[last][1]
        dx, dy = x1 - x0, y1 - y0
        norm = math.hypot(dx, dy)
        best, index = -1.0, -1
        for i in range(first + 1, last):
            px, py = points[i][0], points[i][1]
            if norm == 0:
                dist = math.hypot(px - x0, py - y0)
            else:
                dist = abs(dy * (px - x0) - dx * (py - y0)) / norm
            if dist > best:
                best, index = dist, i
        if index >= 0 and best > epsilon:
            keep[index] = True
            stack.append((first, index))
            stack.append((index, last))
    return [p for p, k in zip(points, keep, strict=True) if k]


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


def _segments(strokes: list[list[tuple[float, ...]]], epsilon: float) -> list[tuple]:
    out = []
    for pts in strokes:
        kept = rdp(pts, epsilon)
        for a, b in zip(kept, kept[1:], strict=False):
            if math.hypot(b[0] - a[0], b[1] - a[1]) > 0:
                out.append((a, b))
    return out


def to_kontour_lines(drawing: Any, max_lines: int = KONTOUR_MAX_LINES) -> list[list[list[float]]]:
    """At most `max_lines` straight 2-point strokes that approximate `drawing` (see module doc)."""
    if max_lines < 1:
        raise LineError(f"max_lines must be at least 1, got {max_lines}")
    strokes = _points(drawing)
    xs = [p[0] for s in strokes for p in s]
    ys = [p[1] for s in strokes for p in s]
    diagonal = math.hypot(max(xs) - min(xs), max(ys) - min(ys))
    if diagonal == 0:
        raise LineError("the drawing has no extent (all points are the same)")
    epsilon = diagonal * 0.005
    segments = _segments(strokes, epsilon)
    if not segments:
        raise LineError("the drawing has no segment of non-zero length (only dots)")
    too_fine = None
    while len(segments) > max_lines and epsilon <= diagonal:
        # (past the diagonal every stroke is one segment at most: growing more changes nothing)
        coarser = _segments(strokes, epsilon * _GROWTH)
        if not coarser:  # a closed back-and-forth stroke collapses to a dot: keep the last shape
            break
        too_fine, epsilon, segments = epsilon, epsilon * _GROWTH, coarser
    if too_fine is not None and len(segments) <= max_lines:
        # bisect back toward the finest epsilon that still fits, to keep as much detail as allowed
        low, high = too_fine, epsilon
        for _ in range(_BISECT_STEPS):
            middle = (low + high) / 2
            candidate = _segments(strokes, middle)
            if 0 < len(candidate) <= max_lines:
                high, segments = middle, candidate
            else:
                low = middle
    if len(segments) > max_lines:
        by_length = sorted(
            range(len(segments)),
            key=lambda i: -math.hypot(
                segments[i][1][0] - segments[i][0][0], segments[i][1][1] - segments[i][0][1]
            ),
        )
        chosen = sorted(by_length[:max_lines])
        segments = [segments[i] for i in chosen]
    return [[[a[k], b[k]] for k in range(len(a))] for a, b in segments]


def segment_count(drawing: Any) -> int:
    """How many straight segments a drawing of polylines has (points - 1 per stroke)."""
    return sum(max(0, len(pts) - 1) for pts in _points(drawing))
