"""Pictomania play frames: what one move costs the server, with full-state frames and with updates.

1. **In process** (`frames`): a game whose person has drawn 10, 100, 300 strokes of 1,000 points;
   the time to build and JSON-encode the frame sent after one more stroke, and its bytes: the
   whole state (``session.frame``, what every move sent before the update frames) against the
   update (``session.update``). Median of 7.
2. **Real server** (`server`): ``python -m griffon.serve`` on 127.0.0.1 (the shipped model),
   one Pictomania game against 2 AIs; one socket sends 150 strokes of 1,000 points in 4 s (under
   the 60 frames/s limit) and reads every frame, while ``/healthz`` is polled every 50 ms until
   the 150 strokes are acknowledged (at most 60 s). Figures: ``/healthz`` p50 / max, time until the
   last stroke came back, bytes received, server RSS before and 3 s after.
   ``--repo PATH`` runs another checkout (e.g. ``git archive b289e8d``: full-state frames) there.

3. **Event loop** (`loop`): in process, the game of part 1 with the default play settings; the
   person sends 1,000-point strokes of random points (``bench.bench_attacks``'s table at the
   maxima) until the game's log is full; per stroke, the synchronous work a server's loop does:
   the frame read and applied (``handle_text``: checks, rules, the AI players' reaction, the
   update built) and every frame it queued encoded. Median, p90 and max, in ms.
4. **Stored** (`stored`): in process, a Pictomania game with a SQLite store (the move writer's
   thread beside the loop); the person sends 150 strokes of 1,000 random points; per stroke, the
   loop's time to read and apply its frame (``handle_text``: the move encoded once, handed to the
   writer), median, p90, max and sum, and the time until all are written.

``python -m bench.bench_play_frames [--only frames,server,loop,stored] [--repo PATH]`` (bounded, local).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

from games.ai.levels import load_level
from games.pictomania import PictomaniaRules
from griffon.launch import REPO, running_server
from service.play.manager import game_configs
from service.play.settings import PlaySettings
from service.play.table import HUMAN, Collaborators, PictomaniaSession, Seating
from service.play.table_words import load_words, pictomania_deck
from service.ratelimit import RateLimit

CHECKPOINTS = (10, 100, 300)
SERVER_STROKES, SEND_S, POINTS = 150, 4.0, 1_000


async def uniform(drawing: list[Any], candidates: Any) -> dict[str, float]:
    """A recognizer that reads nothing (the in-process part measures frames, not the model)."""
    return {c: 1 / len(candidates) for c in candidates}


BIG_LOG = PlaySettings(max_log_bytes=16 * 1024 * 1024)  # 300 strokes of 1,000 points: about 3 MB


def pictomania_session(
    seed: int = 3, play: PlaySettings = BIG_LOG, loop_budget: RateLimit | None = None
) -> PictomaniaSession:
    """A 3-player game (the person and two AIs) whose driver is not started: only the moves the
    caller makes happen (through the session's one update path). By default its log may hold 300
    strokes of 1,000 points (a game's default bound is 2 MiB); the tests of frames use this too.
    ``loop_budget``: its share of the event loop (None: unbounded)."""
    words = load_words(None)
    _, config = game_configs(play)
    deck, config = pictomania_deck(words, config, seed)
    rules = PictomaniaRules(config)
    names = {HUMAN: "Ana", "ia1": "Plume", "ia2": "Fusain"}
    state, _ = rules.setup(players=list(names), deck=deck, seed=seed)
    return PictomaniaSession(
        rules, state, game_id="g", seating=Seating(names, load_level("normal"), token="t"), seed=seed,
        words=words, recognize=uniform, labels=frozenset(), play=play,
        collaborators=Collaborators(loop_budget=loop_budget),
    )


def stroke(i: int, n: int) -> str:
    """The play socket's frame for stroke ``i`` of the person: ``n`` points."""
    points = [[20 + (k % 200), 20 + (i + k) % 200] for k in range(n)]
    return json.dumps({"type": "move", "move": {"kind": "stroke", "points": points}})


def drain(queue: asyncio.Queue[Any]) -> list[dict[str, Any]]:
    """Every frame waiting in a session's queue."""
    frames = []
    while not queue.empty():
        frames.append(queue.get_nowait())
    return frames


def timed(build: Any, repeat: int = 7) -> tuple[float, int]:
    """(median ms, bytes) of building and encoding one frame."""
    times, size = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        size = len(json.dumps(build()))
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), size


def bench_frames() -> None:
    """Frame build time and bytes at 10 / 100 / 300 strokes, full state against update."""

    async def run() -> None:
        session = pictomania_session()
        queue = session.attach()
        head = ("strokes", "full ms", "full bytes", "update ms", "update bytes", "time ratio")
        print("{:>8} {:>9} {:>11} {:>10} {:>13} {:>11}".format(*head))
        drawn = 0
        for n in CHECKPOINTS:
            while drawn < n - 1:
                drawn += 1
                session.human_move(json.loads(stroke(drawn, POINTS))["move"])
                await asyncio.sleep(0)
            drain(queue)
            before = session.state
            move = dict(json.loads(stroke(n, POINTS))["move"], player="joueur")
            events = session.apply(session.parse(move))
            drawn = n
            drain(queue)
            full_ms, full_b = timed(lambda: session.frame(events))  # noqa: B023
            upd_ms, upd_b = timed(lambda: session.update(before, events))  # noqa: B023
            ratio = full_ms / upd_ms
            print(f"{n:>8} {full_ms:>9.2f} {full_b:>11,} {upd_ms:>10.3f} {upd_b:>13,} {ratio:>10.0f}x")
        await session.close()

    asyncio.run(run())


def bench_loop() -> None:
    """The event loop's work per 1,000-point stroke, from the first stroke to a full game log."""
    from bench.bench_attacks import table_stroke
    from service.play.sockets import encode_frame, handle_text

    async def run() -> list[float]:
        session = pictomania_session(play=PlaySettings())
        queue = session.attach()
        rng = random.Random(7)
        frames = [json.dumps({"type": "move", "move": {"kind": "stroke", "points": table_stroke(rng)}})
                  for _ in range(20)]
        gc.collect()
        gc.freeze()  # as griffon serve does after start-up
        spent = []
        for i in range(1_000):
            started = time.perf_counter()
            refused = handle_text(session, frames[i % len(frames)])
            if refused is not None:  # game_too_long: the log is full
                break
            for frame in drain(queue):
                encode_frame(frame)
            spent.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0)  # the recognitions the AI players asked for
        await session.close()
        return spent

    spent = sorted(asyncio.run(run()))
    p90 = spent[int(len(spent) * 0.9)]
    print(f"{len(spent)} strokes of 1,000 points until the log is full: loop work per stroke "
          f"median {statistics.median(spent):.2f} ms, p90 {p90:.2f} ms, max {spent[-1]:.2f} ms")


