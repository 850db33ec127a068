"""What is kept of the rooms with friends: their lobbies and the games their codes lead to, in the
database, and on replicas the lease that says which replica holds each lobby.

A lobby is stored (the ``rooms`` table: its seats with their token hashes, its levels) each time it
changes, off the event loop and in order (`StoredLobbies.stored`); once it starts, its row is deleted
and its code leads to the game (``room_games``: the first game, then each « Rejouer »). A restart
brings the stored lobbies back (`StoredLobbies.load`, from `GameManager.resume`), and the codes of
the rooms started (those whose game is over are « gone »).

On replicas (``service.replicas``), a lobby is leased (``room:<code>``) by the replica that created
it, and its row is fenced like a game's moves. A lobby socket reaching another replica is relayed
to the holder (`StoredLobbies.locate`); once the holder's lease ran out (it died), the replica the
socket reached takes the lobby over from its row; a started room's socket is relayed to (or taken
over with) its game.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from service.play.room_tables import RoomTables
from service.play.table import HUMAN, GameSession
from store import StoreError, token_matches
from store.leases import Lease, is_lease_lost

if TYPE_CHECKING:
    from service.replicas import Ownership

log = logging.getLogger("griffon.play")
CODE_LETTERS = "ABCDEFGHJKMNPQRSTUVWXYZ"  # no I, L, O: a code read aloud or copied by hand
CODE_LENGTH = 4
GONE_KEPT = 10_000  # codes of the rooms closed, expired or over remembered (« n'existe plus »)
MOVED: dict[str, Any] = {"type": "moved"}  # queued to a lobby socket: another replica holds the lobby now
RESERVE_TRIES = 20  # codes tried for a new lobby on a replica before giving up
PRUNE_EVERY_S = 60.0  # how often a replica looks for lobbies a dead replica left (`StoredLobbies.prune`)
PRUNE_BATCH = 100  # lobbies pruned at most at once


@dataclass
class Seat:
    """One seat of a lobby: a person (with their token's hash) or an AI player (with its level)."""

    seat: str
    name: str
    person: bool
    token_hash: str = ""
    level: str = ""


@dataclass
class Room:
    """A lobby: the game chosen, its seats in order (the host first), who is connected; `level`:
    the level of the AI players added next."""

    code: str
    game: str
    level: str
    client: str
    seats: list[Seat]
    last_activity: float
    game_id: str | None = None
    starting: bool = False  # its game is being created (`Rooms.start_async`)
    host_away: float | None = None  # clock() since when no socket holds the host's seat
    listeners: dict[asyncio.Queue[dict[str, Any] | None], str] = field(default_factory=dict)

    def lobby(self) -> dict[str, Any]:
        """What is stored of the lobby (`StoredLobbies.stored`): no token, only their hashes."""
        return {"game": self.game, "level": self.level, "client": self.client,
                "seats": [{"seat": s.seat, "name": s.name, "person": s.person, "token_hash": s.token_hash,
                           "level": s.level} for s in self.seats]}

    @classmethod
    def from_lobby(cls, code: str, lobby: dict[str, Any], last_activity: float) -> Room:
        """The room of a stored lobby; raises `KeyError`, `TypeError`, `ValueError` when malformed."""
        seats = [Seat(str(s["seat"]), str(s["name"]), bool(s["person"]), str(s["token_hash"]),
                      str(s["level"])) for s in lobby["seats"]]
        if lobby["game"] not in ("kontour", "pictomania") or not seats or seats[0].seat != HUMAN:
            raise ValueError("a lobby of an unknown game, or without its host first")
        return cls(code, lobby["game"], str(lobby["level"]), str(lobby["client"]), seats, last_activity)

    def here(self) -> set[str]:
        """The seats that a lobby socket holds now."""
        return set(self.listeners.values())

    def seat_of(self, token: str) -> str | None:
        """The person seat whose token is `token`."""
        found = None
        for seat in self.seats:
            if seat.person and token_matches(token, seat.token_hash):
                found = seat.seat
        return found


def offer(queue: asyncio.Queue[dict[str, Any] | None], item: dict[str, Any] | None) -> None:
    """Queue a frame to a lobby socket (None: close it); a full queue drops it."""
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(item)


class StoredLobbies:
    """The lobbies of one app and the codes of the rooms started (code -> game id), as kept in the
    database and, on replicas, leased (`service.play.rooms.Rooms` adds the lobby's requests)."""

    def __init__(self, manager: RoomTables) -> None:
        """``manager``: the tables its games are opened among (`GameManager`, which builds its rooms)."""
        self.manager = manager
        self.lobbies: dict[str, Room] = {}
        self.started: dict[str, str] = {}
        self.gone: OrderedDict[str, None] = OrderedDict()  # codes that were rooms (closed, over): bounded
        self.tasks: set[asyncio.Task[None]] = set()  # lobby writes and next games under way
        self.writing = asyncio.Lock()  # the lobby writes: one at a time, in order
        self.pruned = -PRUNE_EVERY_S  # time.monotonic() of the last `prune`

    @property
    def ownership(self) -> Ownership | None:
        """A replica's leases (None: one server alone)."""
        return self.manager.ownership  # type: ignore[return-value]

    def forget(self, code: str) -> None:
        """Remember that `code` was a room (closed, expired, its game over): a socket asking for it
        is told it is gone (``room_gone``), not that it never was (``unknown_room``)."""
        self.gone[code] = None
        self.gone.move_to_end(code)
        while len(self.gone) > GONE_KEPT:
            self.gone.popitem(last=False)

    def new_code(self) -> str:
        """A fresh room code that this worker holds (``service.workers``)."""
        workers = self.manager.workers
        while True:
            code = "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))
            taken = code in self.lobbies or code in self.started or code in self.gone
            if not taken and (workers is None or workers.owns(code)):
                return code

    # -- writes ------------------------------------------------------------------------------------
    def stored(self, code: str) -> None:
        """Store the lobby `code` as it is (delete it when it is gone: started, closed, expired), in a
        thread, after the writes asked before; without an event loop, on the caller's thread. A failing
        database is logged, never raised: the lobby goes on in memory."""
        self._in_turn(code, lambda: functools.partial(self._write, code, self._lobby_of(code)))

    def remember(self, code: str, game_id: str) -> None:
        """Store that room `code` leads to game `game_id` now (it started, or « Rejouer »)."""
        self.started[code] = game_id
        self.gone.pop(code, None)
        self._in_turn(code, lambda: functools.partial(self._write_game, code, game_id))

    def _in_turn(self, code: str, prepare: Callable[[], Callable[[], bool]]) -> None:
        """Run the write ``prepare()`` gives (read on the event loop when its turn comes) in a
        thread, after the writes asked before."""
        if self.manager.store is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            prepare()()
            return
        self._keep(loop.create_task(self._write_in_turn(code, prepare)))

    def _keep(self, task: asyncio.Task[None]) -> None:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _lobby_of(self, code: str) -> dict[str, Any] | None:
        room = self.lobbies.get(code)
        return None if room is None else room.lobby()

    async def _write_in_turn(self, code: str, prepare: Callable[[], Callable[[], bool]]) -> None:
        async with self.writing:  # the lobby as it is when its turn comes: the last write is the latest
            lost = await asyncio.to_thread(prepare())
        ownership = self.ownership
        if lost:
            self.stand_down(code)
        elif ownership is not None and code not in self.lobbies:  # started or closed: its row is gone
            ownership.lobby_over(code)

    def _write(self, code: str, lobby: dict[str, Any] | None) -> bool:
        """Write (or delete) one lobby; True when the database refused it for good: another replica
        holds the lobby now."""
        store = self.manager.store
        assert store is not None
        try:
            if lobby is None:
                store.delete_room(code)
            else:
                store.save_room(code, lobby)
        except Exception as error:  # StoreError, a driver's own: a lobby is not a game's move
            done = "deleted" if lobby is None else "stored"
            log.warning("room %s: the lobby could not be %s: %s", code, done, error)
            return is_lease_lost(error)
        return False

    def _write_game(self, code: str, game_id: str) -> bool:
        store = self.manager.store
        assert store is not None
        try:
            store.save_room_game(code, game_id)
        except Exception as error:
            log.warning("room %s: its game %s could not be stored: %s", code, game_id, error)
        return False

    async def flush(self) -> None:
        """Wait for the lobby writes and next games under way (at shutdown, in tests)."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    # -- a restart -----------------------------------------------------------------------------------
    def load(self) -> int:
        """Bring back the stored lobbies this worker holds (at start, after the games: a room started
        is not a lobby); those idle past ``lobby_expiry_s`` or unreadable are deleted. The codes of
        the rooms started lead to their game again; those whose game is over are « gone ». Returns
        how many lobbies came back."""
        store, workers = self.manager.store, self.manager.workers
        if store is None:
            return 0
        try:
            found, games = store.load_rooms(), store.room_games(GONE_KEPT)
        except StoreError as error:
            log.warning("the stored lobbies could not be read (none brought back): %s", error)
            return 0
        for code, game_id in games:
            if workers is not None and not workers.owns(code):
                continue
            if game_id in self.manager.games:
                self.started[code] = game_id
            elif self.started.get(code) not in self.manager.games:  # over: not a later game resumed
                self.started.pop(code, None)
                self.forget(code)
        now = time.time()
        for code, lobby, updated in found:
            if workers is not None and not workers.owns(code):
                continue
            room = self._readable(code, lobby, now - updated) if code not in self.started else None
            if room is None:
                self._write(code, None)
            elif code not in self.lobbies:
                self.lobbies[code] = room
        if self.lobbies:
            log.info("lobbies brought back from the database: %d", len(self.lobbies))
        return len(self.lobbies)

    async def recall(self, code: str) -> GameSession | None:
        """The ended game room `code` leads to, brought back from the database (after a restart:
        a game over is not resumed) when it ended within ``play_limits.idle_expiry_s``: its end screen and
        « Rejouer » are there again. None when there is none (then a code that was a room is
        « gone »). One server alone: a replica's rooms are found by `locate`."""
        manager, store = self.manager, self.manager.store
        full = len(manager.games) >= manager.settings.play_limits.max_games
        if store is None or self.ownership is not None or full:
            return None
        try:
            game_id = await asyncio.to_thread(store.room_game, code)
            stored = None if game_id is None else await asyncio.to_thread(store.load_game, game_id)
        except StoreError as error:
            log.warning("room %s: its game could not be read: %s", code, error)
            return None
        if game_id is not None and game_id in manager.games:  # brought back meanwhile
            return manager.games[game_id]
        if stored is None:
            return None
        recent = time.time() - stored.updated_at < manager.settings.play_limits.idle_expiry_s
        session = manager.adopt(stored) if stored.status == "finished" and recent else None
        if not isinstance(session, GameSession):
            self.forget(code)
            return None
        if session.journal is not None:
            session.journal.ended = True  # its end is stored: closing it again must not rewrite it
        self.started[code] = session.id
        self.gone.pop(code, None)
        log.info("room %s: its ended game %s brought back from the database", code, session.id)
        return session

    def _readable(self, code: str, lobby: dict[str, Any], age: float) -> Room | None:
        """The room of a stored lobby `age` seconds old; None when it expired or cannot be read."""
        age = max(0.0, age)
        if age >= self.manager.play.lobby_expiry_s:
            return None
        try:
            return Room.from_lobby(code, lobby, self.manager.clock() - age)
        except (KeyError, TypeError, ValueError) as error:
            log.warning("room %s: the stored lobby cannot be read (deleted): %s", code, error)
            return None

    # -- replicas ------------------------------------------------------------------------------------
    async def reserve(self) -> str:
        """A new lobby's code on a replica: leased here, no other replica's lobby nor started room.
        Raises `StoreError`."""
        for _ in range(RESERVE_TRIES):
            code = self.new_code()
            if await asyncio.to_thread(self._reserve, code):
                return code
        raise StoreError("no free room code found")

    def _reserve(self, code: str) -> bool:
        ownership, store = self.ownership, self.manager.store
        assert ownership is not None and store is not None
        if store.load_room(code) is not None or store.room_game(code) is not None:
            return False
        lease = ownership.claim_lobby(code)
        if lease is None or lease.holder != ownership.replica.holder:
            return False
        if store.load_room(code) is not None:  # a dead replica's lobby, stored meanwhile: not ours
            ownership.lobby_over(code)
            return False
        return True

    def release(self, code: str) -> None:
        """A code reserved for a lobby that was not made: its lease goes."""
        if self.ownership is not None:
            self.ownership.lobby_over(code)

    async def locate(self, code: str) -> Lease | None:
        """Where a socket of room `code` goes on a replica: the live lease of the replica that
        holds its lobby or its game (relay it there), or None: serve it here (its lobby or game is
        here, taken over just now when its holder's lease ran out, or there is no such room).
        Raises `StoreError`."""
        ownership = self.ownership
        assert ownership is not None
        game_id = self.started.get(code)
        if code in self.lobbies or (game_id is not None and game_id in self.manager.games):
            return None
        lease = await asyncio.to_thread(ownership.lobby_holder, code)
        if lease is not None:
            return lease
        taken = await asyncio.to_thread(self._take, code)
        if isinstance(taken, Lease):
            return taken
        if taken is not None:
            if code not in self.lobbies:
                self.lobbies[code] = taken
                log.info("lobby %s: taken over from the database (%d seats)", code, len(taken.seats))
            return None
        store = self.manager.store
        assert store is not None
        game_id = await asyncio.to_thread(store.room_game, code)
        if game_id is None:
            return None
        held = await ownership.locate(game_id)
        if isinstance(held, Lease):
            return held
        if held is None:
            self.started.pop(code, None)
            self.forget(code)
        else:
            self.started[code] = game_id
        return None

    def _take(self, code: str) -> Room | Lease | None:
        """Take over the stored lobby `code` (on the caller's thread): the room; another replica's
        live lease when it was quicker; None when no lobby is stored under that code."""
        ownership, store = self.ownership, self.manager.store
        assert ownership is not None and store is not None
        if store.load_room(code) is None:
            return None
        lease = ownership.claim_lobby(code)
        if lease is None or lease.holder != ownership.replica.holder:
            return lease
        found = store.load_room(code)  # as the last holder left it, now that it cannot write
        room = None if found is None else self._readable(code, found[0], time.time() - found[1])
        if room is None:
            if found is not None:
                self._write(code, None)  # expired or unreadable
            ownership.lobby_over(code)
            return None
        room.host_away = self.manager.clock()
        return room

    async def outlast(self, code: str, lease: Lease) -> Lease | None:
        """The holder of ``lease`` (a lobby's or its game's) cannot be reached (it died): wait for
        its lease to run out (at most ``lease_s``), then `locate` the room again."""
        ownership = self.ownership
        assert ownership is not None
        left = lease.expires_at - await asyncio.to_thread(ownership.leases.now)
        await asyncio.sleep(min(max(0.0, left) + 0.05, ownership.settings.lease_s + 0.5))
        return await self.locate(code)

    def prune(self) -> None:
        """On a replica, at most every `PRUNE_EVERY_S` (from the sweep): delete, in a thread, the
        lobbies stored past ``lobby_expiry_s`` that no live replica holds (a dead replica's, that
        nobody came back to), after leasing each (the fence)."""
        if self.ownership is None or self.manager.store is None:
            return
        now = time.monotonic()
        if now - self.pruned < PRUNE_EVERY_S:
            return
        self.pruned = now
        with contextlib.suppress(RuntimeError):  # no event loop: nothing pruned
            self._keep(asyncio.get_running_loop().create_task(self._prune_in_thread()))

    async def _prune_in_thread(self) -> None:
        try:
            pruned = await asyncio.to_thread(self.prune_now)
        except StoreError as error:
            log.warning("lobbies left by a dead replica not pruned: %s", error)
            return
        if pruned:
            log.info("lobbies left by a dead replica, expired, deleted: %d", pruned)

    def prune_now(self) -> int:
        """`prune`'s work, on the caller's thread: how many lobbies were deleted. Raises `StoreError`."""
        ownership, store = self.ownership, self.manager.store
        assert ownership is not None and store is not None
        before = time.time() - self.manager.play.lobby_expiry_s
        pruned = 0
        for code in store.stale_rooms(before, PRUNE_BATCH):
            if code in self.lobbies or ownership.lobby_holder(code) is not None:
                continue  # held here or by a live replica: its holder expires it
            lease = ownership.claim_lobby(code)
            if lease is None or lease.holder != ownership.replica.holder:
                continue
            found = store.load_room(code)
            if found is not None and found[1] < before and code not in self.lobbies:
                store.delete_room(code)
                pruned += 1
            if code not in self.lobbies:
                ownership.lobby_over(code)
        return pruned

    def stand_down(self, code: str) -> None:
        """Let go of a lobby another replica took, without writing: its sockets close with 1012
        and the pages reconnect, to the new holder."""
        room = self.lobbies.pop(code, None)
        if room is None:
            return
        log.warning("lobby %s: held by another replica now; standing down", code)
        for queue in list(room.listeners):
            offer(queue, MOVED)
