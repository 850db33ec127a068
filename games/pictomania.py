"""Pictomania (CGE) rules engine: pure functions over an immutable `PictomaniaState`.

Usage::

    rules = PictomaniaRules(PictomaniaConfig.load())
    state, events = rules.setup(players=["ana", "bob", "cy"], deck=cards, seed=7)  # round 1 starts
    state, events = rules.apply(state, PictoStroke(player="ana", points=[(0, 0), (9, 4)]), 1.0)
    state, events = rules.apply(state, PlaceGuess(player="bob", target="ana", number=3), 2.0)
    state, events = rules.apply(state, Done(player="bob"), 3.0)       # takes the best bonus token
    ...                                                             # last token / timer: scoring
    state, events = rules.apply(state, NextRound(player="ana"), 60.0)

Cards are `PictoCard(level=1..4, words=(7 category keys))`, one side of a real card; the deck must
hold enough cards of each level for every round (`levels_per_round`). At setup the seed picks the
cards of every round; at each round start it deals every player a distinct symbol (card slot,
0-based index into `round.cards`) and a distinct number 1-7: player P draws
`round.cards[symbol].words[number - 1]`.

Phases (`PHASES`): ``playing`` (strokes, `Undo` / `Clear` of one's drawing, guesses, `Done`;
ends when the last bonus token is taken or the round timer runs out; scoring happens then) →
``scored`` (round results in `state.results`; `NextRound` starts the next one) → … →
``game_over`` after the last round.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from games.core import (
    TIME_EPS,
    AlreadyDone,
    AlreadyGuessed,
    BadSetup,
    Event,
    InvalidMove,
    Model,
    Move,
    NotAllowed,
    Phase,
    RuleError,
    RulesBase,
    Tick,
    TimeOver,
    TooManyStrokes,
    UnknownPlayer,
    load_config,
    rng,
)
from vocab.decks import DeckError, PictomaniaDeckCard, deal_table

EPS = TIME_EPS
Polyline = tuple[tuple[float, float], ...]


# --------------------------------------------------------------------------------------------
# Config and cards


class PictomaniaConfig(Model):
    """Pictomania constants, from `games/data/pictomania.yaml` (see the comments there)."""

    rounds: int
    cards_per_round: int
    words_per_card: int
    levels_per_round: tuple[int, ...]
    round_timer_s: float
    min_players: int
    max_players: int
    token_values: dict[int, tuple[int, ...]]
    unclaimed_penalty: Literal["all", "lowest"]
    max_strokes_per_round: int = Field(default=300, ge=1)  # strokes SUBMITTED (undone ones count)

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: Any) -> PictomaniaConfig:
        """The shipped config (or the YAML at `path`), with keyword overrides."""
        return load_config(cls, "pictomania.yaml", path, **overrides)

    def tokens(self, n_players: int) -> tuple[int, ...]:
        """Scoring (and bonus) token values for this player count, highest first."""
        return tuple(sorted(self.token_values[n_players], reverse=True))


class PictoCard(Model):
    """One side of a word card: 7 related words (category keys) numbered 1-7, its level, and the
    theme of the side when it comes from a real card."""

    level: int
    words: tuple[str, ...]
    theme: str = ""


class CardUsed(InvalidMove):
    """Pictomania: the guesser already placed their guessing card with this number."""

    code = "card_used"


class NothingToUndo(RuleError):
    """Pictomania: the player's drawing has no stroke to undo or clear."""

    code = "nothing_to_undo"


# --------------------------------------------------------------------------------------------
# Moves


class PictoStroke(Move):
    """A free-hand stroke on the player's own board."""

    kind: Literal["stroke"] = "stroke"
    player: str
    points: Polyline


class Undo(Move):
    """Remove the player's last stroke (`NothingToUndo` on an empty drawing)."""

    kind: Literal["undo"] = "undo"
    player: str


class Clear(Move):
    """Remove the player's whole drawing (`NothingToUndo` on an empty drawing)."""

    kind: Literal["clear"] = "clear"
    player: str


