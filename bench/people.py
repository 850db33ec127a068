"""The scripted players the load benchmarks run (``bench.bench_capacity``, ``bench.bench_attacks``,
``bench.bench_replicas``): a person at a solo table (`person_table`: Pictomania, a real drawing's
strokes one a second; Kontour, a line a second on their turn and a word every two seconds on the
AI's), a bot room (`bot_room`: rounds of real drawings at their recorded pace), what they add up
(`Tally`), the start that lets every table of a level begin at once (`Start`), and what they draw:
recognised validation drawings (`load_drawings`), a bot's stroke streamed at its own pace
(`draw_stroke`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import websockets

from griffon.launch import Server

OPPONENTS = {"pictomania": 5, "kontour": 3}
STROKE_POINTS = 25
STROKE_PERIOD_S = 1.0
KONTOUR_GUESS_EVERY = 2  # the person types a word every second stroke tick while an AI draws
DECIDE_S = 0.5  # a person's reaction to a new phase (card drawn, word to pick, next round)
BOT_PAUSE_S = 0.3  # between a room's strokes (bench_service's pace)
ACK_GRACE_S = 2.0  # after the window: how long a table waits for its last stroke's ack
PERSON = "joueur"
GUESS_WORDS = ("maison", "chat", "arbre", "soleil", "voiture", "poisson", "fleur", "étoile", "vélo")
CHUNK_S = 0.05  # a bot sends a stroke's points every 50 ms
DEFAULT_STROKE_S = 0.6  # a stroke without times is drawn in this long
WORDS = ("cat", "house", "tree", "fish", "bicycle", "car", "sun", "star", "cup", "umbrella",
         "clock", "apple", "flower", "bird", "airplane", "key", "hat", "eye", "face", "moon")


# -- the drawings -----------------------------------------------------------------------------------


def load_drawings(limit: int = 400) -> list[list]:
    """Recognised validation drawings of a few common words (raw format when available)."""
    from training.data import DataError, data_files, default_data_root, load_dataset

    root = default_data_root()
    available = {word for _, word, _ in data_files(root)}
    words = [w for w in WORDS if w in available] or sorted(available)[:20]
    try:
        records = load_dataset(root, split="val", categories=words)
    except DataError as error:
        raise SystemExit(f"no Quick, Draw! data for the benchmark: {error}") from error
    drawings = [r.strokes for r in records if r.recognized and 2 <= len(r.strokes) <= 40]
    random.Random(0).shuffle(drawings)
    return drawings[:limit]


def stroke_times(stroke: list) -> list[float]:
    """Seconds from the stroke's start to each point."""
    n = len(stroke[0])
    if len(stroke) > 2 and len(stroke[2]) == n and stroke[2][-1] > stroke[2][0]:
        return [min((t - stroke[2][0]) / 1000, 3.0) for t in stroke[2]]
    return [DEFAULT_STROKE_S * i / max(1, n - 1) for i in range(n)]


async def draw_stroke(ws: websockets.ClientConnection, stroke: list) -> None:
    """``stroke_start`` then ``points`` every 50 ms, at the stroke's own pace."""
    times = stroke_times(stroke)
    await ws.send(json.dumps({"type": "stroke_start", "x": stroke[0][0], "y": stroke[1][0]}))
    start, sent = time.monotonic(), 1
    while sent < len(times):
        await asyncio.sleep(CHUNK_S)
        elapsed = time.monotonic() - start
        upto = max(sent + 1, next((i for i, t in enumerate(times) if t > elapsed), len(times)))
        await ws.send(json.dumps({"type": "points", "x": stroke[0][sent:upto], "y": stroke[1][sent:upto]}))
        sent = upto


# -- tallies and latencies ------------------------------------------------------------------------


