"""An AI drawer resumed from the move log (a restarted server) goes on with the same drawing, at
the same pace: the Kontour plan is made on the ``word_chosen`` event, so a replay makes it again."""

from __future__ import annotations

from typing import Any

import pytest

from games.ai import AIKit, KontourDriver, ShippedLineDrawings, load_level
from games.core import Event, Move
from games.kontour import KontourConfig, KontourRules
from model.strokes import straight_lines
from service.play.table_words import kontour_candidates, kontour_deck, load_words

KIT = AIKit(ShippedLineDrawings(), straight_lines)
PLAYERS = ["ia1", "ia2"]


class Table:
    """The rules, a fake clock and the move log; every event goes back to the driver."""

    def __init__(self, rules: KontourRules, state: Any, driver: KontourDriver) -> None:
        self.rules, self.state, self.driver, self.now = rules, state, driver, 0.0
        self.log: list[tuple[float, Move]] = []

    def apply(self, move: Move) -> list[Event]:
        self.state, events = self.rules.apply(self.state, move, self.now)
        self.log.append((self.now, move))
        self.driver.on_events(self.state, events, self.now)
        return events


def new_game(seed: int) -> tuple[KontourRules, Any, KontourDriver]:
    words = load_words(None)
    rules = KontourRules(KontourConfig.load(), judge=words.judge)
    cards, half = kontour_deck(words, seed)
    state, _ = rules.setup(players=PLAYERS, deck=cards, seed=seed, half=half)
    candidates = kontour_candidates(cards, half, words.drawable)
    return rules, state, KontourDriver(rules, PLAYERS, load_level("normal"), KIT, seed, candidates)


def play_until(table: Table, done: Any, limit_s: float = 600.0) -> None:
    while not done(table.state) and table.now < limit_s:
        table.now = round(table.now + 0.1, 6)
        table.driver.step(table, table.now)
        table.driver.looks()  # nobody reads: the turns run out (the drawing is what is tested)


def ai_drawing(turn_number: int, lines: int) -> Any:
    def done(state: Any) -> bool:
        turn = state.turn
        return (turn is not None and turn.number >= turn_number and turn.drawer in PLAYERS
                and state.phase == "drawing" and turn.strokes_submitted >= lines)

    return done


@pytest.mark.parametrize("seed", [3, 2026])
def test_a_resumed_ai_drawer_goes_on_with_the_same_drawing_at_the_same_pace(seed: int) -> None:
    rules, state, driver = new_game(seed)
    live = Table(rules, state, driver)
    play_until(live, ai_drawing(turn_number=2, lines=2))
    assert live.state.turn.strokes_submitted == 2 and live.state.turn.number >= 2
    now = live.now
    due_live = driver.plan[2].end + driver.delay  # when the live drawer draws its third line

    rules2, state2, resumed = new_game(seed)  # the restarted server: setup, then the log replayed
    for at, move in live.log:
        state2, events = rules2.apply(state2, move, at)
        resumed.on_events(state2, events, at)
    assert state2 == live.state
    resumed.resume(state2, now)

    assert resumed.plan == driver.plan  # the same drawing (same generator draws, same used set)
    assert resumed.planned == 2
    third = resumed.plan[2]
    due = third.end + resumed.delay
    # when it was due, or its own duration after the restart: never the whole drawing's again
    assert due == pytest.approx(max(now, third.start) + third.end - third.start)
    assert due <= due_live + 1e-9 and due - now < 2 * (third.end - third.start) + 1.0

    table = Table(rules2, state2, resumed)
    table.now = now
    play_until(table, ai_drawing(turn_number=state2.turn.number, lines=3), limit_s=due + 1.0)
    assert table.state.turn.strokes_submitted == 3  # the third line came when it was due
    assert table.now <= due + 0.1 + 1e-9
