"""Nothing lost: the real server killed with SIGKILL in the middle of a Kontour and a Pictomania game
(and after a room's bot round), started again on the same database, the page's socket back with
the same id and token, and both games played to the end. What the person saw before the kill is
exactly the stored move log replayed; after the restart the game goes on from there (same
drawings, scores, history, names). The consenting person's Pictomania drawing is then exportable
with ``griffon db export``; the bot's transcript is read back with its key, the room's consented
drawing is stored. A corrupt database stops ``griffon serve`` with its message."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from griffon.launch import REPO, Patience, Server, patient, running_server, tuning
from service.play.manager import GameManager
from service.play.settings import PlaySettings
from service.play.table import HUMAN
from service.play.table_words import load_words
from service.settings import Settings
from store import open_store
from tests.play_helpers import FAST, HOUSE, Player, model_env, new_game
from tests.test_service_bot import WORDS, Room, square
from tests.test_store import damaged_last_page


async def uniform(drawing: list[Any], candidates: Any) -> dict[str, float]:
    return {c: 1 / len(candidates) for c in candidates}


def replayed(db: Path, game_id: str, upto: int | None = None) -> tuple[Any, dict[str, Any], int]:
    """The game rebuilt from the database by the server's own code: (full state, the person's
    view, moves stored), from the first `upto` moves when given."""

    async def run() -> tuple[Any, dict[str, Any], int]:
        store = open_store(f"sqlite:///{db}")
        try:
            stored = store.load_game(game_id)
            assert stored is not None
            games = GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), None)
            session = games._build(game_id, stored.kind, stored.setup, "", stored.token_hash)
            session.replay(replace(stored, moves=stored.moves[:upto]))
            session.driver = None
            return session.state, session.frame([])["state"], len(stored.moves)
        finally:
            store.close()

    return asyncio.run(run())


def is_state(frame: dict[str, Any]) -> bool:
    return frame["type"] in ("state", "update")


def kontour_play(player: Player, db: Path, game_id: str, until: Any, timeout: float = 60.0) -> None:
    """Play Kontour as a person who always knows the AI drawer's word (read from the database):
    draw their own turns (card, word, lines), find the AI's words; until `until(frame)`."""
    words = load_words(None)
    guessed: set[int] = set()
    known: dict[int, str] = {}  # turn number -> the AI drawer's word (one replay per turn, not per frame)
    drawn = 0
    patience = Patience(timeout, "Kontour did not get there")
    while not patience.expired():
        frame = player.recv(0.2)
        if frame is not None and is_state(frame) and until(frame):
            return
        st = player.state
        turn = st.get("turn")
        if st.get("phase") == "draw" and st.get("drawer") == HUMAN:
            player.move(kind="draw_card")
            player.until(lambda f: is_state(f) and f["state"]["phase"] != "draw")
        elif st.get("phase") == "choose" and turn and turn["drawer"] == HUMAN:
            player.move(kind="choose_word", color="blue")
            player.until(lambda f: is_state(f) and f["state"]["phase"] == "drawing")
            drawn = 0
        elif st.get("phase") == "drawing" and turn and turn["drawer"] == HUMAN and drawn < 3:
            player.move(kind="stroke", points=HOUSE[drawn])
            drawn += 1
        elif (st.get("phase") == "drawing" and turn and turn["drawer"] != HUMAN
              and turn["number"] not in guessed and HUMAN not in turn["finders"]
              and (not st.get("tied") or HUMAN in st["tied"])):
            if turn["number"] not in known:
                full, _, _ = replayed(db, game_id)
                if full.turn is not None and full.turn.word:
                    known[full.turn.number] = full.turn.word
            if turn["number"] in known:
                player.move(kind="guess", text=words.french(known[turn["number"]]))
                guessed.add(turn["number"])
    raise patience.failure(f"last frames: {player.frames[-3:]}")


def stroke_added(frame: dict[str, Any]) -> bool:
    return is_state(frame) and any(e["kind"] == "stroke_added" for e in frame["events"])