@dataclass
class Tally:
    """What every table of a level adds up."""

    acks: list[float] = field(default_factory=list)  # seconds, stroke sent -> its ack
    guesses: list[float] = field(default_factory=list)  # seconds, bot rooms: stroke_end -> guess
    sent: int = 0
    moves: int = 0  # every move frame (strokes, cards, words, guesses, next rounds)
    errors: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    refusal_said: dict[str, str] = field(default_factory=dict)  # refusal -> the server's first message
    failures: Counter[str] = field(default_factory=Counter)


def percentiles_ms(samples: list[float]) -> tuple[float, float, float]:
    """p50, p99 and max in ms (NaN without samples)."""
    if not samples:
        return math.nan, math.nan, math.nan
    ms = np.asarray(samples) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99)), float(ms.max())


class Start:
    """The tables get ready (game created, socket open; or given up), then all start at once for
    the window."""

    def __init__(self, tables: int) -> None:
        self.tables = tables
        self.done: set[int] = set()
        self.all_ready = asyncio.Event()
        self.go = asyncio.Event()
        self.stop_at = math.inf

    def ready(self, table: int) -> None:
        """Table ``table`` is ready, or will never be (once per table; later calls do nothing)."""
        self.done.add(table)
        if len(self.done) >= self.tables:
            self.all_ready.set()

    @property
    def waiting(self) -> int:
        return self.tables - len(self.done)


# -- the scripted people ----------------------------------------------------------------------------


def canvas_strokes(drawing: list) -> list[list[list[float]]]:
    """A real drawing's strokes as the page sends them: fit in the 0-255 canvas (10 px margin), each
    resampled to ``STROKE_POINTS`` points along its length."""
    xs = np.concatenate([np.asarray(s[0], float) for s in drawing])
    ys = np.concatenate([np.asarray(s[1], float) for s in drawing])
    scale = 235 / max(1.0, xs.max() - xs.min(), ys.max() - ys.min())
    out = []
    for stroke in drawing:
        x = (np.asarray(stroke[0], float) - xs.min()) * scale + 10
        y = (np.asarray(stroke[1], float) - ys.min()) * scale + 10
        along = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))])
        if along[-1] <= 0:  # a dot: a short tick instead
            along, x, y = np.array([0.0, 1.0]), np.array([x[0], x[0] + 3]), np.array([y[0], y[0] + 3])
        at = np.linspace(0, along[-1], STROKE_POINTS)
        out.append([[round(float(a), 1), round(float(b), 1)]
                    for a, b in zip(np.interp(at, along, x), np.interp(at, along, y), strict=True)])
    return out


def straight_stroke(rng: random.Random) -> list[list[float]]:
    """A 25-point straight line of 40-150 px inside the canvas (what Kontour's line tool sends)."""
    while True:
        x0, y0 = rng.uniform(20, 235), rng.uniform(20, 235)
        angle, length = rng.uniform(0, 2 * math.pi), rng.uniform(40, 150)
        x1, y1 = x0 + length * math.cos(angle), y0 + length * math.sin(angle)
        if 5 <= x1 <= 250 and 5 <= y1 <= 250:
            return [[round(x0 + (x1 - x0) * i / (STROKE_POINTS - 1), 1),
                     round(y0 + (y1 - y0) * i / (STROKE_POINTS - 1), 1)] for i in range(STROKE_POINTS)]


