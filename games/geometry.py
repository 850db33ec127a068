"""Plane geometry for Kontour's straight-line strokes (pure functions, no game logic).

- `straighten(points, tol)` turns a hand-drawn near-line into its chord (a `Segment`) or raises
  `NotAStraightLine` for a curve / a dot.
- `find_extension(segments, new, tol)` finds the earlier segment that `new` extends along the same
  line (or overlaps), and `merge(a, b)` joins two such segments into one.

Coordinates are in the drawing's own units ("px"); tolerances come from `GeometryConfig`
(`games/data/kontour.yaml`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from games.core import Model, NotAStraightLine

Point = tuple[float, float]


class GeometryConfig(Model):
    """Tolerances for straightening and merging strokes (see kontour.yaml for the meaning)."""

    straight_rel_tol: float
    straight_min_px: float
    straight_max_px: float
    min_length_px: float
    merge_angle_deg: float
    merge_line_rel_tol: float
    merge_line_min_px: float
    merge_line_max_px: float
    merge_gap_px: float
    merge_overlap_px: float | None = None  # a line over an earlier one, farther than this, is its own


def overlap_share(old: Segment, new: Segment) -> float:
    """How much of the shorter of the two lies over the other, along `old`'s line (0..1)."""
    ux, uy = (old.x1 - old.x0) / old.length, (old.y1 - old.y0) / old.length
    p0, p1 = sorted(_projection(p, old.start, ux, uy) for p in (new.start, new.end))
    shorter = min(old.length, p1 - p0)
    if shorter <= 0.0:
        return 0.0
    return max(0.0, min(p1, old.length) - max(p0, 0.0)) / shorter


class Segment(Model):
    """A straight segment from (x0, y0) to (x1, y1)."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def start(self) -> Point:
        return (self.x0, self.y0)

    @property
    def end(self) -> Point:
        return (self.x1, self.y1)

    @property
    def length(self) -> float:
        return math.hypot(self.x1 - self.x0, self.y1 - self.y0)

    def as_points(self) -> list[Point]:
        """The two endpoints, as a polyline."""
        return [self.start, self.end]


def point_segment_distance(p: Point, a: Point, b: Point) -> float:
    """Euclidean distance from point p to the segment [a, b]."""
    ax, ay = a
    dx, dy = b[0] - ax, b[1] - ay
    norm2 = dx * dx + dy * dy
    if norm2 == 0.0:
        return math.hypot(p[0] - ax, p[1] - ay)
    t = max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / norm2))
    return math.hypot(p[0] - (ax + t * dx), p[1] - (ay + t * dy))


def point_line_distance(p: Point, a: Point, b: Point) -> float:
    """Distance from p to the infinite line through a and b (a != b)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    return abs(dx * (p[1] - a[1]) - dy * (p[0] - a[0])) / math.hypot(dx, dy)


def straightness_tolerance(chord: float, tol: GeometryConfig) -> float:
    """Largest allowed deviation from the chord: relative to its length, clamped to
    [straight_min_px, straight_max_px]."""
    return min(tol.straight_max_px, max(tol.straight_min_px, tol.straight_rel_tol * chord))


def straighten(points: Sequence[Sequence[float]], tol: GeometryConfig) -> Segment:
    """The straight segment a hand-drawn stroke stands for: its first and last points.

    Accepted when every point lies within `straightness_tolerance` of the chord (distance to the
    *segment*, so a stroke that overshoots and comes back is refused). Raises `NotAStraightLine`
    for fewer than 2 points, a chord shorter than `min_length_px`, or a curve.
    """
    pts = [(float(p[0]), float(p[1])) for p in points]
    if len(pts) < 2:
        raise NotAStraightLine("a stroke needs at least two points", points=len(pts))
    a, b = pts[0], pts[-1]
    chord = math.hypot(b[0] - a[0], b[1] - a[1])
    if chord < tol.min_length_px:
        raise NotAStraightLine(
            f"stroke too short to be a line ({chord:.1f} < {tol.min_length_px} px)",
            length=round(chord, 2),
        )
    allowed = straightness_tolerance(chord, tol)
    worst = max(point_segment_distance(p, a, b) for p in pts)
    if worst > allowed:
        raise NotAStraightLine(
            f"stroke is not a straight line: a point is {worst:.1f} px from the chord "
            f"(allowed {allowed:.1f} px)",
            deviation=round(worst, 2),
            allowed=round(allowed, 2),
        )
    return Segment(x0=a[0], y0=a[1], x1=b[0], y1=b[1])


def angle_between(a: Segment, b: Segment) -> float:
    """Angle in degrees between the two segments' lines, ignoring direction (0..90)."""
    ang_a = math.atan2(a.y1 - a.y0, a.x1 - a.x0)
    ang_b = math.atan2(b.y1 - b.y0, b.x1 - b.x0)
    d = abs(ang_a - ang_b) % math.pi
    return math.degrees(min(d, math.pi - d))


def _projection(p: Point, a: Point, ux: float, uy: float) -> float:
    return (p[0] - a[0]) * ux + (p[1] - a[1]) * uy


def extends(old: Segment, new: Segment, tol: GeometryConfig) -> bool:
    """True when `new` lies on `old`'s line (same direction within `merge_angle_deg`, both ends
    close to the line) and touches or overlaps it along that line (gap ≤ `merge_gap_px`). A line
    laid over most of an earlier one (half of the shorter) merges only within `merge_overlap_px`
    of it: farther, it is a line of its own beside it (a double line, a ladder's close rungs)."""
    if angle_between(old, new) > tol.merge_angle_deg:
        return False
    line_tol = min(
        tol.merge_line_max_px,
        max(tol.merge_line_min_px, tol.merge_line_rel_tol * max(old.length, new.length)),
    )
    off = max(point_line_distance(p, old.start, old.end) for p in (new.start, new.end))
    if off > line_tol:
        return False
    if tol.merge_overlap_px is not None and off > tol.merge_overlap_px and overlap_share(old, new) > 0.5:
        return False
    ux, uy = (old.x1 - old.x0) / old.length, (old.y1 - old.y0) / old.length
    lo, hi = 0.0, old.length
    p0, p1 = sorted(_projection(p, old.start, ux, uy) for p in (new.start, new.end))
    gap = max(p0 - hi, lo - p1, 0.0)
    return gap <= tol.merge_gap_px


def merge(old: Segment, new: Segment) -> Segment:
    """One segment on `old`'s line covering both (projections of the four endpoints)."""
    ux, uy = (old.x1 - old.x0) / old.length, (old.y1 - old.y0) / old.length
    ts = [_projection(p, old.start, ux, uy) for p in (old.start, old.end, new.start, new.end)]
    t0, t1 = min(ts), max(ts)
    return Segment(x0=old.x0 + t0 * ux, y0=old.y0 + t0 * uy, x1=old.x0 + t1 * ux, y1=old.y0 + t1 * uy)


def find_extension(segments: Sequence[Segment], new: Segment, tol: GeometryConfig) -> int | None:
    """Index of the earliest segment that `new` extends (see `extends`), or None."""
    for i, seg in enumerate(segments):
        if extends(seg, new, tol):
            return i
    return None
