"""The attacks of the security report, at scale, against a real server (127.0.0.1 only, bounded).

One anonymous client must not slow down or lock out the others. Each scenario starts a fresh
server (default settings, the shipped model), plays the attack from 127.0.0.2 (another loopback
address, so per-client budgets see another client) while a victim on 127.0.0.1 measures:

- ``http`` / ``bots``: a victim bot room sends a stroke every 0.3 s and times stroke→analysis,
  alone, then while 30 HTTP clients post the heaviest drawings allowed (zigzags of
  ``max_stroke_points`` per stroke up to ``max_points``), or while 6 rooms send the heaviest
  strokes allowed. Figures: victim p50/p99, strokes unanswered.
- ``slowloris``: 1,100 connections send half a request head; figures: still open after
  ``header_timeout_s`` + 2 s, ``/healthz`` latency meanwhile.
- ``bigframes``: 10 sockets each start a 15 MiB WebSocket message; figures: server RSS before,
  during and 3 s after (the target: back within 10 % of the baseline).
- ``sockets``: 1,000 sockets join one game; figures: accepted, ``/healthz`` latency.
- ``games``: 100 ``POST /v1/play`` from one client; figures: created, then whether another
  client still gets a game.

``python -m bench.bench_attacks [--only http,bots,...] [--seconds 8] [--repo PATH]``: ``--repo``
runs another checkout (e.g. the code before the fixes) under the same attacks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import resource
import socket
import statistics
import time
from pathlib import Path

import httpx
import numpy as np
import websockets

from griffon.launch import REPO, Server, running_server

ATTACKER = "127.0.0.2"
SCENARIOS = ("http", "bots", "slowloris", "bigframes", "sockets", "games")


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


async def http_attacker(server: Server, drawing: list, stop: float, counts: dict) -> None:
    transport = httpx.AsyncHTTPTransport(local_address=ATTACKER)
    async with httpx.AsyncClient(transport=transport, base_url=server.url, timeout=30) as client:
        while time.monotonic() < stop:
            try:
                response = await client.post("/v1/guess", json={"drawing": drawing})
                counts[response.status_code] = counts.get(response.status_code, 0) + 1
                if response.status_code == 429:
                    await asyncio.sleep(float(response.headers.get("retry-after", "1")))
            except httpx.HTTPError:
                counts["error"] = counts.get("error", 0) + 1


async def bot_attacker(server: Server, stroke: list, stop: float, counts: dict) -> None:
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


def load_scenario(server: Server, kind: str, seconds: float) -> dict:
    url = server.ws_url + "/v1/bot"
    per_stroke, total = limits(server)

    async def run() -> tuple[dict, dict, dict]:
        alone = await victim(url, seconds)
        counts: dict = {}
        stop = time.monotonic() + seconds + 1
        if kind == "http":
            drawing = zigzag(total, max(1, math.ceil(total / per_stroke)))
            attackers = [http_attacker(server, drawing, stop, counts) for _ in range(30)]
        else:
            attackers = [bot_attacker(server, zigzag(per_stroke)[0], stop, counts) for _ in range(6)]
        tasks = [asyncio.create_task(a) for a in attackers]
        await asyncio.sleep(1.0)
        attacked = await victim(url, seconds)
        await asyncio.wait(tasks, timeout=5.0)  # bounded: a stuck attacker is abandoned
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return alone, attacked, counts

    alone, attacked, counts = asyncio.run(run())
    return {"alone": alone, "attacked": attacked, "attacker": counts, "per_stroke": per_stroke,
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
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout to run (before/after)")
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for name in args.only.split(","):
        started = time.monotonic()
        with running_server({}, repo=args.repo) as server:
            if name in ("http", "bots"):
                result = load_scenario(server, name, args.seconds)
            else:
                result = {"slowloris": slowloris, "bigframes": bigframes, "sockets": game_sockets,
                          "games": game_spam}[name](server)
        print(json.dumps({"scenario": name, "repo": str(args.repo), **result,
                          "wall_s": round(time.monotonic() - started, 1)}), flush=True)


if __name__ == "__main__":
    main()