class Person:
    """One person's socket of a solo game: the view as the frames tell it, one stroke in flight at a
    time, its ack timed. `act` does what the person does now and says when they act next."""

    stroke_event = ""  # the event that carries the person's stroke back
    who = "player"  # the event's field naming the player

    def __init__(self, ws: Any, tally: Tally, rng: random.Random, drawings: list[list]) -> None:
        self.ws, self.tally, self.rng, self.drawings = ws, tally, rng, drawings
        self.view: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.pending: float | None = None
        self.got_state = asyncio.Event()
        self.ticks = 0

    async def read(self) -> None:
        async for raw in self.ws:
            received = time.perf_counter()
            frame = json.loads(raw)
            kind = frame["type"]
            if kind == "state":
                self.view, self.config = frame["state"], frame["config"]
                self.got_state.set()
            elif kind == "update":
                self.view.update(frame["set"])
                self.on_update(frame)
                if self.pending is not None and any(
                    e["kind"] == self.stroke_event and e.get(self.who) == PERSON for e in frame["events"]
                ):
                    self.tally.acks.append(received - self.pending)
                    self.pending = None
            elif kind == "error":
                self.tally.errors[frame.get("code", "?")] += 1
                self.pending = None  # a refused stroke gets this frame instead of an update

    def on_update(self, frame: dict[str, Any]) -> None:
        """Anything else the person keeps from an update."""

    async def move(self, **move: Any) -> None:
        self.tally.moves += 1
        await self.ws.send(json.dumps({"type": "move", "move": move}))

    async def stroke(self, points: list[list[float]]) -> None:
        if self.pending is not None:  # the last one is not back yet: the person waits for it
            return
        self.tally.sent += 1
        self.pending = time.perf_counter()
        await self.move(kind="stroke", points=points)

    async def act(self) -> float:
        """One action; returns the seconds until the next one."""
        raise NotImplementedError


class PictomaniaPerson(Person):
    """Draws a real drawing's strokes, one a second, while the round is played; starts the next
    round once one is scored; a new drawing each round."""

    stroke_event, who = "stroke_drawn", "player"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.queue: list[list[list[float]]] = []
        self.round = 0

    async def act(self) -> float:
        phase = self.view.get("phase")
        if phase == "scored":
            await self.move(kind="next_round")
            return DECIDE_S
        if phase == "playing" and PERSON not in self.view["round"]["done"]:
            if self.view["round"]["number"] != self.round or not self.queue:
                self.round = self.view["round"]["number"]
                self.queue = canvas_strokes(self.rng.choice(self.drawings))
            await self.stroke(self.queue.pop(0))
        return STROKE_PERIOD_S


class KontourPerson(Person):
    """On their turn: draws the card, picks the blue word, then a straight line a second up to the
    turn's limit; while an AI draws, types a word every two seconds."""

    stroke_event, who = "stroke_added", "drawer"

    async def act(self) -> float:
        self.ticks += 1
        view = self.view
        phase = view.get("phase")
        if view.get("drawer") == PERSON:
            if phase == "draw":
                await self.move(kind="draw_card")
                return DECIDE_S
            if phase == "choose":
                await self.move(kind="choose_word", color="blue")
                return DECIDE_S
            if phase == "drawing" and len(view["turn"]["segments"]) < self.config["max_strokes"]:
                await self.stroke(straight_stroke(self.rng))
        elif phase == "drawing" and self.ticks % KONTOUR_GUESS_EVERY == 0:
            await self.move(kind="guess", text=self.rng.choice(GUESS_WORDS))
        return STROKE_PERIOD_S


PEOPLE = {"pictomania": PictomaniaPerson, "kontour": KontourPerson}


async def person_table(
    server: Server, http: httpx.AsyncClient, game: str, tally: Tally, start: Start, seed: int,
    drawings: list[list],
) -> None:
    """One solo game: created, joined, then played by its person until the window closes."""
    rng = random.Random(seed)
    try:
        response = await http.post(server.url + "/v1/play", timeout=30, json={
            "game": game, "opponents": OPPONENTS[game], "seed": seed, "name": f"Banc {seed}"})
        if response.status_code != 201:
            body = response.json() if response.headers.get("content-type", "").startswith(
                "application/json") else {}
            refusal = f"{response.status_code} {body.get('error', '?')}"
            tally.refusals[refusal] += 1
            tally.refusal_said.setdefault(refusal, str(body.get("message", "")))
            return
        created = response.json()
        async with websockets.connect(server.ws_url + created["ws"], max_queue=None, open_timeout=30) as ws:
            person = PEOPLE[game](ws, tally, rng, drawings)
            reader = asyncio.create_task(person.read())
            await asyncio.wait_for(person.got_state.wait(), 30)
            start.ready(seed)
            await start.go.wait()
            await asyncio.sleep(rng.random() * STROKE_PERIOD_S)  # tables do not all tick in step
            tick = time.monotonic()
            while tick < start.stop_at and not reader.done():
                tick += await person.act()
                await asyncio.sleep(max(0.0, tick - time.monotonic()))
            if reader.done() and time.monotonic() < start.stop_at:
                tally.failures["socket closed before the end"] += 1
            await _settle(person, reader)
    finally:
        start.ready(seed)  # a table that failed or was refused does not hold the others back


