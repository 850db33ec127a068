"""How soon the bot finds real drawings: validation drawings replayed at real speed through the bot protocol.

A real ``griffon serve`` (``griffon.launch.running_server``, the shipped model, default settings)
gets ``--drawings`` validation drawings of the Quick, Draw! folder (``training.data``'s split, every
category, raw records: each point at its own recorded ``t``), each replayed once per condition —
pace ``instant`` or ``human`` × 42 candidates (the answer and 41 other categories, drawn per
drawing) or none (all categories) — over ``WS /v1/bot`` protocol version 2, with the level
``--difficulty``. A room streams the strokes as a browser does (``stroke_start``, ``points`` every
50 ms, ``stroke_end``), ends the round as soon as the bot says the answer, else ``--linger`` seconds
after the last stroke. ``--sessions`` rooms play at once (each its rounds one after another) to
keep the run to a few minutes.

``--paces`` chooses the paces, each optionally tuned as a room tunes it (``round_start.reaction_s``
and ``hold_s``): ``instant:reaction_s=1.0:hold_s=5`` is the instant pace reading each stroke in
1 s and silent for the round's first 5 s.

Measured per condition: the share of drawings found (the answer said) within 3 s and within 8 s
of the end of the last stroke (a find before it counts), the share found while the person was
still drawing (before the last stroke ended), the same for one-stroke drawings, and
the bot's reaction time: from the end of the stroke after which it found (the decisive stroke)
to the right word (median and p90). Prints a Markdown table and the load average;
``--json OUT`` writes every figure. Bounded and local:
``python -m bench.bench_bot_find [--drawings 320] [--sessions 40] [--difficulty normal]
[--paces instant human instant:hold_s=5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import websockets

from griffon.launch import running_server

PACES = ("instant", "human")
CANDIDATE_COUNTS = (42, None)
WITHIN_S = (3.0, 8.0)
CHUNK_S = 0.05  # a browser sends the points it collected every 50 ms
MAX_DRAWING_S = 40.0  # longer recordings (a few minutes of hesitation) are left out


@dataclass
class Round:
    """One drawing replayed in one condition, and what the bot did."""

    word: str
    strokes: int
    pace: str
    candidates: int | None
    found_after_s: float | None = None  # from the end of the last stroke (negative: before it)
    reaction_s: float | None = None  # from the end of the decisive stroke
    guesses: int = 0
    errors: list[str] = field(default_factory=list)


def load_validation(count: int, seed: int = 0) -> list[tuple[str, list]]:
    """``count`` validation drawings with their recorded times, every category, shuffled."""
    from training.data import default_data_root, load_dataset

    records = load_dataset(default_data_root(), split="val")
    timed = [(r.word, r.strokes) for r in records
             if all(len(s) == 3 and len(s[2]) == len(s[0]) for s in r.strokes)
             and r.strokes[-1][2][-1] <= MAX_DRAWING_S * 1000]
    random.Random(seed).shuffle(timed)
    if len(timed) < count:
        raise SystemExit(f"only {len(timed)} timed validation drawings (asked for {count})")
    return timed[:count]


async def replay(ws: Any, strokes: list, start: float, stroke_ends: list[float]) -> None:
    """Send the strokes at their recorded pace (``t`` in ms from the drawing's first point)."""
    t0 = strokes[0][2][0]
    for xs, ys, ts in strokes:
        times = [(t - t0) / 1000 for t in ts]
        await asyncio.sleep(max(0.0, start + times[0] - time.monotonic()))
        await ws.send(json.dumps({"type": "stroke_start", "x": xs[0], "y": ys[0]}))
        sent = 1
        while sent < len(times):
            await asyncio.sleep(max(CHUNK_S, start + times[sent] - time.monotonic()))
            elapsed = time.monotonic() - start
            upto = max(sent + 1, next((i for i, t in enumerate(times) if t > elapsed), len(times)))
            await ws.send(json.dumps({"type": "points", "x": xs[sent:upto], "y": ys[sent:upto]}))
            sent = upto
        await ws.send(json.dumps({"type": "stroke_end"}))
        stroke_ends.append(time.monotonic())


def pace_fields(spec: str) -> dict[str, Any]:
    """``round_start`` fields of a pace spec: ``instant``, ``human:reaction_s=0.8:hold_s=4``..."""
    name, *tuning = spec.split(":")
    if name not in PACES:
        raise ValueError(f"unknown pace {name!r} in {spec!r} (known: {', '.join(PACES)})")
    fields: dict[str, Any] = {"pace": name}
    for item in tuning:
        key, _, value = item.partition("=")
        if key not in ("reaction_s", "hold_s"):
            raise ValueError(f"unknown pace setting {key!r} in {spec!r} (known: reaction_s, hold_s)")
        fields[key] = float(value)
    return fields


async def play_round(ws: Any, number: int, word: str, strokes: list, pace: str,
                     candidates: list[str] | None, linger_s: float, difficulty: str) -> Round:
    """One round: the drawing at its pace; ends at the bot's right word or ``linger_s`` after it."""
    result = Round(word, len(strokes), pace, None if candidates is None else len(candidates))
    start_frame = {"type": "round_start", "round": number, "difficulty": difficulty,
                   "language": "en"} | pace_fields(pace) | ({"candidates": candidates} if candidates else {})
    await ws.send(json.dumps(start_frame))
    while (ready := json.loads(await ws.recv()))["type"] != "round_ready":
        if ready["type"] == "error":
            raise RuntimeError(f"round refused: {ready}")
    stroke_ends: list[float] = []
    found = asyncio.Event()
    drawer = asyncio.create_task(replay(ws, strokes, time.monotonic(), stroke_ends))

    async def listen() -> None:
        async for raw in ws:
            frame = json.loads(raw)
            if frame["type"] == "error":
                result.errors.append(frame["code"])
            elif frame["type"] == "guess" and frame["round"] == number:
                result.guesses += 1
                if frame["label"] == word:
                    now = time.monotonic()
                    decisive = stroke_ends[min(frame["strokes"], len(stroke_ends)) - 1]
                    result.reaction_s = now - decisive
                    found.set()
                    return
            elif frame["type"] == "round_over":
                return

    listener = asyncio.create_task(listen())
    waiter = asyncio.create_task(found.wait())
    try:
        await asyncio.wait([drawer, waiter], return_when=asyncio.FIRST_COMPLETED)
        if not found.is_set():
            try:
                await asyncio.wait_for(found.wait(), linger_s)
            except TimeoutError:
                pass
        found_at = time.monotonic() if found.is_set() else None
        if found_at is not None:
            last_end = stroke_ends[-1] if drawer.done() else None
            # found before the last stroke ended: negative (the drawing's own end time is known)
            result.found_after_s = (found_at - last_end) if last_end is not None else -1.0
    finally:
        for task in (drawer, listener, waiter):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    await ws.send(json.dumps({"type": "round_end", "answer": word}))
    while json.loads(await ws.recv())["type"] != "round_over":
        pass
    return result


async def room(url: str, jobs: asyncio.Queue, labels: list[str], linger_s: float, difficulty: str,
               results: list[Round]) -> None:
    """One room: takes rounds from ``jobs`` until none is left."""
    async with websockets.connect(url, max_queue=None) as ws:
        await ws.send(json.dumps({"type": "hello", "versions": [2], "room": "bench-find"}))
        welcome = json.loads(await ws.recv())
        if welcome.get("version") != 2:
            raise RuntimeError(f"no protocol version 2: {welcome}")
        number = 0
        while not jobs.empty():
            word, strokes, pace, count, seed = jobs.get_nowait()
            candidates = None
            if count is not None:
                others = [w for w in labels if w != word]
                candidates = [word, *random.Random(seed).sample(others, count - 1)]
                random.Random(seed + 1).shuffle(candidates)
            number += 1
            played = await play_round(ws, number, word, strokes, pace, candidates, linger_s, difficulty)
            results.append(played)


def summarise(results: list[Round], paces: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per condition: find rates within 3 s and 8 s and while drawing, one-stroke
    drawings, reaction times (``paces``: their order; default: as they come in ``results``)."""
    rows = []
    for pace in paces or list(dict.fromkeys(r.pace for r in results)):
        counts = {r.candidates for r in results if r.pace == pace}
        for count in sorted(counts, key=lambda c: (c is None, c or 0)):
            rounds = [r for r in results if r.pace == pace and r.candidates == count]
            if not rounds:
                continue
            single = [r for r in rounds if r.strokes == 1]

            def rate(subset: list[Round], within: float) -> float:
                found = [r for r in subset if r.found_after_s is not None and r.found_after_s <= within]
                return len(found) / len(subset) if subset else float("nan")

            reactions = [r.reaction_s for r in rounds if r.reaction_s is not None]
            rows.append({
                "pace": pace, "candidates": count if count is not None else "none", "drawings": len(rounds),
                **{f"found_{w:g}s": rate(rounds, w) for w in WITHIN_S},
                "found_drawing": sum(1 for r in rounds if r.found_after_s is not None and r.found_after_s < 0)
                / len(rounds),
                "one_stroke": len(single), "one_stroke_found_8s": rate(single, 8.0),
                "reaction_median_s": statistics.median(reactions) if reactions else float("nan"),
                "reaction_p90_s": float(np.percentile(reactions, 90)) if reactions else float("nan"),
                "guesses_per_round": sum(r.guesses for r in rounds) / len(rounds),
                "errors": sum(len(r.errors) for r in rounds),
            })
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = ["| pace | candidates | drawings | found ≤ 3 s | found ≤ 8 s | found while drawing "
             "| one-stroke found ≤ 8 s | reaction median | reaction p90 | words said per round |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['pace']} | {r['candidates']} | {r['drawings']} | {r['found_3s']:.0%} "
            f"| {r['found_8s']:.0%} | {r['found_drawing']:.0%} "
            f"| {r['one_stroke_found_8s']:.0%} of {r['one_stroke']} | {r['reaction_median_s']:.2f} s "
            f"| {r['reaction_p90_s']:.2f} s | {r['guesses_per_round']:.1f} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawings", type=int, default=320,
                        help="validation drawings (each replayed in every condition)")
    parser.add_argument("--sessions", type=int, default=40, help="rooms playing at once")
    parser.add_argument("--difficulty", default="normal")
    parser.add_argument("--linger", type=float, default=8.0, help="seconds after the last stroke")
    parser.add_argument("--json", type=Path, help="write every figure there")
    parser.add_argument("--paces", nargs="+", default=list(PACES),
                        help="paces to compare, each optionally tuned: instant:reaction_s=1:hold_s=5")
    parser.add_argument("--candidates", nargs="+", default=["42", "none"],
                        help="candidate counts to compare (none: every category)")
    args = parser.parse_args(argv)
    for spec in args.paces:
        pace_fields(spec)  # a bad spec fails before the server starts
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Replay the drawings in every condition and print the table."""
    args = parse_args(argv)
    drawings = load_validation(args.drawings)
    from training.data import read_categories

    labels = read_categories()
    jobs: asyncio.Queue = asyncio.Queue()
    counts = [None if c == "none" else int(c) for c in args.candidates]
    conditions = [(pace, count) for pace in args.paces for count in counts]
    everything = [(word, strokes, pace, count, 1000 * n)
                  for n, (word, strokes) in enumerate(drawings) for pace, count in conditions]
    random.Random(1).shuffle(everything)  # every condition sees the same load
    for job in everything:
        jobs.put_nowait(job)
    results: list[Round] = []
    started = time.monotonic()
    load_before = os.getloadavg()
    with running_server({}) as server:
        async def run_all() -> list[Any]:
            url = server.ws_url + "/v1/bot"
            return await asyncio.gather(*(room(url, jobs, labels, args.linger, args.difficulty, results)
                                          for _ in range(args.sessions)), return_exceptions=True)

        outcomes = asyncio.run(run_all())
    failures = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    rows = summarise(results, args.paces)
    load_after = os.getloadavg()
    report = {"rows": rows, "rounds": len(results), "sessions": args.sessions, "difficulty": args.difficulty,
              "seconds": round(time.monotonic() - started, 1), "failed_rooms": failures,
              "load_before": load_before, "load_after": load_after, "cpus": os.cpu_count()}
    print(f"{len(drawings)} validation drawings x {len(conditions)} conditions, {len(results)} rounds, "
          f"{args.sessions} rooms at once, level {args.difficulty}, {report['seconds']:.0f} s; "
          f"{os.cpu_count()} CPUs, load {load_before[0]:.1f} before, {load_after[0]:.1f} after; "
          f"failed rooms: {len(failures)} {failures[:2]}")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
