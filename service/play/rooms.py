"""Rooms: one table of people, each on their own device, and AI players filling the other seats.

A person creates a room (``POST /v1/rooms``) and gets its code (four letters: the page's link
``/r/ABCD``) and their seat's token. Friends open the link and take a seat under a name through
the lobby socket (``WS /v1/rooms/{code}``); the host adds AI players, sets each one's level, removes a
seat and starts. The game is then an ordinary game of the `GameManager` (`GameManager.open_async`; a solo
game is a room of one person): each person plays through the game socket ``/v1/play/{id}`` with
their own token and is sent their own seat's view. A person away longer than ``room_grace_s`` has
their seat played by an AI until they come back (`GameSession.check_people`). Once the game has
ended the host (while away, the first person here: `restarter`) may play again with the same seats
(`Rooms.again`: « Rejouer »).

A lobby is stored each time it changes and brought back at a restart, and the game a started room's
code leads to is stored (`service.play.stored_lobbies`): a restart keeps the room's code, seats and links;
on replicas another replica takes a lobby over when its replica dies. ``lobby_expiry_s`` closes a
forgotten lobby (its row deleted, as when it starts or the host closes it). The started game is
stored and resumed like a solo game, the room's code and seats with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect

from games.ai import level_names
from games.kontour import KontourConfig
from games.pictomania import PictomaniaConfig
from service.errors import STORE_DOWN, RateLimited
from service.frames import FrameError, error_frame, load_json
from service.play.room_tables import RoomTables
from service.play.stored_lobbies import CODE_LENGTH, CODE_LETTERS, MOVED, Room, Seat, StoredLobbies, offer
from service.play.table import HUMAN, GameSession
from service.ratelimit import RateLimit
from store import StoreError, hash_token

__all__ = ["CODE", "Room", "RoomError", "Rooms", "Seat", "serve_lobby"]

log = logging.getLogger("griffon.play")
CODE = re.compile(rf"^[{CODE_LETTERS}]{{{CODE_LENGTH}}}$")
NAME = re.compile(r"^[^<>&\"]{1,24}$")
LOBBY_QUEUE = 16
JOIN_WAIT_S = 300.0  # a lobby socket that names nobody within this is closed (the name form is open)
CLOSE_ROOM_GONE = 4410
CLOSE_MOVED = 1012  # another replica holds the lobby now: the page reconnects (service.replicas)


class RoomError(Exception):
    """A lobby request refused: `code` is stable (for the page), the message is for developers."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message

    def to_frame(self) -> dict[str, Any]:
        return error_frame(self.code, self.message)


def player_limits(game: str, room_seats: int) -> tuple[int, int]:
    """(fewest, most) players of a room of `game`: the rules' bounds, at most ``room_seats``."""
    config = KontourConfig.load() if game == "kontour" else PictomaniaConfig.load()
    return config.min_players, min(config.max_players, room_seats)


