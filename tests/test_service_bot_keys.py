"""API keys of bot rooms over the real server with two workers (GRIFFON_BOT_KEYS_REQUIRED=true): a
missing, unknown, good or revoked key at hello (in the frame or the Authorization header), the rooms
at once of a key counted across both workers, its strokes per minute, a revocation closing live
rooms on both workers, per-key counters in the merged /metrics, browser play without a key, and
the secrets never in the database file or the server's log."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.asyncio.client import unix_connect

from griffon.launch import Patience, Server, eventually, patient, running_server, tuning
from store import hash_token, new_key_secret, open_store

QUOTAS = {  # name: (rooms at once, strokes per minute)
    "good": (0, 0), "one-room": (1, 0), "two-strokes": (0, 2), "revoked-later": (0, 0),
    "revoked-before": (0, 0), "metered": (0, 0),
}
STROKE = {"type": "stroke", "stroke": [[10, 60, 120, 130], [10, 80, 40, 90]]}


class Keyed:
    """The server, its database URL, its private worker sockets and every key's secret."""

    def __init__(self, server: Server, url: str, sockets: list[str], secrets: dict[str, str]) -> None:
        self.server, self.url, self.sockets, self.secrets = server, url, sockets, secrets


@pytest.fixture(scope="module")
def keyed(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyed]:
    data = tmp_path_factory.mktemp("keys-db")
    folder = tmp_path_factory.mktemp("keys-workers")
    url = f"sqlite:///{data / 'griffon.db'}"
    secrets = {name: new_key_secret() for name in QUOTAS}
    with open_store(url) as db:
        for name, (rooms, strokes) in QUOTAS.items():
            db.create_bot_key(name, hash_token(secrets[name]), rooms, strokes)
        db.revoke_bot_key("revoked-before")
    env = {"GRIFFON_MODEL": str(tiny_checkpoint), "GRIFFON_DB_DIR": str(data),
           "GRIFFON_WORKER_DIR": str(folder), "GRIFFON_BOT_KEYS_REQUIRED": "true",
           **tuning(**{"bot.keys_refresh_s": 0.5})}
    with running_server(env, workers=2) as server:
        yield Keyed(server, url, [str(folder / f"worker-{i}.sock") for i in range(2)], secrets)


async def recv(ws: Any, timeout: float = 10.0) -> dict:
    return json.loads(await asyncio.wait_for(ws.recv(), patient(timeout)))


async def closed(ws: Any) -> int | None:
    """The close code once the server has closed the socket."""
    try:
        while True:
            await asyncio.wait_for(ws.recv(), patient(10))
    except websockets.exceptions.ConnectionClosed:
        return ws.close_code


def hello(key: str | None = None) -> str:
    return json.dumps({"type": "hello", "versions": [1], "room": "keys"} | ({"key": key} if key else {}))


def connect(keyed: Keyed, worker: int | None = None, headers: dict[str, str] | None = None) -> Any:
    """A socket to the server's port, or straight to one worker's private socket."""
    if worker is None:
        return websockets.connect(keyed.server.ws_url + "/v1/bot", additional_headers=headers)
    return unix_connect(keyed.sockets[worker], uri="ws://worker/v1/bot", additional_headers=headers)


async def refused(keyed: Keyed, key: str | None, worker: int | None = None) -> tuple[str, int | None]:
    async with connect(keyed, worker) as ws:
        await ws.send(hello(key))
        frame = await recv(ws)
        assert frame["type"] == "error", frame
        return frame["code"], await closed(ws)


def test_a_room_without_a_key_or_with_an_unknown_or_revoked_one_is_refused_and_closed(keyed: Keyed) -> None:
    async def run() -> None:
        assert await refused(keyed, None) == ("key_required", 4401)
        assert await refused(keyed, new_key_secret()) == ("bad_key", 4401)
        assert await refused(keyed, "not even a key") == ("bad_key", 4401)
        assert await refused(keyed, keyed.secrets["revoked-before"]) == ("key_revoked", 4403)

    asyncio.run(run())


def test_a_good_key_in_hello_or_in_the_authorization_header_opens_the_room(keyed: Keyed) -> None:
    async def run() -> None:
        async with connect(keyed) as ws:
            await ws.send(hello(keyed.secrets["good"]))
            assert (await recv(ws))["type"] == "welcome"
        bearer = {"Authorization": f"Bearer {keyed.secrets['good']}"}
        async with connect(keyed, headers=bearer) as ws:
            await ws.send(hello())
            welcome = await recv(ws)
            assert welcome["type"] == "welcome" and welcome["version"] == 1

    asyncio.run(run())


def test_a_keys_rooms_at_once_count_on_both_workers(keyed: Keyed) -> None:
    secret = keyed.secrets["one-room"]

    async def run() -> None:
        async with connect(keyed, worker=0) as first:
            await first.send(hello(secret))
            assert (await recv(first))["type"] == "welcome"
            for worker in (0, 1):  # the second room is refused on the same worker and on the other one
                code, close = await refused(keyed, secret, worker)
                assert (code, close) == ("quota_exceeded", 4429)
            await first.send(json.dumps({"type": "bye"}))
            assert await closed(first) == 1000

        async def admitted_again() -> bool:  # the closed room's row is deleted off the event loop
            async with connect(keyed, worker=1) as ws:
                await ws.send(hello(secret))
                return (await recv(ws))["type"] == "welcome"

        patience = Patience(30, "the closed room's place was not given back")
        while not await admitted_again():
            if patience.expired():
                raise patience.failure()
            await asyncio.sleep(0.1)

    asyncio.run(run())
    # the two refused rooms, and the tries while the closed room's place was being given back
    sample = 'griffon_bot_key_refusals_total{key="one-room",reason="quota_exceeded"}'
    assert (value(metrics(keyed), sample) or 0) >= 2


