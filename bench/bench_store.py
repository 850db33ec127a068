"""Storage figures: write latency of the move log, database size per 1,000 games, restart load, and how
many games a deployment needs to grow its data.

Games are real: generated move by move through the rules engines (`KontourRules`, `PictomaniaRules`)
with the shipped decks, the page's stroke format (Quick, Draw! drawings from the shared data folder
resized to the 0–255 canvas, points ≥ 1.5 px apart, rounded to 0.1, as `board.js` sends them;
Kontour lines are two points) and a plausible pace (finds 68 % of Kontour words, as the AI does).

    python -m bench.bench_store                 # SQLite, and PostgreSQL when the machine can start one
    python -m bench.bench_store --games 200 --no-postgres
    python -m bench.bench_store --stall          # only: a game's writes beside a prune / a held lock

PostgreSQL runs with its default durability (fsync on, synchronous commit), in a throw-away server
started like the tests do (`tests.pg_server`).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from games.core import LoggedMove, RuleError, Tick, replay
from games.kontour import ChooseWord, DrawCard, Guess, KontourCard, KontourConfig, KontourRules, Stroke
from games.pictomania import (
    Done,
    NextRound,
    PictoCard,
    PictomaniaConfig,
    PictomaniaRules,
    PictoStroke,
    PlaceGuess,
)
from store import Retention, Store, StoreSettings, StoreUnavailable, hash_token, open_store
from store.group_commit import MoveWriter

HUMAN = "joueur"
FIND_RATE = 0.68  # Kontour words found by someone (the AI guessers' measured rate)
ORANGE_RATE = 0.4
Game = tuple[
    str, dict[str, Any], list[tuple[float, dict[str, Any]]], list[str]
]  # kind, setup, log, human words


# ------------------------------------------------------------------------------------------------
# Realistic strokes and games


def page_drawings(limit: int = 2_000, seed: int = 0) -> list[list[list[tuple[float, float]]]]:
    """Quick, Draw! raw drawings as the page would send them (0–255 canvas, 1.5 px steps, 0.1 px)."""
    rng = random.Random(seed)
    raw = _raw_drawings(limit)
    out = []
    for strokes in raw:
        xs = [x for s in strokes for x in s[0]]
        ys = [y for s in strokes for y in s[1]]
        x0, y0 = min(xs), min(ys)
        scale = 215 / max(max(xs) - x0, max(ys) - y0, 1)
        drawing = []
        for s in strokes:
            points: list[tuple[float, float]] = []
            for x, y in zip(s[0], s[1], strict=False):
                p = (round(20 + (x - x0) * scale, 1), round(20 + (y - y0) * scale, 1))
                if not points or abs(p[0] - points[-1][0]) + abs(p[1] - points[-1][1]) >= 1.5:
                    points.append(p)
            if len(points) >= 2:
                drawing.append(points)
        if drawing:
            out.append(drawing)
    rng.shuffle(out)
    return out


def _raw_drawings(limit: int) -> list[list[Any]]:
    try:
        from training.data import default_data_root

        found: list[Any] = []
        for path in sorted((default_data_root() / "full" / "raw").glob("*.ndjson")):
            with path.open(encoding="utf-8") as handle:  # the first drawings of each category
                for _, line in zip(range(6), handle, strict=False):
                    found.append(json.loads(line)["drawing"])
            if len(found) >= limit:
                break
        if found:
            return found
    except Exception:  # no data folder: random walks of the same size
        pass
    rng = random.Random(1)
    walks = []
    for _ in range(200):
        strokes = []
        for _ in range(rng.randint(2, 9)):
            x, y, xs, ys = rng.uniform(0, 500), rng.uniform(0, 500), [], []
            for _ in range(rng.randint(10, 60)):
                x, y = x + rng.gauss(0, 6), y + rng.gauss(0, 6)
                xs.append(x)
                ys.append(y)
            strokes.append([xs, ys])
        walks.append(strokes)
    return walks


def kontour_deck() -> list[KontourCard]:
    from vocab import kontour_deck as shipped

    return [KontourCard(top=c.top.model_dump(), bottom=c.bottom.model_dump()) for c in shipped()]


def pictomania_deck() -> list[PictoCard]:
    from vocab import pictomania_deck as shipped

    return [PictoCard(level=c.level, words=s.words, theme=s.theme) for c in shipped() for s in c.sides]


class Player:
    """Applies moves to a state and logs them (a move the rules refuse is skipped)."""

    def __init__(self, rules: Any, setup: dict[str, Any]) -> None:
        self.rules, self.setup = rules, setup
        self.state, _ = rules.setup(**setup)
        self.log: list[tuple[float, dict[str, Any]]] = []

    def do(self, move: Any, now: float) -> bool:
        try:
            self.state, _ = self.rules.apply(self.state, move, now)
        except RuleError:
            return False
        self.log.append((now, move.to_dict()))
        return True


def kontour_game(seed: int, deck: list[KontourCard], config: KontourConfig) -> Game:
    """A Kontour game of 3 players to 10 points."""
    rng = random.Random(seed)
    rules = KontourRules(config, judge=lambda key, text: key == text)
    players = [HUMAN, "ia1", "ia2"]
    setup = {"players": players, "deck": [c.to_dict() for c in deck], "seed": seed}
    g = Player(rules, setup)
    words = [w for c in deck for w in (c.top.blue, c.top.orange, c.bottom.blue, c.bottom.orange)]
    human_words, t = [], 0.0
    while g.state.phase != "game_over" and len(g.log) < 3_000:
        drawer = g.state.drawer
        g.do(DrawCard(player=drawer), t)
        g.do(ChooseWord(player=drawer, color="orange" if rng.random() < ORANGE_RATE else "blue"), t + 1.5)
        if g.state.turn is None or g.state.turn.word is None:
            break
        word = g.state.turn.word
        if drawer == HUMAN:
            human_words.append(word)
        timeline = []
        for i in range(rng.randint(4, 12)):
            x, y = rng.uniform(20, 235), rng.uniform(20, 235)
            timeline.append(
                (t + 2 + 2 * i, Stroke(player=drawer, points=((x, y), (255 - x, rng.uniform(20, 235)))))
            )
        guessers = [p for p in players if p != drawer]
        for _ in range(rng.randint(2, 8)):
            timeline.append(
                (t + rng.uniform(4, 30), Guess(player=rng.choice(guessers), text=rng.choice(words)))
            )
        if rng.random() < FIND_RATE:
            timeline.append((t + rng.uniform(6, 28), Guess(player=rng.choice(guessers), text=word)))
        for now, move in sorted(timeline, key=lambda e: e[0]):
            if g.state.phase == "drawing":
                g.do(move, now)
        turn = g.state.turn
        end = turn.ends_at(config.tie_window_s) + 0.01 if turn is not None else t + 31.6
        g.do(Tick(), end)
        t = end + 3.0
    return "kontour", {**setup, "config": config.to_dict()}, g.log, human_words


def pictomania_game(
    seed: int,
    deck: list[PictoCard],
    config: PictomaniaConfig,
    drawings: list[list[list[tuple[float, float]]]],
) -> Game:
    """A Pictomania game of 4 players (the human and 3 AI), 5 rounds."""
    rng = random.Random(seed)
    rules = PictomaniaRules(config)
    players = [HUMAN, "ia1", "ia2", "ia3"]
    setup = {"players": players, "deck": [c.to_dict() for c in deck], "seed": seed}
    g = Player(rules, setup)
    human_words, t = [], 0.0
    while g.state.phase != "game_over":
        rnd = g.state.round
        human_words.append(rnd.word(HUMAN))
        timeline: list[tuple[float, Any]] = []
        for p in players:
            drawing = rng.choice(drawings)
            for i, points in enumerate(drawing):
                timeline.append(
                    (t + 1 + i * 30 / len(drawing) + rng.random(), PictoStroke(player=p, points=points))
                )
            for o in players:
                if o != p:
                    right = rnd.secrets[o].number
                    number = (
                        right if rng.random() < 0.7 else rng.choice([n for n in range(1, 8) if n != right])
                    )
                    timeline.append((t + rng.uniform(8, 40), PlaceGuess(player=p, target=o, number=number)))
        for p in players[:-1]:
            timeline.append((t + rng.uniform(42, 55), Done(player=p)))
        for now, move in sorted(timeline, key=lambda e: e[0]):
            if g.state.phase == "playing":
                g.do(move, now)
        if g.state.phase == "playing":
            g.do(Tick(), g.state.round.deadline + 0.01)
        t = max(now for now, _ in g.log) + 5
        if g.state.phase == "scored":
            g.do(NextRound(player=HUMAN), t)
    return "pictomania", {**setup, "config": config.to_dict()}, g.log, human_words


# ------------------------------------------------------------------------------------------------
# Measurements


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def write_load(
    store: Store, moves: list[dict[str, Any]], count: int, rate: float | None, games: int = 50
) -> dict:
    """`count` append_move calls over `games` games, as fast as possible or paced at `rate` moves/s."""
    prefix = f"w{random.randrange(10**9)}"
    for i in range(games):
        store.create_game(f"{prefix}-{i}", "pictomania", {"seed": i}, hash_token("t"))
    seqs = [0] * games
    latencies = []
    start = time.perf_counter()
    for n in range(count):
        if rate is not None:
            wait = start + n / rate - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
        gi = n % games
        t0 = time.perf_counter()
        store.append_move(f"{prefix}-{gi}", seqs[gi], n * 0.01, moves[n % len(moves)])
        latencies.append(time.perf_counter() - t0)
        seqs[gi] += 1
    elapsed = time.perf_counter() - start
    return {
        "moves": count,
        "moves_per_s": count / elapsed,
        "p50_ms": percentile(latencies, 0.5) * 1e3,
        "p99_ms": percentile(latencies, 0.99) * 1e3,
        "max_ms": max(latencies) * 1e3,
    }


def group_load(store: Store, moves: list[dict[str, Any]], count: int, rate: float, games: int = 50) -> dict:
    """The same load through `MoveWriter` (group commit): submit → committed latency, at `rate` moves/s."""
    prefix = f"g{random.randrange(10**9)}"
    for i in range(games):
        store.create_game(f"{prefix}-{i}", "pictomania", {"seed": i}, hash_token("t"))
    writer = MoveWriter(store)
    latencies: list[float] = []
    submit_s: list[float] = []
    start = time.perf_counter()
    for n in range(count):
        wait = start + n / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        t0 = time.perf_counter()
        future = writer.submit(f"{prefix}-{n % games}", n // games, n * 0.01, moves[n % len(moves)])
        submit_s.append(time.perf_counter() - t0)
        future.add_done_callback(lambda _, t0=t0: latencies.append(time.perf_counter() - t0))
    writer.flush()
    elapsed = time.perf_counter() - start
    writer.close()
    return {
        "moves": count,
        "moves_per_s": count / elapsed,
        "batches": writer.batches,
        "submit_p99_ms": percentile(submit_s, 0.99) * 1e3,
        "p50_ms": percentile(latencies, 0.5) * 1e3,
        "p99_ms": percentile(latencies, 0.99) * 1e3,
    }


def fill(store: Store, games: list[Game], prefix: str, cut: Callable[[int], int] | None = None) -> int:
    """Store the games (each in one transaction); `cut(n)` keeps the first moves only (in progress)."""
    total = 0
    for i, (kind, setup, log, _) in enumerate(games):
        gid = f"{prefix}{i}"
        keep = log if cut is None else log[: cut(len(log))]
        store.create_game(gid, kind, {"kind": kind, **setup}, hash_token(gid))
        store.append_moves(gid, 0, keep)
        if cut is None:
            store.finish_game(gid, result={"moves": len(log)})
        total += len(keep)
    return total


def resume(store: Store, rules: dict[str, Any]) -> tuple[float, float, int]:
    """Load every unfinished game and replay it through its rules: (load s, replay s, games)."""
    t0 = time.perf_counter()
    stored = store.load_unfinished_games()
    t1 = time.perf_counter()
    for game in stored:
        setup = {k: v for k, v in game.setup.items() if k not in ("kind", "config")}
        replay(rules[game.kind], setup, [LoggedMove(now=m.at, move=m.move) for m in game.moves])
    return t1 - t0, time.perf_counter() - t1, len(stored)


def games_for(
    target: int, sample_words: Callable[[random.Random], list[str]], categories: int, seed: int = 0
) -> tuple[int, int]:
    """Games until every category the decks hold has `target` drawings: (games, categories)."""
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    games = 0
    while len(counts) < categories or min(counts.values()) < target:
        counts.update(sample_words(rng))
        games += 1
    return games, len(counts)


def coverage(target: int, kontour_per_game: float) -> dict[str, Any]:
    """How many games for `target` more drawings in every category the decks can deal."""
    from vocab import deal_table
    from vocab import kontour_deck as kdeck
    from vocab import pictomania_deck as pdeck

    cards = kdeck()
    kontour_words = {w for c in cards for w in c.words}
    picto_levels = PictomaniaConfig.load().levels_per_round
    picto_words = {w for c in pdeck() for s in c.sides for w in s.words}

    def kontour(rng: random.Random) -> list[str]:
        half = rng.choice(["top", "bottom"])
        turns = max(1, round(rng.gauss(kontour_per_game, 1)))
        colour = lambda: "orange" if rng.random() < ORANGE_RATE else "blue"  # noqa: E731
        return [rng.choice(cards).half(half).word(colour()) for _ in range(turns)]

    def pictomania(rng: random.Random) -> list[str]:
        return [rng.choice(rng.choice(deal_table(level, rng)).words) for level in picto_levels]

    k_games, k_cats = games_for(target, kontour, len(kontour_words))
    p_games, p_cats = games_for(target, pictomania, len(picto_words))
    return {
        "target": target,
        "kontour_categories": k_cats,
        "kontour_games": k_games,
        "pictomania_categories": p_cats,
        "pictomania_games": p_games,
        "both_categories": len(kontour_words | picto_words),
    }


@contextmanager
def backends(use_postgres: bool) -> Iterator[list[tuple[str, Callable[[], Store]]]]:
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="griffon-bench-")))
        counter = iter(range(10**6))
        found: list[tuple[str, Callable[[], Store]]] = [
            ("sqlite", lambda: open_store(f"sqlite:///{folder}/normal-{next(counter)}.db")),
        ]
        from store import StoreSettings

        found.append(
            (
                "sqlite (synchronous=full)",
                lambda: open_store(
                    StoreSettings(
                        database_url=f"sqlite:///{folder}/full-{next(counter)}.db", db_synchronous="full"
                    )
                ),
            )
        )
        if use_postgres:
            try:
                from griffon.launch import PostgresUnavailable, running_postgres

                url = stack.enter_context(running_postgres(durable=True))
                import psycopg

                def pg() -> Store:
                    schema = f"b{next(counter)}"
                    with psycopg.connect(url, autocommit=True) as admin:
                        admin.execute(f"CREATE SCHEMA {schema}")
                    return open_store(f"{url}?options=-csearch_path%3D{schema}")

                def pg_async() -> Store:
                    schema = f"b{next(counter)}"
                    with psycopg.connect(url, autocommit=True) as admin:
                        admin.execute(f"CREATE SCHEMA {schema}")
                    return open_store(f"{url}?options=-csearch_path%3D{schema}%20-csynchronous_commit%3Doff")

                found.append(("postgresql", pg))
                found.append(("postgresql (synchronous_commit=off)", pg_async))
            except PostgresUnavailable as error:
                print(f"PostgreSQL skipped: {error}")
        yield found


def stall_figures(folder: Path, games: int = 1_000, moves: int = 200) -> dict[str, Any]:
    """What a game's writes (the event loop's `append_move`) wait while (a) the hourly prune deletes
    `games` old games of `moves` moves each, in batches of 500 rows or in one transaction, and
    (b) another process holds the write lock (``griffon db vacuum`` on the live file)."""
    import sqlite3
    import threading

    out: dict[str, Any] = {}
    for name, batch in (("one transaction", 10**9), ("batches of 500", 500)):
        path = folder / f"prune-{batch}.db"
        with open_store(StoreSettings(database_url=f"sqlite:///{path}", db_timeout_ms=60_000)) as db:
            old = 1_000.0
            for g in range(games):
                db.create_game(f"old{g}", "kontour", {}, hash_token("t"), now=old)
                log = [(float(i), {"kind": "tick", "i": i}) for i in range(moves)]
                db.append_moves(f"old{g}", 0, log, now=old)
            db.create_game("live", "kontour", {}, hash_token("t"))
            waits: list[float] = []
            done = threading.Event()

            def prune(db: Store = db, batch: int = batch, done: threading.Event = done) -> None:
                keep = Retention(games_days=1, transcripts_days=0, drawings_days=0)
                db.prune(keep, batch=batch)  # type: ignore[call-arg]
                done.set()

            thread = threading.Thread(target=prune)
            started = time.perf_counter()
            thread.start()
            seq = 0
            while not done.is_set():
                t = time.perf_counter()
                db.append_move("live", seq, 0.0, {"kind": "tick"})
                waits.append((time.perf_counter() - t) * 1000)
                seq += 1
                time.sleep(0.002)  # a busy game server: a move every ~2 ms
            thread.join()
            out[f"prune {games} games ({games * moves} moves), {name}"] = {
                "prune_s": round(time.perf_counter() - started, 2), "moves_written": seq,
                "move_p50_ms": round(percentile(waits, 50), 3), "move_max_ms": round(max(waits), 1),
            }
    path = folder / "locked.db"
    for timeout_ms in (5_000, 500):
        with open_store(StoreSettings(database_url=f"sqlite:///{path}", db_timeout_ms=timeout_ms)) as db:
            db.create_game(f"g{timeout_ms}", "kontour", {}, hash_token("t"))
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # what VACUUM holds for its whole run
            t = time.perf_counter()
            try:
                db.append_move(f"g{timeout_ms}", 0, 0.0, {"kind": "tick"})
                result = "written"
            except StoreUnavailable:
                result = "failed (game abandoned, logged)"
            out[f"a move while another process holds the write lock, timeout {timeout_ms} ms"] = {
                "event_loop_blocked_ms": round((time.perf_counter() - t) * 1000, 1), "result": result,
            }
            other.execute("ROLLBACK")
            other.close()
    for what, figures in out.items():
        print(f"{what}: {figures}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--games", type=int, default=1_000, help="finished games per kind for the size figure"
    )
    parser.add_argument("--writes", type=int, default=3_000, help="append_move calls per write test")
    parser.add_argument("--rate", type=float, default=500.0, help="paced write load, moves/s")
    parser.add_argument("--restart", type=int, nargs="+", default=[50, 200], help="games in progress")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--stall", action="store_true", help="only the stall figures (prune, held lock)")
    args = parser.parse_args(argv)
    if args.stall:
        with tempfile.TemporaryDirectory() as folder:
            figures = stall_figures(Path(folder))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        return

    t0 = time.perf_counter()
    drawings = page_drawings()
    kdeck, pdeck = kontour_deck(), pictomania_deck()
    kconf, pconf = KontourConfig.load(), PictomaniaConfig.load()
    kontour = [kontour_game(s, kdeck, kconf) for s in range(args.games)]
    picto = [pictomania_game(s, pdeck, pconf, drawings) for s in range(args.games)]
    gen_s = time.perf_counter() - t0
    moves_k = statistics.mean(len(g[2]) for g in kontour)
    moves_p = statistics.mean(len(g[2]) for g in picto)
    human_k = statistics.mean(len(g[3]) for g in kontour)
    human_p = statistics.mean(len(g[3]) for g in picto)
    picto_moves = [m for g in picto[:50] for _, m in g[2]]
    bytes_p = statistics.mean(len(json.dumps(m, separators=(",", ":"))) for m in picto_moves)
    print(
        f"{2 * args.games} games generated through the rules engines in {gen_s:.1f} s: Kontour {moves_k:.0f} "
        f"moves/game ({human_k:.1f} drawings by the human), Pictomania {moves_p:.0f} moves/game "
        f"({human_p:.0f} drawings by the human), {bytes_p:.0f} JSON bytes per Pictomania move"
    )
    figures: dict[str, Any] = {
        "games": {
            "kontour_moves": moves_k,
            "pictomania_moves": moves_p,
            "kontour_human_drawings": human_k,
            "pictomania_human_drawings": human_p,
        }
    }
    rules = {
        "kontour": KontourRules(kconf, judge=lambda key, text: key == text),
        "pictomania": PictomaniaRules(pconf),
    }
    with backends(not args.no_postgres) as found:
        for name, make in found:
            row: dict[str, Any] = {}
            with make() as store:
                row["sequential"] = write_load(store, picto_moves, args.writes, None)
                row["paced"] = write_load(store, picto_moves, min(args.writes, int(args.rate * 6)), args.rate)
                row["group"] = group_load(store, picto_moves, min(args.writes, int(args.rate * 6)), args.rate)
            print(
                f"\n[{name}] append_move, one writer: {row['sequential']['moves_per_s']:,.0f} moves/s, "
                f"p50 {row['sequential']['p50_ms']:.2f} ms, p99 {row['sequential']['p99_ms']:.2f} ms"
            )
            print(
                f"[{name}] paced at {args.rate:.0f} moves/s: p50 {row['paced']['p50_ms']:.2f} ms, "
                f"p99 {row['paced']['p99_ms']:.2f} ms, max {row['paced']['max_ms']:.1f} ms"
            )
            group = row["group"]
            print(
                f"[{name}] paced at {args.rate:.0f} moves/s through MoveWriter (group commit): submit p99 "
                f"{group['submit_p99_ms']:.3f} ms; committed p50 {group['p50_ms']:.2f} ms, "
                f"p99 {group['p99_ms']:.2f} ms ({group['batches']} transactions for {group['moves']} moves)"
            )
            if "full" in name or "synchronous_commit" in name:
                figures[name] = row
                continue
            for kind, games in (("kontour", kontour), ("pictomania", picto)):
                with make() as store:
                    empty = store.info().size_bytes
                    t = time.perf_counter()
                    moves = fill(store, games, "f")
                    fill_s = time.perf_counter() - t
                    store.vacuum()
                    size = store.info().size_bytes - empty
                row[f"size_per_1000_{kind}"] = size * 1000 / len(games)
                print(
                    f"[{name}] {len(games)} finished {kind} games ({moves:,} moves) in {fill_s:.1f} s: "
                    f"{size * 1000 / len(games) / 2**20:.1f} MiB per 1,000 games "
                    f"({size / moves:.0f} bytes per move)"
                )
            for n in args.restart:
                with make() as store:
                    rng = random.Random(n)
                    mixed = [kontour[i % len(kontour)] if i % 2 else picto[i % len(picto)] for i in range(n)]
                    fill(store, mixed, "r", cut=lambda k, rng=rng: rng.randint(k // 4, 3 * k // 4))
                    location = store.location
                t = time.perf_counter()
                with make_again(name, location) as store:
                    opened = time.perf_counter() - t
                    load_s, replay_s, resumed = resume(store, rules)
                row[f"restart_{n}"] = {
                    "open_s": opened,
                    "load_s": load_s,
                    "replay_s": replay_s,
                    "resumed": resumed,
                }
                print(
                    f"[{name}] restart, {n} games in progress: {resumed} resumed; open {opened * 1e3:.0f} ms,"
                    f" load {load_s * 1e3:.0f} ms, replay {replay_s * 1e3:.0f} ms"
                )
            figures[name] = row
    print()
    for target in (10, 100):
        c = coverage(target, human_k)
        figures[f"coverage_{target}"] = c
        print(
            f"+{target} drawings in each category the decks deal: {c['pictomania_games']:,} Pictomania games "
            f"({c['pictomania_categories']} categories) or {c['kontour_games']:,} Kontour games "
            f"({c['kontour_categories']} categories); {c['both_categories']} of 345 categories in either deck"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


@contextmanager
def make_again(name: str, location: str) -> Iterator[Store]:
    """Reopen the database at `location`, as a restarted server does (a PostgreSQL location is its
    URL, password redacted: the bench's server has none)."""
    with open_store(f"sqlite:///{location}" if name.startswith("sqlite") else location) as store:
        yield store


if __name__ == "__main__":
    main()
