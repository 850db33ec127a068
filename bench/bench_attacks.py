"""The attacks of the security reports, at scale, against a real server (127.0.0.1 only, bounded).

One anonymous client must not slow down or lock out the others, however many addresses it uses.
Each scenario starts a fresh server (default settings, the shipped model); the attack comes from
other loopback addresses (Linux routes all of 127/8 to lo: other clients, same machine) while a
victim on 127.0.0.1 measures. The load scenarios time the victim alone and then under attack,
back to back on the same server, ``--repeat`` times, and print both p99s and their ratio (the
target: at most 3) with the load average (``uptime``) beside them:

- ``http``: a victim bot room sends a stroke every 0.3 s and times stroke→analysis while 30 HTTP
  clients, each from its own address (127.0.0.2-31), post the heaviest drawings allowed (zigzags
  of ``max_stroke_points`` per stroke up to ``max_points``) without pause.
- ``bots``: the same victim while 6 rooms send the heaviest strokes allowed.
- ``table``: three victim Pictomania tables (5 AI players each; the person draws a real
  drawing's 25-point strokes, one a second: ``bench.people``) time stroke→update while
  one client plays a Pictomania table at the maxima: 5 AI players, 1,000-point zigzag strokes
  sent 50 times a second (the per-client point budget and the frame rate cut in), a new game when
  one is full.
- ``slowloris``: 1,100 connections send half a request head; figures: still open after
  ``header_timeout_s`` + 2 s, ``/healthz`` latency meanwhile.
- ``bigframes``: 10 sockets each start a 15 MiB WebSocket message; figures: server RSS before,
  during and 3 s after (the target: back within 10 % of the baseline).
- ``sockets``: 1,000 sockets join one game; figures: accepted, ``/healthz`` latency.
- ``games``: 100 ``POST /v1/play`` from one client; figures: created, then whether another
  client still gets a game.

``nice -n 10 python -m bench.bench_attacks [--only http,table,...] [--seconds 8] [--repeat 3]
[--repo PATH]``: ``--repo`` runs another checkout (e.g. the code before the fixes) under the same
attacks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import queue
import random
import resource
import socket
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import websockets

from griffon.launch import REPO, Server, running_server, tuning

ATTACKER = "127.0.0.2"
HTTP_ATTACKERS = [f"127.0.0.{i}" for i in range(2, 32)]  # 30 addresses, one client each
SCENARIOS = ("http", "bots", "table", "slowloris", "bigframes", "sockets", "games")
LOAD_SCENARIOS = ("http", "bots", "table")
VICTIM_TABLES = 3
TABLE_POINTS = 1_000  # GRIFFON_MAX_STROKE_POINTS by default (service.settings.Settings.max_stroke_points)
TABLE_RATE = 50.0  # stroke frames a second from the table at the maxima (the frame limit is 60)
# ``table``: the victims start new games for each run and the attacker when one is full; games left
# behind expire within seconds (their AI players would otherwise go on playing for 15 minutes)
SCENARIO_ENV = {"table": {"GRIFFON_PLAY_GAMES_PER_CLIENT": "40", "GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR": "1000",
                          **tuning(**{"capacity.pictomania_table_cost": 0}),
                          "GRIFFON_PLAY_IDLE_EXPIRY_S": "3"}}


def zigzag(points: int, strokes: int = 1) -> list:
    """The costliest drawing to preprocess for its size: long segments back and forth."""
    per = max(2, points // strokes)
    return [[[float((i % 2) * 255) for i in range(per)], [float(i * 255 / per) for i in range(per)]]
            for _ in range(strokes)]


def walk_stroke(rng: np.random.Generator, n: int = 40) -> list:
    """A human-like stroke of ``n`` points."""
    x, y = np.cumsum(rng.normal(0, 4, n)) + 128, np.cumsum(rng.normal(0, 4, n)) + 128
    return [np.round(x, 1).tolist(), np.round(y, 1).tolist()]


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else math.nan


def server_rss_mb(server: Server) -> float:
    """Resident memory of the server process (MB), from /proc."""
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def limits(server: Server) -> tuple[int, int]:
    """(points per stroke, points per drawing) the server allows (old servers: 10,000 each)."""
    async def ask() -> dict:
        async with websockets.connect(server.ws_url + "/v1/bot") as ws:
            await ws.send(json.dumps({"type": "hello", "versions": [1]}))
            return json.loads(await ws.recv()).get("limits", {})

    found = asyncio.run(ask())
    total = int(found.get("max_points", 10_000))
    return int(found.get("max_stroke_points", total)), total


# -- victim room -----------------------------------------------------------------------------------
async def victim(url: str, seconds: float) -> dict:
    """One room on 127.0.0.1: a stroke every 0.3 s, stroke→analysis latency."""
    rng, latencies, sent, lost = np.random.default_rng(0), [], 0, False
    stop = time.monotonic() + seconds
    try:
        async with websockets.connect(url, open_timeout=30, ping_interval=None) as ws:
            await ws.send(json.dumps({"type": "hello", "versions": [1], "analysis": True}))
            await ws.recv()
            round_no = 0
            while time.monotonic() < stop:
                round_no += 1
                await ws.send(json.dumps({"type": "round_start", "round": round_no}))
                await ws.recv()
                for _ in range(15):
                    if time.monotonic() >= stop:
                        break
                    latency = await _one_stroke(ws, walk_stroke(rng), stop)
                    sent += 1
                    if latency is not None:
                        latencies.append(latency)
                    await asyncio.sleep(0.3)
                await ws.send(json.dumps({"type": "round_end"}))
    except (websockets.ConnectionClosed, OSError, TimeoutError):
        lost = True
    return {"sent": sent, "answered": len(latencies), "p50_ms": round(percentile(latencies, 50), 1),
            "p99_ms": round(percentile(latencies, 99), 1), "connection_lost": lost}


async def _one_stroke(ws: websockets.ClientConnection, stroke: list, stop: float) -> float | None:
    """Send a stroke; milliseconds until its analysis (None: an error, or no answer by ``stop``)."""
    started = time.perf_counter()
    await ws.send(json.dumps({"type": "stroke", "stroke": stroke}))
    try:
        while True:
            left = max(0.1, stop - time.monotonic())
            frame = json.loads(await asyncio.wait_for(ws.recv(), left))
            if frame["type"] == "analysis":
                return (time.perf_counter() - started) * 1000
            if frame["type"] == "error":
                return None
    except TimeoutError:
        return None


async def http_attacker(
    server: Server | Target, drawing: list, stop: float, counts: dict, address: str,
) -> None:
    """One anonymous client from ``address``: the heaviest drawing, again as soon as answered."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport, base_url=server.url, timeout=30) as client:
        while time.monotonic() < stop:
            try:
                response = await client.post("/v1/guess", json={"drawing": drawing})
                counts[response.status_code] = counts.get(response.status_code, 0) + 1
                if response.status_code == 429:
                    await asyncio.sleep(float(response.headers.get("retry-after", "1")))
            except httpx.HTTPError:
                counts["error"] = counts.get("error", 0) + 1