class Rooms(StoredLobbies):
    """The lobbies of one app, and the codes of the rooms started (code -> game id): their requests."""

    def __init__(self, manager: RoomTables) -> None:
        """``manager``: the tables its games are opened among (`GameManager`, which builds its rooms)."""
        super().__init__(manager)
        self.opening: set[str] = set()  # the codes of the rooms whose next game is being created

    # -- the lobby's requests ----------------------------------------------------------------------
    def create(self, game: str, name: str, level: str, ai: int, client: str,
               code: str | None = None) -> tuple[Room, str]:
        """A new lobby hosted by `client` under `name`, with `ai` AI seats (its `code` reserved by
        `create_async` on a replica); returns it and the host's token. Raises `RateLimited` (the
        client's rooms), `RoomError` (bad request, full)."""
        manager, play = self.manager, self.manager.play
        if len(self.lobbies) + len(manager.games) >= manager.settings.play_limits.max_games:
            raise RoomError("too_many_games", "every game slot is taken; retry later")
        mine = sum(1 for room in self.lobbies.values() if room.client == client)
        if mine >= play.rooms_per_client:
            raise RateLimited(f"you already have {mine} rooms open (at most {play.rooms_per_client})",
                              code="too_many_rooms", retry_after=60)
        _check_name(name)
        fewest, most = player_limits(game, play.room_seats)
        if not 0 <= ai <= most - 1:
            raise RoomError("invalid_request", f"a {game} room takes 0-{most - 1} AI players, got {ai}")
        token = secrets.token_urlsafe(18)
        room = Room(code or self.new_code(), game, level, client,
                    [Seat(HUMAN, name, True, hash_token(token))], manager.clock(), host_away=manager.clock())
        for _ in range(ai):
            self._add_ai(room)
        self.lobbies[room.code] = room
        self.stored(room.code)
        log.info("room %s: %s, hosted (%d AI)", room.code, game, ai)
        return room, token

    async def create_async(self, game: str, name: str, level: str, ai: int, client: str) -> tuple[Room, str]:
        """`create`; on a replica, its code leased first (`StoredLobbies.reserve`: the database in a
        thread). Raises what `create` raises, and `StoreError`."""
        if self.ownership is None:
            return self.create(game, name, level, ai, client)
        code = await self.reserve()
        try:
            return self.create(game, name, level, ai, client, code)
        except BaseException:
            self.release(code)
            raise

    def join(self, room: Room, name: str) -> tuple[str, str]:
        """A person takes the next free seat under `name`: (seat, token)."""
        _check_name(name)
        if room.starting:
            raise RoomError("starting", "the game is starting")
        _, most = player_limits(room.game, self.manager.play.room_seats)
        if len(room.seats) >= most:
            raise RoomError("room_full", f"this room has all its {most} seats taken")
        if _folded(name) in {_folded(s.name) for s in room.seats}:
            raise RoomError("name_taken", "another seat of this room has that name")
        taken = {s.seat for s in room.seats}
        seat = next(f"ami{i}" for i in range(1, most + 1) if f"ami{i}" not in taken)
        token = secrets.token_urlsafe(18)
        room.seats.append(Seat(seat, name, True, hash_token(token)))
        self.touch(room)
        self.stored(room.code)
        return seat, token

    def _add_ai(self, room: Room) -> None:
        taken = {s.seat for s in room.seats}
        number = next(i for i in range(1, 99) if f"ia{i}" not in taken)
        names = self.manager.play.ai_names
        used = {_folded(s.name) for s in room.seats}
        name = next((n for n in names if _folded(n) not in used), f"IA {number}")
        room.seats.append(Seat(f"ia{number}", name, False, level=room.level))

    def request(self, room: Room, seat: str, frame: dict[str, Any]) -> GameSession | None:
        """One lobby frame of `seat`: the host's ``add_ai``, ``remove``, ``level``, ``start``,
        anybody's ``leave``. Returns the game when it starts. Raises `RoomError`."""
        kind = frame.get("type")
        host = seat == HUMAN
        if room.starting:
            raise RoomError("starting", "the game is starting")
        if kind == "leave":
            if host:
                self.close(room, "the host closed the room")
            else:
                _give_up(room, seat)
                self.stored(room.code)
            return None
        if kind not in ("add_ai", "remove", "level", "start"):
            raise RoomError("bad_frame", "unknown lobby frame (expected add_ai, remove, level, start, leave)")
        if not host:
            raise RoomError("not_host", "only the host may change the seats or start")
        _, most = player_limits(room.game, self.manager.play.room_seats)
        if kind == "add_ai":
            if len(room.seats) >= most:
                raise RoomError("room_full", f"this room has all its {most} seats taken")
            self._add_ai(room)
        elif kind == "remove":
            target = frame.get("seat")
            if target == HUMAN or not any(s.seat == target for s in room.seats):
                raise RoomError("bad_seat", "no such seat to remove (the host's cannot be)")
            _give_up(room, target, error_frame("removed", "the host removed your seat"))
        elif kind == "level":
            self._set_level(room, frame)
        else:
            return self.start(room)
        self.stored(room.code)
        return None

    @staticmethod
    def _set_level(room: Room, frame: dict[str, Any]) -> None:
        """``{"type": "level", "level", "seat"}``: that AI seat's level; without a seat, every AI's
        (and that of the AI players added next)."""
        level, target = frame.get("level"), frame.get("seat")
        if level not in level_names():
            raise RoomError("bad_level", f"the AI levels are {', '.join(level_names())}")
        if target is None:
            room.level = str(level)
            for seat in room.seats:
                if not seat.person:
                    seat.level = room.level
            return
        ai = next((s for s in room.seats if s.seat == target and not s.person), None)
        if ai is None:
            raise RoomError("bad_seat", "no such AI seat to set the level of")
        ai.level = str(level)

    def _game(self, room: Room) -> dict[str, Any]:
        """The room's game as `GameManager.open` takes it (the seats as they are); `RoomError` when
        the seats do not make a game the rules allow."""
        fewest, most = player_limits(room.game, self.manager.play.room_seats)
        if not fewest <= len(room.seats) <= most:
            raise RoomError("bad_seats", f"{room.game} is played by {fewest} to {most} players, "
                            f"this room has {len(room.seats)}")
        return dict(game=room.game, names={s.seat: s.name for s in room.seats}, level=room.level, seed=None,
                    client=room.client, learn=False, host_hash=room.seats[0].token_hash,
                    friends={s.seat: s.token_hash for s in room.seats if s.person and s.seat != HUMAN},
                    room=room.code,
                    levels={s.seat: s.level or room.level for s in room.seats if not s.person})

    def start(self, room: Room) -> GameSession:
        """Start the room's game, stored on the caller's thread (the lobby socket: `start_async`).
        Raises `RoomError` (the seats), and what `GameManager.open` raises."""
        return self._started(room, self.manager.open(**self._game(room)))

    async def start_async(self, room: Room) -> GameSession:
        """`start`, the game stored in a thread (`GameManager.open_async`); the lobby refuses every
        request meanwhile (``starting``)."""
        if room.starting:
            raise RoomError("starting", "the game is starting")
        game = self._game(room)
        room.starting = True
        try:
            session = await self.manager.open_async(**game)
        finally:
            room.starting = False
        return self._started(room, session)

    def _started(self, room: Room, session: GameSession) -> GameSession:
        """The lobby becomes its game: its sockets are sent on to it, its stored row deleted."""
        room.game_id = session.id
        self.lobbies.pop(room.code, None)
        self.remember(room.code, session.id)
        self.stored(room.code)
        log.info("room %s: game %s started (%d people, %d AI)", room.code, session.id,
                 len(session.people), len(room.seats) - len(session.people))
        started = {"type": "started", "code": room.code, "game_id": session.id, "game": room.game}
        for queue in list(room.listeners):
            offer(queue, started)
        return session

    def again(self, session: GameSession, seat: str) -> dict[str, Any] | None:
        """« Rejouer »: the host (`seat` `HUMAN`; while the host is away, the first person here:
        `restarter`) of a room's game that has ended starts a new one with the same seats, names,
        people (their tokens open their seats again, the host's too) and AI levels, a new deal,
        stored in a thread (`_next_game`). Every socket of the ended game is then sent
        ``{"type": "next_game", "game_id"}`` (and any socket that joins it later), and the room's code
        leads to the new game. Returns an error frame for `seat` when refused, else None."""
        code = session.room_code
        if code is None:
            return error_frame("not_a_room", "only a room's game is played again from its table")
        if seat != restarter(session):
            return error_frame("not_host", "only the host (while away: the first person here) may start "
                               "the next game")
        if session.state.phase != "game_over":
            return error_frame("not_over", "the game is still being played")
        if session.next_game is not None and session.next_game in self.manager.games:
            session.send(session.next_frame())
        elif code not in self.opening:  # asked twice meanwhile: the one game under way
            self.opening.add(code)
            self._keep(asyncio.get_running_loop().create_task(self._next_game(session, code, seat)))
        return None

    async def _next_game(self, session: GameSession, code: str, seat: str = HUMAN) -> None:
        neutral = getattr(session.rules.config, "neutral_drawer", None)
        names = {p: name for p, name in session.names.items() if p != neutral}
        friends = {p: session.hashes[p] for p in session.people if p != HUMAN}
        levels = {p: session.levels.get(p, session.level).name for p in names if p not in session.hashes}
        client = self.manager.owners.get(session.id, f"room:{code}")  # a resumed game has no owner
        try:
            new = await self.manager.open_async(session.kind, names, session.level.name, None, client, False,
                                                host_hash=session.hashes[HUMAN], friends=friends, room=code,
                                                levels=levels)
        except Exception as error:  # TooManyGames, RateLimited, Unavailable, a refused store...
            log.info("room %s: next game refused: %s", code, error)
            refused = error_frame("cannot_start", "the server cannot start the next game now; retry later")
            for queue, held in list(session.listeners.items()):
                if held == seat:
                    offer(queue, refused)
            return
        finally:
            self.opening.discard(code)
        self.remember(code, new.id)
        log.info("room %s: game %s follows game %s", code, new.id, session.id)
        session.followed_by(new.id)

    def close(self, room: Room, why: str) -> None:
        """Close a lobby: its sockets are told and let go."""
        self.lobbies.pop(room.code, None)
        self.forget(room.code)
        self.stored(room.code)
        for queue in list(room.listeners):
            offer(queue, error_frame("room_closed", why))
            offer(queue, None)

    def touch(self, room: Room) -> None:
        room.last_activity = self.manager.clock()

    # -- the host's seat ---------------------------------------------------------------------------
    def seen(self, room: Room) -> None:
        """A lobby socket came or went: note since when the host's seat has none, and hand the room
        over once the host has been away ``room_grace_s`` (`check_host`)."""
        if HUMAN in room.here():
            room.host_away = None
        elif room.host_away is None:
            room.host_away = self.manager.clock()
        grace = self.manager.play.room_grace_s
        with contextlib.suppress(RuntimeError):  # no event loop (a test's own thread): the sweep checks
            loop = asyncio.get_running_loop()
            loop.call_later(grace + 0.05, self.check_host, room)
        self.check_host(room)

    def check_host(self, room: Room) -> bool:
        """The host of a lobby away (no socket) for ``room_grace_s`` while another person is here:
        that person (the first in seat order) becomes the host, seat ``joueur``, and the host who
        left takes their seat (their token opens it when they come back). Every socket is told
        (``{"type": "host_changed", "was", "host", "you"}``: whether it is them) and gets its new
        lobby frame."""
        if (room.code not in self.lobbies or room.starting or room.host_away is None
                or self.manager.clock() - room.host_away < self.manager.play.room_grace_s - 1e-6):
            return False
        here = room.here()
        heir = next((s for s in room.seats[1:] if s.person and s.seat in here), None)
        if heir is None:
            return False
        old = room.seats[0]
        index = room.seats.index(heir)
        room.seats[index] = Seat(heir.seat, old.name, True, old.token_hash)
        room.seats[0] = Seat(HUMAN, heir.name, True, heir.token_hash)
        for queue, seat in list(room.listeners.items()):
            if seat == heir.seat:
                room.listeners[queue] = HUMAN
        room.host_away = None
        self.touch(room)
        self.stored(room.code)
        log.info("room %s: the host is away, %s hosts it now", room.code, heir.seat)
        told = {"type": "host_changed", "was": old.name, "host": heir.name}
        for queue, seat in list(room.listeners.items()):
            offer(queue, {**told, "you": seat == HUMAN})
        self.broadcast(room)
        return True

    def sweep(self) -> list[str]:
        """Close the lobbies nobody touched for ``lobby_expiry_s``; forget the codes of games gone; on a
        replica, now and then, delete the expired lobbies a dead replica left (`prune`)."""
        limit = self.manager.clock() - self.manager.play.lobby_expiry_s
        old = [code for code, room in self.lobbies.items() if room.last_activity < limit]
        for code in old:
            self.close(self.lobbies[code], "this room expired")
        for room in list(self.lobbies.values()):
            self.check_host(room)
        for code, game_id in list(self.started.items()):
            if game_id not in self.manager.games:
                del self.started[code]
                self.forget(code)
        self.prune()
        return old

    # -- frames ------------------------------------------------------------------------------------
    def lobby_frame(self, room: Room, seat: str) -> dict[str, Any]:
        """What a lobby socket of `seat` shows: the seats (each AI's level), who is here, the limits."""
        here = room.here()
        fewest, most = player_limits(room.game, self.manager.play.room_seats)
        return {
            "type": "lobby", "code": room.code, "game": room.game, "level": room.level, "you": seat,
            "host": HUMAN, "min": fewest, "max": most, "levels": list(level_names()),
            "seats": [{"seat": s.seat, "name": s.name, "person": s.person, "here": s.seat in here,
                       **({} if s.person else {"level": s.level or room.level})} for s in room.seats],
        }

    def preview(self, room: Room) -> dict[str, Any]:
        """What a newcomer (no seat yet) is shown before they give a name: the game, the host, the
        names taken, whether a seat is left (``full``)."""
        _, most = player_limits(room.game, self.manager.play.room_seats)
        return {"type": "room", "code": room.code, "game": room.game, "host": room.seats[0].name,
                "names": [s.name for s in room.seats], "max": most, "full": len(room.seats) >= most}

    def broadcast(self, room: Room) -> None:
        for queue, seat in list(room.listeners.items()):
            offer(queue, self.lobby_frame(room, seat))


