"""Several replicas on one PostgreSQL database behind a load balancer: which one drives each game.

An operator runs N ``griffon serve`` replicas (one process each, on one host or several) on one
PostgreSQL database, behind HAProxy (deploy/, docs/DEPLOY.md). Each replica is named
(``GRIFFON_REPLICA_NAME``), says where the others reach it (``GRIFFON_REPLICA_ADDRESS``) and shares
a secret with them (``GRIFFON_REPLICA_SECRET``).

- **Ownership.** A game is driven by the replica holding its lease (`store.leases`): the one that
  created it, until it dies or stops. `Ownership.run` renews this replica's leases every
  ``renew_s`` (with each game's clock) and takes over the games whose lease expired (a replica that
  died: ``lease_s`` later, about 3 s) or was given up (a replica stopped cleanly: at once): each is
  loaded from its stored log (`GameManager.adopt`), its AI players resume, and its clock goes on
  from the game clock of the last renewal, so the round's timers are not restarted.
- **Fence.** A replica that was paused past its lease (SIGSTOP, a long GC, a frozen VM) and then
  resumed cannot write one move of a game another replica took: the database refuses it
  (`store.leases`), the move is neither stored nor shown, and the replica stands down at once (its
  sockets close with 1012 and reconnect to the new holder); its next renewal says the same.
- **Frozen.** A replica whose event loop stood still longer than ``lease_s`` (SIGSTOP, a stalled VM)
  stands down every game and bot room it held as soon as it wakes (`Ownership.watch`), before its
  next renewal says which ones it lost: its sockets close with 1012 and reconnect to the holders.
  The sockets other replicas relay to it ping it and close within 3 s of its freeze
  (`service.workers.relay_to`).
- **Routing.** HAProxy sends a game's socket to the replica that created it (a stick table filled
  from the ``X-Griffon-Game`` header of ``POST /v1/play``'s answer). A socket that lands elsewhere
  (after a fail-over, or with several balancers) is relayed to the lease's holder
  (`service.workers.relay_to`, the replicas' secret in its handshake); when the holder cannot be
  reached (it died), the socket waits for its lease to run out and the replica it reached takes the
  game over. A relayed socket is never relayed again: a replica it reaches by mistake closes it
  with 1013 and the page reconnects.
- **One secret.** A replica starting with a ``GRIFFON_REPLICA_SECRET`` other than the live
  replicas' refuses to start, with one line naming them (`join`: the database keeps a check of
  each live replica's secret, never the secret); a relayed handshake whose secret is not this
  replica's is served as an ordinary client's, and said once a minute in the log
  (`service.workers.RelayedClient`).
- **Bot rooms** (protocol version 2) are leased too, under the id ``bot:<session>``
  (:data:`ROOM_LEASE`), by the replica that drives them: the one their socket reached at ``hello``,
  or the one that took them over. Their resumable memory is in the database (``bot_rooms``,
  `service.bot.memory`), fenced like a game's moves. A room whose socket was lost says ``hello``
  with ``resume`` to whichever replica the balancer picks: that replica relays it to the holder
  while the holder lives, and takes the room over from its stored memory once the holder's lease
  ran out (its round, its strokes and the words already said go on). Rooms are not looked for at
  renewals: a room is taken over only when it comes back.
- **Lobbies** of rooms with friends are leased too, under ``room:<code>`` (:data:`LOBBY_LEASE`), by
  the replica that created them (HAProxy sends their sockets there: the ``X-Griffon-Room`` header
  of ``POST /v1/rooms``'s answer) and stored at each change (``rooms``, fenced). A lobby socket
  that lands elsewhere is relayed to the holder; once the holder's lease ran out (it died), the
  replica the socket reached takes the lobby over from the database (`service.play.stored_lobbies`): its
  seats, names, tokens and levels go on, and the host starts the game there. A started room's code
  leads to its game on any replica (``room_games``): the socket is relayed to the game's holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time
from collections.abc import Callable, Mapping
from typing import ClassVar, Self

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from service.settings import SettingsError
from service.tables import Table, Tables
from store import Store, StoreError, StoreSettings
from store.leases import Lease, Leases, holder_url, new_holder
from store.settings import EnvSettings, tuning

OPENING_S = 30.0  # a new game still not open after this long was never created: its lease goes
ROOM_LEASE = "bot:"  # the lease id of a bot room: this, then its session id
LOBBY_LEASE = "room:"  # the lease id of a lobby (a room with friends not started): this, then its code
WATCH_S = 0.1  # how often a replica looks whether it was frozen
log = logging.getLogger("griffon.replicas")


class ReplicaSettingsError(SettingsError):
    """A ``GRIFFON_REPLICA_*`` variable that does not hold a valid value."""


class ReplicaSettings(EnvSettings):
    """This process as one replica of several (all unset: a server alone)."""

    model_config = SettingsConfigDict(env_prefix="GRIFFON_REPLICA_")
    env_error: ClassVar[type[Exception]] = ReplicaSettingsError
    env_what: ClassVar[str] = "replica settings"

    name: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_-]{1,32}$",
        description="this replica's name, unique among the replicas (unset: one server alone, no leases)",
    )
    address: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$",
        description="host:port where the other replicas reach this one (the relay of a game's socket); "
        "`griffon serve` sets it to its --host:--port when unset and --host is one address",
    )
    secret: str | None = Field(
        default=None, min_length=16,
        description="secret shared by the replicas: a socket one relays to another carries it",
    )
    lease_s: float = Field(
        default=3.0, ge=0.5, le=60,
        description="seconds a game's lease lasts unrenewed: a dead replica's games are taken over after it",
    )
    renew_s: float = tuning(
        default=None, gt=0, le=30,
        description="seconds between two renewals of the leases (and looks for games to take over); "
        "unset: a third of the lease",
    )
    claim_batch: int = tuning(
        default=100, ge=1, le=10_000, description="games a replica takes over at most per renewal"
    )

    @model_validator(mode="before")
    @classmethod
    def _renewal(cls, data: object) -> object:
        """``renew_s`` unset: a third of ``lease_s`` (1 s for the default 3 s)."""
        if isinstance(data, dict) and data.get("renew_s") is None:
            try:
                data = {**data, "renew_s": float(data.get("lease_s", 3.0)) / 3}
            except (TypeError, ValueError):  # a bad lease_s: reported as itself
                data = {**data, "renew_s": 1.0}
        return data

    def check(self) -> Self:
        """Raise `ReplicaSettingsError` for settings that do not go together."""
        if self.name is not None and (self.address is None or self.secret is None):
            raise ReplicaSettingsError("a replica (GRIFFON_REPLICA_NAME) needs GRIFFON_REPLICA_ADDRESS (when "
                                       "it listens on every address) and GRIFFON_REPLICA_SECRET")
        if self.renew_s * 2 > self.lease_s:
            raise ReplicaSettingsError(f"the renewal ({self.renew_s:g} s) must be at most half of "
                                       f"GRIFFON_REPLICA_LEASE_S ({self.lease_s:g})")
        return self

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """Settings from ``GRIFFON_REPLICA_*`` variables (default: ``os.environ``), checked together."""
        return super().from_env(environ).check()


class Replica:
    """This process as a replica: its holder name (new at every start), address and secret."""

    def __init__(self, settings: ReplicaSettings) -> None:
        settings.check()
        assert settings.name is not None and settings.address is not None and settings.secret is not None
        self.settings, self.address, self.secret = settings, settings.address, settings.secret
        self.holder = new_holder(settings.name)

    @classmethod
    def current(cls, environ: Mapping[str, str] | None = None) -> Replica | None:
        """The replica ``GRIFFON_REPLICA_*`` describes (None: not a replica)."""
        settings = ReplicaSettings.from_env(environ)
        return cls(settings) if settings.name is not None else None

    def store_settings(self, settings: StoreSettings) -> StoreSettings:
        """The database settings whose connections name this replica (the fence: `store.leases`)."""
        url = settings.url
        if not url.startswith(("postgresql://", "postgres://")):
            raise StoreError("replicas share a PostgreSQL database: set GRIFFON_DB_URL=postgresql://...")
        return settings.model_copy(update={"database_url": holder_url(url, self.holder)})

    def is_sibling(self, token: str | None) -> bool:
        """Whether a handshake's relay header carries the replicas' secret."""
        return token is not None and hmac.compare_digest(token.encode(), self.secret.encode())


def secret_check(secret: str) -> str:
    """What the database keeps of the replicas' secret: an HMAC of a fixed text under it (equal
    for equal secrets; the secret cannot be read back from it)."""
    return hmac.new(secret.encode(), b"griffon replica secret check", hashlib.sha256).hexdigest()[:32]


def join(store: Store, replica: Replica) -> Leases:
    """Install the leases and register this replica as up; raise `ReplicaSettingsError` (one line)
    when live replicas run with another secret: they would serve this one's relays as ordinary
    clients'."""
    assert replica.settings.name is not None
    leases = Leases(store, replica.holder, replica.address, replica.settings.lease_s)
    leases.install()
    others = leases.join(replica.settings.name, secret_check(replica.secret))
    if others:
        names = ", ".join(f"{name} (seen {ago:.0f} s ago)" for name, ago in others)
        raise ReplicaSettingsError(f"GRIFFON_REPLICA_SECRET is not the one the live replicas {names} "
                                   "run with: every replica needs the same secret")
    return leases