def test_strokes_over_the_keys_minute_quota_are_refused_and_the_room_stays(keyed: Keyed) -> None:
    async def run() -> None:
        async with connect(keyed) as ws:
            await ws.send(json.dumps({"type": "hello", "versions": [1], "analysis": True,
                                      "key": keyed.secrets["two-strokes"]}))
            assert (await recv(ws))["type"] == "welcome"
            await ws.send(json.dumps({"type": "round_start", "round": 1, "seed": 1}))
            assert (await recv(ws))["type"] == "round_ready"
            answers = []
            for i in range(3):
                await ws.send(json.dumps(STROKE | {"id": i}))
                answer = await recv(ws)
                while answer["type"] == "guess":
                    answer = await recv(ws)
                answers.append(answer)
            assert [a["type"] for a in answers] == ["analysis", "analysis", "error"], answers
            assert answers[2]["code"] == "quota_exceeded" and answers[2]["ref"] == 2
            assert 1 <= answers[2]["retry_after"] <= 60
            await ws.send(json.dumps({"type": "stroke_start", "x": 1, "y": 1, "id": "s"}))
            await ws.send(json.dumps({"type": "stroke_end", "id": "e"}))
            dropped = await recv(ws)
            while dropped["type"] == "guess":
                dropped = await recv(ws)
            assert dropped["code"] == "quota_exceeded" and dropped["ref"] == "e"
            await ws.send(json.dumps({"type": "stroke_start", "x": 1, "y": 1}))  # the refused one is gone
            await ws.send(json.dumps({"type": "ping", "id": "p"}))
            pong = await recv(ws)
            while pong["type"] == "guess":
                pong = await recv(ws)
            assert pong == {"type": "pong", "ref": "p"}  # no stroke_open error: the socket lives on

    asyncio.run(run())


def test_revoking_a_key_closes_its_live_rooms_on_both_workers(keyed: Keyed) -> None:
    secret = keyed.secrets["revoked-later"]

    async def run() -> None:
        rooms = [connect(keyed, worker=w) for w in (0, 1)]
        sockets = [await room.__aenter__() for room in rooms]
        try:
            for ws in sockets:
                await ws.send(hello(secret))
                assert (await recv(ws))["type"] == "welcome"
            await asyncio.to_thread(revoke, keyed.url, "revoked-later")
            for ws in sockets:
                frame = await recv(ws, 30)
                assert frame["type"] == "error" and frame["code"] == "key_revoked", frame
                assert await closed(ws) == 4403
        finally:
            for room in rooms:
                await room.__aexit__(None, None, None)
        assert await refused(keyed, secret) == ("key_revoked", 4403)

    asyncio.run(run())
    # counted before each frame was sent: the two live rooms and the hello after
    sample = 'griffon_bot_key_refusals_total{key="revoked-later",reason="key_revoked"}'
    assert value(metrics(keyed), sample) == 3


def value(text: str, sample: str) -> float | None:
    """One sample's value in a Prometheus exposition (None: absent)."""
    found = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def metrics(keyed: Keyed) -> str:
    """Both workers' metrics, added up by the worker the request lands on."""
    return httpx.get(keyed.server.url + "/metrics", timeout=patient(30)).text


def revoke(url: str, name: str) -> None:
    with open_store(url) as db:
        db.revoke_bot_key(name)


def test_each_key_has_its_counters_in_the_merged_metrics_under_its_name(keyed: Keyed) -> None:
    secret = keyed.secrets["metered"]

    async def run() -> None:
        for worker in (0, 1, 0):
            async with connect(keyed, worker=worker) as ws:
                await ws.send(hello(secret))
                assert (await recv(ws))["type"] == "welcome"
                await ws.send(json.dumps({"type": "round_start", "round": 1}))
                assert (await recv(ws))["type"] == "round_ready"
                await ws.send(json.dumps(STROKE))
                await ws.send(json.dumps({"type": "round_end"}))
                while (await recv(ws))["type"] != "round_over":
                    pass
        for worker in (0, 1):
            assert await refused(keyed, new_key_secret(), worker) == ("bad_key", 4401)

    asyncio.run(run())

    def settled() -> str | None:  # the gauge goes down when each socket's end has been handled
        text = metrics(keyed)
        return text if value(text, 'griffon_bot_key_rooms_open{key="metered"}') == 0 else None

    text = eventually(settled, 30, "the metered key's rooms were still counted open")
    assert value(text, 'griffon_bot_key_rooms_total{key="metered"}') == 3  # both workers added up
    assert value(text, 'griffon_bot_key_strokes_total{key="metered"}') == 3
    assert (value(text, 'griffon_refusals_total{reason="bad_key"}') or 0) >= 2
    assert not any(s in text for s in keyed.secrets.values())


def test_browser_play_needs_no_key(keyed: Keyed) -> None:
    created = httpx.post(keyed.server.url + "/v1/play", json={"game": "kontour", "opponents": 1},
                         timeout=patient(30))
    assert created.status_code == 201, created.text


def test_no_secret_is_in_the_database_file_or_the_servers_log(keyed: Keyed) -> None:
    folder = Path(keyed.url.removeprefix("sqlite:///")).parent
    stored = b"".join(p.read_bytes() for p in folder.glob("griffon.db*"))
    log = keyed.server.log()
    assert "workers on http://" in log  # the supervisor's and the workers' output is there
    for name, secret in keyed.secrets.items():
        assert secret.encode() not in stored, name
        assert hash_token(secret).encode() in stored, name  # what is stored instead
        assert secret not in log, name
