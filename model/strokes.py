"""Drawing validation and the Quick, Draw! simplification, shared by training and live guessing.

A *drawing* is a list of strokes; a stroke is ``[[x...], [y...]]`` or ``[[x...], [y...], [t...]]``
(the official Quick, Draw! formats), in any coordinate range. ``simplify_drawing`` applies exactly the
preprocessing Google documents for the ``simplified`` files, so live canvas input and training data
look alike:

1. align the drawing to the top-left corner (minimum x and y become 0);
2. uniformly scale it so that its largest extent is 255;
3. resample every stroke with a 1-pixel spacing;
4. simplify every stroke with Ramer–Douglas–Peucker, epsilon 2.0.

Steps 3–4 never build the 1-pixel samples: :func:`resample_corners` keeps only those RDP can keep
(at most two per input point), so a drawing's cost is bounded by its point count (≤ ``MAX_POINTS``),
whatever its length in pixels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

MAX_POINTS = 10_000
MAX_STROKES = 1_000
MAX_ABS_COORDINATE = 1e6
RDP_EPSILON = 2.0
SIMPLIFIED_EXTENT = 255.0

Stroke = np.ndarray  # float64 array of shape (n_points, 2)


class DrawingError(ValueError):
    """A drawing that cannot be read: empty, malformed, non-finite, too large or degenerate."""


def validate_drawing(
    drawing: Any, max_points: int = MAX_POINTS, max_strokes: int = MAX_STROKES
) -> list[Stroke]:
    """Check a drawing in Quick, Draw! stroke format and return its strokes as ``(n, 2)`` arrays.

    Raises :class:`DrawingError` with a readable message for anything that is not a usable drawing.
    """
    if not isinstance(drawing, Sequence) or isinstance(drawing, (str, bytes)):
        raise DrawingError("a drawing must be a list of strokes")
    if len(drawing) == 0:
        raise DrawingError("the drawing is empty (no strokes)")
    if len(drawing) > max_strokes:
        raise DrawingError(f"too many strokes: {len(drawing)} > {max_strokes}")
    strokes: list[Stroke] = []
    total = 0
    for index, stroke in enumerate(drawing):
        points = validate_stroke(stroke, index)
        total += len(points)
        if total > max_points:
            raise DrawingError(f"too many points: more than {max_points}")
        strokes.append(points)
    if total < 2:
        raise DrawingError("a single point is not a drawing")
    every = np.concatenate(strokes)
    if np.ptp(every, axis=0).max() < 1e-9:
        raise DrawingError("the drawing has no extent (all points are the same)")
    return strokes


def validate_stroke(stroke: Any, index: int = 0, max_points: int = MAX_POINTS) -> Stroke:
    """Check one stroke and return it as an ``(n, 2)`` float array (a single point is allowed)."""
    if not isinstance(stroke, Sequence) or isinstance(stroke, (str, bytes)) or len(stroke) not in (2, 3):
        raise DrawingError(f"stroke {index} must be [[x...], [y...]] or [[x...], [y...], [t...]]")
    xs, ys = stroke[0], stroke[1]
    if not isinstance(xs, Sequence) or not isinstance(ys, Sequence) or len(xs) != len(ys):
        raise DrawingError(f"stroke {index}: x and y must be lists of the same length")
    if len(xs) == 0:
        raise DrawingError(f"stroke {index} has no points")
    if len(xs) > max_points:
        raise DrawingError(f"too many points: more than {max_points}")
    try:
        points = np.asarray([xs, ys], dtype=np.float64).T
    except (TypeError, ValueError) as error:
        raise DrawingError(f"stroke {index}: coordinates must be numbers") from error
    if points.ndim != 2 or points.shape[1] != 2:
        raise DrawingError(f"stroke {index}: coordinates must be flat lists of numbers")
    if not np.isfinite(points).all():
        raise DrawingError(f"stroke {index}: coordinates must be finite (no NaN or infinity)")
    if np.abs(points).max() > MAX_ABS_COORDINATE:
        raise DrawingError(f"stroke {index}: coordinates beyond ±{MAX_ABS_COORDINATE:g}")
    return points


def resample(points: Stroke, spacing: float = 1.0) -> Stroke:
    """Resample a polyline at a regular arc-length spacing, keeping both end points.

    The readable definition (a canvas-wide stroke becomes hundreds of points); simplification
    uses :func:`resample_corners`, which returns only the samples that RDP can keep."""
    if len(points) < 2:
        return points.copy()
    steps = np.linalg.norm(np.diff(points, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(steps)])
    length = arc[-1]
    if length <= spacing:
        return points[[0, -1]].copy()
    samples = np.append(np.arange(0.0, length, spacing), length)
    return np.stack([np.interp(samples, arc, points[:, 0]), np.interp(samples, arc, points[:, 1])], 1)


def resample_corners(points: Stroke, spacing: float = 1.0) -> Stroke:
    """The samples of :func:`resample` that Ramer–Douglas–Peucker can keep, in order.

    Samples on one straight segment of the input are collinear, and a point's distance to a chord
    (or to a chord's start) is convex along a segment, so RDP's farthest point in any interval is
    the first or last sample of some segment. Keeping only those — at most two per input point,
    plus the last — gives the same simplification (up to which of several exactly equidistant
    samples is kept) at a cost bounded by the input's size, not by its length in pixels: a
    10,000-point zigzag spanning the canvas gives 20,000 candidates instead of 2.5 million samples.
    """
    if len(points) < 2:
        return points.copy()
    delta = points[1:, :2] - points[:-1, :2]
    arc = np.empty(len(points))  # arc length at each input point
    arc[0] = 0.0
    np.cumsum(np.sqrt((delta * delta).sum(axis=1)), out=arc[1:])
    length = float(arc[-1])
    if length <= spacing:
        return points[[0, -1]].copy()
    last = math.ceil(length / spacing) - 1  # index of the last regular sample, as np.arange counts
    scaled = arc if spacing == 1.0 else arc / spacing
    bounds = np.empty((len(points) - 1, 2))  # first and last sample index on each segment
    np.ceil(scaled[:-1], out=bounds[:, 0])
    np.minimum(np.floor(scaled[1:]), last, out=bounds[:, 1])
    ks = bounds[bounds[:, 0] <= bounds[:, 1]].ravel()  # non-decreasing along the polyline
    keep = np.empty(len(ks) + 1, dtype=bool)  # drop repeats; always keep the end point
    keep[0] = keep[-1] = True
    np.greater(ks[1:], ks[:-1], out=keep[1:-1])
    samples = np.empty(len(ks) + 1)
    samples[:-1] = ks if spacing == 1.0 else ks * spacing
    samples[-1] = length
    samples = samples[keep]
    out = np.empty((len(samples), 2))
    out[:, 0] = np.interp(samples, arc, points[:, 0])
    out[:, 1] = np.interp(samples, arc, points[:, 1])
    return out


RDP_SMALL = 32  # intervals this short are scanned in plain Python (cheaper than numpy's call overhead)


def rdp(points: Stroke, epsilon: float = RDP_EPSILON) -> Stroke:
    """Ramer–Douglas–Peucker simplification of one polyline (see :func:`rdp_strokes`).

    Distances use the first two columns; further columns (e.g. times) are carried along."""
    return rdp_strokes([points], epsilon)[0]


def rdp_strokes(strokes: Sequence[Stroke], epsilon: float = RDP_EPSILON) -> list[Stroke]:
    """Ramer–Douglas–Peucker simplification of every stroke, in one pass over the drawing.

    Iterative: numpy scans long intervals, plain Python short ones (cheaper than numpy's call
    overhead) — the same arithmetic either way, so the result does not depend on the split."""
    if not strokes:
        return []
    every = np.concatenate(strokes) if len(strokes) > 1 else strokes[0]
    xs, ys = every[:, 0], every[:, 1]
    lx, ly = xs.tolist(), ys.tolist()
    keep = np.zeros(len(every), dtype=bool)
    ends = np.cumsum([len(s) for s in strokes])
    starts = ends - np.array([len(s) for s in strokes])
    keep[starts] = True
    keep[ends - 1] = True
    stack = [(int(first), int(last) - 1) for first, last in zip(starts, ends, strict=True)]
    hypot = math.hypot
    while stack:
        first, last = stack.pop()
        if last - first < 2:
            continue
        sx, sy = lx[first], ly[first]
        dx, dy = lx[last] - sx, ly[last] - sy
        norm = hypot(dx, dy)
        if last - first <= RDP_SMALL:
            best, index = -1.0, first
            degenerate = norm < 1e-12
            for i in range(first + 1, last):
                if degenerate:
                    distance = hypot(lx[i] - sx, ly[i] - sy)
                else:
                    distance = abs(dx * (ly[i] - sy) - dy * (lx[i] - sx)) / norm
                if distance > best:
                    best, index = distance, i
        else:
            inner_x, inner_y = xs[first + 1 : last], ys[first + 1 : last]
            if norm < 1e-12:
                distances = np.hypot(inner_x - sx, inner_y - sy)
            else:
                distances = np.abs(dx * (inner_y - sy) - dy * (inner_x - sx)) / norm
            offset = int(np.argmax(distances))
            best, index = float(distances[offset]), first + 1 + offset
        if best > epsilon:
            keep[index] = True
            stack.append((first, index))
            stack.append((index, last))
    return [every[start:end][keep[start:end]] for start, end in zip(starts, ends, strict=True)]


def drawing_frame(strokes: Sequence[Stroke]) -> tuple[float, float, float]:
    """``(min_x, min_y, extent)``: the frame the simplification aligns and scales to."""
    every = np.concatenate(strokes)
    origin = every.min(axis=0)
    return float(origin[0]), float(origin[1]), float(np.ptp(every, axis=0).max())


def simplify_drawing(
    strokes: Sequence[Stroke],
    epsilon: float = RDP_EPSILON,
    frame: tuple[float, float, float] | None = None,
) -> list[Stroke]:
    """Apply Google's ``simplified`` preprocessing to validated strokes (see module docstring).

    ``frame`` (from :func:`drawing_frame` of the whole drawing) lets a caller simplify some strokes
    of a larger drawing on their own, as a live session does for each new stroke.
    """
    min_x, min_y, extent = frame if frame is not None else drawing_frame(strokes)
    origin = np.array([min_x, min_y])
    scale = SIMPLIFIED_EXTENT / extent if extent > 0 else 1.0
    return rdp_strokes([resample_corners((stroke - origin) * scale, 1.0) for stroke in strokes], epsilon)


def to_quickdraw(strokes: Sequence[Stroke], decimals: int = 0) -> list[list[list[float]]]:
    """Convert ``(n, 2)`` arrays back to Quick, Draw! ``[[x...], [y...]]`` lists."""
    out = []
    for stroke in strokes:
        rounded = np.round(stroke, decimals)
        if decimals == 0:
            out.append([rounded[:, 0].astype(int).tolist(), rounded[:, 1].astype(int).tolist()])
        else:
            out.append([rounded[:, 0].tolist(), rounded[:, 1].tolist()])
    return out


LINE_GROWTH = 1.35
LINE_BISECT_STEPS = 8


def _line_segments(strokes: Sequence[np.ndarray], epsilon: float) -> list[np.ndarray]:
    """The non-degenerate segments of every stroke simplified at ``epsilon``, in drawing order."""
    out = []
    for stroke in strokes:
        kept = rdp(stroke, epsilon)
        for start, end in zip(kept[:-1], kept[1:], strict=True):
            if np.hypot(*(end[:2] - start[:2])) > 0:
                out.append(np.stack([start, end]))
    return out


def straight_lines(strokes: Sequence[np.ndarray], max_lines: int = 15) -> list[np.ndarray]:
    """At most ``max_lines`` straight 2-point strokes approximating a drawing (Kontour's rule).

    Every stroke is simplified with Ramer–Douglas–Peucker, epsilon growing from 0.5 % of the
    drawing's diagonal until the drawing fits, then bisected back toward the finest epsilon that
    still fits (to keep as much detail as allowed); if even one segment per stroke is too many, the
    longest segments are kept, in drawing order. Extra columns (times) are carried along.
    Raises :class:`DrawingError` for a drawing without extent or made only of dots.
    """
    if max_lines < 1:
        raise DrawingError(f"max_lines must be at least 1, got {max_lines}")
    every = np.concatenate(strokes)[:, :2]
    diagonal = float(np.hypot(*np.ptp(every, axis=0)))
    if diagonal == 0:
        raise DrawingError("the drawing has no extent (all points are the same)")
    epsilon = diagonal * 0.005
    segments = _line_segments(strokes, epsilon)
    if not segments:
        raise DrawingError("the drawing has no segment of non-zero length (only dots)")
    too_fine = None
    while len(segments) > max_lines and epsilon <= diagonal:
        coarser = _line_segments(strokes, epsilon * LINE_GROWTH)
        if not coarser:  # a closed back-and-forth stroke collapses to a dot: keep the last shape
            break
        too_fine, epsilon, segments = epsilon, epsilon * LINE_GROWTH, coarser
    if too_fine is not None and len(segments) <= max_lines:
        low, high = too_fine, epsilon
        for _ in range(LINE_BISECT_STEPS):
            middle = (low + high) / 2
            candidate = _line_segments(strokes, middle)
            if 0 < len(candidate) <= max_lines:
                high, segments = middle, candidate
            else:
                low = middle
    if len(segments) > max_lines:
        lengths = [-float(np.hypot(*(s[1, :2] - s[0, :2]))) for s in segments]
        kept = sorted(np.argsort(lengths, kind="stable")[:max_lines])
        segments = [segments[i] for i in kept]
    return segments
