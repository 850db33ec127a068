"""Games in the database, in process: a game's setup and move log bring it back exactly (state, move
count, token, AI players going on) in a new `GameManager` on the same SQLite file; a finished or
expired game is not resumed, a log the rules refuse is abandoned; consented drawings (and only
those) are stored and exported in the Quick, Draw! layout. The real server killed with SIGKILL:
``tests/test_service_restart.py``."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from games.core import RuleError
from griffon.launch import Patience
from service.play.clock import ManualClock
from service.play.manager import GameManager
from service.play.settings import PlaySettings
from service.play.sockets import handle_text
from service.play.table import HUMAN, GameSession
from service.settings import Settings
from store import Store, open_store
from store.drawings_export import export_quickdraw
from tests.test_store import db_url  # noqa: F401 - fixture: both backends


async def uniform(drawing: list[Any], candidates: Any) -> dict[str, float]:
    """A recognizer that reads nothing (these tests follow the moves, not the model)."""
    return {c: 1 / len(candidates) for c in candidates}


def manager(store: Store, **play: Any) -> GameManager:
    return GameManager(Settings(), PlaySettings(**play), lambda key: uniform, frozenset(), store,
                       clock=ManualClock())


def move(**fields: Any) -> str:
    return json.dumps({"type": "move", "move": fields})


def line(i: int) -> str:
    return move(kind="stroke", points=[[30 + 5 * i, 40], [200, 60 + 5 * i]])


def play_a_while(session: GameSession, seconds: float, human: list[str]) -> None:
    """The person's frames, then `seconds` of game time in 1 s steps of the AI driver (the session's
    clock is moved forward: no waiting)."""
    for text in human:
        reply = handle_text(session, text)
        assert reply is None or reply.get("type") == "error", reply
    for _ in range(int(seconds)):
        session.clock.advance(1.0)
        try:
            session.step(session.now())
        except RuleError:
            pass


def kontour_human_turn(session: GameSession) -> list[str]:
    """The person's frames for their own Kontour turn (card, word, three lines)."""
    return [move(kind="draw_card"), move(kind="choose_word", color="blue"), line(0), line(1), line(2)]


@pytest.mark.parametrize("kind", ["kontour", "pictomania"])
def test_a_game_comes_back_from_its_move_log(kind: str, db_url: str) -> None:  # noqa: F811
    """On SQLite and on a real PostgreSQL server (``db_url``: tests/test_store.py)."""

    async def run() -> None:
        store = open_store(db_url)
        first = manager(store)
        session = first.create(kind, opponents=2, level="normal", name="Ana", seed=11)
        assert session.driver is not None
        session.driver.cancel()  # the test drives the game
        human = kontour_human_turn(session) if kind == "kontour" else [line(i) for i in range(4)]
        play_a_while(session, 45, human)
        before, moves, token = session.state, session.moves, session.token
        assert moves >= 8  # the person's moves, the AI players' and the timers'
        await first.settle()  # the writer's thread has them all
        assert not session.gate.held and session.frame([])["seq"] == session.seq
        stored = store.load_game(session.id)
        assert stored is not None and [m.seq for m in stored.moves] == list(range(moves))
        assert stored.token_hash != token and token not in json.dumps(stored.setup)
        await first.aclose()  # a shutdown does not end the game

        second = manager(store)
        assert second.resume() == (1, 0)
        back = second.get(session.id)
        assert back.state == before and back.moves == moves and back.kind == kind
        other = token[:-1] + ("y" if token.endswith("x") else "x")  # one character off, never the token
        assert back.check_token(token) and not back.check_token(other)
        assert before.clock <= back.now() < before.clock + 1  # timers paused while it was down
        assert back.log_bytes == session.log_bytes  # the log's size, counted again from what is stored
        assert back.names == session.names
        frame = back.frame([])
        assert frame["state"] == session.rules.view(before, HUMAN).to_dict()
        back.driver.cancel()
        play_a_while(back, 40, [])  # the AI players go on
        assert back.moves > moves
        await second.settle()
        assert len(store.load_game(session.id).moves) == back.moves
        await second.aclose()
        store.close()

    asyncio.run(run())