def bench_stored(strokes: int = SERVER_STROKES) -> None:
    """The loop's time per stroke and until written, with a SQLite store (part 4)."""
    import tempfile

    from service.play.clock import ManualClock
    from service.play.manager import GameManager
    from service.settings import Settings
    from store import open_store

    rng = random.Random(1)
    frames = [json.dumps({"type": "move", "move": {"kind": "stroke", "points": [
        [round(rng.uniform(0, 255), 1), round(rng.uniform(0, 255), 1)] for _ in range(POINTS)]}})
        for _ in range(strokes)]

    async def run() -> tuple[list[float], float]:
        with tempfile.TemporaryDirectory() as folder:
            db = open_store(f"sqlite:///{Path(folder) / 'griffon.db'}")
            games = GameManager(Settings(), BIG_LOG, lambda key: uniform, frozenset(), db,
                                clock=ManualClock())
            session = games.create("pictomania", opponents=2, level="normal", name="Ana", seed=3)
            assert session.driver is not None
            session.driver.cancel()  # only the person's moves
            spent = []
            started = time.perf_counter()
            for i, text in enumerate(frames):
                t0 = time.perf_counter()
                refused = handle_text(session, text)
                spent.append((time.perf_counter() - t0) * 1000)
                assert refused is None, refused
                if i % 10 == 9:
                    await asyncio.sleep(0)  # the writer's answers reach the game
            await games.settle()
            written = time.perf_counter() - started
            await games.aclose()
            db.close()
        return spent, written

    from service.play.sockets import handle_text

    spent, written = asyncio.run(run())
    spent.sort()
    print(f"{strokes} strokes of {POINTS} points, SQLite store: loop work per stroke median "
          f"{statistics.median(spent):.2f} ms, p90 {spent[int(len(spent) * 0.9)]:.2f} ms, "
          f"max {spent[-1]:.1f} ms, sum {sum(spent) / 1000:.2f} s; all written after {written:.2f} s")


