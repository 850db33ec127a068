"""The small model every Griffon game engine shares: state, moves, events, phases, errors.

A game is plain data plus pure functions (boardgame.io style):

- **State** is an immutable pydantic model (`Model`, frozen). `state.to_dict()` gives JSON-ready
  data, `StateClass.from_dict(d)` rebuilds it.
- **Moves** are typed `Move` objects with a `kind` tag (`DrawCard`, `Stroke`, `Guess`, ...),
  plus the engine-independent `Tick` ("time passed").
- **Events** are typed `Event` objects with a `kind` tag. `event.to` is `None` for a public event,
  or the tuple of player ids allowed to see it (secrets such as a Kontour word go to the drawer
  only); `events_for(events, player)` filters them.
- **Rules** objects (`KontourRules`, `PictomaniaRules`) expose
  `setup(...) -> (state, events)`, `apply(state, move, now) -> (state, events)`,
  `advance(state, now) -> (state, events)` and `view(state, player) -> state`.
  `now` is a float number of seconds given by the caller (the engine never reads a clock) and
  must never go backwards. Randomness only comes from `rng(seed, purpose, counter)`, whose seed
  is stored in the state.
- A refused move raises a `RuleError` subclass with a stable `code` and a clear message; the state
  given to `apply` is never modified, so the caller just keeps it.
- `replay(rules, setup_args, log)` replays a move log (`LoggedMove(now, move)`) from the setup and
  reproduces a game exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, Self, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict

__all__ = [
    "AlreadyDone",
    "AlreadyFound",
    "AlreadyGuessed",
    "BadSetup",
    "ClockWentBack",
    "Event",
    "GameOver",
    "InvalidMove",
    "LoggedMove",
    "Model",
    "Move",
    "NotAStraightLine",
    "NotAllowed",
    "NotYourTurn",
    "Phase",
    "RuleError",
    "Rules",
    "RulesBase",
    "Tick",
    "TimeOver",
    "TooManyStrokes",
    "UnknownPlayer",
    "WrongPhase",
    "DATA_DIR",
    "check_phase",
    "load_config",
    "events_for",
    "replay",
    "rng",
]


class Model(BaseModel):
    """Immutable, JSON-serialisable base of every state, move, event and config object."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready plain data (tuples become lists)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild an object from `to_dict()` output (validated)."""
        return cls.model_validate(data)

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (the original is untouched)."""
        return self.model_copy(update=changes)


class Move(Model):
    """A player's action. Subclasses set a literal `kind` and usually a `player` id."""

    kind: str


class Tick(Move):
    """No action: only lets time pass (ends turns or rounds whose timer ran out)."""

    kind: Literal["tick"] = "tick"


class Event(Model):
    """Something that happened. `to=None`: everybody may see it; else only those player ids."""

    kind: str
    to: tuple[str, ...] | None = None


def events_for(events: Iterable[Event], player: str) -> list[Event]:
    """The events `player` may see (public ones and those addressed to them)."""
    return [e for e in events if e.to is None or player in e.to]


class LoggedMove(Model):
    """One entry of a move log: a move and the time (seconds) at which it was applied."""

    now: float
    move: Any  # a concrete Move; engines parse it with their own move union


# --------------------------------------------------------------------------------------------
# Configuration

DATA_DIR = Path(__file__).parent / "data"
C = TypeVar("C", bound=BaseModel)


def _deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(cls: type[C], filename: str, path: str | Path | None = None, **overrides: Any) -> C:
    """Load a typed config from `games/data/<filename>` (or `path`), with keyword overrides
    merged in (nested dicts merge key by key). Unknown keys are refused."""
    source = Path(path) if path is not None else DATA_DIR / filename
    data = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    return cls.model_validate(_deep_merge(data, overrides))


# --------------------------------------------------------------------------------------------
# Phases


class Phase(Model):
    """A phase of a game, declared as data: its name and the move kinds allowed in it."""

    name: str
    moves: tuple[str, ...]
    description: str = ""


