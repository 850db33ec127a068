"""Kontour (Gigamic) rules engine: pure functions over an immutable `KontourState`.

Usage::

    judge = lambda key, text: vocab.match(key, text).accepted   # the French answer matcher
    rules = KontourRules(KontourConfig.load(), judge=judge)
    state, events = rules.setup(players=["ana", "bob", "cy"], deck=cards, seed=42)
    state, events = rules.apply(state, DrawCard(player="ana"), now=0.0)       # timer starts
    state, events = rules.apply(state, ChooseWord(player="ana", color="orange"), now=1.0)
    line = Stroke(player="ana", points=[(0, 0), (50, 2), (100, 0)])  # straightened
    state, events = rules.apply(state, line, now=2.0)
    state, events = rules.apply(state, Guess(player="bob", text="un chat"), now=5.0)
    state, events = rules.advance(state, now=31.0)                          # or apply(Tick())

Words are category keys (Quick, Draw! names such as "cat"); the injected `judge(key, text)` says
whether a guess is an accepted answer. Cards are `KontourCard(top=WordPair(blue, orange),
bottom=WordPair(...))`; the table plays one half for the whole game.

Phases (`PHASES`): ``draw`` (the drawer takes the top card: the timer starts) → ``choose``
(blue or orange) → ``drawing`` (strokes and gestures by the drawer, guesses by the others, until
the timer ends, or the tie window after the first accepted answer closes) → ``draw`` for the next
drawer (to the left, i.e. next in `players`) … → ``game_over``. A tiebreak turn is an ordinary turn
with `state.tied` set: only the tied players may guess, and the first accepted answer wins.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from games.core import (
    TIME_EPS,
    AlreadyFound,
    BadSetup,
    Event,
    InvalidMove,
    Model,
    Move,
    NotAllowed,
    NotYourTurn,
    Phase,
    RulesBase,
    Tick,
    TimeOver,
    TooManyStrokes,
    UnknownPlayer,
    load_config,
    rng,
)
from games.geometry import GeometryConfig, Segment, find_extension, merge, straighten

Color = Literal["blue", "orange"]
Half = Literal["top", "bottom"]
Judge = Callable[[str, str], bool]
EPS = TIME_EPS


# --------------------------------------------------------------------------------------------
# Config and cards


class KontourConfig(Model):
    """Kontour constants, from `games/data/kontour.yaml` (see the comments there)."""

    timer_s: float
    draw_card_s: float | None = None  # the draw phase's clock for a person drawer (None: none)
    max_strokes: int
    tie_window_s: float
    target_score: int
    finder_points: int
    drawer_points: dict[str, int]
    half: Half | None
    end_when_deck_empty: bool
    neutral_drawer: str
    min_players: int
    max_players: int
    gestures: tuple[str, ...]
    geometry: GeometryConfig

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: Any) -> KontourConfig:
        """The shipped config (or the YAML at `path`), with keyword overrides."""
        return load_config(cls, "kontour.yaml", path, **overrides)


class WordPair(Model):
    """One half of a card: an easy blue word and a harder orange word (category keys)."""

    blue: str
    orange: str

    def word(self, color: Color) -> str:
        return self.blue if color == "blue" else self.orange


class KontourCard(Model):
    """A Kontour card: a top half and a bottom half."""

    top: WordPair
    bottom: WordPair

    def half(self, half: Half) -> WordPair:
        return self.top if half == "top" else self.bottom


# --------------------------------------------------------------------------------------------
# Moves


class DrawCard(Move):
    """The drawer takes the top card; the timer starts now."""

    kind: Literal["draw_card"] = "draw_card"
    player: str


class ChooseWord(Move):
    """The drawer picks the blue (1 point) or orange (2 points) word of the card's half."""

    kind: Literal["choose_word"] = "choose_word"
    player: str
    color: Color


class Stroke(Move):
    """The drawer draws one stroke: a polyline that must be (nearly) straight."""

    kind: Literal["stroke"] = "stroke"
    player: str
    points: tuple[tuple[float, float], ...]


