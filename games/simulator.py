"""Headless AI-vs-AI games through the real rules engines, with figures on how the AI does.

The AI players are the same `games.ai.driver` drivers the service runs; the simulator only supplies
a fake clock (fixed ticks) and answers the drivers' recognition requests at once from a
`ProbabilitySource` (the real `model.Guesser` in the CLI, a fixed table in tests). Every move goes
through `KontourRules` / `PictomaniaRules`, which keep score. The same arguments always give the
same report.

A Kontour table may seat a scripted person instead of one AI (`person_line_s`): they draw the pack's
drawing of their word as straight lines at a fixed pace and never guess, and the report keeps only
their turns: how the AI guessers do against a person's drawing.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from games.ai.base import ProbabilitySource, ToFrench
from games.ai.drawer import AIDrawer
from games.ai.driver import AIKit, KontourDriver, PictomaniaDriver, centered, draw_line, seeded
from games.ai.levels import AILevel
from games.core import Event, Move
from games.kontour import ChooseWord, DrawCard, KontourCard, KontourConfig, KontourRules, KontourState
from games.pictomania import PictoCard, PictomaniaConfig, PictomaniaRules
from games.words import DeckSetupError, synthetic_kontour_deck, synthetic_pictomania_deck
from vocab.decks import PictomaniaDeckCard

KONTOUR_TICK_S = 0.1
PICTOMANIA_TICK_S = 0.25
BETWEEN_TURNS_S = 3.0
NEXT_ROUND_S = 1.0
MAX_KONTOUR_TURNS = 80  # safety net: a game to 10 points never needs that many
PERSON = "personne"  # the scripted person's seat at a Kontour table
MAX_PERSON_LINE_S = 30.0  # a line slower than the whole turn would draw nothing
MAX_TURN_S = 300.0  # safety net: a Kontour turn (card, choice, timer, tie-break) never lasts that long


class SimulationError(ValueError):
    """Bad simulation arguments (too few drawable words, bad player count...)."""


def _look(
    source: ProbabilitySource, drawing: list, candidates: Sequence[str]
) -> dict[str, float] | None:
    """The source's probabilities, or None for a drawing it cannot read yet (a first dot...)."""
    if not drawing or not candidates:
        return None
    try:
        return source.probabilities(drawing, candidates)
    except ValueError:  # model.DrawingError is a ValueError
        return None


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def french_judge(to_french: ToFrench) -> Callable[[str, str], bool]:
    """A judge for AI guesses: the French word said equals the word's French (case-insensitive).
    The service uses the real answer matcher; AI players only ever say exact card words."""
    return lambda key, text: _fold(to_french(key)) == _fold(text)


@dataclass(frozen=True)
class _Sim:
    """One simulated game's fixed parts: the rules, the recognizer, the AI kit and level, the
    players, the game's seed."""

    rules: Any
    source: ProbabilitySource
    kit: AIKit
    level: AILevel
    players: list[str]
    seed: str


class _SimTable:
    """The simulator's side of a driver: the state, a fake clock, and every event kept."""

    def __init__(
        self, rules: Any, state: Any, driver: Any, person: ScriptedKontourPerson | None = None
    ) -> None:
        self.rules, self.state, self.driver, self.person = rules, state, driver, person
        self.now = 0.0
        self.events: list[tuple[float, Event]] = []

    def apply(self, move: Move) -> list[Event]:
        self.state, events = self.rules.apply(self.state, move, self.now)
        self.events.extend((self.now, e) for e in events)
        self.driver.on_events(self.state, events, self.now)
        return events

    def tick(self, source: ProbabilitySource, dt: float) -> None:
        """One tick of the fake clock: the AI moves, then the recognitions they asked for."""
        self.now = round(self.now + dt, 6)
        self.driver.step(self, self.now)
        if self.person is not None:
            self.person.step(self, self.now)
        for look in self.driver.looks():
            self.driver.seen(look, _look(source, look.drawing, look.candidates), self.now)