class RoomLeases:
    """The bot rooms this replica drives, leased as ``bot:<session>`` (:data:`ROOM_LEASE`): built by
    the bot rooms' registry with its stand-down (`service.bot.registry.BotRegistry`), renewed with
    the games' leases by `Ownership`."""

    def __init__(self, replica: Replica, store: Store, room_lost: Callable[[str], None]) -> None:
        """``room_lost(session id)``: a bot room whose lease another replica took (stand it down)."""
        self.replica, self.room_lost = replica, room_lost
        self.leases = Leases(store, replica.holder, replica.address, replica.settings.lease_s)
        self.held: dict[str, int] = {}  # bot room session id -> the fence of our lease
        self.done: set[str] = set()  # rooms over: their leases are deleted at the next renewal

    async def claim_room(self, session_id: str) -> Lease | None:
        """Lease a bot room (a new one, or one whose holder's lease ran out); the lease of another
        live holder when it has one (None: the database could not say)."""
        try:
            lease = await asyncio.to_thread(self.leases.claim, ROOM_LEASE + session_id)
            if lease is None:
                return await asyncio.to_thread(self.leases.get, ROOM_LEASE + session_id)
        except StoreError as error:
            log.warning("bot room %s: not leased: %s", session_id, error)
            return None
        if lease.holder == self.replica.holder:
            self.held[session_id] = lease.fence
            self.done.discard(session_id)
        return lease

    async def room_holder(self, session_id: str) -> Lease | None:
        """The live lease of another replica on a bot room (None: nobody else drives it now)."""
        lease = await asyncio.to_thread(self.leases.get, ROOM_LEASE + session_id)
        if lease is None or lease.expired or lease.holder == self.replica.holder:
            return None
        return lease

    def room_over(self, session_id: str) -> None:
        """A bot room ended for good here: its lease is deleted at the next renewal."""
        if self.held.pop(session_id, None) is not None:
            self.done.add(session_id)

    def room_gone(self, session_id: str) -> None:
        """A bot room another replica took: its lease is no longer ours (nothing is written)."""
        self.held.pop(session_id, None)

    def renewals(self) -> dict[str, tuple[int, float]]:
        """The leases to renew: lease id -> (fence, clock)."""
        return {ROOM_LEASE + sid: (fence, 0.0) for sid, fence in self.held.items()}

    def finished(self) -> tuple[str, ...]:
        """The lease ids of the rooms over since the last call (to delete)."""
        done, self.done = self.done, set()
        return tuple(ROOM_LEASE + sid for sid in done)

    def lost(self, lease_ids: set[str]) -> None:
        """Stand down the rooms of these leases (another replica took them)."""
        for lease_id in lease_ids:
            session_id = lease_id.removeprefix(ROOM_LEASE)
            if self.held.pop(session_id, None) is not None:
                log.warning("bot room %s: its lease was taken by another replica; standing down", session_id)
                self.room_lost(session_id)

    def stand_down_all(self) -> None:
        """Stand down every room held (this replica was frozen past its leases)."""
        for session_id in list(self.held):
            self.held.pop(session_id, None)
            self.room_lost(session_id)


