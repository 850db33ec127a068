"""One table held by the server — a game against AI players, or a room's game with friends: the
rules engine's state, the AI players, the people's sockets.

One update path (`GameSession.apply`): the move (a person's, from a WebSocket frame, or an AI's)
goes through `rules.apply(state, move, now)`; the new state is stored, the AI players hear about
the events, and each person gets what changed in their own `rules.view` with the events they may
see. A refused move raises `RuleError`; for a person it becomes an error frame and the game goes on.
Frames: a socket gets the whole view once, then one update per move carrying only what the move
changed (`service.play.views`).
Time: `now` is seconds since the game was created, read from the game's clock (`time.monotonic`,
the event loop's own; tests and benchmarks give a `ManualClock` they move by hand) and passed
into the pure engines and the AI driver. A task (`run`) wakes every `tick_s` and calls
`ai.step(self, now)`: the AI driver (`games.ai.driver`, the same code `griffon simulate` runs
with a fake clock) lets timers run out (`Tick`) and makes every AI decision (draw, guess, gesture,
bet, take a token) through `apply`. The recognitions the driver asks for (`ai.looks()`) run in
other tasks (`_spawn`) through the shared batched inference and come back with `ai.seen`, so
neither the driver nor the event loop ever waits on the model. Everything that touches the state is
synchronous code between two awaits, so no lock is needed.

Stored before shown: with a database, a move's frames wait until the store's writer says it is
written, and the table pauses while the database cannot write (`service.play.gate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from games.ai.driver import KontourDriver, Look, PictomaniaDriver
from games.ai.levels import AILevel
from games.core import Event, InvalidMove, Move, RuleError, events_for
from games.kontour import KontourRules, KontourState
from games.pictomania import PictomaniaRules, PictomaniaState
from service.play.bounds import MoveBounds, encode_move
from service.play.clock import Clock
from service.play.gate import LOST_MESSAGE, PAUSED_MESSAGE, Gate, Held
from service.play.journal import Journal, state_clock
from service.play.settings import PlaySettings
from service.play.table_words import Words
from service.play.views import HUMAN, KontourViews, PictomaniaViews, Views
from service.prometheus import Metrics
from service.ratelimit import DecayingRate, RateLimit
from store import Encoded, StoredGame, hash_token, token_matches
from store.leases import is_lease_lost

log = logging.getLogger("griffon.play")

Recognize = Callable[[list[Any], Sequence[str]], Awaitable[dict[str, float]]]
"""``await recognize(drawing, candidates)`` -> probability of each candidate (renormalised)."""

SEND_QUEUE = 64  # frames waiting for a slow socket; beyond, the socket is dropped


@dataclass(frozen=True)
class Seating:
    """Who sits at a table: every seat's name (the people's and the AI players'), the people's
    tokens, the AI players' levels."""

    names: dict[str, str]  # seat -> the name shown
    level: AILevel  # every AI player's, but those `levels` names
    levels: dict[str, AILevel] = field(default_factory=dict)  # AI seat -> its own level
    token: str = ""  # the host's token (seat `HUMAN`), when the host is given it now
    host_hash: str | None = None  # its SHA-256, when only that is known (a resumed game, a room's)
    friends: dict[str, str] = field(default_factory=dict)  # the other people's seats -> their tokens' SHA-256
    room_code: str | None = None  # the room the game is of


@dataclass(frozen=True)
class Collaborators:
    """What a table is handed at construction (`GameManager` builds them; each None: without)."""

    journal: Journal | None = None  # its move log in the database (service.play.journal)
    metrics: Metrics | None = None  # where its strokes, recognitions and store writes are counted
    on_lost: Callable[[GameSession, BaseException], None] | None = None  # the database lost it: closed
    loop_budget: RateLimit | None = None  # its share of the event loop (`take_turn`)
    frozen: Callable[[], bool] | None = None  # a replica woken past its leases (`Ownership.check_awake`)