async def until(room: Room, kind: str) -> dict[str, Any]:
    """The next frame of type `kind` (the bot may speak in between)."""
    for _ in range(20):
        frame = await room.recv()
        if frame["type"] == kind:
            return frame
    raise AssertionError(f"no {kind} frame")


async def bot_rounds(ws_url: str) -> dict[str, Any]:
    """Two rounds of a room's bot: the first with ``drawing_consent``, the second without."""
    async with websockets.connect(ws_url + "/v1/bot") as ws:
        room = Room(ws)
        welcome = await room.start(candidates=WORDS, analysis=False)
        for stroke in square():
            await room.send({"type": "stroke", "stroke": stroke})
        await room.send({"type": "round_end", "answer": "square", "drawing_consent": True})
        assert (await until(room, "round_over"))["strokes"] == 2
        await room.send({"type": "round_start", "round": "r2", "candidates": WORDS})
        await until(room, "round_ready")
        await room.send({"type": "stroke", "stroke": square(5)[0]})
        await room.send({"type": "round_end", "answer": "circle"})  # no consent: not kept
        await until(room, "round_over")
        return welcome  # the socket is still open when the server dies


def stored_in_time(db: Path, session: str, round_ends: int, drawings: int, deadline_s: float = 10.0) -> None:
    """Wait until the server's background writer has put the transcript (with `round_ends` round
    ends) and the room drawings in the SQLite file (read-only: the server is writing it)."""
    patience = Patience(deadline_s, "the transcript and the drawings were not stored")
    while True:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT events FROM transcripts WHERE id = ?", (session,)).fetchone()
            ends = 0 if row is None else sum(e["kind"] == "round_end" for e in json.loads(row[0]))
            stored = conn.execute("SELECT COUNT(*) FROM drawings WHERE game = 'room'").fetchone()[0]
        if ends >= round_ends and stored >= drawings:
            return
        if patience.expired():
            raise patience.failure(f"{ends} round ends, {stored} drawings")
        time.sleep(0.05)


def kill(server: Server) -> None:
    server.kill()  # SIGKILL to the whole process group: supervisor and workers
    server.process.wait(timeout=patient(10))


