"""Stored before shown, on a real `griffon serve`: the disk fills up (a small tmpfs holding the SQLite
file, filled on demand), PostgreSQL stops (``pg_ctl stop``) — the table pauses with the French
message, the held move is not shown, the person's moves are refused, the AI players and the game
clock stop; once the store is back the held moves arrive and the table resumes by itself. A SIGKILL
of the server during an outage loses nothing the page was shown: after a restart every game is back
with every acknowledged move. The 30 s outage: ``python -m bench.bench_outage``."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from griffon.launch import PostgresUnavailable, Server, patient, postgres_server, running_server, tuning
from service.play.gate import PAUSED_MESSAGE
from service.play.manager import GameManager
from service.play.settings import PlaySettings
from service.play.table import HUMAN
from service.settings import Settings
from store import open_store
from tests.play_helpers import FAST, HOUSE, Player, model_env, new_game

OUTAGE_S = 2.0  # how long each outage lasts here (the benchmark holds one for 30 s)
ROUND = tuning(**{**FAST, "pictomania_round_s": 60, "pictomania_rounds": 1})  # FAST, one long round


def line(i: int) -> list[list[int]]:
    """The person's i-th stroke (each one different)."""
    return [[20 + 3 * i, 30], [220 - 2 * i, 40 + 4 * i]]


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A small RAM file system mounted at `path` (root only: skipped where mounting is refused)."""
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here: {done.stderr.strip() or done.returncode}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(folder: Path) -> Path:
    """Fill the file system of `folder` to the last byte; returns the filler file (delete it to free)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as out:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            try:
                while True:
                    out.write(b"\0" * chunk)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
    return filler


def human_strokes(player: Player) -> list[Any]:
    """The person's strokes the page was shown (its merged state)."""
    return player.state["round"]["drawings"][HUMAN]


def drain(player: Player) -> None:
    """Read what the server already sent (the page's view is up to date)."""
    while player.recv(0.3) is not None:
        pass


def outage(player: Player, stroke: list[list[int]]) -> tuple[dict[str, Any], int]:
    """The store is down: a stroke, then the ``paused`` frame (the AI players may have paused the
    table first, and then the stroke is refused). Returns the paused frame and the index of the
    frame after it."""
    player.move(kind="stroke", points=stroke)
    paused = player.until(lambda f: f["type"] == "paused", timeout=20)
    assert paused["message"] == PAUSED_MESSAGE == "Sauvegarde impossible — nouvel essai…"
    player.move(kind="stroke", points=line(99))  # refused while paused
    player.until(lambda f: f["type"] == "error" and f["code"] == "paused")
    return paused, len(player.frames)


def refused(player: Player) -> int:
    return sum(1 for f in player.frames if f["type"] == "error" and f["code"] == "paused")


def nothing_shown(player: Player, since: int) -> None:
    """While the store is down: no move reaches the page (neither the held one nor an AI player's)."""
    drain(player)
    assert [f["type"] for f in player.frames[since:] if f["type"] in ("state", "update")] == []


def check_resumed(player: Player, paused: dict[str, Any]) -> None:
    """The store is back: the held moves come, then ``resumed``; the game clock stood still (same
    game time and time left at the pause and after it)."""
    resumed = player.until(lambda f: f["type"] == "resumed", timeout=30)
    assert resumed["now"] == paused["now"] and resumed["time_left"] == paused["time_left"]
    assert resumed["paused_s"] > 0


def kill(server: Server) -> None:
    server.kill()  # SIGKILL to the whole process group: supervisor and workers
    server.process.wait(timeout=patient(10))


async def uniform(drawing: list[Any], candidates: Any) -> dict[str, float]:
    return {c: 1 / len(candidates) for c in candidates}


def replayed_view(url: str, game_id: str, upto: int) -> tuple[dict[str, Any], int, str]:
    """The person's view of the game rebuilt from the database's first `upto` moves by the server's
    own code, the number of moves stored and the game's status."""

    async def run() -> tuple[dict[str, Any], int, str]:
        store = open_store(url)
        try:
            stored = store.load_game(game_id)
            assert stored is not None, f"game {game_id} is not in the database"
            games = GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), None)
            session = games._build(game_id, stored.kind, stored.setup, "", stored.token_hash)
            session.replay(replace(stored, moves=stored.moves[:upto]))
            return session.frame([])["state"], len(stored.moves), stored.status
        finally:
            store.close()

    return asyncio.run(run())


