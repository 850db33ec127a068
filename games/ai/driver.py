"""The one AI driver: what every AI player of a game does next, for `griffon simulate` and the service.

A driver owns the AI players of one game (guessers, drawers, their plans) and decides, at a time
`now` given by the caller, which moves they make. It is pure: no clock, no asyncio, randomness
only from `random.Random`s seeded by the game's seed. The caller provides:

- a `Table`: the game's current ``state`` and its one update path ``apply(move) -> events`` (the
  service's `GameSession.apply`, which also broadcasts; the simulator's loop). Every event of the
  game, whoever caused it, must come back through ``driver.on_events(state, events, now)``.
- recognition: the driver never calls a model. It asks for it with `Look`s (``driver.looks()``:
  "probabilities of these candidates for this drawing") and is fed the results with
  ``driver.seen(look, probs, now)`` — at once in the simulator, after the service's batched
  inference in the service. Results that arrive after a newer look of the same drawing, or after
  the turn / round ended, are dropped.

The loop of a caller: every tick, ``driver.step(table, now)``, then answer ``driver.looks()``
(``looks(busy)`` keeps back the drawings whose last reading has not come back yet).
A game rebuilt from its move log (a restarted server) feeds every logged move's events to
``driver.on_events`` and then calls ``driver.resume(state, now)``: the AI players pick up the
strokes they had not drawn and read the drawings as they are (what they had read is not logged).
For that, every drawing plan is made in ``on_events`` (Kontour: on ``word_chosen``; Pictomania:
on ``round_started``), at the event's time, from generators that only events advance: replaying
the log makes every past plan again, in order, so a resumed drawer goes on with the same drawing.
Pacing (reading, typing, drawing, betting times) comes from the AI level (`games/data/ai_levels.yaml`):
one for the whole game, or one per AI seat (``levels``: a room whose host set each AI's level);
docs/AI_PLAYERS.md states the model and its measured figures.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from games.ai.base import Drawing, Related, ToFrench, identity_french, no_relations
from games.ai.drawer import AIDrawer, DrawingSource, TimedStroke
from games.ai.kontour_guesser import KontourGuesser
from games.ai.levels import AILevel
from games.ai.lines import StraightLines
from games.ai.pictomania_guesser import OpponentState, PictomaniaGuesser
from games.core import Event, Move, RuleError, Tick
from games.kontour import ChooseWord, DrawCard, Gesture, Guess, KontourRules, KontourState
from games.kontour import Stroke as KontourStroke
from games.pictomania import Done, NextRound, PictomaniaRules, PictomaniaState, PictoStroke, PlaceGuess

CANVAS = 255.0


class Table(Protocol):
    """Where a driver plays: the game's state and its one update path."""

    @property
    def state(self) -> Any: ...

    def apply(self, move: Move) -> list[Event]: ...


def _key_itself(text: str | None) -> str | None:
    return text or None


@dataclass(frozen=True)
class AIKit:
    """What the AI players borrow from outside `games/`, injected by the caller: drawings to draw,
    the straight-line cutter for Kontour (``model.strokes.straight_lines``), French words, related
    words, and the reverse look-up from a said word to its category key."""

    drawings: DrawingSource
    straight_lines: StraightLines | None = None
    to_french: ToFrench = identity_french
    related: Related = no_relations
    key_for: Callable[[str | None], str | None] = _key_itself


@dataclass(frozen=True)
class Look:
    """A recognition the driver needs: the probabilities of `candidates` for `drawing` (`subject`'s).
    `ticket` = (turn or round number, sequence number of that drawing's looks)."""

    subject: str
    drawing: Drawing
    candidates: tuple[str, ...]
    ticket: tuple[int, int]


def seeded(seed: int | str, *purpose: object) -> random.Random:
    """A private generator for one AI decision stream of a game."""
    return random.Random(":".join(str(p) for p in (seed, *purpose)))


