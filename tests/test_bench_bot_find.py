"""The find-rate benchmark's summary, on rounds whose outcome is known (no server)."""

from __future__ import annotations

import pytest

from bench.bench_bot_find import Round, summarise, table


def test_find_rates_count_finds_within_each_limit_and_one_stroke_drawings() -> None:
    rounds = [
        Round("cat", 1, "instant", 42, found_after_s=0.2, reaction_s=0.2),
        Round("dog", 3, "instant", 42, found_after_s=-1.0, reaction_s=0.1),  # found while drawing
        Round("sun", 2, "instant", 42, found_after_s=5.0, reaction_s=5.0),
        Round("car", 1, "instant", 42),  # never found
        Round("cat", 2, "human", None, found_after_s=3.5, reaction_s=3.5),
    ]
    rows = {(r["pace"], r["candidates"]): r for r in summarise(rounds)}
    assert set(rows) == {("instant", 42), ("human", "none")}
    instant = rows["instant", 42]
    assert instant["drawings"] == 4 and instant["found_3s"] == pytest.approx(0.5)
    assert instant["found_8s"] == pytest.approx(0.75)
    assert instant["one_stroke"] == 2 and instant["one_stroke_found_8s"] == pytest.approx(0.5)
    assert instant["reaction_median_s"] == pytest.approx(0.2)
    human = rows["human", "none"]
    assert human["found_3s"] == 0 and human["found_8s"] == 1
    assert instant["found_drawing"] == pytest.approx(0.25)
    assert "| instant | 42 | 4 | 50% | 75% | 25% | 50% of 2 |" in table(summarise(rounds))


def test_a_pace_spec_is_the_round_start_fields_a_room_would_send() -> None:
    from bench.bench_bot_find import pace_fields

    assert pace_fields("instant") == {"pace": "instant"}
    assert pace_fields("human:reaction_s=0.8:hold_s=4") == {"pace": "human", "reaction_s": 0.8, "hold_s": 4.0}
    with pytest.raises(ValueError):
        pace_fields("slow")
    with pytest.raises(ValueError):
        pace_fields("instant:speed=2")
