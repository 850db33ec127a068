"""The AI drawer: picks a drawing of its word and draws it stroke by stroke at a human pace.

Drawings come from a `DrawingSource`: by default (`default_source`) the shipped pack of real Quick,
Draw! drawings of the **validation split** (`games.ai.drawing_pack.DrawingPack`; never training drawings, so
simulations measure the model honestly), with the hand-made line drawings of
``games/data/line_drawings.yaml`` (`ShippedLineDrawings`) for words the pack lacks. For Kontour every
drawing goes through `to_kontour_lines` (at most the rules' ``max_strokes`` lines).
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Protocol

import yaml

from games.ai.base import Drawing, Related, no_relations
from games.ai.levels import DATA_DIR, DrawerLevel, StrokePace
from games.ai.lines import StraightLines, to_kontour_lines

LINE_DRAWINGS_FILE = DATA_DIR / "line_drawings.yaml"
CANVAS = 255.0
MIN_LINE = 8.0  # shorter Kontour lines are dropped (the engine refuses dots)


class DrawerError(ValueError):
    """No drawing for a word, or a malformed line-drawings file."""


class DrawingSource(Protocol):
    """Where the AI drawer finds drawings of a word (category key)."""

    def keys(self) -> Collection[str]: ...

    def drawings(self, key: str) -> list[Drawing]: ...


@cache
def _load_line_drawings(path: str, max_lines: int) -> dict[str, Drawing]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise DrawerError(f"cannot read line drawings {path}: {error}") from error
    if not isinstance(data, dict):
        raise DrawerError(f"{path}: expected a mapping word -> list of polylines")
    out: dict[str, Drawing] = {}
    for key, polylines in data.items():
        strokes: Drawing = []
        for flat in polylines or []:
            if len(flat) < 4 or len(flat) % 2:
                raise DrawerError(f"{path}: '{key}' has a polyline with an odd or short list")
            strokes.append([[float(v) for v in flat[0::2]], [float(v) for v in flat[1::2]]])
        if not strokes:
            raise DrawerError(f"{path}: '{key}' has no polyline")
        segments = sum(len(s[0]) - 1 for s in strokes)
        if segments > max_lines:
            raise DrawerError(f"{path}: '{key}' has {segments} lines (at most {max_lines})")
        out[str(key)] = strokes
    return out


def _kontour_max_strokes() -> int:
    """The rules' stroke limit (``games/data/kontour.yaml``): line drawings must fit a Kontour turn."""
    from games.kontour import KontourConfig  # the rules import nothing of the AI

    return KontourConfig.load().max_strokes


class ShippedLineDrawings:
    """The hand-made line drawings shipped with Griffon (one per word)."""

    def __init__(self, path: Path | None = None, max_lines: int | None = None) -> None:
        limit = max_lines if max_lines is not None else _kontour_max_strokes()
        self._drawings = _load_line_drawings(str(path or LINE_DRAWINGS_FILE), limit)

    def keys(self) -> Collection[str]:
        return self._drawings.keys()

    def drawings(self, key: str) -> list[Drawing]:
        return [self._drawings[key]] if key in self._drawings else []


class CombinedSource:
    """First source that has drawings of a word wins (e.g. the drawing pack, then shipped lines)."""

    def __init__(self, *sources: DrawingSource) -> None:
        self.sources = sources

    def keys(self) -> Collection[str]:
        return set().union(*(s.keys() for s in self.sources))

    def drawings(self, key: str) -> list[Drawing]:
        for source in self.sources:
            found = source.drawings(key)
            if found:
                return found
        return []


def default_source(pack: Path | None = None) -> DrawingSource:
    """The AI drawer's drawings: the shipped pack of validation-split Quick, Draw! drawings
    (`games.ai.drawing_pack.DrawingPack`, or the pack file at `pack`), falling back to the hand-made
    line drawings for words the pack lacks; the line drawings alone when no pack can be read."""
    shipped = ShippedLineDrawings()
    try:
        from games.ai.drawing_pack import DrawingPack, DrawingPackError  # optional module
    except ImportError:
        return shipped
    try:
        return CombinedSource(DrawingPack.load(pack), shipped)
    except DrawingPackError:
        if pack is not None:
            raise
        return shipped


def fit_canvas(drawing: Drawing, size: float = CANVAS, margin: float = 8.0) -> Drawing:
    """The drawing aligned top-left, scaled (aspect kept) into a ``size`` canvas, times dropped."""
    xs = [x for s in drawing for x in s[0]]
    ys = [y for s in drawing for y in s[1]]
    if not xs:
        raise DrawerError("empty drawing")
    extent = max(max(xs) - min(xs), max(ys) - min(ys)) or 1.0
    scale = (size - 2 * margin) / extent
    x0, y0 = min(xs), min(ys)
    return [
        [[margin + (x - x0) * scale for x in s[0]], [margin + (y - y0) * scale for y in s[1]]]
        for s in drawing
    ]


