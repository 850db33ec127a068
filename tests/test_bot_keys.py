"""API keys of bot rooms without a server: the store's keys and room counts (SQLite, and PostgreSQL
where it can start), `griffon keys create|list|revoke`, and `service.bot.keys.BotKeys` (lookups,
quotas, the refresh that closes a revoked key's rooms) on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
from typer.testing import CliRunner

import store.cli
from service.bot.keys import BotKeys, KeyRefused, presented_key
from service.frames import FrameError
from service.prometheus import Metrics
from store import BadRecord, Store, UnknownKey, hash_token, new_key_secret, open_store

runner = CliRunner()
app = typer.Typer()
store.cli.register(app)


# ------------------------------------------------------------------------------------------------
# The store


def check_keys_and_rooms(db: Store) -> None:
    secret = new_key_secret()
    key = db.create_bot_key("room-a", hash_token(secret), 2, 600, now=100.0)
    assert db.find_bot_key(hash_token(secret)) == key and not key.revoked
    assert db.find_bot_key(hash_token(new_key_secret())) is None
    with pytest.raises(BadRecord, match="exists already"):
        db.create_bot_key("room-a", hash_token(new_key_secret()), 1, 1)
    with pytest.raises(BadRecord, match="key name"):
        db.create_bot_key("a b", hash_token(new_key_secret()), 1, 1)
    with pytest.raises(BadRecord, match="rooms at once"):
        db.create_bot_key("room-b", hash_token(new_key_secret()), -1, 1)
    # rooms at once: two, then refused; a room not renewed since `fresh_after` no longer counts
    assert db.claim_key_room(key.id, "s1", "p1", 2, fresh_after=0.0, now=100.0) == 1
    assert db.claim_key_room(key.id, "s2", "p2", 2, fresh_after=0.0, now=101.0) == 2
    assert db.claim_key_room(key.id, "s3", "p1", 2, fresh_after=0.0, now=102.0) is None
    db.renew_key_rooms([("s2", key.id)], "p2", now=200.0)
    assert db.key_rooms([key.id], fresh_after=150.0) == {key.id: 1}  # s1's process died
    assert db.claim_key_room(key.id, "s3", "p1", 2, fresh_after=150.0, now=201.0) == 2
    db.release_key_room("s2")
    assert db.key_rooms([key.id], fresh_after=150.0) == {key.id: 1}
    db.renew_key_rooms([("s2", key.id)], "p2", now=202.0)  # a room that had expired counts again
    assert db.key_rooms([key.id], fresh_after=150.0) == {key.id: 2}
    db.release_key_room("s2")
    assert db.list_bot_keys()[0].last_used_at == 201.0
    revoked = db.revoke_bot_key(key.id, now=300.0)
    assert revoked.revoked_at == 300.0 and db.revoke_bot_key("room-a", now=400.0).revoked_at == 300.0
    assert db.bot_keys([key.id])[0].revoked
    with pytest.raises(UnknownKey):
        db.revoke_bot_key("nobody")


def test_keys_and_their_rooms_in_sqlite(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'griffon.db'}") as db:
        check_keys_and_rooms(db)



def test_keys_and_their_rooms_in_postgresql(pg_url: str) -> None:
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    with open_store(f"{pg_url}?options=-csearch_path%3D{schema}") as db:
        check_keys_and_rooms(db)


# ------------------------------------------------------------------------------------------------
# griffon keys


def test_keys_create_prints_the_secret_once_and_keeps_only_its_hash(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GRIFFON_DB_DIR", str(tmp_path))
    monkeypatch.delenv("GRIFFON_DB_URL", raising=False)
    done = runner.invoke(app, ["keys", "create", "--name", "salon", "--rooms", "3",
                               "--strokes-per-minute", "90"])
    assert done.exit_code == 0, done.output
    secret = done.stdout.strip()
    assert re.fullmatch(r"gk_[A-Za-z0-9_\-]{32}", secret), done.stdout
    assert "shown only this once" in done.stderr
    listed = runner.invoke(app, ["keys", "list"])
    assert listed.exit_code == 0 and "salon" in listed.output and secret not in listed.output
    rows = json.loads(runner.invoke(app, ["keys", "list", "--json"]).stdout)
    assert [(r["name"], r["max_rooms"], r["strokes_per_minute"], r["revoked_at"]) for r in rows] == [
        ("salon", 3, 90, None)]
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("griffon.db*"))
    assert secret.encode() not in stored and hash_token(secret).encode() in stored
    again = runner.invoke(app, ["keys", "create", "--name", "salon"])
    assert again.exit_code == 1 and "exists already" in again.stderr
    assert runner.invoke(app, ["keys", "revoke", "nobody"]).exit_code == 1
    revoked = runner.invoke(app, ["keys", "revoke", rows[0]["id"]])  # by id; by name works too
    assert revoked.exit_code == 0 and "salon" in revoked.stdout and "revoked" in revoked.stdout
    assert json.loads(runner.invoke(app, ["keys", "list", "--json"]).stdout)[0]["revoked_at"] is not None


# ------------------------------------------------------------------------------------------------
# service.bot.keys


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def room(session_id: str, open_stroke: bool = False) -> SimpleNamespace:
    """What `BotKeys.check_stroke` reads of a session: its id and its round's open stroke."""
    return SimpleNamespace(id=session_id, round=SimpleNamespace(open_stroke=[[1.0], [2.0]] if open_stroke
                                                                 else None))


