"""Replicas behind HAProxy on one PostgreSQL database: what they carry, and what a kill costs.

Two parts, each on this machine's 127.0.0.1 (``griffon.launch``: a throw-away PostgreSQL, ``griffon
serve`` replicas, deploy/haproxy.cfg in front):

- **capacity** (``--levels``): for each N, N tables of ``--game`` played through HAProxy for
  ``--seconds`` (``bench.people``'s scripted people: a 25-point stroke a second), first on
  one replica, then on ``--replicas`` replicas, each level on a fresh database and fresh replicas:
  the person's stroke-ack p50 / p99 / max, the replicas' CPU added up, errors and refusals.
- **fail-over** (``--kills``): ``--tables`` Pictomania tables (long rounds) on ``--replicas``
  replicas, each played by a person who draws a stroke a second and reconnects as the page does
  (0.5 s, then 1, 1.5... up to 2.5 s between tries). Each kill: SIGKILL to the replica holding the
  most tables; the fail-over time of a table is from the kill to the game's state on its page again
  (the lease's expiry, the take-over from the log, the page's next try); then the replica is started
  again. At the end, every stroke the server acknowledged is looked up in the stored logs: **moves
  lost** counts the missing ones.

``python -m bench.bench_replicas [--replicas 3] [--game pictomania] [--levels 4,8,16] [--seconds 10]
[--kills 10] [--tables 12] [--json OUT]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import websockets

from bench.bench_capacity import GAMES, TABLES, parse_levels, process_cpu, server_env
from bench.people import Start, Tally, load_drawings, percentiles_ms
from griffon.launch import Replicas, Server, running_haproxy, running_postgres, running_replicas, tuned
from store import Store, open_store

LONG_ROUND = {"pictomania_round_s": 1200, "max_pictomania_strokes": 1000}  # tuning fields
PERSON = "joueur"


@contextmanager
def cluster(count: int, env: dict[str, str]) -> Iterator[tuple[Replicas, Server]]:
    """A fresh database, ``count`` replicas and HAProxy; yields the replicas and a `Server` whose URL
    is HAProxy's (its process: the first replica's, for `bench.bench_capacity`)."""
    with running_postgres(durable=True) as database, running_replicas(count, database, env) as replicas:
        with running_haproxy(replicas.ports) as url:
            first = replicas.servers[0]
            yield replicas, Server(url, url.replace("http://", "ws://"), first.process, first.log_path)


# -- capacity ---------------------------------------------------------------------------------------


async def play_level(front: Server, replicas: Replicas, game: str, tables: int, seconds: float,
                     drawings: list[list]) -> dict[str, Any]:
    """``tables`` tables of ``game`` through HAProxy for ``seconds``: acks, CPU of every replica."""
    tally, start = Tally(), Start(tables)
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=16)) as http:
        running = [asyncio.create_task(TABLES[game](front, http, game, tally, start, seed, drawings))
                   for seed in range(tables)]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(start.all_ready.wait(), 120)
        pids = [s.process.pid for s in replicas.servers.values()]
        cpu_before, at, load = sum(process_cpu(p) for p in pids), time.monotonic(), os.getloadavg()[0]
        start.stop_at = time.monotonic() + seconds
        start.go.set()
        await asyncio.sleep(seconds)
        cores = (sum(process_cpu(p) for p in pids) - cpu_before) / (time.monotonic() - at)
        results = await asyncio.gather(*running, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            tally.failures[type(result).__name__] += 1
    p50, p99, worst = percentiles_ms(tally.acks)
    return {"game": game, "tables": tables, "replicas": len(pids), "strokes_sent": tally.sent,
            "strokes_acked": len(tally.acks), "ack_p50_ms": p50, "ack_p99_ms": p99, "ack_max_ms": worst,
            "cores": cores, "errors": dict(tally.errors), "refusals": dict(tally.refusals),
            "failures": dict(tally.failures), "load_start": load, "load_end": os.getloadavg()[0]}


def capacity(args: argparse.Namespace, drawings: list[list]) -> list[dict[str, Any]]:
    rows = []
    for tables in args.levels:
        for count in (1, args.replicas):
            env = {**server_env(args.game, tables), "GRIFFON_CAPACITY_CORES": "64"}
            with cluster(count, env) as (replicas, front):
                row = asyncio.run(play_level(front, replicas, args.game, tables, args.seconds, drawings))
            rows.append(row)
            problems = {k: v for part in ("errors", "refusals", "failures") for k, v in row[part].items()}
            print(f"{args.game:<10} N={tables:3d}  replicas {count}  acked {row['strokes_acked']:5d}/"
                  f"{row['strokes_sent']:<5d}  ack p50/p99/max {row['ack_p50_ms']:.0f} / "
                  f"{row['ack_p99_ms']:.0f} / {row['ack_max_ms']:.0f} ms  cores {row['cores']:.2f}  "
                  f"problems {problems}  load {row['load_start']:.1f}→{row['load_end']:.1f}", flush=True)
    return rows


# -- fail-over --------------------------------------------------------------------------------------


@dataclass
class Table:
    """One table's person: strokes acknowledged, and when the page had the game again."""

    game_id: str
    ws_path: str
    acked: list[list[list[float]]] = field(default_factory=list)
    pending: list[list[float]] | None = None
    back_at: float = 0.0  # monotonic time of the last state frame (a (re)connection)
    reconnects: int = 0


