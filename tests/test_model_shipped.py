"""The shipped weights: they load importing only ``model/``, match the dataset's classes, and
recognise simple drawings that this test creates."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from model import DEFAULT_WEIGHTS, DrawingError, Guesser
from model.raster import RasterSpec
from tests.conftest import REPO, shape


@pytest.fixture(scope="module")
def shipped() -> Guesser:
    return Guesser.load()


def test_shipped_weights_load_importing_only_model() -> None:
    code = (
        "import sys; from model import Guesser; g = Guesser.load(); "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('training', 'games', 'service', 'vocab')]; "
        "print(len(g.labels), bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "345 []"


def test_shipped_weights_are_small_and_documented() -> None:
    assert DEFAULT_WEIGHTS.stat().st_size < 20 * 1024 * 1024
    card = (DEFAULT_WEIGHTS.parent / "MODEL_CARD.md").read_text()
    assert "Quick, Draw!" in card and "CC BY 4.0" in card and "griffon train" in card
    assert "A committee of 3 networks" in card and "as published" in card  # what it pools
    # the public models it starts from, credited with their MIT notices and measured beside it
    assert "Copyright (c) 2018 ml5" in card and "Copyright (c) 2024 안서진" in card
    assert "| teacher: quickdraw-resnet |" in card and "| teacher: doodlenet |" in card
    assert "most likely saw the validation drawings" in card


def test_shipped_model_reads_the_public_models_render(shipped: Guesser) -> None:
    """Its raster view is the public models' 28 × 28 render, read by a committee that starts from them
    (one int8 graph)."""
    import torch

    assert shipped.backend == "onnx-int8" and shipped.spec == RasterSpec.bitmap()
    architecture = torch.load(DEFAULT_WEIGHTS, weights_only=True)["architecture"]
    assert architecture["name"] == "committee" and len(architecture["kwargs"]["members"]) == 3
    views = shipped.prepare_views(shape("square", np.random.default_rng(1)))
    assert views.image.shape == (1, 28, 28)


def test_classes_are_the_official_categories_in_order(shipped: Guesser) -> None:
    listing = REPO / "model" / "weights" / "categories.txt"
    assert shipped.labels == listing.read_text().split("\n")[:-1]
    assert shipped.labels[:3] == ["aircraft carrier", "airplane", "alarm clock"]


@pytest.mark.parametrize("word", ["circle", "square", "triangle", "line"])
def test_shipped_model_recognises_simple_shapes(shipped: Guesser, word: str) -> None:
    rng = np.random.default_rng(7)
    hits = sum(word in [g.label for g in shipped.guess(shape(word, rng), top_k=5)] for _ in range(5))
    assert hits >= 3, f"{word} in the top 5 for only {hits} of 5 drawings"


def test_shipped_model_with_a_pictomania_table(shipped: Guesser) -> None:
    table = ["circle", "square", "triangle", "line", "cat", "house", "car"]
    rng = np.random.default_rng(3)
    for word in ("circle", "square", "triangle"):
        assert shipped.guess(shape(word, rng), top_k=1, candidates=table)[0].label == word


def test_bad_drawings_raise_typed_errors(shipped: Guesser) -> None:
    for bad in ([], [[[1], [1]]], [[[0, 1e12], [0, 1]]], [[list(range(10_001)), list(range(10_001))]]):
        with pytest.raises(DrawingError):
            shipped.guess(bad)
