"""Rooms with friends, in process: the lobby (create, join, the host's seats, start), each person's
own view of the started game, a person's seat played by an AI while they are away and given back
when they return, the bounds, and every refusal with its code. The whole games in real browsers:
tests/test_browser_rooms.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from starlette.websockets import WebSocketDisconnect

from service.play.manager import GameManager
from service.play.rooms import RoomError
from service.play.table import HUMAN
from tests.service_server import in_process


@pytest.fixture(scope="module")
def app(tiny_checkpoint: Path):
    with in_process(tiny_checkpoint, play_limits={"idle_timeout_s": 30}) as client:
        yield client


def manager(app) -> GameManager:
    return app.app.state.play


def new_room(app, **body) -> dict:
    response = app.post("/v1/rooms", json={"game": "pictomania", "name": "Ana", **body})
    assert response.status_code == 201, response.text
    return response.json()


def until(ws, kind: str) -> dict:
    """The next frame of type `kind` (the lobby frames before it are skipped)."""
    while True:
        frame = ws.receive_json()
        if frame["type"] == kind:
            return frame
        assert frame["type"] in ("room", "lobby", "presence", "update", "state"), frame


def started_with_a_friend(app, **body) -> tuple[dict, dict, dict]:
    """A room of Ana (host) and Léa, started: (the room, Léa's `joined`, the host's `started`)."""
    room = new_room(app, ai=1, **body)
    with app.websocket_connect(room["ws"]) as host:
        with app.websocket_connect(f"/v1/rooms/{room['code']}") as friend:
            friend.send_json({"type": "join", "name": "Léa"})
            joined = until(friend, "joined")
            host.send_json({"type": "start"})
            started = until(host, "started")
    return room, joined, started


def test_a_room_from_lobby_to_each_persons_own_view(app) -> None:
    room = new_room(app, ai=0)
    assert room["link"] == f"/r/{room['code']}" and room["seat"] == HUMAN
    assert app.get(room["link"]).status_code == 200  # the page serves the link
    with app.websocket_connect(room["ws"]) as host:
        lobby = until(host, "lobby")
        assert [s["seat"] for s in lobby["seats"]] == [HUMAN] and lobby["min"] == 3
        with app.websocket_connect(f"/v1/rooms/{room['code'].lower()}") as friend:
            preview = friend.receive_json()  # the room first, before any name
            assert preview == {"type": "room", "code": room["code"], "game": "pictomania", "host": "Ana",
                               "names": ["Ana"], "max": lobby["max"], "full": False}
            friend.send_json({"type": "start"})
            assert friend.receive_json()["code"] == "not_joined"
            friend.send_json({"type": "join", "name": "<b>"})
            assert friend.receive_json()["code"] == "bad_name"
            friend.send_json({"type": "join", "name": " ANA "})  # the host's name, as said aloud
            assert friend.receive_json()["code"] == "name_taken"
            friend.send_json({"type": "join", "name": "Léa"})
            joined = friend.receive_json()
            assert joined["type"] == "joined" and joined["seat"] == "ami1"
            lobby = until(friend, "lobby")
            assert [(s["name"], s["here"]) for s in lobby["seats"]] == [("Ana", True), ("Léa", True)]
            friend.send_json({"type": "add_ai"})
            assert until(friend, "error")["code"] == "not_host"
            host.send_json({"type": "start"})  # two players: Pictomania needs three
            assert until(host, "error")["code"] == "bad_seats"
            host.send_json({"type": "add_ai"})
            host.send_json({"type": "add_ai"})
            host.send_json({"type": "remove", "seat": "ia1"})
            host.send_json({"type": "remove", "seat": HUMAN})
            assert until(host, "error")["code"] == "bad_seat"
            host.send_json({"type": "level", "level": "hard"})
            lobby = until(host, "lobby")
            while [s["seat"] for s in lobby["seats"]] != [HUMAN, "ami1", "ia2"] or lobby["level"] != "hard":
                lobby = until(host, "lobby")
            assert lobby["seats"][2]["level"] == "hard" and "level" not in lobby["seats"][1]
            host.send_json({"type": "level", "seat": "ami1", "level": "easy"})  # a person has no level
            assert until(host, "error")["code"] == "bad_seat"
            host.send_json({"type": "level", "seat": "ia2", "level": "easy"})
            while until(host, "lobby")["seats"][2]["level"] != "easy":
                pass
            host.send_json({"type": "start"})
            started = until(host, "started")
            assert until(friend, "started")["game_id"] == started["game_id"]
    game = manager(app).games[started["game_id"]]
    assert game.people == [HUMAN, "ami1"] and game.ais == ["ia2"]
    assert game.ai.level_of("ia2").name == "easy" and game.level.name == "hard"  # its own, not the room's
    play = f"/v1/play/{started['game_id']}"
    with app.websocket_connect(f"{play}?token={room['token']}") as ana, \
            app.websocket_connect(f"{play}?token={joined['token']}") as lea:
        mine, hers = until(ana, "state"), until(lea, "state")
        assert (mine["you"], hers["you"]) == (HUMAN, "ami1")
        assert mine["seats"] == {HUMAN: "here", "ami1": "away"}  # her page had not come yet
        assert hers["seats"] == seat_becomes(ana, "ami1", "here") == {HUMAN: "here", "ami1": "here"}
        def known(frame: dict) -> set[str]:
            return {p for p, secret in frame["state"]["round"]["secrets"].items() if secret is not None}

        assert known(mine) == {HUMAN} and known(hers) == {"ami1"}  # each sees only their own word
        lea.send_json({"type": "move", "move": {"kind": "stroke", "points": [[10, 10], [90, 90]]}})
        update = until(ana, "update")
        assert update["events"][0]["player"] == "ami1"
    # The lobby socket of a started room sends its people on; a stranger is told it started.
    with app.websocket_connect(f"/v1/rooms/{room['code']}?token={joined['token']}") as again:
        assert again.receive_json()["game_id"] == started["game_id"]
    with app.websocket_connect(f"/v1/rooms/{room['code']}") as stranger:
        assert stranger.receive_json()["code"] == "room_started"


def seat_becomes(ws: Any, seat: str, wanted: str) -> dict[str, str]:
    """The seats of the first presence frame (within a few) where `seat` is `wanted`."""
    for _ in range(5):
        seats = until(ws, "presence")["seats"]
        if seats[seat] == wanted:
            return seats
    raise AssertionError(f"{seat} never became {wanted}")


def test_an_ai_plays_the_seat_of_a_person_away_until_they_return(app) -> None:
    room, joined, started = started_with_a_friend(app)
    game = manager(app).games[started["game_id"]]
    play = f"/v1/play/{started['game_id']}"
    with app.websocket_connect(f"{play}?token={room['token']}") as ana:
        assert until(ana, "state")["seats"]["ami1"] == "away"  # a seat is away until its page comes
        with app.websocket_connect(f"{play}?token={joined['token']}") as lea:
            until(lea, "state")
        seat_becomes(ana, "ami1", "here")
        seat_becomes(ana, "ami1", "away")
        game.away["ami1"] -= game.play.room_grace_s  # the grace period is over
        game.check_people()
        assert until(ana, "presence")["seats"]["ami1"] == "ai" and "ami1" in game.ai.ais
        with app.websocket_connect(f"{play}?token={joined['token']}") as lea:
            assert until(lea, "state")["seats"]["ami1"] == "here"
            assert "ami1" not in game.ai.ais and game.ais == ["ia1"]


def test_the_host_plays_again_with_the_same_seats_and_every_page_follows(app) -> None:
    """« Rejouer » in a room: once the game has ended, the host's ``again`` frame starts a new game
    of the same seats (people, names, each AI's level); every socket of the ended game, and one
    that joins it late, is sent on to it, where each person's token opens their own seat again."""
    room = new_room(app, game="kontour", ai=1)
    with app.websocket_connect(room["ws"]) as host:
        with app.websocket_connect(f"/v1/rooms/{room['code']}") as friend:
            friend.send_json({"type": "join", "name": "Léa"})
            joined = until(friend, "joined")
            host.send_json({"type": "level", "seat": "ia1", "level": "hard"})
            host.send_json({"type": "start"})
            started = until(host, "started")
    first = manager(app).games[started["game_id"]]
    play = f"/v1/play/{started['game_id']}"
    with app.websocket_connect(f"{play}?token={room['token']}") as ana, \
            app.websocket_connect(f"{play}?token={joined['token']}") as lea:
        until(ana, "state")
        until(lea, "state")
        lea.send_json({"type": "again"})
        assert until(lea, "error")["code"] == "not_host"
        ana.send_json({"type": "again"})
        assert until(ana, "error")["code"] == "not_over"
        first.state = first.state.replace(phase="game_over")  # the game has ended (its rules: elsewhere)
        ana.send_json({"type": "again"})
        sent_on = until(ana, "next_game")
        assert until(lea, "next_game") == sent_on and sent_on["code"] == room["code"]
        ana.send_json({"type": "again"})  # asked twice: the same next game, not a third one
        assert until(ana, "next_game") == sent_on
    second = manager(app).games[sent_on["game_id"]]
    assert second.id != first.id and second.state.phase != "game_over"
    assert (second.people, second.ais, second.names) == (first.people, first.ais, first.names)
    assert second.ai.level_of("ia1").name == "hard" and second.room_code == room["code"]
    assert manager(app).rooms.started[room["code"]] == second.id
    with app.websocket_connect(f"{play}?token={joined['token']}") as late:  # a page that reloads late
        until(late, "state")
        assert until(late, "next_game")["game_id"] == second.id
    with app.websocket_connect(f"/v1/play/{second.id}?token={joined['token']}") as lea:
        assert until(lea, "state")["you"] == "ami1"
    with app.websocket_connect(f"/v1/rooms/{room['code']}?token={room['token']}") as lobby:
        assert lobby.receive_json()["game_id"] == second.id
    solo = app.post("/v1/play", json={"game": "kontour", "opponents": 1}).json()
    with app.websocket_connect(solo["ws"]) as alone:
        until(alone, "state")
        alone.send_json({"type": "again"})
        assert until(alone, "error")["code"] == "not_a_room"


def test_when_the_host_has_left_the_first_person_here_plays_again(app) -> None:
    """« Rejouer » with the host gone from the ended game: refused to a friend while the host is
    here, then hers (the first person here); the next game keeps every seat, the host's too (their
    token opens it when they come back)."""
    room, joined, started = started_with_a_friend(app, game="kontour")
    first = manager(app).games[started["game_id"]]
    play = f"/v1/play/{started['game_id']}"
    with app.websocket_connect(f"{play}?token={joined['token']}") as lea:
        assert until(lea, "state")["host"] == HUMAN
        with app.websocket_connect(f"{play}?token={room['token']}") as ana:
            until(ana, "state")
            first.state = first.state.replace(phase="game_over")  # the game has ended (its rules: elsewhere)
            lea.send_json({"type": "again"})
            assert until(lea, "error")["code"] == "not_host"  # the host is here: theirs
        while (frame := lea.receive_json())["type"] != "presence" or frame["seats"][HUMAN] == "here":
            assert frame["type"] in ("presence", "update", "state"), frame
        lea.send_json({"type": "again"})  # the host has left: hers now
        sent_on = until(lea, "next_game")
    second = manager(app).games[sent_on["game_id"]]
    assert second.id != first.id and second.people == first.people and second.names == first.names
    assert second.seat_of(room["token"]) == HUMAN and second.seat_of(joined["token"]) == "ami1"
    assert manager(app).rooms.started[room["code"]] == second.id


def test_rooms_are_bounded_and_refusals_say_why(app) -> None:
    assert app.post("/v1/rooms", json={"game": "kontour", "name": "A", "ai": 9}).status_code == 422
    full = new_room(app, game="kontour", ai=manager(app).play.room_seats - 1)
    with app.websocket_connect(f"/v1/rooms/{full['code']}") as late:
        assert late.receive_json()["full"] is True  # said before any name is asked
        late.send_json({"type": "join", "name": "Léa"})
        assert late.receive_json()["code"] == "room_full"
    limit = manager(app).play.rooms_per_client
    codes = [full["code"], *(new_room(app, game="kontour")["code"] for _ in range(limit - 1))]
    refused = app.post("/v1/rooms", json={"game": "kontour", "name": "A"})
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_rooms"
    mistyped = app.get("/r/AB1")  # the page, which says so in French: never a JSON answer
    assert mistyped.status_code == 404 and mistyped.headers["content-type"].startswith("text/html")
    with app.websocket_connect("/v1/rooms/ZZZZ") as ws:
        assert ws.receive_json()["code"] == "unknown_room"
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 4410
    room = manager(app).rooms.lobbies[codes[0]]
    room.last_activity -= manager(app).play.lobby_expiry_s + 1
    assert manager(app).rooms.sweep() == [codes[0]]


def lobby_refusal(app, code: str) -> str:
    """The error code a lobby socket of `code` is answered with (then closed 4410)."""
    with app.websocket_connect(f"/v1/rooms/{code}") as ws:
        refused = ws.receive_json()
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 4410
    return refused["code"]


def test_a_room_that_was_is_gone_and_a_code_that_never_was_is_unknown(app) -> None:
    room = new_room(app, game="kontour")
    code = room["code"]
    rooms = manager(app).rooms
    never = next(c for c in ("ZZZZ", "ZZZY", "ZZZX") if c not in rooms.lobbies and c not in rooms.gone)
    assert lobby_refusal(app, never) == "unknown_room"
    with app.websocket_connect(room["ws"]) as host:
        until(host, "lobby")
        host.send_json({"type": "leave"})  # the host closes the room
        assert until(host, "error")["code"] == "room_closed"
    assert lobby_refusal(app, code) == "room_gone"
    assert lobby_refusal(app, code.lower()) == "room_gone"
    assert rooms.new_code() != code  # a code that was a room is not dealt again while remembered


def test_a_host_away_before_the_start_hands_the_room_to_the_next_person_here(app) -> None:
    rooms = manager(app).rooms
    room = new_room(app, game="kontour", ai=1)
    with app.websocket_connect(room["ws"]) as host:
        until(host, "lobby")
        friend_ws = app.websocket_connect(f"/v1/rooms/{room['code']}")
        friend = friend_ws.__enter__()
        friend.send_json({"type": "join", "name": "Léa"})
        joined = until(friend, "joined")
    lobby = until(friend, "lobby")
    while next(s for s in lobby["seats"] if s["seat"] == HUMAN)["here"]:
        lobby = until(friend, "lobby")  # the host's page is gone: « hors ligne »
    assert lobby["you"] == "ami1"
    held = rooms.lobbies[room["code"]]
    assert not rooms.check_host(held)  # within the grace period: the host may come back
    held.host_away -= manager(app).play.room_grace_s
    assert rooms.check_host(held)
    told = until(friend, "host_changed")
    assert told == {"type": "host_changed", "was": "Ana", "host": "Léa", "you": True}
    lobby = until(friend, "lobby")
    assert lobby["you"] == HUMAN == lobby["host"]
    # She takes the host's seat (first: she draws first), Ana hers.
    seats = [(s["seat"], s["name"]) for s in lobby["seats"]]
    assert seats == [(HUMAN, "Léa"), ("ia1", "Plume"), ("ami1", "Ana")]
    friend.send_json({"type": "add_ai"})  # the host's requests are hers now
    while len(until(friend, "lobby")["seats"]) != 4:
        pass
    with app.websocket_connect(f"/v1/rooms/{room['code']}?token={room['token']}") as ana:
        assert until(ana, "lobby")["you"] == "ami1"  # Ana's token opens her seat, a friend's now
        ana.send_json({"type": "start"})
        assert until(ana, "error")["code"] == "not_host"
    friend.send_json({"type": "start"})
    started = until(friend, "started")
    friend_ws.__exit__(None, None, None)
    game = manager(app).games[started["game_id"]]
    assert game.seat_of(joined["token"]) == HUMAN and game.seat_of(room["token"]) == "ami1"


def test_a_kontour_room_survives_a_restart_and_an_ai_draws_for_a_person_away(tmp_path: Path) -> None:
    """The room's game in SQLite: its seats and their tokens come back after a restart (the code
    too); the friend, away past the grace period, has their turn drawn by an AI."""
    from service.play.clock import ManualClock
    from service.play.settings import PlaySettings
    from service.settings import Settings
    from store import open_store
    from tests.test_service_persistence import kontour_human_turn, play_a_while, uniform

    def manager_on(store) -> GameManager:
        return GameManager(Settings(), PlaySettings(room_grace_s=5), lambda key: uniform, frozenset(), store,
                           clock=ManualClock())

    async def run() -> None:
        store = open_store(f"sqlite:///{tmp_path / 'rooms.db'}")
        first = manager_on(store)
        room, host_token = first.rooms.create("kontour", "Ana", "normal", 0, client="c")
        seat, friend_token = first.rooms.join(room, "Léa")
        first.rooms.request(room, HUMAN, {"type": "add_ai"})
        session = first.rooms.request(room, HUMAN, {"type": "start"})
        assert session is not None and session.driver is not None
        session.driver.cancel()  # the test drives the game
        assert first.rooms.started == {room.code: session.id} and not first.rooms.lobbies
        assert session.seat_of(friend_token) == seat == "ami1" and session.seat_of(host_token) == HUMAN
        ana, lea = session.attach(HUMAN), session.attach(seat)
        play_a_while(session, 30, kontour_human_turn(session))  # the host's turn runs out
        def drawer() -> str:
            state = session.state
            return state.turn.drawer if state.turn is not None else state.drawer

        assert drawer() == seat  # the friend draws next
        session.detach(lea)  # ...but has gone
        play_a_while(session, 2, [])
        assert session.presence()[seat] == "away" and session.state.phase == "draw"
        play_a_while(session, 10, [])  # the grace period runs out: an AI draws in the friend's seat
        session.check_people()
        play_a_while(session, 15, [])
        assert session.presence()[seat] == "ai"
        await first.settle()  # every move applied is written
        logged = store.load_game(session.id).moves
        by_friend = [m.move["kind"] for m in logged if m.move.get("player") == seat]
        assert by_friend[:2] == ["draw_card", "choose_word"] and "stroke" in by_friend  # the AI drew for her
        moves = session.moves
        session.detach(ana)
        await first.aclose()

        second = manager_on(store)
        assert second.resume() == (1, 0)
        back = second.get(session.id)
        assert back.moves == moves and back.people == [HUMAN, seat]
        assert back.seat_of(friend_token) == seat and back.seat_of(host_token) == HUMAN
        assert second.rooms.started == {room.code: session.id}
        assert back.frame([], seat)["you"] == seat
        await second.aclose()
        store.close()

    asyncio.run(run())


def test_each_ai_plays_at_its_own_level_and_the_levels_come_back_after_a_restart(tmp_path: Path) -> None:
    """An easy and a hard AI in one room: each driver's players at their own level, kept in the
    stored setup and given back when the game is resumed; a setup without per-seat levels (a solo
    game's) gives every AI the game's level."""
    from games.ai.levels import load_level
    from service.play.clock import ManualClock
    from service.play.settings import PlaySettings
    from service.settings import Settings
    from store import open_store
    from tests.test_service_persistence import line, play_a_while, uniform

    def manager_on(store) -> GameManager:
        return GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), store,
                           clock=ManualClock())

    easy, hard = load_level("easy"), load_level("hard")
    assert easy.pictomania_guesser != hard.pictomania_guesser and easy.drawer != hard.drawer

    def levels_of(session) -> dict[str, str]:
        """Each AI's level as its guesser and drawer play it (the driver's own objects)."""
        by_guesser = {lv.pictomania_guesser: lv.name for lv in (easy, hard, load_level("normal"))}
        return {p: by_guesser[session.ai.brains[p].level] for p in session.ais}

    async def run() -> None:
        store = open_store(f"sqlite:///{tmp_path / 'levels.db'}")
        first = manager_on(store)
        room, _ = first.rooms.create("pictomania", "Ana", "normal", 2, client="c")
        first.rooms.request(room, HUMAN, {"type": "level", "seat": "ia1", "level": "easy"})
        first.rooms.request(room, HUMAN, {"type": "level", "seat": "ia2", "level": "hard"})
        with pytest.raises(RoomError) as refused:
            first.rooms.request(room, HUMAN, {"type": "level", "seat": "ia2", "level": "expert"})
        assert refused.value.code == "bad_level"
        session = first.rooms.request(room, HUMAN, {"type": "start"})
        assert session is not None and session.driver is not None
        session.driver.cancel()  # the test drives the game
        assert levels_of(session) == {"ia1": "easy", "ia2": "hard"}
        assert session.ai.level_of("ia1") == easy and session.ai.level_of("ia2") == hard
        play_a_while(session, 20, [line(0), line(1)])
        moves = session.moves
        await first.aclose()
        assert store.load_game(session.id).setup["levels"] == {"ia1": "easy", "ia2": "hard"}

        solo = manager_on(store)
        alone = solo.create("pictomania", opponents=2, level="hard", name="Ana", seed=3)
        alone.driver.cancel()
        assert "levels" not in store.load_game(alone.id).setup
        assert levels_of(alone) == {"ia1": "hard", "ia2": "hard"}
        await solo.aclose()

        second = manager_on(store)
        assert second.resume() == (2, 0)
        back = second.get(session.id)
        assert back.moves == moves and levels_of(back) == {"ia1": "easy", "ia2": "hard"}
        assert levels_of(second.get(alone.id)) == {"ia1": "hard", "ia2": "hard"}
        await second.aclose()
        store.close()

    asyncio.run(run())


