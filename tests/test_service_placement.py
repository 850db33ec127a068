"""New tables on the least-loaded worker (service/placement.py): the choice from the published loads,
and a real `griffon serve --workers 2` where tables asked of one worker end up spread, a forwarded game
answers as a local one and is played over its socket, and an unreachable worker is passed over."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from websockets.asyncio.client import connect

from griffon.launch import Server, eventually, patient, running_server, tuning
from service.placement import STALE_S, WEIGHTS, Placement, table_weight, weighted_load
from service.play.web import GameCreated, RoomCreated
from service.ratelimit import DecayingRate
from service.workers import CLIENT_HEADER, RELAY_HEADER, Workers
from tests.service_server import secret_of

STROKE = {"type": "move", "move": {"kind": "stroke", "points": [[10, 10], [60, 80], [120, 40]]}}
KONTOUR = {"game": "kontour", "opponents": 1}  # the cheapest table: the tests open a dozen


# -- the choice, from the files -------------------------------------------------------------------


def placement_in(folder: Path, index: int = 0, count: int = 3, own: float = 0.0) -> Placement:
    return Placement(Workers(index, count, folder, "secret"), lambda: own)


def publish(folder: Path, index: int, load: float, age_s: float = 0.0) -> None:
    record = {"load": load, "loop_share": 0.1, "at": time.time() - age_s, "pid": 1}
    (folder / f"load-{index}.json").write_text(json.dumps(record))


def test_a_table_goes_to_the_least_loaded_worker_and_stays_when_loads_are_near_equal(tmp_path: Path) -> None:
    publish(tmp_path, 1, 3 * WEIGHTS["kontour"])
    publish(tmp_path, 2, WEIGHTS["kontour"])
    assert placement_in(tmp_path, own=2 * WEIGHTS["kontour"]).choose("kontour") == 2
    assert placement_in(tmp_path, own=WEIGHTS["kontour"]).choose("kontour") == 0  # a tie: no hop
    # within half a table of the lowest: made here
    assert placement_in(tmp_path, own=WEIGHTS["kontour"] * 1.4).choose("kontour") == 0
    assert placement_in(tmp_path, own=WEIGHTS["kontour"] * 1.6).choose("kontour") == 2


def test_a_stale_missing_or_unreadable_file_is_never_chosen(tmp_path: Path) -> None:
    publish(tmp_path, 1, 0.0, age_s=STALE_S + 5)  # a worker that stopped publishing: dead
    (tmp_path / "load-2.json").write_text("{not json")
    placement = placement_in(tmp_path, own=10 * WEIGHTS["pictomania"])
    assert placement.loads() == {0: 10 * WEIGHTS["pictomania"]}
    assert placement.choose("pictomania") == 0
    assert placement_in(tmp_path, count=5, own=50.0).choose("bot") == 0  # no file at all for 3 and 4


def test_the_tables_being_made_count_where_they_go_here_and_at_the_siblings(tmp_path: Path) -> None:
    first = placement_in(tmp_path, index=0, count=2, own=WEIGHTS["pictomania"])
    second = placement_in(tmp_path, index=1, count=2, own=0.0)
    first.publish()
    second.publish()
    assert first.choose("pictomania") == 1
    with first.counted(1, "pictomania"):  # forwarded to worker 1, not answered yet
        assert first.loads() == second.loads() == {0: WEIGHTS["pictomania"], 1: WEIGHTS["pictomania"]}
        assert first.choose("pictomania") == 0 and second.choose("pictomania") == 1  # a tie: no hop
        with second.counted(1, "kontour"):  # worker 1 makes one of its own meanwhile
            assert first.loads()[1] == WEIGHTS["pictomania"] + WEIGHTS["kontour"]
    assert first.pending == second.pending == {}
    assert first.loads() == {0: WEIGHTS["pictomania"], 1: 0.0}  # answered: nothing counted twice


def test_the_load_is_published_atomically_and_taken_away_at_the_end(tmp_path: Path) -> None:
    async def run() -> dict:
        placement = placement_in(tmp_path, index=1, own=42.0)
        placement.start()
        await asyncio.sleep(0)
        published = json.loads((tmp_path / "load-1.json").read_text())
        await placement.aclose()
        assert not (tmp_path / "load-1.json").exists()
        return published

    published = asyncio.run(run())
    assert published["load"] == 42.0 and 0 <= published["loop_share"]
    assert placement_in(tmp_path).read(1) is None


def test_the_load_weights_tables_still_played_lobbies_and_bot_rooms() -> None:
    def table(kind: str, phase: str) -> SimpleNamespace:
        return SimpleNamespace(kind=kind, state=SimpleNamespace(phase=phase), loop_used=DecayingRate())

    games = SimpleNamespace(
        games={"a": table("pictomania", "drawing"), "b": table("kontour", "turn"),
               "c": table("pictomania", "game_over")},  # a finished table costs nothing
        rooms=SimpleNamespace(lobbies={"ABCD": SimpleNamespace(game="kontour")}),
    )
    expected = WEIGHTS["pictomania"] + 2 * WEIGHTS["kontour"] + 3 * WEIGHTS["bot"]
    assert weighted_load(games, bots_live=3) == pytest.approx(expected)  # type: ignore[arg-type]


def test_a_table_that_takes_more_of_the_event_loop_weighs_what_it_takes() -> None:
    """A table at the maxima (its frames near its share of the loop) weighs what it takes, so new
    tables go to the other workers; a quiet one weighs its kind's measured CPU."""
    now = [0.0]
    heavy = SimpleNamespace(kind="pictomania", state=SimpleNamespace(phase="drawing"),
                            loop_used=DecayingRate(window_s=10.0, clock=lambda: now[0]))
    quiet = SimpleNamespace(kind="pictomania", state=SimpleNamespace(phase="drawing"),
                            loop_used=DecayingRate(window_s=10.0, clock=lambda: now[0]))
    for _ in range(600):  # a minute of frames taking 0.25 s of the loop a second
        now[0] += 0.1
        heavy.loop_used.add(0.025)
        quiet.loop_used.add(0.0002)
    assert table_weight(quiet) == WEIGHTS["pictomania"]  # type: ignore[arg-type]
    assert table_weight(heavy) == pytest.approx(250.0, rel=0.02)  # type: ignore[arg-type]
    games = SimpleNamespace(games={"a": heavy}, rooms=SimpleNamespace(lobbies={}))
    assert weighted_load(games, bots_live=0) > 10 * WEIGHTS["pictomania"]  # type: ignore[arg-type]
    now[0] += 60.0  # the table went quiet: its weight decays back to its kind's
    assert table_weight(heavy) == WEIGHTS["pictomania"]  # type: ignore[arg-type]


