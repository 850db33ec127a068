"""Every metric of one evaluated model (the ``metrics`` object of ``report.json``), game conditions
included (``training.metrics``: Kontour style restricted to the Kontour deck's words, real Pictomania
tables)."""

from __future__ import annotations

from typing import Any

import numpy as np

from training.eval_data import EvalData
from training.eval_models import ModelUnderTest
from training.eval_predict import ModelOutputs
from training.eval_settings import FULL, KONTOUR, EvalSettings
from training.metrics import (
    calibration,
    confused_pairs,
    expected_table_accuracy,
    kontour_deck_metrics,
    map_at_k,
    per_class_counts,
    pictomania_metrics,
    table_accuracies,
)


def table_name(headline: dict[str, Any]) -> str:
    """The random-table metric's prefix in a headline (``table42`` for tables of 42 classes)."""
    return next(key[: -len("_top1")] for key in headline if key.startswith("table") and key.endswith("_top1"))


def model_metrics(
    model: ModelUnderTest, out: ModelOutputs, data: EvalData, valid: np.ndarray, settings: EvalSettings
) -> dict[str, Any]:
    """Every metric of one model (the ``metrics`` object of ``report.json``)."""
    truth, probs = out.labels, out.full
    ranks = out.ranks[FULL]
    tables = table_accuracies(probs, truth, settings.table_size, settings.table_seeds)
    calib = calibration(probs, truth, settings.calibration_bins)
    games = {
        "kontour_deck": kontour_deck_metrics(model.labels, truth, out.kontour),
        "pictomania": pictomania_metrics(
            model.labels, truth, probs, settings.pictomania_levels, settings.pictomania_seeds
        ),
    }
    headline = {
        "drawings": int(len(truth)),
        "top1": float((ranks == 1).mean()),
        "top3": float((ranks <= 3).mean()),
        "map3": map_at_k(probs, truth, 3),
        "kontour_top1": float((out.ranks[KONTOUR] == 1).mean()),
        "kontour_top3": float((out.ranks[KONTOUR] <= 3).mean()),
        "half_top1": float((out.ranks["f0.5"] == 1).mean()) if "f0.5" in out.ranks else None,
        f"table{settings.table_size}_top1": float(np.mean(list(tables.values()))),
        f"table{settings.table_size}_expected": expected_table_accuracy(
            ranks, probs.shape[1], settings.table_size
        ),
        "kontour_deck_top1": games["kontour_deck"]["top1"],
        "kontour_deck_top3": games["kontour_deck"]["top3"],
        "pictomania_top1": games["pictomania"]["top1"],
        "ece": calib["ece"],
        "mean_confidence": float(probs.max(axis=1).mean()),
        "mean_true_probability": float(probs[np.arange(len(truth)), truth].mean()),
    }
    curve = [
        {
            "fraction": fraction,
            "top1": float((out.ranks[f"f{fraction:.1f}"] == 1).mean()),
            "top3": float((out.ranks[f"f{fraction:.1f}"] <= 3).mean()),
        }
        for fraction in settings.fractions
    ]
    counts = per_class_counts(probs, truth, len(model.labels), 3)
    per_category = {
        model.labels[c]: {
            "count": int(counts["count"][c]),
            "top1": counts["top1"][c] / counts["count"][c],
            "top3": counts["top3"][c] / counts["count"][c],
        }
        for c in sorted(set(truth.tolist()), key=lambda c: model.labels[c])
    }
    valid_keys = [key for key, ok in zip(data.key_ids, valid, strict=True) if ok]
    predicted = np.argmax(probs, axis=1)
    pairs = []
    for true, guess, count in confused_pairs(probs, truth, settings.top_pairs):
        where = np.flatnonzero((truth == true) & (predicted == guess))[: settings.examples_per_pair]
        pairs.append(
            {
                "true": model.labels[true],
                "predicted": model.labels[guess],
                "count": int(count),
                "share_of_true": count / int(counts["count"][true]),
                "examples": [valid_keys[i] for i in where],
            }
        )
    return {
        "headline": headline,
        "table_by_seed": {str(seed): value for seed, value in tables.items()},
        "game_conditions": games,
        "strokes_curve": curve,
        "per_category": per_category,
        "confused_pairs": pairs,
        "calibration": calib,
    }