def test_finished_and_expired_games_are_not_resumed_and_a_bad_log_is_abandoned(tmp_path: Path) -> None:
    async def run() -> None:
        store = open_store(f"sqlite:///{tmp_path / 'g.db'}")
        first = manager(store, pictomania_rounds=1, pictomania_round_s=5)
        over = first.create("pictomania", opponents=2, level="easy", name="Ana", seed=1)
        idle = first.create("kontour", opponents=2, level="easy", name="Ana", seed=2, client="b")
        broken = first.create("kontour", opponents=2, level="easy", name="Ana", seed=3, client="c")
        for s in (over, idle, broken):
            s.driver.cancel()
        play_a_while(over, 10, [])  # the only round times out: game over
        assert over.state.phase == "game_over"
        await first.settle()
        done = store.load_game(over.id)
        assert done.status == "finished" and done.result["winners"] == list(over.state.winners)
        store.append_move(broken.id, broken.moves, 0.0, {"kind": "guess", "player": "nobody", "text": "x"})
        # the games' clock stands at 10 s (one clock for all)
        first.settings = Settings(play_limits={"idle_expiry_s": 12})
        idle.last_activity -= 5  # idle 15 s: the only one past the limit
        assert idle.id in await first.sweep()
        await first.settle()
        assert store.load_game(idle.id).status == "expired"
        await first.aclose()

        second = manager(store)
        assert second.resume() == (0, 1)  # the broken log: abandoned, the start goes on
        assert store.load_game(broken.id).status == "abandoned"
        assert store.load_unfinished_games() == []
        await second.aclose()
        store.close()

    asyncio.run(run())


def test_a_move_the_database_refuses_for_good_closes_the_table_with_a_message(tmp_path: Path) -> None:
    """Another writer took the game's next number (two servers on one database): the move cannot
    be kept, so it is never shown; the person is told and the table closes (the game is not
    marked abandoned behind their back: the other writer has it)."""

    async def run() -> None:
        store = open_store(f"sqlite:///{tmp_path / 'g.db'}")
        games = manager(store)
        session = games.create("pictomania", opponents=2, level="easy", name="Ana", seed=6)
        session.driver.cancel()
        socket = session.attach()
        assert handle_text(session, line(0)) is None
        await games.settle()
        store.append_move(session.id, session.moves, session.now(), {"kind": "tick"})
        assert handle_text(session, line(1)) is None
        await games.settle()
        frames = []
        while not socket.empty():
            frames.append(socket.get_nowait())
        strokes = [e for f in frames if f and f["type"] == "update" for e in f["events"]
                   if e["kind"] == "stroke_drawn"]
        assert len(strokes) == 1  # the first line only: the second was never stored
        assert {"type": "error", "code": "not_stored"}.items() <= frames[-2].items() and frames[-1] is None
        assert session.id not in games.games
        assert store.load_game(session.id).status == "playing"
        await games.aclose()
        store.close()

    asyncio.run(run())


