"""Game and bot room leases and their fence on a real PostgreSQL server (`store.leases`): one holder
at a time, a lease taken only once expired, a fenced write from the old holder refused without a
trace (a move, a room's memory or its deletion), the renewal telling it so, the game clock handed
over, a clean stop giving every lease up; and the service's side (`service.replicas`): a game taken
by another replica stands down at its next move."""

from __future__ import annotations

import asyncio
import functools
import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from griffon.launch import eventually
from service.play.clock import ManualClock
from service.play.manager import GameManager
from service.play.settings import PlaySettings
from service.play.sockets import handle_text
from service.play.table import HUMAN
from service.replicas import Ownership, Replica, ReplicaSettings, ReplicaSettingsError
from service.settings import Settings
from store import BotRoomRecord, MoveRejected, Store, StoreError, StoreSettings, hash_token, open_store
from store.background import BackgroundWriter
from store.group_commit import MoveWriter
from store.leases import Leases, holder_url, is_lease_lost

LEASE_S = 0.5
STROKE = json.dumps({"type": "move", "move": {"kind": "stroke", "points": [[10, 10], [60, 80]]}})



@pytest.fixture
def schema_url(pg_url: str) -> Iterator[str]:
    """A fresh schema of the server (through the URL's ``options``, which `holder_url` extends)."""
    import psycopg

    schema = f"l_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    yield f"{pg_url}?options=-csearch_path%3D{schema}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def replica(url: str, holder: str) -> tuple[Store, Leases]:
    store = open_store(holder_url(url, holder))
    assert isinstance(store, Store)
    leases = Leases(store, holder, f"127.0.0.1:{len(holder)}", LEASE_S)
    leases.install()
    return store, leases


def test_one_holder_at_a_time_and_the_old_one_cannot_write(schema_url: str) -> None:
    a, leases_a = replica(schema_url, "a:1")
    b, leases_b = replica(schema_url, "b:2")
    first = leases_a.claim("g1")
    assert first is not None and (first.holder, first.fence) == ("a:1", 1)
    a.create_game("g1", "kontour", {"seed": 1}, hash_token("t"))
    a.append_move("g1", 0, 0.5, {"kind": "draw_card"})
    assert leases_b.claim("g1") is None  # held, not expired
    assert leases_a.renew({"g1": (1, 7.5)}) == {"g1"}
    assert leases_b.orphans(10) == []

    taken = eventually(lambda: leases_b.claim("g1"), 10, "the lease never expired")
    assert (taken.holder, taken.fence, taken.game_clock) == ("b:2", 2, 7.5)  # the clock handed over
    with pytest.raises(MoveRejected) as refused:  # refused for good, not a database to wait for
        a.append_move("g1", 1, 0.9, {"kind": "choose_word"})
    assert is_lease_lost(refused.value)
    writer = MoveWriter(a)  # the service's path: the move's future carries the refusal, no retry
    future = writer.submit("g1", 1, 0.9, {"kind": "choose_word"})
    assert is_lease_lost(future.exception(timeout=30)) and writer.retries == 0
    writer.close()
    with pytest.raises(MoveRejected):
        a.finish_game("g1", "abandoned")
    assert leases_a.renew({"g1": (1, 8.0)}) == set()  # the renewal says the same
    stored = b.load_game("g1")
    assert stored is not None and stored.status == "playing" and len(stored.moves) == 1
    b.append_move("g1", 1, 1.0, {"kind": "choose_word"})  # the new holder writes on
    with open_store(schema_url) as admin:  # a connection that names no replica is not fenced
        admin.append_move("g1", 2, 1.1, {"kind": "stroke"})
    assert [m.seq for m in b.load_game("g1").moves] == [0, 1, 2]  # type: ignore[union-attr]
    for store in (a, b):
        store.close()


def test_a_bot_room_taken_by_another_replica_is_never_written_nor_deleted_by_the_old_one(
        schema_url: str) -> None:
    a, leases_a = replica(schema_url, "a:1")
    b, leases_b = replica(schema_url, "b:2")
    memory = BotRoomRecord("s1", hash_token("tok"), {"format": 1, "said": ["chat"]})
    assert leases_a.claim("bot:s1") is not None
    a.save_bot_rooms([memory])
    assert leases_b.claim("bot:s1") is None
    eventually(lambda: leases_b.claim("bot:s1"), 10, "the room's lease never expired")
    writer = BackgroundWriter(a)  # the service's path: the refusal reaches the snapshot's future
    late = writer.save_room(replace(memory, state={"format": 1, "said": ["chat", "chien"]}))
    assert is_lease_lost(late.exception(timeout=30))
    assert is_lease_lost(writer.delete_room("s1").exception(timeout=30))
    writer.close()
    assert leases_b.orphans(10) == []  # rooms are taken when they come back, never looked for
    kept = b.load_bot_room("s1")
    assert kept is not None and kept.state["said"] == ["chat"]  # the old holder changed nothing
    b.save_bot_rooms([], deleted=["s1"])  # the new holder ends it
    assert b.load_bot_room("s1") is None
    for store in (a, b):
        store.close()