async def bot_attacker(server: Server | Target, stroke: list, stop: float, counts: dict) -> None:
    sock = socket.socket()
    sock.bind((ATTACKER, 0))
    sock.connect(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
    async with websockets.connect(server.ws_url + "/v1/bot", sock=sock, max_size=None) as ws:
        await ws.send(json.dumps({"type": "hello", "versions": [1], "analysis": True}))
        await ws.recv()
        await ws.send(json.dumps({"type": "round_start", "round": 1}))
        await ws.recv()
        while time.monotonic() < stop:
            await ws.send(json.dumps({"type": "stroke", "stroke": stroke}))
            try:
                frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, stop - time.monotonic())))
            except TimeoutError:
                return
            counts[frame.get("code", frame["type"])] = counts.get(frame.get("code", frame["type"]), 0) + 1
            if frame["type"] == "analysis":
                await ws.send(json.dumps({"type": "undo"}))  # keep the drawing under max_points
                await ws.recv()
            elif frame.get("code") == "rate_limited":
                await asyncio.sleep(0.5)


# -- tables ------------------------------------------------------------------------------------------
def table_stroke(rng: random.Random, points: int = TABLE_POINTS) -> list[list[float]]:
    """The costliest stroke a person may send: ``points`` points zigzagging across the canvas."""
    return [[round(rng.uniform(0, 255), 1), round(rng.uniform(0, 255), 1)] for _ in range(points)]


