"""A frozen replica (SIGSTOP: a stalled VM): how long its people take to come back.

On this machine's 127.0.0.1 (``griffon.launch``: a throw-away PostgreSQL, ``--replicas`` replicas,
deploy/haproxy.cfg in front), ``--tables`` Pictomania tables are made through HAProxy, each from its
own address (``X-Forwarded-For``: the per-client limits count each replica apart). Each freeze:
the replica holding the most tables has its whole process group stopped with SIGSTOP for
``--freeze-s``; each of its tables has one page, every other one through HAProxy (*direct*: the
stick table sends it to the holder) and the others straight to another replica (*relayed* there to
the holder). A page reconnects as service/static/app.js does (0.5 s, then 1, 1.5... up to 2.5 s
between tries). Measured per page, from the SIGSTOP: when its socket closed, and when its table's
full state came back (on the replica that took the table over); then, once the replica is woken
(SIGCONT), a new page through HAProxy finds each table again.

``python -m bench.bench_freeze [--replicas 3] [--tables 12] [--freezes 3] [--freeze-s 30] [--json OUT]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import time
from typing import Any

import httpx
import numpy as np
import websockets

from bench.bench_replicas import holders
from griffon.launch import Replicas, running_haproxy, running_postgres, running_replicas, tuned

# Tables whose rounds outlast the run; admission by the measured costs only (a busy host would
# refuse the bench's tables: what is measured here is the return, not the capacity).
ENV = tuned({"GRIFFON_CAPACITY_LAG_MS": "0", "GRIFFON_CAPACITY_CORES": "64", "GRIFFON_REPLICA_LEASE_S": "3"},
            pictomania_round_s=1200)
GONE = {4404, 4401, 4410}  # the page stops trying (unknown game, bad token, game over)


async def page(url: str, stopped: asyncio.Event, marks: dict[str, Any], t0: list[float]) -> None:
    """A game page on ``url``: its first state, then, once ``stopped``, when its socket closed and
    when a state came back (seconds from ``t0``)."""
    retry, first = 0, True
    while True:
        try:
            async with websockets.connect(url, open_timeout=70, max_queue=None) as ws:
                retry = 0
                async for raw in ws:
                    if json.loads(raw).get("type") != "state":
                        continue
                    if first:
                        first = False
                    elif stopped.is_set():
                        marks["back_s"] = time.monotonic() - t0[0]
                        return
        except (OSError, websockets.WebSocketException, TimeoutError) as error:
            code = error.rcvd.code if isinstance(error, websockets.ConnectionClosed) and error.rcvd else None
            if code in GONE:
                marks["gone"] = code
                return
        if stopped.is_set() and "closed_s" not in marks:
            marks["closed_s"] = time.monotonic() - t0[0]
        retry = min(retry + 1, 5)
        await asyncio.sleep(0.5 * retry)


async def freeze(front: str, replicas: Replicas, database: str, tables: list[dict[str, Any]],
                 freeze_s: float) -> dict[str, Any]:
    """One freeze of the replica holding the most ``tables``; each page's figures."""
    held = await asyncio.to_thread(holders, database, [t["game_id"] for t in tables])
    counts = {name: sum(1 for h in held.values() if h == name) for name in sorted(set(held.values()))}
    frozen = max(counts, key=lambda name: counts[name])
    index = int(frozen[1:]) - 1
    other = replicas.url((index + 1) % len(replicas.ports)).replace("http://", "ws://")
    mine = [t for t in tables if held.get(t["game_id"]) == frozen]
    stopped, t0 = asyncio.Event(), [0.0]
    pages: list[dict[str, Any]] = []
    tasks = []
    for n, table in enumerate(mine):
        kind = "direct" if n % 2 == 0 else "relayed"
        marks: dict[str, Any] = {"kind": kind}
        pages.append(marks)
        url = (front.replace("http://", "ws://") if kind == "direct" else other) + table["ws"]
        tasks.append(asyncio.create_task(page(url, stopped, marks, t0)))
    await asyncio.sleep(3)  # every page has its first state
    t0[0] = time.monotonic()
    replicas.kill(index, signal.SIGSTOP)  # the replica's whole process group
    stopped.set()
    try:
        await asyncio.wait(tasks, timeout=freeze_s)
        await asyncio.sleep(max(0.0, freeze_s - (time.monotonic() - t0[0])))
    finally:
        replicas.kill(index, signal.SIGCONT)
    woken = time.monotonic() - t0[0]
    await asyncio.wait(tasks, timeout=30)
    for task in tasks:
        task.cancel()
    found = 0
    for table in mine:  # woken, the replica stood down: each table is found again through HAProxy
        async with websockets.connect(front.replace("http://", "ws://") + table["ws"], open_timeout=30) as ws:
            found += json.loads(await asyncio.wait_for(ws.recv(), 30)).get("type") == "state"
    for marks in pages:
        marks["during_freeze"] = marks.get("back_s", math.inf) < woken
    line = ", ".join(f"{m['kind']} {m.get('closed_s', math.nan):.1f} → {m.get('back_s', math.nan):.1f} s"
                     for m in pages)
    print(f"{frozen} frozen {woken:.0f} s with {len(mine)} tables: {line}; found again after the wake "
          f"{found}/{len(mine)}; load {os.getloadavg()[0]:.1f}", flush=True)
    return {"frozen": frozen, "tables": len(mine), "woken_s": woken, "pages": pages, "found_after": found,
            "load": os.getloadavg()[0]}


