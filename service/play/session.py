"""One solo game held by the server: the rules engine's state, the AI players, the human's sockets.

One update path (`GameSession.apply`): the move (the human's, from a WebSocket frame, or an AI's)
goes through `rules.apply(state, move, now)`; the new state is stored, the AI players hear about
the events, and the human gets what changed in their own `rules.view` with the events they may
see. A refused move raises `RuleError`; for the human it becomes an error frame and the game goes on.

Frames: a socket gets the whole view once (``{"type": "state", "seq"}``: on connect, and when the
page asks with ``{"type": "sync"}``), then one ``{"type": "update", "seq"}`` per move carrying only
what the move changed, so a move costs the size of the move, not of the game (a Pictomania drawing
of 300 strokes is not sent again with each stroke). `apply_update` is the reference merge (the
page's is `service/static/app.js`); docs/PLAY.md states the format.

Time: `now` is seconds since the game was created, read from the game's clock (`time.monotonic`,
the event loop's own; tests and benchmarks give a `ManualClock` they move by hand) and passed
into the pure engines and the AI driver. A task (`run`) wakes every `tick_s` and calls
`ai.step(self, now)`: the AI driver (`games.ai.driver`, the same code `griffon simulate` runs
with a fake clock) lets timers run out (`Tick`) and makes every AI decision (draw, guess, gesture,
bet, take a token) through `apply`. The recognitions the driver asks for (`ai.looks()`) run in
other tasks (`_spawn`) through the shared batched inference and come back with `ai.seen`, so
neither the driver nor the event loop ever waits on the model. Everything that touches the state is
synchronous code between two awaits, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from games.ai.driver import KontourDriver, Look, PictomaniaDriver
from games.ai.levels import AILevel
from games.core import Event, InvalidMove, Move, RuleError, events_for
from games.kontour import KontourConfig, KontourRules, KontourState
from games.pictomania import PictomaniaConfig, PictomaniaRules, PictomaniaState
from service.metrics import Metrics
from service.play.settings import PlaySettings
from service.play.words import Words
from store import hash_token, token_matches
from store.leases import LeaseLost

log = logging.getLogger("griffon.play")

Recognize = Callable[[list[Any], Sequence[str]], Awaitable[dict[str, float]]]
"""``await recognize(drawing, candidates)`` -> probability of each candidate (renormalised)."""
Clock = Callable[[], float]  # monotonic seconds


class ManualClock:
    """A clock that moves only when told: whole games on game time without waiting (the tests,
    `bench.bench_restart`). Give it to `GameManager(clock=...)`; every game shares it."""

    def __init__(self, start: float = 0.0) -> None:
        self.seconds = start

    def __call__(self) -> float:
        return self.seconds

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass (never backwards: the clock is monotonic)."""
        if seconds < 0:
            raise ValueError("a monotonic clock never goes back")
        self.seconds += seconds


HUMAN = "joueur"
COORD_MIN, COORD_MAX = -64.0, 320.0  # the page draws on a 0-255 canvas; a little slack outside
MAX_GUESS_CHARS = 80
MAX_OPPONENTS = 5  # what `POST /v1/play` accepts
SEND_QUEUE = 64  # frames waiting for a slow socket; beyond, the socket is dropped
DRAWING_EVENTS = ("stroke_drawn", "stroke_undone", "drawing_cleared")  # Pictomania drawings change only so


class GameTooLong(RuleError):
    """The game's move log reached ``max_moves`` moves or ``max_log_bytes`` bytes: the person's
    moves are refused (the AI players and the timers still end the turn / round)."""

    code = "game_too_long"


def move_bytes(move: Move) -> int:
    """The size of a move as logged (its compact JSON)."""
    return len(json.dumps(move.to_dict(), separators=(",", ":")))


def check_points(raw: Any, limit: int) -> list[tuple[float, float]]:
    """Stroke points from a frame: 1 to `limit` finite ``[x, y]`` pairs within the canvas."""
    if not isinstance(raw, list) or not 1 <= len(raw) <= limit:
        raise InvalidMove(f"a stroke needs 1 to {limit} points [x, y]")
    points = []
    for p in raw:
        if not (isinstance(p, list | tuple) and len(p) == 2):
            raise InvalidMove("each point must be a pair [x, y]")
        x, y = p
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y)):
            raise InvalidMove("point coordinates must be numbers")
        if not all(math.isfinite(v) and COORD_MIN <= v <= COORD_MAX for v in (x, y)):
            raise InvalidMove(f"point coordinates must be finite, within {COORD_MIN}..{COORD_MAX}")
        points.append((float(x), float(y)))
    return points


