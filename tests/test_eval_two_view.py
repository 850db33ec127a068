"""`griffon eval` and the model card on a two-view model (raster network + stroke-sequence member):
every condition is scored on the pair's answers, not the raster network's alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import typer
from typer.testing import CliRunner

from model import Guesser, Views, rasterize, simplify_drawing, validate_drawing
from model.sequence import featurize
from training.cli import register
from training.data import load_dataset
from training.model_card import refresh


def test_eval_scores_the_pair_and_compares_it_with_the_raster_network(
    two_view_checkpoint: Path, tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    app = typer.Typer()
    register(app)
    args = ["eval", "--model", str(two_view_checkpoint), "--compare", str(tiny_checkpoint), "--data",
            str(fixture_data), "--out", str(tmp_path), "--split", "all", "--workers", "0",
            "--latency-samples", "5", "--batch-size", "32", "--backend", "torch", "--no-html"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    pair, raster = (m["metrics"]["headline"] for m in report["models"])
    assert [(m["view_pool"], m["pair_temperature"]) for m in report["models"]] == [("log", 1.0), (None, None)]

    guesser = Guesser.load(two_view_checkpoint, backend="torch")
    records = load_dataset(fixture_data, "all")
    views = []
    for record in records:  # the evaluation's own path: rasters stored as uint8, then scaled back
        strokes = simplify_drawing(validate_drawing(record.strokes))
        image = np.round(rasterize(strokes, guesser.spec) * 255).astype(np.uint8).astype(np.float32) / 255
        views.append(Views(image, featurize(strokes)))
    probs = np.concatenate([guesser.probabilities_from_views(views[i : i + 32]) for i in range(0, 96, 32)])
    truth = np.array([guesser.labels.index(r.word) for r in records])
    assert pair["drawings"] == len(records) == 96
    assert pair["top1"] == float((probs.argmax(1) == truth).mean())
    agreement = report["comparison"]["agreement"]
    assert agreement["only_a_right"] + agreement["both_right"] == round(pair["top1"] * 96)
    assert report["models"][0]["metrics"]["latency"]["batch1_total_ms"]["samples"] >= 1
    raster_probs = Guesser.load(tiny_checkpoint, backend="torch").probabilities_from_images(
        np.stack([v.image for v in views])
    )
    assert not np.allclose(probs, raster_probs, atol=1e-3)  # the member does change the answers


def test_the_model_card_of_a_two_view_model_says_so_and_scores_the_pair(
    two_view_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    model = tmp_path / "model.pt"
    shutil.copy(two_view_checkpoint, model)
    metrics = refresh(model, fixture_data, cache=tmp_path / "cache")
    card = (tmp_path / "MODEL_CARD.md").read_text()
    assert "two-view model" in card and "The metrics are the pair's." in card
    assert f"{100 * metrics['full_top1']:.1f} %" in card