def test_both_games_survive_sigkill_mid_game_and_finish_after_a_restart(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    data = tmp_path / "var"
    db = data / "griffon.db"
    env = {**model_env(request), "GRIFFON_DB_DIR": str(data), "GRIFFON_BOT_ACCEPT_DRAWINGS": "true",
           **tuning(**{**FAST, "kontour_timer_s": 4, "kontour_target": 1, "pictomania_rounds": 1,
                       "pictomania_round_s": 6, "bot.transcript_save_s": 0.5})}
    with running_server(env) as first:
        kontour = new_game(first, game="kontour", opponents=2, level="easy", seed=7, name="Ana")
        picto = new_game(first, game="pictomania", opponents=2, level="easy", seed=7, learn=True)
        k, p = Player(first, kontour), Player(first, picto)
        p.until(is_state)
        for line in HOUSE[:3]:
            p.move(kind="stroke", points=line)
        p.until(lambda f: is_state(f) and len(f["state"]["round"]["drawings"][HUMAN]) == 3)
        kontour_play(k, db, kontour["game_id"], stroke_added)  # a turn being drawn
        seen = {"kontour": k.frame, "pictomania": p.frame}
        welcome = asyncio.run(bot_rounds(first.ws_url))
        transcript = f"/v1/bot/sessions/{welcome['session']}"
        key = {"key": welcome["transcript_key"]}
        before_kill = httpx.get(first.url + transcript, params=key).json()
        stored_in_time(db, welcome["session"], round_ends=2, drawings=1)  # then nothing is left to lose
        kill(first)

    # Everything the person saw is in the database: the log replayed to that point shows it.
    for game, frame in (("kontour", kontour), ("pictomania", picto)):
        _, view, stored = replayed(db, frame["game_id"], seen[game]["seq"])
        assert stored >= seen[game]["seq"] and view == seen[game]["state"]

    with running_server(env) as second:
        k2, p2 = Player(second, kontour), Player(second, picto)  # same id, same token
        back = {"kontour": k2.until(is_state), "pictomania": p2.until(is_state)}
        for game, frame in back.items():
            before = seen[game]
            assert frame["type"] == "state" and frame["seq"] >= before["seq"]
            assert frame["names"] == before["names"]
        picto_before, picto_after = seen["pictomania"]["state"], back["pictomania"]["state"]
        assert picto_after["round"]["drawings"][HUMAN] == picto_before["round"]["drawings"][HUMAN]
        assert picto_after["round"]["number"] == 1 and picto_after["phase"] == "playing"
        kontour_before, kontour_after = seen["kontour"]["state"], back["kontour"]["state"]
        assert kontour_after["history"][: len(kontour_before["history"])] == kontour_before["history"]
        assert kontour_after["turn"]["number"] >= kontour_before["turn"]["number"]
        assert kontour_after["turns_played"] >= kontour_before["turns_played"]

        p2.move(kind="done")  # the person takes a token; the AI players finish, or time runs out
        kontour_play(k2, db, kontour["game_id"], lambda f: f["state"]["phase"] == "game_over")
        assert k2.state["winners"]
        over = p2.until(lambda f: is_state(f) and f["state"]["phase"] == "game_over", timeout=30)
        assert over["state"]["results"][0]["drawings"][HUMAN] == picto_before["round"]["drawings"][HUMAN]
        bad = Player(second, {**picto, "ws": picto["ws"].replace("token=", "token=x")})
        assert bad.until(lambda f: f["type"] == "error")["code"] == "bad_token"
        after = httpx.get(second.url + transcript, params=key).json()
        wrong = httpx.get(second.url + transcript, params={"key": "not the key"})
    assert [e["kind"] for e in after["events"]] == [e["kind"] for e in before_kill["events"]]
    assert [e["answer"] for e in after["events"] if e["kind"] == "round_end"] == ["square", "circle"]
    assert after["live"] is False and after["room"] == "test" and wrong.status_code == 404

    status = open_store(f"sqlite:///{db}")
    try:
        assert {status.load_game(g["game_id"]).status for g in (kontour, picto)} == {"finished"}
        drawings = {d.game: d for d in status.iter_drawings()}
    finally:
        status.close()
    room = drawings["room"]  # the room's first round only (the second had no consent)
    assert room.word == "square" and len(room.strokes) == 2 and set(drawings) == {"room", "pictomania"}
    assert room.strokes[0][0] == [float(x) for x in square()[0][0]]
    times = [t for s in room.strokes for t in s[2]]
    assert times[0] == 0 and times == sorted(times)
    out = tmp_path / "export"
    griffon = str(Path(sys.executable).parent / "griffon")
    done = subprocess.run([griffon, "db", "export", "--out", str(out)], cwd=REPO,
                          env={**os.environ, "GRIFFON_DB_DIR": str(data)}, capture_output=True, text=True,
                          timeout=patient(60))
    assert done.returncode == 0, done.stderr
    word = over["state"]["results"][0]["words"][HUMAN]
    lines = (out / "full" / "raw" / f"{word}.ndjson").read_text().splitlines()
    assert len(lines) == 1 and len(json.loads(lines[0])["drawing"]) == 3


@pytest.mark.parametrize("damage", ["garbage", "last page"])
def test_a_corrupt_database_stops_griffon_serve_with_one_line(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "griffon.db"
    if damage == "garbage":
        path.write_bytes(os.urandom(4096))
        said = "is not a usable SQLite database"
    else:
        damaged_last_page(path)  # a real database, its last page scribbled over
        said = "is damaged (On tree page"
    before = path.read_bytes()
    griffon = str(Path(sys.executable).parent / "griffon")
    done = subprocess.run([griffon, "serve", "--port", "0"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "GRIFFON_DB_DIR": str(tmp_path)}, timeout=patient(60))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and "move the file away" in lines[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert path.read_bytes() == before  # never written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["griffon.db"]


@pytest.mark.parametrize("shared", [False, True], ids=["plain", "SO_REUSEPORT"])
def test_a_taken_port_stops_griffon_serve_at_once_with_one_line(tmp_path: Path, shared: bool) -> None:
    """Before the model loads, with one worker or several; another server sharing its port
    (``SO_REUSEPORT``, as the workers of another `griffon serve` do) is not joined either."""
    griffon = str(Path(sys.executable).parent / "griffon")
    with socket.create_server(("127.0.0.1", 0), reuse_port=shared) as taken:
        port = taken.getsockname()[1]
        for workers in ("1", "2"):
            done = subprocess.run([griffon, "serve", "--port", str(port), "--workers", workers], cwd=REPO,
                                  capture_output=True, text=True, env={**os.environ, "GRIFFON_DB_DIR":
                                  str(tmp_path)}, timeout=patient(60))
            assert done.returncode == 1, done.stderr
            assert done.stderr.strip().splitlines() == [
                f"error: cannot listen on 127.0.0.1:{port}: Address already in use"]
            assert "ready" not in done.stdout


BAD = [("GRIFFON_MAX_POINTS", "abc"), ("GRIFFON_PLAY_ROOM_GRACE_S", "-1"),
       ("GRIFFON_MAX_SESSIONS", "7"),  # a former name: refused, naming the new one
       ("GRIFFON_TUNING", '{"tick_s": -1}'), ("GRIFFON_TUNING", '{"tick": 1}')]  # a bad value, no such key


@pytest.mark.parametrize(("variable", "value"), BAD)
def test_a_bad_setting_stops_griffon_serve_with_one_line_naming_it(
    tmp_path: Path, variable: str, value: str
) -> None:
    """Before the model loads (GRIFFON_PLAY_* are read by create_app, not at the games' start)."""
    griffon = str(Path(sys.executable).parent / "griffon")
    done = subprocess.run([griffon, "serve", "--port", "0"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "GRIFFON_DB_DIR": str(tmp_path), variable: value},
                          timeout=patient(60))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and variable in lines[0], done.stderr
    assert "Application startup failed" not in done.stderr


def test_a_damaged_game_row_is_abandoned_with_one_line_and_the_others_resume(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """One byte that is not UTF-8 in one game's stored setup: that game is marked abandoned with one
    log line, the server's other games resume (SQLite itself refuses to decode the row)."""
    import logging

    path = tmp_path / "games.db"

    def manager(store: Any) -> GameManager:
        return GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), store)

    async def create() -> list[str]:
        store = open_store(f"sqlite:///{path}")
        games = manager(store)
        ids = [games.create("kontour", 1, "normal", "Ana", seed=seed, client=f"c{seed}").id
               for seed in range(3)]
        await games.aclose()
        store.close()
        return ids

    ids = asyncio.run(create())
    with sqlite3.connect(path) as db:  # the middle game's setup: a JSON text with a 0xFF byte in it
        (setup,) = db.execute("SELECT setup FROM games WHERE id = ?", (ids[1],)).fetchone()
        damaged = setup.encode()[:10] + b"\xff" + setup.encode()[10:]
        db.execute("UPDATE games SET setup = CAST(? AS TEXT) WHERE id = ?", (damaged, ids[1]))
    with sqlite3.connect(path) as db, pytest.raises(sqlite3.OperationalError, match="decode"):
        db.execute("SELECT setup FROM games WHERE id = ?", (ids[1],)).fetchall()  # really damaged

    async def resume() -> tuple[tuple[int, int], list[str]]:
        store = open_store(f"sqlite:///{path}")
        games = manager(store)
        with caplog.at_level(logging.INFO, logger="griffon.play"):
            counts = games.resume()
        back = sorted(games.games)
        await games.aclose()
        store.close()
        return counts, back

    counts, back = asyncio.run(resume())
    assert counts == (2, 1)
    assert back == sorted([ids[0], ids[2]])
    lines = [r.getMessage() for r in caplog.records if ids[1] in r.getMessage()]
    assert len(lines) == 1 and "abandoned" in lines[0], lines
    assert not any(r.exc_info for r in caplog.records)  # no traceback
    with sqlite3.connect(path) as db:
        status = dict(db.execute("SELECT id, status FROM games").fetchall())
    assert status[ids[1]] == "abandoned" and status[ids[0]] == status[ids[2]] == "playing"