@pytest.mark.parametrize("learn", [False, True])
def test_only_a_consenting_persons_drawings_are_stored_and_exported(learn: bool, tmp_path: Path) -> None:
    async def run() -> tuple[GameSession, GameSession]:
        store = open_store(f"sqlite:///{tmp_path / 'g.db'}")
        games = manager(store, pictomania_rounds=1, pictomania_round_s=20, kontour_timer_s=10)
        picto = games.create("pictomania", opponents=2, level="easy", name="Ana", seed=4, learn=learn)
        kontour = games.create("kontour", opponents=2, level="easy", name="Ana", seed=5, learn=learn,
                               client="b")
        for s in (picto, kontour):
            s.driver.cancel()
        play_a_while(picto, 0, [line(0), line(1), move(kind="undo"), line(2)])
        play_a_while(picto, 25, [])
        assert picto.state.phase == "game_over"
        turns = 0
        while kontour.state.drawer != HUMAN or kontour.state.phase != "draw":  # the person's turn
            play_a_while(kontour, 5, [])
            turns += 1
            assert turns < 40
        play_a_while(kontour, 15, kontour_human_turn(kontour))  # drawn, then the timer runs out
        await games.aclose()  # waits for the drawings being written
        stored = list(store.iter_drawings())
        if not learn:
            assert stored == []
            return picto, kontour
        by_game = {d.game: d for d in stored}
        assert set(by_game) == {"pictomania", "kontour"} and len(stored) == 2
        drawn = by_game["pictomania"]
        assert drawn.word == picto.state.results[0].words[HUMAN]
        assert len(drawn.strokes) == 2  # two lines after the undo
        assert drawn.strokes[1][0] == [30 + 10.0, 200.0] and drawn.strokes[1][2][0] >= 0
        assert drawn.conditions["style"] == "free" and drawn.conditions["round"] == 1
        lines = by_game["kontour"]
        assert lines.word == kontour.state.history[-1].word and len(lines.strokes) == 3
        assert lines.conditions["style"] == "lines" and lines.conditions["timer_s"] == 10
        assert "Ana" not in json.dumps([d.conditions for d in stored])
        export_quickdraw(store, tmp_path / "out")
        raw = (tmp_path / "out" / "full" / "raw" / f"{drawn.word}.ndjson").read_text().splitlines()
        exported = json.loads(raw[0])
        assert exported["word"] == drawn.word and len(exported["drawing"]) == 2
        store.close()
        return picto, kontour

    asyncio.run(run())


def test_the_page_offers_the_consent_switch_off_and_the_choice_is_kept_with_the_game(
    tiny_checkpoint: Path,
) -> None:
    from tests.service_server import in_process

    with in_process(tiny_checkpoint) as client:
        page = client.get("/").text
        switch = page[page.index('<label class="consent">'):page.index("</label>", page.index('"consent"'))]
        assert 'type="checkbox" name="learn"' in switch and "checked" not in switch
        assert "Aider Griffon à apprendre" in switch and "ni nom, ni adresse" in switch
        assert 'learn: form.get("learn") === "on"' in client.get("/static/app.js").text
        refused = client.post("/v1/play", json={"game": "kontour", "learn": "maybe"})
        assert refused.status_code == 422 and "learn" in refused.json()["message"]
        store = client.app.state.store
        for learn in (None, True):
            body = {"game": "kontour"} | ({} if learn is None else {"learn": learn})
            created = client.post("/v1/play", json=body)
            assert created.status_code == 201, created.text
            stored = store.load_game(created.json()["game_id"])
            assert stored.setup["learn"] is bool(learn) and stored.status == "playing"


def test_the_service_prunes_at_start_and_then_every_period(tmp_path: Path) -> None:
    from service.app import prune_forever

    async def playing(store: Store, gone: str) -> set[str]:
        """The games still kept once `gone` has been pruned (fails after 10 s on a quiet machine)."""
        patience = Patience(10, f"{gone} was not pruned")
        while not patience.expired():
            ids = {g.id for g in store.load_unfinished_games()}
            if gone not in ids:
                return ids
            await asyncio.sleep(0.05)
        raise patience.failure()

    async def run() -> None:
        store = open_store(f"sqlite:///{tmp_path / 'g.db'}")
        month = 31 * 86_400.0  # retention: 30 days by default
        store.create_game("old", "kontour", {"seed": 1}, "h", now=time.time() - month)
        store.create_game("new", "kontour", {"seed": 2}, "h")
        pruner = asyncio.create_task(prune_forever(store, every_s=0.3))
        assert await playing(store, "old") == {"new"}  # the pass at start
        store.create_game("older", "kontour", {"seed": 3}, "h", now=time.time() - 2 * month)
        assert await playing(store, "older") == {"new"}  # a later pass
        pruner.cancel()
        store.close()

    asyncio.run(run())


