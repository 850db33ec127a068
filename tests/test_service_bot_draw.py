"""The bot's drawing turn and what rooms send besides strokes, over the real server (protocol
version 2): ``draw_turn`` streams a real drawing of the pack as stroke frames a room can render
(and another bot can read), a word it cannot draw is declined at once, ``draw_stop`` ends the turn;
``erase`` (a stroke or a region) and ``fill`` / colours; the room's reaction time and hold window."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import websockets

from griffon.launch import Server, patient, running_server
from tests.conftest import shape


@pytest.fixture(scope="module")
def server(tiny_checkpoint: Path) -> Iterator[Server]:
    with running_server({"GRIFFON_MODEL": str(tiny_checkpoint)}) as running:
        yield running


class Room:
    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send(self, frame: dict) -> None:
        await self.ws.send(json.dumps(frame))

    async def recv(self, timeout: float = 10.0) -> dict:
        return json.loads(await asyncio.wait_for(self.ws.recv(), patient(timeout)))

    async def until(self, kind: str, timeout: float = 10.0) -> tuple[dict, list[dict]]:
        """Frames up to the first of type ``kind`` (errors fail the test)."""
        seen = []
        while True:
            frame = await self.recv(timeout)
            assert frame["type"] != "error", frame
            seen.append(frame)
            if frame["type"] == kind:
                return frame, seen


async def greeted(server: Server, versions: list[int] | None = None, **hello: Any) -> tuple[Any, Room, dict]:
    ws = await websockets.connect(server.ws_url + "/v1/bot", open_timeout=patient(10))
    room = Room(ws)
    await room.send({"type": "hello", "versions": versions or [2]} | hello)
    return ws, room, await room.recv()


def strokes_of(frames: list[dict]) -> list[list[list[float]]]:
    """The strokes a room rebuilds from draw_points frames (one list per stroke index)."""
    strokes: dict[int, list[list[float]]] = {}
    for f in frames:
        if f["type"] == "draw_points":
            xs, ys = strokes.setdefault(f["stroke"], [[], []])
            xs.extend(f["x"])
            ys.extend(f["y"])
    return [strokes[i] for i in sorted(strokes)]


def test_the_bot_draws_a_real_drawing_of_the_word_at_a_persons_pace(server: Server) -> None:
    from games.ai.drawer import fit_canvas
    from service.bot.drawing import drawings

    async def scenario() -> tuple[dict, list[dict], float]:
        ws, room, welcome = await greeted(server)
        assert welcome["draws"] is True
        began = time.monotonic()
        await room.send({"type": "draw_turn", "turn": "t1", "word": "les chats", "width": 800, "height": 600,
                         "duration_s": 6, "seed": 4})
        start, _ = await room.until("draw_start")
        done, frames = await room.until("draw_done", 30)
        elapsed = time.monotonic() - began
        await ws.close()
        return start, [start, *frames], elapsed

    start, frames, elapsed = asyncio.run(scenario())
    assert start["turn"] == "t1" and start["label"] == "cat" and start["word"] == "les chats"
    assert start["width"] == 800 and start["height"] == 600
    assert elapsed >= 0.9 * start["duration_s"] > 0  # streamed at its pace, not all at once
    done = frames[-1]
    assert done == {"type": "draw_done", "turn": "t1", "strokes": start["strokes"], "stopped": False}
    ends = [f["stroke"] for f in frames if f["type"] == "draw_stroke_end"]
    assert ends == list(range(start["strokes"]))
    times = [t for f in frames if f["type"] == "draw_points" for t in f["t"]]
    assert times == sorted(times) and times[-1] / 1000 <= start["duration_s"] + 0.01
    drawn = strokes_of(frames)
    assert len(drawn) == start["strokes"]
    assert all(0 <= x <= 800 and 0 <= y <= 600 for xs, ys in drawn for x, y in zip(xs, ys, strict=True))
    # one of the pack's drawings of a cat, fitted into the room's canvas (600 high, centred)
    scale, dx = 600 / 255, (800 - 600) / 2
    pack = [[[round(dx + x * scale, 1) for x in xs], [round(y * scale, 1) for y in ys]]
            for d in drawings().drawings("cat") for xs, ys in fit_canvas(d)]
    assert all(stroke in pack for stroke in drawn)


def test_a_word_the_bot_cannot_draw_is_declined_at_once_and_a_turn_can_be_stopped(server: Server) -> None:
    async def scenario() -> None:
        ws, room, _ = await greeted(server)
        for word, reason in (("xyzzy", "unknown_word"), ("sandwich", "no_drawing")):
            await room.send({"type": "draw_turn", "turn": word, "word": word, "language": "en"})
            declined = await room.recv()
            assert declined["type"] == "draw_declined" and declined["reason"] == reason, declined
            assert declined["turn"] == word and declined["word"] == word
        await room.send({"type": "draw_turn", "turn": 2, "word": "maison", "duration_s": 60})
        start, _ = await room.until("draw_start")
        await room.until("draw_points")
        await room.send({"type": "draw_stop"})
        done, _ = await room.until("draw_done")
        assert done["turn"] == 2 and done["stopped"] is True and 1 <= done["strokes"] <= start["strokes"]
        await room.send({"type": "ping", "id": "after"})
        assert await room.recv(2) == {"type": "pong", "ref": "after"}  # nothing more of the turn
        await ws.close()

    asyncio.run(scenario())


def test_a_drawing_turn_and_erase_are_version_2(server: Server) -> None:
    async def scenario() -> None:
        ws, room, welcome = await greeted(server, [1])
        assert welcome["version"] == 1 and "draws" not in welcome
        for frame in ({"type": "draw_turn", "turn": 1, "word": "chat"}, {"type": "fill"},
                      {"type": "round_start", "round": 1, "hold_s": 2}):
            await room.send(frame)
            error = await room.recv()
            assert error["code"] == "invalid_frame" and "needs protocol version 2" in error["message"], error
        await ws.close()

    asyncio.run(scenario())


def test_the_bots_drawing_is_read_by_a_room_as_strokes(server: Server) -> None:
    """A room rebuilds the bot's strokes from its frames and passes them to another bot as a
    person's drawing: every stroke arrives and is read."""
    async def scenario() -> dict:
        ws, artist, _ = await greeted(server)
        await artist.send({"type": "draw_turn", "turn": 1, "word": "square", "language": "en",
                           "duration_s": 3})
        start, _ = await artist.until("draw_start")
        _, frames = await artist.until("draw_done", 30)
        ws2, reader, _ = await greeted(server, analysis=True)
        await reader.send({"type": "round_start", "round": 1, "candidates": ["square", "circle", "triangle"]})
        await reader.until("round_ready")
        for f in frames:  # as a segment-based room forwards them: pen down, points, pen up
            if f["type"] == "draw_points":
                if f["x"] and f is next(g for g in frames if g.get("stroke") == f["stroke"]):
                    await reader.send({"type": "stroke_start", "x": f["x"][0], "y": f["y"][0]})
                    if len(f["x"]) > 1:
                        await reader.send({"type": "points", "x": f["x"][1:], "y": f["y"][1:]})
                else:
                    await reader.send({"type": "points", "x": f["x"], "y": f["y"]})
            elif f["type"] == "draw_stroke_end":
                await reader.send({"type": "stroke_end"})
                await reader.until("analysis")
        await reader.send({"type": "round_end", "answer": "square"})
        over, _ = await reader.until("round_over")
        await ws.close()
        await ws2.close()
        return {"strokes": start["strokes"], "read": over["strokes"]}

    counted = asyncio.run(scenario())
    assert counted["read"] == counted["strokes"] >= 1


