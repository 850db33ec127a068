"""The strokes a room sent, as the bot keeps them: ``[[x...], [y...], [t...]]``, y pointing down."""

from __future__ import annotations

import json


def erase_region(strokes: list[list[list[float]]], x0: float, x1: float, y0: float,
                 y1: float) -> list[list[list[float]]]:
    """The strokes without their points inside the rectangle: a stroke crossing it is cut in two."""
    out: list[list[list[float]]] = []
    for xs, ys, ts in strokes:
        run: list[int] = []
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            if x0 <= x <= x1 and y0 <= y <= y1:
                if run:
                    out.append([[xs[j] for j in run], [ys[j] for j in run], [ts[j] for j in run]])
                run = []
            else:
                run.append(i)
        if run:
            out.append([[xs[j] for j in run], [ys[j] for j in run], [ts[j] for j in run]])
    return out


def stroke_text(stroke: list[list[float]]) -> str:
    """A kept stroke as compact JSON, encoded once: a room's stored memory is made of them."""
    return json.dumps(stroke, separators=(",", ":"), allow_nan=False)
