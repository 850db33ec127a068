"""Writes the model card that ships beside every checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

CARD = """# Griffon sketch recognizer — model card

**What it does.** Guesses which of {classes} Quick, Draw! categories a drawing shows, from its strokes
(rasterized to {size}×{size}, channels: {channels}). Used live, stroke by stroke, by Griffon's AI players.

**Architecture.** `{architecture}` {kwargs} — {params:,} parameters.

**Data.** Google's Quick, Draw! dataset (© Google, [CC BY 4.0](https://creativecommons.org/licenses/by/4.0/),
https://github.com/googlecreativelab/quickdraw-dataset), the subset at `{source}`: {drawings} drawings,
split by a hash of `key_id` — train {train} (of which dev {dev}), validation {val}. Held out from this
model's training: **{holdout}** ({held} drawings). Every drawing goes through the dataset's own
simplification (align, scale to 255, resample 1 px, RDP ε = 2) before rasterizing.

**Training.** `{command}` — {epochs} epochs, {per_class} drawings per class per epoch (class-balanced),
AdamW lr {lr}, cosine schedule, label smoothing {smoothing}, augmentation {augment}.
{seconds:.0f} s on this machine ({sps:.0f} samples/s).

**Metrics on the held-out {holdout} split** ({held} drawings, never trained on):

| condition | top-1 | top-3 |
|---|---|---|
| whole drawings | {full_top1} | {full_top3} |
| Kontour style (≤ 15 straight lines) | {kontour_top1} | {kontour_top3} |
| first half of the strokes | {half_top1} | {half_top3} |
| restricted to a table of 42 candidates | {table42_top1} | — |

**Limits.** Trained on ~25 drawings per category, mostly the first lines of Google's public files (not a
random sample): expect errors on unusual styles and on categories that look alike (see the evaluation
report's confusion pairs). Probabilities are softmax outputs at temperature {temperature}; check the
calibration section of `griffon eval` before relying on them as exact.
"""


def _pct(metrics: dict[str, Any], key: str) -> str:
    value = metrics.get(key)
    return f"{100 * value:.1f} %" if isinstance(value, float) else "—"


def write_model_card(
    path: Path, config: Any, meta: dict, metrics: dict, network: nn.Module, temperature: float = 1.0
) -> None:
    """Fill the card template from a run's settings, data metadata and metrics."""
    split = meta["per_split"]
    text = CARD.format(
        classes=len(meta["classes"]),
        size=config.size,
        channels=config.channels,
        architecture=config.architecture,
        kwargs=config.architecture_kwargs(),
        params=sum(p.numel() for p in network.parameters()),
        source=Path(meta["source"]).name,
        drawings=meta["drawings"],
        train=split["train"] + split["dev"],
        dev=split["dev"],
        val=split["val"],
        holdout=metrics.get("held_out", config.holdout),
        held=int(metrics.get("count", 0)),
        command=f"griffon train --preset {Path(config.out).name}",
        epochs=metrics.get("epochs_run"),
        per_class=config.per_class,
        lr=config.lr,
        smoothing=config.label_smoothing,
        augment=config.augment,
        seconds=metrics.get("train_seconds", 0.0),
        sps=metrics.get("train_samples_per_second", 0.0),
        temperature=temperature,
        **{k: _pct(metrics, k) for k in (
            "full_top1", "full_top3", "kontour_top1", "kontour_top3", "half_top1", "half_top3", "table42_top1"
        )},
    )
    path.write_text(text, encoding="utf-8")