def square_strokes() -> list:
    (xs, ys, ts), = shape("square", np.random.default_rng(3))
    return [[xs[:3], ys[:3], ts[:3]], [xs[2:], ys[2:], ts[2:]]]


def test_erase_removes_a_stroke_or_a_region_and_fills_and_colours_are_ignored(server: Server) -> None:
    async def scenario() -> tuple[dict, list[dict]]:
        ws, room, welcome = await greeted(server, analysis=True)
        await room.send({"type": "round_start", "round": 1, "candidates": ["square", "circle"], "seed": 1})
        await room.until("round_ready")
        first, second = square_strokes()
        await room.send({"type": "stroke", "stroke": first, "color": "#ff0000", "width": 4})
        await room.until("analysis")
        await room.send({"type": "stroke_start", "x": second[0][0], "y": second[1][0], "color": "blue"})
        await room.send({"type": "points", "x": second[0][1:], "y": second[1][1:]})
        await room.send({"type": "stroke_end"})
        two, _ = await room.until("analysis")
        await room.send({"type": "fill", "x": 10, "y": 10, "color": "#00ff00"})
        nowhere = {"x": -5000, "y": -5000, "w": 1, "h": 1}
        await room.send({"type": "erase", "region": nowhere})  # nothing erased: nothing said
        await room.send({"type": "erase", "stroke": 0})
        one, _ = await room.until("analysis")
        xs, ys = second[0], second[1]
        mid = len(xs) // 2
        box = {"x": min(xs[mid], xs[mid + 1]) - 0.01, "y": min(ys[mid], ys[mid + 1]) - 0.01,
               "w": abs(xs[mid + 1] - xs[mid]) + 0.02, "h": abs(ys[mid + 1] - ys[mid]) + 0.02}
        await room.send({"type": "erase", "region": box})  # two points of the stroke: cut there
        cut, _ = await room.until("analysis")
        await room.send({"type": "erase", "stroke": 7, "id": "far"})
        error = await room.recv()
        await room.send({"type": "round_end"})
        over, _ = await room.until("round_over")
        await ws.close()
        return {"two": two, "one": one, "cut": cut, "error": error, "over": over, "welcome": welcome}, []

    seen, _ = asyncio.run(scenario())
    assert seen["two"]["strokes"] == 2 and seen["one"]["strokes"] == 1
    assert seen["cut"]["strokes"] in (1, 2)  # the stroke cut in two (or shortened at an end)
    assert seen["error"] == {"type": "error", "code": "no_stroke", "ref": "far",
                             "message": seen["error"]["message"]}
    assert seen["over"]["strokes"] == seen["cut"]["strokes"]