def test_a_lobby_survives_a_restart_and_an_expired_or_started_one_does_not(tmp_path: Path) -> None:
    """Lobbies not yet started, in SQLite: a host, a friend and an AI at its own level come back after
    a restart under the same code, the friend's token still giving her seat, and the lobby starts
    there (its game stored off the event loop, the lobby refusing any change meanwhile); a lobby idle
    past ``lobby_expiry_s`` is not brought back (its row deleted); a started
    room's lobby row is gone."""
    import time

    from service.play.clock import ManualClock
    from service.play.settings import PlaySettings
    from service.settings import Settings
    from store import hash_token, open_store
    from tests.test_service_persistence import uniform

    def manager_on(store) -> GameManager:
        return GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), store,
                           clock=ManualClock())

    async def run() -> None:
        store = open_store(f"sqlite:///{tmp_path / 'lobbies.db'}")
        first = manager_on(store)
        room, host_token = first.rooms.create("pictomania", "Ana", "normal", 1, client="c")
        seat, friend_token = first.rooms.join(room, "Léa")
        first.rooms.request(room, HUMAN, {"type": "level", "seat": "ia1", "level": "hard"})
        started, _ = first.rooms.create("kontour", "Zoé", "easy", 1, client="d")
        session = first.rooms.request(started, HUMAN, {"type": "start"})
        assert session is not None
        forgotten, _ = first.rooms.create("pictomania", "Marc", "easy", 2, client="e")
        await first.rooms.flush()
        stored = {code: lobby for code, lobby, _ in store.load_rooms()}
        assert set(stored) == {room.code, forgotten.code}  # the started room's row is gone
        tokens = [s["token_hash"] for s in stored[room.code]["seats"] if s["person"]]
        assert tokens == [hash_token(host_token), hash_token(friend_token)]
        assert host_token not in str(stored) and friend_token not in str(stored)
        expiry = first.play.lobby_expiry_s
        store.save_room(forgotten.code, stored[forgotten.code], now=time.time() - expiry - 1)
        await first.aclose()

        second = manager_on(store)
        assert second.resume() == (1, 0)  # the started room's game
        assert set(second.rooms.lobbies) == {room.code} and second.rooms.started == {started.code: session.id}
        back = second.rooms.lobbies[room.code]
        assert [(s.seat, s.name, s.person, s.level) for s in back.seats] == [
            (HUMAN, "Ana", True, ""), ("ia1", room.seats[1].name, False, "hard"), (seat, "Léa", True, "")]
        assert back.seat_of(friend_token) == seat and back.seat_of(host_token) == HUMAN
        assert [code for code, _, _ in store.load_rooms()] == [room.code]  # the expired row deleted
        starting = asyncio.create_task(second.rooms.start_async(back))  # stored in a thread
        await asyncio.sleep(0)
        for refused in (lambda: second.rooms.request(back, HUMAN, {"type": "add_ai"}),
                        lambda: second.rooms.request(back, HUMAN, {"type": "start"}),
                        lambda: second.rooms.join(back, "Marc")):
            with pytest.raises(RoomError) as why:  # the seats are those of the game being created
                refused()
            assert why.value.code == "starting"
        game = await starting
        assert game.seat_of(friend_token) == seat and second.rooms.started[room.code] == game.id
        assert game.levels["ia1"].name == "hard"
        await second.rooms.flush()
        assert store.load_rooms() == []
        await second.aclose()
        store.close()

    asyncio.run(run())