async def person(front: Server, table: Table, rng: random.Random, stop: asyncio.Event) -> None:
    """Draw a stroke a second; reconnect as the page does when the socket closes."""
    retry = 0
    while not stop.is_set():
        try:
            async with websockets.connect(front.ws_url + table.ws_path, open_timeout=10,
                                          max_queue=None) as ws:
                retry = 0
                reader = asyncio.create_task(read(ws, table))
                while not stop.is_set() and not reader.done():
                    if table.pending is None and table.back_at:
                        table.pending = [[round(rng.uniform(10, 245), 1), round(rng.uniform(10, 245), 1)]
                                         for _ in range(5)]
                        await ws.send(json.dumps({"type": "move", "move": {"kind": "stroke",
                                                                           "points": table.pending}}))
                    await asyncio.sleep(1.0)
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, websockets.WebSocketException):
                    await reader
        except (OSError, TimeoutError, websockets.WebSocketException):
            pass
        table.pending = None  # unacknowledged: the person draws it again
        retry = min(retry + 1, 5)
        table.reconnects += 1
        await asyncio.sleep(0.5 * retry)


async def read(ws: Any, table: Table) -> None:
    with contextlib.suppress(websockets.ConnectionClosed):
        await _read(ws, table)


async def _read(ws: Any, table: Table) -> None:
    async for raw in ws:
        frame = json.loads(raw)
        if frame["type"] == "state":
            table.back_at = time.monotonic()
        elif frame["type"] == "error":
            table.pending = None  # refused: not acknowledged, drawn again
        elif frame["type"] == "update" and table.pending is not None and any(
            e["kind"] == "stroke_drawn" and e.get("player") == PERSON for e in frame["events"]
        ):
            table.acked.append(table.pending)
            table.pending = None


def holders(database: str, ids: list[str]) -> dict[str, str]:
    """game id -> the replica (r1, r2...) holding its lease."""
    with open_store(database) as db:
        assert isinstance(db, Store)
        rows = db.rows("SELECT game_id, holder FROM griffon_leases WHERE game_id = ANY(?)", (ids,))
    return {gid: holder.split(":")[0] for gid, holder in rows}


def statuses(database: str, ids: list[str]) -> list[tuple[Any, ...]]:
    """(game id, status, moves, lease holder, fence, seconds the lease has left) of each game."""
    with open_store(database) as db:
        assert isinstance(db, Store)
        return db.rows(
            "SELECT g.id, g.status, g.moves, l.holder, l.fence, "
            "l.expires_at - EXTRACT(EPOCH FROM clock_timestamp()) FROM games AS g "
            "LEFT JOIN griffon_leases AS l ON l.game_id = g.id WHERE g.id = ANY(?)", (ids,))


def failover(args: argparse.Namespace) -> dict[str, Any]:
    env = tuned({**server_env("pictomania", args.tables), "GRIFFON_CAPACITY_CORES": "64"}, **LONG_ROUND)
    with (
        running_postgres(durable=True) as database,
        running_replicas(args.replicas, database, env) as replicas,
        running_haproxy(replicas.ports) as url,
    ):
        front = Server(url, url.replace("http://", "ws://"), replicas.servers[0].process,
                       replicas.servers[0].log_path)
        return asyncio.run(_failover(args, database, replicas, front))