# -- a real server with 2 workers -------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    folder = tmp_path_factory.mktemp("placement") / "workers"
    env = {"GRIFFON_WORKER_DIR": str(folder), "GRIFFON_PLAY_GAMES_PER_CLIENT": "50",
           "GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR": "500", "GRIFFON_PLAY_IDLE_TIMEOUT_S": "1800",
           # no admission refusal
           **tuning(**{"capacity.kontour_table_cost": 0, "capacity.pictomania_table_cost": 0})}
    with running_server(env, workers=2) as server:
        eventually(lambda: all((folder / f"load-{i}.json").exists() for i in range(2)), 120,
                   "the workers did not publish their loads")
        yield server, folder


def socket_of(folder: Path, index: int) -> str:
    return str(folder / f"worker-{index}.sock")




def on_worker(folder: Path, index: int) -> httpx.Client:
    """A client of worker ``index``'s private socket (as a client that reached it would be)."""
    return httpx.Client(transport=httpx.HTTPTransport(uds=socket_of(folder, index)), timeout=patient(60))


def post(folder: Path, index: int, path: str, body: dict, headers: dict | None = None) -> httpx.Response:
    """``POST path`` on worker ``index``."""
    with on_worker(folder, index) as http:
        return http.post(f"http://worker{path}", json=body, headers=headers)


OPEN = re.compile(r"^griffon_tables_open\{[^}]*\} (\S+)$", re.M)


def tables(folder: Path) -> list[int]:
    """The tables each worker holds, from its own metrics."""
    counts = []
    for index in range(2):
        with on_worker(folder, index) as http:
            text = http.get("http://worker/metrics", params={"local": "true"}).text
        counts.append(round(sum(float(n) for n in OPEN.findall(text))))
    return counts


def load_on(server: Server, folder: Path, index: int, count: int) -> None:
    """Open ``count`` Kontour tables on worker ``index`` itself: asked as a sibling forwards a request,
    so that none is placed elsewhere."""
    headers = {RELAY_HEADER: secret_of(server), CLIENT_HEADER: "127.0.0.1"}
    for _ in range(count):
        made = post(folder, index, "/v1/play", KONTOUR, headers)
        assert made.status_code == 201, made.text
        assert Workers(0, 2, folder, "").owner(made.json()["game_id"]) == index


