"""A Python client of Griffon's bot (``WS /v1/bot``, protocol version 2, 1 as a fallback), and a tiny
drawing-game room that plays one round with it.

As a library (needs only the ``websockets`` package)::

    from examples.room_client import connect

    bot = await connect("ws://127.0.0.1:8000/v1/bot", room="salon-42", y="down")  # a BotClient
    await bot.start_round(1, candidates=["chat", "maison"], pace="human")
    await bot.stroke([40, 215], [120, 120], [0, 300])
    async for event in bot.events():          # guess, analysis, error, round_over, welcome...
        if event["type"] == "guess":
            await bot.verdict(event["guess_id"], correct=event["label"] == "house")
            break
    over = await bot.end_round("maison")
    await bot.close()

``on("guess", callback)`` is the other way to receive events. A socket lost without ``close()``
is resumed (``hello.resume`` with the latest ``resume_token``, within the server's
``GRIFFON_BOT_RESUME_S``); frames sent meanwhile wait, and a stroke that was open is sent again.
``y``: which way the room's y axis points — ``"down"`` (canvas coordinates, the default) or ``"up"``.

As a script, it replays a drawing stroke by stroke at human pace (``stroke_start`` / ``points`` /
``stroke_end``, points sent every 50 ms), prints every guess the bot sends, judges it against the
answer (a right guess ends the round; a wrong one gets « hors sujet »), and prints where to read
the bot's transcript::

    python examples/room_client.py                                    # a house, normal level
    python examples/room_client.py --url ws://HOST:8000/v1/bot --difficulty hard \\
        --drawing my_drawing.json --answer cat --candidates cat dog house --speed 2 --pace instant

``--drawing`` is a JSON file holding Quick, Draw! strokes (``[[[x...], [y...]], ...]``, optional
third list of times in ms) or an ndjson record ``{"word": ..., "drawing": [...]}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import websockets

Frame = dict[str, Any]
Callback = Callable[[Frame], Awaitable[None] | None]
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
FINAL_CLOSE_CODES = {1000, 1008, 1009, 4401, 4403, 4429, 4503}  # refusals: no resume after these
RECONNECT_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)


class BotError(Exception):
    """The bot answered a request with an ``error`` frame (``code``, ``message``, ``frame``;
    ``close_code`` when it closed the connection with it)."""

    def __init__(self, frame: Frame, close_code: int | None = None) -> None:
        super().__init__(f"{frame.get('code')}: {frame.get('message')}")
        self.code = frame.get("code")
        self.message = frame.get("message")
        self.frame = frame
        self.close_code = close_code


class BotClient:
    """One room's connection to the bot: the protocol's operations, its events, automatic resume."""

    def __init__(self, url: str, *, key: str | None = None, room: str | None = None,
                 name: str | None = None, y: str = "down", analysis: bool = False,
                 versions: tuple[int, ...] = (1, 2), resume: bool = True) -> None:
        self.url, self.key, self.room, self.name, self.y = url, key, room, name, y
        self.analysis, self.versions, self.auto_resume = analysis, versions, resume
        self.welcome: Frame | None = None
        self.ws: Any = None
        self._callbacks: dict[str, list[Callback]] = {}
        self._queue: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._waiters: list[tuple[Callable[[Frame], bool], asyncio.Future[Frame]]] = []
        self._connected = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._open_stroke: list[list[float]] | None = None
        self._round_strokes: list[list[list[float]]] = []  # the round's strokes, to send again
        self._closing = False
        self._failure: Exception | None = None  # why the connection ended for good
        self._next_id = 0
        self.resumes = 0

    # -- connection -----------------------------------------------------------------------------
    async def connect(self) -> Frame:
        """Open the socket and say hello; the ``welcome`` (BotError if the bot refuses)."""
        self.welcome = await self._open(resume=None)
        self._connected.set()
        self._reader = asyncio.create_task(self._read())
        return self.welcome

    async def _open(self, resume: Frame | None) -> Frame:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else None
        self.ws = await websockets.connect(self.url, additional_headers=headers)
        hello: Frame = {"type": "hello", "versions": list(self.versions), "analysis": self.analysis}
        hello |= {k: v for k, v in (("room", self.room), ("name", self.name)) if v is not None}
        if 2 in self.versions:
            hello |= {"y": self.y} | ({"key": self.key} if self.key else {})
            hello |= {"resume": resume} if resume else {}
        await self.ws.send(json.dumps(hello))
        while True:
            frame = json.loads(await self.ws.recv())
            if frame["type"] == "welcome":
                return frame
            if (frame["type"] == "error" and frame["code"] == "invalid_frame" and resume is None
                    and set(self.versions) >= {1, 2} and "hello" in frame.get("message", "")):
                await self.ws.close()  # a server that speaks version 1 only: greet it in version 1
                self.versions = (1,)
                return await self._open(resume=None)
            if frame["type"] == "error" and frame["code"] != "resume_failed":
                with contextlib.suppress(TimeoutError):  # a refusal: the bot closes (4401, 4429...)
                    await asyncio.wait_for(self.ws.wait_closed(), 5.0)
                await self.ws.close()
                raise BotError(frame, self.ws.close_code)
            await self._dispatch(frame)  # resume_failed: a fresh welcome follows

    async def close(self) -> None:
        """Say ``bye`` and close (no resume after this)."""
        self._closing = True
        if self.ws is not None and self._connected.is_set():
            with contextlib.suppress(websockets.ConnectionClosed):
                await self.ws.send(json.dumps({"type": "bye"}))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._reader or asyncio.sleep(0), 5.0)
            await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._queue.put_nowait(None)

    async def _read(self) -> None:
        while True:
            try:
                async for raw in self.ws:
                    await self._dispatch(json.loads(raw))
                code = self.ws.close_code
            except websockets.ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd else None
            self._connected.clear()
            if self._closing or not self._can_resume(code):
                self._end(ConnectionError(f"the bot closed the connection ({code})"))
                return
            try:
                await self._resume()
            except (ConnectionError, BotError) as error:
                self._end(error)
                return

    def _end(self, failure: Exception) -> None:
        """The connection is over for good: wake every waiter with ``failure``."""
        self._failure = failure
        self._connected.set()  # senders wake up and raise it
        self._queue.put_nowait(None)
        for _, future in self._waiters:
            if not future.done():
                future.set_exception(failure)

    def _can_resume(self, code: int | None) -> bool:
        welcome = self.welcome or {}
        return self.auto_resume and "resume_token" in welcome and code not in FINAL_CLOSE_CODES

    async def _resume(self) -> None:
        assert self.welcome is not None
        for delay in RECONNECT_DELAYS_S:
            await asyncio.sleep(delay)
            try:
                resume = {"session": self.welcome["session"], "token": self.welcome["resume_token"]}
                self.welcome = await self._open(resume=resume)
            except (OSError, websockets.WebSocketException):
                continue
            self.resumes += 1
            await self._catch_up(self.welcome.get("round"))
            self._connected.set()
            await self._dispatch(self.welcome)
            return
        raise ConnectionError("the bot could not be reached again")

    async def _catch_up(self, state: Frame | None) -> None:
        """After a resume: send again the strokes of the round the bot did not get (lost with the
        socket), then the stroke that was open (the bot drops it)."""
        if state is None:
            return
        for stroke in self._round_strokes[state["strokes"]:]:
            await self._send_now({"type": "stroke", "stroke": stroke})
        if self._open_stroke is not None:
            xs, ys, *ts = self._open_stroke
            await self._send_now({"type": "stroke_start", "x": xs[0], "y": ys[0]}
                                 | ({"t": ts[0][0]} if ts else {}))
            if len(xs) > 1:
                await self._send_now({"type": "points", "x": xs[1:], "y": ys[1:]}
                                     | ({"t": ts[0][1:]} if ts else {}))

    async def _send_now(self, frame: Frame) -> None:
        self._next_id += 1
        await self.ws.send(json.dumps(frame | {"id": self._next_id}))

    # -- events ---------------------------------------------------------------------------------
    def on(self, kind: str, callback: Callback) -> None:
        """Call ``callback(frame)`` for every frame of ``kind`` (``"*"``: every frame)."""
        self._callbacks.setdefault(kind, []).append(callback)

    async def events(self) -> AsyncIterator[Frame]:
        """Every frame the bot sends (guess, analysis, error, round_over, welcome after a resume...),
        until the connection ends."""
        while (frame := await self._queue.get()) is not None:
            yield frame

    async def _dispatch(self, frame: Frame) -> None:
        for match, future in list(self._waiters):
            if not future.done() and match(frame):
                future.set_result(frame)
                self._waiters.remove((match, future))
                break
        self._queue.put_nowait(frame)
        for callback in self._callbacks.get(frame["type"], []) + self._callbacks.get("*", []):
            result = callback(frame)
            if asyncio.iscoroutine(result):
                await result

    # -- sending --------------------------------------------------------------------------------
    async def send(self, frame: Frame) -> int:
        """Send one frame (with a fresh ``id``; waits while a lost socket is being resumed)."""
        self._next_id += 1
        ref = self._next_id
        while True:
            await self._connected.wait()
            if self._failure is not None:
                raise self._failure
            ws = self.ws
            try:
                await ws.send(json.dumps(frame | {"id": ref}))
                return ref
            except websockets.ConnectionClosed:
                if not self.auto_resume or self._closing:
                    raise
                if self.ws is ws:  # the reader has not seen it yet: wait for its resume
                    self._connected.clear()

    async def _request(self, frame: Frame, answer: Callable[[Frame], bool], timeout: float) -> Frame:
        future: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
        ref = self._next_id + 1
        self._waiters.append((lambda f: answer(f) or (f["type"] == "error" and f.get("ref") == ref), future))
        await self.send(frame)
        reply = await asyncio.wait_for(future, timeout)
        if reply["type"] == "error":
            raise BotError(reply)
        return reply

    async def start_round(self, round: str | int, candidates: list[str] | None = None, *,
                          game: str = "kontour", language: str = "fr", difficulty: str | None = None,
                          pace: str | None = None, duration_s: float | None = None,
                          seed: int | None = None, reaction_s: float | None = None,
                          hold_s: float | None = None, timeout: float = 30.0) -> Frame:
        """Start a round; the ``round_ready`` (its ``unknown``: the candidates the bot cannot
        guess, ignored; BotError: an unknown difficulty...)."""
        frame: Frame = {"type": "round_start", "round": round, "game": game, "language": language}
        optional = {"candidates": candidates, "difficulty": difficulty, "pace": pace,
                    "duration_s": duration_s, "seed": seed, "reaction_s": reaction_s, "hold_s": hold_s}
        frame |= {k: v for k, v in optional.items() if v is not None}
        self._open_stroke, self._round_strokes = None, []
        return await self._request(frame, lambda f: f["type"] == "round_ready", timeout)

    async def stroke_start(self, x: float, y: float, t: float | None = None) -> None:
        """A stroke begins at one point."""
        await self.send({"type": "stroke_start", "x": x, "y": y} | ({"t": t} if t is not None else {}))
        self._open_stroke = [[x], [y]] + ([[t]] if t is not None else [])

    async def points(self, xs: list[float], ys: list[float], ts: list[float] | None = None) -> None:
        """More points of the open stroke."""
        await self.send({"type": "points", "x": xs, "y": ys} | ({"t": ts} if ts is not None else {}))
        if self._open_stroke is not None:
            self._open_stroke[0].extend(xs)
            self._open_stroke[1].extend(ys)
            if len(self._open_stroke) > 2 and ts is not None:
                self._open_stroke[2].extend(ts)

    async def stroke_end(self) -> None:
        """The open stroke is finished."""
        await self.send({"type": "stroke_end"})  # (the client's state changes once it is sent)
        if self._open_stroke is not None:
            self._round_strokes.append(self._open_stroke)
        self._open_stroke = None

    async def stroke(self, xs: list[float], ys: list[float], ts: list[float] | None = None) -> None:
        """A whole stroke at once."""
        await self.send({"type": "stroke", "stroke": [xs, ys] + ([ts] if ts is not None else [])})
        self._round_strokes.append([list(xs), list(ys)] + ([list(ts)] if ts is not None else []))

    async def undo(self) -> None:
        """The drawer removed the last stroke (an open one, else the last finished one)."""
        await self.send({"type": "undo"})
        if self._open_stroke is None and self._round_strokes:
            self._round_strokes.pop()
        self._open_stroke = None

    async def erase(self, stroke: int | None = None, region: dict[str, float] | None = None) -> None:
        """The drawer erased stroke number ``stroke`` or every point inside ``region`` ({x, y, w, h})."""
        if (stroke is None) == (region is None):
            raise ValueError("erase: give stroke or region")
        where = {"stroke": stroke} if stroke is not None else {"region": region}
        await self.send({"type": "erase"} | where)
        if stroke is not None and 0 <= stroke < len(self._round_strokes):
            del self._round_strokes[stroke]
        elif region is not None:
            self._round_strokes = erase_region(self._round_strokes, region)

    async def fill(self, x: float | None = None, y: float | None = None, color: str | None = None) -> None:
        """The drawer filled an area (the bot ignores it)."""
        frame = {"type": "fill"} | {k: v for k, v in (("x", x), ("y", y), ("color", color)) if v is not None}
        await self.send(frame)

    async def draw_turn(self, turn: str | int, word: str, *, language: str = "fr", width: float = 255.0,
                        height: float = 255.0, duration_s: float = 60.0, seed: int | None = None,
                        timeout: float = 30.0) -> Frame:
        """The bot's turn to draw ``word``: its ``draw_start`` (then ``draw_points``,
        ``draw_stroke_end`` and ``draw_done`` events), or its ``draw_declined``."""
        frame: Frame = {"type": "draw_turn", "turn": turn, "word": word, "language": language,
                        "width": width, "height": height, "duration_s": duration_s}
        frame |= {"seed": seed} if seed is not None else {}
        return await self._request(frame, lambda f: f["type"] in ("draw_start", "draw_declined"), timeout)

    async def draw_stop(self) -> None:
        """End the bot's drawing turn early."""
        await self.send({"type": "draw_stop"})

    async def clear(self) -> None:
        """The drawer cleared the canvas."""
        await self.send({"type": "clear"})
        self._open_stroke, self._round_strokes = None, []

    async def player_guess(self, text: str, player: str = "?", correct: bool = False) -> None:
        """Another player guessed ``text``."""
        await self.send({"type": "player_guess", "player": player, "text": text, "correct": correct})

    async def verdict(self, guess_id: int, correct: bool = False, gesture: str | None = None) -> None:
        """The room's judgement of one of the bot's guesses (``gesture``: proche, hors_sujet)."""
        frame = {"type": "verdict", "guess_id": guess_id, "correct": correct}
        await self.send(frame | ({"gesture": gesture} if gesture else {}))

    async def end_round(self, answer: str | None = None, drawing_consent: bool = False,
                        timeout: float = 30.0) -> Frame:
        """End the round; its ``round_over``."""
        frame: Frame = {"type": "round_end", "drawing_consent": drawing_consent}
        frame |= {"answer": answer} if answer is not None else {}
        self._open_stroke = None
        return await self._request(
            frame, lambda f: f["type"] == "round_over" and f.get("why", "round_end") == "round_end", timeout)