def check_phase(phases: dict[str, Phase], phase: str, move_kind: str) -> None:
    """Raise `WrongPhase` if a move of `move_kind` is not allowed in `phase`."""
    declared = phases[phase]
    if move_kind not in declared.moves:
        raise WrongPhase(phase, move_kind, declared.moves)


# --------------------------------------------------------------------------------------------
# Errors


class RuleError(Exception):
    """A move the rules refuse. `code` is stable (for clients); the message is for humans."""

    code: ClassVar[str] = "rule_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready error frame: code, message and details."""
        return {"code": self.code, "message": self.message, **self.details}


class WrongPhase(RuleError):
    """The move is not allowed in the current phase (the message names the phase)."""

    code = "wrong_phase"

    def __init__(self, phase: str, move_kind: str, allowed: Sequence[str] = ()) -> None:
        allowed_txt = ", ".join(allowed) if allowed else "none"
        super().__init__(
            f"move '{move_kind}' is not allowed in phase '{phase}' (allowed: {allowed_txt})",
            phase=phase,
            move=move_kind,
            allowed=list(allowed),
        )
        self.phase = phase


class NotYourTurn(RuleError):
    """Only another player (e.g. the drawer) may make this move now."""

    code = "not_your_turn"


class NotAllowed(RuleError):
    """This player may not make this move (e.g. the drawer guessing, a non-tied player in a
    tiebreak, guessing one's own drawing)."""

    code = "not_allowed"


class UnknownPlayer(RuleError):
    """The player id is not part of this game."""

    code = "unknown_player"


class TooManyStrokes(RuleError):
    """Kontour: the drawing already has the maximum number of strokes; Pictomania: the player
    already drew ``max_strokes_per_round`` strokes this round (undone ones included)."""

    code = "too_many_strokes"


class NotAStraightLine(RuleError):
    """Kontour: the submitted stroke is a curve (or too short) and cannot be straightened."""

    code = "not_a_straight_line"


class AlreadyGuessed(RuleError):
    """Pictomania: this player already placed a guess on that opponent's stack."""

    code = "already_guessed"


class AlreadyFound(RuleError):
    """Kontour: this player already gave an accepted answer this turn."""

    code = "already_found"


class AlreadyDone(RuleError):
    """Pictomania: this player took a bonus token and may take no further action."""

    code = "already_done"


class TimeOver(RuleError):
    """The timer of the turn / round ran out (or the turn was closed) before this move."""

    code = "time_over"


class GameOver(RuleError):
    """The game has ended; no move is accepted any more."""

    code = "game_over"


class ClockWentBack(RuleError):
    """`now` is earlier than the last time the game saw."""

    code = "clock_went_back"


class InvalidMove(RuleError):
    """The move is malformed (unknown color, number out of range, ...)."""

    code = "invalid_move"


class BadSetup(RuleError):
    """The setup arguments are inconsistent (player count, deck, duplicated ids, ...)."""

    code = "bad_setup"


TIME_EPS = 1e-9  # float slack on time comparisons (10.3 - 10.0 > 0.3 in binary floats)


def check_move_time(clock: float, now: float, phase: str, winners: Sequence[str]) -> None:
    """The checks every engine makes before a move: time never goes back; no move after the end."""
    if now < clock - TIME_EPS:
        raise ClockWentBack(f"time {now} is before the game's clock {clock}")
    if phase == "game_over":
        raise GameOver("the game is over", winners=list(winners))


# --------------------------------------------------------------------------------------------
# Randomness and replay


def rng(seed: int | str, purpose: str, counter: int = 0) -> random.Random:
    """A private random generator derived from the game's seed, a purpose and a counter.

    String seeds are hashed with SHA-512 by `random.Random`, so this is identical across runs,
    processes and machines (it does not depend on PYTHONHASHSEED).
    """
    return random.Random(f"{seed}:{purpose}:{counter}")


S = TypeVar("S", bound=Model)
Handler = Callable[[Any, Any, float], tuple[Any, list[Event]]]