class PlaceGuess(Move):
    """`player` puts their guessing card `number` face down on `target`'s stack (irrevocable)."""

    kind: Literal["guess"] = "guess"
    player: str
    target: str
    number: int


class Done(Move):
    """The player is done: takes the highest remaining bonus token, then may not act again."""

    kind: Literal["done"] = "done"
    player: str


class NextRound(Move):
    """Start the next round once the previous one is scored (any player may send it)."""

    kind: Literal["next_round"] = "next_round"
    player: str


PictomaniaMove = Annotated[
    PictoStroke | Undo | Clear | PlaceGuess | Done | NextRound | Tick, Field(discriminator="kind")
]
_MOVE_ADAPTER: TypeAdapter[Any] = TypeAdapter(PictomaniaMove)


# --------------------------------------------------------------------------------------------
# State


class Secret(Model):
    """What a player draws this round: their symbol (card slot) and number (1-7)."""

    symbol: int
    number: int


class StackCard(Model):
    """A guessing card on a stack. `number` is None in views (face down) except the owner's."""

    guesser: str
    number: int | None
    at: float


class PictoRound(Model):
    """The round being played (or just scored)."""

    number: int
    level: int
    cards: tuple[PictoCard, ...]
    secrets: dict[str, Secret | None]  # None for other players in views
    started_at: float
    deadline: float
    drawings: dict[str, tuple[Polyline, ...]]
    stacks: dict[str, tuple[StackCard, ...]]  # drawer -> guesses in placement order
    bonus_left: tuple[int, ...]  # highest first
    bonus: dict[str, int] = {}  # player -> value of the bonus token taken
    done: tuple[str, ...] = ()  # in the order they finished
    ended_at: float | None = None
    submitted: dict[str, int] = {}  # strokes each player drew this round, undone ones included

    def word(self, player: str) -> str | None:
        """The word `player` draws (None when hidden)."""
        secret = self.secrets.get(player)
        if secret is None:
            return None
        return self.cards[secret.symbol].words[secret.number - 1]


class GuessOutcome(Model):
    guesser: str
    number: int
    correct: bool
    token: int | None  # value of the drawer's scoring token won


class RoundResult(Model):
    """The revealed, scored round (all figures per player id)."""

    number: int
    level: int
    secrets: dict[str, Secret]
    words: dict[str, str]
    outcomes: dict[str, tuple[GuessOutcome, ...]]  # drawer -> stack in placement order
    tokens_won: dict[str, tuple[int, ...]]  # scoring tokens won from others
    tokens_left: dict[str, tuple[int, ...]]  # own scoring tokens nobody won
    wrong_cards: dict[str, int]
    black_sheep: str | None
    bonus: dict[str, int]  # bonus token value taken (0: none)
    bonus_points: dict[str, int]  # +value, 0 (none / discarded), -value (black sheep)
    penalty: dict[str, int]  # subtracted for tokens not given away
    score: dict[str, int]
    reason: Literal["bonus_tokens", "time"]
    drawings: dict[str, tuple[Polyline, ...]] = {}  # every player's drawing as the round ended


class PictomaniaState(Model):
    """A whole Pictomania game. Immutable: every move returns a new state."""

    seed: int | str
    players: tuple[str, ...]
    round_cards: tuple[tuple[PictoCard, ...], ...]  # cards of every round; future ones hidden
    phase: str = "playing"
    round: PictoRound
    totals: dict[str, int]
    results: tuple[RoundResult, ...] = ()
    winners: tuple[str, ...] = ()
    clock: float = 0.0


PHASES: dict[str, Phase] = {
    p.name: p
    for p in (
        Phase(
            name="playing",
            moves=("stroke", "undo", "clear", "guess", "done", "tick"),
            description="everybody draws and guesses at once until the last bonus token or time",
        ),
        Phase(name="scored", moves=("next_round", "tick"), description="round revealed, scored"),
        Phase(name="game_over", moves=(), description="the game has ended"),
    )
}


