"""A bot room's memory in the database (service/bot/memory.py, ``bot_rooms``): stored and read back
on SQLite, bounded in bytes, written off the event loop (the latest snapshot per room), and a
session rebuilt from it that goes on with its round — its strokes, the words already said (never
again), its guess ids, its transcript and its key — as a room resuming on another replica or after
a restart finds it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.app import start_shared
from service.bot.kept_strokes import stroke_text
from service.bot.memory import BadMemory, restore, seal, snapshot, unseal
from service.bot.protocol import Hello, PlayerGuess, RoundStart, Verdict
from service.bot.session import BotSession
from service.settings import Settings
from store import BadRecord, BotRoomRecord, Store, hash_token, open_store
from store.background import BackgroundWriter
from store.settings import StoreSettings
from tests.conftest import shape

WORDS = ["square", "circle", "triangle", "line"]


def room(session: str = "s1", token: str = "tok", **state: Any) -> BotRoomRecord:
    return BotRoomRecord(session, hash_token(token), {"format": 1} | state,
                         [{"kind": "stroke", "round": "r", "t": 1.0}], "k1", 100.0, ["[[1,2],[3,4],[0,5]]"])


def test_a_room_s_memory_is_stored_read_back_and_deleted(db: Store) -> None:
    db.save_bot_rooms([room(said=["chien"])])
    found = db.load_bot_room("s1")
    assert found is not None
    assert found.strokes == [[[1, 2], [3, 4], [0, 5]]] and found.state["said"] == ["chien"]
    assert found.events == [{"kind": "stroke", "round": "r", "t": 1.0}]
    assert (found.key_id, found.created_at) == ("k1", 100.0)
    assert found.token_hash == hash_token("tok") and 0 <= found.age < 60
    stored = db.rows("SELECT token_hash, state FROM bot_rooms")
    assert "tok" not in {stored[0][0], *stored[0][1].split('"')}  # the token's hash only
    db.save_bot_rooms([room(said=["chat"])], deleted=[])  # replaced, not added
    assert db.load_bot_room("s1").state == {"format": 1, "said": ["chat"]}  # type: ignore[union-attr]
    assert db.rows("SELECT COUNT(*) FROM bot_rooms")[0][0] == 1
    db.save_bot_rooms([], deleted=["s1"])
    assert db.load_bot_room("s1") is None


def test_a_room_s_events_are_cut_to_its_bound_and_a_state_over_it_refused(db: Store) -> None:
    events = [{"kind": "stroke", "round": "r", "t": float(i), "top": [["square", 0.5]]} for i in range(200)]
    db.save_bot_rooms([BotRoomRecord("s1", hash_token("t"), {"format": 1}, events)], max_bytes=4096)
    kept = db.load_bot_room("s1")
    assert kept is not None and 0 < len(kept.events) < 200
    assert kept.events == events[:len(kept.events)]  # the first ones, as a transcript's
    assert db.rows("SELECT bytes FROM bot_rooms")[0][0] <= 4096
    huge = stroke_text([list(range(1000)), list(range(1000)), list(range(1000))])
    with pytest.raises(BadRecord, match="larger than"):  # refused whole: a drawing is never cut
        db.save_bot_rooms([BotRoomRecord("s2", hash_token("t"), {"format": 1}, strokes=[huge])],
                          max_bytes=4096)
    with pytest.raises(BadRecord, match="larger than"):
        db.save_bot_rooms([BotRoomRecord("s2", hash_token("t"), {"x": "y" * 5000})], max_bytes=4096)
    assert db.load_bot_room("s2") is None


@pytest.mark.parametrize("bad, match", [
    (BotRoomRecord("", "h", {}), "session"),
    (BotRoomRecord("s" * 65, "h", {}), "session"),
    (BotRoomRecord("s", "", {}), "token hash"),
    (BotRoomRecord("s", "h", {"x": float("nan")}), "not JSON"),
    (BotRoomRecord("s", "h", {"x": object()}), "not JSON"),
    (BotRoomRecord("s", "h", {}, strokes=[{"x": 1}]), "JSON list"),  # type: ignore[list-item]
])
def test_a_bad_room_record_is_refused_with_a_clear_error(db: Store, bad: BotRoomRecord,
                                                         match: str) -> None:
    with pytest.raises(BadRecord, match=match):
        db.save_bot_rooms([bad])
    assert db.rows("SELECT COUNT(*) FROM bot_rooms")[0][0] == 0


def test_a_damaged_stored_room_is_a_clear_error_and_old_rooms_are_pruned(db: Store) -> None:
    db.save_bot_rooms([room("s1"), room("s2")])
    with db.lock, db.write():
        db.run("UPDATE bot_rooms SET state = 'not json' WHERE session = 's1'")
        db.run("UPDATE bot_rooms SET updated_at = updated_at - 500 WHERE session = 's2'")
    with pytest.raises(BadRecord, match="not JSON"):
        db.load_bot_room("s1")
    assert db.load_bot_room("s2").age >= 500  # type: ignore[union-attr]
    assert db.prune_bot_rooms(100) == 1
    assert db.load_bot_room("s2") is None and db.rows("SELECT COUNT(*) FROM bot_rooms")[0][0] == 1


def test_the_writer_keeps_the_latest_snapshot_per_room_and_answers_every_caller(db: Store) -> None:
    writer = BackgroundWriter(db)
    try:
        with writer.cond:  # the thread waits: three snapshots of one room queue up, one is written
            futures = [writer.save_room(room(said=["a"] * n)) for n in (1, 2, 3)]
            deleted = writer.delete_room("gone")
            assert len(writer.rooms) == 2
        for future in [*futures, deleted]:
            future.result(timeout=10)
        assert db.load_bot_room("s1").state["said"] == ["a"] * 3  # type: ignore[union-attr]
        refused = writer.save_room(BotRoomRecord("s2", "", {}))  # one bad room fails alone
        fine = writer.save_room(room("s3"))
        with pytest.raises(BadRecord):
            refused.result(timeout=10)
        fine.result(timeout=10)
        assert db.load_bot_room("s3") is not None
    finally:
        writer.close()
    assert writer.save_room(room("s4")).exception(timeout=1) is not None  # closed: refused, never hangs


def test_a_write_the_database_could_not_take_is_tried_again_once_it_can(db: Store, tmp_path: Path) -> None:
    """Another connection holds SQLite's write lock past the busy wait: the room's deletion, a
    drawing and a final transcript wait and are written once it lets go; a room's save fails its
    caller at once (the room goes on) and its record is written too."""
    import sqlite3

    from griffon.launch import eventually
    from store import DrawingRecord, StoreUnavailable, TranscriptRecord

    writer = BackgroundWriter(db)
    try:
        writer.save_room(room("gone")).result(timeout=10)
        other = sqlite3.connect(tmp_path / "griffon.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # a long write elsewhere (another process, a migration)
        try:
            deleted = writer.delete_room("gone")
            saved = writer.save_room(room("kept"))
            assert writer.add_drawing(DrawingRecord("cat", "room", shape("square", np.random.default_rng(1))))
            transcript = TranscriptRecord("t1", {"rounds": 1}, [{"n": 1}])
            assert writer.save_transcript(transcript, 10_000, final=True)
            with pytest.raises(StoreUnavailable):
                saved.result(timeout=30)  # the room is told at once: it goes on
            eventually(lambda: writer.retries >= 2, 30, "the writer never tried again")
            assert not deleted.done() and db.load_bot_room("gone") is not None
        finally:
            other.execute("COMMIT")
            other.close()
        deleted.result(timeout=30)
        writer.flush(timeout=30)
        assert db.load_bot_room("gone") is None and db.load_bot_room("kept") is not None
        assert db.drawing_counts() == {"cat": 1} and db.load_transcript("t1").summary == {"rounds": 1}
        assert writer.failed == 0 and writer.pause_s == 0.0
    finally:
        writer.close()


def test_a_sealed_transcript_key_opens_with_its_token_only() -> None:
    sealed = seal("a-transcript-key_0123456789", "token-1")
    assert "a-transcript-key" not in sealed
    assert unseal(sealed, "token-1") == "a-transcript-key_0123456789"
    assert unseal(sealed, "token-2") != "a-transcript-key_0123456789"
    assert unseal("zz", "token-1") is None


# -- a session rebuilt from its memory -------------------------------------------------------------


def strokes(seed: int = 3) -> list[list[list[float]]]:
    (xs, ys, ts), = shape("square", np.random.default_rng(seed))
    return [[xs[:3], ys[:3], ts[:3]], [xs[2:], ys[2:], ts[2:]]]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_room_rebuilt_from_its_memory_goes_on_with_its_round(tiny_checkpoint: Path, db: Store) -> None:
    async def scenario() -> None:
        shared = await start_shared(Settings(model={"checkpoint": tiny_checkpoint}))
        try:
            clock = Clock()
            first = BotSession(shared, "room-1", clock=clock)
            welcome = first.on_hello(Hello(type="hello", versions=[2], room="salon", analysis=True))[0]
            spelt = [w.upper() for w in WORDS] + ["licornx"]  # the room's spelling, a word it cannot guess
            first.on_round_start(RoundStart(type="round_start", round="r1", candidates=spelt,
                                            difficulty="hard", pace="instant", seed=5, duration_s=60,
                                            hold_s=0.5, reaction_s=0.0))
            said = []
            for stroke in strokes():
                await first.add_stroke(stroke, None)
                clock.now += 1.0
                if (guess := first.tick()) is not None:
                    said.append(guess)
            first.on_player_guess(PlayerGuess(type="player_guess", player="ana", text="triangle"))
            assert said, "the bot said nothing about a square: the test cannot check its words"
            first.on_verdict(Verdict(type="verdict", guess_id=said[0]["guess_id"], correct=False,
                                     gesture="proche"))
            clock.now += 2.0
            record = snapshot(first, "key-9")
            assert record.token_hash == hash_token(first.resume_token) and record.key_id == "key-9"
            db.save_bot_rooms([record])
            stored = db.load_bot_room("room-1")
            assert stored is not None

            with pytest.raises(BadMemory, match="does not open"):
                await restore(BotSession(shared, "room-1"), stored, "another token", None)
            again = BotSession(shared, "room-1", clock=clock)
            await restore(again, stored, first.resume_token, None)
            rnd, old = again.round, first.round
            assert rnd is not None and old is not None
            assert (rnd.round_id, rnd.session.stroke_count, rnd.strokes) == ("r1", 2, old.strokes)
            assert [s.text for s in rnd.said] == [g["text"] for g in said]
            assert rnd.heard == {"triangle"} and rnd.gestures == old.gestures
            assert rnd.spelling == old.spelling and rnd.spelling["square"] == "SQUARE"
            assert (rnd.hold_s, rnd.reaction_s) == (0.5, 0.0)
            assert again.transcript.key == welcome["transcript_key"]  # the room's link still opens it
            assert again._now() >= 4.0  # the round's clock goes on (stored 4 s in, plus its age)
            assert [e["kind"] for e in again.transcript.events][-2:] == ["verdict", "taken_over"]
            for _ in range(100):  # the bot goes on guessing, and never says a word again
                clock.now += 0.5
                if (guess := again.tick()) is not None:
                    said.append(guess)
            texts = [g["text"] for g in said]
            assert len(texts) == len(set(texts)) and "TRIANGLE" not in texts
            assert set(texts) <= set(spelt)  # as the room spelt them, before and after the takeover
            guess_ids = [g["guess_id"] for g in said]
            assert guess_ids == sorted(set(guess_ids))  # new guesses get new ids
            again.on_verdict(Verdict(type="verdict", guess_id=said[0]["guess_id"], correct=True))
            assert again.round.found_by == "bot"

            bad_drawing = replace(stored, strokes=[[["x"], [1], [0]]])
            for bad in (bad_drawing, replace(stored, state={"format": 99}),
                        replace(stored, state=stored.state | {"round": {"difficulty": "nope"}})):
                with pytest.raises(BadMemory):  # a clear refusal: the room starts afresh
                    await restore(BotSession(shared, "room-1"), bad, first.resume_token, None)
        finally:
            await shared.inference.aclose()

    asyncio.run(scenario())


# -- a whole server restarted on SQLite ------------------------------------------------------------


def test_a_room_resumes_its_round_after_its_server_was_killed_or_stopped(tiny_checkpoint: Path,
                                                                          tmp_path: Path) -> None:
    """One server on SQLite, killed (SIGKILL) mid-round, then stopped cleanly (SIGTERM): each time
    the server started again on the same database takes the room back with its round."""
    import json

    from websockets.sync.client import connect

    from griffon.launch import eventually, patient, running_server

    env = {"GRIFFON_MODEL": str(tiny_checkpoint), "GRIFFON_DB_DIR": str(tmp_path)}

    def until(ws: Any, kind: str) -> dict[str, Any]:
        while (frame := json.loads(ws.recv(timeout=patient(10))))["type"] != kind:
            assert frame["type"] != "error", frame
        return frame

    def hello(url: str, resume: dict[str, str] | None = None) -> tuple[Any, dict[str, Any]]:
        ws = connect(url + "/v1/bot", open_timeout=patient(5)).__enter__()
        ws.send(json.dumps({"type": "hello", "versions": [2], "analysis": True}
                           | ({"resume": resume} if resume else {})))
        return ws, until(ws, "welcome")

    drawing = strokes()
    with running_server(env) as server:
        ws, welcome = hello(server.ws_url)
        ws.send(json.dumps({"type": "round_start", "round": 7, "candidates": WORDS, "pace": "instant",
                            "difficulty": "hard", "seed": 2}))
        until(ws, "round_ready")
        ws.send(json.dumps({"type": "stroke", "stroke": drawing[0]}))
        assert until(ws, "analysis")["strokes"] == 1
        with open_store(StoreSettings(data_dir=tmp_path)) as db:  # strokes are stored within the
            # writer's latency, not before their analysis (docs/BOT_PROTOCOL.md): wait for it
            eventually(lambda: (room := db.load_bot_room(welcome["session"])) is not None
                       and len(room.strokes) == 1, 10, "the room's stroke was never stored")
        server.kill()  # SIGKILL to the whole process group: supervisor and workers
        server.process.wait(timeout=30)
    with running_server(env) as server:
        resume = {"session": welcome["session"], "token": welcome["resume_token"]}
        ws, back = hello(server.ws_url, resume)
        assert back["resumed"] is True and back["round"]["round"] == 7 and back["round"]["strokes"] == 1
        assert back["transcript_key"] == welcome["transcript_key"]
        ws.send(json.dumps({"type": "stroke", "stroke": drawing[1]}))
        assert until(ws, "analysis")["strokes"] == 2
        server.process.terminate()  # a clean stop keeps the room's memory for its resume
        server.process.wait(timeout=30)
    with running_server(env) as server:
        resume = {"session": welcome["session"], "token": back["resume_token"]}
        ws, again = hello(server.ws_url, resume)
        assert again["resumed"] is True and again["round"]["strokes"] == 2
        assert again["round"]["said"][:len(back["round"]["said"])] == back["round"]["said"]
        ws.send(json.dumps({"type": "bye"}))
        until(ws, "bye")
        with open_store(StoreSettings(data_dir=tmp_path)) as db:
            eventually(lambda: db.load_bot_room(welcome["session"]) is None, 10,
                       "a room that said bye kept its memory")
