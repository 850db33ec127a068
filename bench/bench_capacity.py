"""Capacity of one server: how many Pictomania tables, Kontour tables and bot rooms it carries,
and where its CPU goes.

For each N of a ladder (1, 2, 4, 8, ...) a fresh server (``griffon.launch.running_server``:
``python -m griffon.serve`` on 127.0.0.1, ``--workers`` processes, the shipped model, default settings but the
per-client limits that would refuse the bench's tables, all from 127.0.0.1) carries N tables of
one kind over real sockets for ``--seconds``:

- ``pictomania``: ``POST /v1/play`` with 5 AI opponents, one scripted person on
  ``WS /v1/play/{id}`` who draws a 25-point stroke every second while the round is played (strokes
  of real validation drawings, scaled to the page's canvas) and starts the next round once one is
  scored;
- ``kontour``: 3 AI opponents; the person draws the card, picks the blue word and draws a 25-point
  straight line every second on their turns (up to the turn's limit), and types a word every two
  seconds while an AI draws;
- ``bot``: a room on ``WS /v1/bot`` streams real validation drawings at their recorded pace
  (``bench.people``'s drawings and strokes) and asks for an ``analysis`` after each stroke.

Measured per level: the stroke-ack latency (a person's stroke frame sent -> the ``update`` frame
that carries it; for a bot room, ``stroke_end`` -> its ``analysis`` frame) and, for bot rooms,
the latency of each ``guess`` frame from the stroke it follows (it includes the level's
deliberate reaction time); the server's CPU from ``/proc/PID/stat`` (cores, per table, per
analysed drawing: the recognitions ``/healthz`` counts), its threads' (``/proc/PID/task``, named
with ``py-spy dump`` when py-spy is installed; the event loop is the main thread), its RSS, the
bench client's own CPU, errors and refusals, and the load average; under ``--workers N``, each
worker's event loop (how evenly the tables are spread: ``--no-placement`` leaves each table on the
worker its request reached, service/placement.py). Once per run, the model's own
CPU per drawing, batch 1 (preprocessing + network, ``bench.bench_model.cpu_figures``), and the
ratio of the server's CPU per analysed drawing to it.

The ladder of a kind stops after the first level whose p99 passes ``--max-p99-ms``, that lost
tables or was refused, or when ``--budget`` seconds are spent. ``--profile`` samples the server
during ``--profile-level`` with ``py-spy record`` (own and cumulative time per function, the
share of each thread); where py-spy cannot attach, that level's server runs under cProfile
(``bench.serve_profiled``, main thread only).

Admission on a busy host: ``--admission`` keeps the service's own refusals (its CPU budget, scaled
by the event loop's share of the CPU; ``--lag-ms 0``: the measured costs alone); ``--waves W`` asks
for each level's tables in W waves ``--wave-gap`` seconds of play apart (admission then sees the
load of the waves before; the window measures every admitted table once the last wave is ready);
``--busy K`` runs K busy processes (a Python loop each, normal priority) beside the server for the
whole run. Bounded and local:
``python -m bench.bench_capacity [--game all] [--levels 1,2,4,8] [--seconds 10] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.people import STROKE_POINTS, Start, Tally, bot_room, load_drawings, percentiles_ms, person_table
from griffon.launch import REPO, Server, free_port, running_server, tuning

GAMES = ("pictomania", "kontour", "bot")
READY_TIMEOUT_S = 60.0
PROJECT_PACKAGES = ("games/", "griffon/", "service/", "model/", "store/", "vocab/")
ENTRY_POINTS = ("griffon/serve.py", "griffon/worker_process.py")  # where every stack starts: tells nothing
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20
# The service's defaults (service.settings.Settings) that the bench's tables, all from 127.0.0.1,
# would hit: variable -> (default, what one table needs of it).
PER_CLIENT_LIMITS = {
    "GRIFFON_PLAY_MAX_GAMES": (100, 1),  # live solo games
    "GRIFFON_PLAY_GAMES_PER_CLIENT": (3, 1),  # live games per client address
    "GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR": (30, 1),  # games created per client address and hour
    "GRIFFON_BOT_MAX_SESSIONS": (200, 1),  # open bot connections
    "GRIFFON_BOT_ROOMS_PER_CLIENT": (32, 1),  # bot rooms per client address
    "GRIFFON_MAX_CLIENT_CONNECTIONS": (256, 1),  # open connections per client address
    "GRIFFON_CLIENT_POINTS_PER_S": (10_000, 2 * STROKE_POINTS),  # the person's points, per address
}
GAME_LIMITS = {
    "pictomania": ("GRIFFON_PLAY_MAX_GAMES", "GRIFFON_PLAY_GAMES_PER_CLIENT",
                   "GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR", "GRIFFON_MAX_CLIENT_CONNECTIONS",
                   "GRIFFON_CLIENT_POINTS_PER_S"),
    "kontour": ("GRIFFON_PLAY_MAX_GAMES", "GRIFFON_PLAY_GAMES_PER_CLIENT",
                "GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR", "GRIFFON_MAX_CLIENT_CONNECTIONS",
                "GRIFFON_CLIENT_POINTS_PER_S"),
    "bot": ("GRIFFON_BOT_MAX_SESSIONS", "GRIFFON_BOT_ROOMS_PER_CLIENT",
            "GRIFFON_MAX_CLIENT_CONNECTIONS"),  # bots' points: per session
}


# the tuning field of each kind's measured cost (service/settings.py: the costs this bench measures)
ADMISSION_OFF = {"pictomania": "capacity.pictomania_table_cost", "kontour": "capacity.kontour_table_cost",
                 "bot": "capacity.bot_room_cost"}


def server_env(game: str, tables: int, admission: bool = False) -> dict[str, str]:
    """The settings raised so that ``tables`` tables of ``game`` from one address are admitted
    (only those whose default is too small; a margin of 8 connections for the bench's HTTP), and
    the table's share of the capacity budget set to 0 unless ``admission`` (the service's own
    refusals, service/capacity.py, are then measured too)."""
    env = {}
    for name in GAME_LIMITS[game]:
        default, per_table = PER_CLIENT_LIMITS[name]
        needed = tables * per_table + (8 if name == "GRIFFON_MAX_CLIENT_CONNECTIONS" else 0)
        if needed > default:
            env[name] = str(needed)
    env["GRIFFON_CAPACITY_CLIENT_SHARE"] = "1"  # every table comes from this one address
    if "GRIFFON_MODEL" in os.environ:
        env["GRIFFON_MODEL"] = os.environ["GRIFFON_MODEL"]
    if not admission:  # the ladder measures what the server does past its own budget
        env.update(tuning(**{ADMISSION_OFF[game]: 0}))
        env["GRIFFON_CAPACITY_LAG_MS"] = "0"  # nor refused for the event loop's lag
    return env


# -- the server process, read from /proc ------------------------------------------------------------


def _cpu_seconds(stat_path: Path) -> float:
    """utime + stime of a /proc stat file, in seconds."""
    text = stat_path.read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def server_pids(pid: int) -> list[int]:
    """The server's processes: itself and its children (the workers of ``--workers N``)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [pid, *(int(c) for c in (children.read_text().split() if children.is_file() else []))]