def test_a_lobby_taken_by_another_replica_is_never_written_nor_deleted_by_the_old_one(
        schema_url: str) -> None:
    a, leases_a = replica(schema_url, "a:1")
    b, leases_b = replica(schema_url, "b:2")
    lobby = {"game": "kontour", "level": "normal", "client": "c", "seats": []}
    assert leases_a.claim("room:ABCD") is not None
    a.save_room("ABCD", lobby)
    eventually(lambda: leases_b.claim("room:ABCD"), 10, "the lobby's lease never expired")
    for late in (lambda: a.save_room("ABCD", {**lobby, "level": "hard"}), lambda: a.delete_room("ABCD")):
        with pytest.raises(StoreError) as refused:
            late()
        assert is_lease_lost(refused.value)
    found = b.load_room("ABCD")
    assert found is not None and found[0]["level"] == "normal"  # the old holder changed nothing
    assert leases_b.orphans(10) == []  # lobbies are taken when a socket comes, never looked for
    b.delete_room("ABCD")  # the new holder starts it
    assert b.load_room("ABCD") is None
    for store in (a, b):
        store.close()


def test_a_clean_stop_gives_every_lease_up_and_orphans_are_found(schema_url: str) -> None:
    a, leases_a = replica(schema_url, "a:1")
    b, leases_b = replica(schema_url, "b:2")
    for game in ("g1", "g2"):
        assert leases_a.claim(game) is not None
        a.create_game(game, "pictomania", {"seed": 2}, hash_token("t"))
    a.create_game("g3", "pictomania", {"seed": 3}, hash_token("t"))  # stored by a server without leases
    assert leases_b.orphans(10) == ["g3"]
    leases_a.release({"g1": 4.0})
    assert sorted(leases_b.orphans(10)) == ["g1", "g3"]
    leases_a.release(None, forget=("g2",))
    assert sorted(leases_b.orphans(10)) == ["g1", "g2", "g3"]
    again = leases_b.claim("g1")
    assert again is not None and again.game_clock == 4.0
    a.finish_game("g3", "expired")
    assert sorted(leases_b.orphans(10)) == ["g2"]
    assert leases_b.holders() == {"b:2": 1}
    for store in (a, b):
        store.close()


def test_leases_need_postgresql_and_a_plain_replica_name(tmp_path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'g.db'}") as sqlite:
        with pytest.raises(StoreError, match="PostgreSQL"):
            Leases(sqlite, "a:1", "127.0.0.1:1", LEASE_S)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="replica name"):
        holder_url("postgresql://u@h/db", "a b; drop")
    url = holder_url("postgresql://u@h/db?options=-csearch_path%3Dx&sslmode=disable", "r1:ab")
    assert url == "postgresql://u@h/db?options=-csearch_path%3Dx%20-c%20griffon.holder%3Dr1%3Aab&sslmode=disable"


def test_install_creates_what_is_missing_and_is_idempotent(schema_url: str) -> None:
    store = open_store(holder_url(schema_url, "a:1"))
    assert isinstance(store, Store)
    leases = Leases(store, "a:1", "127.0.0.1:1", LEASE_S)
    assert not leases.installed()
    leases.install()
    assert leases.installed()
    leases.install()  # in place: nothing done
    assert leases.installed() and leases.claim("g1") is not None
    store.close()


async def uniform(drawing: Any, candidates: Any) -> dict[str, float]:
    return {c: 1 / len(candidates) for c in candidates}


