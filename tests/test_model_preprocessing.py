"""Stroke validation, the dataset's simplification rules, the rasterizer, and augmentation."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import strokes as strokes_module
from model.raster import RasterSpec, rasterize, rasterize_reference
from model.strokes import (
    MAX_POINTS,
    SIMPLIFIED_EXTENT,
    DrawingError,
    drawing_frame,
    rdp,
    rdp_strokes,
    resample,
    resample_corners,
    simplify_drawing,
    straight_lines,
    validate_drawing,
)
from training.augment import AugmentConfig, augment, first_fraction, kontour_style, partial


def circle(n: int = 200, radius: float = 300.0, cx: float = 500.0, cy: float = 400.0) -> list:
    """A hand-like circle in canvas pixels, with times."""
    angles = np.linspace(0, 2 * math.pi, n)
    return [
        [
            (cx + radius * np.cos(angles)).tolist(),
            (cy + radius * np.sin(angles)).tolist(),
            list(range(0, 10 * n, 10)),
        ]
    ]


@pytest.mark.parametrize(
    ("drawing", "message"),
    [
        ([], "empty"),
        ("cat", "list of strokes"),
        ([[[1, 2], [3]]], "same length"),
        ([[[], []]], "no points"),
        ([[[5], [5]]], "single point"),
        ([[[1, 1, 1], [2, 2, 2]]], "no extent"),
        ([[[1, float("nan")], [2, 3]]], "finite"),
        ([[[1, 2e9], [2, 3]]], "beyond"),
        ([[["a", "b"], [1, 2]]], "numbers"),
        ([[[0] * 6000, [0] * 6000], [[1] * 6000, [1] * 6000]], "too many points"),
        ([[[1, 2], [1, 2]]] * 1001, "too many strokes"),
        ([[[1, 2]]], "must be"),
    ],
)
def test_bad_drawings_raise_a_typed_error(drawing: object, message: str) -> None:
    with pytest.raises(DrawingError, match=message):
        validate_drawing(drawing)


def test_simplification_follows_the_dataset_rules() -> None:
    strokes = simplify_drawing(validate_drawing(circle() + [[[200, 800], [100, 100]]]))
    every = np.concatenate(strokes)
    # aligned to the top-left, scaled so the largest extent is 255
    assert every.min(axis=0) == pytest.approx([0, 0], abs=1e-9)
    assert np.ptp(every, axis=0).max() == pytest.approx(255.0)
    # a straight stroke keeps only its end points; the circle keeps far fewer than 200 points
    assert len(strokes[1]) == 2
    assert 10 < len(strokes[0]) < 60


def test_rdp_keeps_every_removed_point_within_epsilon_of_its_segment_line() -> None:
    rng = np.random.default_rng(0)
    points = np.cumsum(rng.normal(size=(300, 2)), axis=0) * 5
    kept = rdp(points, 2.0)
    index = [int(np.flatnonzero((points == point).all(axis=1))[0]) for point in kept]
    assert index == sorted(index) and index[0] == 0 and index[-1] == len(points) - 1
    for first, last in zip(index[:-1], index[1:], strict=True):
        start, end = points[first], points[last]
        direction = (end - start) / np.linalg.norm(end - start)
        inner = points[first + 1 : last] - start
        distance = np.abs(inner[:, 0] * direction[1] - inner[:, 1] * direction[0])
        assert (distance <= 2.0 + 1e-9).all()
    assert len(kept) < len(points)


def test_resample_spacing_is_one_pixel() -> None:
    out = resample(np.array([[0.0, 0.0], [10.0, 0.0]]), 1.0)
    assert np.allclose(np.diff(out[:, 0]), 1.0) and out[-1, 0] == 10.0


def scaled_like_simplification(drawing: list) -> list[np.ndarray]:
    """A drawing's strokes aligned and scaled to 0–255, as the simplification resamples them."""
    strokes = validate_drawing(drawing)
    min_x, min_y, extent = drawing_frame(strokes)
    return [(s - np.array([min_x, min_y])) * (SIMPLIFIED_EXTENT / extent) for s in strokes]


def canvas_zigzag(n: int = MAX_POINTS) -> list:
    """The worst drawing the validator allows: n points, every segment spanning the canvas."""
    i = np.arange(n)
    return [[np.where(i % 2 == 0, 0, 10_000).tolist(), i.tolist()]]


