"""A whole Pictomania game of the service, in process on a clock the test moves
(tests/local_play.py): bets, refusals, token, scoring by hand from the rulebook's formula, next
round, game over. The table fixture is tests/test_service_play.py's."""

from __future__ import annotations

from tests.local_play import LocalTable
from tests.play_helpers import has_event
from tests.test_service_play import is_state, table  # noqa: F401 - the fixture is found by name


def test_a_full_pictomania_game_of_two_rounds(table: LocalTable) -> None:  # noqa: F811 - fixture
    p = table.new_game(game="pictomania", opponents=2, level="hard", seed=3)
    p.until(is_state)
    rnd = p.state["round"]
    assert len(rnd["cards"]) == 6 and all(len(c["words"]) == 7 for c in rnd["cards"])
    secrets = rnd["secrets"]
    assert secrets["joueur"] is not None and secrets["ia1"] is None and secrets["ia2"] is None
    assert set(p.frame["fr"]) == {w for c in rnd["cards"] for w in c["words"]}
    assert p.frame["config"]["rounds"] == 2 and p.frame["config"]["tokens"] == [3, 2]

    p.move(kind="stroke", points=[[20, 20], [100, 100], [150, 60]])
    p.until(has_event("stroke_drawn", player="joueur"))
    p.move(kind="guess", target="ia1", number=2)
    p.until(has_event("guess_placed", guesser="joueur", target="ia1"))
    mine = [c for c in p.state["round"]["stacks"]["ia1"] if c["guesser"] == "joueur"]
    assert mine[0]["number"] == 2
    p.move(kind="guess", target="ia1", number=3)
    p.error("already_guessed")
    p.move(kind="guess", target="ia2", number=2)
    p.error("card_used")
    p.move(kind="guess", target="joueur", number=1)
    p.error("not_allowed")
    p.move(kind="guess", target="ia9", number=1)
    p.error("unknown_player")
    left = p.state["round"]["bonus_left"]
    p.move(kind="done")
    taken = p.until(has_event("bonus_taken", player="joueur"))
    assert taken["state"]["round"]["bonus"]["joueur"] in left
    p.move(kind="stroke", points=[[1, 1], [9, 9]])
    p.error("already_done")

    scored = p.until(has_event("round_scored"), timeout=16)
    result = next(e for e in scored["events"] if e["kind"] == "round_scored")["result"]
    for who in ("joueur", "ia1", "ia2"):
        expected = result["bonus_points"][who] + sum(result["tokens_won"][who]) - result["penalty"][who]
        assert result["score"][who] == expected
    bet = next(o for o in result["outcomes"]["ia1"] if o["guesser"] == "joueur")
    assert bet["correct"] == (result["secrets"]["ia1"]["number"] == 2)
    assert p.state["phase"] == "scored" and p.state["totals"] == result["score"]
    assert p.state["round"]["secrets"]["ia1"] is not None  # revealed once scored

    p.move(kind="next_round")
    p.until(has_event("round_started", number=2))
    assert p.state["phase"] == "playing" and p.state["round"]["number"] == 2
    ended = p.until(has_event("game_ended"), timeout=20)
    final = next(e for e in ended["events"] if e["kind"] == "game_ended")
    assert p.state["phase"] == "game_over" and final["winners"]
    assert max(final["totals"].values()) == final["totals"][final["winners"][0]]
    assert [e for e in p.events("stroke_drawn") if e["player"] != "joueur"], "the AI drew nothing"
    p.move(kind="done")
    p.error("game_over")
    p.close()