class RulesBase(Generic[S]):
    """The move skeleton both engines share, so the order of the pre-move checks lives once.

    `apply(state, move, now)`: a `Tick` only lets time pass; otherwise (1) the clock may not go
    back and a finished game takes no move, (2) the player must belong to the game, (3) a timed
    move after its turn / round closed is `TimeOver`, (4) time passes (`advance`), (5) the game may
    have ended meanwhile, (6) the move must be allowed in the phase, (7) engine-specific checks on
    the mover (`check_mover`), (8) the handler of the move's kind runs; the clock is then `now`.
    Engines set `phases` and `handlers` and override the hooks below.
    """

    phases: ClassVar[dict[str, Phase]]

    def handlers(self) -> Mapping[str, Handler]:
        """Move kind -> handler ``(state, move, now) -> (state, events)``."""
        raise NotImplementedError

    def is_player(self, state: Any, player: str | None) -> bool:
        """Whether `player` may act in this game (default: one of ``state.players``)."""
        return player in state.players

    def time_over(self, state: Any, move: Move, now: float) -> RuleError | None:
        """The `TimeOver` error when `move` comes after its turn / round closed, else None."""
        return None

    def check_mover(self, state: Any, move: Move) -> None:
        """Engine checks once the phase allows the move (e.g. a player who is done)."""

    def on_time(self, state: Any, now: float) -> tuple[Any, list[Event]]:
        """Close what has run out by `now` (turn, round); the clock is set by `advance`."""
        return state, []

    def advance(self, state: S, now: float) -> tuple[S, list[Event]]:
        """Let time pass until `now` (timers run out); `ClockWentBack` if `now` is in the past."""
        if now < state.clock - TIME_EPS:  # type: ignore[attr-defined]
            raise ClockWentBack(f"time {now} is before the game's clock {state.clock}")  # type: ignore[attr-defined]
        state, events = self.on_time(state, now)
        return state.replace(clock=max(state.clock, now)), events  # type: ignore[attr-defined]

    def apply(self, state: S, move: Move, now: float) -> tuple[S, list[Event]]:
        """Apply one move at time `now`; returns the new state and the events, or raises a
        `RuleError` (the given state is unchanged). Check order: see the class docstring."""
        if isinstance(move, Tick):
            return self.advance(state, now)
        st: Any = state
        check_move_time(st.clock, now, st.phase, st.winners)
        player = getattr(move, "player", None)
        if not self.is_player(st, player):
            raise UnknownPlayer(f"unknown player '{player}'", player=player)
        late = self.time_over(st, move, now)
        if late is not None:
            raise late
        st, early = self.advance(st, now)
        if st.phase == "game_over":
            raise GameOver("the game is over", winners=list(st.winners))
        check_phase(self.phases, st.phase, move.kind)
        self.check_mover(st, move)
        st, events = self.handlers()[move.kind](st, move, now)
        return st.replace(clock=max(st.clock, now)), early + events


class Rules(Protocol, Generic[S]):
    """What every engine provides (see the module docstring)."""

    def setup(self, **setup_args: Any) -> tuple[S, list[Event]]: ...

    def apply(self, state: S, move: Move, now: float) -> tuple[S, list[Event]]: ...

    def advance(self, state: S, now: float) -> tuple[S, list[Event]]: ...

    def view(self, state: S, player: str) -> S: ...

    def parse_move(self, data: dict[str, Any] | Move) -> Move: ...


def replay(
    rules: Rules[S], setup_args: dict[str, Any], log: Sequence[LoggedMove | tuple[float, Any]]
) -> tuple[S, list[Event]]:
    """Rebuild a game from its setup arguments and move log; returns the final state and every
    event in order. Moves may be `Move` objects or their `to_dict()` form."""
    state, events = rules.setup(**setup_args)
    for entry in log:
        now, move = (entry.now, entry.move) if isinstance(entry, LoggedMove) else entry
        state, new_events = rules.apply(state, rules.parse_move(move), now)
        events.extend(new_events)
    return state, events