def test_resampled_point_count_is_bounded_by_the_input_for_adversarial_drawings() -> None:
    (stroke,) = scaled_like_simplification(canvas_zigzag())
    assert len(resample(stroke)) > 2_000_000  # what 1-pixel resampling would hand to RDP
    handed = resample_corners(stroke)  # what the simplification hands to RDP instead
    assert len(handed) <= 2 * MAX_POINTS + 1
    simplified = simplify_drawing(validate_drawing(canvas_zigzag()))
    assert 2 <= sum(len(s) for s in simplified) <= len(handed)
    assert np.array_equal(np.concatenate(simplified), rdp(handed))


@settings(max_examples=40, deadline=None)
@given(
    points=st.lists(
        st.tuples(st.floats(-1e4, 1e4), st.floats(-1e4, 1e4)), min_size=1, max_size=40
    ),
    strokes=st.integers(1, 5),
)
def test_candidate_count_never_exceeds_two_per_input_point(points: list, strokes: int) -> None:
    drawing = [[[x for x, _ in points[k::strokes]], [y for _, y in points[k::strokes]]]
               for k in range(min(strokes, len(points)))]
    try:
        scaled = scaled_like_simplification(drawing)
    except DrawingError:
        return
    for stroke in scaled:
        assert len(resample_corners(stroke)) <= 2 * len(stroke) + 1


def test_corner_resampling_simplifies_like_full_resampling() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 60))
        stroke = np.cumsum(rng.normal(size=(n, 2)) * rng.uniform(1, 40), axis=0)
        stroke = (stroke - stroke.min(axis=0)) * (255 / max(np.ptp(stroke, axis=0).max(), 1e-9))
        full, corners = rdp(resample(stroke)), rdp(resample_corners(stroke))
        assert full.shape == corners.shape and np.allclose(full, corners, atol=1e-9)
    closed = scaled_like_simplification([[[0, 100, 100, 0, 0], [0, 0, 100, 100, 0]]])[0]
    assert np.allclose(rdp(resample(closed)), rdp(resample_corners(closed)))


def test_rdp_over_a_drawing_equals_rdp_stroke_by_stroke() -> None:
    rng = np.random.default_rng(1)
    strokes = [np.cumsum(rng.normal(size=(int(rng.integers(1, 80)), 3)) * 4, axis=0) for _ in range(6)]
    together = rdp_strokes(strokes, 2.0)
    assert len(together) == len(strokes)
    for alone, joint in zip((rdp(s, 2.0) for s in strokes), together, strict=True):
        assert np.array_equal(alone, joint) and joint.shape[1] == 3


PLAIN_PYTHON_SIMPLIFY = """
import json, sys
from model.strokes import simplify_drawing, straight_lines, validate_drawing
drawings = [validate_drawing(d) for d in json.load(sys.stdin)]
json.dump([[[s.tolist() for s in simplify_drawing(d)], [s.tolist() for s in straight_lines(d)]]
           for d in drawings], sys.stdout)
"""


def test_compiled_kernels_compute_what_their_python_source_says() -> None:
    """The same drawings through the numba-compiled kernels and through their Python source
    (``NUMBA_DISABLE_JIT=1`` in a child process) give the same points, to the last bit."""
    rng = np.random.default_rng(3)
    tiny_stroke = [[[0, 300], [0, 0]], [[10, 10.5], [5, 5]]]  # shorter than one pixel once scaled
    dot_beside = [[[0, 3, 3], [0, 0, 0]], [[9], [9]]]
    drawings = [circle(), canvas_zigzag(300), tiny_stroke, dot_beside]
    for _ in range(30):
        sizes = rng.integers(1, 50, size=int(rng.integers(1, 6)))
        scale = rng.uniform(1, 60)
        drawings.append([np.cumsum(rng.normal(size=(2, n)) * scale, axis=1).tolist() for n in sizes])
    child = subprocess.run(
        [sys.executable, "-c", PLAIN_PYTHON_SIMPLIFY], input=json.dumps(drawings), capture_output=True,
        text=True, check=False, env={**os.environ, "NUMBA_DISABLE_JIT": "1"}, cwd=Path(__file__).parents[1],
    )
    assert child.returncode == 0, child.stderr[-2000:]
    for drawing, (plain, plain_lines) in zip(drawings, json.loads(child.stdout), strict=True):
        compiled = simplify_drawing(validate_drawing(drawing))
        assert [s.tolist() for s in compiled] == plain
        assert [s.tolist() for s in straight_lines(validate_drawing(drawing))] == plain_lines


