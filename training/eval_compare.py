"""Comparison of two evaluated models (B against the reference A) on the same drawings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from training.eval_predict import ModelOutputs
from training.eval_settings import FULL, EvalSettings
from training.metrics import mcnemar_p


def compare_models(
    reports: Sequence[dict[str, Any]], outputs: Sequence[ModelOutputs], settings: EvalSettings
) -> dict[str, Any]:
    """Differences of model B against model A: headline deltas, curve deltas, categories, agreement."""
    a, b = reports[0]["metrics"], reports[1]["metrics"]
    headline = {
        key: {"a": a["headline"][key], "b": b["headline"][key], "delta": _delta(a, b, key)}
        for key in a["headline"]
        if key != "drawings"
    }
    curve = [
        {
            "fraction": pa["fraction"],
            "delta_top1": pb["top1"] - pa["top1"],
            "delta_top3": pb["top3"] - pa["top3"],
        }
        for pa, pb in zip(a["strokes_curve"], b["strokes_curve"], strict=True)
    ]
    changes = [
        {
            "category": word,
            "count": stats["count"],
            "a": stats["top1"],
            "b": b["per_category"][word]["top1"],
            "delta": b["per_category"][word]["top1"] - stats["top1"],
        }
        for word, stats in a["per_category"].items()
    ]
    changes.sort(key=lambda row: (-abs(row["delta"]), row["category"]))
    right_a = outputs[0].ranks[FULL] == 1
    right_b = outputs[1].ranks[FULL] == 1
    only_a, only_b = int((right_a & ~right_b).sum()), int((right_b & ~right_a).sum())
    return {
        "headline": headline,
        "strokes_curve": curve,
        "categories_changed_most": changes[: settings.per_category_changes],
        "agreement": {
            "both_right": int((right_a & right_b).sum()),
            "only_a_right": only_a,
            "only_b_right": only_b,
            "both_wrong": int((~right_a & ~right_b).sum()),
            "mcnemar_p": mcnemar_p(only_a, only_b),
        },
    }


def _delta(a: dict, b: dict, key: str) -> float | None:
    if a["headline"][key] is None or b["headline"][key] is None:
        return None
    return b["headline"][key] - a["headline"][key]