def process_cpu(pid: int) -> float:
    """CPU seconds the server has used (every thread of every process)."""
    total = 0.0
    for p in server_pids(pid):
        with contextlib.suppress(OSError):
            total += _cpu_seconds(Path(f"/proc/{p}/stat"))
    return total


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds of each live thread of the server: ``tid -> (comm, seconds)``."""
    out = {}
    for p in server_pids(pid):
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{p}/task").iterdir():
                with contextlib.suppress(OSError, ValueError):
                    out[int(task.name)] = ((task / "comm").read_text().strip(), _cpu_seconds(task / "stat"))
    return out


def memory_mb(pid: int) -> dict[str, float]:
    """Resident memory of the server's processes now and at their peak (``VmRSS``, ``VmHWM``), MiB."""
    rss = peak = 0
    for p in server_pids(pid):
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{p}/status").read_text()
            found = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status, re.M))
            rss, peak = rss + int(found.get("VmRSS", 0)), peak + int(found.get("VmHWM", 0))
    return {"rss_mb": rss / 1024, "peak_rss_mb": peak / 1024}


def py_spy() -> str | None:
    """The py-spy executable (beside this Python, else on PATH), or None."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.is_file() else shutil.which("py-spy")


def thread_names(pid: int) -> dict[int, str]:
    """Python thread names by OS thread id (``py-spy dump``); empty without py-spy or permission."""
    exe = py_spy()
    if exe is None:
        return {}
    try:
        dump = subprocess.run([exe, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {int(tid): name for tid, name in re.findall(r'^Thread (\d+) \([^)]*\): "(.*)"', dump.stdout, re.M)}


@dataclass
class Snapshot:
    """What the counters say at one instant."""

    at: float
    server_s: float
    threads: dict[int, tuple[str, float]]
    client_s: float
    load: float
    analyses: int = 0
    batches: int = 0
    healthz_s: float = 0.0  # how long ``/healthz`` took to answer: the event loop's delay


async def snapshot(server: Server, http: httpx.AsyncClient) -> Snapshot:
    """The server's and the bench's CPU at this instant, then the recognitions ``/healthz`` counts
    (a busy event loop answers late: the analyses then run a little past the instant)."""
    pid = server.process.pid
    taken = Snapshot(time.monotonic(), process_cpu(pid), thread_cpu(pid), time.process_time(),
                     os.getloadavg()[0])
    await http.get(server.url + "/healthz", timeout=60)
    taken.healthz_s = time.monotonic() - taken.at
    metrics = (await http.get(server.url + "/metrics", timeout=60)).text  # every worker's, added up
    found = dict(re.findall(r"^griffon_inference_batch_size_(sum|count) ([0-9.e+]+)$", metrics, re.M))
    taken.analyses, taken.batches = round(float(found.get("sum", 0))), round(float(found.get("count", 0)))
    return taken


TABLES = {"pictomania": person_table, "kontour": person_table, "bot": bot_room}


# -- one level --------------------------------------------------------------------------------------


async def worker_tables(folder: Path, game: str) -> list[int]:
    """The tables (bot rooms for ``bot``) each worker holds, worker 0 first, from its own metrics
    over its private socket in ``folder`` (``GRIFFON_WORKER_DIR``)."""
    gauge = "griffon_bot_rooms_open" if game == "bot" else "griffon_tables_open"
    pattern = re.compile(rf"^{gauge}(?:{{[^}}]*}})? (\S+)$", re.M)
    counts = []
    for path in sorted(folder.glob("worker-*.sock"), key=lambda p: int(p.stem.split("-")[1])):
        async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(path)), timeout=60) as http:
            text = (await http.get("http://worker/metrics", params={"local": "true"})).text
        counts.append(round(sum(float(value) for value in pattern.findall(text))))
    return counts


async def run_level(
    server: Server, game: str, tables: int, seconds: float, drawings: list[list],
    during: Any = None, workers_dir: Path | None = None, waves: int = 1, wave_gap_s: float = 0.0,
) -> dict[str, Any]:
    """``tables`` tables of ``game`` on ``server`` for ``seconds``: latencies, CPU, memory, errors.

    ``during(server, seconds)``: started with the window (a profiler), awaited at its end;
    ``workers_dir``: the workers' folder of a ``--workers N`` server (the tables each one holds);
    ``waves``: the tables asked for in that many waves, each ``wave_gap_s`` after the one before
    started playing (what admission by measured lag sees), the window once the last is ready."""
    if game not in TABLES:
        raise ValueError(f"unknown game {game!r}; expected one of {', '.join(GAMES)}")
    tally = Tally()
    limits = httpx.Limits(max_connections=16)
    async with httpx.AsyncClient(limits=limits) as http:
        play = TABLES[game]
        running, starts = [], []
        size = math.ceil(tables / waves)
        for wave in range(waves):  # each wave asked for once the ones before play (--waves)
            seeds = range(wave * size, min(tables, (wave + 1) * size))
            start = Start(len(seeds))
            starts.append(start)
            running += [asyncio.create_task(play(server, http, game, tally, start, seed, drawings))
                        for seed in seeds]
            try:
                await asyncio.wait_for(start.all_ready.wait(), READY_TIMEOUT_S)
            except TimeoutError:
                tally.failures["not ready in time"] += start.waiting
            if wave < waves - 1:
                start.go.set()
                await asyncio.sleep(wave_gap_s)
        acked_before, sent_before = len(tally.acks), tally.sent  # the window: every admitted table playing
        before = await snapshot(server, http)
        for start in starts:
            start.stop_at = time.monotonic() + seconds
        start.go.set()
        side = asyncio.create_task(during(server, seconds)) if during is not None else None
        await asyncio.sleep(max(0.0, start.stop_at - time.monotonic()))
        after = await snapshot(server, http)
        memory = memory_mb(server.process.pid)
        spread = await worker_tables(workers_dir, game) if workers_dir is not None else []
        names = thread_names(server.process.pid)
        results = await asyncio.gather(*running, return_exceptions=True)
        profile = await side if side is not None else None
    for result in results:
        if isinstance(result, BaseException):
            tally.failures[type(result).__name__] += 1
    if waves > 1:  # the strokes and acks of the window only (appended as they come)
        tally.acks, tally.sent = tally.acks[acked_before:], tally.sent - sent_before
    return level_figures(game, tables, tally, before, after, memory, names, server.process.pid) | (
        {"profile": profile} if profile is not None else {}) | {"worker_tables": spread}


def level_figures(
    game: str, tables: int, tally: Tally, before: Snapshot, after: Snapshot, memory: dict[str, float],
    names: dict[int, str], pid: int,
) -> dict[str, Any]:
    """One level's figures from the tally and the two snapshots."""
    wall = after.at - before.at
    analyses = after.analyses - before.analyses
    batches = after.batches - before.batches
    mains = set(server_pids(pid))  # each process's main thread runs its event loop
    spent_by = {tid: spent - before.threads.get(tid, (comm, 0.0))[1]
                for tid, (comm, spent) in after.threads.items()}
    # the process's and its threads' counters are read one after the other, in clock ticks: the
    # server used at least what its live threads did
    server_s = max(after.server_s - before.server_s, sum(u for u in spent_by.values() if u > 0), 1e-9)
    threads = []
    for tid, (comm, _) in after.threads.items():
        used = spent_by[tid]
        if used > 0:
            name = "event loop (MainThread)" if tid in mains else names.get(tid, f"{comm} (native)")
            threads.append({"tid": tid, "name": name, "cores": used / wall, "share": used / server_s})
    threads.sort(key=lambda t: -t["cores"])
    loops = [t for t in threads if t["tid"] in mains]
    loop = {"cores": sum(t["cores"] for t in loops), "share": sum(t["share"] for t in loops)}
    served = server_pids(pid)[1:] or [pid]  # under --workers N, the workers (not their supervisor)
    by_tid = {t["tid"]: t["cores"] for t in threads}
    worker_loops = [by_tid.get(p, 0.0) for p in served]  # how evenly the tables are spread
    ack_p50, ack_p99, ack_max = percentiles_ms(tally.acks)
    guess_p50, guess_p99, _ = percentiles_ms(tally.guesses)
    return {
        "game": game, "tables": tables, "admitted": tables - sum(tally.refusals.values()), "window_s": wall,
        "strokes_sent": tally.sent, "strokes_acked": len(tally.acks), "moves": tally.moves,
        "ack_p50_ms": ack_p50, "ack_p99_ms": ack_p99, "ack_max_ms": ack_max,
        "guesses": len(tally.guesses), "guess_p50_ms": guess_p50, "guess_p99_ms": guess_p99,
        "analyses": analyses, "mean_batch": analyses / batches if batches else math.nan,
        "server_cores": server_s / wall,
        "server_ms_per_s_per_table": 1000 * server_s / wall / tables,
        "server_ms_per_analysis": 1000 * server_s / analyses if analyses else math.nan,
        "loop_cores": loop["cores"], "loop_share": loop["share"], "worker_loop_cores": worker_loops,
        "healthz_ms": 1000 * after.healthz_s,
        "threads": threads,
        "client_cores": (after.client_s - before.client_s) / wall,
        "errors": dict(tally.errors), "refusals": dict(tally.refusals), "failures": dict(tally.failures),
        "refusal_said": dict(tally.refusal_said),
        **memory,
        "load_start": before.load, "load_end": after.load,
    }