def draw_line(table: Table, rules: KontourRules, drawer: str, points: Any) -> None:
    """Apply one Kontour line of ``drawer`` unless the turn's lines are used up; a line the engine
    refuses (too short once snapped...) is skipped."""
    if table.state.turn.strokes >= rules.config.max_strokes:
        return
    with contextlib.suppress(RuleError):
        table.apply(KontourStroke(player=drawer, points=points))


def centered(plan: list[TimedStroke], size: float = CANVAS) -> list[TimedStroke]:
    """The planned strokes moved to the middle of the canvas (drawings come top-left aligned)."""
    points = [p for s in plan for p in s.points]
    if not points:
        return plan
    dx = (size - max(p[0] for p in points) - min(p[0] for p in points)) / 2
    dy = (size - max(p[1] for p in points) - min(p[1] for p in points)) / 2
    return [TimedStroke(s.start, s.end, tuple((x + dx, y + dy) for x, y in s.points)) for s in plan]


def _as_stroke(line: Sequence[tuple[float, float]]) -> list[list[float]]:
    return [[p[0] for p in line], [p[1] for p in line]]


def _as_strokes(polylines: Sequence[Sequence[tuple[float, float]]]) -> Drawing:
    return [_as_stroke(line) for line in polylines if line]


class StrokeCache:
    """The model's stroke format of each player's drawing, converted one polyline at a time: a
    drawing grows by a stroke (or loses its last), so the polylines it shares with the previous
    call (the same immutable objects) are not converted again. A round of 300 strokes of 1,000
    points costs the event loop one stroke's conversion per reading, not the whole drawing's."""

    def __init__(self) -> None:
        self.lines: dict[str, tuple[Any, ...]] = {}
        self.strokes: dict[str, list[list[list[float]]]] = {}

    def convert(self, subject: str, polylines: tuple[Any, ...]) -> Drawing:
        """`subject`'s drawing ``polylines`` in the model's format (empty polylines left out)."""
        old, converted = self.lines.get(subject, ()), self.strokes.get(subject, [])
        same = 0
        for before, line in zip(old, polylines, strict=False):
            if before is not line:
                break
            same += 1
        converted = converted[:same] + [_as_stroke(line) for line in polylines[same:]]
        self.lines[subject], self.strokes[subject] = polylines, converted
        return [stroke for stroke in converted if stroke[0]]

    def clear(self) -> None:
        """A new round: no drawing is kept."""
        self.lines.clear()
        self.strokes.clear()


# ------------------------------------------------------------------------------------------------
# Kontour