def test_a_failing_database_does_not_stop_a_lobby(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The lobby's writes fail (the database closed under it): logged, the lobby goes on in memory."""
    from service.play.clock import ManualClock
    from service.play.settings import PlaySettings
    from service.settings import Settings
    from store import open_store
    from tests.test_service_persistence import uniform

    async def run() -> None:
        store = open_store(f"sqlite:///{tmp_path / 'closed.db'}")
        games = GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), store,
                            clock=ManualClock())
        store.conn.close()
        room, _ = games.rooms.create("pictomania", "Ana", "normal", 1, client="c")
        games.rooms.join(room, "Léa")
        await games.rooms.flush()
        assert [s.name for s in games.rooms.lobbies[room.code].seats][::2] == ["Ana", "Léa"]
        assert f"room {room.code}: the lobby could not be stored" in caplog.text

    asyncio.run(run())


def test_a_next_game_refused_is_told_to_the_host_only() -> None:
    """« Rejouer » refused while the new game is created (every slot taken): the host's sockets get
    ``cannot_start``, a friend's nothing, and the host may ask again."""
    from service.play.clock import ManualClock
    from service.play.manager import TooManyGames
    from service.play.settings import PlaySettings
    from service.settings import Settings
    from tests.test_service_persistence import uniform

    async def run() -> None:
        games = GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), None,
                            clock=ManualClock())
        room, _ = games.rooms.create("pictomania", "Ana", "normal", 1, client="c")
        seat, _ = games.rooms.join(room, "Léa")
        session = games.rooms.start(room)
        assert session.driver is not None
        session.driver.cancel()
        ana, lea = session.attach(HUMAN), session.attach(seat)

        def errors(queue) -> list[str]:
            frames = [queue.get_nowait() for _ in range(queue.qsize())]
            return [f["code"] for f in frames if f is not None and f["type"] == "error"]

        assert errors(ana) == errors(lea) == []

        async def refused(*args, **kwargs):
            raise TooManyGames("every slot is taken")

        games.open_async = refused  # type: ignore[method-assign]
        games.rooms.opening.add(room.code)
        await games.rooms._next_game(session, room.code)
        assert errors(ana) == ["cannot_start"] and errors(lea) == []
        assert room.code not in games.rooms.opening and session.next_game is None
        await games.aclose()

    asyncio.run(run())