class Ownership:
    """The games this replica drives: their leases renewed, the orphans taken over, the lost ones
    stood down (`service.play.manager.GameManager.ownership`); the bot rooms' leases renewed too."""

    def __init__(self, replica: Replica, manager: Tables, rooms: RoomLeases | None = None) -> None:
        """``manager``: the tables it leases (the `GameManager`, which builds its ownership with
        itself); ``rooms``: the bot rooms' leases (`RoomLeases`, the bot rooms' registry's; None:
        no bot rooms)."""
        assert manager.store is not None
        self.replica, self.manager, self.settings = replica, manager, replica.settings
        self.leases = Leases(manager.store, replica.holder, replica.address, replica.settings.lease_s)
        self.rooms = rooms if rooms is not None else RoomLeases(replica, manager.store, lambda session: None)
        self.fences: dict[str, int] = {}  # game id -> the fence of our lease
        self.opening: dict[str, float] = {}  # game id -> when its lease was claimed, while it is stored
        self.taking: dict[str, asyncio.Task[Table | None]] = {}
        self.task: asyncio.Task[None] | None = None
        self.taken = self.lost_count = 0
        self.watcher: asyncio.Task[None] | None = None
        self.frozen_count = 0
        self.beat = time.monotonic()  # when the loop was last seen running (`check_awake`)
        self.lobbies: dict[str, int] = {}  # lobby code -> the fence of our lease
        self.lobbies_done: set[str] = set()  # lobbies started or closed: leases deleted at the next renewal

    FIGURES = ("tables", "rooms", "taken_over", "stood_down", "frozen")  # `figure`: griffon_replica{what}

    def figure(self, what: str) -> int:
        """One of `FIGURES`: tables and bot rooms held now; tables taken over and stood down, and
        wakes past the leases, since the start."""
        return {"tables": len(self.fences), "rooms": len(self.rooms.held), "taken_over": self.taken,
                "stood_down": self.lost_count, "frozen": self.frozen_count}[what]

    def start(self) -> None:
        """Install the leases (idempotent) and start renewing and taking over."""
        self.leases.install()
        self.task = asyncio.create_task(self.run(), name="replica-leases")
        self.watcher = asyncio.create_task(self.watch(), name="replica-freeze")

    async def aclose(self) -> None:
        """A clean shutdown: stop renewing, and give every lease up at once (with the games'
        clocks), for the other replicas to take them over without waiting for the expiry."""
        for task in (self.task, self.watcher):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        with contextlib.suppress(Exception):  # the lobbies as they are, before their leases go
            await self.manager.rooms.flush()
        clocks = {gid: s.now() for gid, s in self.manager.games.items() if gid in self.fences}
        for session in self.manager.games.values():
            session.hand_over(stop_writing=False)  # a socket still open closes with 1012 and reconnects
        with contextlib.suppress(StoreError):
            await asyncio.to_thread(self.leases.release, clocks)
            await asyncio.to_thread(self.leases.release, None)
            await asyncio.to_thread(self.leases.leave)
        self.fences.clear()

    # -- lobbies ---------------------------------------------------------------------------------------
    def claim_lobby(self, code: str) -> Lease | None:
        """Lease a lobby (a new one, or one whose holder's lease ran out; on the caller's thread, a
        worker thread most often: `run` reads a copy of ``lobbies``); the lease of another live
        holder when it has one. Raises `StoreError`."""
        lease = self.leases.claim(LOBBY_LEASE + code)
        if lease is None:
            return self.leases.get(LOBBY_LEASE + code)
        if lease.holder == self.replica.holder:
            self.lobbies[code] = lease.fence
            self.lobbies_done.discard(code)
        return lease

    def lobby_holder(self, code: str) -> Lease | None:
        """The live lease of another replica on a lobby (None: nobody else holds it now; on the
        caller's thread). Raises `StoreError`."""
        lease = self.leases.get(LOBBY_LEASE + code)
        if lease is None or lease.expired or lease.holder == self.replica.holder:
            return None
        return lease

    def lobby_over(self, code: str) -> None:
        """A lobby started or closed here: its lease is deleted at the next renewal."""
        if self.lobbies.pop(code, None) is not None:
            self.lobbies_done.add(code)

    # -- new games, fenced writes ------------------------------------------------------------------
    def claim_new(self, game_id: str) -> None:
        """The lease of a game this replica is creating (before it is stored: no other replica can
        take a stored game without a lease in between). Raises `StoreError`."""
        lease = self.leases.claim(game_id)
        if lease is None or lease.holder != self.replica.holder:
            raise StoreError(f"game {game_id!r}: its lease is held elsewhere")
        self.fences[game_id] = lease.fence
        self.opening[game_id] = time.monotonic()  # not open yet: its lease is kept, not given up

    def stand_down(self, game_id: str) -> None:
        """Stop driving a game another replica took, without writing: its tasks stop, its sockets
        close with 1012 (the page reconnects, to the new holder)."""
        self.fences.pop(game_id, None)
        session = self.manager.games.get(game_id)
        if session is None or not session.hand_over(stop_writing=True):
            return
        self.lost_count += 1
        log.warning("game %s: its lease was taken by another replica; standing down", game_id)
        self.manager.forget(game_id)

    # -- the loop ----------------------------------------------------------------------------------
    async def watch(self, every_s: float = WATCH_S) -> None:
        """Every ``every_s``: when the loop stood still past the lease (the process was frozen), every
        lease may have gone to another replica: stand down everything now (`stand_down_all`)."""
        self.beat = time.monotonic()
        while True:
            await asyncio.sleep(every_s)
            self.check_awake()

    def check_awake(self) -> bool:
        """Whether the loop stood still past the lease since it was last seen running (then every
        table and room is stood down now). The watcher asks every ``WATCH_S``; a table's driver and
        a person's frame ask before they move: after a freeze, the timers and frames that waited may
        run before the watcher does, and none may move a table another replica drives. Without a
        running watcher (not started, or stopped) nothing is judged."""
        if self.watcher is None or self.watcher.done():
            return False
        now = time.monotonic()
        still, self.beat = now - self.beat, now
        if still > self.settings.lease_s:
            self.stand_down_all(still)
            return True
        return False

    def stand_down_all(self, frozen_s: float) -> None:
        """This replica stood still ``frozen_s`` seconds, past its leases: stop driving every game and
        bot room at once, without writing (a page reconnects; the holder, maybe this replica again
        once it claims the game back, serves it)."""
        games, rooms, lobbies = list(self.fences), list(self.rooms.held), list(self.lobbies)
        self.frozen_count += 1
        log.warning("this replica stood still %.1f s, past its %.1f s leases: standing down its %d "
                    "tables and %d bot rooms", frozen_s, self.settings.lease_s, len(games), len(rooms))
        for gid in games:
            self.stand_down(gid)
        self.rooms.stand_down_all()
        for code in lobbies:
            self.lobbies.pop(code, None)
            self.manager.rooms.stand_down(code)

    async def run(self) -> None:
        """Every ``renew_s``: renew, stand down the lost games, release the closed ones, take over
        the orphans. A database error is logged and tried again next time."""
        while True:
            try:
                await self.round()
            except StoreError as error:
                log.warning("leases: %s", error)
            except Exception:  # a bug must not stop the renewals for good
                log.exception("leases: the renewal failed")
            await asyncio.sleep(self.settings.renew_s)

    async def round(self) -> None:
        """One renewal and one look for games to take over."""
        games = self.manager.games
        now = time.monotonic()
        for gid, since in list(self.opening.items()):  # open now, or its creation failed long ago
            if gid in games or now - since > OPENING_S:
                del self.opening[gid]
        held = {gid: (fence, games[gid].now()) for gid, fence in self.fences.items()
                if gid in games and not games[gid].moved}
        closed = tuple(gid for gid in self.fences if gid not in games and gid not in self.opening)
        if closed:
            await asyncio.to_thread(self.leases.release, {}, closed)
            for gid in closed:
                self.fences.pop(gid, None)
        rooms = self.rooms.renewals()
        if done := self.rooms.finished():
            await asyncio.to_thread(self.leases.release, {}, done)
        # a copy: the lobbies are claimed in threads (`service.play.stored_lobbies`)
        lobbies = {LOBBY_LEASE + code: (fence, 0.0) for code, fence in dict(self.lobbies).items()}
        if self.lobbies_done:
            done_lobbies, self.lobbies_done = self.lobbies_done, set()
            gone = tuple(LOBBY_LEASE + code for code in done_lobbies)
            await asyncio.to_thread(self.leases.release, {}, gone)
        kept = await asyncio.to_thread(self.leases.renew, held | rooms | lobbies)
        await asyncio.to_thread(self.leases.seen)
        for gid in set(held) - kept:
            self.stand_down(gid)
        self.rooms.lost(set(rooms) - kept)
        for lease_id in set(lobbies) - kept:
            code = lease_id.removeprefix(LOBBY_LEASE)
            if self.lobbies.pop(code, None) is not None:
                log.warning("lobby %s: its lease was taken by another replica; standing down", code)
                self.manager.rooms.stand_down(code)
        room = self.manager.settings.play_limits.max_games - len(games)
        if room > 0:
            for gid in await asyncio.to_thread(self.leases.orphans, min(room, self.settings.claim_batch)):
                await self.take(gid)

    # -- taking a game over ------------------------------------------------------------------------
    async def take(self, game_id: str) -> Table | None:
        """Take over a game whose lease expired (or that has none) from its stored log; None when
        another replica holds it, or it is over, or cannot be replayed (marked abandoned)."""
        running = self.taking.get(game_id)
        if running is None:
            running = asyncio.create_task(self._take(game_id))
            self.taking[game_id] = running
            running.add_done_callback(lambda _: self.taking.pop(game_id, None))
        return await asyncio.shield(running)

    async def _take(self, game_id: str) -> Table | None:
        session = self.manager.games.get(game_id)
        if session is not None and not session.moved and game_id in self.fences:
            return session
        if session is not None:  # a stale copy (lease lost): gone before the game comes back
            self.manager.forget(game_id)
        lease = await asyncio.to_thread(self.leases.claim, game_id)
        if lease is None:
            return None
        stored = await asyncio.to_thread(self.manager.store.load_game, game_id)  # type: ignore[union-attr]
        if stored is None or stored.status != "playing":
            await asyncio.to_thread(self.leases.release, {}, (game_id,))
            return None
        self.fences[game_id] = lease.fence
        adopted = self.manager.adopt(stored, game_clock=lease.game_clock)
        if adopted is None:
            self.fences.pop(game_id, None)
            return None
        self.taken += 1
        log.info("game %s: taken over (lease %d, %d moves, clock %.1f s)", game_id, lease.fence,
                 len(stored.moves), adopted.now())
        return adopted

    async def outlast(self, game_id: str, lease: Lease) -> Table | Lease | None:
        """The holder of ``lease`` cannot be reached (it died): wait for its lease to run out (at
        most ``lease_s``), then `locate` the game again: taken over here, most often."""
        left = lease.expires_at - await asyncio.to_thread(self.leases.now)
        await asyncio.sleep(min(max(0.0, left) + 0.05, self.settings.lease_s + 0.5))
        return await self.locate(game_id)

    async def locate(self, game_id: str) -> Table | Lease | None:
        """Where a socket for ``game_id`` goes: the session here (held, or taken over now), the
        live lease of another replica (relay there), or None (no such game in play)."""
        session = self.manager.games.get(game_id)
        if session is not None and not session.moved:
            return session
        lease = await asyncio.to_thread(self.leases.get, game_id)
        if lease is not None and not lease.expired and lease.holder != self.replica.holder:
            return lease
        taken = await self.take(game_id)
        if taken is not None:
            return taken
        lease = await asyncio.to_thread(self.leases.get, game_id)  # another replica was quicker
        if lease is not None and not lease.expired and lease.holder != self.replica.holder:
            return lease
        return None