def restarter(session: GameSession) -> str | None:
    """Who may start a room's next game (« Rejouer »): its host while here, else the first person
    here in seat order (None: nobody). The page shows the button by the same rule (app.js)."""
    presence = session.presence()
    if presence.get(HUMAN) == "here":
        return HUMAN
    return next((seat for seat in session.people if presence.get(seat) == "here"), None)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not NAME.match(name.strip() or "<"):
        raise RoomError("bad_name", "a name holds 1 to 24 characters, none of < > & \"")


def _folded(name: str) -> str:
    """A name as two people would say it: « Camille » and « camille  » are one name."""
    return " ".join(name.casefold().split())


# ------------------------------------------------------------------------------------------------
# The lobby socket


def read_lobby_frame(text: str) -> dict[str, Any]:
    """One lobby frame (a JSON object with a ``type``); raises `RoomError`."""
    try:
        data = load_json(text, reject_constants=True)
    except FrameError as error:
        raise RoomError("bad_frame", error.message) from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise RoomError("bad_frame", "a lobby frame must be a JSON object with a 'type'")
    return data


async def serve_lobby(websocket: WebSocket, rooms: Rooms, code: str, token: str) -> None:
    """Run one accepted lobby socket: a person without a token first takes a seat
    (``{"type": "join", "name"}``, answered ``{"type": "joined", "seat", "token"}``); then the
    lobby frames until the game starts (``{"type": "started", "game_id"}``) or the room closes."""
    code = code.upper()
    if code not in rooms.lobbies and rooms.started.get(code) not in rooms.manager.games and CODE.match(code):
        await rooms.recall(code)  # a room whose game ended before a restart
    game_id = rooms.started.get(code)
    if game_id is not None and game_id in rooms.manager.games:
        await _send_started(websocket, rooms.manager.games[game_id], code, token)
        return
    room = rooms.lobbies.get(code)
    if room is None:
        if code in rooms.gone or code in rooms.started:
            over = "is over (closed, expired or its game ended)"
            frame = error_frame("room_gone", f"the room '{code[:8]}' {over}")
        else:
            frame = error_frame("unknown_room", f"no room has the code '{code[:8]}'")
        await websocket.send_json(frame)
        await websocket.close(CLOSE_ROOM_GONE, "unknown room")
        return
    settings = rooms.manager.settings
    limit = RateLimit(settings.max_message_rate, settings.max_message_burst)  # as on a game's socket
    seat = room.seat_of(token) if token else None
    if seat is None:
        await websocket.send_json(rooms.preview(room))
        seat = await _join(websocket, rooms, room, limit)
        if seat is None:
            return
    queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(LOBBY_QUEUE)
    room.listeners[queue] = seat
    rooms.seen(room)
    rooms.broadcast(room)
    sender = asyncio.create_task(_send_lobby(websocket, queue))
    try:
        while not sender.done():
            message = await asyncio.wait_for(websocket.receive(),
                                             rooms.manager.settings.play_limits.idle_timeout_s)
            if message["type"] == "websocket.disconnect":
                break
            if not _within(limit, queue):
                continue
            seat = room.listeners.get(queue, seat)  # the host's seat when the room was handed over
            try:
                rooms.touch(room)
                frame = read_lobby_frame(message.get("text") or "")
                if frame["type"] == "start" and seat == HUMAN:
                    await rooms.start_async(room)  # the game stored off the event loop
                else:
                    rooms.request(room, seat, frame)
            except RoomError as error:
                offer(queue, error.to_frame())
            except StoreError as error:  # the details (a file path, a host) go to the server log only
                log.warning("room %s: the game could not be stored: %s", room.code, error)
                offer(queue, error_frame("cannot_start", STORE_DOWN))
            except Exception as error:  # TooManyGames, RateLimited, Unavailable: readable messages
                log.info("room %s: start refused: %s", room.code, error)
                offer(queue, error_frame("cannot_start", str(error)))
            if room.code in rooms.lobbies:
                rooms.broadcast(room)
    except (WebSocketDisconnect, RuntimeError, TimeoutError):
        pass
    finally:
        room.listeners.pop(queue, None)
        if room.code in rooms.lobbies:
            rooms.seen(room)
            rooms.broadcast(room)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
            await asyncio.wait_for(sender, 1.0)
        sender.cancel()