def test_a_replica_whose_game_was_taken_stands_down_on_its_next_move_without_writing(schema_url: str) -> None:
    """The service's side of the fence, on the game's own clock: the old holder's next move (the
    person's) is refused by the database through the move writer (for good: no retry), never
    shown, and the game leaves this replica with its sockets told to reconnect (1012), before any
    renewal."""

    async def run() -> None:
        settings = ReplicaSettings(name="a", address="127.0.0.1:1", secret="s" * 16, lease_s=LEASE_S,
                                   renew_s=LEASE_S / 2)
        here = Replica(settings)
        store = open_store(here.store_settings(StoreSettings(database_url=schema_url)).url)
        clock = ManualClock()
        games = GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), store, clock=clock,
                            ownership=functools.partial(Ownership, here))
        assert games.ownership is not None
        games.ownership.leases.install()
        session = games.create("pictomania", 2, "normal", "Ana", seed=3)
        queue = session.attach()
        assert handle_text(session, STROKE) is None
        await games.settle()  # written: the database has it
        stored = len(store.load_game(session.id).moves)  # type: ignore[union-attr]
        other, leases_b = replica(schema_url, "b:2")
        eventually(lambda: leases_b.claim(session.id), 10, "the lease never expired")
        while not queue.empty():
            queue.get_nowait()
        assert handle_text(session, STROKE) is None  # held until written: the fence refuses it
        await games.settle()
        assert session.moved and session.id not in games.games
        assert len(store.load_game(session.id).moves) == stored  # type: ignore[union-attr]
        await asyncio.sleep(0)
        frames = []
        while not queue.empty():
            frames.append(queue.get_nowait())
        assert frames == [None]  # never shown; the socket closes (1012: service.play.sockets._send_loop)
        session.tick()  # the AI players' next step writes nothing either
        assert len(other.load_game(session.id).moves) == stored  # type: ignore[union-attr]
        await games.aclose()
        for db in (store, other):
            db.close()

    asyncio.run(run())


@pytest.mark.parametrize(("environ", "said"), [
    ({"GRIFFON_REPLICA_NAME": "r1"}, "needs GRIFFON_REPLICA_ADDRESS"),
    ({"GRIFFON_REPLICA_NAME": "r1", "GRIFFON_REPLICA_ADDRESS": "10.0.0.1:8101",
      "GRIFFON_REPLICA_SECRET": "x" * 16, "GRIFFON_TUNING": '{"renew_s": 2}'},
     "at most half of GRIFFON_REPLICA_LEASE_S"),
    ({"GRIFFON_REPLICA_NAME": "r 1", "GRIFFON_REPLICA_SECRET": "short"}, "GRIFFON_REPLICA_NAME"),
])
def test_replica_settings_that_do_not_go_together_are_refused_with_their_names(
    environ: dict[str, str], said: str
) -> None:
    with pytest.raises(ReplicaSettingsError, match=said):
        ReplicaSettings.from_env(environ)
    assert ReplicaSettings.from_env({}).name is None  # none: a server alone


def test_a_replica_with_another_secret_is_refused_and_the_status_says_who_holds_what(schema_url: str) -> None:
    from service.replicas import join
    from store.leases import status

    def started(name: str, secret: str) -> tuple[Store, Replica]:
        settings = ReplicaSettings(name=name, address=f"127.0.0.1:{8100 + len(name)}", secret=secret,
                                   lease_s=3, renew_s=1)
        one = Replica(settings)
        store = open_store(holder_url(schema_url, one.holder))
        assert isinstance(store, Store)
        return store, one

    good, bad = "s" * 24, "t" * 24
    store_a, a = started("r1", good)
    leases_a = join(store_a, a)
    store_b, b = started("r2", bad)
    with pytest.raises(ReplicaSettingsError) as refused:
        join(store_b, b)
    message = str(refused.value)
    assert "\n" not in message and "GRIFFON_REPLICA_SECRET" in message and "r1" in message
    assert bad not in message and good not in message
    store_c, c = started("r3", good)
    leases_c = join(store_c, c)
    leases_a.claim("g1")
    leases_a.claim("bot:s1")
    leases_c.claim("g2")
    replicas, waiting = status(store_a, 3.0)
    seen = {r.name: (r.up, r.games, r.rooms) for r in replicas}
    assert seen == {"r1": (True, 1, 1), "r3": (True, 1, 0)}  # r2 never joined
    assert all(good not in str(row) for row in store_a.rows("SELECT * FROM griffon_replicas"))
    leases_a.release(None)
    leases_a.leave()  # r1 stops cleanly: gone from the view, its games waiting for a taker
    replicas, _ = status(store_c, 3.0)
    assert [(r.name, r.games) for r in replicas] == [("r3", 1)]
    from typer.testing import CliRunner

    from griffon.cli import app

    shown = CliRunner().invoke(app, ["replicas", "status", "--url", schema_url])
    assert shown.exit_code == 0, shown.output
    [line] = [line for line in shown.output.splitlines() if line.startswith("r3")]
    assert line.split()[1] == "up" and c.holder in line
    data = json.loads(CliRunner().invoke(app, ["replicas", "status", "--json", "--url", schema_url]).output)
    assert [(r["name"], r["up"], r["games"]) for r in data["replicas"]] == [("r3", True, 1)]
    for store in (store_a, store_b, store_c):
        store.close()