async def victim_tables(server: Server, seconds: float, drawings: list[list], seed: int) -> dict:
    """``VICTIM_TABLES`` Pictomania tables from 127.0.0.1 (``bench.people``'s scripted
    person): stroke→update latency."""
    from bench.people import Start, Tally, percentiles_ms, person_table

    tally, start = Tally(), Start(VICTIM_TABLES)
    async with httpx.AsyncClient() as http:
        tables = [asyncio.create_task(person_table(server, http, "pictomania", tally, start, seed + i,
                                                   drawings)) for i in range(VICTIM_TABLES)]
        await asyncio.wait_for(start.all_ready.wait(), 120)
        start.stop_at = time.monotonic() + seconds
        start.go.set()
        await asyncio.gather(*tables, return_exceptions=True)
    p50, p99, _ = percentiles_ms(tally.acks)
    return {"sent": tally.sent, "answered": len(tally.acks), "p50_ms": round(p50, 1), "p99_ms": round(p99, 1),
            "errors": dict(tally.errors), "failures": dict(tally.failures)}


async def table_attacker(server: Server | Target, stop: float, counts: Counter[str]) -> None:
    """One client from ATTACKER playing Pictomania at the maxima: 5 AI players, the heaviest strokes
    as fast as the frame limit lets through, the next round at once, a new game when one is full."""
    rng = random.Random(7)
    strokes = [json.dumps({"type": "move", "move": {"kind": "stroke", "points": table_stroke(rng)}})
               for _ in range(20)]  # made once: the attacker's own CPU goes to sending
    transport = httpx.AsyncHTTPTransport(local_address=ATTACKER)
    async with httpx.AsyncClient(transport=transport, base_url=server.url, timeout=30) as http:
        while time.monotonic() < stop:
            created = await http.post("/v1/play", json={"game": "pictomania", "opponents": 5})
            counts[f"new game {created.status_code}"] += 1
            if created.status_code != 201:
                await asyncio.sleep(1.0)
                continue
            sock = socket.socket()
            sock.bind((ATTACKER, 0))
            sock.connect(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
            async with websockets.connect(server.ws_url + created.json()["ws"], sock=sock,
                                          max_size=None, max_queue=None) as ws:
                await _flood_table(ws, stop, counts, strokes)


async def _flood_table(ws: Any, stop: float, counts: Counter[str], strokes: list[str]) -> None:
    phase, full = ["playing"], asyncio.Event()

    async def read() -> None:
        async for raw in ws:
            frame = json.loads(raw)
            if frame["type"] == "state":
                phase[0] = frame["state"].get("phase", phase[0])
            elif frame["type"] == "update":
                phase[0] = frame["set"].get("phase", phase[0])
            elif frame["type"] == "error":
                counts[frame.get("code", "?")] += 1
                if frame.get("code") == "game_too_long":
                    full.set()

    reader = asyncio.create_task(read())
    try:
        while time.monotonic() < stop and not full.is_set() and not reader.done():
            if phase[0] == "game_over":
                return
            if phase[0] == "scored":
                await ws.send(json.dumps({"type": "move", "move": {"kind": "next_round"}}))
            else:
                await ws.send(strokes[counts["frames"] % len(strokes)])
            counts["frames"] += 1
            await asyncio.sleep(1.0 / TABLE_RATE)
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


# -- the load scenarios: the victim alone, then attacked, back to back -------------------------------
def load_average() -> float:
    """The 1-minute load average (what ``uptime`` prints first)."""
    return round(os.getloadavg()[0], 2)


@dataclass(frozen=True)
class Target:
    """What the attackers need of a server (picklable: they run in another process)."""

    url: str
    ws_url: str


def attack_process(kind: str, target: Target, seconds: float, per_stroke: int, total: int,
                   results: Any) -> None:
    """Run one attack for ``seconds`` (in its own process, so that its CPU does not slow the
    victim's measurements); puts what the attackers got on ``results``."""
    counts: Counter[str] = Counter()
    stop = time.monotonic() + seconds

    async def run() -> None:
        if kind == "http":
            drawing = zigzag(total, max(1, math.ceil(total / per_stroke)))
            attackers = [http_attacker(target, drawing, stop, counts, a) for a in HTTP_ATTACKERS]
        elif kind == "bots":
            attackers = [bot_attacker(target, zigzag(per_stroke)[0], stop, counts) for _ in range(6)]
        else:
            attackers = [table_attacker(target, stop, counts)]
        tasks = [asyncio.create_task(a) for a in attackers]
        await asyncio.wait(tasks, timeout=seconds + 10.0)  # bounded: a stuck attacker is abandoned
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(run())
    results.put({str(k): v for k, v in counts.items()})


def load_scenario(server: Server, kind: str, seconds: float, repeat: int = 1) -> dict:
    """``repeat`` pairs of (victim alone, victim attacked), each with its p99 ratio."""
    url = server.ws_url + "/v1/bot"
    per_stroke, total = limits(server)
    target = Target(server.url, server.ws_url)
    drawings: list[list] = []
    if kind == "table":
        from bench.people import load_drawings

        drawings = load_drawings()

    async def victim_run(seed: int) -> dict:
        if kind == "table":
            return await victim_tables(server, seconds, drawings, seed)
        return await victim(url, seconds)

    def one(seed: int) -> dict:
        load_before = load_average()
        alone = asyncio.run(victim_run(seed))
        spawn = multiprocessing.get_context("spawn")
        results = spawn.Queue()
        warm = 4.0 if kind == "table" else 2.0  # the attack under way (and its process started)
        attack = spawn.Process(target=attack_process, daemon=True,
                               args=(kind, target, seconds + warm + 6.0, per_stroke, total, results))
        attack.start()
        time.sleep(warm)
        attacked = asyncio.run(victim_run(seed + 100))
        load_during = load_average()
        try:
            counts = results.get(timeout=seconds + 40.0)
        except queue.Empty:
            counts = {"no report": 1}
        attack.join(10.0)
        if attack.is_alive():
            attack.kill()
        ratio = attacked["p99_ms"] / alone["p99_ms"] if alone["p99_ms"] > 0 else math.nan
        inference = httpx.get(server.url + "/healthz", timeout=30).json()["inference"]  # batches so far
        return {"alone": alone, "attacked": attacked, "p99_ratio": round(ratio, 2), "attacker": counts,
                "load_before": load_before, "load_attacked": load_during,
                "batches": {k: inference[k] for k in ("images", "batches", "mean_batch", "largest_batch")}}

    runs = [one(1000 * i) for i in range(repeat)]
    return {"runs": runs, "p99_ratios": [r["p99_ratio"] for r in runs], "per_stroke": per_stroke,
            "per_drawing": total}


# -- connection-level attacks ----------------------------------------------------------------------
def slowloris(server: Server, count: int = 1100) -> dict:
    port = int(server.url.rsplit(":", 1)[1])
    sockets, refused = [], 0
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=(ATTACKER, 0))
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            sockets.append(sock)
        except OSError:
            refused += 1
    health = []
    for _ in range(10):
        started = time.perf_counter()
        try:
            ok = httpx.get(server.url + "/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            ok = False
        health.append((time.perf_counter() - started) * 1000 if ok else math.inf)
        time.sleep(0.1)
    time.sleep(12.0)  # the default header timeout is 10 s
    still_open = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            data = sock.recv(1)
            still_open += 0 if data == b"" or data == b"H" else 1  # b"H": the 408 answer
        except BlockingIOError:
            still_open += 1
        except OSError:
            pass
        sock.close()
    failed = sum(math.isinf(h) for h in health)
    return {"opened": len(sockets), "refused_at_connect": refused, "open_after_12s": still_open,
            "healthz_ms_median": round(statistics.median(health), 1), "healthz_failed": failed}


def bigframes(server: Server, sockets: int = 10, size: int = 15 * 2**20) -> dict:
    baseline = server_rss_mb(server)

    async def attack() -> tuple[float, list[str]]:
        outcomes, conns = [], []
        for _ in range(sockets):
            ws = await websockets.connect(server.ws_url + "/v1/bot", max_size=None)
            conns.append(ws)
        chunk = b"x" * 2**20
        header = bytes([0x81, 0x80 | 127]) + size.to_bytes(8, "big") + b"\0\0\0\0"  # masked, key 0
        for ws in conns:
            try:
                ws.transport.write(header)
                for _ in range(size // len(chunk) - 1):  # all but the last MiB: unfinished
                    ws.transport.write(chunk)
                    await asyncio.sleep(0)
            except Exception as error:  # the server may cut us off
                outcomes.append(type(error).__name__)
        await asyncio.sleep(3.0)
        during = server_rss_mb(server)
        for ws in conns:
            outcomes.append("closed" if ws.transport.is_closing() else "open")
            ws.transport.abort()
        return during, outcomes

    during, outcomes = asyncio.run(attack())
    time.sleep(3.0)
    after = server_rss_mb(server)
    return {"rss_baseline_mb": round(baseline, 1), "rss_during_mb": round(during, 1),
            "rss_after_mb": round(after, 1), "after_vs_baseline": round(after / baseline - 1, 3),
            "sockets": {o: outcomes.count(o) for o in set(outcomes)}}


def game_sockets(server: Server, count: int = 1000) -> dict:
    game = httpx.post(server.url + "/v1/play", json={"game": "kontour", "opponents": 1}, timeout=10).json()

    async def attack() -> dict:
        accepted, refused, conns = 0, 0, []
        for _ in range(count):
            try:
                sock = socket.socket()
                sock.bind((ATTACKER, 0))
                sock.connect(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
                ws = await websockets.connect(server.ws_url + game["ws"], sock=sock, open_timeout=5)
                frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
                if frame["type"] == "state":
                    accepted += 1
                    conns.append(ws)
                else:
                    refused += 1
                    await ws.close()
            except (OSError, TimeoutError, websockets.WebSocketException):
                refused += 1
        async with httpx.AsyncClient(base_url=server.url) as client:
            started = time.perf_counter()
            await client.get("/healthz")
            health = (time.perf_counter() - started) * 1000
        for ws in conns:
            ws.transport.abort()
        return {"accepted": accepted, "refused": refused, "healthz_ms": round(health, 1)}

    return asyncio.run(attack())


def game_spam(server: Server, count: int = 100) -> dict:
    statuses: dict = {}
    with httpx.Client(transport=httpx.HTTPTransport(local_address=ATTACKER), base_url=server.url,
                      timeout=10) as attacker:
        for _ in range(count):
            code = attacker.post("/v1/play", json={"game": "kontour", "opponents": 1}).status_code
            statuses[code] = statuses.get(code, 0) + 1
    other = httpx.post(server.url + "/v1/play", json={"game": "kontour", "opponents": 1}, timeout=10)
    return {"attacker": statuses, "another_client": other.status_code}


def main(argv: list[str] | None = None) -> None:
    """Run the chosen scenarios, each on a fresh server, printing one JSON line each."""
    parser = argparse.ArgumentParser(description="the security report's attacks, measured")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    parser.add_argument("--seconds", type=float, default=8.0, help="victim time alone / attacked")
    parser.add_argument("--repeat", type=int, default=1, help="alone/attacked pairs per load scenario")
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout to run (before/after)")
    parser.add_argument("--workers", type=int, default=1,
                        help="the server's worker processes (`griffon serve` runs one per core)")
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for name in args.only.split(","):
        started = time.monotonic()
        with running_server(SCENARIO_ENV.get(name, {}), repo=args.repo, workers=args.workers) as server:
            if name in LOAD_SCENARIOS:
                result = load_scenario(server, name, args.seconds, args.repeat)
            else:
                result = {"slowloris": slowloris, "bigframes": bigframes, "sockets": game_sockets,
                          "games": game_spam}[name](server)
        print(json.dumps({"scenario": name, "repo": str(args.repo), "workers": args.workers, **result,
                          "wall_s": round(time.monotonic() - started, 1)}), flush=True)


if __name__ == "__main__":
    main()