def _within(limit: RateLimit, queue: asyncio.Queue[dict[str, Any] | None]) -> bool:
    """Whether a frame is within the socket's rate; past it, one error per flood, frames dropped."""
    if limit.allow():
        limit.warned = False
        return True
    if not limit.warned:
        limit.warned = True
        offer(queue, error_frame("rate_limited", "too many lobby frames: slow down"))
    return False


async def _join(websocket: WebSocket, rooms: Rooms, room: Room, limit: RateLimit) -> str | None:
    """Wait for the newcomer's ``join`` frame; their seat, or None when the socket is let go."""
    while True:
        try:
            message = await asyncio.wait_for(websocket.receive(), JOIN_WAIT_S)
        except TimeoutError:
            await websocket.close(1000, "nobody joined")
            return None
        if message["type"] == "websocket.disconnect":
            return None
        if not limit.allow():
            continue  # a flood of joins: dropped
        try:
            frame = read_lobby_frame(message.get("text") or "")
            if frame["type"] != "join":
                raise RoomError("not_joined", "take a seat first: {'type': 'join', 'name': ...}")
            seat, token = rooms.join(room, str(frame.get("name", "")).strip())
        except RoomError as error:
            await websocket.send_json(error.to_frame())
            continue
        await websocket.send_json({"type": "joined", "code": room.code, "seat": seat, "token": token})
        return seat


