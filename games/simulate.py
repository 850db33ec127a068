"""Headless AI-vs-AI games through the real rules engines, with figures on how the AI does.

`simulate_kontour` and `simulate_pictomania` take a `ProbabilitySource` (the real `model.Guesser`
in the CLI, a fixed table in tests), a `DrawingSource` for the AI drawer, a difficulty level and a
seed; the same arguments always give the same report. Time advances in fixed ticks; every move goes
through `KontourRules` / `PictomaniaRules`, which keep score.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from games.ai.base import (
    ProbabilitySource,
    Related,
    ToFrench,
    identity_french,
    no_relations,
)
from games.ai.drawer import AIDrawer, DrawingSource, TimedStroke
from games.ai.kontour_guesser import KontourGuesser
from games.ai.levels import AILevel
from games.ai.pictomania_guesser import OpponentState, PictomaniaGuesser
from games.kontour import (
    ChooseWord,
    DrawCard,
    Gesture,
    Guess,
    GuessMade,
    KontourCard,
    KontourConfig,
    KontourRules,
    TurnEnded,
    WordPair,
)
from games.kontour import (
    Stroke as KontourStroke,
)
from games.pictomania import (
    Done,
    NextRound,
    PictoCard,
    PictomaniaConfig,
    PictomaniaRules,
    PictoStroke,
    PlaceGuess,
)

KONTOUR_TICK_S = 0.1
PICTOMANIA_TICK_S = 0.25
MAX_KONTOUR_TURNS = 80  # safety net: a game to 10 points never needs that many


class SimulationError(ValueError):
    """Bad simulation arguments (too few drawable words, bad player count...)."""


def _look(
    source: ProbabilitySource, drawing: list, candidates: Sequence[str]
) -> dict[str, float] | None:
    """The source's probabilities, or None for a drawing it cannot read yet (a first dot...)."""
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


# --------------------------------------------------------------------------------------------
# Synthetic decks (used when no deck is given)


def synthetic_kontour_deck(keys: Collection[str], seed: int | str) -> list[KontourCard]:
    """Cards made of the drawable words, 4 per card (top blue/orange, bottom blue/orange)."""
    words = sorted(keys)
    if len(words) < 4:
        raise SimulationError(f"need at least 4 drawable words for a Kontour deck, got {len(words)}")
    random.Random(f"{seed}:kontour-deck").shuffle(words)
    cards = []
    for i in range(0, len(words) - 3, 4):
        a, b, c, d = words[i : i + 4]
        cards.append(KontourCard(top=WordPair(blue=a, orange=b), bottom=WordPair(blue=c, orange=d)))
    return cards


def synthetic_pictomania_deck(
    keys: Collection[str], config: PictomaniaConfig, seed: int | str
) -> tuple[list[PictoCard], PictomaniaConfig]:
    """One level per round (levels 1..rounds), each level's cards a fresh shuffle of the drawable
    words cut into cards of 7 (so no word appears twice on a table). Returns the deck and the
    config with `levels_per_round` set to match."""
    words = sorted(keys)
    per_round = config.cards_per_round * config.words_per_card
    if len(words) < per_round:
        raise SimulationError(
            f"need at least {per_round} drawable words for a Pictomania table, got {len(words)}"
        )
    deck = []
    for level in range(1, config.rounds + 1):
        shuffled = list(words)
        random.Random(f"{seed}:picto-deck:{level}").shuffle(shuffled)
        for c in range(config.cards_per_round):
            chunk = shuffled[c * config.words_per_card : (c + 1) * config.words_per_card]
            deck.append(PictoCard(level=level, words=tuple(chunk)))
    levels = tuple(range(1, config.rounds + 1))
    return deck, config.model_copy(update={"levels_per_round": levels})


# --------------------------------------------------------------------------------------------
# Kontour


@dataclass
class KontourTurnStat:
    """One simulated Kontour turn."""

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