def lighter_by(server: Server, folder: Path, lighter: int, at_least: int) -> None:
    """Open tables on the other worker until ``lighter`` holds ``at_least`` fewer."""
    counts = tables(folder)
    load_on(server, folder, 1 - lighter, max(0, counts[lighter] + at_least - counts[1 - lighter]))


@pytest.mark.slow
def test_tables_asked_of_one_worker_end_up_spread_by_load(two_workers: tuple[Server, Path]) -> None:
    server, folder = two_workers
    lighter_by(server, folder, 0, 3)  # worker 1 holds 3 more tables
    before = tables(folder)
    owners = []
    for _ in range(7):  # every request reaches worker 1
        made = post(folder, 1, "/v1/play", KONTOUR)
        assert made.status_code == 201, made.text
        owners.append(Workers(0, 2, folder, "").owner(made.json()["game_id"]))
    after = tables(folder)
    assert sum(after) == sum(before) + 7
    assert abs(after[0] - after[1]) <= 1, (before, after, owners)
    assert owners[:3] == [0, 0, 0]  # the lighter worker first, until they are even
    for _ in range(4):  # through the shared port: wherever the kernel hands them, they stay even
        assert httpx.post(server.url + "/v1/play", json=KONTOUR, timeout=patient(60)).status_code == 201
    final = tables(folder)
    assert abs(final[0] - final[1]) <= 1, final


@pytest.mark.slow
def test_a_forwarded_game_answers_as_a_local_one_and_is_played_over_its_socket(
    two_workers: tuple[Server, Path],
) -> None:
    server, folder = two_workers
    lighter_by(server, folder, 1, 0)
    local = post(folder, 1, "/v1/play", {"game": "pictomania", "opponents": 2})  # worker 1 is not heavier
    lighter_by(server, folder, 0, 2)
    forwarded = post(folder, 1, "/v1/play", {"game": "pictomania", "opponents": 2})
    assert local.status_code == forwarded.status_code == 201, (local.text, forwarded.text)
    game, own = forwarded.json(), local.json()
    assert Workers(0, 2, folder, "").owner(own["game_id"]) == 1
    assert Workers(0, 2, folder, "").owner(game["game_id"]) == 0  # made by the lighter worker
    assert set(game) == set(own) == set(GameCreated.model_fields)
    assert forwarded.headers["x-griffon-game"] == game["game_id"]
    assert forwarded.headers["content-type"] == local.headers["content-type"]

    async def play() -> None:
        async with connect(server.ws_url + game["ws"]) as ws:
            state = json.loads(await asyncio.wait_for(ws.recv(), patient(30)))
            assert state["type"] == "state" and state["id"] == game["game_id"]
            await ws.send(json.dumps(STROKE))
            for _ in range(60):
                frame = json.loads(await asyncio.wait_for(ws.recv(), patient(30)))
                events = frame.get("events", [])
                if any(e.get("kind") == "stroke_drawn" and e.get("player") == "joueur" for e in events):
                    return
            raise AssertionError("the stroke was never drawn")

    asyncio.run(play())


@pytest.mark.slow
def test_a_room_goes_to_the_lighter_worker_and_its_lobby_answers(two_workers: tuple[Server, Path]) -> None:
    server, folder = two_workers
    lighter_by(server, folder, 0, 2)
    made = post(folder, 1, "/v1/rooms", {"game": "kontour", "name": "Zoé", "ai": 1})
    assert made.status_code == 201, made.text
    room = made.json()
    assert set(room) == set(RoomCreated.model_fields)
    assert Workers(0, 2, folder, "").owner(room["code"]) == 0

    async def lobby() -> dict:
        async with connect(server.ws_url + room["ws"]) as ws:
            return json.loads(await asyncio.wait_for(ws.recv(), patient(30)))

    frame = asyncio.run(lobby())
    assert frame["type"] == "lobby" and frame["code"] == room["code"]


@pytest.mark.slow
def test_an_unreachable_worker_is_passed_over_and_the_table_made_where_it_was_asked(
    two_workers: tuple[Server, Path],
) -> None:
    server, folder = two_workers
    lighter_by(server, folder, 1, 3)
    sent = post(folder, 0, "/v1/play", KONTOUR)  # worker 0 has reached worker 1 before
    assert Workers(0, 2, folder, "").owner(sent.json()["game_id"]) == 1
    lighter_by(server, folder, 1, 3)
    path = Path(socket_of(folder, 1))
    aside = path.with_name("moved-aside.sock")
    path.rename(aside)  # worker 1 publishes the lowest load but cannot be reached
    try:
        made = post(folder, 0, "/v1/play", KONTOUR)
    finally:
        aside.rename(path)
    assert made.status_code == 201, made.text
    assert Workers(0, 2, folder, "").owner(made.json()["game_id"]) == 0
    assert "cannot be reached" in server.log()


