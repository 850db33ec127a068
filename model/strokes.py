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

import numba
import numpy as np

MAX_POINTS = 10_000
MAX_STROKES = 1_000
MAX_ABS_COORDINATE = 1e6
RDP_EPSILON = 2.0
SIMPLIFIED_EXTENT = 255.0

Points = np.ndarray  # one stroke: a float64 array of shape (n_points, 2)


class DrawingError(ValueError):
    """A drawing that cannot be read: empty, malformed, non-finite, too large or degenerate."""


def validate_drawing(
    drawing: Any, max_points: int = MAX_POINTS, max_strokes: int = MAX_STROKES
) -> list[Points]:
    """Check a drawing in Quick, Draw! stroke format and return its strokes as ``(n, 2)`` arrays.

    Raises :class:`DrawingError` with a readable message for anything that is not a usable drawing.
    """
    if not isinstance(drawing, Sequence) or isinstance(drawing, (str, bytes)):
        raise DrawingError("a drawing must be a list of strokes")
    if len(drawing) == 0:
        raise DrawingError("the drawing is empty (no strokes)")
    if len(drawing) > max_strokes:
        raise DrawingError(f"too many strokes: {len(drawing)} > {max_strokes}")
    strokes: list[Points] = []
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


def validate_stroke(stroke: Any, index: int = 0, max_points: int = MAX_POINTS) -> Points:
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


def resample(points: Points, spacing: float = 1.0) -> Points:
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


def resample_corners(points: Points, spacing: float = 1.0) -> Points:
    """The samples of :func:`resample` that Ramer–Douglas–Peucker can keep, in order.

    Samples on one straight segment of the input are collinear, and a point's distance to a chord
    (or to a chord's start) is convex along a segment, so RDP's farthest point in any interval is
    the first or last sample of some segment. Keeping only those — at most two per input point,
    plus the last — gives the same simplification (up to which of several exactly equidistant
    samples is kept) at a cost bounded by the input's size, not by its length in pixels: a
    10,000-point zigzag spanning the canvas gives 20,000 candidates instead of 2.5 million samples.
    """
    points = np.ascontiguousarray(points[:, :2], dtype=np.float64)
    out = np.empty((max(2 * len(points), 2), 2))
    return out[: _corner_samples(points, spacing, out, 0)].copy()


def rdp(points: Points, epsilon: float = RDP_EPSILON) -> Points:
    """Ramer–Douglas–Peucker simplification of one polyline (see :func:`rdp_strokes`).

    Distances use the first two columns; further columns (e.g. times) are carried along."""
    return rdp_strokes([points], epsilon)[0]