class Guess(Move):
    """A non-drawer says an answer aloud."""

    kind: Literal["guess"] = "guess"
    player: str
    text: str


class Gesture(Move):
    """The drawer signals that a guess is close ("proche") or off-topic ("hors_sujet")."""

    kind: Literal["gesture"] = "gesture"
    player: str
    gesture: str
    about: str | None = None  # the guess text it answers, if any


KontourMove = Annotated[DrawCard | ChooseWord | Stroke | Guess | Gesture | Tick, Field(discriminator="kind")]
_MOVE_ADAPTER: TypeAdapter[Any] = TypeAdapter(KontourMove)


# --------------------------------------------------------------------------------------------
# Events


class GameStarted(Event):
    kind: Literal["game_started"] = "game_started"
    players: tuple[str, ...]
    half: Half
    first_drawer: str
    target_score: int


class TurnStarted(Event):
    kind: Literal["turn_started"] = "turn_started"
    number: int
    drawer: str
    at: float
    deadline: float
    tiebreak: bool = False
    tied: tuple[str, ...] = ()


class CardDrawn(Event):
    """Private to the drawer: the two words of the played half."""

    kind: Literal["card_drawn"] = "card_drawn"
    drawer: str
    blue: str
    orange: str


class WordChosen(Event):
    """Private to the drawer."""

    kind: Literal["word_chosen"] = "word_chosen"
    drawer: str
    color: Color
    word: str


class DrawingStarted(Event):
    kind: Literal["drawing_started"] = "drawing_started"
    drawer: str
    color: Color


class StrokeAdded(Event):
    """A straightened stroke; `merged_into` is set when it extended an earlier line."""

    kind: Literal["stroke_added"] = "stroke_added"
    drawer: str
    segment: Segment
    index: int
    merged_into: int | None
    count: int  # strokes that count so far


class GuessMade(Event):
    kind: Literal["guess_made"] = "guess_made"
    player: str
    text: str
    at: float
    accepted: bool


class GestureMade(Event):
    kind: Literal["gesture_made"] = "gesture_made"
    drawer: str
    gesture: str
    about: str | None


class PointsScored(Event):
    kind: Literal["points_scored"] = "points_scored"
    player: str
    points: int
    reason: Literal["first_finder", "tie", "drawer"]
    total: int


class TurnEnded(Event):
    kind: Literal["turn_ended"] = "turn_ended"
    number: int
    drawer: str
    word: str | None
    color: Color | None
    finders: tuple[str, ...]
    reason: Literal["found", "time"]
    at: float


class TiebreakStarted(Event):
    kind: Literal["tiebreak_started"] = "tiebreak_started"
    tied: tuple[str, ...]
    drawer: str


class GameEnded(Event):
    kind: Literal["game_ended"] = "game_ended"
    winners: tuple[str, ...]
    scores: dict[str, int]
    reason: Literal["target", "deck_empty", "tiebreak"]


# --------------------------------------------------------------------------------------------
# State


class GuessRecord(Model):
    player: str
    text: str
    at: float
    accepted: bool


class KontourTurn(Model):
    """The turn in progress. `card`/`word` are None in other players' views."""

    number: int
    drawer: str
    card: WordPair | None
    started_at: float
    deadline: float
    tiebreak: bool = False
    color: Color | None = None
    word: str | None = None
    segments: tuple[Segment, ...] = ()
    strokes_submitted: int = 0
    guesses: tuple[GuessRecord, ...] = ()
    found_at: float | None = None
    finders: tuple[str, ...] = ()

    @property
    def strokes(self) -> int:
        """Strokes that count against the limit (extensions merged)."""
        return len(self.segments)

    def ends_at(self, tie_window_s: float) -> float:
        """When this turn closes: the timer, or the end of the tie window after a find."""
        if self.found_at is None:
            return self.deadline
        return min(self.deadline, self.found_at + tie_window_s)