# --------------------------------------------------------------------------------------------
# Events


class GameStarted(Event):
    kind: Literal["game_started"] = "game_started"
    players: tuple[str, ...]
    rounds: int


class RoundStarted(Event):
    kind: Literal["round_started"] = "round_started"
    number: int
    level: int
    cards: tuple[PictoCard, ...]
    at: float
    deadline: float
    bonus_tokens: tuple[int, ...]


class SecretDealt(Event):
    """Private to `player`."""

    kind: Literal["secret_dealt"] = "secret_dealt"
    player: str
    symbol: int
    number: int
    word: str


class StrokeDrawn(Event):
    kind: Literal["stroke_drawn"] = "stroke_drawn"
    player: str
    points: Polyline


class StrokeUndone(Event):
    """The player's last stroke was removed; `strokes_left` strokes remain."""

    kind: Literal["stroke_undone"] = "stroke_undone"
    player: str
    strokes_left: int


class DrawingCleared(Event):
    kind: Literal["drawing_cleared"] = "drawing_cleared"
    player: str


class GuessPlaced(Event):
    """Public: who put a face-down card on whose stack (not the number)."""

    kind: Literal["guess_placed"] = "guess_placed"
    guesser: str
    target: str
    position: int  # 0 = first card on that stack


class BonusTaken(Event):
    kind: Literal["bonus_taken"] = "bonus_taken"
    player: str
    value: int
    left: tuple[int, ...]


class RoundEnded(Event):
    kind: Literal["round_ended"] = "round_ended"
    number: int
    reason: Literal["bonus_tokens", "time"]
    at: float


class RoundScored(Event):
    kind: Literal["round_scored"] = "round_scored"
    result: RoundResult
    totals: dict[str, int]


class GameEnded(Event):
    kind: Literal["game_ended"] = "game_ended"
    winners: tuple[str, ...]
    totals: dict[str, int]


# --------------------------------------------------------------------------------------------
# Rules