class GameSession:
    """The parts shared by both games (subclasses: `KontourSession`, `PictomaniaSession`)."""

    kind = ""
    rules: Any
    state: Any
    ai: Any  # the AI driver: games.ai.driver.KontourDriver / PictomaniaDriver
    views: Views  # what each seat is sent

    def __init__(
        self,
        game_id: str,
        seating: Seating,
        seed: int,
        words: Words,
        recognize: Recognize,
        labels: frozenset[str],
        play: PlaySettings,
        clock: Clock = time.monotonic,
        bounds: MoveBounds | None = None,
        collaborators: Collaborators = Collaborators(),
    ) -> None:
        """``seating``: who sits at the table; ``words``, ``recognize``, ``labels``: what its AI
        players draw and read; ``bounds``: of the people's moves (default: the settings'
        defaults); ``collaborators``: what the manager hands it (`Collaborators`)."""
        self.id, self.seed, self.token = game_id, seed, seating.token
        self.names, self.level, self.levels = seating.names, seating.level, dict(seating.levels)
        self.room_code = seating.room_code
        self.next_game: str | None = None  # the room's next game (« Rejouer »), once the host started it
        # a game resumed from the database (or a room's) knows only the hashes
        host = seating.host_hash or hash_token(seating.token)
        self.hashes: dict[str, str] = {HUMAN: host, **seating.friends}
        self.people = list(self.hashes)  # the seats played by people (the host first)
        self.journal, self.metrics = collaborators.journal, collaborators.metrics
        self.on_lost, self.loop_budget, self.frozen = collaborators.on_lost, collaborators.loop_budget, \
            collaborators.frozen
        self.words, self.recognize, self.labels, self.play = words, recognize, labels, play
        self.bounds = bounds or MoveBounds.of(play)
        self.ais = [p for p in self.names if p not in self.hashes]
        self.clock = clock
        self.t0 = clock()
        self.last_activity = clock()
        self.listeners: dict[asyncio.Queue[dict[str, Any] | None], str] = {}  # socket queue -> seat
        # person seat -> since when no socket holds it (clock): every seat until its socket comes
        self.away: dict[str, float] = {seat: self.t0 for seat in self.people}
        self.adopted: set[str] = set()  # person seats an AI plays while their person is away
        self.ready: set[str] = set()  # people who asked for the next Pictomania round
        self.tasks: set[asyncio.Task[Any]] = set()
        self.driver: asyncio.Task[None] | None = None
        self.moves = 0
        self.log_bytes = 0  # size of the moves applied so far (bounded: `GameTooLong`)
        self.seq = 0  # updates so far: every frame carries it, the page asks for a full state on a gap
        self.reading: set[str] = set()  # drawings being recognised now (one at a time per drawing)
        self.gate = Gate(self.journal)  # stored before shown; paused while the database cannot write
        self.loop_used = DecayingRate()  # the event loop's seconds a second this table took lately
        self.moved = False  # another replica took the game over (service.replicas): this copy is dead

    def check_token(self, token: str) -> bool:
        """Whether `token` is one of this game's people's tokens (constant-time comparison)."""
        return self.seat_of(token) is not None

    def seat_of(self, token: str) -> str | None:
        """The seat whose token `token` is (every seat compared, in constant time each)."""
        found = None
        for seat, digest in self.hashes.items():
            if token_matches(token, digest):
                found = seat
        return found

    # -- clock, tasks, lifetime -------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the game was created (monotonic), not counting the pauses: the game
        clock stands still while the table is paused."""
        paused_at = self.gate.paused_at
        return (self.clock() if paused_at is None else paused_at) - self.t0

    def start(self) -> None:
        """Start the driver task."""
        self.driver = asyncio.create_task(self.run(), name=f"play-{self.id}")

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def close(self) -> None:
        """Stop every task and tell the sockets the game is gone."""
        for task in [*self.tasks, *([self.driver] if self.driver else [])]:
            task.cancel()
        for queue in list(self.listeners):
            _offer(queue, None)

    @property
    def room(self) -> bool:
        """Whether several people play this game (a room with friends)."""
        return len(self.people) > 1

    async def run(self) -> None:
        """The driver: `tick` every `tick_s` (later while the table is over its share of the event
        loop: `take_turn`)."""
        while True:
            await asyncio.sleep(self.play.tick_s)
            started = time.perf_counter()
            self.tick()
            await self.take_turn(time.perf_counter() - started)

    async def take_turn(self, spent: float) -> None:
        """Charge ``spent`` seconds of the event loop to this table (the wall time of a synchronous
        section: what the other tables waited); when it took more than its share
        (``capacity.table_loop_share`` seconds a second), wait until the debt is paid: its own frames and AI
        players slow down, the other tables' do not."""
        self.loop_used.add(spent)
        budget = self.loop_budget
        if budget is None:
            return
        budget.charge(spent)
        if not budget.allow(0.0):
            await asyncio.sleep(budget.retry_after(0.0))

    def tick(self) -> None:
        """One period of the driver: the timers and the AI decisions due now (none while the
        table is paused). A move the rules refuse, or a bug, is logged and the game goes on."""
        if self.frozen is not None and self.frozen() or self.moved:
            return  # woken past the leases: stood down, another replica drives the table
        self.check_store()
        if self.gate.closed:
            return
        try:
            self.check_people()
            self.step(self.now())
        except RuleError as error:  # an AI move the rules refused: log it, play on
            log.info("game %s: AI move refused: %s", self.id, error)
        except Exception:  # a bug must not kill the game silently
            log.exception("game %s: driver step failed", self.id)

    def step(self, now: float) -> None:
        """One tick of the driver task: the AI moves due now (through `apply`)."""
        self.ai.step(self, now)

    def replay(self, game: StoredGame, game_clock: float = 0.0) -> None:
        """Apply a stored game's move log to this table just built from its setup: the rules check
        every move again, the AI driver hears every event, the journal follows the drawings without
        writing; then the game clock goes on from the last move, or from ``game_clock`` when later,
        and the AI players resume. Raises whatever the rules raise for a log they refuse."""
        replaying = self.journal.replaying() if self.journal is not None else contextlib.nullcontext()
        now = state_clock(self.state)
        with replaying:
            for entry in game.moves:
                move = self.rules.parse_move(entry.move)
                self.state, events = self.rules.apply(self.state, move, entry.at)
                now = entry.at
                self.ai.on_events(self.state, events, now)
                if self.journal is not None:
                    self.journal.follow(self, move, now, events)
        self.moves = self.seq = len(game.moves)
        self.log_bytes = sum(Encoded.of(m.move).size for m in game.moves)
        self.t0 = self.clock() - max(now, game_clock)  # the clock goes on where it stopped: timers paused
        self.last_activity = self.clock()
        self.ai.resume(self.state, now)

    # -- the people of a room ----------------------------------------------------------------------
    def presence(self) -> dict[str, str]:
        """Each person seat: ``here`` (a socket holds it), ``away`` (within the grace period) or
        ``ai`` (an AI plays it until its person comes back)."""
        return {p: "ai" if p in self.adopted else "away" if p in self.away else "here" for p in self.people}

    def check_people(self) -> None:
        """In a room, an AI takes the seat of a person away for longer than ``room_grace_s``
        while somebody else is still here; the next round starts once every person here asked."""
        if not self.room:
            return
        limit = self.clock() - self.play.room_grace_s
        here = [p for p in self.people if p not in self.away]
        late = [p for p, since in self.away.items() if since <= limit and p not in self.adopted]
        if here and late:
            for seat in late:
                self.adopted.add(seat)
                self.ai.adopt(seat, self.state, self.now())
                log.info("game %s: an AI plays %s's seat (away)", self.id, seat)
            self.send_presence()
        self._next_round_if_ready()

    def _next_round_if_ready(self) -> None:
        waiting = [p for p in self.people if p not in self.away and p not in self.ready]
        if self.ready and not waiting and getattr(self.state, "phase", "") == "scored":
            first = sorted(self.ready)[0]
            self.apply(self.rules.parse_move({"kind": "next_round", "player": first}))

    def send_presence(self) -> None:
        """Tell every socket who is here (a frame outside the numbered updates)."""
        frame = {"type": "presence", "seats": self.presence(), "ready": sorted(self.ready)}
        for queue in list(self.listeners):
            _offer(queue, frame)

    # -- the one update path -----------------------------------------------------------------------
    def apply(self, move: Move, encoded: Encoded | None = None) -> list[Event]:
        """Apply a move now (the rules check it), hand it to the database, let the AIs react, send
        each person what changed in their view once the database has it (``encoded``: the move in
        its stored form, `encode_move`, when the caller has it). `TablePaused` while the table waits for
        the database."""
        if not self.gate.closed and self.journal is not None and self.journal.full():
            self.pause("the move writer's queue is full")  # timers and AI players stop with the moves
        self.gate.check_open()
        now = self.now()
        before = self.state
        self.state, events = self.rules.apply(before, move, now)
        encoded = encoded or encode_move(move)
        stored = None
        if self.journal is not None:  # stored before anyone sees it (service.play.journal)
            stored = self.journal.record(self, move, encoded, now, events)
        if self.metrics is not None and move.kind == "stroke":
            self.metrics.strokes.labels(source="play" if move.player in self.people else "ai").inc()
        self.moves += 1
        self.log_bytes += encoded.size
        self.seq += 1
        self.on_events(events, now)
        if self.gate.must_hold(stored):
            self.hold(before, events, stored, move.kind == "stroke" and move.player in self.people)
        else:
            self.broadcast(before, events)
        return events

    # -- stored before shown (service.play.gate) --------------------------------------------------
    def hold(self, before: Any, events: list[Event], stored: Future[None] | None, stroke: bool) -> None:
        """Keep the move's frames (one per seat with a socket) until the database has the move
        (`release`, called from the writer's thread through the event loop)."""
        frames = {seat: self.update(before, events_for(events, seat), seat)
                  for seat in set(self.listeners.values())}
        held = Held(self.seq, self.state, frames, events, stored, time.monotonic(), stroke)
        self.gate.hold(held, before, self.release)

    def release(self) -> None:
        """Send the frames of the moves written so far, in order; resume a paused table once
        nothing is held. A move the database refused for good closes the game (`lose`)."""
        gate = self.gate
        if gate.lost:
            return
        while (held := gate.pop_written()) is not None:
            error = held.stored.exception() if held.stored is not None else None
            if error is not None:
                self.lose(error, held.seq)
                return
            gate.show(held)
            waited = time.monotonic() - held.since
            if self.metrics is not None:
                self.metrics.store_write.observe(waited)
                if held.stroke:
                    self.metrics.stroke_ack.labels(source="play").observe(waited)
            self.send_seats(held)
        if gate.settled() and gate.paused_at is not None:
            self.unpause()

    def check_store(self) -> None:
        """Pause the table when a held move waits on a database that cannot write (or hangs)."""
        why = self.gate.stalled()
        if why is not None:
            self.pause(why)

    def pause(self, why: str) -> None:
        """The database cannot write: stop the game clock, the AI players and the person's moves,
        and tell the person. The held moves are written when the database is back (`release`)."""
        self.gate.pause(self.clock())
        held = len(self.gate.held)
        log.warning("game %s: paused, %d moves waiting for the database (%s)", self.id, held, why)
        self.send(self.pause_frame())

    def pause_frame(self) -> dict[str, Any]:
        """What a socket is told while the table is paused."""
        return {"type": "paused", "code": "store_unavailable", "message": PAUSED_MESSAGE,
                "now": round(self.now(), 3), "time_left": round(self.time_left(), 3)}

    def unpause(self) -> None:
        """The held moves are written: the game clock goes on where it stopped."""
        stopped_at = self.now()  # the game clock where it stopped
        time_left = self.time_left()
        now = self.clock()
        paused = self.gate.unpause(now)
        self.t0 += paused
        self.last_activity = now
        log.warning("game %s: resumed after %.1f s", self.id, paused)
        self.send({"type": "resumed", "paused_s": round(paused, 3), "now": round(stopped_at, 3),
                   "time_left": round(time_left, 3)})

    def lose(self, error: BaseException, seq: int) -> None:
        """The database refused move ``seq`` for good (another server writes this game): the game
        can no longer be kept here; it stops, and the manager closes it (`on_lost`) — the person is
        told, unless another replica took the game over (the page then reconnects to it)."""
        log.error("game %s: move %d refused by the database (%s); the game stops here", self.id, seq, error)
        self.gate.lose()
        if not is_lease_lost(error):
            self.send({"type": "error", "code": "not_stored", "message": LOST_MESSAGE})
        if self.on_lost is not None:
            self.on_lost(self, error)

    def human_move(self, data: Any, seat: str = HUMAN) -> None:
        """A move from the socket of a person's `seat` (``player`` is set here); raises `RuleError`.
        In a room, the next Pictomania round starts once every person here asked for it."""
        self.gate.check_open()
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise InvalidMove("'move' must be an object with a 'kind'")
        self.last_activity = self.clock()
        move = self.parse(dict(data, player=seat))
        encoded = encode_move(move)  # once: its size bounds the log, the store writes its text
        self.bounds.check_length(self.moves, self.log_bytes, encoded)
        if move.kind == "next_round" and self.room and getattr(self.state, "phase", "") == "scored":
            self.ready.add(seat)
            self.send_presence()
            self._next_round_if_ready()
            return
        self.apply(move, encoded)

    def parse(self, data: dict[str, Any]) -> Move:
        """Check bounds and build the engine's move (`InvalidMove` for bad data)."""
        if data["kind"] == "tick":
            raise InvalidMove("the server keeps time: 'tick' is not a player move")
        if "points" in data:
            data["points"] = self.bounds.points(data["points"])
        try:
            return self.rules.parse_move(data)
        except ValueError as error:  # pydantic ValidationError
            first = error.errors()[0] if hasattr(error, "errors") else {}
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise InvalidMove(f"bad '{data['kind']}' move: {where} {first.get('msg', error)}") from None

    def on_events(self, events: list[Event], now: float) -> None:
        """Let the AI players hear what happened; start the recognitions they ask for."""
        self.ai.on_events(self.state, events, now)
        if any(e.kind == "round_started" for e in events):
            self.ready.clear()
        self.read_drawings()

    def read_drawings(self) -> None:
        """Start the recognitions the AIs asked for; one at a time per drawing: a drawing that
        changes while it is read is read again (its newest strokes only) when the reading is back."""
        for look in self.ai.looks(busy=self.reading):
            self.reading.add(look.subject)
            self._spawn(self._recognize(look))

    async def _recognize(self, look: Look) -> None:
        try:
            started = time.perf_counter()
            probs = await self._probabilities(look.drawing, look.candidates)
            if self.metrics is not None:
                self.metrics.guesses.labels(source="play").inc()
                self.metrics.guess_time.labels(source="play").observe(time.perf_counter() - started)
            self.ai.seen(look, probs, self.now())
        finally:
            self.reading.discard(look.subject)
        self.read_drawings()

    # -- what the people see ---------------------------------------------------------------------
    def attach(self, seat: str = HUMAN) -> asyncio.Queue[dict[str, Any] | None]:
        """A queue of frames for a new socket of `seat`, starting with the current state. A person
        back in a seat an AI played takes it over again."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(SEND_QUEUE)
        self.listeners[queue] = seat
        came_back = self.away.pop(seat, None) is not None
        if seat in self.adopted:
            self.adopted.discard(seat)
            self.ai.release(seat, self.state)
        _offer(queue, self.frame([], seat))
        if self.gate.paused_at is not None:
            _offer(queue, self.pause_frame())
        if self.next_game is not None:  # a page late for « Rejouer » follows too
            _offer(queue, self.next_frame())
        if came_back and self.room:
            self.send_presence()
        return queue

    def detach(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        seat = self.listeners.pop(queue, None)
        if seat is not None and seat not in self.listeners.values():
            self.away[seat] = self.clock()
            if self.room:
                self.send_presence()

    def broadcast(self, before: Any, events: list[Event]) -> None:
        """Send what the last move changed (from state `before`) to every socket of the game:
        each seat its own view's changes."""
        frames: dict[str, dict[str, Any]] = {}
        for queue, seat in list(self.listeners.items()):
            if seat not in frames:
                frames[seat] = self.update(before, events_for(events, seat), seat)
            if not _offer(queue, frames[seat]):
                self.detach(queue)  # a socket that does not read: let go, its seat away
                _offer(queue, None, force=True)

    def send_seats(self, held: Held) -> None:
        """A written move's frames: each socket its seat's update, or its whole state when the
        seat had no socket when the move was made."""
        for queue, seat in list(self.listeners.items()):
            frame = held.frames.get(seat)
            if frame is None:
                frame = self.frame(events_for(held.events, seat), seat, held.state, held.seq)
                held.frames[seat] = frame
            if not _offer(queue, frame):
                self.detach(queue)  # a socket that does not read: let go, its seat away
                _offer(queue, None, force=True)

    def send(self, frame: dict[str, Any]) -> None:
        """One frame to every socket of the game (a socket that does not read is dropped)."""
        for queue in list(self.listeners):
            if not _offer(queue, frame):
                self.detach(queue)  # a socket that does not read: let go, its seat away
                _offer(queue, None, force=True)

    def followed_by(self, game_id: str) -> None:
        """The room's next game (« Rejouer ») is `game_id`: every page of this one is sent there now,
        and any that comes later."""
        self.next_game = game_id
        self.send(self.next_frame())

    def hand_over(self, *, stop_writing: bool) -> bool:
        """Another replica drives this table from now on: its sockets close with 1012 (the pages
        reconnect there); with `stop_writing` (its lease was taken) this copy writes nothing more,
        its end included. False when it was already handed over."""
        if self.moved:
            return False
        self.moved = True
        if stop_writing and self.journal is not None:
            self.journal.writing = False
            self.journal.ended = True  # its end is the new holder's to write
        return True

    def next_frame(self) -> dict[str, Any]:
        """The frame that sends the pages of an ended room's game to the next one (« Rejouer »)."""
        return {"type": "next_game", "game_id": self.next_game, "code": self.room_code}

    def frame(self, events: list[Event], seat: str = HUMAN, state: Any = None,
              seq: int | None = None) -> dict[str, Any]:
        """The full state frame of `seat` (`Views.frame`); of the state the sockets may see
        (`shown`: the database has it) unless `state` and `seq` are given."""
        if state is None:
            state, seq = self.gate.shown if self.gate.shown is not None else (self.state, self.seq)
        return self.views.frame(self, events, seat, state, seq)

    def update(self, before: Any, events: list[Event], seat: str = HUMAN) -> dict[str, Any]:
        """The update frame of the last move (from state `before`) for `seat` (`Views.update`)."""
        return self.views.update(self, before, events, seat)

    def time_left(self, state: Any = None) -> float:
        """Seconds left on the running timer of `state` (default: the current state)."""
        raise NotImplementedError

    async def _probabilities(self, drawing: list[Any], candidates: Sequence[str]) -> dict[str, float] | None:
        if not candidates or not drawing:
            return None
        try:
            return await self.recognize(drawing, candidates)
        except Exception as error:  # a drawing the model refuses, overload...
            log.info("game %s: recognition failed: %s", self.id, error)
            return None


