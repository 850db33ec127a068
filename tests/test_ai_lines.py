"""`to_kontour_lines`: any drawing to at most 15 straight lines."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.ai.lines import LineError, segment_count
from games.ai.lines import to_kontour_lines as _to_lines
from model.strokes import straight_lines


def to_kontour_lines(drawing, max_lines: int = 15):
    """The games front end with the one straight-line implementation injected (as callers do)."""
    return _to_lines(drawing, max_lines, straight_lines)


def circle(n: int = 100, r: float = 50.0) -> list:
    return [[[100 + r * math.cos(2 * math.pi * i / n) for i in range(n + 1)],
             [100 + r * math.sin(2 * math.pi * i / n) for i in range(n + 1)]]]


def test_a_circle_becomes_at_most_15_lines_on_the_circle() -> None:
    lines = to_kontour_lines(circle())
    assert 8 <= len(lines) <= 15
    for xs, ys in lines:
        assert len(xs) == len(ys) == 2
        for x, y in zip(xs, ys, strict=True):
            assert math.hypot(x - 100, y - 100) == pytest.approx(50, abs=1e-6)


def test_a_drawing_that_already_fits_is_unchanged() -> None:
    house = [[[0, 0, 100, 100, 0], [100, 0, 0, 100, 100]], [[0, 50, 100], [0, -40, 0]]]
    lines = to_kontour_lines(house)
    assert len(lines) == segment_count(house) == 6
    assert lines[0] == [[0.0, 0.0], [100.0, 0.0]]
    assert lines[-1] == [[50.0, 100.0], [-40.0, 0.0]]


def test_too_many_strokes_keeps_the_longest_in_drawing_order() -> None:
    strokes = [[[0, 10 + i], [i * 10, i * 10]] for i in range(20)]  # lengths 10..29
    lines = to_kontour_lines(strokes, max_lines=15)
    assert len(lines) == 15
    assert [line[0][1] for line in lines] == [10 + i for i in range(5, 20)]


def test_times_are_kept_with_their_points() -> None:
    stroke = [[0, 50, 100, 100], [0, 1, 0, 100], [0, 10, 20, 30]]
    lines = to_kontour_lines([stroke], max_lines=2)
    assert lines == [[[0.0, 100.0], [0.0, 0.0], [0.0, 20.0]], [[100.0, 100.0], [0.0, 100.0],
                                                               [20.0, 30.0]]]


@pytest.mark.parametrize(
    "bad, message",
    [([], "non-empty"), ("abc", "non-empty"), ([[[0, 1], [0]]], "differ"),
     ([[[0, 0], [5, 5]]], "no extent"), ([[["a", 1], [0, 1]]], "numbers"),
     ([[[0, 0], [0, 0]], [[9, 9], [9, 9]]], "only dots")],
)
def test_bad_drawings_raise_line_error(bad, message) -> None:
    with pytest.raises(LineError, match=message):
        to_kontour_lines(bad)


points = st.lists(st.tuples(st.floats(-500, 500), st.floats(-500, 500)), min_size=2, max_size=40)


def test_a_back_and_forth_stroke_keeps_a_line() -> None:
    assert len(to_kontour_lines([[[1, 0, 1], [0, 0, 0]]], max_lines=1)) == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(points, min_size=1, max_size=25), st.integers(1, 15))
def test_never_more_lines_than_allowed(strokes, max_lines) -> None:
    drawing = [[[p[0] for p in s], [p[1] for p in s]] for s in strokes]
    try:
        lines = to_kontour_lines(drawing, max_lines)
    except LineError:
        return  # degenerate drawings (a single point) are refused
    assert 1 <= len(lines) <= max_lines
    assert all(len(xs) == 2 and (xs[0], ys[0]) != (xs[1], ys[1]) for xs, ys in lines)