# --------------------------------------------------------------------------------------------
# Kontour


class ScriptedKontourPerson:
    """A person at a simulated Kontour table, scripted: when it is their turn they take the card and
    choose at once (the blue word when the pack can draw it, else the orange one), then draw the
    pack's drawing of that word as straight lines (the AI drawer's lines, `games.ai.drawer`), one
    every `line_s` seconds, the first `line_s` after the choice; they never guess."""

    def __init__(
        self, rules: KontourRules, kit: AIKit, level: AILevel, seed: int | str, line_s: float
    ) -> None:
        if not 0 < line_s <= MAX_PERSON_LINE_S:
            raise SimulationError(f"a person's line takes more than 0 and at most {MAX_PERSON_LINE_S:g} s, "
                                  f"not {line_s}")
        self.rules, self.line_s = rules, line_s
        self.hand = AIDrawer(level.drawer, seeded(seed, PERSON, "draw"), kit.drawings, kit.related,
                             kit.straight_lines, rules.config.max_strokes)
        self.lines: list[tuple[tuple[float, float], ...]] = []
        self.drawn = 0
        self.chosen_at = 0.0

    def step(self, table: _SimTable, now: float) -> None:
        """The person's move due at `now`, if it is their turn."""
        st: KontourState = table.state
        drawer = st.turn.drawer if st.turn is not None else st.drawer
        if st.phase == "game_over" or drawer != PERSON:
            return
        if st.turn is not None and self.rules.turn_over(st, now):
            return  # the driver ends the turn
        if st.phase == "draw":
            table.apply(DrawCard(player=PERSON))
        elif st.phase == "choose":
            card = st.turn.card
            orange = self.hand.can_draw(card.orange) and not self.hand.can_draw(card.blue)
            color = "orange" if orange else "blue"
            table.apply(ChooseWord(player=PERSON, color=color))
            word = table.state.turn.word
            plan = centered(self.hand.plan(word, now, kontour=True)) if self.hand.can_draw(word) else []
            self.lines, self.drawn, self.chosen_at = [s.points for s in plan], 0, now
        elif st.phase == "drawing":
            due = int((now - self.chosen_at) / self.line_s + 1e-9)  # lines due by now
            while self.drawn < min(due, len(self.lines)):
                self.drawn += 1
                draw_line(table, self.rules, PERSON, self.lines[self.drawn - 1])


@dataclass
class KontourTurnStat:
    """One simulated Kontour turn (times from the card being drawn, when the timer starts)."""

    game: int
    drawer: str
    word: str
    color: str
    found: bool
    found_after_s: float | None
    strokes: int
    guesses: int
    finders: list[str]
    tiebreak: bool = False
    first_guess_after_s: float | None = None  # from the word being chosen (drawing starts)
    found_after_choice_s: float | None = None  # from the word being chosen
    lines_at_find: int | None = None  # lines drawn when the word was found


def _quantiles(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p10": pick(0.1), "p25": pick(0.25), "median": statistics.median(ordered),
            "p75": pick(0.75), "p90": pick(0.9), "n": len(ordered)}