def test_presented_key_is_the_hello_s_or_the_bearer_header_s() -> None:
    assert presented_key("gk_a", "Bearer gk_b") == "gk_a"
    assert presented_key(None, "Bearer gk_b") == "gk_b" and presented_key(None, "bearer  gk_b ") == "gk_b"
    assert presented_key(None, "Basic dXNlcg==") is None and presented_key(None, None) is None


def test_admit_checks_the_key_and_counts_rooms(db: Store) -> None:
    secret = new_key_secret()
    db.create_bot_key("one", hash_token(secret), 1, 0)
    metrics = Metrics()
    optional = BotKeys(db, metrics, required=False, refresh_s=5.0)
    required = BotKeys(db, metrics, required=True, refresh_s=5.0)

    async def nothing() -> None:
        pass

    async def run() -> None:
        assert await optional.admit(None, "s0", nothing) is None  # no key, not required: a plain room
        with pytest.raises(KeyRefused) as refused:
            await required.admit(None, "s0", nothing)
        assert (refused.value.code, refused.value.close_code) == ("key_required", 4401)
        with pytest.raises(KeyRefused) as refused:
            await optional.admit(new_key_secret(), "s0", nothing)  # not required, still checked
        assert refused.value.code == "bad_key"
        assert (await optional.admit(secret, "s1", nothing)).name == "one"
        with pytest.raises(KeyRefused) as refused:
            await required.admit(secret, "s2", nothing)  # another process of the same database
        assert (refused.value.code, refused.value.close_code) == ("quota_exceeded", 4429)
        optional.release("s1")
        await optional.aclose()
        assert (await required.admit(secret, "s2", nothing)).name == "one"

    asyncio.run(run())
    samples = {(s.name, tuple(s.labels.values())): s.value
               for family in metrics.registry.collect() for s in family.samples}
    assert samples[("griffon_bot_key_rooms_total", ("one",))] == 2
    assert samples[("griffon_bot_key_rooms_open", ("one",))] == 1
    assert samples[("griffon_bot_key_refusals_total", ("one", "quota_exceeded"))] == 1
    assert samples[("griffon_refusals_total", ("bad_key",))] == 1


def test_strokes_per_minute_are_shared_by_the_processes_holding_the_keys_rooms(db: Store) -> None:
    secret = new_key_secret()
    db.create_bot_key("drawer", hash_token(secret), 0, 4)
    clock = Clock()
    keys = BotKeys(db, Metrics(), required=True, refresh_s=5.0, clock=clock)

    async def nothing() -> None:
        pass

    async def run() -> None:
        await keys.admit(secret, "s1", nothing)
        for _ in range(4):
            keys.check_stroke(room("s1"), None, whole=True)
        stroke_end = room("s1", open_stroke=True)
        with pytest.raises(FrameError) as over:
            keys.check_stroke(stroke_end, "e", whole=False)
        assert over.value.code == "quota_exceeded" and over.value.details["retry_after"] == 60
        assert stroke_end.round.open_stroke is None  # the refused stroke is dropped
        keys.check_stroke(room("s1"), None, whole=False)  # a stroke_end without a stroke: not counted
        clock.now += 60.0
        keys.check_stroke(room("s1"), None, whole=True)  # a new minute
        await keys.refresh()  # this process's room is renewed (every refresh_s)
        other = BotKeys(db, Metrics(), required=True, refresh_s=5.0, clock=clock)
        await other.admit(secret, "s2", nothing)  # the key's second room, in another process
        await keys.refresh()  # reads that the key holds two rooms: this process gets half
        assert keys._stroke_share(keys.rooms["s1"].key) == 2

    asyncio.run(run())


def test_refresh_closes_the_rooms_of_a_revoked_key_and_forgets_its_cached_lookup(db: Store) -> None:
    secret, other = new_key_secret(), new_key_secret()
    db.create_bot_key("gone", hash_token(secret), 0, 0)
    db.create_bot_key("kept", hash_token(other), 0, 0)
    keys = BotKeys(db, Metrics(), required=True, refresh_s=5.0)
    closed: list[str] = []

    def closer(name: str):
        async def close() -> None:
            closed.append(name)
        return close

    async def run() -> None:
        await keys.admit(secret, "a", closer("a"))
        await keys.admit(secret, "b", closer("b"))
        await keys.admit(other, "c", closer("c"))
        db.revoke_bot_key("gone")
        await keys.refresh()
        await keys.aclose()
        assert sorted(closed) == ["a", "b"] and list(keys.rooms) == ["c"]
        assert db.key_rooms([r.id for r in db.list_bot_keys()], 0.0) == {db.list_bot_keys()[1].id: 1}
        with pytest.raises(KeyRefused) as refused:  # the cached lookup was refreshed too
            await keys.admit(secret, "d", closer("d"))
        assert (refused.value.code, refused.value.close_code) == ("key_revoked", 4403)

    asyncio.run(run())