def rss_mb(pid: int) -> float:
    """Resident memory of a process (MB), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def person_strokes(frame: dict[str, Any]) -> int:
    """How many of the person's strokes a frame acknowledges."""
    return sum(e["kind"] == "stroke_drawn" and e["player"] == "joueur" for e in frame.get("events", []))


async def flood(url: str, ws_url: str) -> dict[str, float]:
    async with httpx.AsyncClient(timeout=30) as http:
        body = {"game": "pictomania", "opponents": 2, "seed": 3}
        game = (await http.post(url + "/v1/play", json=body)).json()
        latencies: list[float] = []
        received = {"bytes": 0, "frames": 0, "mine": 0}
        done = asyncio.Event()

        async def poll() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                await http.get(url + "/healthz")
                latencies.append(time.perf_counter() - t0)
                await asyncio.sleep(0.05)

        async with websockets.connect(ws_url + game["ws"], max_size=None) as ws:
            start = time.perf_counter()

            async def read() -> None:
                async for message in ws:
                    received["bytes"] += len(message)
                    received["frames"] += 1
                    received["mine"] += person_strokes(json.loads(message))
                    if received["mine"] >= SERVER_STROKES:
                        done.set()
                        return

            poller, reader = asyncio.create_task(poll()), asyncio.create_task(read())
            for i in range(SERVER_STROKES):
                await ws.send(stroke(i, POINTS))
                await asyncio.sleep(SEND_S / SERVER_STROKES)
            sent_s = time.perf_counter() - start
            try:
                await asyncio.wait_for(done.wait(), 60)
            except TimeoutError:
                pass
            back_s = time.perf_counter() - start
            done.set()
            reader.cancel()
            await poller
    return {"sent_s": sent_s, "back_s": back_s, "acked": received["mine"], "frames": received["frames"],
            "mb": received["bytes"] / 1e6, "p50": statistics.median(latencies) * 1000,
            "max": max(latencies) * 1000, "polls": len(latencies)}


def bench_server(repo: Path) -> None:
    """/healthz latency and RSS while one socket sends 150 strokes of 1,000 points in 4 s."""
    with running_server({"GRIFFON_PLAY_GAMES_PER_CLIENT": "10"}, repo=repo) as server:
        pid = server.process.pid
        time.sleep(1.0)
        before = rss_mb(pid)
        r = asyncio.run(flood(server.url, server.ws_url))
        time.sleep(3.0)
        after = rss_mb(pid)
    print(f"checkout {repo}: {SERVER_STROKES} strokes of {POINTS} points sent in {r['sent_s']:.1f} s; "
          f"{r['acked']:.0f} acknowledged after {r['back_s']:.1f} s; {r['frames']:.0f} frames, "
          f"{r['mb']:.1f} MB received")
    print(f"  /healthz: p50 {r['p50']:.1f} ms, max {r['max']:.0f} ms ({r['polls']:.0f} polls); "
          f"server RSS {before:.0f} MB before, {after:.0f} MB 3 s after")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="frames,server,loop,stored",
                        help="frames, server, loop, stored (comma-separated)")
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout to run the server from")
    args = parser.parse_args(argv)
    chosen = args.only.split(",")
    if "frames" in chosen:
        bench_frames()
    if "server" in chosen:
        bench_server(args.repo)
    if "loop" in chosen:
        bench_loop()
    if "stored" in chosen:
        bench_stored()


if __name__ == "__main__":
    main()
