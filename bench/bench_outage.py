"""The store failing under a real `griffon serve` on PostgreSQL: an outage, and a slowdown.

- ``outage``: PostgreSQL stopped (``pg_ctl stop -m fast``) for ``--outage`` seconds (30 by default)
  under two tables — Pictomania, where a scripted person draws, and Kontour, where the person has
  not moved —, then started again. Measured: how long the table takes to pause once the database
  is gone (stop → ``paused`` frame), and to resume once it is back (``pg_ctl start`` returned →
  ``resumed`` frame). Then a second outage, the server killed with SIGKILL during it, PostgreSQL
  started, a new server: both games must be back with every stroke the page was shown.
- ``disk``: the SQLite file on a 4 MiB tmpfs (root only), filled to the last byte for
  ``--outage`` seconds, then freed: pause and resumption times as above.
- ``slowdown``: every PostgreSQL round trip delayed by ``--delay-ms`` (a TCP proxy between the
  server and the database), while ``--tables`` Pictomania tables of 5 AI players play; one more
  table's person draws a stroke every 0.25 s. Measured: that person's stroke acknowledgement
  (stroke sent → its ``update`` frame), p50 / p99, without and with the delay. ``--repo`` runs
  another checkout instead (the same figures before a change).

    python -m bench.bench_outage                   # all three, as measured in docs/STORAGE.md
    python -m bench.bench_outage outage --outage 30
    python -m bench.bench_outage disk --outage 30    # root: SQLite on a tmpfs filled to the last byte
    python -m bench.bench_outage slowdown --delay-ms 20 --tables 6 [--repo /path/to/checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.support import Player, new_game
from griffon.launch import REPO, Server, free_port, postgres_server, running_server, tuning

WAIT_S = 120.0  # the longest a frame is waited for (outages last 30 s)
ENV = {
    **tuning(pictomania_round_s=600, pictomania_rounds=1, max_pictomania_strokes=1000),
    "GRIFFON_PLAY_GAMES_PER_CLIENT": "50", "GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR": "500",
}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def stroke(i: int) -> list[list[float]]:
    return [[20.0 + (3 * i) % 200, 30.0], [220.0 - (2 * i) % 180, 40.0 + (4 * i) % 200]]


def kill(server: Server) -> None:
    server.kill()  # SIGKILL to the whole process group: supervisor and workers
    server.process.wait(timeout=30)


def outage(seconds: float) -> dict[str, Any]:
    figures: dict[str, Any] = {"outage_s": seconds, "load_before": load()}
    with postgres_server() as pg:
        env = {**ENV, "GRIFFON_DB_URL": pg.url}
        with running_server(env) as first:
            picto = new_game(first, game="pictomania", opponents=2, level="easy", seed=5)
            kontour = new_game(first, game="kontour", opponents=2, level="easy", seed=5)
            person, idle = Player(first, picto, open_timeout=60), Player(first, kontour, open_timeout=60)
            idle.until(lambda f: f["type"] == "state", WAIT_S)
            person.move(kind="stroke", points=stroke(0))
            person.until(lambda f: len(person.shown) == 1, WAIT_S)
            stopped = time.monotonic()
            pg.stop()
            person.move(kind="stroke", points=stroke(1))
            person.until(lambda f: f["type"] == "paused", WAIT_S)
            figures["pause_after_stop_s"] = round(time.monotonic() - stopped, 3)
            since = len(person.frames)
            time.sleep(max(0.0, seconds - (time.monotonic() - stopped)))
            person.drain()
            figures["frames_shown_during_outage"] = sum(
                1 for f in person.frames[since:] if f["type"] in ("state", "update"))
            pg.start()
            back = time.monotonic()
            resumed = person.until(lambda f: f["type"] == "resumed", WAIT_S)
            figures["resume_after_start_s"] = round(time.monotonic() - back, 3)
            figures["paused_s"] = resumed["paused_s"]
            paused = next(f for f in person.frames if f["type"] == "paused")
            figures["game_clock_at_pause_and_resume"] = [paused["now"], resumed["now"]]
            figures["time_left_at_pause_and_resume"] = [paused["time_left"], resumed["time_left"]]
            shown = len(person.shown)
            person.move(kind="stroke", points=stroke(2))
            person.until(lambda f: len(person.shown) > shown, WAIT_S)
            pg.stop()  # the second outage: SIGKILL during it
            person.move(kind="stroke", points=stroke(3))
            person.until(lambda f: f["type"] == "paused", WAIT_S)
            person.drain()
            idle.drain()
            seen = {"picto": (person.seq, person.shown), "kontour": (idle.seq, None)}
            kill(first)
            pg.start()
        with running_server(env) as second:
            for name, game in (("picto", picto), ("kontour", kontour)):
                client = Player(second, game, open_timeout=60)
                frame = client.until(lambda f: f["type"] in ("state", "error"), WAIT_S)
                seq, strokes = seen[name]
                kept = frame["type"] == "state" and frame["seq"] >= seq
                if strokes is not None:
                    kept = kept and client.shown[: len(strokes)] == strokes
                figures[f"{name}_back_with_every_shown_move"] = kept
                figures[f"{name}_strokes_shown"] = len(strokes) if strokes is not None else None
    figures["load_after"] = load()
    return figures


def fill(folder: Path) -> Path:
    """Fill the file system of `folder` to the last byte; returns the filler file (delete it to free)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as out:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            with contextlib.suppress(OSError):  # ENOSPC: the next, smaller chunk
                while True:
                    out.write(b"\0" * chunk)
    return filler