# -- profiling --------------------------------------------------------------------------------------


async def py_spy_record(server: Server, seconds: float) -> dict[str, Any]:
    """``py-spy record`` of the server for the window (raw collapsed stacks, by function, with
    threads), summarised; ``{"error": ...}`` when it cannot attach."""
    exe = py_spy()
    if exe is None:
        return {"error": "py-spy is not installed"}
    with tempfile.TemporaryDirectory(prefix="griffon-pyspy-") as folder:
        out = Path(folder) / "stacks.txt"
        command = [exe, "record", "--pid", str(server.process.pid), "--duration", str(max(1, int(seconds))),
                   "--rate", "100", "--format", "raw", "--function", "--threads", "--nonblocking",
                   "--output", str(out)]
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        log, _ = await process.communicate()
        if process.returncode != 0 or not out.is_file():
            return {"error": f"py-spy failed ({process.returncode}): {log.decode(errors='replace')[-400:]}"}
        return {"tool": "py-spy"} | summarise_stacks(out.read_text())


def summarise_stacks(text: str, top: int = 20) -> dict[str, Any]:
    """Own and cumulative samples per function and samples per thread, from collapsed stacks
    (``thread (tid): name;frame;...;leaf count``)."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    loop_own: Counter[str] = Counter()
    samples = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        thread = frames[0].split(": ", 1)[-1] if frames[0].startswith("thread (") else "?"
        body = frames[1:] if frames[0].startswith("thread (") else frames
        samples += n
        threads[thread] += n
        if body:
            own[body[-1]] += n
            if thread == "MainThread":
                loop_own[body[-1]] += n
        for name in set(body):
            total[name] += n

    def ranked(counter: Counter[str]) -> list[dict[str, Any]]:
        return [{"function": f, "samples": c, "share": c / samples} for f, c in counter.most_common(top)]

    project = Counter({f: c for f, c in total.items() if is_project_frame(f)})
    return {
        "samples": samples,
        "threads": [{"thread": t, "samples": c, "share": c / samples} for t, c in threads.most_common()],
        "own": ranked(own), "cumulative": ranked(total), "cumulative_project": ranked(project),
        "loop_own": ranked(loop_own),
    }


def is_project_frame(frame: str) -> bool:
    """A frame of Griffon's own code (``func (games/ai/x.py:12)``), not the server's entry point."""
    where = frame.rpartition("(")[2]
    return where.startswith(PROJECT_PACKAGES) and not where.startswith(ENTRY_POINTS)


def summarise_pstats(path: Path, top: int = 20) -> dict[str, Any]:
    """Own and cumulative seconds per function of a cProfile dump (the main thread: the event loop)."""
    stats = pstats.Stats(str(path))
    rows = [(f"{func} ({_relative(file)}:{line})", tt, ct)
            for (file, line, func), (_, _, tt, ct, _) in stats.stats.items()]  # type: ignore[attr-defined]
    spent = sum(tt for _, tt, _ in rows) or 1.0

    def ranked(index: int, only_project: bool = False) -> list[dict[str, Any]]:
        chosen = [r for r in rows if is_project_frame(r[0])] if only_project else rows
        chosen = sorted(chosen, key=lambda r: -r[index])[:top]
        return [{"function": r[0], "seconds": r[index], "share": r[index] / spent} for r in chosen]

    return {"tool": "cProfile (main thread)", "seconds": spent, "own": ranked(1), "cumulative": ranked(2),
            "cumulative_project": ranked(2, only_project=True)}


def _relative(file: str) -> str:
    """A source path as py-spy shows it: relative to the repository, else its last two parts."""
    path = Path(file)
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(REPO))
    return "/".join(path.parts[-2:])


@contextlib.contextmanager
def cprofiled_server(
    env: dict[str, str], profile_out: Path, startup_timeout: float = 180.0
) -> Iterator[Server]:
    """The server under cProfile (``bench.serve_profiled``), for when py-spy cannot attach."""
    port = free_port()
    data = tempfile.mkdtemp(prefix="griffon-bench-db-")
    environ = {**os.environ, **env, "GRIFFON_DB_DIR": data, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "bench.serve_profiled", str(profile_out), "--host", "127.0.0.1",
               "--port", str(port), "--log-level", "warning", "--workers", "1"]  # cProfile sees one process
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, cwd=REPO, env=environ, stdout=log, stderr=subprocess.STDOUT)
        server = Server(f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}", process, Path(os.devnull))
        try:
            deadline = time.monotonic() + startup_timeout
            while True:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the profiled server did not start:\n{log.read().decode()[-2000:]}")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(server.url + "/healthz", timeout=2).status_code == 200:
                        break
                time.sleep(0.2)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            shutil.rmtree(data, ignore_errors=True)


def cprofile_window(profile_out: Path) -> Any:
    """A ``during`` for `run_level`: cProfile on for the window (SIGUSR1), dumped at its end (SIGUSR2)."""

    async def during(server: Server, seconds: float) -> dict[str, Any]:
        server.process.send_signal(signal.SIGUSR1)
        await asyncio.sleep(seconds)
        server.process.send_signal(signal.SIGUSR2)
        for _ in range(100):
            if profile_out.is_file() and profile_out.stat().st_size:
                await asyncio.sleep(0.2)  # the dump is complete once written
                return summarise_pstats(profile_out)
            await asyncio.sleep(0.1)
        return {"error": "the profiled server wrote no profile"}

    return during


def can_attach(server: Server) -> bool:
    """Whether py-spy can read the server process (installed, and ptrace allowed)."""
    exe = py_spy()
    if exe is None:
        return False
    done = subprocess.run([exe, "dump", "--pid", str(server.process.pid)], capture_output=True, timeout=30)
    return done.returncode == 0


# -- the model's own cost ---------------------------------------------------------------------------


def model_cpu_per_guess(drawings: list[list], count: int = 100) -> dict[str, Any]:
    """CPU ms per drawing of the shipped model at batch 1 (preprocessing + network), measured as
    ``bench.bench_model.cpu_figures`` measures it, one drawing per call; and its batched figure."""
    from bench.bench_model import cpu_figures  # imports torch: only when this figure is asked for
    from model import Guesser

    guesser = Guesser.load(os.environ.get("GRIFFON_MODEL"))
    sample = drawings[:count]
    for drawing in sample[:10]:  # warm-up
        guesser.guess(drawing)
    singles = [cpu_figures(guesser, [d]) for d in sample]
    prepare = float(np.mean([s["prepare_cpu_ms"] for s in singles]))
    network = float(np.mean([s["network_cpu_ms"] for s in singles]))
    batched = cpu_figures(guesser, sample)
    return {"backend": guesser.backend, "drawings": len(sample), "prepare_cpu_ms": prepare,
            "network_cpu_ms": network, "cpu_ms_per_guess": prepare + network,
            "batched_cpu_ms_per_guess": batched["prepare_cpu_ms"] + batched["network_cpu_ms"]}


# -- printing -------------------------------------------------------------------------------------


def _ms(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


HEADER = ("game        N  strokes  acked  ack p50/p99 ms  guess p50/p99 ms  analyses  srv cores  "
          "ms/s/table  ms/analysis  loop cores (share)  RSS MB  client cores  errors  load")


def level_line(row: dict[str, Any]) -> str:
    """One printed line per level."""
    problems = sum(row["errors"].values()) + sum(row["refusals"].values()) + sum(row["failures"].values())
    return (f"{row['game']:<10} {row['tables']:3d}  {row['strokes_sent']:7d}  {row['strokes_acked']:5d}  "
            f"{_ms(row['ack_p50_ms']):>6} / {_ms(row['ack_p99_ms']):<6}  "
            f"{_ms(row['guess_p50_ms']):>7} / {_ms(row['guess_p99_ms']):<7}  {row['analyses']:8d}  "
            f"{row['server_cores']:9.2f}  {row['server_ms_per_s_per_table']:10.1f}  "
            f"{_ms(row['server_ms_per_analysis']):>11}  "
            f"{row['loop_cores']:10.2f} ({row['loop_share']:4.0%})  "
            f"{row['rss_mb']:6.0f}  {row['client_cores']:12.2f}  {problems:6d}  "
            f"{row['load_start']:.1f}→{row['load_end']:.1f}")


def detail_lines(row: dict[str, Any]) -> list[str]:
    """The threads that used CPU and the errors of one level."""
    threads = ", ".join(f"{t['name']} {t['cores']:.2f}" for t in row["threads"][:6])
    lines = [f"    /healthz after the window: {row['healthz_ms']:,.0f} ms; threads (cores): {threads}"]
    if row.get("admitted", row["tables"]) < row["tables"]:
        lines.append(f"    admitted: {row['admitted']} of {row['tables']} tables")
    if len(row.get("worker_loop_cores", [])) > 1:
        lines.append("    each worker's event loop (cores): "
                     + ", ".join(f"{cores:.2f}" for cores in row["worker_loop_cores"])
                     + (f"; tables held: {', '.join(map(str, row['worker_tables']))}"
                        if row.get("worker_tables") else ""))
    for what in ("errors", "refusals", "failures"):
        if row[what]:
            lines.append(f"    {what}: {row[what]}")
    lines += [f"    {refusal}, first said: {said}" for refusal, said in row.get("refusal_said", {}).items()]
    return lines


def profile_lines(profile: dict[str, Any], top: int = 12) -> list[str]:
    """The profile's top functions by own and cumulative time, and its threads."""
    if "error" in profile:
        return [f"    profile: {profile['error']}"]
    unit = "samples" if "samples" in profile else "seconds"
    lines = [f"    profile ({profile['tool']}, {profile[unit]:,.0f} {unit})"]
    if "threads" in profile:
        shares = ", ".join(f"{t['thread']} {t['share']:.0%}" for t in profile["threads"][:6])
        lines.append(f"    threads: {shares}")
    titles = (("own time", "own"), ("cumulative, Griffon's code", "cumulative_project"),
              ("own time, event loop only", "loop_own"))
    for title, key in titles:
        if profile.get(key):
            lines.append(f"    top by {title}:")
            lines += [f"      {r['share']:6.1%}  {r['function']}" for r in profile[key][:top]]
    return lines


