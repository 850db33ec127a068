"""The AI pacing model on a fake clock: the medians of time to first guess, time to find and
Pictomania round length fall in the ranges docs/AI_PLAYERS.md promises for each level.

The recognizer is replaced by a decoder of coded drawings (each word's drawing encodes its identity
in the ratio of its first two lines' lengths, which survives scaling, centering and straightening)
that grows sure of the word as strokes arrive, like the real model: so these figures measure the
pacing (reading, typing, drawing, betting times), not the model's accuracy. The real model's
figures are in docs/AI_PLAYERS.md (`griffon simulate ... --distributions`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import pytest

from games.ai import AIKit, load_level
from games.pictomania import PictomaniaConfig
from games.simulator import simulate_kontour, simulate_pictomania
from model.strokes import straight_lines

WORDS = [f"w{i:03d}" for i in range(60)]
REFERENCE = 200.0


class CodedDrawings:
    """Word i: `strokes` horizontal lines; the first is 30 + 2.5 i long, the second REFERENCE
    long (Kontour: 8 lines; Pictomania: 4 strokes, the median of the shipped pack)."""

    def __init__(self, strokes: int) -> None:
        self.strokes = strokes

    def keys(self) -> list[str]:
        return WORDS

    def drawings(self, key: str) -> list[Any]:
        if key not in WORDS:
            return []
        first = 30.0 + 2.5 * WORDS.index(key)
        lengths = [first, REFERENCE, 120, 160, 90, 180, 140, 110][: self.strokes]
        return [[[[0.0, length], [30.0 * row, 30.0 * row]] for row, length in enumerate(lengths)]]


class Decoder:
    """Reads the code back; the drawn word's probability rises by 0.15 a stroke (≤ 0.9)."""

    def probabilities(self, drawing: Any, candidates: Sequence[str] | None = None) -> dict[str, float]:
        keys = list(candidates or WORDS)
        if len(drawing) < 2:
            return {k: 1 / len(keys) for k in keys}
        lengths = [math.dist((s[0][0], s[1][0]), (s[0][-1], s[1][-1])) for s in drawing[:2]]
        ratio = lengths[0] / lengths[1]
        index = round((ratio * REFERENCE - 30.0) / 2.5)
        word = WORDS[index] if 0 <= index < len(WORDS) else None
        sure = min(0.9, 0.15 * len(drawing)) if word in keys else 0.0
        rest = (1 - sure) / max(1, len(keys) - (word in keys))
        return {k: (sure if k == word else rest) for k in keys}


KIT = AIKit(CodedDrawings(8), straight_lines)
PICTO_KIT = AIKit(CodedDrawings(4), straight_lines)

# Intended medians (seconds, from the word being chosen; round length from the round's start),
# docs/AI_PLAYERS.md "Pacing model".
KONTOUR_RANGES = {
    "easy": {"first": (10, 24), "find": (13, 26)},
    "normal": {"first": (5, 14), "find": (8, 20)},
    "hard": {"first": (4, 10), "find": (6, 16)},
}
ROUND_RANGES = {"easy": (65, 115), "normal": (55, 95), "hard": (35, 75)}


@functools.cache
def kontour(level: str) -> dict[str, Any]:
    """One simulated 3-player game at `level` (shared by the tests below)."""
    return simulate_kontour(Decoder(), KIT, load_level(level), games=1, seed=11, players=3).distributions()


@pytest.mark.parametrize("level", ["easy", "normal", "hard"])
def test_kontour_time_to_first_guess_and_to_find_per_level(level: str) -> None:
    dist = kontour(level)
    first, find = dist["time_to_first_guess_s"], dist["time_to_find_s"]
    low, high = KONTOUR_RANGES[level]["first"]
    assert low <= first["median"] <= high, first
    assert first["p10"] >= 4.0, first  # the first guess rarely comes before ~5 s
    low, high = KONTOUR_RANGES[level]["find"]
    assert find is not None and low <= find["median"] <= high, find
    # nobody finds from fewer lines than the level reads before speaking (easy: 3)
    assert dist["lines_at_find"]["p10"] >= load_level(level).kontour_guesser.min_strokes