def _offer(queue: asyncio.Queue[Any], item: Any, force: bool = False) -> bool:
    """Put without waiting; False when the queue is full (a stuck socket)."""
    if force and queue.full():
        try:
            queue.get_nowait()
        except asyncio.QueueEmpty:
            pass
    try:
        queue.put_nowait(item)
        return True
    except asyncio.QueueFull:
        return False


# ------------------------------------------------------------------------------------------------
# The two games: the session keeps the clock, the tasks and the sockets; every AI decision is the
# driver's (`games.ai.driver`, the same code `griffon simulate` runs with a fake clock).


class KontourSession(GameSession):
    """A Kontour game: people and AI players take turns drawing; the others guess."""

    kind = "kontour"

    def __init__(self, rules: KontourRules, state: KontourState, candidates: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.rules, self.state, self.candidates = rules, state, candidates
        self.views: Views = KontourViews(rules, self.words)
        self.ai: KontourDriver = KontourDriver(
            rules, self.ais, self.level, self.words.kit(), self.seed, candidates,
            between_turns_s=self.play.between_turns_s, card_s=self.play.ai_think_s, levels=self.levels,
            draw_card_s=rules.config.draw_card_s if self.room else None,  # friends wait for nobody for ever
        )

    def time_left(self, state: Any = None) -> float:
        state = self.state if state is None else state
        turn = state.turn
        if turn is None:  # a person's draw phase has its clock too (the card is taken for them)
            deadline = self.ai.draw_deadline(state)
            return 0.0 if deadline is None else max(0.0, deadline - self.now())
        return max(0.0, turn.ends_at(self.rules.config.tie_window_s) - self.now())


class PictomaniaSession(GameSession):
    """A Pictomania game: everybody draws their secret word and guesses the others' at once."""

    kind = "pictomania"

    def __init__(self, rules: PictomaniaRules, state: PictomaniaState, **kw: Any) -> None:
        super().__init__(**kw)
        self.rules, self.state = rules, state
        self.views = PictomaniaViews(rules, self.words)
        self.ai: PictomaniaDriver = PictomaniaDriver(
            rules, self.ais, self.level, self.words.kit(), self.seed, state,
            labels=self.labels, human_done_after_s=self.play.human_done_after_s, levels=self.levels,
        )

    def time_left(self, state: Any = None) -> float:
        state = self.state if state is None else state
        if state.phase != "playing":
            return 0.0
        return max(0.0, state.round.deadline - self.now())