@pytest.mark.slow
def test_a_client_s_lobbies_are_counted_on_every_worker(two_workers: tuple[Server, Path]) -> None:
    """``rooms_per_client`` (2) holds across the workers: a client with a lobby on each worker is
    refused a third on either (each request reaches a worker as the kernel spreads them; here the
    test picks the worker, as a sibling forwards it)."""
    server, folder = two_workers
    headers = {RELAY_HEADER: secret_of(server), CLIENT_HEADER: "203.0.113.9"}  # one client, by its address
    body = {"game": "kontour", "name": "Zoé", "ai": 1}
    first = post(folder, 0, "/v1/rooms", body, headers)
    second = post(folder, 1, "/v1/rooms", body, headers)
    assert (first.status_code, second.status_code) == (201, 201), (first.text, second.text)
    for index in (0, 1):
        third = post(folder, index, "/v1/rooms", body, headers)
        assert third.status_code == 429, third.text
        assert third.json()["error"] == "too_many_rooms" and "2 rooms" in third.json()["message"]
    other = post(folder, 1, "/v1/rooms", body, {**headers, CLIENT_HEADER: "203.0.113.10"})
    assert other.status_code == 201, other.text  # another client is not counted with it


def test_a_client_s_holdings_and_games_of_the_hour_are_counted_on_every_worker(tmp_path: Path) -> None:
    """What each worker publishes of a client is added up by the others; the games made in the last
    hour leave the count as the hour passes; another address is not counted with it."""
    from collections import Counter

    from service.errors import RateLimited
    from service.placement import CREATED_WINDOW_S

    now, a = [1000.0], "203.0.113.1"
    first = Placement(Workers(0, 2, tmp_path, "s"), lambda: 0.0, clock=lambda: now[0],
                      clients=lambda: {"games": Counter({a: 2}), "bots": Counter({a: 5})})
    second = Placement(Workers(1, 2, tmp_path, "s"), lambda: 0.0, clock=lambda: now[0],
                       clients=lambda: {"left": Counter({a: 1}), "games": Counter({a: 1})})
    first.publish()
    second.publish()
    assert second.elsewhere("203.0.113.1", "bots") == 5 and second.held("203.0.113.1", "games") == 3
    assert first.elsewhere("203.0.113.2", "games") == 0
    assert first.replacing("203.0.113.1", 3) == 1  # at its limit, a game left on worker 1: made there
    assert first.replacing("203.0.113.1", 4) is None and second.replacing("203.0.113.1", 3) is None
    for _ in range(2):
        first.made("203.0.113.1", 3)
    second.made("203.0.113.1", 3)
    with pytest.raises(RateLimited, match="at most 3 new games per hour"):
        first.check_created("203.0.113.1", 3)
    second.check_created("203.0.113.2", 3)  # another address
    now[0] += CREATED_WINDOW_S + 1  # an hour later: forgotten
    first.publish()
    second.publish()
    first.check_created("203.0.113.1", 3)
    assert first.created == {} and second.held("203.0.113.1", "created") == 0


def test_a_new_bot_room_is_published_at_once_unless_the_file_is_large(tmp_path: Path) -> None:
    """A change is written at once while few clients are published; with many (a flood from many
    addresses) it is put off to one write a little later, never lost."""
    from collections import Counter

    from service.placement import SMALL_PUBLISH, client_hash

    def published() -> dict:
        return json.loads((tmp_path / "load-0.json").read_text())["clients"]["bots"]

    async def run() -> None:
        held = {"bots": Counter({"203.0.113.1": 1})}
        placement = Placement(Workers(0, 2, tmp_path, "s"), lambda: 0.0, clients=lambda: held)
        placement.publish()
        held["bots"]["203.0.113.2"] = 1
        placement.publish_soon()
        assert client_hash("203.0.113.2") in published() and placement.deferred is None
        held["bots"] = Counter({f"198.51.100.{i}": 1 for i in range(SMALL_PUBLISH)})
        placement.publish()
        held["bots"]["203.0.113.3"] = 1
        placement.publish_soon()
        placement.publish_soon()  # one write put off, whatever comes meanwhile
        assert placement.deferred is not None and client_hash("203.0.113.3") not in published()
        for _ in range(600):
            if placement.deferred is None:
                break
            await asyncio.sleep(0.05)
        assert client_hash("203.0.113.3") in published()
        await placement.aclose()

    asyncio.run(run())
