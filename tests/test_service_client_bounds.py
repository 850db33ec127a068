"""One address's bounds hold across the workers of `griffon serve --workers 2` (service/placement.py,
service/capacity.py): its bot rooms (``bot.rooms_per_client``), its solo games
(``play_limits.games_per_client``) and the games it started in the last hour
(``play_limits.games_per_client_hour``) are counted on every worker, so it never gets twice its
share; a new game of a client at its limit is made where it replaces one its player left, on
whichever worker that is."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets
from websockets.asyncio.client import connect, unix_connect

from griffon.launch import Server, eventually, patient, running_server
from service.workers import CLIENT_HEADER, RELAY_HEADER
from tests.service_server import secret_of

KONTOUR = {"game": "kontour", "opponents": 1}
LIMIT = 2  # bot rooms and solo games one client may hold
HOURLY = 12  # solo games one client may start per hour
OPEN = re.compile(r"^griffon_tables_open\{[^}]*\} (\S+)$", re.M)


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory, tiny_checkpoint: Path) -> Iterator[tuple[Server, Path]]:
    folder = tmp_path_factory.mktemp("bounds") / "workers"
    env = {"GRIFFON_MODEL": str(tiny_checkpoint), "GRIFFON_WORKER_DIR": str(folder),
           "GRIFFON_PLAY_GAMES_PER_CLIENT": str(LIMIT), "GRIFFON_BOT_ROOMS_PER_CLIENT": str(LIMIT),
           "GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR": str(HOURLY), "GRIFFON_PLAY_IDLE_TIMEOUT_S": "1800"}
    with running_server(env, workers=2) as server:
        eventually(lambda: all((folder / f"load-{i}.json").exists() for i in range(2)), 120,
                   "the workers did not publish their loads")
        yield server, folder




def as_client(server: Server, address: str) -> dict[str, str]:
    """The headers of a request a sibling relays for ``address``: made on the worker it is sent to."""
    return {RELAY_HEADER: secret_of(server), CLIENT_HEADER: address}


def post_on(folder: Path, index: int, body: dict, headers: dict[str, str]) -> httpx.Response:
    """``POST /v1/play`` on worker ``index``'s private socket."""
    transport = httpx.HTTPTransport(uds=str(folder / f"worker-{index}.sock"))
    with httpx.Client(transport=transport, timeout=patient(60)) as http:
        return http.post("http://worker/v1/play", json=body, headers=headers)


def tables_open(folder: Path) -> int:
    """The tables open on both workers (their own metrics)."""
    total = 0.0
    for index in range(2):
        transport = httpx.HTTPTransport(uds=str(folder / f"worker-{index}.sock"))
        with httpx.Client(transport=transport, timeout=patient(30)) as http:
            text = http.get("http://worker/metrics", params={"local": "true"}).text
        total += sum(float(n) for n in OPEN.findall(text))
    return round(total)


async def bot_on(
    folder: Path, index: int, headers: dict[str, str],
) -> tuple[websockets.ClientConnection, dict]:
    """A bot socket on worker ``index`` and its first frame: ``welcome`` (admitted) or an error."""
    ws = await unix_connect(str(folder / f"worker-{index}.sock"), uri="ws://worker/v1/bot",
                            additional_headers=headers, open_timeout=patient(10))
    try:
        await ws.send(json.dumps({"type": "hello", "versions": [1]}))
    except websockets.ConnectionClosed:
        pass  # refused at once: its error frame is read below
    return ws, json.loads(await asyncio.wait_for(ws.recv(), patient(10)))