def test_the_levels_are_ordered_in_kontour() -> None:
    medians = {name: kontour(name)["time_to_first_guess_s"]["median"] for name in ("easy", "hard")}
    assert medians["easy"] > medians["hard"] + 3


@pytest.mark.parametrize("level", ["easy", "normal", "hard"])
def test_pictomania_round_length_per_level(level: str) -> None:
    config = PictomaniaConfig.load(rounds=2, levels_per_round=[1, 2])
    report = simulate_pictomania(Decoder(), PICTO_KIT, load_level(level), seed=3, players=4, config=config)
    summary = report.summary()
    assert summary["rounds_timed_out"] == 0  # nobody stalls until the 120 s timer
    low, high = ROUND_RANGES[level]
    assert low <= statistics_median(report.lengths) <= high, report.lengths
    # a person who finished drawing first still has time to bet: the round ends well after the
    # AI drawings are done (the last look, done_s)
    assert min(report.lengths) >= load_level(level).pictomania_guesser.done_s + 20


def statistics_median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


class PersonTable:
    """A 4-player Pictomania round where `joueur` is a scripted person, the others the AI driver."""

    def __init__(self, level: str) -> None:
        from games.ai import PictomaniaDriver
        from games.pictomania import PictomaniaRules
        from games.words import synthetic_pictomania_deck

        deck, config = synthetic_pictomania_deck(WORDS, PictomaniaConfig.load(rounds=1), seed=5)
        self.rules = PictomaniaRules(config)
        self.players = ["joueur", "ia1", "ia2", "ia3"]
        self.state, _ = self.rules.setup(players=self.players, deck=deck, seed=5)
        self.now = 0.0
        self.driver = PictomaniaDriver(self.rules, self.players[1:], load_level(level), PICTO_KIT, 5,
                                       self.state)

    def apply(self, move: Any) -> list[Any]:
        self.state, events = self.rules.apply(self.state, move, self.now)
        self.driver.on_events(self.state, events, self.now)
        return events


@pytest.mark.parametrize("level", ["easy", "normal", "hard"])
def test_a_person_who_draws_first_still_has_time_to_bet(level: str) -> None:
    """The person draws 4 quick strokes in the first 12 s, then bets on the AI drawings one at a
    time, each 8 s after the drawing is finished and after the previous bet (looking, choosing a
    card): every bet lands before the AIs end the round."""
    from games.pictomania import PictoStroke, PlaceGuess

    table = PersonTable(level)
    strokes = [3.0, 6.0, 9.0, 12.0]
    finished_at: dict[str, float] = {}
    bets: dict[str, int] = {}
    last_bet = 0.0
    while table.state.phase == "playing":
        table.now = round(table.now + 0.25, 6)
        table.driver.step(table, table.now)
        for look in table.driver.looks():
            table.driver.seen(look, Decoder().probabilities(look.drawing, look.candidates), table.now)
        if table.state.phase != "playing":
            break
        if strokes and table.now >= strokes[0]:
            strokes.pop(0)
            y = 20.0 * len(strokes)
            table.apply(PictoStroke(player="joueur", points=((10.0, y), (200.0, y))))
        for ai in table.players[1:]:
            if ai not in finished_at and table.driver.drawing_done(table.state, ai, table.now):
                finished_at[ai] = table.now
            if ai in finished_at and ai not in bets and table.now >= max(finished_at[ai], last_bet) + 8.0:
                number = min(n for n in range(1, 8) if n not in bets.values())
                table.apply(PlaceGuess(player="joueur", target=ai, number=number))
                bets[ai], last_bet = number, table.now
    assert set(bets) == {"ia1", "ia2", "ia3"}, (level, finished_at, table.now)
    assert table.state.results[-1].reason == "bonus_tokens"  # the AIs ended it, not the timer
