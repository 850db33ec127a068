"""A tiny drawing-game room that plays one round with Griffon's bot over ``WS /v1/bot``.

It replays a drawing stroke by stroke at human pace (``stroke_start`` / ``points`` /
``stroke_end``, points sent every 50 ms), prints every guess the bot sends, judges it against the
answer (a right guess ends the round; a wrong one gets « hors sujet »), and prints where to read
the bot's transcript. Needs only the ``websockets`` package.

    python examples/room_client.py                                    # a house, normal level
    python examples/room_client.py --url ws://HOST:8000/v1/bot --difficulty hard \\
        --drawing my_drawing.json --answer cat --candidates cat dog house --speed 2

``--drawing`` is a JSON file holding Quick, Draw! strokes (``[[[x...], [y...]], ...]``, optional
third list of times in ms) or an ndjson record ``{"word": ..., "drawing": [...]}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import websockets

HOUSE = [  # a house in ten lines on a 0-255 canvas
    [[40, 40, 215, 215, 40], [250, 120, 120, 250, 250]],
    [[30, 128, 225], [125, 30, 125]],
    [[105, 105, 150, 150], [250, 180, 180, 250]],
    [[60, 60, 95, 95, 60], [150, 180, 180, 150, 150]],
    [[165, 165, 200, 200, 165], [150, 180, 180, 150, 150]],
    [[180, 180, 200, 200], [70, 40, 40, 88]],
]
SEND_EVERY_S = 0.05  # a browser sends the points it collected every 50 ms
UNITS_PER_S = 250.0  # drawing speed when the strokes carry no times (canvas units per second)
PAUSE_S = 0.4  # between two strokes, when the strokes carry no times


def load_drawing(path: str | None) -> tuple[list, str | None]:
    """The strokes to draw and the answer they show (when the file says)."""
    if path is None:
        return HOUSE, "house"
    data = json.loads(Path(path).read_text().splitlines()[0] if path.endswith(".ndjson")
                      else Path(path).read_text())
    if isinstance(data, dict):
        return data["drawing"], data.get("word")
    return data, None


def timeline(strokes: list, speed: float) -> list[tuple[float, list, list]]:
    """For every stroke: its start time (s) and the times (s) of each of its points."""
    out, clock = [], 0.0
    for stroke in strokes:
        xs, ys = stroke[0], stroke[1]
        if len(stroke) > 2 and stroke[2]:  # recorded times (ms), as in the raw Quick, Draw! files
            ts = [(t - stroke[2][0]) / 1000 / speed for t in stroke[2]]
        else:
            steps = [0.0] + [math.dist((xs[i - 1], ys[i - 1]), (xs[i], ys[i])) for i in range(1, len(xs))]
            ts = [sum(steps[: i + 1]) / UNITS_PER_S / speed for i in range(len(xs))]
        clock += 0.0 if not out else PAUSE_S / speed
        out.append((clock, ts, stroke))
        clock += ts[-1]
    return out


async def draw(ws: Any, strokes: list, speed: float, start: float) -> None:
    """Stream the strokes at their pace: start, points every 50 ms, end."""
    for begin, ts, stroke in timeline(strokes, speed):
        await asyncio.sleep(max(0.0, start + begin - time.monotonic()))
        await ws.send(json.dumps({"type": "stroke_start", "x": stroke[0][0], "y": stroke[1][0]}))
        sent = 1
        while sent < len(ts):
            due = start + begin + ts[sent - 1] + SEND_EVERY_S
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            now = time.monotonic() - start - begin
            upto = max(sent + 1, next((i for i, t in enumerate(ts) if t > now), len(ts)))
            await ws.send(json.dumps({"type": "points", "x": stroke[0][sent:upto],
                                      "y": stroke[1][sent:upto]}))
            sent = upto
        await ws.send(json.dumps({"type": "stroke_end"}))


async def listen(ws: Any, answer: str | None, start: float, found: asyncio.Event, log: list) -> None:
    """Print the bot's frames; judge its guesses against the answer."""
    async for raw in ws:
        frame = json.loads(raw)
        elapsed = time.monotonic() - start
        if frame["type"] == "guess":
            right = answer is not None and answer in (frame["label"], frame["text"])
            log.append({"text": frame["text"], "label": frame["label"], "at_s": round(elapsed, 2),
                        "correct": right})
            print(f"{elapsed:6.2f} s  bot: « {frame['text']} » ({frame['prob']:.0%})"
                  + ("  ✔ trouvé !" if right else ""), flush=True)
            verdict = {"type": "verdict", "guess_id": frame["guess_id"], "correct": right}
            await ws.send(json.dumps(verdict if right else verdict | {"gesture": "hors_sujet"}))
            if right:
                found.set()
        elif frame["type"] == "error":
            print(f"{elapsed:6.2f} s  error {frame['code']}: {frame['message']}", flush=True)
        elif frame["type"] == "round_over":
            return


async def play(url: str, strokes: list, answer: str | None, difficulty: str = "normal",
               candidates: list[str] | None = None, speed: float = 1.0, linger_s: float = 3.0,
               room: str = "example-room") -> dict[str, Any]:
    """Play one round; returns the bot's guesses, whether it found, and its transcript path."""
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "hello", "versions": [1], "room": room}))
        welcome = json.loads(await ws.recv())
        if welcome.get("type") != "welcome":
            raise RuntimeError(f"the bot refused: {welcome}")
        start_frame = {"type": "round_start", "round": 1, "game": "kontour",
                       "difficulty": difficulty, "language": "fr"}
        await ws.send(json.dumps(start_frame | ({"candidates": candidates} if candidates else {})))
        ready = json.loads(await ws.recv())
        if ready.get("type") != "round_ready":
            raise RuntimeError(f"the round did not start: {ready}")
        start, found, log = time.monotonic(), asyncio.Event(), []
        listener = asyncio.create_task(listen(ws, answer, start, found, log))
        drawer = asyncio.create_task(draw(ws, strokes, speed, start))
        await asyncio.wait([drawer, asyncio.create_task(found.wait())],
                           return_when=asyncio.FIRST_COMPLETED)
        if not found.is_set():  # the drawing is done: leave the bot a little time
            try:
                await asyncio.wait_for(found.wait(), linger_s)
            except TimeoutError:
                pass
        drawer.cancel()
        await ws.send(json.dumps({"type": "round_end", "answer": answer}))
        await asyncio.wait_for(listener, 5.0)
        await ws.send(json.dumps({"type": "bye"}))
    return {"session": welcome["session"], "transcript": welcome["transcript"],
            "found": found.is_set(), "guesses": log}


def main(argv: list[str] | None = None) -> int:
    """Command line: play one round and print the guesses."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="ws://127.0.0.1:8000/v1/bot")
    parser.add_argument("--drawing", help="JSON strokes or an ndjson record (default: a house)")
    parser.add_argument("--answer", help="the word drawn (category key or French word)")
    parser.add_argument("--difficulty", default="normal")
    parser.add_argument("--candidates", nargs="*", help="words the drawing may be")
    parser.add_argument("--speed", type=float, default=1.0, help="> 1 draws faster than a human")
    parser.add_argument("--linger", type=float, default=3.0, help="seconds to wait after drawing")
    args = parser.parse_args(argv)
    strokes, word = load_drawing(args.drawing)
    result = asyncio.run(play(args.url, strokes, args.answer or word, args.difficulty,
                              args.candidates, args.speed, args.linger))
    print(json.dumps({"found": result["found"], "guesses": len(result["guesses"]),
                      "session": result["session"], "transcript": result["transcript"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