class KontourDriver:
    """The AI players of a Kontour game: the AI drawer's turns (card, word, strokes, gestures) and
    the AI guessers of every turn. Humans are the players not in `ais`."""

    def __init__(
        self,
        rules: KontourRules,
        ais: Sequence[str],
        level: AILevel,
        kit: AIKit,
        seed: int | str,
        candidates: Sequence[str],
        between_turns_s: float = 3.0,
        card_s: float | None = None,
        levels: Mapping[str, AILevel] | None = None,
        draw_card_s: float | None = None,
    ) -> None:
        """`level`: every AI player's, but those `levels` names (AI seat -> its own level);
        `draw_card_s`: a person drawer's clock to take their card (None: they may take all their
        time; a room passes its rules' ``draw_card_s``)."""
        self.rules, self.ais, self.level, self.kit, self.seed = rules, list(ais), level, kit, seed
        self.levels = dict(levels or {})
        self.candidates = tuple(candidates)
        self.between_turns_s = between_turns_s
        self.card_s = card_s  # None: each drawer's level's pace
        self.draw_card_s = draw_card_s
        self.guessers = {p: self._guesser(p) for p in self.ais}
        self.used: dict[str, set[int]] = {}  # drawings met this game, shared by every AI drawer
        self.drawers = {p: self._drawer(p) for p in [*self.ais, rules.config.neutral_drawer]}
        # the colour roll is made in `step` (never replayed): its own generator, so that the
        # drawers' (plans, gestures: made in `on_events`) advance the same live and in a replay
        self.colors = {p: seeded(seed, p, "color") for p in self.drawers}
        self.active: list[str] = []  # AI guessers of the current turn
        self.plan: list[TimedStroke] = []
        self.planned = 0
        self.delay = 0.0  # the plan's lateness after a resume (the next line keeps its duration)
        self.wait_until: float | None = None  # when the AI drawer acts next (draw / choose)
        self.draw_since: float = 0.0  # when the current draw phase began (a person drawer's card clock)
        self.gestures: list[tuple[float, str, str]] = []  # (at, kind, about) by the AI drawer
        self.turn_number = 0
        self.seq = 0  # looks asked this turn
        self.pending: list[Look] = []

    def level_of(self, p: str) -> AILevel:
        """The level AI player `p` plays at."""
        return self.levels.get(p, self.level)

    def card_wait(self, drawer: str) -> float:
        """Seconds AI drawer `drawer` waits before taking its card."""
        return self.level_of(drawer).drawer.card_s if self.card_s is None else self.card_s

    def _guesser(self, p: str) -> KontourGuesser:
        return KontourGuesser(
            level=self.level_of(p).kontour_guesser,
            rng=seeded(self.seed, p, "guess"),
            to_french=self.kit.to_french,
            related=self.kit.related,
            turn_length=self.rules.config.timer_s,
        )

    def _drawer(self, p: str) -> AIDrawer:
        kit = self.kit
        return AIDrawer(self.level_of(p).drawer, seeded(self.seed, p, "draw"), kit.drawings, kit.related,
                        kit.straight_lines, self.rules.config.max_strokes, self.used)

    # -- a person's seat -------------------------------------------------------------------------
    def adopt(self, p: str, state: KontourState, now: float) -> None:
        """Play person `p`'s seat from now on (they left a room): guess the turn in progress,
        draw their turns (a turn they had begun to draw runs out its timer)."""
        if p in self.ais:
            return
        self.ais.append(p)
        self.guessers[p], self.drawers[p] = self._guesser(p), self._drawer(p)
        self.colors[p] = seeded(self.seed, p, "color", now)
        turn = state.turn
        if turn is None or state.phase == "game_over":
            return
        if turn.drawer == p:
            self.plan, self.planned, self.wait_until = [], 0, None
        elif state.phase == "drawing" and p not in turn.finders and (not state.tied or p in state.tied):
            self.active.append(p)
            self.guessers[p].new_turn(now, self.candidates)
            if turn.segments:
                self.seq += 1
                drawing = [[[s.x0, s.x1], [s.y0, s.y1]] for s in turn.segments]
                self.pending = [Look(turn.drawer, drawing, self.candidates, (self.turn_number, self.seq))]

    def release(self, p: str, state: KontourState) -> None:
        """Give `p`'s seat back to its person (an AI played it while they were away)."""
        if p not in self.ais:
            return
        self.ais.remove(p)
        self.guessers.pop(p, None)
        self.drawers.pop(p, None)
        self.colors.pop(p, None)
        self.active = [a for a in self.active if a != p]
        if state.turn is not None and state.turn.drawer == p:
            self.plan, self.planned, self.gestures, self.wait_until = [], 0, [], None

    # -- decisions -------------------------------------------------------------------------------
    def step(self, table: Table, now: float) -> None:
        """Make every AI move due at `now` through `table.apply`."""
        st: KontourState = table.state
        if st.phase == "game_over":
            return
        if st.turn is not None and self.rules.turn_over(st, now):
            table.apply(Tick())
            return
        drawer = st.turn.drawer if st.turn is not None else st.drawer
        if drawer not in self.drawers:  # a person draws
            if st.phase == "drawing":
                self._guess(table, now)
            deadline = self.draw_deadline(st)
            if deadline is not None and now >= deadline:  # they never took the card: taken for them
                table.apply(DrawCard(player=drawer))
            return
        pacing = self.level_of(drawer).drawer
        if self.wait_until is None:
            self.wait_until = now + self.card_wait(drawer)
        if st.phase == "draw" and now >= self.wait_until:
            self.wait_until = now + pacing.choose_s
            table.apply(DrawCard(player=drawer))
        elif st.phase == "choose" and now >= self.wait_until:
            card = st.turn.card
            color = self.drawers[drawer].choose_color(card.blue, card.orange, rng=self.colors[drawer])
            table.apply(ChooseWord(player=drawer, color=color))  # on_events plans the drawing
        elif st.phase == "drawing":
            self._draw(table, drawer, now)
            self._guess(table, now)

    def draw_deadline(self, state: KontourState) -> float | None:
        """When a person drawer's card is taken for them (``draw_card_s`` after the draw phase
        began; the turn's sand timer then runs as usual), or None: not a person's draw phase."""
        limit = self.draw_card_s
        if limit is None or state.phase != "draw" or state.drawer in self.drawers:
            return None
        return self.draw_since + limit

    def _draw(self, table: Table, drawer: str, now: float) -> None:
        while self.planned < len(self.plan) and self.plan[self.planned].end + self.delay <= now:
            stroke = self.plan[self.planned]
            self.planned += 1
            draw_line(table, self.rules, drawer, stroke.points)
        while self.gestures and self.gestures[0][0] <= now:
            _, kind, about = self.gestures.pop(0)
            table.apply(Gesture(player=drawer, gesture=kind, about=about))

    def _guess(self, table: Table, now: float) -> None:
        for p in self.active:
            turn = table.state.turn
            if turn is None or table.state.phase != "drawing":
                return
            if p in turn.finders:
                continue
            say = self.guessers[p].decide(now)
            if say is not None:
                table.apply(Guess(player=p, text=say.word))

    # -- what happened ---------------------------------------------------------------------------
    def on_events(self, state: KontourState, events: Sequence[Event], now: float) -> None:
        """Every event of the game (the state is the one after them)."""
        for e in events:
            if e.kind == "turn_started":
                tied = state.tied
                self.active = [p for p in self.ais if p != e.drawer and (not tied or p in tied)]
                for p in self.active:
                    self.guessers[p].new_turn(now, self.candidates)
                self.plan, self.planned, self.gestures, self.delay = [], 0, [], 0.0
                self.turn_number, self.seq = e.number, 0
            elif e.kind == "word_chosen" and e.drawer in self.drawers:
                ai = self.drawers[e.drawer]
                self.plan = centered(ai.plan(e.word, now, kontour=True)) if ai.can_draw(e.word) else []
                self.planned, self.delay = 0, 0.0
            elif e.kind == "stroke_added" and self.active and state.turn is not None:
                drawing = [[[s.x0, s.x1], [s.y0, s.y1]] for s in state.turn.segments]
                self.seq += 1
                self.pending = [
                    Look(e.drawer, drawing, self.candidates, (self.turn_number, self.seq))
                ]
            elif e.kind == "guess_made" and not e.accepted:
                self._heard(state, e.player, e.text, now)
            elif e.kind == "gesture_made":
                key = self.kit.key_for(e.about)
                if key is not None:
                    for p in self.active:
                        self.guessers[p].gesture(e.gesture, key)
            elif e.kind == "turn_ended":
                self.active, self.plan, self.gestures, self.pending = [], [], [], []
                self.wait_until = now + self.between_turns_s + self.card_wait(state.drawer)
                self.draw_since = now

    def resume(self, state: KontourState, now: float) -> None:
        """Pick up a game replayed from its log (events fed to `on_events`, which made the AI
        drawer's plan again, the same as live): the drawer goes on with it after the lines
        already drawn, the next one after its own duration (as `PictomaniaDriver.resume`); the
        guessers read the drawing anew."""
        self.gestures, self.wait_until, self.draw_since = [], None, now
        turn = state.turn
        if turn is None or state.phase == "game_over":
            return
        if turn.drawer in self.drawers and state.phase == "drawing" and turn.word:
            self.planned = nxt = min(turn.strokes_submitted, len(self.plan))
            self.delay = max(0.0, now - self.plan[nxt].start) if nxt < len(self.plan) else 0.0
        if self.active and turn.segments:
            self.seq += 1
            drawing = [[[s.x0, s.x1], [s.y0, s.y1]] for s in turn.segments]
            self.pending = [Look(turn.drawer, drawing, self.candidates, (self.turn_number, self.seq))]

    def _heard(self, state: KontourState, speaker: str, text: str, now: float) -> None:
        key = self.kit.key_for(text)
        if key is not None:
            for p in self.active:
                if p != speaker:
                    self.guessers[p].heard(key)
        turn = state.turn
        if turn is None or turn.word is None or turn.drawer not in self.drawers:
            return
        kind = self.drawers[turn.drawer].gesture(key, turn.word)
        if kind is not None:
            self.gestures.append((now + self.level_of(turn.drawer).drawer.gesture_s, kind, text))

    # -- recognition -----------------------------------------------------------------------------
    def looks(self, busy: Collection[str] = ()) -> list[Look]:
        """The recognitions needed now (each asked once); those of a drawing in `busy` (still
        being read) wait for a later call."""
        out = [look for look in self.pending if look.subject not in busy]
        self.pending = [look for look in self.pending if look.subject in busy]
        return out

    def seen(self, look: Look, probs: dict[str, float] | None, now: float) -> None:
        """The probabilities for `look` (None: the drawing could not be read); stale ones are dropped."""
        if probs is None or look.ticket != (self.turn_number, self.seq):
            return
        for p in self.active:
            self.guessers[p].observe(probs, now, strokes=len(look.drawing))