def test_a_hold_window_keeps_the_bot_quiet_and_reaction_s_is_echoed(server: Server) -> None:
    async def scenario(hold: float) -> tuple[dict, list[float]]:
        ws, room, _ = await greeted(server)
        await room.send({"type": "round_start", "round": 1, "candidates": ["square", "circle"],
                         "pace": "instant", "difficulty": "hard", "seed": 2, "hold_s": hold,
                         "reaction_s": 0.2})
        ready, _ = await room.until("round_ready")
        began = time.monotonic()
        for stroke in square_strokes():
            await room.send({"type": "stroke", "stroke": stroke})
        said = []
        try:
            while True:
                frame = await asyncio.wait_for(room.ws.recv(), patient(hold + 3))
                if json.loads(frame)["type"] == "guess":
                    said.append(time.monotonic() - began)
        except TimeoutError:
            pass
        await ws.close()
        return ready, said

    ready, said = asyncio.run(scenario(3.0))
    assert ready["hold_s"] == 3.0 and ready["reaction_s"] == 0.2
    assert said and min(said) >= 3.0 - 0.05  # nothing before the window closed, then the bot speaks


def test_a_rooms_reaction_time_replaces_the_paces_reading_time() -> None:
    """On a fake clock: instant with ``reaction_s`` keeps instant's judgement (one line, no typing)
    and reads each stroke in about ``reaction_s``; human with it reads in that time, then types."""
    import random

    from games.ai import KontourGuesser, load_level
    from service.bot.pace import policy_level

    level = load_level("normal").kontour_guesser
    tuned = policy_level(level, "instant", 1.0)
    assert (tuned.reaction_s, tuned.min_strokes, tuned.type_base_s) == (1.0, 1, 0.0)
    assert policy_level(level, "human", None) == level and policy_level(level, "human", 0.5).reaction_s == 0.5
    guesser = KontourGuesser(level=tuned, rng=random.Random(0))
    guesser.observe({"house": 0.97, "cat": 0.03}, now=2.0)
    times = [2.0 + 0.05 * i for i in range(200)]
    spoken = next(t for t in times if guesser.decide(t) is not None)
    assert 2.0 + (1 - level.reaction_jitter) * 1.0 <= spoken <= 2.0 + (1 + level.reaction_jitter) * 1.0 + 0.05