def summary(freezes: list[dict[str, Any]], kind: str) -> str:
    """Closed and back, min–max over the pages of ``kind``."""
    pages = [p for f in freezes for p in f["pages"] if p["kind"] == kind]
    back = np.asarray([p.get("back_s", math.inf) for p in pages]) if pages else np.asarray([math.nan])
    closed = np.asarray([p.get("closed_s", math.nan) for p in pages]) if pages else back
    during = sum(1 for p in pages if p["during_freeze"])
    return (f"{kind}: {len(pages)} sockets, closed {np.nanmin(closed):.1f}–{np.nanmax(closed):.1f} s, "
            f"state back {back.min():.1f}–{back.max():.1f} s (p50 {np.percentile(back, 50):.1f}), "
            f"{during} of them during the freeze")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--tables", type=int, default=12)
    parser.add_argument("--freezes", type=int, default=3)
    parser.add_argument("--freeze-s", type=float, default=30.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if not 2 <= args.replicas <= 8 or not 1 <= args.tables <= 64 or not 1 <= args.freezes <= 20 \
            or not 5 <= args.freeze_s <= 120:
        parser.error("--replicas 2-8, --tables 1-64, --freezes 1-20, --freeze-s 5-120")
    print(f"load {os.getloadavg()[0]:.1f}; {args.replicas} replicas, {args.tables} tables, "
          f"{args.freezes} freezes of {args.freeze_s:g} s", flush=True)
    with (
        running_postgres(durable=True) as database,
        running_replicas(args.replicas, database, ENV) as replicas,
        running_haproxy(replicas.ports) as front,
    ):
        tables = []
        with httpx.Client(timeout=30) as http:
            for n in range(args.tables):
                made = http.post(front + "/v1/play", json={"game": "pictomania", "opponents": 2},
                                 headers={"X-Forwarded-For": f"198.51.100.{n + 1}"})
                made.raise_for_status()
                tables.append(made.json())
        freezes = []
        for _ in range(args.freezes):
            freezes.append(asyncio.run(freeze(front, replicas, database, tables, args.freeze_s)))
            time.sleep(5)  # HAProxy sees the woken replica up again
        refused = sum(server.log().count("not stored") for server in replicas.servers.values())
    result = {"freezes": freezes, "refused_writes": refused}
    print(f"writes refused by the fence in the replicas' logs (a woken replica that moved a table "
          f"another drives): {refused}")
    for kind in ("direct", "relayed"):
        print(summary(freezes, kind))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2, default=str)
    return result


if __name__ == "__main__":
    main()