def test_kernels_compile_without_a_disk_cache_where_none_can_be_written() -> None:
    namespace: dict = {}
    exec("def twice(x):\n    return 2 * x\n", namespace)  # no source file: numba cannot cache it
    twice = strokes_module._kernel(namespace["twice"])
    assert twice(21) == 42 and twice.py_func(4) == 8


def test_simplification_equals_resampling_then_rdp_stroke_by_stroke() -> None:
    rng = np.random.default_rng(2)
    for _ in range(50):
        drawing = [np.cumsum(rng.normal(size=(int(rng.integers(1, 40)), 2)) * 9, axis=0) for _ in range(4)]
        scaled = scaled_like_simplification([[s[:, 0].tolist(), s[:, 1].tolist()] for s in drawing])
        expected = [rdp(resample_corners(stroke)) for stroke in scaled]
        got = simplify_drawing(validate_drawing([[s[:, 0].tolist(), s[:, 1].tolist()] for s in drawing]))
        assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))


def centre_of_ink(image: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(image > 0.05)
    return np.array([(xs.min() + xs.max() + 1) / 2, (ys.min() + ys.max() + 1) / 2])


def test_raster_is_centred_on_the_bounding_box() -> None:
    spec = RasterSpec(size=48)
    strokes = [np.array([[0.0, 0.0], [200.0, 40.0]])]
    image = rasterize(strokes, spec)[0]
    assert centre_of_ink(image) == pytest.approx([24, 24], abs=1.0)


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(0.05, 40), dx=st.floats(-1e3, 1e3), dy=st.floats(-1e3, 1e3))
def test_raster_is_invariant_to_scale_and_translation(scale: float, dx: float, dy: float) -> None:
    strokes = simplify_drawing(validate_drawing(circle()))
    moved = [s * scale + np.array([dx, dy]) for s in strokes]
    spec = RasterSpec(size=32)
    assert np.abs(rasterize(strokes, spec) - rasterize(moved, spec)).max() < 0.02


def test_fast_raster_matches_the_reference() -> None:
    spec = RasterSpec(size=48, channels=("ink", "order"))
    strokes = simplify_drawing(validate_drawing(circle() + [[[200, 800, 500], [100, 100, 700]]]))
    fast, slow = rasterize(strokes, spec), rasterize_reference(strokes, spec)
    assert fast.shape == slow.shape == (2, 48, 48)
    assert np.abs(fast - slow).mean() < 0.03
    assert abs(fast.sum() - slow.sum()) / slow.sum() < 0.2


def test_order_channel_is_brighter_for_the_first_stroke() -> None:
    spec = RasterSpec(size=48, channels=("ink", "order"))
    strokes = [np.array([[0.0, 0.0], [100.0, 0.0]]), np.array([[0.0, 100.0], [100.0, 100.0]])]
    image = rasterize(strokes, spec)
    top, bottom = image[1, :24].max(), image[1, 24:].max()
    assert top == pytest.approx(1.0, abs=0.05) and bottom == pytest.approx(0.25, abs=0.05)
    assert image[0, :24].max() == pytest.approx(image[0, 24:].max(), abs=0.05)


def test_kontour_style_gives_at_most_15_straight_segments() -> None:
    strokes = simplify_drawing(validate_drawing(circle() + circle(50, 100) + circle(80, 30)))
    lines = kontour_style(strokes, 15)
    assert 3 <= len(lines) <= 15
    assert all(len(segment) == 2 for segment in lines)


def test_partial_and_first_fraction_keep_a_prefix() -> None:
    strokes = [np.full((2, 2), float(i)) for i in range(6)]
    half = first_fraction(strokes, 0.5)
    assert len(half) == 3 and half[0][0, 0] == 0 and half[-1][0, 0] == 2
    cut = partial(strokes, np.random.default_rng(1))
    assert 1 <= len(cut) <= 5 and all(a is b for a, b in zip(cut, strokes, strict=False))


def test_augment_is_deterministic_for_a_seed_and_never_empty() -> None:
    strokes = simplify_drawing(validate_drawing(circle() + [[[200, 800], [100, 100]]]))
    config = AugmentConfig(partial_p=0.5, kontour_p=0.5, dropout_p=0.5)
    for seed in range(20):
        a = augment(strokes, np.random.default_rng(seed), config)
        b = augment(strokes, np.random.default_rng(seed), config)
        assert len(a) >= 1 and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
        assert np.isfinite(np.concatenate(a)).all()
