"""The service's restart: N solo games in progress, the server's `GameManager` stopped without ending
them, a new one resumes them from the same SQLite file (`GameManager.resume`: rebuild from the
setup, replay every move through the rules, AI drivers resumed). Also what storing a move costs the
event loop in the session's one update path (`Journal.record`: the move handed to the store's writer
thread).

Games are real: `GameManager.create` (shipped decks, real rules, the AI driver), played by the AI
players with the game clock moved forward (no waiting) and, in Pictomania, a person drawing a few
strokes; the model is replaced by a uniform recognizer (this measures storage and replay).

    python -m bench.bench_restart                  # 50 and 200 games, half of each game
    python -m bench.bench_restart --games 100 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from games.core import RuleError
from service.play.clock import ManualClock
from service.play.journal import Journal
from service.play.manager import GameManager
from service.play.settings import PlaySettings
from service.play.sockets import handle_text
from service.settings import Settings
from store import open_store


async def uniform(drawing: list[Any], candidates: Any) -> dict[str, float]:
    return {c: 1 / len(candidates) for c in candidates}


def manager(store: Any, n: int) -> GameManager:
    n = max(n, 1)
    settings = Settings(play_limits={"max_games": n, "games_per_client": n, "games_per_client_hour": n})
    return GameManager(settings, PlaySettings(), lambda key: uniform, frozenset(), store, clock=ManualClock())


def stroke(i: int) -> str:
    points = [[30 + 3 * k, 40 + (i * 17 + 5 * k) % 180] for k in range(40)]
    return json.dumps({"type": "move", "move": {"kind": "stroke", "points": points}})


async def run(n: int, seconds: float, db: Path) -> dict[str, Any]:
    store = open_store(f"sqlite:///{db}")
    first = manager(store, n)
    record_ms: list[float] = []
    original = Journal.record

    def timed(self: Journal, *args: Any) -> Any:
        t = time.perf_counter()
        stored = original(self, *args)
        record_ms.append((time.perf_counter() - t) * 1000)
        return stored

    Journal.record = timed  # type: ignore[method-assign]
    sessions = []
    for i in range(n):
        kind = "kontour" if i % 2 == 0 else "pictomania"
        s = first.create(kind, opponents=2 + i % 3, level="normal", name="Ana", seed=i, client=f"c{i}")
        s.driver.cancel()
        sessions.append(s)
    for s in sessions:
        if s.kind == "pictomania":
            for k in range(5):
                handle_text(s, stroke(k))
    for _ in range(int(seconds)):  # one clock for every game: each second, every game's driver steps
        first.clock.advance(1.0)
        for s in sessions:
            try:
                s.step(s.now())
            except RuleError:
                pass
    Journal.record = original  # type: ignore[method-assign]
    states = {s.id: s.state for s in sessions}
    moves = sum(s.moves for s in sessions)
    await first.aclose()
    store.close()

    started = time.perf_counter()
    store = open_store(f"sqlite:///{db}")
    opened = time.perf_counter()
    second = manager(store, n)
    resumed, abandoned = second.resume()
    done = time.perf_counter()
    same = sum(1 for gid, st in states.items() if gid in second.games and second.games[gid].state == st)
    await second.aclose()
    store.close()
    record_ms.sort()
    return {
        "games": n, "moves": moves, "resumed": resumed, "abandoned": abandoned, "identical": same,
        "open_ms": round((opened - started) * 1000, 1), "resume_ms": round((done - opened) * 1000, 1),
        "record_p50_ms": round(statistics.median(record_ms), 3),
        "record_p99_ms": round(record_ms[int(0.99 * (len(record_ms) - 1))], 3),
        "db_mib": round(db.stat().st_size / 2**20, 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, nargs="*", default=[50, 200])
    parser.add_argument("--seconds", type=float, default=40.0, help="game time played before the stop")
    args = parser.parse_args(argv)
    for n in args.games:
        with tempfile.TemporaryDirectory() as folder:
            figures = asyncio.run(run(n, args.seconds, Path(folder) / "griffon.db"))
        print(json.dumps(figures))
        print(f"restart with {n} games in progress ({figures['moves']} moves): {figures['resumed']} resumed "
              f"({figures['identical']} identical to before), {figures['abandoned']} abandoned; "
              f"open {figures['open_ms']} ms, resume {figures['resume_ms']} ms; handing a move to the "
              f"writer, on the event loop: p50 {figures['record_p50_ms']} ms, "
              f"p99 {figures['record_p99_ms']} ms")


if __name__ == "__main__":
    main()