async def _settle(person: Person, reader: asyncio.Task[None]) -> None:
    """Let the last stroke's ack arrive (at most ``ACK_GRACE_S``), then stop reading."""
    end = time.monotonic() + ACK_GRACE_S
    while person.pending is not None and time.monotonic() < end and not reader.done():
        await asyncio.sleep(0.02)
    if person.pending is not None:
        person.tally.errors["no_ack"] += 1
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError, websockets.ConnectionClosed):
        await reader


async def bot_room(
    server: Server, http: httpx.AsyncClient, game: str, tally: Tally, start: Start, seed: int,
    drawings: list[list],
) -> None:
    """One bot room: rounds of real drawings at their recorded pace until the window closes."""
    rng = random.Random(seed)
    pending: dict[tuple[int, int], float] = {}  # (round, stroke count) -> when its stroke_end left
    ended: dict[tuple[int, int], float] = {}  # every stroke_end, for the guesses
    try:
        async with websockets.connect(server.ws_url + "/v1/bot", max_queue=None, open_timeout=30) as ws:
            await ws.send(json.dumps({"type": "hello", "versions": [1], "analysis": True}))
            welcome = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if welcome["type"] != "welcome":
                tally.refusals[welcome.get("code", welcome["type"])] += 1
                return

            async def reader() -> None:
                async for raw in ws:
                    received, frame = time.perf_counter(), json.loads(raw)
                    kind = frame["type"]
                    key = (frame.get("round"), frame.get("strokes"))
                    if kind == "analysis" and key in pending:
                        tally.acks.append(received - pending.pop(key))
                    elif kind == "guess" and key in ended:
                        tally.guesses.append(received - ended[key])
                    elif kind == "error":
                        tally.errors[frame.get("code", "?")] += 1

            listening = asyncio.create_task(reader())
            start.ready(seed)
            await start.go.wait()
            await asyncio.sleep(rng.random())  # rooms do not all start in step
            round_no = 0
            while time.monotonic() < start.stop_at and not listening.done():
                round_no += 1
                await ws.send(json.dumps({"type": "round_start", "round": round_no, "seed": seed}))
                for index, stroke in enumerate(rng.choice(drawings)):
                    if time.monotonic() >= start.stop_at:
                        break
                    await draw_stroke(ws, stroke)
                    tally.sent += 1
                    pending[round_no, index + 1] = ended[round_no, index + 1] = time.perf_counter()
                    await ws.send(json.dumps({"type": "stroke_end"}))
                    await asyncio.sleep(BOT_PAUSE_S)
                await asyncio.sleep(0.2)  # the last analysis arrives before the round ends
                await ws.send(json.dumps({"type": "round_end"}))
            if listening.done() and time.monotonic() < start.stop_at:
                tally.failures["socket closed before the end"] += 1
            end = time.monotonic() + ACK_GRACE_S
            while pending and time.monotonic() < end and not listening.done():
                await asyncio.sleep(0.02)
            if pending:
                tally.errors["no_ack"] += len(pending)
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.send(json.dumps({"type": "bye"}))
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError, websockets.ConnectionClosed):
                await listening
    finally:
        start.ready(seed)
