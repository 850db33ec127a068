"""One solo game held by the server: the rules engine's state, the AI players, the human's sockets.

One update path (`GameSession.apply`): the move (the human's, from a WebSocket frame, or an AI's)
goes through `rules.apply(state, move, now)`; the new state is stored, the AI players hear about
the events, and the human gets their own `rules.view` with the events they may see. A refused move
raises `RuleError`; for the human it becomes an error frame and the game goes on.

Time: `now` is seconds since the game was created, read from the event loop's monotonic clock and
passed into the pure engines and AI policies. A driver task (`run`) wakes every `tick_s`: it lets
timers run out (`Tick`), and makes the AI players draw, guess and gesture when their policies say
so. Recognition runs in other tasks (`_spawn`) through the shared batched inference, so neither the
driver nor the event loop ever waits on the model. Everything that touches the state is synchronous
code between two awaits, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import secrets
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from games.ai.drawer import AIDrawer, TimedStroke
from games.ai.kontour_guesser import KontourGuesser
from games.ai.levels import AILevel
from games.ai.pictomania_guesser import OpponentState, PictomaniaGuesser
from games.core import Event, InvalidMove, Move, RuleError, Tick, events_for
from games.kontour import ChooseWord, DrawCard, Gesture, Guess, KontourRules, KontourState
from games.kontour import Stroke as KontourStroke
from games.pictomania import Done, PictomaniaRules, PictomaniaState, PictoStroke, PlaceGuess
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

    def rng(self, *purpose: object) -> random.Random:
        """A private generator for one AI decision stream."""
        return random.Random(":".join(str(p) for p in (self.seed, *purpose)))

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
        raise NotImplementedError

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
        """Let the AI players hear what happened (subclasses)."""

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


def centered(plan: list[TimedStroke], size: float = 255.0) -> list[TimedStroke]:
    """The planned strokes moved to the middle of the canvas (drawings come top-left aligned)."""
    points = [p for s in plan for p in s.points]
    if not points:
        return plan
    dx = (size - max(p[0] for p in points) - min(p[0] for p in points)) / 2
    dy = (size - max(p[1] for p in points) - min(p[1] for p in points)) / 2
    return [TimedStroke(s.start, s.end, tuple((x + dx, y + dy) for x, y in s.points)) for s in plan]


def _as_strokes(polylines: Sequence[Sequence[tuple[float, float]]]) -> list[list[list[float]]]:
    return [[[p[0] for p in line], [p[1] for p in line]] for line in polylines if line]


# ------------------------------------------------------------------------------------------------
# Kontour


class KontourSession(GameSession):
    """A Kontour game: the human and AI players take turns drawing; the others guess."""

    kind = "kontour"

    def __init__(self, rules: KontourRules, state: KontourState, candidates: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.rules, self.state, self.candidates = rules, state, candidates
        lvl = self.level
        self.guessers = {
            p: KontourGuesser(
                level=lvl.kontour_guesser,
                rng=self.rng(p, "guess"),
                to_french=self.words.french,
                related=self.words.related,
                turn_length=rules.config.timer_s,
            )
            for p in self.ais
        }
        self.drawers = {
            p: AIDrawer(lvl.drawer, self.rng(p, "draw"), self.words.source, self.words.related)
            for p in [*self.ais, rules.config.neutral_drawer]
        }
        self.active: list[str] = []  # AI guessers of the current turn
        self.plan: list[TimedStroke] = []
        self.planned = 0
        self.wait_until: float | None = None  # when the AI drawer acts next (draw / choose)
        self.gestures: list[tuple[float, str, str]] = []  # (at, kind, about) by the AI drawer
        self.observed = 0  # sequence number of the latest applied observation

    def drawer(self) -> str:
        st = self.state
        return st.turn.drawer if st.turn is not None else st.drawer

    def step(self, now: float) -> None:
        st = self.state
        if st.phase == "game_over":
            return
        if st.turn is not None and self.rules.turn_over(st, now):
            self.apply(Tick())
            return
        drawer = self.drawer()
        if drawer == HUMAN:
            if st.phase == "drawing":
                self._ai_guess(now)
            return
        if self.wait_until is None:
            self.wait_until = now + self.play.ai_think_s
        if st.phase == "draw" and now >= self.wait_until:
            self.wait_until = now + 1.0
            self.apply(DrawCard(player=drawer))
        elif st.phase == "choose" and now >= self.wait_until:
            card = st.turn.card
            color = self.drawers[drawer].choose_color(card.blue, card.orange)
            self.apply(ChooseWord(player=drawer, color=color))
            word = self.state.turn.word
            can = self.drawers[drawer].can_draw(word)
            self.plan = centered(self.drawers[drawer].plan(word, now, kontour=True)) if can else []
            self.planned = 0
        elif st.phase == "drawing":
            self._ai_draw(drawer, now)
            self._ai_guess(now)

    def _ai_draw(self, drawer: str, now: float) -> None:
        while self.planned < len(self.plan) and self.plan[self.planned].end <= now:
            stroke = self.plan[self.planned]
            self.planned += 1
            if self.state.turn.strokes < self.rules.config.max_strokes:
                try:
                    self.apply(KontourStroke(player=drawer, points=stroke.points))
                except RuleError as error:
                    log.info("game %s: AI stroke refused: %s", self.id, error)
        while self.gestures and self.gestures[0][0] <= now:
            _, kind, about = self.gestures.pop(0)
            self.apply(Gesture(player=drawer, gesture=kind, about=about))

    def _ai_guess(self, now: float) -> None:
        for p in self.active:
            turn = self.state.turn
            if turn is None or self.state.phase != "drawing":
                return
            if p in turn.finders:
                continue
            say = self.guessers[p].decide(now)
            if say is not None:
                self.apply(Guess(player=p, text=say.word))

    def on_events(self, events: list[Event], now: float) -> None:
        for e in events:
            if e.kind == "turn_started":
                tied = self.state.tied
                self.active = [p for p in self.ais if p != e.drawer and (not tied or p in tied)]
                for p in self.active:
                    self.guessers[p].new_turn(now, self.candidates)
                self.plan, self.planned, self.gestures = [], 0, []
            elif e.kind == "stroke_added" and self.active:
                drawing = [[[s.x0, s.x1], [s.y0, s.y1]] for s in self.state.turn.segments]
                self.observed += 1
                self._spawn(self._observe(self.state.turn.number, self.observed, drawing))
            elif e.kind == "guess_made" and not e.accepted:
                self._heard(e.player, e.text, now)
            elif e.kind == "gesture_made":
                key = self.words.key_for(e.about)
                if key is not None:
                    for p in self.active:
                        self.guessers[p].gesture(e.gesture, key)
            elif e.kind == "turn_ended":
                self.active, self.plan, self.gestures = [], [], []
                self.wait_until = now + self.play.between_turns_s + self.play.ai_think_s

    def _heard(self, speaker: str, text: str, now: float) -> None:
        key = self.words.key_for(text)
        if key is not None:
            for p in self.active:
                if p != speaker:
                    self.guessers[p].heard(key)
        drawer, turn = self.drawer(), self.state.turn
        if drawer != HUMAN and turn is not None and turn.word is not None:
            kind = self.drawers[drawer].gesture(key, turn.word)
            if kind is not None:
                self.gestures.append((now + 0.8, kind, text))

    async def _observe(self, turn_number: int, seq: int, drawing: list[Any]) -> None:
        probs = await self._probabilities(drawing, self.candidates)
        turn = self.state.turn
        if probs is None or turn is None or turn.number != turn_number or seq < self.observed:
            return
        now = self.now()
        for p in self.active:
            self.guessers[p].observe(probs, now)

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


# ------------------------------------------------------------------------------------------------
# Pictomania


class PictomaniaSession(GameSession):
    """A Pictomania game: everybody draws their secret word and guesses the others' at once."""

    kind = "pictomania"

    def __init__(self, rules: PictomaniaRules, state: PictomaniaState, **kw: Any) -> None:
        super().__init__(**kw)
        self.rules, self.state = rules, state
        self.plans: dict[str, list[TimedStroke]] = {}
        self.drawn: dict[str, int] = {}
        self.brains: dict[str, PictomaniaGuesser] = {}
        self.candidates: list[str] = []
        self.last_human_stroke: float | None = None
        self.observed: dict[str, int] = {}
        self._new_round(state.round.started_at)

    def _new_round(self, now: float) -> None:
        rnd, players = self.state.round, self.state.players
        table = [list(card.words) for card in rnd.cards]
        self.candidates = sorted({w for card in table for w in card} & self.labels)
        tokens = self.rules.config.tokens(len(players))
        self.last_human_stroke = None
        for p in self.ais:
            key = rnd.word(p)
            drawer = AIDrawer(self.level.drawer, self.rng(p, "draw", rnd.number), self.words.source)
            self.plans[p] = centered(drawer.plan(key, now)) if key and drawer.can_draw(key) else []
            self.drawn[p] = 0
            secret = rnd.secrets[p]
            self.brains[p] = PictomaniaGuesser(
                level=self.level.pictomania_guesser,
                rng=self.rng(p, "guess", rnd.number),
                cards=table,
                my_symbol=secret.symbol,
                my_number=secret.number,
                opponents=[o for o in players if o != p],
                tokens=tokens,
            )

    def step(self, now: float) -> None:
        st = self.state
        if st.phase != "playing":
            return
        if now >= st.round.deadline:
            self.apply(Tick())
            return
        for p in self.ais:
            self._ai_draw(p, now)
        for p in self.ais:
            if self.state.phase != "playing" or p in self.state.round.done:
                continue
            states = self._opponents(p, now)
            commit = self.brains[p].decide(now, states)
            if commit is not None:
                self.apply(PlaceGuess(player=p, target=commit.opponent, number=commit.number))
            own_done = self.drawn[p] >= len(self.plans[p])
            if own_done and self.state.phase == "playing" and self.brains[p].finished(now, states):
                self.apply(Done(player=p))

    def _ai_draw(self, p: str, now: float) -> None:
        plan, start = self.plans[p], self.drawn[p]
        while self.drawn[p] < len(plan) and plan[self.drawn[p]].end <= now:
            if p not in self.state.round.done:
                self.apply(PictoStroke(player=p, points=plan[self.drawn[p]].points))
            self.drawn[p] += 1
        if self.drawn[p] > start:
            self._look_at(p)

    def _drawing_done(self, p: str, now: float) -> bool:
        if p in self.state.round.done:
            return True
        if p != HUMAN:
            return self.drawn[p] >= len(self.plans[p])
        last = self.last_human_stroke
        return last is not None and now - last >= self.play.human_done_after_s

    def _opponents(self, p: str, now: float) -> dict[str, OpponentState]:
        rnd = self.state.round
        return {
            o: OpponentState(stack=len(rnd.stacks[o]), drawing_done=self._drawing_done(o, now))
            for o in self.state.players
            if o != p
        }

    def _look_at(self, p: str) -> None:
        """Recognise `p`'s drawing so far, for the AI players who are not `p`."""
        drawing = _as_strokes(self.state.round.drawings[p])
        self.observed[p] = self.observed.get(p, 0) + 1
        self._spawn(self._observe(p, self.state.round.number, self.observed[p], drawing))

    async def _observe(self, p: str, round_number: int, seq: int, drawing: list[Any]) -> None:
        probs = await self._probabilities(drawing, self.candidates)
        rnd = self.state.round
        if probs is None or rnd.number != round_number or self.state.phase != "playing":
            return
        if seq < self.observed.get(p, 0):
            return
        now = self.now()
        for ai in self.ais:
            if ai != p:
                self.brains[ai].observe(p, probs, now)

    def parse(self, data: dict[str, Any]) -> Move:
        if data["kind"] == "stroke":
            drawn = len(self.state.round.drawings.get(HUMAN, ()))
            if drawn >= self.play.max_pictomania_strokes:
                raise InvalidMove(f"a drawing holds at most {self.play.max_pictomania_strokes} strokes")
        return super().parse(data)

    def on_events(self, events: list[Event], now: float) -> None:
        for e in events:
            if e.kind == "round_started" and e.number != 1:
                self._new_round(now)
            elif e.kind == "stroke_drawn" and e.player == HUMAN:
                self.last_human_stroke = now
                self._look_at(HUMAN)

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