@dataclass
class KontourReport:
    """Figures of a Kontour simulation (see `summary`)."""

    level: str
    games: int
    seed: int
    players: int
    turns: list[KontourTurnStat] = field(default_factory=list)
    scores: list[dict[str, int]] = field(default_factory=list)
    winners: list[list[str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The headline figures (find rate, time to find, points per game...)."""
        found = [t for t in self.turns if t.found]
        times = [t.found_after_s for t in found if t.found_after_s is not None]
        n = len(self.turns) or 1
        points = [s for game in self.scores for s in game.values()]
        return {
            "level": self.level,
            "games": self.games,
            "players": self.players,
            "turns": len(self.turns),
            "turns_per_game": len(self.turns) / max(1, self.games),
            "find_rate": len(found) / n,
            "time_to_find_mean_s": statistics.mean(times) if times else None,
            "time_to_find_median_s": statistics.median(times) if times else None,
            "strokes_per_turn": statistics.mean(t.strokes for t in self.turns) if self.turns else 0,
            "guesses_per_turn": statistics.mean(t.guesses for t in self.turns) if self.turns else 0,
            "ties": sum(1 for t in found if len(t.finders) > 1),
            "orange_rate": sum(1 for t in self.turns if t.color == "orange") / n,
            "points_per_player_per_game": statistics.mean(points) if points else 0,
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready."""
        return {
            "summary": self.summary(),
            "turns": [asdict(t) for t in self.turns],
            "scores": self.scores,
            "winners": self.winners,
        }


def simulate_kontour(
    source: ProbabilitySource,
    drawings: DrawingSource,
    level: AILevel,
    games: int = 1,
    seed: int = 0,
    players: int = 3,
    deck: Sequence[KontourCard] | None = None,
    to_french: ToFrench = identity_french,
    related: Related = no_relations,
    config: KontourConfig | None = None,
    judge: Callable[[str, str], bool] | None = None,
) -> KontourReport:
    """Play `games` AI-vs-AI Kontour games and report how the AI guessers and drawers did."""
    if players < 2:
        raise SimulationError("Kontour needs at least 2 players")
    if deck is not None:
        cards = list(deck)
    else:  # only a synthetic deck needs to know which words have drawings
        cards = synthetic_kontour_deck([k for k in drawings.keys() if drawings.drawings(k)], seed)
    candidates = sorted({w for c in cards for h in (c.top, c.bottom) for w in (h.blue, h.orange)})
    rules = KontourRules(config or KontourConfig.load(), judge=judge or french_judge(to_french))
    report = KontourReport(level=level.name, games=games, seed=seed, players=players)
    by_french = {_fold(to_french(k)): k for k in candidates}
    for g in range(games):
        _play_kontour(rules, source, drawings, level, f"{seed}:{g}", g, players, cards,
                      candidates, to_french, related, by_french, report)
    return report


def _play_kontour(
    rules: KontourRules,
    source: ProbabilitySource,
    drawings: DrawingSource,
    level: AILevel,
    game_seed: str,
    game: int,
    n_players: int,
    cards: Sequence[KontourCard],
    candidates: list[str],
    to_french: ToFrench,
    related: Related,
    by_french: dict[str, str],
    report: KontourReport,
) -> None:
    ids = [f"ai{i + 1}" for i in range(n_players)]
    state, _ = rules.setup(players=ids, deck=cards, seed=game_seed)
    drawers = {
        p: AIDrawer(level.drawer, random.Random(f"{game_seed}:{p}:draw"), drawings, related)
        for p in [*ids, rules.config.neutral_drawer]
    }
    guessers = {
        p: KontourGuesser(
            level=level.kontour_guesser,
            rng=random.Random(f"{game_seed}:{p}:guess"),
            to_french=to_french,
            related=related,
            turn_length=rules.config.timer_s,
        )
        for p in ids
    }
    now = 0.0
    for _ in range(MAX_KONTOUR_TURNS):
        if state.phase == "game_over":
            break
        drawer_id = state.drawer
        state, _ = rules.apply(state, DrawCard(player=drawer_id), now)
        pair = state.turn.card
        drawer = drawers[drawer_id]
        color = drawer.choose_color(pair.blue, pair.orange)
        word = pair.word(color)
        now += 0.5
        state, _ = rules.apply(state, ChooseWord(player=drawer_id, color=color), now)
        turn_start = state.turn.started_at
        plan: list[TimedStroke] = drawer.plan(word, now, kontour=True) if drawer.can_draw(word) else []
        active = [p for p in ids if p != drawer_id and (not state.tied or p in state.tied)]
        for p in active:
            guessers[p].new_turn(turn_start, candidates)
        said = 0
        next_stroke = 0
        ended = False
        while not ended:
            now = round(now + KONTOUR_TICK_S, 6)
            state, events = rules.advance(state, now)
            if any(isinstance(e, TurnEnded) for e in events):
                break
            while next_stroke < len(plan) and plan[next_stroke].end <= now:
                stroke = plan[next_stroke]
                next_stroke += 1
                if state.turn.strokes >= rules.config.max_strokes:
                    continue
                state, _ = rules.apply(
                    state, KontourStroke(player=drawer_id, points=stroke.points), now
                )
                segs = [[[s.x0, s.x1], [s.y0, s.y1]] for s in state.turn.segments]
                probs = _look(source, segs, candidates)
                for p in active if probs is not None else ():
                    guessers[p].observe(probs, now)
            for p in active:
                if p in state.turn.finders:
                    continue
                say = guessers[p].decide(now)
                if say is None:
                    continue
                said += 1
                state, events = rules.apply(state, Guess(player=p, text=say.word), now)
                accepted = any(isinstance(e, GuessMade) and e.accepted for e in events)
                if accepted:
                    continue
                for other in active:
                    if other != p:
                        guessers[other].heard(say.key)
                kind = drawer.gesture(by_french.get(_fold(say.word)), word)
                if kind is not None:
                    state, _ = rules.apply(
                        state, Gesture(player=drawer_id, gesture=kind, about=say.word), now
                    )
                    for other in active:
                        guessers[other].gesture(kind, say.key)
            ended = state.turn is None
        summary = state.history[-1]
        report.turns.append(
            KontourTurnStat(
                game=game,
                drawer=drawer_id,
                word=word,
                color=color,
                found=bool(summary.finders),
                found_after_s=summary.found_after_s,
                strokes=summary.strokes,
                guesses=said,
                finders=list(summary.finders),
                tiebreak=summary.tiebreak,
            )
        )
        now += 1.0
    report.scores.append(dict(state.scores))
    report.winners.append(list(state.winners))


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
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready."""
        return {
            "summary": self.summary(),
            "rounds": self.rounds,
            "totals": self.totals,
            "commits": self.commits,
        }


def simulate_pictomania(
    source: ProbabilitySource,
    drawings: DrawingSource,
    level: AILevel,
    games: int = 1,
    seed: int = 0,
    players: int = 4,
    deck: Sequence[PictoCard] | None = None,
    config: PictomaniaConfig | None = None,
    joint: bool = True,
) -> PictomaniaReport:
    """Play `games` AI-vs-AI Pictomania games; `joint=False` reads each drawing on its own."""
    config = config or PictomaniaConfig.load()
    if deck is None:
        drawable = [k for k in drawings.keys() if drawings.drawings(k)]
        deck, config = synthetic_pictomania_deck(drawable, config, seed)
    rules = PictomaniaRules(config)
    report = PictomaniaReport(
        level=level.name, games=games, seed=seed, players=players, joint=joint
    )
    for g in range(games):
        _play_pictomania(rules, source, drawings, level, f"{seed}:{g}", players, deck, joint,
                         report)
    return report


def _play_pictomania(
    rules: PictomaniaRules,
    source: ProbabilitySource,
    drawings: DrawingSource,
    level: AILevel,
    game_seed: str,
    n_players: int,
    deck: Sequence[PictoCard],
    joint: bool,
    report: PictomaniaReport,
) -> None:
    ids = [f"ai{i + 1}" for i in range(n_players)]
    state, _ = rules.setup(players=ids, deck=deck, seed=game_seed)
    tokens = rules.config.tokens(n_players)
    now = 0.0
    while state.phase != "game_over":
        rnd = state.round
        table = [list(card.words) for card in rnd.cards]
        words = [w for card in table for w in card]
        plans: dict[str, list[TimedStroke]] = {}
        brains: dict[str, PictomaniaGuesser] = {}
        for p in ids:
            secret = rnd.secrets[p]
            drawer = AIDrawer(level.drawer, random.Random(f"{game_seed}:{rnd.number}:{p}:draw"),
                              drawings)
            key = rnd.word(p)
            plans[p] = drawer.plan(key, now) if drawer.can_draw(key) else []
            brains[p] = PictomaniaGuesser(
                level=level.pictomania_guesser,
                rng=random.Random(f"{game_seed}:{rnd.number}:{p}:guess"),
                cards=table,
                my_symbol=secret.symbol,
                my_number=secret.number,
                opponents=[o for o in ids if o != p],
                tokens=tokens,
                joint=joint,
            )
        drawn = {p: 0 for p in ids}
        commit_times: dict[tuple[str, str], float] = {}
        start = rnd.started_at
        while state.phase == "playing":
            now = round(now + PICTOMANIA_TICK_S, 6)
            state, _ = rules.advance(state, now)
            if state.phase != "playing":
                break
            for p in ids:  # strokes finished by now
                while drawn[p] < len(plans[p]) and plans[p][drawn[p]].end <= now:
                    if p not in state.round.done:
                        stroke = plans[p][drawn[p]]
                        state, _ = rules.apply(state, PictoStroke(player=p, points=stroke.points),
                                               now)
                    drawn[p] += 1
                    if drawn[p] == len(plans[p]) or plans[p][drawn[p]].end > now:
                        drawing = [s.as_stroke() for s in plans[p][: drawn[p]]]
                        probs = _look(source, drawing, words)
                        for o in ids if probs is not None else ():
                            if o != p:
                                brains[o].observe(p, probs, now)
            for p in ids:
                if state.phase != "playing" or p in state.round.done:
                    continue
                states = {
                    o: OpponentState(
                        stack=len(state.round.stacks[o]),
                        drawing_done=drawn[o] >= len(plans[o]) or o in state.round.done,
                    )
                    for o in ids
                    if o != p
                }
                commit = brains[p].decide(now, states)
                if commit is not None:
                    state, _ = rules.apply(
                        state, PlaceGuess(player=p, target=commit.opponent, number=commit.number),
                        now,
                    )
                    commit_times[(p, commit.opponent)] = now - start
                own_done = drawn[p] >= len(plans[p])
                if own_done and state.phase == "playing" and brains[p].finished(now, states):
                    state, _ = rules.apply(state, Done(player=p), now)
        result = state.results[-1]
        for drawer, outcomes in result.outcomes.items():
            for o in outcomes:
                report.commits.append(
                    {
                        "round": len(report.rounds),
                        "guesser": o.guesser,
                        "drawer": drawer,
                        "correct": o.correct,
                        "token": o.token,
                        "after_s": commit_times.get((o.guesser, drawer)),
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
        if state.phase == "scored":
            now += 1.0
            state, _ = rules.apply(state, NextRound(player=ids[0]), now)
    report.totals.append(dict(state.totals))


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