# -- the whole run ----------------------------------------------------------------------------------


def parse_levels(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]`` (positive, increasing)."""
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--levels wants comma-separated integers, got {text!r}") from None
    if not levels or any(n < 1 for n in levels) or levels != sorted(set(levels)):
        raise argparse.ArgumentTypeError(f"--levels wants increasing positive integers, got {text!r}")
    return levels


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=(*GAMES, "all"), default="all")
    parser.add_argument("--levels", type=parse_levels, default=parse_levels("1,2,4,8,16,32,64,128,256"),
                        help="tables per level, increasing (the ladder stops earlier past --max-p99-ms)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window of each level")
    parser.add_argument("--max-p99-ms", type=float, default=100.0, help="stop a ladder past this p99")
    parser.add_argument("--budget", type=float, default=600.0, help="total seconds for the whole run")
    parser.add_argument("--profile", action="store_true", help="profile the server during --profile-level")
    parser.add_argument("--profile-level", type=int, default=4, help="the level (N) to profile")
    parser.add_argument("--profiler", choices=("auto", "py-spy", "cprofile"), default="auto",
                        help="auto: py-spy, else cProfile when py-spy cannot attach")
    parser.add_argument("--workers", type=int, default=1, help="the server's worker processes")
    parser.add_argument("--no-placement", action="store_true",
                        help="each table on the worker its request reached (GRIFFON_WORKER_PLACEMENT=false)")
    parser.add_argument("--admission", action="store_true",
                        help="keep the service's capacity budget (default: off, to measure past it)")
    parser.add_argument("--lag-ms", type=float, default=None,
                        help="with --admission: GRIFFON_CAPACITY_LAG_MS (0: the measured costs only)")
    parser.add_argument("--waves", type=int, default=1,
                        help="ask for each level's tables in this many waves (admission sees the load of the "
                             "ones before)")
    parser.add_argument("--wave-gap", type=float, default=8.0, help="seconds of play between two waves")
    parser.add_argument("--busy", type=int, default=0,
                        help="busy processes (a Python loop each, normal priority) beside the server")
    parser.add_argument("--skip-model", action="store_true", help="leave out the model's own CPU figure")
    parser.add_argument("--json", type=Path, default=None, help="also write every figure to this file")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.budget <= 0:
        parser.error("--seconds and --budget must be positive")
    if not 1 <= args.waves <= 64 or not 0 <= args.wave_gap <= 120 or not 0 <= args.busy <= 16:
        parser.error("--waves 1-64, --wave-gap 0-120 s, --busy 0-16")
    return args


def run_ladder(
    game: str, args: argparse.Namespace, drawings: list[list], started: float
) -> list[dict[str, Any]]:
    """The levels of one kind of table, each on a fresh server, until one is too slow or the budget
    is spent."""
    rows = []
    for tables in args.levels:
        if time.monotonic() - started + args.seconds + 30 > args.budget:
            print(f"  (budget of {args.budget:.0f} s spent: {game} stops before N={tables})")
            break
        env = server_env(game, tables, args.admission)
        if args.admission and args.lag_ms is not None:
            env["GRIFFON_CAPACITY_LAG_MS"] = f"{args.lag_ms:g}"
        if args.no_placement:
            env["GRIFFON_WORKER_PLACEMENT"] = "false"
        profiled = args.profile and tables == args.profile_level
        row = run_one(game, tables, env, args, drawings, profiled)
        row["raised_settings"] = env
        rows.append(row)
        print(level_line(row), flush=True)
        for line in detail_lines(row) + (profile_lines(row["profile"]) if "profile" in row else []):
            print(line, flush=True)
        problems = sum(row["refusals"].values()) + sum(row["failures"].values())
        if not row["strokes_acked"] or row["ack_p99_ms"] > args.max_p99_ms or problems:
            break
    return rows


def run_one(
    game: str, tables: int, env: dict[str, str], args: argparse.Namespace, drawings: list[list],
    profiled: bool,
) -> dict[str, Any]:
    """One level on its own server (profiled when asked: py-spy, else cProfile)."""
    if profiled and args.profiler != "cprofile":
        with running_server(env, workers=args.workers) as server:
            if can_attach(server):
                return asyncio.run(run_level(server, game, tables, args.seconds, drawings, py_spy_record))
            if args.profiler == "py-spy":
                row = asyncio.run(run_level(server, game, tables, args.seconds, drawings))
                return row | {"profile": {"error": "py-spy cannot attach to the server"}}
    if profiled:
        with tempfile.TemporaryDirectory(prefix="griffon-cprofile-") as folder:
            out = Path(folder) / "server.pstats"
            with cprofiled_server(env, out) as server:
                during = cprofile_window(out)
                return asyncio.run(run_level(server, game, tables, args.seconds, drawings, during))
    with tempfile.TemporaryDirectory(prefix="griffon-bench-workers-") as folder:
        workers_dir = Path(folder) / "workers" if args.workers > 1 else None
        if workers_dir is not None:
            env = {**env, "GRIFFON_WORKER_DIR": str(workers_dir)}
        with running_server(env, workers=args.workers) as server:
            level = run_level(server, game, tables, args.seconds, drawings, workers_dir=workers_dir,
                              waves=args.waves, wave_gap_s=args.wave_gap)
            return asyncio.run(level)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the ladders and print one line per level (and the profile, when asked)."""
    args = parse_args(argv)
    started = time.monotonic()
    drawings = load_drawings()
    print(f"{len(drawings)} validation drawings; {os.cpu_count()} CPU cores; load {os.getloadavg()[0]:.1f}; "
          f"model {os.environ.get('GRIFFON_MODEL', 'shipped')}; {args.seconds:g} s a level")
    results: dict[str, Any] = {"cpu_cores": os.cpu_count(), "seconds": args.seconds, "levels": {},
                               "load_start": os.getloadavg()}
    with busy_processes(args.busy):
        return run_all(args, drawings, results, started)


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` processes that keep a core busy each (normal priority), for the whole run."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    if spinners:
        print(f"{count} busy processes beside the server (pids {', '.join(str(p.pid) for p in spinners)})")
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def run_all(args: argparse.Namespace, drawings: list[list], results: dict[str, Any], started: float,
            ) -> dict[str, Any]:
    """The model's figure, then each kind's ladder."""
    games = GAMES if args.game == "all" else (args.game,)
    if not args.skip_model:
        model = model_cpu_per_guess(drawings)
        results["model"] = model
        print(f"model ({model['backend']}), batch 1: {model['cpu_ms_per_guess']:.2f} ms CPU a drawing "
              f"(prepare {model['prepare_cpu_ms']:.2f} + network {model['network_cpu_ms']:.2f}); "
              f"batched: {model['batched_cpu_ms_per_guess']:.2f} ms")
    for game in games:
        raised = server_env(game, max(args.levels), args.admission)
        shown = ", ".join(f"{k}={v}" for k, v in raised.items()) or "none"
        print(f"\n{game}: settings raised for up to {max(args.levels)} tables from 127.0.0.1 "
              f"(defaults in service.settings): {shown}")
        print(HEADER)
        rows = run_ladder(game, args, drawings, started)
        if "model" in results:
            for row in rows:
                row["ratio_to_model"] = row["server_ms_per_analysis"] / results["model"]["cpu_ms_per_guess"]
            ratios = ", ".join(f"N={r['tables']}: {r['ratio_to_model']:.1f}×" for r in rows)
            print(f"  server CPU per analysed drawing / model CPU per guess: {ratios}")
        results["levels"][game] = rows
    results["load_end"] = os.getloadavg()
    print(f"\n({time.monotonic() - started:.0f} s; load {os.getloadavg()[0]:.1f})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return results


if __name__ == "__main__":
    main()
