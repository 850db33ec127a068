"""Turn any drawing into at most `max_lines` straight lines (Kontour's rule).

`to_kontour_lines` is the Quick, Draw! list-format front end of a `StraightLines` implementation
that the caller injects: the service and `griffon simulate` pass `model.strokes.straight_lines`,
the one implementation shared with training's Kontour-style augmentation (Ramer-Douglas-Peucker
with a growing epsilon until the whole drawing has at most `max_lines` segments, else the longest
segments in drawing order). `games/` never imports `model/`. Each output stroke is a 2-point
stroke ``[[x0, x1], [y0, y1]]`` (``[t0, t1]`` kept when the input has times). The limit itself is
the rules' ``max_strokes`` (``games/data/kontour.yaml``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

StraightLines = Callable[[Sequence[np.ndarray], int], list[np.ndarray]]
"""``straight_lines(strokes, max_lines)``: arrays of points (rows ``x, y[, t]``) -> at most
`max_lines` 2-row segments; raises ``ValueError`` for a drawing without extent."""


class LineError(ValueError):
    """A drawing that cannot be turned into lines (malformed, or no extent at all)."""


def _points(drawing: Any) -> list[list[tuple[float, ...]]]:
    if not isinstance(drawing, Sequence) or isinstance(drawing, (str, bytes)) or not drawing:
        raise LineError("a drawing must be a non-empty list of strokes")
    out = []
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
        out.append(pts)
    return out


def to_kontour_lines(drawing: Any, max_lines: int, straight_lines: StraightLines) -> list[list[list[float]]]:
    """At most `max_lines` straight 2-point strokes that approximate `drawing` (see module doc)."""
    arrays = [np.asarray(pts, dtype=np.float64) for pts in _points(drawing)]
    try:
        segments = straight_lines(arrays, max_lines)
    except ValueError as error:
        raise LineError(str(error)) from error
    return [segment.T.tolist() for segment in segments]


def segment_count(drawing: Any) -> int:
    """How many straight segments a drawing of polylines has (points - 1 per stroke)."""
    return sum(max(0, len(pts) - 1) for pts in _points(drawing))