def test_a_stalled_database_pauses_the_table_and_every_move_is_kept(tmp_path: Path) -> None:
    """Another process holds the write lock (``griffon db vacuum`` on the live file): the move is
    held, not shown; the table pauses (the person is told, their moves refused, the game clock and
    the AI players stop); once the lock is free the writer's retry stores the move, the page gets
    it and the table resumes by itself. Nothing is marked abandoned."""
    import sqlite3

    from store import StoreSettings

    async def wait_for(test: Any, what: str) -> None:
        patience = Patience(10, what)
        while not test():
            if patience.expired():
                raise patience.failure()
            await asyncio.sleep(0.01)

    async def run() -> None:
        path = tmp_path / "g.db"
        store = open_store(StoreSettings(database_url=f"sqlite:///{path}", db_timeout_ms=50))
        games = manager(store)
        session = games.create("pictomania", opponents=2, level="easy", name="Ana", seed=6)
        session.driver.cancel()
        socket = session.attach()
        assert socket.get_nowait()["type"] == "state"
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        assert handle_text(session, line(0)) is None  # applied, held: not shown
        await wait_for(lambda: games.writer.failing is not None, "the writer did not see the lock")
        session.tick()
        assert session.gate.paused_at is not None and socket.get_nowait()["type"] == "paused"
        assert socket.empty()  # the stroke is not shown
        stopped = session.now()
        session.clock.advance(30.0)  # the round's whole timer: it does not run out during a pause
        session.tick()
        assert session.now() == stopped and session.state.phase == "playing"
        assert handle_text(session, line(1))["code"] == "paused"
        other.execute("ROLLBACK")
        other.close()
        await wait_for(lambda: session.gate.paused_at is None, "the table did not resume")
        frames = [socket.get_nowait() for _ in range(socket.qsize())]
        assert [f["type"] for f in frames] == ["update", "resumed"]
        assert frames[0]["events"][0]["kind"] == "stroke_drawn"
        assert session.now() == stopped and frames[1]["paused_s"] == 30.0
        stored = store.load_game(session.id)
        assert stored.status == "playing" and len(stored.moves) == session.moves == 1
        await games.aclose()
        assert manager(store).resume() == (1, 0)
        store.close()

    asyncio.run(run())


def test_a_persons_stroke_is_encoded_once_and_stored_as_encoded(tmp_path: Path, monkeypatch) -> None:
    """The JSON of a person's stroke is made once, on the event loop: its size bounds the game's
    log (`MoveBounds.check_length`) and the store's writer thread writes that very text."""
    import store.records

    encoded: list[Any] = []
    compact_json = store.records.compact_json

    def counted(value: Any) -> str:
        encoded.append(value)
        return compact_json(value)

    monkeypatch.setattr(store.records, "compact_json", counted)

    async def run() -> None:
        db = open_store(f"sqlite:///{tmp_path / 'griffon.db'}")
        games = manager(db)
        session = games.create("pictomania", opponents=2, level="normal", name="Ana", seed=3)
        assert session.driver is not None
        session.driver.cancel()  # only the person's moves
        encoded.clear()
        assert handle_text(session, line(0)) is None
        await games.settle()
        strokes = [value for value in encoded if isinstance(value, dict) and value.get("kind") == "stroke"]
        assert len(strokes) == 1, strokes
        stored = db.load_game(session.id)
        assert stored is not None and stored.moves[-1].move == strokes[0]
        assert session.log_bytes == len(compact_json(strokes[0]).encode("utf-8"))
        await games.aclose()
        db.close()

    asyncio.run(run())
