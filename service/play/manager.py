"""The games of the service: creating them, finding them, expiring them, bringing them back.

`GameManager` holds at most ``max_games`` games, at most ``games_per_client`` open per client (a
new game replaces the oldest one its player left) and ``games_per_client_hour`` created per client
(``settings.play_limits``); a game nobody has moved in for ``idle_expiry_s`` (or that no socket
joined within ``idle_timeout_s``) is closed by a sweeper task. Its games' sockets are served by
`service.play.sockets`.

With a database (``store``), every game is stored as its setup and its move log
(:mod:`service.play.journal`): `resume` brings the unfinished ones back when the server starts, with
the same id and token. A game the sweeper closes or a new game replaces is marked ``expired``;
shutting the server down leaves games ``playing``, to be resumed. Moves and ends go through the
store's one writer thread (`store.group_commit.MoveWriter`); a game's creation runs in a thread
too (`open_game`): the event loop never waits on the database. A paused table (the database cannot
write) never expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from games.ai.levels import load_level
from games.kontour import KontourCard, KontourConfig, KontourRules
from games.pictomania import PictoCard, PictomaniaConfig, PictomaniaRules
from service.capacity import Capacity
from service.errors import RateLimited
from service.play.bounds import MoveBounds
from service.play.clock import Clock
from service.play.journal import Journal
from service.play.rooms import Rooms
from service.play.settings import PlaySettings
from service.play.table import (
    HUMAN,
    Collaborators,
    GameSession,
    KontourSession,
    PictomaniaSession,
    Recognize,
    Seating,
)
from service.play.table_words import kontour_candidates, kontour_deck, load_words, pictomania_deck
from service.prometheus import Metrics
from service.ratelimit import Buckets, RateLimit
from service.settings import Settings
from service.workers import Workers
from store import Store, StoredGame, StoreError, StoreUnavailable, hash_token
from store.background import shared_writer
from store.group_commit import shared_move_writer
from store.leases import is_lease_lost
from vocab.decks import PictomaniaDeckCard

if TYPE_CHECKING:
    from service.replicas import Ownership

log = logging.getLogger("griffon.play")
SWEEP_EVERY_S = 5.0
SHUTDOWN_FLUSH_S = 10.0  # at shutdown, how long the held moves may take to be written


class TooManyGames(RuntimeError):
    """Every game slot is taken (HTTP 503)."""


class UnknownGame(KeyError):
    """No game with that id (never created, or expired)."""


class GameManager:
    """All live tables of one app: games against AI players and rooms' games alike."""

    def __init__(
        self, settings: Settings, play: PlaySettings, recognizer: Callable[[str], Recognize],
        labels: frozenset[str], store: Store | None = None,
        spend_points: Callable[[str, int], None] | None = None, clock: Clock = time.monotonic,
        metrics: Metrics | None = None, workers: Workers | None = None, capacity: Capacity | None = None,
        ownership: Callable[[GameManager], Ownership] | None = None,
        rooms: Callable[[GameManager], Rooms] = Rooms,
    ) -> None:
        """``recognizer(key)`` gives each game its recognizer (``key``: the game's share of the
        preprocessing pool); ``store``: where games are kept (None: in memory only);
        ``spend_points(client, n)``: the per-client point budget the person's strokes are charged
        to (``Shared.spend_points``, the budget of ``/v1/guess``; raises `RateLimited`); ``clock``:
        the games' monotonic clock (a `ManualClock` in tests); ``metrics``: where the games' strokes,
        recognitions, store writes and refusals are counted; ``workers``: this process among several
        (the games it holds: new ids, resume; ``service.workers``); ``capacity``: the CPU budget
        shared with the bot rooms (``service.capacity``; None: unbounded). Built with the manager,
        which they are handed: ``ownership(manager)``, a replica's leases (``service.replicas``;
        None: one server alone), and ``rooms(manager)``, the rooms with friends."""
        self.settings, self.play, self.recognizer, self.labels = settings, play, recognizer, labels
        self.store, self.spend_points, self.clock, self.metrics = store, spend_points, clock, metrics
        self.capacity = capacity
        self.workers = workers
        self.drawings = shared_writer(store) if store is not None else None  # the app's one writer
        self.writer = shared_move_writer(store) if store is not None else None  # moves and ends, in order
        self.kontour_config, self.pictomania_config = game_configs(play)  # read once, immutable
        self.bounds = MoveBounds.of(play, settings)  # of the people's moves
        self.games: dict[str, GameSession] = {}
        self.creating = asyncio.Lock()  # one new game at a time (`open_game`)
        self.owners: dict[str, str] = {}  # game id -> client that created it
        self.joined: set[str] = set()  # games a socket has joined at least once
        hourly = settings.play_limits.games_per_client_hour
        self.created = Buckets(hourly / 3600, hourly)
        self.guesses: dict[tuple[str, str], RateLimit] = {}  # (game id, seat) -> a person's guess budget
        self._closing: set[asyncio.Task[None]] = set()
        self.sweeper: asyncio.Task[None] | None = None
        self.rooms = rooms(self)  # the lobbies of rooms with friends, and the codes of those started
        self.ownership = ownership(self) if ownership is not None else None  # a replica's leases

    def start(self) -> None:
        """Start the idle-game sweeper."""
        self.sweeper = asyncio.create_task(self._sweep_forever(), name="play-sweeper")

    async def aclose(self) -> None:
        """Close every game (at shutdown; stored games stay ``playing``, to be resumed)."""
        if self.sweeper is not None:
            self.sweeper.cancel()
        await self.rooms.flush()  # the lobbies stay stored, to be brought back (`Rooms.load`)
        for game_id in list(self.games):
            await self.remove(game_id)
        if self.writer is not None:  # what the games applied is written (unless the database is down)
            try:
                await asyncio.to_thread(self.writer.flush, SHUTDOWN_FLUSH_S)
            except (TimeoutError, StoreError) as error:
                log.error("moves not written at shutdown (never shown; the games resume without them): %s",
                          error)
        if self.drawings is not None:  # shared: the app closes it; the drawings so far are written
            await asyncio.to_thread(self.drawings.flush)

    async def withdraw(self, withdraw_key: str) -> int:
        """The person takes their consent back: the games they play keep no more drawings, and
        every drawing given under ``withdraw_key`` is deleted (those still queued too); returns
        how many were deleted."""
        owner = hash_token(withdraw_key)
        for session in self.games.values():
            journal = session.journal
            if journal is not None and journal.setup.get("owner") == owner:
                journal.learn = False
        if self.store is None:
            return 0
        if self.drawings is not None:
            await asyncio.to_thread(self.drawings.flush)  # the ones queued are written, then deleted
        return await asyncio.to_thread(self.store.withdraw_drawings, owner)

    def create(
        self,
        game: Literal["kontour", "pictomania"],
        opponents: int,
        level: str,
        name: str,
        seed: int | None = None,
        client: str = "?",
        learn: bool = False,
        withdraw_key: str | None = None,
    ) -> GameSession:
        """A new game against `opponents` AI players for `client` (`learn`: the person agreed
        that their drawings be kept; `withdraw_key`: the key their page holds to withdraw them,
        only its hash is kept: `withdraw`).

        Raises `TooManyGames` (every slot taken), `RateLimited` (the client's budget),
        `service.errors.Unavailable` (``server_busy``: the CPU budget is held by open tables and rooms),
        `DeckSetupError`, `store.StoreError` (the database refused the new game). The database
        write runs here, on the caller's thread: the service calls `open_game`."""
        token = secrets.token_urlsafe(18)
        return self.open(game, self._solo_seats(name, opponents), level, seed, client, learn,
                         host_hash=hash_token(token), withdraw_key=withdraw_key, token=token)

    async def open_game(
        self, game: Literal["kontour", "pictomania"], opponents: int, level: str, name: str,
        seed: int | None = None, client: str = "?", learn: bool = False, withdraw_key: str | None = None,
    ) -> GameSession:
        """`create`, the database write in a thread (`open_async`)."""
        token = secrets.token_urlsafe(18)
        return await self.open_async(game, self._solo_seats(name, opponents), level, seed, client, learn,
                                     hash_token(token), withdraw_key=withdraw_key, token=token)

    async def open_async(
        self, game: str, names: dict[str, str], level: str, seed: int | None, client: str, learn: bool,
        host_hash: str, friends: dict[str, str] | None = None, room: str | None = None,
        withdraw_key: str | None = None, levels: dict[str, str] | None = None, token: str = "",
    ) -> GameSession:
        """`open`, the database write in a thread (the event loop and the other tables go on). New
        games are made one at a time: the limits `_deal` checks (slots, the client's games and
        budget, the CPU budget) count each game only once it is open."""
        async with self.creating:
            session, setup, replaced = self._deal(game, names, level, seed, client, learn, host_hash, friends,
                                                  room, withdraw_key, levels, token)
            if self.store is not None:
                await asyncio.to_thread(self.store.create_game, session.id, game, setup, host_hash)
            if replaced is not None and replaced not in self.games:
                replaced = None  # it went meanwhile
            return self._open(session, replaced, client)

    def open(
        self, game: str, names: dict[str, str], level: str, seed: int | None, client: str, learn: bool,
        host_hash: str, friends: dict[str, str] | None = None, room: str | None = None,
        withdraw_key: str | None = None, levels: dict[str, str] | None = None, token: str = "",
    ) -> GameSession:
        """A new game of the seats `names` (`HUMAN`: the host, their token's hash `host_hash`, the
        token itself when the host is given it now: `token`; `friends`: the other people's seats and
        token hashes; the other seats are AI players, at `level` but those `levels` names), stored
        (on the caller's thread) and started. A game against the AI is a table of one person.
        Raises as `create`. The service calls `open_async`."""
        session, setup, replaced = self._deal(game, names, level, seed, client, learn, host_hash, friends,
                                              room, withdraw_key, levels, token)
        if self.store is not None:
            self.store.create_game(session.id, game, setup, host_hash)
        return self._open(session, replaced, client)

    def _solo_seats(self, name: str, opponents: int) -> dict[str, str]:
        """The seats of a game against AI players: the person, then `opponents` AI players."""
        return {HUMAN: name, **{f"ia{i + 1}": self.play.ai_names[i % len(self.play.ai_names)]
                                for i in range(opponents)}}

    def _deal(
        self, game: str, names: dict[str, str], level: str, seed: int | None, client: str, learn: bool,
        host_hash: str, friends: dict[str, str] | None = None, room: str | None = None,
        withdraw_key: str | None = None, levels: dict[str, str] | None = None, token: str = "",
    ) -> tuple[GameSession, dict[str, Any], str | None]:
        """A new game's session and setup, not stored nor started; and the game it replaces. The
        setup's ``level`` is every AI seat's but those its ``levels`` names (a room's: AI seat ->
        level); a setup without ``levels`` has one level for all."""
        if len(self.games) >= self.settings.play_limits.max_games:
            raise TooManyGames(f"all {self.settings.play_limits.max_games} game slots are taken; retry later")
        replaced = self._check_client(client)
        if self.capacity is not None:
            self.capacity.admit(game, freeing=self.games[replaced].kind if replaced is not None else None,
                                client=client)
        seed = seed if seed is not None else secrets.randbelow(2**31)
        deal = self._kontour_setup if game == "kontour" else self._pictomania_setup
        setup = deal(names, seed) | {"level": level, "learn": learn}
        if room:
            setup["room"] = room
        if friends:
            setup["friends"] = friends
        if levels:
            setup["levels"] = dict(levels)
        if learn and withdraw_key:
            setup["owner"] = hash_token(withdraw_key)
        session = self._build(self.new_id(), game, setup, token, host_hash)
        if self.ownership is not None:  # a replica leases the game before it exists for the others
            self.ownership.claim_new(session.id)
        return session, setup, replaced

    def _open(self, session: GameSession, replaced: str | None, client: str) -> GameSession:
        """A new game, stored, joins the table: started, its owner counted."""
        if replaced is not None:  # only once the new game is stored: a refused write costs nothing
            self._evict(replaced)
        self._add(session)
        self.owners[session.id] = client
        self.created[client].allow()
        session.start()
        log.info("game %s: %s, %d people with AI players, seed %d", session.id, session.kind,
                 len(session.people), session.seed)
        return session

    def new_id(self) -> str:
        """A fresh game id, one this worker owns (``service.workers``; any id in a single process)."""
        while True:
            game_id = secrets.token_urlsafe(9)
            if self.workers is None or self.workers.owns(game_id):
                return game_id

    def open_count(self, kind: str) -> int:
        """Games of that kind open now."""
        return sum(1 for game in self.games.values() if game.kind == kind)

    def held_by(self, client: str, cost: Callable[[str], float]) -> float:
        """The share of a core ``client``'s open games hold (``cost(kind)``: one game's)."""
        return sum(cost(self.games[gid].kind) for gid, owner in self.owners.items()
                   if owner == client and gid in self.games)

    def socket_count(self) -> int:
        """Sockets attached to the open games."""
        return sum(len(game.listeners) for game in self.games.values())

    def refused(self, reason: str) -> None:
        """Count a refusal (a socket, a frame) in the metrics."""
        if self.metrics is not None:
            self.metrics.refused(reason)

    def _forget_guesses(self, game_id: str) -> None:
        for key in [k for k in self.guesses if k[0] == game_id]:
            del self.guesses[key]

    def _add(self, session: GameSession) -> None:
        self.games[session.id] = session
        for seat in session.people:  # each person's own guess budget
            limits = self.settings.play_limits
            self.guesses[session.id, seat] = RateLimit(limits.guess_rate, limits.guess_burst)

    def _build(
        self, game_id: str, kind: str, setup: dict[str, Any], token: str, host_hash: str
    ) -> GameSession:
        """The session of a game from its setup (the same code for a new and a resumed game), with
        its collaborators: its journal (with a database), the metrics, the loss handler, its share
        of the event loop."""
        words = load_words(self.play.drawings)
        journal = None if self.writer is None else Journal(self.writer, game_id, kind, setup, self.drawings)
        settings = self.settings
        seating = Seating(
            names=dict(setup["names"]), level=load_level(setup["level"]),
            levels={seat: load_level(name) for seat, name in (setup.get("levels") or {}).items()},
            token=token, host_hash=host_hash, friends=dict(setup.get("friends") or {}),
            room_code=setup.get("room"),
        )
        common: dict[str, Any] = dict(
            game_id=game_id,
            seating=seating,
            seed=setup["seed"],
            words=words,
            recognize=self.recognizer(f"game:{game_id}"),
            labels=self.labels,
            play=self.play,
            clock=self.clock,
            bounds=self.bounds,
            collaborators=Collaborators(
                journal=journal, metrics=self.metrics, on_lost=self._lost if journal is not None else None,
                loop_budget=RateLimit(settings.capacity.table_loop_share,
                                      settings.capacity.table_loop_burst_s),
                frozen=self.ownership.check_awake if self.ownership is not None else None,
            ),
        )
        if kind == "kontour":
            rules = KontourRules(KontourConfig.from_dict(setup["config"]), judge=words.judge)
            cards = [KontourCard.from_dict(c) for c in setup["deck"]]
            state, _ = rules.setup(players=setup["players"], deck=cards, seed=setup["seed"],
                                   half=setup["half"])
            session: GameSession = KontourSession(rules, state, list(setup["candidates"]), **common)
        elif kind == "pictomania":
            card = PictomaniaDeckCard if setup.get("deck_type") == "vocab" else PictoCard
            deck = [card.model_validate(c) for c in setup["deck"]]
            picto = PictomaniaRules(PictomaniaConfig.from_dict(setup["config"]))
            state, _ = picto.setup(players=setup["players"], deck=deck, seed=setup["seed"])
            session = PictomaniaSession(picto, state, **common)
        else:
            raise ValueError(f"unknown game kind {kind!r}")
        return session

    def resume(self) -> tuple[int, int]:
        """Bring back the stored games still in progress (at start): the most recently played
        ``play_limits.max_games`` ones (the others are marked ``expired``: never reloaded again), each
        rebuilt from its setup and replayed; one that cannot be is marked ``abandoned`` and
        logged, never blocks the start. Returns (resumed, abandoned). The lobbies of rooms not yet
        started come back too (`Rooms.load`).

        A resumed game has no owner: the per-client limits (``play_limits.games_per_client``) count only the
        games created since the start (the client's address is not stored); it still holds one
        of the ``play_limits.max_games`` slots and expires when idle."""
        if self.store is None:
            return 0, 0
        resumed = abandoned = 0
        mine = [gid for gid in self.store.unfinished_game_ids()
                if self.workers is None or self.workers.owns(gid)]  # each worker resumes its own
        most = self.settings.play_limits.max_games
        keep, overflow = mine[:most], mine[most:]
        for gid in overflow:
            with contextlib.suppress(StoreError):
                self.store.finish_game(gid, "expired")
        if overflow:
            log.info("games beyond the %d slots: %d marked expired", len(keep), len(overflow))
        for gid in reversed(keep):  # oldest first: the newest end up last, as when created
            stored = self._load_stored(gid)
            if stored is None or self.adopt(stored) is None:
                abandoned += 1
            else:
                resumed += 1
        if resumed or abandoned:
            log.info("games resumed from the database: %d (%d abandoned)", resumed, abandoned)
        self.rooms.load()  # after the games: the codes of the rooms started are known
        return resumed, abandoned

    def _load_stored(self, game_id: str) -> StoredGame | None:
        """One stored game to resume; a row that cannot be read (bytes that are not UTF-8, JSON
        that does not parse) is marked ``abandoned`` with one log line (None). A database that
        cannot be reached stops the start (`StoreUnavailable`): nothing is marked then."""
        assert self.store is not None
        try:
            return self.store.load_game(game_id)
        except StoreUnavailable:
            raise
        except Exception as error:  # the driver's decoding error, or json's
            log.warning("game %s: its stored row cannot be read (%s: %s); marked abandoned",
                        game_id, type(error).__name__, str(error)[:200])
            with contextlib.suppress(StoreError):
                self.store.finish_game(game_id, "abandoned")
            return None

    def adopt(self, stored: StoredGame, game_clock: float = 0.0) -> GameSession | None:
        """Bring one stored game back: rebuilt from its setup, its log replayed, its AI players
        resumed; its clock goes on from its last move, or from ``game_clock`` when later (the clock
        a replica that drove it last renewed its lease with: the round's timers go on from there).
        One that cannot be replayed is marked ``abandoned`` and logged (None)."""
        assert self.store is not None
        try:
            session = self._build(stored.id, stored.kind, stored.setup, "", stored.token_hash)
            session.replay(stored, game_clock)
        except Exception:  # a log the rules refuse, a setup of an older Griffon...
            log.exception("game %s: cannot be resumed; marked abandoned", stored.id)
            with contextlib.suppress(StoreError):
                self.store.finish_game(stored.id, "abandoned")
            return None
        self._add(session)
        if stored.setup.get("room"):
            self.rooms.started[stored.setup["room"]] = session.id
        self.joined.add(session.id)  # its player has play_limits.idle_expiry_s to come back
        session.start()
        session.read_drawings()  # the AI players read the drawings as they are
        return session

    def _check_client(self, client: str) -> str | None:
        """Refuse a client over its budget; returns the game a new one of theirs replaces (the
        oldest they left), if they hold ``play_limits.games_per_client`` already."""
        bucket = self.created[client]
        if not bucket.allow(0.0) or bucket.tokens < 1:
            wait = bucket.retry_after()
            hourly = self.settings.play_limits.games_per_client_hour
            raise RateLimited(f"at most {hourly} new games per hour; "
                              f"retry in {wait:.0f} s", retry_after=wait)
        mine = [gid for gid, owner in self.owners.items() if owner == client]
        held = len(mine) + (self.capacity.held_elsewhere(client, "games") if self.capacity is not None else 0)
        if held >= self.settings.play_limits.games_per_client:  # on every worker (service/placement.py)
            left = [gid for gid in mine if not self.games[gid].listeners]
            if not left:
                raise RateLimited(f"you already have {held} games open (at most "
                                  f"{self.settings.play_limits.games_per_client}); finish or leave one first",
                                  code="too_many_games", retry_after=60)
            return left[0]  # the oldest game this client left: a new one replaces it
        return None

    def _evict(self, game_id: str) -> None:
        session = self.games.pop(game_id)
        self._end(session, "expired")
        self.owners.pop(game_id, None)
        self._forget_guesses(game_id)
        self.joined.discard(game_id)
        log.info("game %s: closed (its player started another one)", game_id)
        task = asyncio.create_task(session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _kontour_setup(self, names: dict[str, str], seed: int) -> dict[str, Any]:
        """A new Kontour game's setup: players, names, the dealt deck, the rules config."""
        cards, half = kontour_deck(load_words(self.play.drawings), seed)
        config = self.kontour_config
        names = {**names, config.neutral_drawer: "Griffon"}
        players = [HUMAN, *(p for p in names if p not in (HUMAN, config.neutral_drawer))]  # seat order
        return {
            "players": players, "names": names, "seed": seed, "half": half,
            "deck": [c.to_dict() for c in cards], "candidates": kontour_candidates(cards, half, self.labels),
            "config": config.to_dict(),
        }

    def _pictomania_setup(self, names: dict[str, str], seed: int) -> dict[str, Any]:
        """A new Pictomania game's setup: players, names, the deck, the rules config."""
        deck, config = pictomania_deck(load_words(self.play.drawings), self.pictomania_config, seed)
        vocab = bool(deck) and all(isinstance(c, PictomaniaDeckCard) for c in deck)
        return {
            "players": list(names), "names": names, "seed": seed,
            "deck": [c.model_dump(mode="json") for c in deck], "deck_type": "vocab" if vocab else "picto",
            "config": config.to_dict(),
        }

    def get(self, game_id: str) -> GameSession:
        """The live game with that id; raises `UnknownGame`."""
        try:
            return self.games[game_id]
        except KeyError:
            raise UnknownGame(game_id) from None

    def _lost(self, session: GameSession, error: BaseException) -> None:
        """A game the database refuses for good (`GameSession.lose`): closed, its sockets told;
        on a replica whose lease another took (the fence refused the write), stood down instead:
        its sockets close with 1012 and reconnect to the new holder."""
        if self.ownership is not None and is_lease_lost(error):
            self.ownership.stand_down(session.id)
            return
        if self.games.get(session.id) is session:
            task = asyncio.create_task(self.remove(session.id))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def settle(self, timeout: float = 30.0) -> None:
        """Wait until every move applied so far is written and shown (tests, benchmarks)."""
        if self.writer is not None:
            await asyncio.to_thread(self.writer.flush, timeout)
        for _ in range(100):  # the writer's answers reach the games through the event loop
            if not any(game.gate.held for game in self.games.values()):
                return
            await asyncio.sleep(0.001)

    def forget(self, game_id: str) -> None:
        """Let go of a game without ending it (another replica drives it: `service.replicas`);
        its sockets are closed (1012 when it ``moved``: the page reconnects)."""
        session = self.games.pop(game_id, None)
        self.owners.pop(game_id, None)
        self.guesses.pop(game_id, None)
        self.joined.discard(game_id)
        if session is not None:
            task = asyncio.create_task(session.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def remove(self, game_id: str) -> None:
        """Close and forget a game."""
        session = self.games.pop(game_id, None)
        self.owners.pop(game_id, None)
        self._forget_guesses(game_id)
        self.joined.discard(game_id)
        if session is not None:
            await session.close()

    async def sweep(self) -> list[str]:
        """Close the games idle for longer than ``play_limits.idle_expiry_s``, and those no socket joined
        within ``play_limits.idle_timeout_s``; returns their ids."""
        now = self.clock()
        limits = self.settings.play_limits
        limit, unjoined = now - limits.idle_expiry_s, now - limits.idle_timeout_s
        expired = [gid for gid, g in self.games.items() if g.gate.paused_at is None
                   and (g.last_activity < limit or (gid not in self.joined and g.t0 < unjoined))]
        for game_id in expired:
            log.info("game %s: expired (idle)", game_id)
            self._end(self.games[game_id], "expired")
            await self.remove(game_id)
        self.rooms.sweep()
        return expired

    def _end(self, session: GameSession, status: str) -> None:
        """A game leaves the server for good: the database stops resuming it."""
        if session.journal is not None:
            session.journal.end(status)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(min(SWEEP_EVERY_S, self.settings.play_limits.idle_expiry_s / 2))
            await self.sweep()


def game_configs(play: PlaySettings) -> tuple[KontourConfig, PictomaniaConfig]:
    """The rules config files with the ``GRIFFON_PLAY_*`` overrides (timers, target, rounds)."""
    kontour: dict[str, Any] = {}
    if play.kontour_timer_s is not None:
        kontour["timer_s"] = play.kontour_timer_s
    if play.kontour_target is not None:
        kontour["target_score"] = play.kontour_target
    if play.kontour_draw_card_s is not None:
        kontour["draw_card_s"] = play.kontour_draw_card_s
    pictomania: dict[str, Any] = {}
    if play.pictomania_round_s is not None:
        pictomania["round_timer_s"] = play.pictomania_round_s
    if play.max_pictomania_strokes is not None:
        pictomania["max_strokes_per_round"] = play.max_pictomania_strokes
    picto = PictomaniaConfig.load(**pictomania)
    if play.pictomania_rounds is not None:
        n = play.pictomania_rounds
        picto = picto.replace(rounds=n, levels_per_round=picto.levels_per_round[:n])
    return KontourConfig.load(**kontour), picto