def rdp_strokes(strokes: Sequence[Points], epsilon: float = RDP_EPSILON) -> list[Points]:
    """Ramer–Douglas–Peucker simplification of every stroke, in one compiled pass over the drawing.

    Distances use the first two columns (to the chord's line, or to its start when the chord has
    no length); further columns (e.g. times) are carried along."""
    if not strokes:
        return []
    every = np.concatenate(strokes) if len(strokes) > 1 else strokes[0]
    lengths = np.array([len(s) for s in strokes], dtype=np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    xs = np.ascontiguousarray(every[:, 0], dtype=np.float64)
    ys = np.ascontiguousarray(every[:, 1], dtype=np.float64)
    keep = np.zeros(len(every), dtype=np.bool_)
    _rdp_mark(xs, ys, starts, ends, float(epsilon), keep)
    return [every[start:end][keep[start:end]] for start, end in zip(starts, ends, strict=True)]


# -- compiled kernels (numba; each keeps its plain-Python source as ``kernel.py_func``, and the tests
# compare the two) --------------------------------------------------------------------------------


def _kernel(function: Any) -> Any:
    """``function`` compiled by numba, releasing the GIL, and cached on disk where numba can write
    (beside this file, ``$NUMBA_CACHE_DIR`` or the user's cache folder). An install with no writable
    place (a read-only image without a home) compiles it in memory at each start instead (~8 s)."""
    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return numba.njit(nogil=True)(function)


@_kernel
def _corner_samples(points: np.ndarray, spacing: float, out: np.ndarray, at: int) -> int:
    """Write :func:`resample_corners` of ``points`` (``(n, 2)``) into ``out[at:]``; return the end."""
    n = points.shape[0]
    if n < 2:
        out[at : at + n] = points
        return at + n
    arc = np.empty(n)  # arc length at each input point
    arc[0] = 0.0
    total = 0.0
    for i in range(1, n):
        dx = points[i, 0] - points[i - 1, 0]
        dy = points[i, 1] - points[i - 1, 1]
        total += math.sqrt(dx * dx + dy * dy)
        arc[i] = total
    if total <= spacing:
        out[at] = points[0]
        out[at + 1] = points[n - 1]
        return at + 2
    last = math.ceil(total / spacing) - 1  # index of the last regular sample, as np.arange counts
    samples = np.empty(2 * n - 1)
    count = 0
    for i in range(n - 1):  # the first and last sample on each segment, repeats dropped
        low = math.ceil(arc[i] / spacing)
        high = min(math.floor(arc[i + 1] / spacing), last)
        if low <= high:
            for k in (low, high):
                if count == 0 or k * spacing > samples[count - 1]:
                    samples[count] = k * spacing
                    count += 1
    samples[count] = total
    count += 1
    out[at : at + count, 0] = np.interp(samples[:count], arc, points[:, 0])
    out[at : at + count, 1] = np.interp(samples[:count], arc, points[:, 1])
    return at + count


@_kernel
def _rdp_mark(
    xs: np.ndarray, ys: np.ndarray, starts: np.ndarray, ends: np.ndarray, epsilon: float, keep: np.ndarray
) -> None:
    """Mark in ``keep`` the points RDP keeps in each stroke ``[starts[s], ends[s])``."""
    stack = np.empty((len(xs) + len(starts), 2), dtype=np.int64)  # at most one interval per point
    top = 0
    for s in range(len(starts)):
        if ends[s] > starts[s]:
            keep[starts[s]] = True
            keep[ends[s] - 1] = True
            stack[top, 0] = starts[s]
            stack[top, 1] = ends[s] - 1
            top += 1
    while top > 0:
        top -= 1
        first, last = stack[top, 0], stack[top, 1]
        if last - first < 2:
            continue
        sx, sy = xs[first], ys[first]
        dx, dy = xs[last] - sx, ys[last] - sy
        norm = math.hypot(dx, dy)
        degenerate = norm < 1e-12
        best, index = -1.0, first
        for i in range(first + 1, last):
            if degenerate:
                distance = math.hypot(xs[i] - sx, ys[i] - sy)
            else:
                distance = abs(dx * (ys[i] - sy) - dy * (xs[i] - sx)) / norm
            if distance > best:
                best, index = distance, i
        if best > epsilon:
            keep[index] = True
            stack[top, 0], stack[top, 1] = first, index
            stack[top + 1, 0], stack[top + 1, 1] = index, last
            top += 2


@_kernel
def _simplify(
    every: np.ndarray, lengths: np.ndarray, min_x: float, min_y: float, scale: float, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Align, scale, corner-resample and RDP every stroke of ``every`` (strokes of ``lengths``
    points, back to back); returns the kept points and how many each stroke keeps."""
    scaled = np.empty_like(every)
    scaled[:, 0] = (every[:, 0] - min_x) * scale
    scaled[:, 1] = (every[:, 1] - min_y) * scale
    candidates = np.empty((2 * every.shape[0] + 1, 2))
    starts = np.empty(len(lengths), dtype=np.int64)
    ends = np.empty(len(lengths), dtype=np.int64)
    at, read = 0, 0
    for s in range(len(lengths)):
        starts[s] = at
        at = _corner_samples(scaled[read : read + lengths[s]], 1.0, candidates, at)
        ends[s] = at
        read += lengths[s]
    keep = np.zeros(at, dtype=np.bool_)
    _rdp_mark(candidates[:at, 0].copy(), candidates[:at, 1].copy(), starts, ends, epsilon, keep)
    counts = np.zeros(len(lengths), dtype=np.int64)
    for s in range(len(lengths)):
        for i in range(starts[s], ends[s]):
            if keep[i]:
                counts[s] += 1
    return candidates[:at][keep], counts


def drawing_frame(strokes: Sequence[Points]) -> tuple[float, float, float]:
    """``(min_x, min_y, extent)``: the frame the simplification aligns and scales to."""
    every = np.concatenate(strokes)
    origin = every.min(axis=0)
    return float(origin[0]), float(origin[1]), float(np.ptp(every, axis=0).max())


def simplify_drawing(
    strokes: Sequence[Points],
    epsilon: float = RDP_EPSILON,
    frame: tuple[float, float, float] | None = None,
) -> list[Points]:
    """Apply Google's ``simplified`` preprocessing to validated strokes (see module docstring).

    ``frame`` (from :func:`drawing_frame` of the whole drawing) lets a caller simplify some strokes
    of a larger drawing on their own, as a live session does for each new stroke.
    """
    min_x, min_y, extent = frame if frame is not None else drawing_frame(strokes)
    scale = SIMPLIFIED_EXTENT / extent if extent > 0 else 1.0
    every = np.concatenate(strokes)[:, :2] if len(strokes) > 1 else strokes[0][:, :2]
    lengths = np.array([len(s) for s in strokes], dtype=np.int64)
    every = np.ascontiguousarray(every, dtype=np.float64)
    kept, counts = _simplify(every, lengths, min_x, min_y, scale, epsilon)
    bounds = np.cumsum(counts)
    return [kept[end - count : end] for end, count in zip(bounds.tolist(), counts.tolist(), strict=True)]


def to_quickdraw(strokes: Sequence[Points], decimals: int = 0) -> list[list[list[float]]]:
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
    out: list[np.ndarray] = []
    for kept in rdp_strokes(strokes, epsilon):
        moves = np.hypot(*(kept[1:, :2] - kept[:-1, :2]).T) > 0
        out.extend(np.stack([kept[:-1][moves], kept[1:][moves]], axis=1))
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
