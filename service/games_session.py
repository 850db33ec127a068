"""One solo game held by the server: the rules engine's state, the AI players, the human's sockets.

One update path (`GameSession.apply`): the move (the human's, from a WebSocket frame, or an AI's)
goes through `rules.apply(state, move, now)`; the new state is stored, the AI players hear about
the events, and the human gets their own `rules.view` with the events they may see. A refused move
raises `RuleError`; for the human it becomes an error frame and the game goes on.

Time: `now` is seconds since the game was created, read from the event loop's monotonic clock and
passed into the pure engines and the AI driver. A task (`run`) wakes every `tick_s` and calls
`ai.step(self, now)`: the AI driver (`games.ai.driver`, the same code `griffon simulate` runs
with a fake clock) lets timers run out (`Tick`) and makes every AI decision (draw, guess, gesture,
bet, take a token) through `apply`. The recognitions the driver asks for (`ai.looks()`) run in
other tasks (`_spawn`) through the shared batched inference and come back with `ai.seen`, so
neither the driver nor the event loop ever waits on the model. Everything that touches the state is
synchronous code between two awaits, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from games.ai.driver import KontourDriver, Look, PictomaniaDriver
from games.ai.levels import AILevel
from games.core import Event, InvalidMove, Move, RuleError, events_for
from games.kontour import KontourRules, KontourState
from games.pictomania import PictomaniaRules, PictomaniaState
from service.games_decks import Words
from service.games_settings import PlaySettings

log = logging.getLogger("griffon.play")

Recognize = Callable[[list[Any], Sequence[str]], Awaitable[dict[str, float]]]
"""``await recognize(drawing, candidates)`` -> probability of each candidate (renormalised)."""

HUMAN = "joueur"
COORD_MIN, COORD_MAX = -64.0, 320.0  # the page draws on a 0-255 canvas; a little slack outside
MAX_GUESS_CHARS = 80
SEND_QUEUE = 64  # frames waiting for a slow socket; beyond, the socket is dropped


class FrameError(RuleError):
    """A frame the service cannot read (not JSON, not an object, unknown type)."""

    code = "bad_frame"


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
    ) -> None:
        self.id, self.token, self.names, self.level, self.seed = game_id, token, names, level, seed
        self.words, self.recognize, self.labels, self.play = words, recognize, labels, play
        self.ais = [p for p in names if p != HUMAN]
        self.loop = asyncio.get_running_loop()
        self.t0 = self.loop.time()
        self.last_activity = self.loop.time()
        self.listeners: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.driver: asyncio.Task[None] | None = None
        self.moves = 0

    def check_token(self, token: str) -> bool:
        """Whether `token` is this game's player token (constant-time comparison)."""
        return secrets.compare_digest(token.encode(), self.token.encode())

    # -- clock, tasks, lifetime -------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the game was created (monotonic)."""
        return self.loop.time() - self.t0

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
        """The driver: timers and AI decisions, every `tick_s`."""
        while True:
            await asyncio.sleep(self.play.tick_s)
            try:
                self.step(self.now())
            except RuleError as error:  # an AI move the rules refused: log it, play on
                log.info("game %s: AI move refused: %s", self.id, error)
            except Exception:  # a bug must not kill the game silently
                log.exception("game %s: driver step failed", self.id)

    def step(self, now: float) -> None:
        """One tick of the driver task: the AI moves due now (through `apply`)."""
        self.ai.step(self, now)

    # -- the one update path -----------------------------------------------------------------------
    def apply(self, move: Move) -> list[Event]:
        """Apply a move now, store the state, let the AIs react, send the human their view."""
        now = self.now()
        self.state, events = self.rules.apply(self.state, move, now)
        self.moves += 1
        self.on_events(events, now)
        self.broadcast(events)
        return events

    def human_move(self, data: Any) -> None:
        """A move from the human's socket (``player`` is set here); raises `RuleError`."""
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise InvalidMove("'move' must be an object with a 'kind'")
        self.last_activity = self.loop.time()
        move = self.parse(dict(data, player=HUMAN))
        self.apply(move)

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
        for look in self.ai.looks():
            self._spawn(self._recognize(look))

    async def _recognize(self, look: Look) -> None:
        probs = await self._probabilities(look.drawing, look.candidates)
        self.ai.seen(look, probs, self.now())

    # -- what the human sees ---------------------------------------------------------------------
    def attach(self) -> asyncio.Queue[dict[str, Any] | None]:
        """A queue of frames for a new socket, starting with the current state."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(SEND_QUEUE)
        self.listeners.add(queue)
        _offer(queue, self.frame([]))
        return queue

    def detach(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        self.listeners.discard(queue)

    def broadcast(self, events: list[Event]) -> None:
        """Send the human's view and their events to every socket of the game."""
        if not self.listeners:
            return
        frame = self.frame(events_for(events, HUMAN))
        for queue in list(self.listeners):
            if not _offer(queue, frame):
                self.listeners.discard(queue)
                _offer(queue, None, force=True)

    def frame(self, events: list[Event]) -> dict[str, Any]:
        """The state frame: the human's view, the events, the time left, French words."""
        view = self.rules.view(self.state, HUMAN)
        return {
            "type": "state",
            "game": self.kind,
            "id": self.id,
            "you": HUMAN,
            "names": self.names,
            "level": self.level.name,
            "now": round(self.now(), 3),
            "time_left": round(self.time_left(), 3),
            "config": self.client_config(),
            "state": view.to_dict(),
            "events": [e.to_dict() for e in events],
            "fr": {k: self.words.french(k) for k in sorted(self.keys_shown(view, events))},
        }

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
        except Exception as error:  # noqa: BLE001 - a drawing the model refuses, overload...
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
        }

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

    def parse(self, data: dict[str, Any]) -> Move:
        if data["kind"] == "stroke":
            drawn = len(self.state.round.drawings.get(HUMAN, ()))
            if drawn >= self.play.max_pictomania_strokes:
                raise InvalidMove(f"a drawing holds at most {self.play.max_pictomania_strokes} strokes")
        return super().parse(data)

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
        }

    def keys_shown(self, view: PictomaniaState, events: list[Event]) -> set[str]:
        keys = {w for card in view.round.cards for w in card.words}
        for result in view.results:
            keys |= set(result.words.values())
        return keys
