"""The sketch augmentations that are off by default: per-stroke deformation, order-weighted stroke
removal, line-width jitter."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from model.raster import RasterSpec, rasterize
from training.augment import (
    AugmentConfig,
    augment,
    jitter,
    kontour_style,
    line_width_view,
    order_dropout,
    partial,
    random_affine,
    stroke_deform,
    stroke_dropout,
)


def ladder(n: int = 8) -> list[np.ndarray]:
    """``n`` horizontal rungs, one stroke each, top to bottom."""
    return [np.array([[20.0, 30.0 * i], [220.0, 30.0 * i]]) for i in range(n)]


def augment_before(strokes: list[np.ndarray], rng: np.random.Generator, config: AugmentConfig) -> list:
    """``augment`` as it was before the new options (the shipped model's recipe)."""
    out = list(strokes)
    if rng.random() < config.partial_p:
        out = partial(out, rng)
    elif rng.random() < config.dropout_p:
        out = stroke_dropout(out, rng, config.dropout_stroke_p)
    if rng.random() < config.kontour_p:
        out = kontour_style(out, config.max_lines)
    out = random_affine(out, rng, config)
    if rng.random() < config.jitter_p:
        out = jitter(out, rng, config.jitter_sigma)
    return out


def test_off_by_default_leaves_the_random_stream_unchanged() -> None:
    """A run without the new augmentations gives exactly the views it gave before they existed."""
    config = AugmentConfig()
    assert config.stroke_deform_p == config.order_dropout_p == config.line_width_jitter == 0.0
    for seed in range(40):
        new, old = np.random.default_rng(seed), np.random.default_rng(seed)
        view, before = augment(ladder(), new, config), augment_before(ladder(), old, config)
        assert len(view) == len(before)
        assert all(np.array_equal(a, b) for a, b in zip(view, before, strict=True))
        assert new.random() == old.random()


def test_stroke_deform_moves_each_stroke_on_its_own() -> None:
    strokes = ladder(4)
    config = AugmentConfig(stroke_deform_degrees=0.0, stroke_deform_scale=0.0, stroke_deform_shift=5.0)
    out = stroke_deform(strokes, np.random.default_rng(1), config)
    shifts = [b - a for a, b in zip(strokes, out, strict=True)]
    for shift in shifts:  # a pure shift: every point of a stroke moves by the same vector
        assert np.allclose(shift, shift[0]) and np.abs(shift[0]).max() <= 5.0
    assert len({tuple(np.round(s[0], 6)) for s in shifts}) == 4  # each stroke its own
    rotated = stroke_deform(strokes, np.random.default_rng(2), AugmentConfig(stroke_deform_shift=0.0))
    for before, after in zip(strokes, rotated, strict=True):  # about the stroke's own centre
        assert np.allclose(before.mean(axis=0), after.mean(axis=0))
        length = np.linalg.norm(after[1] - after[0]) / np.linalg.norm(before[1] - before[0])
        assert 1 - 0.12 <= length <= 1 + 0.12


def test_order_dropout_forgets_late_strokes_more_often() -> None:
    strokes = ladder(10)
    kept = np.zeros(10)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        out = order_dropout(strokes, rng, 0.6)
        assert np.array_equal(out[0], strokes[0])  # the first stroke always stays
        for stroke in out:
            kept[int(round(stroke[0, 1] / 30))] += 1
    share = kept / 2000
    assert share[0] == 1.0 and share[-1] == pytest.approx(0.4, abs=0.04)
    assert share[4] == pytest.approx(1 - 0.6 * 4 / 9, abs=0.04)
    assert np.all(np.diff(share) < 0.05)  # non-increasing, up to noise
    assert order_dropout(strokes[:1], rng, 1.0) == strokes[:1]


def test_line_width_jitter() -> None:
    spec = RasterSpec(size=32, line_width=2.0, channels=("ink",))
    assert line_width_view(spec, np.random.default_rng(0), 0.0) is spec
    widths = [line_width_view(spec, np.random.default_rng(s), 0.5).line_width for s in range(200)]
    assert 1.0 <= min(widths) < 1.3 and 2.7 < max(widths) <= 3.0
    thin = rasterize(ladder(), replace(spec, line_width=1.0)).sum()
    thick = rasterize(ladder(), replace(spec, line_width=3.0)).sum()
    assert thick > 1.5 * thin  # the raster really changes