@dataclass(frozen=True)
class TimedStroke:
    """One stroke of a planned drawing: finished at `end` (seconds), points with times."""

    start: float
    end: float
    points: tuple[tuple[float, float], ...]

    def as_stroke(self) -> list[list[float]]:
        """Quick, Draw! raw form ``[[x...], [y...], [t ms...]]`` with times since `start`."""
        xs = [p[0] for p in self.points]
        ys = [p[1] for p in self.points]
        lengths = [0.0]
        for a, b in zip(self.points, self.points[1:], strict=False):
            lengths.append(lengths[-1] + math.dist(a, b))
        total = lengths[-1] or 1.0
        ts = [round((self.end - self.start) * 1000 * d / total) for d in lengths]
        return [xs, ys, ts]


def pace(drawing: Drawing, level: StrokePace, start: float) -> list[TimedStroke]:
    """Timestamps for each stroke: ``start_s`` to think, then each stroke at ``speed`` canvas
    units per second, with ``pause_s`` between strokes; a drawing that would take longer than
    ``max_s`` (after ``start_s``) is drawn proportionally faster, as a person hurries."""
    strokes = []
    for stroke in drawing:
        points = tuple((float(x), float(y)) for x, y in zip(stroke[0], stroke[1], strict=True))
        length = sum(math.dist(a, b) for a, b in zip(points, points[1:], strict=False))
        strokes.append((points, max(0.15, length / level.speed)))
    total = sum(d for _, d in strokes) + level.pause_s * max(0, len(strokes) - 1)
    hurry = min(1.0, level.max_s / total) if level.max_s is not None and total > 0 else 1.0
    out: list[TimedStroke] = []
    t = start + level.start_s
    for points, duration in strokes:
        out.append(TimedStroke(t, t + duration * hurry, points))
        t += (duration + level.pause_s) * hurry
    return out


@dataclass
class AIDrawer:
    """Draws words from a `DrawingSource` at the pace of a `DrawerLevel`.

    `used` remembers, per word, the drawings already drawn (share one dict between the AI players
    of a game): each meeting with a word takes a drawing not used yet, and once all were used, a
    varied copy of one (`games.ai.drawing_pack.vary`) when available. Kontour drawings are cut to
    `max_lines` straight lines by the injected `straight_lines` (see `games.ai.lines`).
    """

    level: DrawerLevel
    rng: random.Random
    source: DrawingSource
    related: Related = no_relations
    straight_lines: StraightLines | None = None
    max_lines: int | None = None  # None: the rules' max_strokes (games/data/kontour.yaml)
    used: dict[str, set[int]] = field(default_factory=dict)

    def can_draw(self, key: str) -> bool:
        """Whether the source has a drawing of `key`."""
        return bool(self.source.drawings(key))

    def choose_color(self, blue: str, orange: str, rng: random.Random | None = None) -> str:
        """Kontour: "orange" (2 points) with probability ``orange_rate`` when it can draw it,
        "blue" otherwise (or when it can draw only the blue word). ``rng``: the roll's own
        generator (default: the drawer's)."""
        can_blue, can_orange = self.can_draw(blue), self.can_draw(orange)
        roll = (rng or self.rng).random()
        if can_orange and (not can_blue or roll < self.level.orange_rate):
            return "orange"
        return "blue"

    def pick(self, key: str) -> Drawing:
        """One drawing of `key` not drawn yet in this game (see the class doc); `DrawerError`
        if there is none."""
        found = self.source.drawings(key)
        if not found:
            raise DrawerError(f"no drawing of '{key}' to draw")
        used = self.used.setdefault(key, set())
        fresh = [i for i in range(len(found)) if i not in used]
        if fresh:
            index = fresh[self.rng.randrange(len(fresh))]
            used.add(index)
            return found[index]
        drawing = found[self.rng.randrange(len(found))]
        return _vary(drawing, self.rng)

    def plan(self, key: str, start: float, kontour: bool = False) -> list[TimedStroke]:
        """The strokes to draw for `key` from time `start`; Kontour: <= `max_lines` straight lines."""
        drawing = fit_canvas(self.pick(key))
        if kontour:
            if self.straight_lines is None:
                raise DrawerError("a Kontour drawer needs a straight_lines implementation")
            limit = self.max_lines if self.max_lines is not None else _kontour_max_strokes()
            lines = to_kontour_lines(drawing, limit, self.straight_lines)
            drawing = [s for s in lines if math.dist(*zip(s[0], s[1], strict=True)) >= MIN_LINE]
            return pace(drawing, self.level.kontour, start)
        return pace(drawing, self.level.pictomania, start)

    def gesture(self, guess_key: str | None, word: str) -> str | None:
        """Kontour drawer's reaction to a wrong guess: « proche » when related to the word,
        else « hors sujet », each only with probability ``gesture_rate`` (None: no gesture)."""
        if guess_key is None or guess_key == word or self.rng.random() >= self.level.gesture_rate:
            return None
        return "proche" if guess_key in self.related(word) else "hors_sujet"


def _vary(drawing: Drawing, rng: random.Random) -> Drawing:
    try:
        from games.ai.drawing_pack import vary  # optional module
    except ImportError:
        return drawing
    return vary(drawing, rng)