class GameSession:
    """The parts shared by both games (subclasses: `KontourSession`, `PictomaniaSession`)."""

    kind = ""
    rules: Any
    state: Any
    ai: Any  # the AI driver: games.ai.driver.KontourDriver / PictomaniaDriver

    def __init__(
        self,
        game_id: str,
        token: str,
        names: dict[str, str],
        level: AILevel,
        seed: int,
        words: Words,
        recognize: Recognize,
        labels: frozenset[str],
        play: PlaySettings,
        clock: Clock = time.monotonic,
    ) -> None:
        self.id, self.token, self.names, self.level, self.seed = game_id, token, names, level, seed
        self.token_hash = hash_token(token)  # a game resumed from the database knows only this
        self.journal: Any = None  # service.persistence.Journal: the move log in the database
        self.words, self.recognize, self.labels, self.play = words, recognize, labels, play
        self.ais = [p for p in names if p != HUMAN]
        self.clock = clock
        self.t0 = clock()
        self.last_activity = clock()
        self.listeners: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.driver: asyncio.Task[None] | None = None
        self.moves = 0
        self.log_bytes = 0  # size of the moves applied so far (bounded: `GameTooLong`)
        self.seq = 0  # updates so far: every frame carries it, the page asks for a full state on a gap
        self.fr_sent: set[str] = set()  # French words sent so far (a full frame sends them all)
        self.reading: set[str] = set()  # drawings being recognised now (one at a time per drawing)
        self.metrics: Metrics | None = None  # set by the manager: strokes, recognitions, store writes
        self.moved = False  # another replica took the game over (service.replicas): this copy is dead

    def check_token(self, token: str) -> bool:
        """Whether `token` is this game's player token (constant-time comparison)."""
        return token_matches(token, self.token_hash)

    # -- clock, tasks, lifetime -------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the game was created (monotonic)."""
        return self.clock() - self.t0

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

    async def run(self) -> None:
        """The driver: `tick` every `tick_s`."""
        while True:
            await asyncio.sleep(self.play.tick_s)
            self.tick()

    def tick(self) -> None:
        """One period of the driver: the timers and the AI decisions due now. A move the rules
        refuse, or a bug, is logged and the game goes on."""
        try:
            self.step(self.now())
        except LeaseLost:  # another replica drives the game: this copy stands down
            return
        except RuleError as error:  # an AI move the rules refused: log it, play on
            log.info("game %s: AI move refused: %s", self.id, error)
        except Exception:  # a bug must not kill the game silently
            log.exception("game %s: driver step failed", self.id)

    def step(self, now: float) -> None:
        """One tick of the driver task: the AI moves due now (through `apply`)."""
        self.ai.step(self, now)

    # -- the one update path -----------------------------------------------------------------------
    def apply(self, move: Move) -> list[Event]:
        """Apply a move now (the rules check it), store the state, let the AIs react, send the
        human what changed in their view."""
        now = self.now()
        before = self.state
        self.state, events = self.rules.apply(before, move, now)
        if self.journal is not None:  # stored before anyone sees it (service.play.journal)
            started = time.perf_counter()
            try:
                self.journal.record(self, move, now, events)
            except LeaseLost:  # not stored, so it did not happen: another replica drives the game
                self.state = before
                raise
            if self.metrics is not None:
                self.metrics.store_write.observe(time.perf_counter() - started)
        if self.metrics is not None and move.kind == "stroke":
            self.metrics.strokes.labels(source="play" if move.player == HUMAN else "ai").inc()
        self.moves += 1
        self.log_bytes += move_bytes(move)
        self.seq += 1
        self.on_events(events, now)
        self.broadcast(before, events)
        return events

    def human_move(self, data: Any) -> None:
        """A move from the human's socket (``player`` is set here); raises `RuleError`."""
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise InvalidMove("'move' must be an object with a 'kind'")
        self.last_activity = self.clock()
        move = self.parse(dict(data, player=HUMAN))
        self.check_length(move)
        self.apply(move)

    def check_length(self, move: Move) -> None:
        """Refuse the person's move once the game's log is full (`GameTooLong`): a game holds at
        most ``max_moves`` moves and ``max_log_bytes`` bytes of moves, so that no player can
        grow the database without end (strokes undone and drawn again, guesses...)."""
        size = move_bytes(move)
        if self.moves >= self.play.max_moves or self.log_bytes + size > self.play.max_log_bytes:
            raise GameTooLong(
                f"this game has reached its length limit ({self.play.max_moves} moves, "
                f"{self.play.max_log_bytes} bytes of moves): start a new game",
                moves=self.moves, bytes=self.log_bytes,
            )

    def parse(self, data: dict[str, Any]) -> Move:
        """Check bounds and build the engine's move (`InvalidMove` for bad data)."""
        if data["kind"] == "tick":
            raise InvalidMove("the server keeps time: 'tick' is not a player move")
        if "points" in data:
            data["points"] = check_points(data["points"], self.play.max_points_per_stroke)
        try:
            return self.rules.parse_move(data)
        except ValueError as error:  # pydantic ValidationError
            first = error.errors()[0] if hasattr(error, "errors") else {}
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise InvalidMove(f"bad '{data['kind']}' move: {where} {first.get('msg', error)}") from None

    def on_events(self, events: list[Event], now: float) -> None:
        """Let the AI players hear what happened; start the recognitions they ask for."""
        self.ai.on_events(self.state, events, now)
        self._read()

    def _read(self) -> None:
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
        self._read()

    # -- what the human sees ---------------------------------------------------------------------
    def attach(self) -> asyncio.Queue[dict[str, Any] | None]:
        """A queue of frames for a new socket, starting with the current state."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(SEND_QUEUE)
        self.listeners.add(queue)
        _offer(queue, self.frame([]))
        return queue

    def detach(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        self.listeners.discard(queue)

    def broadcast(self, before: Any, events: list[Event]) -> None:
        """Send what the last move changed (from state `before`) to every socket of the game."""
        if not self.listeners:
            return
        frame = self.update(before, events_for(events, HUMAN))
        for queue in list(self.listeners):
            if not _offer(queue, frame):
                self.listeners.discard(queue)
                _offer(queue, None, force=True)

    def frame(self, events: list[Event]) -> dict[str, Any]:
        """The full state frame: the human's view, the events, the time left, French words."""
        view = self.rules.view(self.state, HUMAN)
        self.fr_sent |= self.keys_shown(view, events)  # every word shown so far: sockets share updates
        return {
            "type": "state",
            "seq": self.seq,
            "game": self.kind,
            "id": self.id,
            "you": HUMAN,
            "names": self.names,
            "level": self.level.name,
            "now": round(self.now(), 3),
            "time_left": round(self.time_left(), 3),
            "config": self.client_config(),
            "state": view.to_dict(),
            "events": [self.event_dict(e) for e in events],
            "fr": {k: self.words.french(k) for k in sorted(self.fr_sent)},
        }

    def update(self, before: Any, events: list[Event]) -> dict[str, Any]:
        """The update frame of one move: its events, the view's fields that may have changed
        (``set``), the new items of its append-only lists (``append``) and the French words not
        sent yet. Its size does not depend on the length of the game."""
        view = self.rules.view(self.state, HUMAN)
        new_keys = self.keys_shown(view, events) - self.fr_sent
        self.fr_sent |= new_keys
        changed, appended = self.delta(before, view)
        return {
            "type": "update",
            "seq": self.seq,
            "now": round(self.now(), 3),
            "time_left": round(self.time_left(), 3),
            "events": [self.event_dict(e) for e in events],
            "set": changed,
            "append": appended,
            "fr": {k: self.words.french(k) for k in sorted(new_keys)},
        }

    def delta(self, before: Any, view: Any) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """(fields of the view to replace, new items of its append-only lists)."""
        raise NotImplementedError

    def event_dict(self, event: Event) -> dict[str, Any]:
        """An event as sent to the page."""
        return event.to_dict()

    def time_left(self) -> float:
        raise NotImplementedError

    def client_config(self) -> dict[str, Any]:
        raise NotImplementedError

    def keys_shown(self, view: Any, events: list[Event]) -> set[str]:
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
    """A Kontour game: the human and AI players take turns drawing; the others guess."""

    kind = "kontour"

    def __init__(self, rules: KontourRules, state: KontourState, candidates: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.rules, self.state, self.candidates = rules, state, candidates
        self.ai: KontourDriver = KontourDriver(
            rules, self.ais, self.level, self.words.kit(), self.seed, candidates,
            between_turns_s=self.play.between_turns_s, card_s=self.play.ai_think_s,
        )

    def time_left(self) -> float:
        turn = self.state.turn
        if turn is None:
            return 0.0
        return max(0.0, turn.ends_at(self.rules.config.tie_window_s) - self.now())

    def client_config(self) -> dict[str, Any]:
        cfg = self.rules.config
        return {
            "timer_s": cfg.timer_s,
            "max_strokes": cfg.max_strokes,
            "target_score": cfg.target_score,
            "gestures": list(cfg.gestures),
            "drawer_points": cfg.drawer_points,
            "opponents": accepted_opponents(),
        }

    def delta(self, before: KontourState, view: KontourState) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """Everything but the history (15 lines at most a turn), and the turns that ended."""
        done = len(before.history)
        new = [h.to_dict() for h in view.history[done:]]
        return view.model_dump(mode="json", exclude={"history"}), ({"history": new} if new else {})

    def keys_shown(self, view: KontourState, events: list[Event]) -> set[str]:
        keys = {h.word for h in view.history if h.word}
        turn = view.turn
        if turn is not None and turn.card is not None:
            keys |= {turn.card.blue, turn.card.orange}
        return keys


class PictomaniaSession(GameSession):
    """A Pictomania game: everybody draws their secret word and guesses the others' at once."""

    kind = "pictomania"

    def __init__(self, rules: PictomaniaRules, state: PictomaniaState, **kw: Any) -> None:
        super().__init__(**kw)
        self.rules, self.state = rules, state
        self.ai: PictomaniaDriver = PictomaniaDriver(
            rules, self.ais, self.level, self.words.kit(), self.seed, state,
            labels=self.labels, human_done_after_s=self.play.human_done_after_s,
        )

    def time_left(self) -> float:
        if self.state.phase != "playing":
            return 0.0
        return max(0.0, self.state.round.deadline - self.now())

    def client_config(self) -> dict[str, Any]:
        cfg = self.rules.config
        return {
            "rounds": cfg.rounds,
            "round_timer_s": cfg.round_timer_s,
            "words_per_card": cfg.words_per_card,
            "tokens": list(cfg.tokens(len(self.state.players))),
            "unclaimed_penalty": cfg.unclaimed_penalty,
            "cards_per_round": cfg.cards_per_round,
            "opponents": accepted_opponents(),
        }

    def delta(
        self, before: PictomaniaState, view: PictomaniaState
    ) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        """Everything but the drawings and the past rounds' results. Within a round the drawings
        change only through the events `DRAWING_EVENTS` (the page applies them); a new round
        sends its (fresh) drawings whole. A result scored in this update comes without its
        drawings when the page holds them as ``round.drawings``."""
        changed = view.model_dump(mode="json", exclude={"results": True, "round": {"drawings"}})
        same_round = before.round.number == view.round.number
        if not same_round:
            changed["round"]["drawings"] = view.round.to_dict()["drawings"]
        done = len(before.results)
        lean = {"drawings"} if same_round else None  # the round just scored is still the state's round
        new = [r.model_dump(mode="json", exclude=lean if r.number == view.round.number else None)
               for r in view.results[done:]]
        return changed, ({"results": new} if new else {})

    def event_dict(self, event: Event) -> dict[str, Any]:
        """`round_scored` without the drawings (the page has them in the state)."""
        if event.kind == "round_scored":
            return event.model_dump(mode="json", exclude={"result": {"drawings"}})
        return event.to_dict()

    def keys_shown(self, view: PictomaniaState, events: list[Event]) -> set[str]:
        keys = {w for card in view.round.cards for w in card.words}
        for result in view.results:
            keys |= set(result.words.values())
        return keys


@functools.cache
def accepted_opponents() -> dict[str, dict[str, int]]:
    """How many AI opponents each game accepts (from the rules configs' player counts, within the
    1-5 the service offers)."""
    out = {}
    for game, cfg in (("kontour", KontourConfig.load()), ("pictomania", PictomaniaConfig.load())):
        out[game] = {"min": max(1, cfg.min_players - 1), "max": min(MAX_OPPONENTS, cfg.max_players - 1)}
    return out


def apply_update(full: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The reference merge of an update frame into the last full frame (what the page does):
    returns the new full frame, with the update's events. `ValueError` when `update` does not
    follow `full` (a gap: ask for a full state with ``{"type": "sync"}``)."""
    if update["seq"] != full["seq"] + 1:
        raise ValueError(f"update {update['seq']} does not follow state {full['seq']}")
    old = full["state"]
    state = {**old, **update["set"]}
    for field, items in update["append"].items():
        state[field] = [*old.get(field, []), *items]
    if "round" in update["set"] and "drawings" not in update["set"]["round"]:
        drawings = dict(old["round"]["drawings"])
        for e in update["events"]:
            if e["kind"] == "stroke_drawn":
                drawings[e["player"]] = [*drawings.get(e["player"], []), e["points"]]
            elif e["kind"] == "stroke_undone":
                drawings[e["player"]] = drawings.get(e["player"], [])[: e["strokes_left"]]
            elif e["kind"] == "drawing_cleared":
                drawings[e["player"]] = []
        state["round"] = {**update["set"]["round"], "drawings": drawings}
    for result in state.get("results", []) if "results" in update["append"] else []:
        result.setdefault("drawings", state["round"]["drawings"])
    return {
        **full,
        "seq": update["seq"],
        "now": update["now"],
        "time_left": update["time_left"],
        "events": update["events"],
        "state": state,
        "fr": {**full["fr"], **update["fr"]},
    }
