"""The shared game model (games.core), stroke geometry (games.geometry) and the purity of games/."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from games.core import (
    AlreadyGuessed,
    Event,
    NotAStraightLine,
    Phase,
    RuleError,
    TooManyStrokes,
    WrongPhase,
    check_phase,
    events_for,
    rng,
)
from games.geometry import Segment, extends, find_extension, merge, straighten
from games.kontour import KontourConfig
from games.pictomania import PictomaniaConfig

GEO = KontourConfig.load().geometry
GAMES = Path(__file__).resolve().parents[1] / "games"


# --------------------------------------------------------------------------------------------
# core


def test_rng_is_derived_from_seed_purpose_and_counter_only():
    assert rng(42, "deck").random() == rng(42, "deck").random()
    assert rng(42, "deck").random() != rng(42, "deal").random()
    assert rng(42, "deal", 1).random() != rng(42, "deal", 2).random()
    # fixed value: string seeds are hashed with SHA-512, stable across processes and machines
    assert rng(1, "x").randrange(10**6) == rng("1", "x").randrange(10**6)


def test_rule_errors_have_stable_codes_and_json_frames():
    err = WrongPhase("draw", "guess", ("draw_card", "tick"))
    assert err.code == "wrong_phase"
    assert err.to_dict() == {
        "code": "wrong_phase",
        "message": "move 'guess' is not allowed in phase 'draw' (allowed: draw_card, tick)",
        "phase": "draw",
        "move": "guess",
        "allowed": ["draw_card", "tick"],
    }
    assert isinstance(TooManyStrokes("x"), RuleError) and TooManyStrokes.code == "too_many_strokes"
    codes = [c.code for c in RuleError.__subclasses__()]
    assert len(codes) == len(set(codes))
    assert AlreadyGuessed("again").to_dict()["code"] == "already_guessed"


def test_phases_are_data_and_check_phase_names_the_phase():
    phases = {"a": Phase(name="a", moves=("x",)), "b": Phase(name="b", moves=())}
    check_phase(phases, "a", "x")
    with pytest.raises(WrongPhase, match="phase 'b'"):
        check_phase(phases, "b", "x")


def test_events_for_filters_private_events():
    public = Event(kind="p")
    mine = Event(kind="m", to=("ana",))
    assert events_for([public, mine], "ana") == [public, mine]
    assert events_for([public, mine], "bob") == [public]


def test_models_are_immutable():
    seg = Segment(x0=0, y0=0, x1=1, y1=1)
    with pytest.raises(ValidationError):
        seg.x0 = 5  # type: ignore[misc]
    assert seg.replace(x0=5).x0 == 5 and seg.x0 == 0


def test_config_comes_from_yaml_and_can_be_overridden():
    k = KontourConfig.load()
    assert (k.timer_s, k.max_strokes, k.tie_window_s, k.target_score) == (30, 15, 0.3, 10)
    assert k.drawer_points == {"blue": 1, "orange": 2}
    assert KontourConfig.load(timer_s=5, geometry={"merge_gap_px": 1}).geometry.merge_gap_px == 1
    assert KontourConfig.load(geometry={"merge_gap_px": 1}).geometry.merge_angle_deg == 8
    p = PictomaniaConfig.load()
    assert (p.rounds, p.cards_per_round, p.round_timer_s) == (5, 6, 120)
    assert p.levels_per_round == (1, 2, 2, 3, 4)
    assert {n: p.tokens(n) for n in range(3, 7)} == {
        3: (3, 2),
        4: (3, 2, 2),
        5: (3, 2, 2, 1),
        6: (3, 2, 2, 1, 1),
    }
    assert p.unclaimed_penalty == "all"
    with pytest.raises(ValidationError):
        PictomaniaConfig.load(unclaimed_penalty="some")
    with pytest.raises(ValidationError):
        KontourConfig.load(no_such_key=1)


def test_games_imports_no_server_clock_model_or_global_random():
    forbidden_import = re.compile(
        r"^\s*(import|from)\s+(fastapi|starlette|asyncio|time|service|model|torch|uvicorn)\b"
    )
    global_random = re.compile(
        r"\brandom\.(random|randint|choice|choices|shuffle|sample|uniform|seed)\("
        r"|from random import|\bdatetime\.now\("
    )
    checked = []
    for path in sorted(GAMES.rglob("*.py")):
        rel = path.relative_to(GAMES).as_posix()
        checked.append(rel)
        for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            assert not forbidden_import.search(text), f"games/{rel}:{n}: {text.strip()}"
            assert not global_random.search(text), f"games/{rel}:{n}: {text.strip()}"
    assert {"core.py", "kontour.py", "pictomania.py", "geometry.py", "ai/driver.py"} <= set(checked)


# --------------------------------------------------------------------------------------------
# geometry: straightening


def wobbly(x0, y0, x1, y1, dev, n=11):
    """n points along the chord, every other inner point pushed `dev` px sideways."""
    length = math.hypot(x1 - x0, y1 - y0)
    nx, ny = -(y1 - y0) / length, (x1 - x0) / length
    pts = []
    for i in range(n):
        t = i / (n - 1)
        off = dev if 0 < i < n - 1 and i % 2 else 0.0
        pts.append((x0 + t * (x1 - x0) + off * nx, y0 + t * (y1 - y0) + off * ny))
    return pts


@pytest.mark.parametrize(
    "points, straight",
    [
        # (stroke, accepted?) -- tolerance = clamp(0.08 * chord, 3, 20) px
        (wobbly(0, 0, 100, 0, 0), True),  # ruler-straight
        (wobbly(0, 0, 100, 0, 7.9), True),  # 100 px long, 7.9 px wobble < 8
        (wobbly(0, 0, 100, 0, 8.5), False),  # 8.5 px > 8: a bow, not a line
        (wobbly(0, 0, 30, 40, 2.9), True),  # 50 px diagonal, floor of 3 px
        (wobbly(0, 0, 500, 0, 19), True),  # long line: 40 px allowed by ratio, capped at 20
        (wobbly(0, 0, 500, 0, 25), False),
        ([(0, 0), (50, 50), (100, 0)], False),  # a V
        ([(0, 0), (100, 0), (60, 0)], False),  # overshoot and back: 40 px past the end
        ([(10, 10), (12, 11)], False),  # a dot (< 5 px)
        ([(10, 10)], False),
    ],
)
def test_straighten_table(points, straight):
    if straight:
        seg = straighten(points, GEO)
        assert (seg.start, seg.end) == (tuple(map(float, points[0])), tuple(map(float, points[-1])))
    else:
        with pytest.raises(NotAStraightLine) as err:
            straighten(points, GEO)
        assert err.value.code == "not_a_straight_line"


def test_a_quarter_circle_is_refused_with_its_deviation():
    arc = [(100 * math.cos(a / 20 * math.pi / 2), 100 * math.sin(a / 20 * math.pi / 2)) for a in range(21)]
    with pytest.raises(RuleError) as err:
        straighten(arc, GEO)
    assert err.value.details["deviation"] > 20


# --------------------------------------------------------------------------------------------
# geometry: extensions


def seg(x0, y0, x1, y1):
    return Segment(x0=x0, y0=y0, x1=x1, y1=y1)


@pytest.mark.parametrize(
    "new, extension",
    [
        (seg(100, 0, 160, 0), True),  # continues from the end
        (seg(108, 1, 160, 2), True),  # starts 8 px after the end, nearly the same direction
        (seg(-60, 0, -5, 0), True),  # extends backwards from the start
        (seg(160, 0, 100, 0), True),  # drawn in the other direction
        (seg(20, 0, 80, 0), True),  # retraces part of the line
        (seg(130, 0, 200, 0), False),  # same line but 30 px gap: a separate stroke
        (seg(100, 0, 160, 20), False),  # ~18 degrees off: a new direction
        (seg(0, 10, 100, 10), False),  # parallel, 10 px away
        (seg(100, 0, 100, 60), False),  # perpendicular at the end (a corner)
    ],
)
def test_extension_table(new, extension):
    old = seg(0, 0, 100, 0)
    assert extends(old, new, GEO) is extension


def test_merge_spans_both_segments_on_the_old_line():
    merged = merge(seg(0, 0, 100, 0), seg(104, 1, 180, 1))
    assert merged.start == (0.0, 0.0)
    assert merged.end == pytest.approx((180.0, 0.0))
    assert merge(seg(0, 0, 100, 0), seg(-50, 0, 10, 0)).start == pytest.approx((-50.0, 0.0))


def test_close_parallel_long_lines_are_two_strokes():
    """A long line and its neighbour 6 px away over it (a ladder's sides, a road) do not merge."""
    old = seg(20, 100, 230, 100)
    assert not extends(old, seg(20, 106, 230, 106), GEO)
    assert extends(old, seg(20, 103, 230, 103), GEO)  # a retrace within the line's tolerance
    assert extends(old, seg(232, 100, 250, 101), GEO)  # continuing it still does


def test_find_extension_returns_the_earliest_matching_segment():
    segments = [seg(0, 50, 100, 50), seg(0, 0, 100, 0), seg(200, 0, 300, 0)]
    assert find_extension(segments, seg(105, 0, 150, 0), GEO) == 1
    assert find_extension(segments, seg(0, 100, 100, 100), GEO) is None


# --------------------------------------------------------------------------------------------
# geometry: properties


@settings(max_examples=60, deadline=None)
@given(
    x0=st.floats(0, 500),
    y0=st.floats(0, 500),
    angle=st.floats(0, 2 * math.pi),
    length=st.floats(10, 400),
    noise=st.lists(st.floats(-1, 1), min_size=1, max_size=20),
)
def test_any_slightly_noisy_line_is_accepted_and_kept_between_its_ends(x0, y0, angle, length, noise):
    x1, y1 = x0 + length * math.cos(angle), y0 + length * math.sin(angle)
    nx, ny = -math.sin(angle), math.cos(angle)
    inner = [
        (
            x0 + (i + 1) / (len(noise) + 1) * (x1 - x0) + 2.5 * n * nx,
            y0 + (i + 1) / (len(noise) + 1) * (y1 - y0) + 2.5 * n * ny,
        )
        for i, n in enumerate(noise)
    ]  # up to 2.5 px off the chord: under the 3 px floor
    seg_ = straighten([(x0, y0), *inner, (x1, y1)], GEO)
    assert seg_.length == pytest.approx(length)
    # a segment always extends itself, and merging with itself changes nothing
    assert extends(seg_, seg_, GEO)
    merged = merge(seg_, seg_)
    assert merged.length == pytest.approx(seg_.length, abs=1e-6)