def test_griffon_serve_as_a_replica_with_another_secret_stops_with_one_line(schema_url: str) -> None:
    import os
    import subprocess
    import sys

    from griffon.launch import REPO, free_port, patient
    from service.replicas import join

    live = Replica(ReplicaSettings(name="r1", address="127.0.0.1:8101", secret="s" * 24))
    store = open_store(holder_url(schema_url, live.holder))
    assert isinstance(store, Store)
    join(store, live)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "GRIFFON_DB_URL": schema_url,
           "GRIFFON_REPLICA_NAME": "r2", "GRIFFON_REPLICA_ADDRESS": f"127.0.0.1:{port}",
           "GRIFFON_REPLICA_SECRET": "t" * 24}
    done = subprocess.run([sys.executable, "-m", "griffon.serve", "--port", str(port), "--workers", "1"],
                          env=env, capture_output=True, text=True, timeout=patient(120), cwd=REPO)
    store.close()
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    lines = [line for line in said.splitlines() if "GRIFFON_REPLICA_SECRET" in line]
    assert len(lines) == 1 and "r1" in lines[0], said
    assert "Traceback" not in said, said


def test_a_dead_replica_s_lobby_is_taken_over_and_its_expired_ones_pruned(schema_url: str) -> None:
    """The rooms' side of the leases, in process: replica a creates a lobby (its code leased first)
    and a friend joins; a stops renewing (it died); b, asked for the room, sees a's live lease
    (relay there), then takes the lobby over from its row once the lease ran out: the same seats and
    tokens. a, writing again, is refused and stands the lobby down. b starts it: the code leads to
    the game. A lobby a dead replica left past ``lobby_expiry_s`` is deleted by b's prune; a lobby
    held by a live replica is not."""
    import time

    def manager(name: str) -> GameManager:
        settings = ReplicaSettings(name=name, address=f"127.0.0.1:{ord(name)}", secret="s" * 16,
                                   lease_s=LEASE_S, renew_s=LEASE_S / 2)
        here = Replica(settings)
        store = open_store(here.store_settings(StoreSettings(database_url=schema_url)).url)
        games = GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), store,
                            clock=ManualClock(), ownership=functools.partial(Ownership, here))
        assert games.ownership is not None
        games.ownership.leases.install()
        return games

    async def run() -> None:
        a, b = manager("a"), manager("b")
        room, host_token = await a.rooms.create_async("pictomania", "Ana", "normal", 1, client="c")
        seat, friend_token = a.rooms.join(room, "Léa")
        await a.rooms.flush()
        held = await b.rooms.locate(room.code)
        assert held is not None and held.holder == a.ownership.replica.holder  # type: ignore[union-attr]
        await asyncio.sleep(LEASE_S + 0.2)  # a renews nothing: it died
        assert await b.rooms.locate(room.code) is None  # taken over here
        back = b.rooms.lobbies[room.code]
        assert [s.name for s in back.seats] == [s.name for s in room.seats]
        assert back.seat_of(friend_token) == seat and back.seat_of(host_token) == HUMAN
        a.rooms.request(room, HUMAN, {"type": "add_ai"})  # a, woken, writes: refused by the fence
        await a.rooms.flush()
        assert room.code not in a.rooms.lobbies  # stood down
        assert len(b.store.load_room(room.code)[0]["seats"]) == 3  # type: ignore[union-attr, index]
        game = await b.rooms.start_async(back)
        await b.rooms.flush()
        assert b.store.room_game(room.code) == game.id and b.store.load_room(room.code) is None  # type: ignore[union-attr]

        left, _ = await a.rooms.create_async("kontour", "Zoé", "normal", 1, client="d")
        await a.rooms.flush()
        kept, _ = await b.rooms.create_async("kontour", "Marc", "normal", 1, client="e")
        await b.rooms.flush()
        old = time.time() - b.play.lobby_expiry_s - 1
        for games, lobby in ((a, left), (b, kept)):
            games.store.save_room(lobby.code, lobby.lobby(), now=old)  # type: ignore[union-attr]
        await asyncio.sleep(LEASE_S + 0.2)  # a's lease on its lobby runs out
        b.ownership.leases.renew({"room:" + kept.code: (b.ownership.lobbies[kept.code], 0.0)})  # type: ignore[union-attr]
        assert b.rooms.prune_now() == 1
        assert b.store.load_room(left.code) is None and b.store.load_room(kept.code) is not None  # type: ignore[union-attr]
        for games in (a, b):
            await games.aclose()
            games.store.close()  # type: ignore[union-attr]

    asyncio.run(run())