@dataclass
class KontourReport:
    """Figures of a Kontour simulation (see `summary`)."""

    level: str
    games: int
    seed: int
    players: int
    person_line_s: float | None = None  # a scripted person's pace; only their turns are kept
    turns: list[KontourTurnStat] = field(default_factory=list)
    scores: list[dict[str, int]] = field(default_factory=list)
    winners: list[list[str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The headline figures (find rate, time to find, points per game...)."""
        found = [t for t in self.turns if t.found]
        times = [t.found_after_s for t in found if t.found_after_s is not None]
        firsts = [t.first_guess_after_s for t in self.turns if t.first_guess_after_s is not None]
        chosen_times = [t.found_after_choice_s for t in self.turns if t.found_after_choice_s is not None]
        n = len(self.turns) or 1
        points = [s for game in self.scores for s in game.values()]
        person = {} if self.person_line_s is None else {"person_line_s": self.person_line_s}
        return {
            "level": self.level,
            "games": self.games,
            "players": self.players,
            **person,
            "turns": len(self.turns),
            "turns_per_game": len(self.turns) / max(1, self.games),
            "find_rate": len(found) / n,
            "time_to_first_guess_median_s": statistics.median(firsts) if firsts else None,
            "time_to_find_after_choice_median_s": statistics.median(chosen_times) if chosen_times else None,
            "time_to_find_mean_s": statistics.mean(times) if times else None,
            "time_to_find_median_s": statistics.median(times) if times else None,
            "strokes_per_turn": statistics.mean(t.strokes for t in self.turns) if self.turns else 0,
            "guesses_per_turn": statistics.mean(t.guesses for t in self.turns) if self.turns else 0,
            "ties": sum(1 for t in found if len(t.finders) > 1),
            "orange_rate": sum(1 for t in self.turns if t.color == "orange") / n,
            "points_per_player_per_game": statistics.mean(points) if points else 0,
        }

    def distributions(self) -> dict[str, Any]:
        """Quantiles of the pacing figures, from the word being chosen: time to the first guess,
        time to find."""
        return {
            "time_to_first_guess_s": _quantiles(
                [t.first_guess_after_s for t in self.turns if t.first_guess_after_s is not None]
            ),
            "time_to_find_s": _quantiles(
                [t.found_after_choice_s for t in self.turns if t.found_after_choice_s is not None]
            ),
            "lines_at_find": _quantiles([t.lines_at_find for t in self.turns if t.lines_at_find is not None]),
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready."""
        return {
            "summary": self.summary(),
            "distributions": self.distributions(),
            "turns": [asdict(t) for t in self.turns],
            "scores": self.scores,
            "winners": self.winners,
        }


def simulate_kontour(
    source: ProbabilitySource,
    kit: AIKit,
    level: AILevel,
    games: int = 1,
    seed: int = 0,
    players: int = 3,
    deck: Sequence[KontourCard] | None = None,
    config: KontourConfig | None = None,
    judge: Callable[[str, str], bool] | None = None,
    person_line_s: float | None = None,
) -> KontourReport:
    """Play `games` AI-vs-AI Kontour games and report how the AI guessers and drawers did.

    `person_line_s`: one of the `players` seats is a scripted person (`ScriptedKontourPerson`)
    drawing a line every `person_line_s` seconds, and the report keeps only their turns."""
    if players < 2:
        raise SimulationError("Kontour needs at least 2 players")
    if deck is not None:
        cards = list(deck)
    else:  # only a synthetic deck needs to know which words have drawings
        drawable = [k for k in kit.drawings.keys() if kit.drawings.drawings(k)]
        try:
            cards = synthetic_kontour_deck(drawable, seed)
        except DeckSetupError as error:
            raise SimulationError(str(error)) from error
    candidates = sorted({w for c in cards for h in (c.top, c.bottom) for w in (h.blue, h.orange)})
    rules = KontourRules(config or KontourConfig.load(), judge=judge or french_judge(kit.to_french))
    report = KontourReport(level.name, games, seed, players, person_line_s=person_line_s)
    ais = [f"ai{i + 1}" for i in range(players - (person_line_s is not None))]
    seats = ais if person_line_s is None else [*ais, PERSON]
    for g in range(games):
        sim = _Sim(rules, source, kit, level, seats, f"{seed}:{g}")
        person = None
        if person_line_s is not None:
            person = ScriptedKontourPerson(rules, kit, level, sim.seed, person_line_s)
        _play_kontour(sim, g, cards, candidates, report, ais, person)
    return report


def _play_kontour(
    sim: _Sim,
    game: int,
    cards: Sequence[KontourCard],
    candidates: list[str],
    report: KontourReport,
    ais: list[str],
    person: ScriptedKontourPerson | None,
) -> None:
    state, _ = sim.rules.setup(players=sim.players, deck=cards, seed=sim.seed)
    driver = KontourDriver(sim.rules, ais, sim.level, sim.kit, sim.seed, candidates, BETWEEN_TURNS_S)
    table = _SimTable(sim.rules, state, driver, person)
    ended, since = 0, 0.0
    while table.state.phase != "game_over" and len(table.state.history) < MAX_KONTOUR_TURNS:
        table.tick(sim.source, KONTOUR_TICK_S)
        if len(table.state.history) != ended:
            ended, since = len(table.state.history), table.now
        elif table.now - since > MAX_TURN_S:
            raise SimulationError(f"game {game} stalled: no turn ended in {MAX_TURN_S:g} s")
    said: dict[int, int] = {}
    first: dict[int, float] = {}
    found: dict[int, float] = {}
    chosen: dict[int, float] = {}
    lines: dict[int, int] = {}
    lines_now = 0
    number = 0
    for at, e in table.events:
        if e.kind == "turn_started":
            number, lines_now = e.number, 0
        elif e.kind == "stroke_added":
            lines_now = e.count
        elif e.kind == "drawing_started":
            chosen[number] = at
        elif e.kind == "guess_made":
            said[number] = said.get(number, 0) + 1
            first.setdefault(number, at - chosen[number])
            if e.accepted and number not in found:
                found[number], lines[number] = at - chosen[number], lines_now
    for summary in table.state.history:
        if person is not None and summary.drawer != PERSON:
            continue  # only the person's drawings are measured
        report.turns.append(
            KontourTurnStat(
                game=game,
                drawer=summary.drawer,
                word=summary.word or "",
                color=summary.color or "blue",
                found=bool(summary.finders),
                found_after_s=summary.found_after_s,
                strokes=summary.strokes,
                guesses=said.get(summary.number, 0),
                finders=list(summary.finders),
                tiebreak=summary.tiebreak,
                first_guess_after_s=first.get(summary.number),
                found_after_choice_s=found.get(summary.number),
                lines_at_find=lines.get(summary.number),
            )
        )
    report.scores.append(dict(table.state.scores))
    report.winners.append(list(table.state.winners))


# --------------------------------------------------------------------------------------------
# Pictomania


@dataclass
class PictomaniaReport:
    """Figures of a Pictomania simulation (see `summary`)."""

    level: str
    games: int
    seed: int
    players: int
    joint: bool
    rounds: list[dict[str, Any]] = field(default_factory=list)
    totals: list[dict[str, int]] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)
    lengths: list[float] = field(default_factory=list)  # seconds from round start to its end

    def summary(self) -> dict[str, Any]:
        """The headline figures (accuracy, coverage, tokens, black-sheep rate, points...)."""
        placed = len(self.commits)
        correct = [c for c in self.commits if c["correct"]]
        opportunities = len(self.rounds) * self.players * (self.players - 1)
        player_rounds = len(self.rounds) * self.players or 1
        sheep = sum(1 for r in self.rounds if r["black_sheep"] is not None)
        round_points = [s for r in self.rounds for s in r["score"].values()]
        totals = [s for game in self.totals for s in game.values()]
        return {
            "level": self.level,
            "games": self.games,
            "players": self.players,
            "joint_reasoning": self.joint,
            "rounds": len(self.rounds),
            "guess_rate": placed / opportunities if opportunities else 0,
            "accuracy": len(correct) / placed if placed else None,
            "mean_token": statistics.mean(c["token"] for c in correct) if correct else None,
            "mean_commit_s": statistics.mean(c["after_s"] for c in self.commits)
            if self.commits
            else None,
            "black_sheep_rate": sheep / player_rounds,
            "unguessed_drawings": sum(r["unguessed"] for r in self.rounds) / player_rounds,
            "points_per_round": statistics.mean(round_points) if round_points else 0,
            "points_per_game": statistics.mean(totals) if totals else 0,
            "round_length_median_s": statistics.median(self.lengths) if self.lengths else None,
            "rounds_timed_out": sum(1 for r in self.rounds if r["reason"] == "time"),
        }

    def distributions(self) -> dict[str, Any]:
        """Quantiles of the pacing figures: round length, time of each bet."""
        return {
            "round_length_s": _quantiles(self.lengths),
            "bet_after_s": _quantiles([c["after_s"] for c in self.commits if c["after_s"] is not None]),
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready."""
        return {
            "summary": self.summary(),
            "distributions": self.distributions(),
            "rounds": self.rounds,
            "totals": self.totals,
            "commits": self.commits,
        }


def simulate_pictomania(
    source: ProbabilitySource,
    kit: AIKit,
    level: AILevel,
    games: int = 1,
    seed: int = 0,
    players: int = 4,
    deck: Sequence[PictoCard] | Sequence[PictomaniaDeckCard] | None = None,
    config: PictomaniaConfig | None = None,
    joint: bool = True,
) -> PictomaniaReport:
    """Play `games` AI-vs-AI Pictomania games; `joint=False` reads each drawing on its own.
    `deck`: real double-sided cards (dealt whole, `vocab.deal_table`) or single-sided cards; by
    default synthetic tables of the drawable words."""
    config = config or PictomaniaConfig.load()
    if deck is None:
        drawable = [k for k in kit.drawings.keys() if kit.drawings.drawings(k)]
        try:
            deck, config = synthetic_pictomania_deck(drawable, config, seed)
        except DeckSetupError as error:
            raise SimulationError(str(error)) from error
    if not config.min_players <= players <= config.max_players:
        raise SimulationError(
            f"Pictomania needs {config.min_players}-{config.max_players} players, got {players}"
        )
    rules = PictomaniaRules(config)
    report = PictomaniaReport(
        level=level.name, games=games, seed=seed, players=players, joint=joint
    )
    for g in range(games):
        sim = _Sim(rules, source, kit, level, [f"ai{i + 1}" for i in range(players)], f"{seed}:{g}")
        _play_pictomania(sim, deck, joint, report)
    return report


def _play_pictomania(sim: _Sim, deck: Sequence[Any], joint: bool, report: PictomaniaReport) -> None:
    ids = sim.players
    state, _ = sim.rules.setup(players=ids, deck=deck, seed=sim.seed)
    driver = PictomaniaDriver(sim.rules, ids, sim.level, sim.kit, sim.seed, state,
                              next_round_s=NEXT_ROUND_S, joint=joint)
    table = _SimTable(sim.rules, state, driver)
    while table.state.phase != "game_over":
        table.tick(sim.source, PICTOMANIA_TICK_S)
    placed: dict[tuple[int, str, str], float] = {}
    number, started = state.round.number, state.round.started_at  # round 1 started at setup
    for at, e in table.events:
        if e.kind == "round_started":
            number, started = e.number, at
        elif e.kind == "guess_placed":
            placed[(number, e.guesser, e.target)] = at - started
        elif e.kind == "round_ended":
            report.lengths.append(e.at - started)
    for result in table.state.results:
        for drawer, outcomes in result.outcomes.items():
            for o in outcomes:
                report.commits.append(
                    {
                        "round": len(report.rounds),
                        "guesser": o.guesser,
                        "drawer": drawer,
                        "correct": o.correct,
                        "token": o.token,
                        "after_s": placed.get((result.number, o.guesser, drawer)),
                    }
                )
        report.rounds.append(
            {
                "number": result.number,
                "score": dict(result.score),
                "black_sheep": result.black_sheep,
                "wrong_cards": dict(result.wrong_cards),
                "unguessed": sum(1 for p in ids if not any(x.correct for x in result.outcomes[p])),
                "reason": result.reason,
            }
        )
    report.totals.append(dict(table.state.totals))


__all__ = [
    "KontourReport",
    "KontourTurnStat",
    "PictomaniaReport",
    "SimulationError",
    "french_judge",
    "simulate_kontour",
    "simulate_pictomania",
    "synthetic_kontour_deck",
    "synthetic_pictomania_deck",
]
