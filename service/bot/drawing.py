"""The bot's drawing turn (protocol version 2, ``draw_turn``): a real drawing of the word, streamed
as stroke frames at a person's pace, or declined at once.

The drawing comes from the AI drawer of ``games.ai`` (`AIDrawer` over the shipped drawing pack of
real Quick, Draw! drawings, docs/DRAWING_PACK.md, falling back to the hand-made line drawings): a
drawing not drawn yet in this session, else a varied copy. It is fitted to the room's canvas and
paced by `games.ai.drawer.pace` with :data:`ROOM_PACE` (a person sketching in a web room: a short
think, then each stroke along its length, a pause between strokes), hurried to fit
``THINK_SHARE`` + ``HURRY_SHARE`` of the turn's ``duration_s``. :func:`plan` turns it into timed frames: one
``draw_start``, ``draw_points`` batches (every ``BATCH_S`` of pen travel, with each point's time),
a ``draw_stroke_end`` at each pen-up and a ``draw_done``; the connection sends each at its time.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any

from games.ai.drawer import AIDrawer, DrawerError, DrawingSource, default_source, fit_canvas, pace
from games.ai.levels import StrokePace, load_level

Frame = dict[str, Any]
ROOM_PACE = StrokePace(speed=150.0, pause_s=0.7, start_s=1.5, max_s=30.0)  # a quick sketch, like a person
HURRY_SHARE = 0.6  # the strokes are drawn within this share of the turn's duration_s
THINK_SHARE = 0.1  # at most this share of it passes before the first stroke
BATCH_S = 0.05  # a draw_points frame every 50 ms of pen travel, as a room's canvas sends them
SIDE = 255.0  # the drawings' canvas (Quick, Draw! units)


@functools.cache
def drawings() -> DrawingSource:
    """The drawings the bot draws: the shipped pack, then the line drawings (read once)."""
    return default_source()


class Declined(Exception):
    """The bot cannot draw this word: ``reason`` is ``unknown_word`` or ``no_drawing``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclass(frozen=True)
class Step:
    """One frame of a drawing turn and when to send it (seconds since the turn began)."""

    at: float
    frame: Frame


def drawer(seed: int) -> AIDrawer:
    """An AI drawer for one session (it remembers the drawings it drew: a word met again gets
    another drawing, then a varied copy)."""
    level = load_level("normal").drawer
    return AIDrawer(level=level, rng=random.Random(seed), source=drawings())


def choose(artist: AIDrawer, categories: tuple[str, ...], word: str) -> str:
    """The first category of ``word`` the drawer has a drawing of; `Declined` otherwise."""
    if not categories:
        raise Declined("unknown_word", f"{word[:60]!r} names nothing Griffon knows how to draw")
    for key in categories:
        if artist.can_draw(key):
            return key
    raise Declined("no_drawing", f"Griffon has no drawing of {categories[0]!r}")


def plan(artist: AIDrawer, key: str, turn: Any, word: str, width: float, height: float,
         duration_s: float, y_up: bool = False) -> list[Step]:
    """The timed frames of one drawing of ``key`` on a ``width`` × ``height`` canvas (y down, or
    up when ``y_up``), done within ``HURRY_SHARE`` of ``duration_s``."""
    try:
        drawing = fit_canvas(artist.pick(key), size=SIDE)
    except DrawerError as error:
        raise Declined("no_drawing", str(error)) from error
    scale = min(width, height) / SIDE
    dx, dy = (width - SIDE * scale) / 2, (height - SIDE * scale) / 2
    limit = min(ROOM_PACE.max_s or duration_s, HURRY_SHARE * duration_s)
    think = min(ROOM_PACE.start_s, THINK_SHARE * duration_s)
    strokes = pace(drawing, ROOM_PACE.model_copy(update={"max_s": limit, "start_s": think}), 0.0)

    def point(x: float, y: float) -> tuple[float, float]:
        px, py = round(dx + x * scale, 1), round(dy + y * scale, 1)
        return px, (round(height - py, 1) if y_up else py)

    steps = [Step(0.0, {"type": "draw_start", "turn": turn, "word": word, "label": key,
                        "strokes": len(strokes), "width": width, "height": height,
                        "duration_s": round(strokes[-1].end if strokes else 0.0, 2)})]
    for index, stroke in enumerate(strokes):
        xs, ys, ts = stroke.as_stroke()
        batch: list[int] = []
        for i, t in enumerate(ts):
            batch.append(i)
            last = i == len(ts) - 1
            if last or (ts[i + 1] - ts[batch[0]]) / 1000 >= BATCH_S:
                at = stroke.start + t / 1000
                pts = [point(xs[j], ys[j]) for j in batch]
                steps.append(Step(at, {"type": "draw_points", "turn": turn, "stroke": index,
                                       "x": [p[0] for p in pts], "y": [p[1] for p in pts],
                                       "t": [round((stroke.start + ts[j] / 1000) * 1000) for j in batch]}))
                batch = []
        steps.append(Step(stroke.end, {"type": "draw_stroke_end", "turn": turn, "stroke": index}))
    end = strokes[-1].end if strokes else 0.0
    steps.append(Step(end, {"type": "draw_done", "turn": turn, "strokes": len(strokes), "stopped": False}))
    return steps