def erase_region(strokes: list[list[list[float]]], region: dict[str, float]) -> list[list[list[float]]]:
    """The strokes without their points inside ``region`` (a crossing stroke is cut in two)."""
    x0, y0 = region["x"], region["y"]
    x1, y1 = x0 + region["w"], y0 + region["h"]
    out: list[list[list[float]]] = []
    for stroke in strokes:
        run: list[int] = []
        for i, (x, y) in enumerate(zip(stroke[0], stroke[1], strict=True)):
            if x0 <= x <= x1 and y0 <= y <= y1:
                if run:
                    out.append([[axis[j] for j in run] for axis in stroke])
                run = []
            else:
                run.append(i)
        if run:
            out.append([[axis[j] for j in run] for axis in stroke])
    return out


async def check_words(url: str, words: list[str], language: str = "fr") -> Frame:
    """``POST /v1/words/check`` on the server of ``url`` (``ws://``... or ``http://``...): which
    words the bot can guess, and under which categories."""
    import httpx

    base = url.replace("wss://", "https://", 1).replace("ws://", "http://", 1)
    origin = base.split("/v1/", 1)[0]
    async with httpx.AsyncClient() as http:
        reply = await http.post(origin + "/v1/words/check", json={"words": words, "language": language})
    reply.raise_for_status()
    return reply.json()