class PictomaniaRules(RulesBase[PictomaniaState]):
    """Pictomania rules for one config."""

    phases = PHASES

    def __init__(self, config: PictomaniaConfig | None = None) -> None:
        self.config = config if config is not None else PictomaniaConfig.load()

    # -- setup --------------------------------------------------------------------------------

    def setup(
        self,
        players: Sequence[str],
        deck: Sequence[PictoCard | PictomaniaDeckCard | dict[str, Any]],
        seed: int | str,
        start_at: float = 0.0,
    ) -> tuple[PictomaniaState, list[Event]]:
        """A new game; round 1 starts at `start_at`. The seed lays every round's table from
        `deck` and deals symbols and numbers. `deck` is either real double-sided cards
        (`vocab.PictomaniaDeckCard`: whole cards, one side each, no word twice on a table) or
        single-sided `PictoCard`s (custom and synthetic decks, cut by level)."""
        cfg = self.config
        players = tuple(players)
        n = len(players)
        if not cfg.min_players <= n <= cfg.max_players:
            raise BadSetup(f"Pictomania needs {cfg.min_players}-{cfg.max_players} players, got {n}")
        if len(set(players)) != n or any(not p for p in players):
            raise BadSetup("player ids must be distinct and non-empty", players=list(players))
        if n > cfg.cards_per_round or n > cfg.words_per_card:
            raise BadSetup(f"{n} players need {n} distinct symbols and numbers")
        if n not in cfg.token_values or len(cfg.token_values[n]) != n - 1:
            raise BadSetup(f"token_values must give {n - 1} tokens for {n} players")
        if len(cfg.levels_per_round) != cfg.rounds:
            raise BadSetup("levels_per_round must list one level per round")
        if deck and all(isinstance(c, PictomaniaDeckCard) for c in deck):
            round_cards = self._deal_tables(list(deck), seed)  # type: ignore[arg-type]
        else:
            round_cards = self._cut_tables(deck, seed)
        round_, events = self._deal(seed, players, 1, tuple(round_cards[0]), start_at)
        state = PictomaniaState(
            seed=seed,
            players=players,
            round_cards=tuple(round_cards),
            round=round_,
            totals={p: 0 for p in players},
            clock=start_at,
        )
        return state, [GameStarted(players=players, rounds=cfg.rounds), *events]

    def _deal_tables(self, deck: list[PictomaniaDeckCard], seed: int | str) -> list[tuple[PictoCard, ...]]:
        """Real double-sided cards: every round lays `cards_per_round` whole cards of its level,
        one side each, no word twice (`vocab.deal_table`), preferring cards no earlier round
        showed (a level played twice may have too few fresh cards; then any card of the level)."""
        cfg = self.config
        if cfg.words_per_card != 7:
            raise BadSetup("real Pictomania cards list 7 words a side")
        used: set[int] = set()
        seen: set[tuple[str, ...]] = set()  # the sides laid so far: a card back is flipped
        tables = []
        for r, level in enumerate(cfg.levels_per_round, start=1):
            of_level = [c for c in deck if c.level == level]
            fresh = [c for c in of_level if c.id not in used]
            shown = [c for c in of_level if c.id in used]
            rng(seed, "reuse", r).shuffle(shown)
            sides = None
            for extra in range(len(shown) + 1):  # as few already-shown cards as possible
                if len(fresh) + extra < cfg.cards_per_round:
                    continue
                try:
                    pool = fresh + shown[:extra]
                    sides = deal_table(level, rng(seed, "table", r), n=cfg.cards_per_round, cards=pool,
                                       seen=seen)
                    break
                except DeckError:
                    continue
            if sides is None:
                raise BadSetup(
                    f"cannot lay {cfg.cards_per_round} level-{level} cards without a repeated word "
                    f"for round {r} ({len(of_level)} cards of that level)"
                )
            used |= {c.id for c in of_level for s in sides if s in c.sides}
            seen |= {tuple(s.words) for s in sides}
            tables.append(tuple(PictoCard(level=s.level, words=s.words, theme=s.theme) for s in sides))
        return tables

    def _cut_tables(
        self, deck: Sequence[PictoCard | dict[str, Any]], seed: int | str
    ) -> list[tuple[PictoCard, ...]]:
        """Single-sided cards (custom or synthetic decks): each round takes the next
        `cards_per_round` cards of its level from the seeded shuffle."""
        cfg = self.config
        cards = [c if isinstance(c, PictoCard) else PictoCard.model_validate(c) for c in deck]
        for card in cards:
            if len(card.words) != cfg.words_per_card:
                raise BadSetup(f"a card must list {cfg.words_per_card} words: {card.words}")
        rng(seed, "deck").shuffle(cards)
        by_level: dict[int, list[PictoCard]] = {}
        for card in cards:
            by_level.setdefault(card.level, []).append(card)
        round_cards = []
        for r, level in enumerate(cfg.levels_per_round, start=1):
            pile = by_level.get(level, [])
            if len(pile) < cfg.cards_per_round:
                raise BadSetup(
                    f"not enough level-{level} cards for round {r} "
                    f"(need {cfg.cards_per_round}, {len(pile)} left)"
                )
            round_cards.append(tuple(pile[: cfg.cards_per_round]))
            del pile[: cfg.cards_per_round]
        return round_cards

    def _deal(
        self,
        seed: int | str,
        players: tuple[str, ...],
        number: int,
        cards: tuple[PictoCard, ...],
        now: float,
    ) -> tuple[PictoRound, list[Event]]:
        cfg = self.config
        r = rng(seed, "deal", number)
        symbols = r.sample(range(len(cards)), len(players))
        numbers = r.sample(range(1, cfg.words_per_card + 1), len(players))
        secrets = {p: Secret(symbol=s, number=k) for p, s, k in zip(players, symbols, numbers, strict=True)}
        level = cfg.levels_per_round[number - 1]
        round_ = PictoRound(
            number=number,
            level=level,
            cards=cards,
            secrets=secrets,
            started_at=now,
            deadline=now + cfg.round_timer_s,
            drawings={p: () for p in players},
            stacks={p: () for p in players},
            bonus_left=cfg.tokens(len(players)),
        )
        events: list[Event] = [
            RoundStarted(
                number=number,
                level=level,
                cards=cards,
                at=now,
                deadline=round_.deadline,
                bonus_tokens=round_.bonus_left,
            )
        ]
        for p in players:
            s = secrets[p]
            events.append(
                SecretDealt(to=(p,), player=p, symbol=s.symbol, number=s.number, word=round_.word(p) or "")
            )
        return round_, events

    def parse_move(self, data: dict[str, Any] | Move) -> Move:
        """A move object from its `to_dict()` form (objects pass through)."""
        return data if isinstance(data, Move) else _MOVE_ADAPTER.validate_python(data)

    # -- time ---------------------------------------------------------------------------------

    def on_time(self, state: PictomaniaState, now: float) -> tuple[PictomaniaState, list[Event]]:
        """Scores the round if its timer ran out by `now` (used by `advance`)."""
        if state.phase == "playing" and now >= state.round.deadline - EPS:
            return self._end_round(state, state.round.deadline, "time")
        return state, []

    # -- moves (the check order is `RulesBase.apply`'s) ----------------------------------------

    def handlers(self) -> dict[str, Any]:
        return {
            "stroke": self._stroke,
            "undo": self._undo,
            "clear": self._clear,
            "guess": self._guess,
            "done": self._done,
            "next_round": self._next_round,
        }

    def time_over(self, state: PictomaniaState, move: Move, now: float) -> TimeOver | None:
        """Every move but `NextRound` (which closes a timed-out round first) is late after the
        round's deadline."""
        if state.phase == "playing" and move.kind != "next_round" and now >= state.round.deadline - EPS:
            return TimeOver(
                f"round {state.round.number} ended at {state.round.deadline:.3f} s; "
                f"'{move.kind}' came at {now:.3f} s",
                phase=state.phase,
            )
        return None

    def check_mover(self, state: PictomaniaState, move: Move) -> None:
        player = getattr(move, "player", "")
        if state.phase == "playing" and player in state.round.done:
            raise AlreadyDone(f"{player} took a bonus token and may take no further action", player=player)

    def _stroke(
        self, state: PictomaniaState, move: PictoStroke, now: float
    ) -> tuple[PictomaniaState, list[Event]]:
        if len(move.points) < 1:
            raise InvalidMove("a stroke needs at least one point")
        rnd = state.round
        submitted = rnd.submitted.get(move.player, 0)
        limit = self.config.max_strokes_per_round
        if submitted >= limit:  # undone / cleared strokes count: no redrawing without end
            raise TooManyStrokes(f"at most {limit} strokes a round (undone ones count)",
                                 player=move.player, limit=limit)
        drawings = dict(rnd.drawings)
        drawings[move.player] = drawings[move.player] + (tuple(move.points),)
        counts = {**rnd.submitted, move.player: submitted + 1}
        new = state.replace(round=rnd.replace(drawings=drawings, submitted=counts))
        return new, [StrokeDrawn(player=move.player, points=tuple(move.points))]

    def _undo(self, state: PictomaniaState, move: Undo, now: float) -> tuple[PictomaniaState, list[Event]]:
        rnd = state.round
        drawing = rnd.drawings[move.player]
        if not drawing:
            raise NothingToUndo(f"{move.player}'s drawing has no stroke to undo", player=move.player)
        drawings = {**rnd.drawings, move.player: drawing[:-1]}
        new = state.replace(round=rnd.replace(drawings=drawings))
        return new, [StrokeUndone(player=move.player, strokes_left=len(drawing) - 1)]

    def _clear(self, state: PictomaniaState, move: Clear, now: float) -> tuple[PictomaniaState, list[Event]]:
        rnd = state.round
        if not rnd.drawings[move.player]:
            raise NothingToUndo(f"{move.player}'s drawing is already empty", player=move.player)
        drawings = {**rnd.drawings, move.player: ()}
        return state.replace(round=rnd.replace(drawings=drawings)), [DrawingCleared(player=move.player)]

    def _guess(
        self, state: PictomaniaState, move: PlaceGuess, now: float
    ) -> tuple[PictomaniaState, list[Event]]:
        rnd = state.round
        if move.target not in state.players:
            raise UnknownPlayer(f"unknown player '{move.target}'", player=move.target)
        if move.target == move.player:
            raise NotAllowed("a player may not guess their own drawing", player=move.player)
        if not 1 <= move.number <= self.config.words_per_card:
            raise InvalidMove(
                f"guess number must be 1-{self.config.words_per_card}, got {move.number}",
                number=move.number,
            )
        stack = rnd.stacks[move.target]
        if any(c.guesser == move.player for c in stack):
            raise AlreadyGuessed(
                f"{move.player} already placed a guess on {move.target}'s stack "
                "(one guess per opponent, never changed)",
                player=move.player,
                target=move.target,
            )
        for drawer, cards in rnd.stacks.items():
            for c in cards:
                if c.guesser == move.player and c.number == move.number:
                    raise CardUsed(
                        f"{move.player} already used guessing card {move.number} (on {drawer}'s stack)",
                        player=move.player,
                        number=move.number,
                    )
        stacks = dict(rnd.stacks)
        stacks[move.target] = stack + (StackCard(guesser=move.player, number=move.number, at=now),)
        event = GuessPlaced(guesser=move.player, target=move.target, position=len(stack))
        return state.replace(round=rnd.replace(stacks=stacks)), [event]

    def _done(self, state: PictomaniaState, move: Done, now: float) -> tuple[PictomaniaState, list[Event]]:
        rnd = state.round
        value, left = rnd.bonus_left[0], rnd.bonus_left[1:]
        bonus = dict(rnd.bonus)
        bonus[move.player] = value
        rnd = rnd.replace(bonus_left=left, bonus=bonus, done=rnd.done + (move.player,))
        state = state.replace(round=rnd)
        events: list[Event] = [BonusTaken(player=move.player, value=value, left=left)]
        if not left:
            state, more = self._end_round(state, now, "bonus_tokens")
            events += more
        return state, events

    def _next_round(
        self, state: PictomaniaState, move: NextRound, now: float
    ) -> tuple[PictomaniaState, list[Event]]:
        number = state.round.number + 1
        round_, events = self._deal(state.seed, state.players, number, state.round_cards[number - 1], now)
        return state.replace(round=round_, phase="playing"), events

    # -- resolution and scoring -------------------------------------------------------------

    def score_round(self, players: Sequence[str], rnd: PictoRound, reason: str) -> RoundResult:
        """Reveal and score a finished round (RULES.md, "Resolution" and "Round score")."""
        cfg = self.config
        tokens = cfg.tokens(len(players))
        secrets = {p: s for p, s in rnd.secrets.items() if s is not None}
        if set(secrets) != set(players):
            raise ValueError("scoring needs every player's secret (not a view)")
        won: dict[str, list[int]] = {p: [] for p in players}
        wrong = {p: 0 for p in players}
        outcomes: dict[str, tuple[GuessOutcome, ...]] = {}
        left: dict[str, tuple[int, ...]] = {}
        for drawer in players:
            remaining = list(tokens)
            stack_out = []
            for card in rnd.stacks[drawer]:
                assert card.number is not None
                correct = card.number == secrets[drawer].number
                token = remaining.pop(0) if correct else None
                if correct:
                    won[card.guesser].append(token)  # type: ignore[arg-type]
                else:
                    wrong[card.guesser] += 1
                stack_out.append(
                    GuessOutcome(guesser=card.guesser, number=card.number, correct=correct, token=token)
                )
            outcomes[drawer] = tuple(stack_out)
            left[drawer] = tuple(remaining)
        most = max(wrong.values())
        worst = [p for p in players if wrong[p] == most]
        black_sheep = worst[0] if most > 0 and len(worst) == 1 else None
        bonus = {p: rnd.bonus.get(p, 0) for p in players}
        bonus_points: dict[str, int] = {}
        penalty: dict[str, int] = {}
        score: dict[str, int] = {}
        for p in players:
            guessed = any(o.correct for o in outcomes[p])
            if not guessed:  # nobody guessed your word: the token is discarded
                bonus_points[p] = 0
            elif p == black_sheep:
                bonus_points[p] = -bonus[p]
            else:
                bonus_points[p] = bonus[p]
            if cfg.unclaimed_penalty == "all":
                penalty[p] = sum(left[p])
            else:
                penalty[p] = min(left[p], default=0)
            score[p] = bonus_points[p] + sum(won[p]) - penalty[p]
        return RoundResult(
            number=rnd.number,
            level=rnd.level,
            secrets=secrets,
            words={p: rnd.word(p) or "" for p in players},
            outcomes=outcomes,
            tokens_won={p: tuple(v) for p, v in won.items()},
            tokens_left=left,
            wrong_cards=wrong,
            black_sheep=black_sheep,
            bonus=bonus,
            bonus_points=bonus_points,
            penalty=penalty,
            score=score,
            reason=reason,  # type: ignore[arg-type]
            drawings=dict(rnd.drawings),
        )

    def _end_round(
        self, state: PictomaniaState, at: float, reason: Literal["bonus_tokens", "time"]
    ) -> tuple[PictomaniaState, list[Event]]:
        rnd = state.round.replace(ended_at=at)
        result = self.score_round(state.players, rnd, reason)
        totals = {p: state.totals[p] + result.score[p] for p in state.players}
        events: list[Event] = [
            RoundEnded(number=rnd.number, reason=reason, at=at),
            RoundScored(result=result, totals=totals),
        ]
        state = state.replace(round=rnd, totals=totals, results=state.results + (result,), phase="scored")
        if rnd.number >= self.config.rounds:
            top = max(totals.values())
            winners = tuple(p for p in state.players if totals[p] == top)
            events.append(GameEnded(winners=winners, totals=totals))
            state = state.replace(phase="game_over", winners=winners)
        return state, events

    # -- views --------------------------------------------------------------------------------

    def view(self, state: PictomaniaState, player: str) -> PictomaniaState:
        """What `player` may see: their own symbol and number only, the numbers on stacks only
        for their own guessing cards (all once the round is scored), the current round's cards
        only, no seed. Past rounds' results are public."""
        rnd = state.round
        if state.phase == "playing":
            secrets = {p: (s if p == player else None) for p, s in rnd.secrets.items()}
            stacks = {
                d: tuple(c if c.guesser == player else c.replace(number=None) for c in cards)
                for d, cards in rnd.stacks.items()
            }
            rnd = rnd.replace(secrets=secrets, stacks=stacks)
        visible = tuple(cards if i < rnd.number else () for i, cards in enumerate(state.round_cards))
        return state.replace(round=rnd, round_cards=visible, seed="hidden")


__all__ = [
    "PHASES",
    "BonusTaken",
    "CardUsed",
    "Clear",
    "Done",
    "DrawingCleared",
    "GameEnded",
    "GameStarted",
    "GuessOutcome",
    "GuessPlaced",
    "NextRound",
    "NothingToUndo",
    "TooManyStrokes",
    "PictoCard",
    "PictoRound",
    "PictoStroke",
    "PictomaniaConfig",
    "PictomaniaMove",
    "PictomaniaRules",
    "PictomaniaState",
    "PlaceGuess",
    "RoundEnded",
    "RoundResult",
    "RoundScored",
    "RoundStarted",
    "Secret",
    "SecretDealt",
    "StackCard",
    "StrokeDrawn",
    "StrokeUndone",
    "Undo",
]