def test_a_flood_of_lobby_frames_is_cut_with_one_error() -> None:
    """The lobby socket's rate limit (the game socket's settings): frames past it are dropped, the
    socket told once per flood (a clock that never moves: the bucket never refills)."""
    from service.play.rooms import _within
    from service.ratelimit import RateLimit

    limit = RateLimit(rate=1.0, burst=2, clock=lambda: 0.0)
    queue: asyncio.Queue = asyncio.Queue(16)
    assert [_within(limit, queue) for _ in range(5)] == [True, True, False, False, False]
    assert queue.qsize() == 1 and queue.get_nowait()["code"] == "rate_limited"


def test_a_room_s_code_leads_to_its_ended_game_after_a_restart(tmp_path: Path) -> None:
    """A room's game ended, then the server restarted (a game over is not resumed): the room's code
    still leads to it (``room_games``), brought back with its end screen and its people's seats, and
    the host plays again from there; its stored end is not rewritten. A code whose game is long over
    is « gone », not unknown."""
    import time

    from service.play.clock import ManualClock
    from service.play.settings import PlaySettings
    from service.settings import Settings
    from store import open_store
    from tests.test_service_persistence import line, play_a_while, uniform

    def manager_on(store) -> GameManager:
        return GameManager(Settings(), PlaySettings(pictomania_rounds=1, pictomania_round_s=20),
                           lambda key: uniform, frozenset(), store, clock=ManualClock())

    async def run() -> None:
        store = open_store(f"sqlite:///{tmp_path / 'ended.db'}")
        first = manager_on(store)
        room, host_token = first.rooms.create("pictomania", "Ana", "normal", 1, client="c")
        seat, friend_token = first.rooms.join(room, "Léa")
        session = first.rooms.request(room, HUMAN, {"type": "start"})
        assert session is not None and session.driver is not None
        session.driver.cancel()  # the test drives the game
        play_a_while(session, 40, [line(0)])
        assert session.state.phase == "game_over"
        old, _ = first.rooms.create("pictomania", "Zoé", "normal", 2, client="d")
        over = first.rooms.request(old, HUMAN, {"type": "start"})
        assert over is not None
        await first.settle()
        await first.rooms.flush()
        await first.aclose()
        assert store.load_game(session.id).status == "finished"
        result = store.load_game(session.id).result
        assert result is not None
        store.finish_game(over.id, "finished")
        store.run("UPDATE games SET updated_at = ? WHERE id = ?", (time.time() - 2 * 86_400, over.id))

        second = manager_on(store)
        assert second.resume() == (0, 0) and session.id not in second.games
        back = await second.rooms.recall(room.code)
        assert back is not None and back.id == session.id and back.state.phase == "game_over"
        assert back.seat_of(friend_token) == seat and back.seat_of(host_token) == HUMAN
        assert second.rooms.started[room.code] == session.id
        back.attach(HUMAN)  # the host's page, back
        assert second.rooms.again(back, HUMAN) is None  # « Rejouer »
        await second.rooms.flush()
        new = second.games[second.rooms.started[room.code]]
        assert new.id != session.id and new.seat_of(friend_token) == seat
        assert store.room_game(room.code) == new.id
        await second.rooms.recall(old.code)  # over two days ago: not brought back
        assert over.id not in second.games and old.code in second.rooms.gone
        await second.aclose()
        again = store.load_game(session.id)
        assert again.status == "finished" and again.result == result
        store.close()

    asyncio.run(run())