def everything_shown_is_stored(url: str, seen: dict[str, Any], game_id: str) -> None:
    view, stored, status = replayed_view(url, game_id, seen["seq"])
    assert status == "playing" and stored >= seen["seq"] and view == seen["state"]


def test_a_full_disk_pauses_the_table_and_a_sigkill_meanwhile_loses_nothing_shown(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """SQLite on a 4 MiB tmpfs: the filler file takes the last byte, the next commit fails
    (« database or disk is full »)."""
    with tmpfs(tmp_path / "disk", "4m") as disk:
        env = {**model_env(request), **ROUND, "GRIFFON_DB_DIR": str(disk)}
        url = f"sqlite:///{disk / 'griffon.db'}"
        with running_server(env) as first:
            game = new_game(first, game="pictomania", opponents=2, level="easy", seed=3)
            player = Player(first, game)
            for i in range(2):
                player.move(kind="stroke", points=line(i))
            player.until(lambda f: f["type"] in ("state", "update") and len(human_strokes(player)) == 2)
            filler = fill(disk)
            paused, since = outage(player, line(2))
            time.sleep(OUTAGE_S)
            nothing_shown(player, since)
            filler.unlink()
            check_resumed(player, paused)
            held = refused(player) == 1  # line(2) was held (else the AI players had paused the table)
            assert human_strokes(player) == [line(0), line(1), *([line(2)] if held else [])]
            player.move(kind="stroke", points=line(3))  # the game goes on
            player.until(lambda f: f["type"] == "update" and any(
                e["kind"] == "stroke_drawn" and e["player"] == HUMAN for e in f["events"]))

            filler = fill(disk)  # a second outage, and the server is killed during it
            outage(player, line(4))
            drain(player)
            seen = player.frame
            kill(first)
            filler.unlink()
        everything_shown_is_stored(url, seen, game["game_id"])
        with running_server(env) as second:
            back = Player(second, game)  # same id, same token: the game is there
            frame = back.until(lambda f: f["type"] == "state")
            shown = seen["state"]["round"]["drawings"][HUMAN]
            assert frame["state"]["round"]["drawings"][HUMAN][: len(shown)] == shown
            back.move(kind="stroke", points=HOUSE[0])
            back.until(lambda f: f["type"] == "update" and len(back.state["round"]["drawings"][HUMAN])
                       == len(frame["state"]["round"]["drawings"][HUMAN]) + 1)


def test_postgresql_stopped_pauses_the_tables_and_a_sigkill_meanwhile_loses_nothing_shown(
    request: pytest.FixtureRequest,
) -> None:
    """Two tables: Pictomania where the person draws, Kontour where they have not moved. PostgreSQL
    stops for `OUTAGE_S`, starts again: the tables resume; it stops again and the server is killed:
    after a restart both games are back with every move their pages were shown."""
    try:
        server = postgres_server()
        pg = server.__enter__()
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL tests skipped: {error}")
    try:
        env = {**model_env(request), **ROUND, "GRIFFON_DB_URL": pg.url}
        with running_server(env) as first:
            picto = new_game(first, game="pictomania", opponents=2, level="easy", seed=5)
            kontour = new_game(first, game="kontour", opponents=2, level="easy", seed=5)
            player, idle = Player(first, picto), Player(first, kontour)
            idle.until(lambda f: f["type"] == "state")
            player.move(kind="stroke", points=line(0))
            player.until(lambda f: f["type"] in ("state", "update") and len(human_strokes(player)) == 1)
            pg.stop()
            paused, since = outage(player, line(1))
            time.sleep(OUTAGE_S)
            nothing_shown(player, since)
            pg.start()
            check_resumed(player, paused)
            player.move(kind="stroke", points=line(2))
            player.until(lambda f: f["type"] == "update" and any(
                e["kind"] == "stroke_drawn" and e["player"] == HUMAN and e["points"] == line(2)
                for e in f["events"]))

            pg.stop()  # the second outage: the server is killed during it
            outage(player, line(3))
            drain(player)
            drain(idle)
            seen = {"picto": player.frame, "kontour": idle.frame}
            kill(first)
            pg.start()
        everything_shown_is_stored(pg.url, seen["picto"], picto["game_id"])
        everything_shown_is_stored(pg.url, seen["kontour"], kontour["game_id"])
        with running_server(env) as second:
            for game, before in ((picto, seen["picto"]), (kontour, seen["kontour"])):
                back = Player(second, game)
                frame = back.until(lambda f: f["type"] in ("state", "error"))
                assert frame["type"] == "state" and frame["seq"] >= before["seq"], frame
                back.close()
    finally:
        server.__exit__(None, None, None)