class TurnSummary(Model):
    """A finished turn (kept in `state.history`, handy for statistics)."""

    number: int
    drawer: str
    word: str | None
    color: Color | None
    finders: tuple[str, ...]
    found_after_s: float | None
    strokes: int
    tiebreak: bool
    segments: tuple[Segment, ...] = ()  # the drawing as the turn ended


class KontourState(Model):
    """A whole Kontour game. Immutable: every move returns a new state."""

    seed: int | str
    players: tuple[str, ...]
    half: Half
    deck: tuple[KontourCard, ...]  # shuffled pile; emptied in views
    deck_pos: int = 0
    hidden_deck: int | None = None  # cards left, in views (where `deck` is hidden)
    reshuffles: int = 0
    scores: dict[str, int]
    phase: str = "draw"
    drawer: str
    turn: KontourTurn | None = None
    turns_played: int = 0
    tied: tuple[str, ...] = ()  # non-empty during tiebreak turns
    winners: tuple[str, ...] = ()
    clock: float = 0.0
    history: tuple[TurnSummary, ...] = ()

    @property
    def cards_left(self) -> int:
        if self.hidden_deck is not None:
            return self.hidden_deck
        return len(self.deck) - self.deck_pos


PHASES: dict[str, Phase] = {
    p.name: p
    for p in (
        Phase(name="draw", moves=("draw_card", "tick"), description="drawer takes the top card"),
        Phase(name="choose", moves=("choose_word", "tick"), description="blue or orange"),
        Phase(
            name="drawing",
            moves=("stroke", "gesture", "guess", "tick"),
            description="drawer draws straight lines, others guess, until the turn closes",
        ),
        Phase(name="game_over", moves=(), description="the game has ended"),
    )
}
TIMED_MOVES = frozenset({"choose_word", "stroke", "gesture", "guess"})


# --------------------------------------------------------------------------------------------
# Judges


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold().strip())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def exact_judge(key: str, text: str) -> bool:
    """A minimal judge: the guess equals the key, ignoring case, accents and spaces.
    The service injects the French answer matcher instead."""
    return _fold(key) == _fold(text)


# --------------------------------------------------------------------------------------------
# Rules