async def connect(url: str, *, key: str | None = None, room: str | None = None, name: str | None = None,
                  y: str = "down", **options: Any) -> BotClient:
    """A connected :class:`BotClient` (the contract's ``connect(url, {key, room, name, y})``);
    ``options``: ``analysis``, ``versions``, ``resume``."""
    client = BotClient(url, key=key, room=room, name=name, y=y, **options)
    await client.connect()
    return client


# -- the example room ------------------------------------------------------------------------------
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


async def draw(bot: BotClient, strokes: list, speed: float, start: float) -> None:
    """Stream the strokes at their pace: start, points every 50 ms, end."""
    for begin, ts, stroke in timeline(strokes, speed):
        await asyncio.sleep(max(0.0, start + begin - time.monotonic()))
        await bot.stroke_start(stroke[0][0], stroke[1][0])
        sent = 1
        while sent < len(ts):
            due = start + begin + ts[sent - 1] + SEND_EVERY_S
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            now = time.monotonic() - start - begin
            upto = max(sent + 1, next((i for i, t in enumerate(ts) if t > now), len(ts)))
            await bot.points(stroke[0][sent:upto], stroke[1][sent:upto])
            sent = upto
        await bot.stroke_end()


async def play(url: str, strokes: list, answer: str | None, difficulty: str = "normal",
               candidates: list[str] | None = None, speed: float = 1.0, linger_s: float = 3.0,
               room: str = "example-room", pace: str | None = None) -> dict[str, Any]:
    """Play one round; returns the bot's guesses, whether it found, and its transcript path."""
    bot = BotClient(url, room=room)
    welcome = await bot.connect()
    await bot.start_round(1, candidates, difficulty=difficulty, pace=pace if welcome["version"] > 1 else None)
    start, found, log = time.monotonic(), asyncio.Event(), []

    async def on_guess(frame: Frame) -> None:
        elapsed = time.monotonic() - start
        right = answer is not None and answer in (frame["label"], frame["text"])
        log.append({"text": frame["text"], "label": frame["label"], "at_s": round(elapsed, 2),
                    "correct": right})
        print(f"{elapsed:6.2f} s  bot: « {frame['text']} » ({frame['prob']:.0%})"
              + ("  ✔ trouvé !" if right else ""), flush=True)
        await bot.verdict(frame["guess_id"], right, None if right else "hors_sujet")
        if right:
            found.set()

    def on_error(frame: Frame) -> None:
        print(f"{time.monotonic() - start:6.2f} s  error {frame['code']}: {frame['message']}", flush=True)

    bot.on("guess", on_guess)
    bot.on("error", on_error)
    drawer = asyncio.create_task(draw(bot, strokes, speed, start))
    await asyncio.wait([drawer, asyncio.create_task(found.wait())], return_when=asyncio.FIRST_COMPLETED)
    if not found.is_set():  # the drawing is done: leave the bot a little time
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(found.wait(), linger_s)
    drawer.cancel()
    await bot.end_round(answer)
    await bot.close()
    return {"session": welcome["session"], "transcript": welcome["transcript"],
            "found": found.is_set(), "guesses": log}


def main(argv: list[str] | None = None) -> int:
    """Command line: play one round and print the guesses."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="ws://127.0.0.1:8000/v1/bot")
    parser.add_argument("--drawing", help="JSON strokes or an ndjson record (default: a house)")
    parser.add_argument("--answer", help="the word drawn (category key or French word)")
    parser.add_argument("--difficulty", default="normal")
    parser.add_argument("--pace", choices=("instant", "human"), help="the bot's pace (default: human)")
    parser.add_argument("--candidates", nargs="*", help="words the drawing may be")
    parser.add_argument("--speed", type=float, default=1.0, help="> 1 draws faster than a human")
    parser.add_argument("--linger", type=float, default=3.0, help="seconds to wait after drawing")
    args = parser.parse_args(argv)
    strokes, word = load_drawing(args.drawing)
    result = asyncio.run(play(args.url, strokes, args.answer or word, args.difficulty,
                              args.candidates, args.speed, args.linger, pace=args.pace))
    print(json.dumps({"found": result["found"], "guesses": len(result["guesses"]),
                      "session": result["session"], "transcript": result["transcript"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