def disk_full(seconds: float) -> dict[str, Any]:
    """SQLite on a 4 MiB tmpfs (root only) filled to the last byte for `seconds`, then freed."""
    figures: dict[str, Any] = {"disk_full_s": seconds, "load_before": load()}
    with tempfile.TemporaryDirectory() as folder:
        disk = Path(folder) / "disk"
        disk.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
        try:
            with running_server({**ENV, "GRIFFON_DB_DIR": str(disk)}) as server:
                game = new_game(server, game="pictomania", opponents=2, level="easy", seed=5)
                person = Player(server, game, open_timeout=60)
                person.move(kind="stroke", points=stroke(0))
                person.until(lambda f: len(person.shown) == 1, WAIT_S)
                full = time.monotonic()
                filler = fill(disk)
                person.move(kind="stroke", points=stroke(1))
                person.until(lambda f: f["type"] == "paused", WAIT_S)
                figures["pause_after_full_s"] = round(time.monotonic() - full, 3)
                time.sleep(max(0.0, seconds - (time.monotonic() - full)))
                filler.unlink()
                freed = time.monotonic()
                resumed = person.until(lambda f: f["type"] == "resumed", WAIT_S)
                figures["resume_after_freed_s"] = round(time.monotonic() - freed, 3)
                figures["paused_s"] = resumed["paused_s"]
        finally:
            subprocess.run(["umount", "-l", str(disk)], check=False)
    figures["load_after"] = load()
    return figures


class DelayProxy:
    """A TCP proxy to PostgreSQL that holds every chunk from the server back for ``delay_s`` (so every
    round trip takes that much longer), in order, without limiting throughput."""

    def __init__(self, host: str, port: int) -> None:
        self.target, self.delay_s, self.port = (host, port), 0.0, free_port()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.ready.wait(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", self.port))
        self.ready.set()
        self.loop.run_forever()
        server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        await asyncio.gather(self._pump(reader, up_writer, 0.0), self._pump(up_reader, writer, None),
                             return_exceptions=True)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    delay: float | None) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    writer.close()
                    return
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.create_task(send())
        while True:
            chunk = await reader.read(65536)
            await queue.put((time.monotonic() + (self.delay_s if delay is None else delay), chunk))
            if not chunk:
                break
        await sender

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


def acks(server: Server, game: dict[str, Any], seconds: float) -> list[float]:
    """A person drawing a stroke every 0.25 s for `seconds`: each stroke's acknowledgement (ms)."""
    client = Player(server, game, open_timeout=60)
    client.until(lambda f: f["type"] == "state", WAIT_S)
    out: list[float] = []
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        before = len(client.shown)
        sent = time.monotonic()
        client.move(kind="stroke", points=stroke(i))
        client.until(lambda f, n=before: len(client.shown) > n, timeout=60)
        out.append((time.monotonic() - sent) * 1000)
        i += 1
        time.sleep(max(0.0, 0.25 - (time.monotonic() - sent)))
    client.ws.close()
    return out


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 1),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)}


def slowdown(delay_ms: float, tables: int, seconds: float, repo: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {"delay_ms": delay_ms, "tables": tables, "repo": str(repo)}
    with postgres_server(durable=True) as pg:
        host_port = pg.url.split("@", 1)[1].split("/", 1)[0]
        proxy = DelayProxy("127.0.0.1", int(host_port.split(":")[1]))
        url = pg.url.replace(host_port, f"127.0.0.1:{proxy.port}")
        try:
            with running_server({**ENV, "GRIFFON_DB_URL": url}, repo=repo) as server:
                busy = [new_game(server, game="pictomania", opponents=5, level="hard", seed=i)
                        for i in range(tables)]
                # the busy tables' pages (AI players play on)
                watchers = [Player(server, g, open_timeout=60) for g in busy]
                mine = new_game(server, game="pictomania", opponents=2, level="easy", seed=99)
                for phase, delay in (("normal", 0.0), ("slow", delay_ms / 1000)):
                    proxy.delay_s = delay
                    figures[phase] = {**percentiles(acks(server, mine, seconds)), "load": load()}
                    for w in watchers:
                        w.drain()
        finally:
            proxy.close()
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", nargs="?", choices=["outage", "disk", "slowdown", "all"], default="all")
    parser.add_argument("--outage", type=float, default=30.0, help="seconds PostgreSQL stays down")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="added to every PostgreSQL round trip")
    parser.add_argument("--tables", type=int, default=6, help="busy tables beside the measured one")
    parser.add_argument("--seconds", type=float, default=15.0, help="strokes measured per phase")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to run (default: this one)")
    args = parser.parse_args(argv)
    if args.case in ("outage", "all"):
        print(json.dumps(outage(args.outage)))
    if args.case in ("disk", "all"):
        print(json.dumps(disk_full(args.outage)))
    if args.case in ("slowdown", "all"):
        print(json.dumps(slowdown(args.delay_ms, args.tables, args.seconds, args.repo)))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