class KontourRules(RulesBase[KontourState]):
    """Kontour rules for one config and one answer judge (`judge(word_key, guess_text)`)."""

    phases = PHASES

    def __init__(self, config: KontourConfig | None = None, judge: Judge = exact_judge) -> None:
        self.config = config if config is not None else KontourConfig.load()
        self.judge = judge

    # -- setup --------------------------------------------------------------------------------

    def setup(
        self,
        players: Sequence[str],
        deck: Sequence[KontourCard | dict[str, Any]],
        seed: int | str,
        half: Half | None = None,
        first_drawer: str | None = None,
        start_at: float = 0.0,
    ) -> tuple[KontourState, list[Event]]:
        """A new game: `players` in seating order (each one's left neighbour is the next id),
        the deck (shuffled here with the seed), the half (argument, else config, else seed)."""
        cfg = self.config
        players = tuple(players)
        if not cfg.min_players <= len(players) <= cfg.max_players:
            raise BadSetup(f"Kontour needs {cfg.min_players}-{cfg.max_players} players, got {len(players)}")
        if len(set(players)) != len(players) or any(not p for p in players):
            raise BadSetup("player ids must be distinct and non-empty", players=list(players))
        if cfg.neutral_drawer in players:
            raise BadSetup(f"'{cfg.neutral_drawer}' is reserved for the neutral tiebreak drawer")
        cards = [c if isinstance(c, KontourCard) else KontourCard.model_validate(c) for c in deck]
        if not cards:
            raise BadSetup("the deck is empty")
        rng(seed, "deck").shuffle(cards)
        chosen = half or cfg.half or rng(seed, "half").choice(["top", "bottom"])
        first = first_drawer if first_drawer is not None else players[0]
        if first not in players:
            raise UnknownPlayer(f"unknown first drawer '{first}'", player=first)
        state = KontourState(
            seed=seed,
            players=players,
            half=chosen,
            deck=tuple(cards),
            scores={p: 0 for p in players},
            drawer=first,
            clock=start_at,
        )
        event = GameStarted(players=players, half=chosen, first_drawer=first, target_score=cfg.target_score)
        return state, [event]

    def parse_move(self, data: dict[str, Any] | Move) -> Move:
        """A move object from its `to_dict()` form (objects pass through)."""
        return data if isinstance(data, Move) else _MOVE_ADAPTER.validate_python(data)

    # -- time ---------------------------------------------------------------------------------

    def turn_over(self, state: KontourState, now: float) -> bool:
        """Whether the current turn is closed at `now` (timer out, or tie window over)."""
        turn = state.turn
        if turn is None:
            return False
        if now >= turn.deadline - EPS:
            return True
        return turn.found_at is not None and now - turn.found_at > self.config.tie_window_s + EPS

    def on_time(self, state: KontourState, now: float) -> tuple[KontourState, list[Event]]:
        """Ends the current turn if it has closed by `now` (used by `advance`)."""
        if state.turn is not None and self.turn_over(state, now):
            return self._end_turn(state)
        return state, []

    # -- moves (the check order is `RulesBase.apply`'s) ----------------------------------------

    def handlers(self) -> dict[str, Any]:
        return {
            "draw_card": self._draw_card,
            "choose_word": self._choose_word,
            "stroke": self._stroke,
            "guess": self._guess,
            "gesture": self._gesture,
        }

    def is_player(self, state: KontourState, player: str | None) -> bool:
        """The players, and the neutral drawer while it draws a tiebreak turn."""
        return player in state.players or player == self._current_drawer(state)

    def time_over(self, state: KontourState, move: Move, now: float) -> TimeOver | None:
        if move.kind in TIMED_MOVES and state.turn is not None and self.turn_over(state, now):
            return TimeOver(
                f"turn {state.turn.number} closed at "
                f"{state.turn.ends_at(self.config.tie_window_s):.3f} s; '{move.kind}' came at "
                f"{now:.3f} s",
                phase=state.phase,
            )
        return None

    def _current_drawer(self, state: KontourState) -> str:
        return state.turn.drawer if state.turn is not None else state.drawer

    def _require_drawer(self, state: KontourState, player: str, what: str) -> None:
        drawer = self._current_drawer(state)
        if player != drawer:
            raise NotYourTurn(f"only the drawer ({drawer}) may {what}", player=player, drawer=drawer)

    def _draw_card(self, state: KontourState, move: DrawCard, now: float) -> tuple[KontourState, list[Event]]:
        self._require_drawer(state, move.player, "draw the card")
        deck, pos, reshuffles = state.deck, state.deck_pos, state.reshuffles
        if pos >= len(deck):  # only reachable in a tiebreak, or with end_when_deck_empty off
            cards = list(deck)
            reshuffles += 1
            rng(state.seed, "reshuffle", reshuffles).shuffle(cards)
            deck, pos = tuple(cards), 0
        pair = deck[pos].half(state.half)
        number = len(state.history) + 1
        turn = KontourTurn(
            number=number,
            drawer=move.player,
            card=pair,
            started_at=now,
            deadline=now + self.config.timer_s,
            tiebreak=bool(state.tied),
        )
        new = state.replace(deck=deck, deck_pos=pos + 1, reshuffles=reshuffles, turn=turn, phase="choose")
        events: list[Event] = [
            TurnStarted(
                number=number,
                drawer=move.player,
                at=now,
                deadline=turn.deadline,
                tiebreak=turn.tiebreak,
                tied=state.tied,
            ),
            CardDrawn(to=(move.player,), drawer=move.player, blue=pair.blue, orange=pair.orange),
        ]
        return new, events

    def _choose_word(
        self, state: KontourState, move: ChooseWord, now: float
    ) -> tuple[KontourState, list[Event]]:
        self._require_drawer(state, move.player, "choose the word")
        turn = state.turn
        assert turn is not None and turn.card is not None
        word = turn.card.word(move.color)
        new = state.replace(turn=turn.replace(color=move.color, word=word), phase="drawing")
        return new, [
            WordChosen(to=(move.player,), drawer=move.player, color=move.color, word=word),
            DrawingStarted(drawer=move.player, color=move.color),
        ]

    def _stroke(self, state: KontourState, move: Stroke, now: float) -> tuple[KontourState, list[Event]]:
        self._require_drawer(state, move.player, "draw")
        turn = state.turn
        assert turn is not None
        segment = straighten(move.points, self.config.geometry)
        segments = list(turn.segments)
        target = find_extension(segments, segment, self.config.geometry)
        if target is not None:
            segments[target] = merge(segments[target], segment)
            index, shown = target, segments[target]
        else:
            if len(segments) >= self.config.max_strokes:
                raise TooManyStrokes(
                    f"the drawing already has {len(segments)} strokes (at most {self.config.max_strokes})",
                    limit=self.config.max_strokes,
                )
            segments.append(segment)
            index, shown = len(segments) - 1, segment
        new_turn = turn.replace(segments=tuple(segments), strokes_submitted=turn.strokes_submitted + 1)
        event = StrokeAdded(
            drawer=move.player,
            segment=shown,
            index=index,
            merged_into=target,
            count=len(segments),
        )
        return state.replace(turn=new_turn), [event]

    def _guess(self, state: KontourState, move: Guess, now: float) -> tuple[KontourState, list[Event]]:
        turn = state.turn
        assert turn is not None and turn.word is not None
        if move.player == turn.drawer:
            raise NotAllowed("the drawer may not guess", player=move.player)
        if state.tied and move.player not in state.tied:
            raise NotAllowed(
                "only the tied players may guess in the tiebreak turn",
                player=move.player,
                tied=list(state.tied),
            )
        if move.player in turn.finders:
            raise AlreadyFound(f"{move.player} already found the word", player=move.player)
        accepted = bool(self.judge(turn.word, move.text))
        record = GuessRecord(player=move.player, text=move.text, at=now, accepted=accepted)
        events: list[Event] = [GuessMade(player=move.player, text=move.text, at=now, accepted=accepted)]
        turn = turn.replace(guesses=turn.guesses + (record,))
        scores = dict(state.scores)
        if accepted:
            first = turn.found_at is None
            turn = turn.replace(
                finders=turn.finders + (move.player,), found_at=now if first else turn.found_at
            )
            if not turn.tiebreak:
                gained = [(move.player, self.config.finder_points, "first_finder" if first else "tie")]
                if first:
                    assert turn.color is not None
                    gained.append((turn.drawer, self.config.drawer_points[turn.color], "drawer"))
                for who, pts, reason in gained:
                    scores[who] += pts
                    events.append(PointsScored(player=who, points=pts, reason=reason, total=scores[who]))
        return state.replace(turn=turn, scores=scores), events

    def _gesture(self, state: KontourState, move: Gesture, now: float) -> tuple[KontourState, list[Event]]:
        self._require_drawer(state, move.player, "gesture")
        if move.gesture not in self.config.gestures:
            raise InvalidMove(
                f"unknown gesture '{move.gesture}' (allowed: {', '.join(self.config.gestures)})",
                gesture=move.gesture,
            )
        return state, [GestureMade(drawer=move.player, gesture=move.gesture, about=move.about)]

    # -- turn end, rotation, end of game ----------------------------------------------------

    def _end_turn(self, state: KontourState) -> tuple[KontourState, list[Event]]:
        turn = state.turn
        assert turn is not None
        at = turn.ends_at(self.config.tie_window_s)
        found = bool(turn.finders)
        summary = TurnSummary(
            number=turn.number,
            drawer=turn.drawer,
            word=turn.word,
            color=turn.color,
            finders=turn.finders,
            found_after_s=None if turn.found_at is None else turn.found_at - turn.started_at,
            strokes=turn.strokes,
            tiebreak=turn.tiebreak,
            segments=turn.segments,
        )
        events: list[Event] = [
            TurnEnded(
                number=turn.number,
                drawer=turn.drawer,
                word=turn.word,
                color=turn.color,
                finders=turn.finders,
                reason="found" if found else "time",
                at=at,
            )
        ]
        state = state.replace(turn=None, history=state.history + (summary,))
        if turn.tiebreak:
            if len(turn.finders) == 1:
                return self._finish(state, turn.finders, "tiebreak", events)
            tied = turn.finders if found else state.tied
            return self._start_tiebreak(state, tied, events)
        state = state.replace(turns_played=state.turns_played + 1)
        target = self.config.target_score
        reached = any(s >= target for s in state.scores.values())
        deck_empty = state.deck_pos >= len(state.deck) and self.config.end_when_deck_empty
        if reached or deck_empty:
            top = max(state.scores.values())
            leaders = tuple(p for p in state.players if state.scores[p] == top)
            reason = "target" if reached else "deck_empty"
            if len(leaders) == 1:
                return self._finish(state, leaders, reason, events)
            return self._start_tiebreak(state, leaders, events)
        nxt = state.players[(state.players.index(turn.drawer) + 1) % len(state.players)]
        return state.replace(drawer=nxt, phase="draw"), events

    def tiebreak_drawer(self, state: KontourState, tied: Sequence[str]) -> str:
        """Who draws a tiebreak turn: the lowest-scored non-tied player (first in seating
        order among equals), else the neutral drawer (config `neutral_drawer`, the AI)."""
        others = [p for p in state.players if p not in tied]
        if not others:
            return self.config.neutral_drawer
        return min(others, key=lambda p: (state.scores[p], state.players.index(p)))

    def _start_tiebreak(
        self, state: KontourState, tied: Sequence[str], events: list[Event]
    ) -> tuple[KontourState, list[Event]]:
        drawer = self.tiebreak_drawer(state, tied)
        events.append(TiebreakStarted(tied=tuple(tied), drawer=drawer))
        return state.replace(tied=tuple(tied), drawer=drawer, phase="draw"), events

    def _finish(
        self, state: KontourState, winners: Sequence[str], reason: str, events: list[Event]
    ) -> tuple[KontourState, list[Event]]:
        events.append(GameEnded(winners=tuple(winners), scores=dict(state.scores), reason=reason))
        return state.replace(winners=tuple(winners), phase="game_over"), events

    # -- views --------------------------------------------------------------------------------

    def view(self, state: KontourState, player: str) -> KontourState:
        """What `player` may see: the pile, the seed and (unless they draw) the card and word
        are hidden. Works for any id (a spectator sees what a guesser sees)."""
        turn = state.turn
        if turn is not None and player != turn.drawer:
            turn = turn.replace(card=None, word=None)
        return state.replace(deck=(), hidden_deck=state.cards_left, seed="hidden", turn=turn)


def time_left(state: KontourState, now: float) -> float:
    """Seconds left on the turn's timer (0 when no turn is running)."""
    if state.turn is None:
        return 0.0
    return max(0.0, state.turn.deadline - now)


__all__ = [
    "PHASES",
    "CardDrawn",
    "ChooseWord",
    "Color",
    "DrawCard",
    "DrawingStarted",
    "GameEnded",
    "GameStarted",
    "Gesture",
    "GestureMade",
    "Guess",
    "GuessMade",
    "GuessRecord",
    "Judge",
    "KontourCard",
    "KontourConfig",
    "KontourMove",
    "KontourRules",
    "KontourState",
    "KontourTurn",
    "PointsScored",
    "Stroke",
    "StrokeAdded",
    "TiebreakStarted",
    "TurnEnded",
    "TurnStarted",
    "TurnSummary",
    "WordChosen",
    "WordPair",
    "exact_judge",
    "time_left",
]
