"""The AI drawer: shipped line drawings, pace, colour choice, gestures, validation-only data."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from games.ai import AIDrawer, ShippedLineDrawings, load_level
from games.ai.base import relations_from_groups
from games.ai.drawer import DrawerError, pace
from games.ai.drawer import ShippedLineDrawings as Shipped
from games.ai.levels import AILevelError, StrokePace, level_names
from games.kontour import DrawCard, KontourCard, KontourRules, Stroke, WordPair
from model.strokes import straight_lines

CATEGORIES = Path(__file__).resolve().parents[1].parent / "shared/data/quickdraw/categories.txt"
DRAWER = load_level("normal").drawer


def test_ship_at_least_30_line_drawings_of_real_categories_within_15_lines() -> None:
    shipped = ShippedLineDrawings()
    assert len(shipped.keys()) >= 30
    for key in shipped.keys():
        (drawing,) = shipped.drawings(key)
        assert sum(len(s[0]) - 1 for s in drawing) <= 15, key
        assert all(0 <= v <= 255 for s in drawing for axis in s for v in axis), key
    if CATEGORIES.exists():
        known = set(CATEGORIES.read_text().splitlines())
        assert set(shipped.keys()) <= known


def test_the_kontour_engine_accepts_every_shipped_drawing_line_by_line() -> None:
    shipped = ShippedLineDrawings()
    rules = KontourRules()
    for key in shipped.keys():
        drawer = AIDrawer(DRAWER, random.Random(0), shipped, straight_lines=straight_lines)
        plan = drawer.plan(key, start=0.0, kontour=True)
        expected = sum(len(s[0]) - 1 for s in shipped.drawings(key)[0])
        assert len(plan) == expected, key
        card = KontourCard(top=WordPair(blue=key, orange=key), bottom=WordPair(blue=key, orange=key))
        state, _ = rules.setup(players=["ai", "bob"], deck=[card], seed=1, half="top")
        state, _ = rules.apply(state, DrawCard(player="ai"), 0.0)
        state, _ = rules.apply(state, rules.parse_move({"kind": "choose_word", "player": "ai",
                                                         "color": "blue"}), 0.0)
        for stroke in plan:
            state, _ = rules.apply(state, Stroke(player="ai", points=stroke.points), 1.0)
        # collinear lines may merge (an X drawn as 4 half-lines), but the picture is unchanged
        assert state.turn.strokes <= expected, key
        drawn = sum(math.dist(*s.points) for s in plan)
        kept = sum(seg.length for seg in state.turn.segments)
        assert kept == pytest.approx(drawn, rel=0.01), key


def test_pace_follows_the_level_speed() -> None:
    level = StrokePace(speed=100, pause_s=0.5, start_s=1.0)
    plan = pace([[[0, 100], [0, 0]], [[0, 0, 50], [0, 100, 100]]], level, start=10.0)
    assert (plan[0].start, plan[0].end) == (11.0, 12.0)
    assert plan[1].start == pytest.approx(12.5) and plan[1].end == pytest.approx(14.0)
    assert plan[1].as_stroke()[2] == [0, 1000, 1500]


def test_a_long_drawing_is_hurried_to_fit_max_s() -> None:
    level = StrokePace(speed=10, pause_s=1.0, start_s=2.0, max_s=7.0)
    plan = pace([[[0, 100], [0, 0]], [[0, 100], [50, 50]]], level, start=0.0)  # 10 + 1 + 10 s
    assert plan[0].start == 2.0
    assert plan[-1].end == pytest.approx(2.0 + 7.0)
    assert plan[0].end - plan[0].start == pytest.approx(10 * 7 / 21)


def test_choose_color_only_picks_drawable_words() -> None:
    shipped = ShippedLineDrawings()
    always_orange = DRAWER.model_copy(update={"orange_rate": 1.0})
    drawer = AIDrawer(always_orange, random.Random(0), shipped)
    assert drawer.choose_color("house", "star") == "orange"
    assert drawer.choose_color("house", "giraffe") == "blue"
    assert drawer.choose_color("giraffe", "house") == "orange"
    never = AIDrawer(DRAWER.model_copy(update={"orange_rate": 0.0}), random.Random(0), shipped)
    assert never.choose_color("house", "star") == "blue"


def test_drawer_gestures_close_for_related_guesses() -> None:
    related = relations_from_groups([["house", "church", "castle"]])
    always = DRAWER.model_copy(update={"gesture_rate": 1.0})
    drawer = AIDrawer(always, random.Random(0), ShippedLineDrawings(), related)
    assert drawer.gesture("church", "house") == "proche"
    assert drawer.gesture("fish", "house") == "hors_sujet"
    assert drawer.gesture("house", "house") is None
    silent = AIDrawer(DRAWER.model_copy(update={"gesture_rate": 0.0}), random.Random(0),
                      ShippedLineDrawings(), related)
    assert silent.gesture("church", "house") is None


def test_no_drawing_is_a_typed_error() -> None:
    drawer = AIDrawer(DRAWER, random.Random(0), ShippedLineDrawings())
    assert not drawer.can_draw("giraffe")
    with pytest.raises(DrawerError, match="giraffe"):
        drawer.plan("giraffe", 0.0)


def test_bad_line_drawings_file(tmp_path: Path) -> None:
    bad = tmp_path / "lines.yaml"
    bad.write_text("star: [[0, 0, 10]]\n")
    with pytest.raises(DrawerError, match="odd"):
        Shipped(bad)
    bad.write_text("star: [[" + ", ".join(["0, 0", "10, 10"] * 9) + "]]\n")
    with pytest.raises(DrawerError, match="at most 15"):
        Shipped(bad)


def test_levels_file() -> None:
    assert level_names() == ["easy", "normal", "hard"]
    easy, hard = load_level("easy"), load_level("hard")
    assert easy.kontour_guesser.reaction_s > hard.kontour_guesser.reaction_s
    assert easy.drawer.kontour.speed < hard.drawer.kontour.speed
    assert easy.drawer.pictomania.speed < hard.drawer.pictomania.speed
    with pytest.raises(AILevelError, match="unknown AI level 'expert'"):
        load_level("expert")


def test_each_meeting_with_a_word_draws_another_drawing() -> None:
    class Several:
        def keys(self) -> list[str]:
            return ["star"]

        def drawings(self, key: str) -> list:
            return [[[[0, 10 * i + 10], [0, 0]]] for i in range(3)] if key == "star" else []

    used: dict[str, set[int]] = {}
    a = AIDrawer(DRAWER, random.Random(1), Several(), used=used)
    b = AIDrawer(DRAWER, random.Random(2), Several(), used=used)  # another AI player, same game
    picked = [a.pick("star"), b.pick("star"), a.pick("star")]
    assert sorted(d[0][0][1] for d in picked) == [10, 20, 30]  # three different drawings
    assert used == {"star": {0, 1, 2}}
    assert a.pick("star")  # once all were drawn, it still draws (a varied copy)