# ------------------------------------------------------------------------------------------------
# Pictomania


BET_PAUSE_S = (0.4, 1.2)  # seconds between two AI bets: players who read one drawing do not all bet at once


class PictomaniaDriver:
    """The AI players of a Pictomania game: each draws its word and bets on the others' drawings.

    A person's drawing counts as finished `human_done_after_s` after their last stroke (or when
    they take a token). With `next_round_s` set (the simulator), the first AI starts the next
    round that long after a round is scored; the service leaves that to the person."""

    def __init__(
        self,
        rules: PictomaniaRules,
        ais: Sequence[str],
        level: AILevel,
        kit: AIKit,
        seed: int | str,
        state: PictomaniaState,
        labels: frozenset[str] | None = None,
        human_done_after_s: float = 6.0,
        next_round_s: float | None = None,
        joint: bool = True,
        levels: Mapping[str, AILevel] | None = None,
    ) -> None:
        """`level`: every AI player's, but those `levels` names (AI seat -> its own level)."""
        self.rules, self.ais, self.level, self.kit, self.seed = rules, list(ais), level, kit, seed
        self.levels = dict(levels or {})
        self.labels, self.joint = labels, joint
        self.human_done_after_s, self.next_round_s = human_done_after_s, next_round_s
        self.used: dict[str, set[int]] = {}  # drawings met this game, shared by every AI drawer
        self.plans: dict[str, list[TimedStroke]] = {}
        self.drawn: dict[str, int] = {}
        self.brains: dict[str, PictomaniaGuesser] = {}
        self.last_stroke: dict[str, float] = {}
        self.seq: dict[str, int] = {}
        self.pending: dict[str, tuple[tuple[int, int], tuple[Any, ...]]] = {}  # ticket, polylines
        self.candidates: tuple[str, ...] = ()
        self.converted = StrokeCache()
        self.round_number = 0
        self.scored_at: float | None = None
        self.quiet_until = 0.0  # no AI bets before this: one bet, then a pause (never two at once)
        self.pauses = seeded(seed, "bet pauses")
        self._new_round(state, state.round.started_at)

    def level_of(self, p: str) -> AILevel:
        """The level AI player `p` plays at."""
        return self.levels.get(p, self.level)

    def _new_round(self, state: PictomaniaState, now: float) -> None:
        rnd = state.round
        words = {w for card in rnd.cards for w in card.words}
        self.candidates = tuple(sorted(words & self.labels if self.labels is not None else words))
        self.round_number, self.scored_at = rnd.number, None
        self.last_stroke, self.seq, self.pending = {}, {}, {}
        self.converted.clear()
        self.delay = {p: 0.0 for p in self.ais}  # time spent betting while drawing
        self.ready_since: dict[str, float] = {}  # when it first had nothing left to do
        for p in self.ais:
            self._seat(p, state, now, draw=True)

    def _seat(self, p: str, state: PictomaniaState, now: float, draw: bool) -> None:
        """AI player `p`'s plan (``draw``: its drawing of this round) and guesser for the round."""
        rnd, players = state.round, state.players
        key = rnd.word(p)
        drawer = AIDrawer(self.level_of(p).drawer, seeded(self.seed, p, "draw", rnd.number),
                          self.kit.drawings, used=self.used)
        self.plans[p] = centered(drawer.plan(key, now)) if draw and key and drawer.can_draw(key) else []
        self.drawn[p] = 0
        self.delay[p] = 0.0
        secret = rnd.secrets[p]
        self.brains[p] = PictomaniaGuesser(
            level=self.level_of(p).pictomania_guesser,
            rng=seeded(self.seed, p, "guess", rnd.number),
            cards=[list(card.words) for card in rnd.cards],
            my_symbol=secret.symbol,
            my_number=secret.number,
            opponents=[o for o in players if o != p],
            tokens=self.rules.config.tokens(len(players)),
            joint=self.joint,
        )

    # -- a person's seat -------------------------------------------------------------------------
    def adopt(self, p: str, state: PictomaniaState, now: float) -> None:
        """Play person `p`'s seat from now on (they left a room): draw their word if their drawing
        is still empty, bet on the others, take a token; the next rounds as any AI player."""
        if p in self.ais:
            return
        self.ais.append(p)
        rnd = state.round
        self._seat(p, state, now, draw=not rnd.drawings.get(p))
        for target, stack in rnd.stacks.items():
            for card in stack:
                if card.guesser == p:
                    self.brains[p].committed[target] = card.number
        if state.phase == "playing":
            for other in state.players:
                if other != p and rnd.drawings.get(other):
                    self.seq[other] = self.seq.get(other, 0) + 1
                    self.pending[other] = ((self.round_number, self.seq[other]), rnd.drawings[other])

    def release(self, p: str, state: PictomaniaState) -> None:
        """Give `p`'s seat back to its person (an AI played it while they were away)."""
        if p not in self.ais:
            return
        self.ais.remove(p)
        for table in (self.plans, self.drawn, self.brains, self.delay, self.ready_since):
            table.pop(p, None)

    # -- decisions -------------------------------------------------------------------------------
    def step(self, table: Table, now: float) -> None:
        """Make every AI move due at `now` through `table.apply`."""
        st: PictomaniaState = table.state
        if st.phase == "scored" and self.next_round_s is not None and self.ais:
            if self.scored_at is not None and now >= self.scored_at + self.next_round_s:
                table.apply(NextRound(player=self.ais[0]))
            return
        if st.phase != "playing":
            return
        if now >= st.round.deadline:
            table.apply(Tick())
            return
        for p in self.ais:
            self._draw(table, p, now)
        for p in self.ais:
            st = table.state
            if st.phase != "playing" or p in st.round.done:
                continue
            states = self._opponents(st, p, now)
            commit = self.brains[p].decide(now, states) if now >= self.quiet_until else None
            own_done = self.drawn[p] >= len(self.plans[p])
            if commit is not None:
                table.apply(PlaceGuess(player=p, target=commit.opponent, number=commit.number))
                self.quiet_until = now + self.pauses.uniform(*BET_PAUSE_S)
                if not own_done:  # one hand: the drawing waits while it bets
                    self.delay[p] += self.level_of(p).pictomania_guesser.bet_s
            if not own_done or table.state.phase != "playing" or not self.brains[p].finished(now, states):
                self.ready_since.pop(p, None)
                continue
            since = self.ready_since.setdefault(p, now)
            if now - since >= self.level_of(p).pictomania_guesser.done_s:  # a last look, then the token
                table.apply(Done(player=p))

    def _draw(self, table: Table, p: str, now: float) -> None:
        plan, delay = self.plans[p], self.delay[p]
        while self.drawn[p] < len(plan) and plan[self.drawn[p]].end + delay <= now:
            if p not in table.state.round.done:
                table.apply(PictoStroke(player=p, points=plan[self.drawn[p]].points))
            self.drawn[p] += 1

    def drawing_done(self, state: PictomaniaState, p: str, now: float) -> bool:
        """Whether `p` has stopped drawing (as the AI players see it)."""
        if p in state.round.done:
            return True
        if p in self.plans:
            return self.drawn[p] >= len(self.plans[p])
        last = self.last_stroke.get(p)
        return last is not None and now - last >= self.human_done_after_s

    def _opponents(self, state: PictomaniaState, p: str, now: float) -> dict[str, OpponentState]:
        rnd = state.round
        return {
            o: OpponentState(stack=len(rnd.stacks[o]), drawing_done=self.drawing_done(state, o, now))
            for o in state.players
            if o != p
        }

    # -- what happened ---------------------------------------------------------------------------
    def on_events(self, state: PictomaniaState, events: Sequence[Event], now: float) -> None:
        """Every event of the game (the state is the one after them)."""
        for e in events:
            if e.kind == "round_started" and e.number != self.round_number:
                self._new_round(state, now)
            elif e.kind == "stroke_drawn" and state.phase == "playing":
                self._reread(state, e.player, now)
            elif e.kind in ("stroke_undone", "drawing_cleared") and state.phase == "playing":
                for ai in self.ais:  # that reading is of a drawing that no longer exists
                    if ai != e.player:
                        self.brains[ai].forget(e.player)
                self._reread(state, e.player, now)
            elif e.kind == "round_ended":
                self.scored_at, self.pending = now, {}
                self.converted.clear()

    def resume(self, state: PictomaniaState, now: float) -> None:
        """Pick up a game replayed from its log (events fed to `on_events`, which also asked to
        read every drawing again): each AI goes on with its plan after the strokes it drew, and
        knows the guesses it placed."""
        rnd = state.round
        self.ready_since = {}
        for p in self.ais:
            plan = self.plans[p]
            self.drawn[p] = min(len(rnd.drawings.get(p, ())), len(plan))
            nxt = self.drawn[p]  # the next stroke comes after its own duration, not at once
            self.delay[p] = max(0.0, now - plan[nxt].start) if nxt < len(plan) else 0.0
            for target, stack in rnd.stacks.items():
                for card in stack:
                    if card.guesser == p:
                        self.brains[p].committed[target] = card.number

    def _reread(self, state: PictomaniaState, player: str, now: float) -> None:
        """`player`'s drawing changed: ask for a reading of its strokes as they are now (none
        for an empty drawing; any reading still on its way is stale)."""
        self.last_stroke[player] = now
        if not any(ai != player for ai in self.ais):
            return  # no AI player to look at it
        self.seq[player] = self.seq.get(player, 0) + 1
        polylines = state.round.drawings[player]
        if not polylines:
            self.pending.pop(player, None)
            return
        self.pending[player] = ((self.round_number, self.seq[player]), polylines)

    # -- recognition -----------------------------------------------------------------------------
    def looks(self, busy: Collection[str] = ()) -> list[Look]:
        """The recognitions needed now: the latest drawing of each player who drew since. A
        drawing in `busy` (still being read) waits for a later call, and is converted to the
        model's stroke format only when it is handed out."""
        out = []
        for subject in [p for p in self.pending if p not in busy]:
            ticket, polylines = self.pending.pop(subject)
            out.append(Look(subject, self.converted.convert(subject, polylines), self.candidates, ticket))
        return out

    def seen(self, look: Look, probs: dict[str, float] | None, now: float) -> None:
        """The probabilities for `look` (None: unreadable); stale ones are dropped."""
        number, seq = look.ticket
        if probs is None or number != self.round_number or seq < self.seq.get(look.subject, 0):
            return
        for ai in self.ais:
            if ai != look.subject:
                self.brains[ai].observe(look.subject, probs, now)