@pytest.mark.slow
def test_a_client_s_bot_rooms_are_counted_on_every_worker(bounded: tuple[Server, Path]) -> None:
    server, folder = bounded
    mine, other = as_client(server, "203.0.113.7"), as_client(server, "203.0.113.8")

    async def scenario() -> None:
        held = []
        for _ in range(LIMIT):  # both on worker 0
            ws, first = await bot_on(folder, 0, mine)
            assert first["type"] == "welcome", first
            held.append(ws)
        for index in (1, 0):  # worker 1 holds none of them, yet refuses a third
            ws, first = await bot_on(folder, index, mine)
            assert first["type"] == "error" and first["code"] == "overloaded", (index, first)
            assert f"holds {LIMIT} bot rooms already (at most {LIMIT})" in first["message"]
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), patient(10))
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        ws, first = await bot_on(folder, 1, other)  # another address is not counted with it
        assert first["type"] == "welcome", first
        await ws.close()
        await held.pop().close()  # one room ended: a new one is admitted on the other worker

        async def again() -> bool:
            ws, first = await bot_on(folder, 1, mine)
            await ws.close()
            return first["type"] == "welcome"

        for _ in range(200):
            if await again():
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the room that ended was still counted")
        for ws in held:
            await ws.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_client_s_games_are_counted_on_every_worker(bounded: tuple[Server, Path]) -> None:
    """Two games played (their sockets open), one on each worker: a third is refused on either."""
    server, folder = bounded
    mine = as_client(server, "203.0.113.9")
    games = [post_on(folder, index, KONTOUR, mine) for index in (0, 1)]
    assert [made.status_code for made in games] == [201, 201], [made.text for made in games]

    async def scenario() -> None:
        urls = [server.ws_url + made.json()["ws"] for made in games]
        sockets = [await connect(url, open_timeout=patient(10)) for url in urls]
        for ws in sockets:
            assert json.loads(await asyncio.wait_for(ws.recv(), patient(30)))["type"] == "state"
        await asyncio.sleep(1.5)  # the workers publish who holds which games every 0.5 s
        for index in (0, 1):
            third = await asyncio.to_thread(post_on, folder, index, KONTOUR, mine)
            assert third.status_code == 429, third.text
            assert third.json()["error"] == "too_many_games"
            assert f"{LIMIT} games open (at most {LIMIT})" in third.json()["message"]
        for ws in sockets:
            await ws.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_client_at_its_limit_replaces_the_game_it_left_on_either_worker(
    bounded: tuple[Server, Path],
) -> None:
    """Through the shared port (the kernel picks the worker): one game played, the other left; each
    new game replaces the one left, wherever the request lands, and the client never holds more than
    its limit."""
    server, folder = bounded
    before = tables_open(folder)
    played = httpx.post(server.url + "/v1/play", json=KONTOUR, timeout=patient(60))
    assert played.status_code == 201, played.text

    async def scenario() -> None:
        async with connect(server.ws_url + played.json()["ws"], open_timeout=patient(10)) as ws:
            assert json.loads(await asyncio.wait_for(ws.recv(), patient(30)))["type"] == "state"
            await asyncio.sleep(1.5)  # published: this game is played, not left
            for n in range(8):
                made = await asyncio.to_thread(
                    httpx.post, server.url + "/v1/play", json=KONTOUR, timeout=patient(60))
                assert made.status_code == 201, (n, made.text)
                assert await asyncio.to_thread(tables_open, folder) - before == LIMIT, n
            await ws.send(json.dumps({"type": "sync"}))  # the played game is still there
            assert json.loads(await asyncio.wait_for(ws.recv(), patient(30)))["type"] in ("state", "update")

    asyncio.run(scenario())


@pytest.mark.slow
def test_the_games_a_client_started_this_hour_are_counted_on_every_worker(
    bounded: tuple[Server, Path],
) -> None:
    """Half of its hourly games on each worker (each new one replacing one it left): the next is
    refused on either."""
    server, folder = bounded
    mine = as_client(server, "203.0.113.10")
    for n in range(HOURLY):
        made = post_on(folder, n % 2, KONTOUR, mine)
        assert made.status_code == 201, (n, made.text)
    for index in (0, 1):
        refused = post_on(folder, index, KONTOUR, mine)
        assert refused.status_code == 429, refused.text
        assert f"at most {HOURLY} new games per hour" in refused.json()["message"]
        assert int(refused.headers["retry-after"]) >= 1
    other = post_on(folder, 1, KONTOUR, as_client(server, "203.0.113.11"))
    assert other.status_code == 201, other.text
