"""Batch evaluation of one recognizer (or two, side by side) on a Quick, Draw! folder: the core of
``griffon eval``. One job per module:

- ``training.eval_data`` — :func:`load_eval_data` reads one split of a data folder (counting corrupt
  records per file) and :func:`restrict` checks its categories against the models;
- ``training.eval_models`` — the recognizers: :func:`load_model` (a checkpoint, as a
  :class:`model.Guesser`), :func:`as_model` (any predictor);
- ``training.eval_predict`` — rasterize every condition in worker processes, batched inference, latency;
- ``training.eval_metrics`` — every metric of one model, game conditions included;
- ``training.eval_compare`` — model B against model A (deltas, McNemar test);
- this module — :func:`evaluate` ties them together and :func:`write_report` writes ``report.json``
  (keys documented in ``docs/EVAL_REPORT.md``) and the self-contained ``report.html``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from model.strokes import simplify_drawing, validate_drawing
from training.eval_compare import compare_models
from training.eval_data import EvalData, data_summary, restrict
from training.eval_metrics import model_metrics
from training.eval_models import ModelUnderTest, Predictor, as_model
from training.eval_predict import ModelOutputs, measure_latency, run_models
from training.eval_settings import EvalError, EvalSettings

SCHEMA = "griffon-eval-report/1"


@dataclass
class EvalResult:
    """The report (``report.json``'s content) and the simplified strokes of its example drawings."""

    report: dict[str, Any]
    examples: dict[str, list[np.ndarray]]
    outputs: list[ModelOutputs]


def evaluate(
    models: Sequence[ModelUnderTest | Predictor],
    data: EvalData,
    settings: EvalSettings = EvalSettings(),
    progress: bool = True,
    skip_unknown: bool = False,
) -> EvalResult:
    """Evaluate one model (or two, the first as the reference) on ``data``; see the module docstring."""
    models = [as_model(m, name=getattr(m, "name", f"model{i + 1}")) for i, m in enumerate(models)]
    if not 1 <= len(models) <= 2:
        raise EvalError("evaluate one model, or two to compare")
    data = restrict(data, models, skip_unknown, settings.limit, settings.seed)
    environment = machine_environment()
    outputs, valid, timings = run_models(models, data, settings, progress)
    valid_data = data.subset([i for i, ok in enumerate(valid) if ok])
    reports = []
    for model, out in zip(models, outputs, strict=True):
        latency = measure_latency(model, valid_data, settings.latency_samples, settings.seed)
        latency["throughput"] = {
            "batch_size": settings.batch_size,
            "workers": timings["workers"],
            "pipeline_drawings_per_s": len(data) / timings["wall_seconds"],
            "inference_images_per_s": out.images / out.inference_seconds if out.inference_seconds else None,
            "preprocess_cpu_ms_per_drawing": 1000 * timings["preprocess_cpu_seconds"] / len(data),
            "conditions_per_drawing": len(settings.conditions()),
            "images_per_drawing": out.images / max(len(out.labels), 1),
            "wall_seconds": timings["wall_seconds"],
        }
        metrics = model_metrics(model, out, data, valid, settings)
        metrics["latency"] = latency
        reports.append({**_json_safe(model.info), "metrics": metrics})
    examples = {}
    wanted = {key for r in reports for pair in r["metrics"]["confused_pairs"] for key in pair["examples"]}
    for key, strokes in zip(data.key_ids, data.strokes, strict=True):
        if key in wanted:
            examples[key] = simplify_drawing(validate_drawing(strokes))
    settings_dict = asdict(settings)
    settings_dict["conditions"] = list(settings.conditions())
    report = {
        "schema": SCHEMA,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": settings_dict,
        "environment": {**environment, "load_average_end": _load_average()},
        "data": data_summary(data, valid),
        "models": reports,
        "comparison": compare_models(reports, outputs, settings) if len(models) == 2 else None,
    }
    return EvalResult(report, examples, outputs)


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def machine_environment() -> dict[str, Any]:
    """Where timings were taken: CPU count, torch threads, load average (1 min) at the start."""
    import platform

    import torch

    return {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "load_average_start": _load_average(),
    }


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def write_report(result: EvalResult, out: Path | str, html: bool = True) -> dict[str, Path]:
    """Write ``report.json`` (and ``report.html`` + ``strokes_curve.png``) under ``out``; returns paths."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "report.json"}
        paths["json"].write_text(json.dumps(result.report, indent=1, allow_nan=False), encoding="utf-8")
        if html:
            from training.report import render_html, strokes_curve_png

            paths["html"] = out / "report.html"
            paths["html"].write_text(render_html(result.report, result.examples), encoding="utf-8")
            paths["curve"] = out / "strokes_curve.png"
            paths["curve"].write_bytes(strokes_curve_png(result.report))
    except OSError as error:
        raise EvalError(f"cannot write the report under {out}: {error}") from error
    return paths


def default_workers() -> int:
    """Worker processes for preprocessing: the CPU count, at most 8."""
    return max(1, min(os.cpu_count() or 1, 8))