def _give_up(room: Room, seat: str, why: dict[str, Any] | None = None) -> None:
    """Take `seat` out of the lobby and let its sockets go (told `why` first): a socket of a seat
    given up cannot act for the seat's next holder."""
    room.seats = [s for s in room.seats if s.seat != seat]
    for queue, held in list(room.listeners.items()):
        if held == seat:
            room.listeners.pop(queue, None)
            if why is not None:
                offer(queue, why)
            offer(queue, None)


async def _send_lobby(websocket: WebSocket, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
    while True:
        frame = await queue.get()
        if frame is None:
            await websocket.close(CLOSE_ROOM_GONE, "room closed")
            return
        if frame is MOVED:
            await websocket.close(CLOSE_MOVED, "the room moved to another server; reconnect")
            return
        await websocket.send_json(frame)
        if frame["type"] == "started":
            await websocket.close(1000, "game started")
            return


async def _send_started(websocket: WebSocket, session: GameSession, code: str, token: str) -> None:
    if session.seat_of(token) is None:
        await websocket.send_json(error_frame("room_started", "this room's game has started without you"))
        await websocket.close(CLOSE_ROOM_GONE, "room started")
        return
    await websocket.send_json({"type": "started", "code": code, "game_id": session.id, "game": session.kind})
    await websocket.close(1000, "game started")