async def _failover(
    args: argparse.Namespace, database: str, replicas: Replicas, front: Server
) -> dict[str, Any]:
    tables: list[Table] = []
    stop = asyncio.Event()
    async with httpx.AsyncClient() as http:
        for seed in range(args.tables):
            created = (await http.post(front.url + "/v1/play", timeout=30,
                                       json={"game": "pictomania", "opponents": 2, "seed": seed})).json()
            tables.append(Table(created["game_id"], created["ws"]))
    people = [asyncio.create_task(person(front, t, random.Random(i), stop)) for i, t in enumerate(tables)]
    await asyncio.sleep(5)
    samples: list[float] = []
    kills = []
    for kill in range(args.kills):
        held = await asyncio.to_thread(holders, database, [t.game_id for t in tables])
        counts: dict[str, int] = {}
        for name in held.values():
            counts[name] = counts.get(name, 0) + 1
        victim = max(sorted(counts), key=lambda n: counts[n])
        hit = [t for t in tables if held.get(t.game_id) == victim]
        killed_at = time.monotonic()
        replicas.kill(int(victim[1:]) - 1)
        deadline = killed_at + 30
        while time.monotonic() < deadline and any(t.back_at <= killed_at for t in hit):
            await asyncio.sleep(0.05)
        times = [t.back_at - killed_at for t in hit if t.back_at > killed_at]
        if len(times) < len(hit):  # what became of the others
            missing = [t.game_id for t in hit if t.back_at <= killed_at]
            print(f"  not back: {await asyncio.to_thread(statuses, database, missing)}", flush=True)
            print(replicas.logs()[-3000:], flush=True)
        samples += times
        kills.append({"victim": victim, "tables": len(hit), "back": len(times),
                      "max_s": max(times) if times else None, "load": os.getloadavg()[0]})
        print(f"kill {kill + 1}: {victim} held {len(hit)} tables; back on their pages in "
              f"{min(times, default=math.nan):.2f}–{max(times, default=math.nan):.2f} s "
              f"({len(times)}/{len(hit)}); load {os.getloadavg()[0]:.1f}", flush=True)
        await asyncio.to_thread(replicas.start, int(victim[1:]) - 1)
        await asyncio.sleep(3)  # HAProxy sees it up again
    await asyncio.sleep(2)
    stop.set()
    await asyncio.gather(*people, return_exceptions=True)
    lost = acked = 0
    with open_store(database) as db:
        for table in tables:
            stored = db.load_game(table.game_id)
            strokes = {json.dumps(m.move["points"]) for m in (stored.moves if stored else [])
                       if m.move.get("player") == PERSON and m.move.get("kind") == "stroke"}
            acked += len(table.acked)
            lost += sum(1 for points in table.acked
                        if json.dumps([[float(x), float(y)] for x, y in points]) not in strokes)
    ms = np.asarray(samples) if samples else np.asarray([math.nan])
    result = {"kills": kills, "samples": len(samples), "p50_s": float(np.percentile(ms, 50)),
              "max_s": float(ms.max()), "strokes_acked": acked, "moves_lost": lost}
    print(f"fail-over over {len(kills)} kills ({len(samples)} tables back): p50 {result['p50_s']:.2f} s, "
          f"max {result['max_s']:.2f} s; strokes acknowledged {acked}, lost {lost}", flush=True)
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--game", choices=GAMES, default="pictomania")
    parser.add_argument("--levels", type=parse_levels, default=parse_levels("4,8,16"))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--tables", type=int, default=12, help="tables played during the kills")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.monotonic()
    print(f"{os.cpu_count()} CPU cores; load {os.getloadavg()[0]:.1f}", flush=True)
    drawings = load_drawings()
    results: dict[str, Any] = {"cpu_cores": os.cpu_count()}
    if args.levels and args.seconds > 0:
        results["capacity"] = capacity(args, drawings)
    if args.kills > 0:
        results["failover"] = failover(args)
    print(f"({time.monotonic() - started:.0f} s; load {os.getloadavg()[0]:.1f})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return results


if __name__ == "__main__":
    main()
