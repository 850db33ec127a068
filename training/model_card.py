"""Writes the model card that ships beside every checkpoint."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch import nn

from training.outputs import refuse_shipped
from training.settings import TrainConfig

CARD = """# Griffon sketch recognizer — model card

**What it does.** Guesses which of {classes} Quick, Draw! categories a drawing shows, from its strokes
(rasterized to {size}×{size}, channels: {channels}). Used live, stroke by stroke, by Griffon's AI players.

**Architecture.** `{architecture}` {kwargs} — {params:,} parameters.{member}

**Data.** Google's Quick, Draw! dataset (© Google, [CC BY 4.0](https://creativecommons.org/licenses/by/4.0/),
https://github.com/googlecreativelab/quickdraw-dataset), the subset at `{source}`: {drawings} drawings,
split by a hash of `key_id` — train {train} (of which dev {dev}), validation {val}. Held out from this
model's training: **{holdout}** ({held} drawings). Every drawing goes through the dataset's own
simplification (align, scale to 255, resample 1 px, RDP ε = 2) before rasterizing.

{training}

**Metrics on the held-out {holdout} split** ({held} drawings, never trained on):

| condition | top-1 | top-3 |
|---|---|---|
| whole drawings | {full_top1} | {full_top3} |
| Kontour style (≤ 15 straight lines) | {kontour_top1} | {kontour_top3} |
| first half of the strokes | {half_top1} | {half_top3} |
| a random table of 42 candidates (seed 0; `griffon eval` averages seeds 0–2) | {table42_top1} | — |
| Kontour as played: Kontour style, among the deck's words | {kontour_deck_top1} | {kontour_deck_top3} |
| Pictomania as played: a dealt table, 6 cards × 7 related words | {pictomania_top1} | — |

The Pictomania table pools levels 1–4 and deal seeds 0–2 (`vocab.deal_table`); the random table and
the game conditions use fixed seeds, so a rerun gives the same numbers.

**Calibration.** Softmax temperature {temperature} ({temperature_source}).{pair_calibration}

{sources}**Limits.** {limits} Expect errors on unusual styles and on categories that look alike (see the
evaluation report's confusion pairs). Check the calibration section of `griffon eval` before relying on
the probabilities as exact.
"""

PUBLIC_CREDITS = (
    "The public models: DoodleNet (ml5.js, github.com/ml5js/ml5-data-and-models, MIT licence, Copyright (c) "
    "2018 ml5) and a small ResNet, quickdraw-prediction-model (github.com/jinnyday0719/quickdraw-prediction-"
    "model, MIT licence, Copyright (c) 2024 안서진), both trained by their authors on the full Quick, Draw! "
    "dataset (about 70,000 drawings a category); their weights and licences are in `model/public/`, read "
    "by our own code (`model/tfjs.py`)."
)
SCRATCH_LIMITS = (
    "Trained on ~25 drawings per category, mostly the first lines of Google's public files (not a random "
    "sample)."
)
PUBLIC_LIMITS = (
    "Its raster networks start from public models trained on the full dataset; our training adds ~25 "
    "drawings per category and 23,450 more of 33 categories. The public models most likely saw the "
    "validation drawings in their own training, so the absolute figures above are optimistic (more for "
    "whole drawings than for Kontour lines or halves, which they never saw); the comparisons with them, "
    "on the same drawings, are fair."
)


SOURCE_COLUMNS = (("top-1", "full_top1"), ("top-3", "full_top3"), ("Kontour", "kontour_top1"),
                  ("half", "half_top1"), ("table-42", "table42_top1"), ("Pictomania", "pictomania_top1"))


def sources_section(
    metrics: dict[str, Any],
    raster: dict[str, Any] | None = None,
    teachers: dict[str, dict[str, Any]] | None = None,
    members: int = 0,
) -> str:
    """The card's "What each part brought": the model's held-out metrics beside its raster network
    alone (``raster``: a two-view model's, with ``members`` stroke-sequence members) and beside the
    public teachers' (``teachers``: name -> metrics, their geometric mean included), with the
    differences in points. Empty when there is nothing to set beside the model."""
    rows: list[tuple[str, dict[str, Any]]] = [("this model", metrics)]
    if raster is not None:
        rows.append(("its raster network alone", raster))
    for name, values in (teachers or {}).items():
        shown = "the teachers' geometric mean" if name == "geometric mean" else f"teacher: {name}"
        rows.append((shown, values))
    if len(rows) == 1:
        return ""
    keys = [key for _, key in SOURCE_COLUMNS]

    def gains(better: dict[str, Any], base: dict[str, Any]) -> str:
        shown = [f"{100 * (better[key] - base[key]):+.1f} {title}" for title, key in SOURCE_COLUMNS
                 if isinstance(better.get(key), float) and isinstance(base.get(key), float)]
        return ", ".join(shown) or "—"

    lines = [
        "**What each part brought**, on the same held-out drawings (`griffon model ship`, "
        "`python -m training.model_card`):",
        "",
        "| reader | " + " | ".join(title for title, _ in SOURCE_COLUMNS) + " |",
        "|---|" + "---|" * len(keys),
        *(f"| {name} | " + " | ".join(_pct(values, key).removesuffix(" %") for key in keys) + " |"
          for name, values in rows),
        "",
    ]
    if raster is not None:
        plural = "s" * (members != 1)
        lines.append(f"- The stroke-sequence member{plural} (the pen's path and order), over the raster "
                     f"network alone, in points: {gains(metrics, raster)}.")
    mean = (teachers or {}).get("geometric mean")
    if mean is not None:
        lines.append(f"- The teachers' geometric mean, against this model, in points: {gains(mean, metrics)} "
                     "(negative: this model reads better than the teachers).")
    return "\n".join(lines) + "\n\n"


def _measured_calibration(metrics: dict[str, Any]) -> str:
    """The card's sentence on the held-out calibration (empty when it was not measured)."""
    ece, confidence, right = (metrics.get(k) for k in ("ece", "mean_confidence", "full_top1"))
    if not all(isinstance(v, float) for v in (ece, confidence, right)):
        return ""
    gap = confidence - right
    kind = "under-confident" if gap < -0.02 else "over-confident" if gap > 0.02 else "about right"
    return (f" On the held-out drawings, whole: a mean top-1 confidence of {confidence:.2f} for "
            f"{100 * right:.1f} % right ({kind}), expected calibration error {ece:.3f} (10 bins).")


def _pct(metrics: dict[str, Any], key: str) -> str:
    value = metrics.get(key)
    return f"{100 * value:.1f} %" if isinstance(value, float) else "—"


def _distillation(config: Any) -> str:
    """The card's sentences on where the run started, whom it learnt from and any extra training
    drawings (empty for none)."""
    parts = []
    if config.init:
        parts.append(f"Started from the weights of `{config.init}`.")
    sequence = list(config.sequence_teacher)
    if config.teacher or sequence:
        teachers = ", ".join(f"`{t}`" for t in [*config.teacher, *sequence])
        int8 = config.teacher_backend == "onnx-int8" and config.teacher
        which = "image " if sequence else ""
        parts.append(
            f"Distilled from {len(config.teacher) + len(sequence)} teacher(s) ({teachers}): weight "
            f"{config.distill_weight} on their averaged answers softened at temperature "
            f"{config.distill_temperature}, the rest on the labels"
            + (f" (the {which}teachers ran through their int8 copies)." if int8 else ".")
        )
        if sequence:
            parts.append(f"{len(sequence)} of them read stroke sequences (`training/sequence_loop.py`).")
    if getattr(config, "teacher_cache", "") and getattr(config, "cache_teachers", ""):
        parts.append(
            f"Learns, with weight {config.distill_weight}, the answers of `{config.cache_teachers}` as "
            f"published on each whole drawing (cached in `{config.teacher_cache}`), softened at temperature "
            f"{config.distill_temperature}, for every view of that drawing, and the labels with the rest, "
            "so that what it knew of whole drawings stays; the extra Quick, Draw! drawings of the cache (33 "
            "categories; © Google, CC BY 4.0) are training drawings too."
        )
    elif getattr(config, "teacher_cache", ""):
        parts.append(
            f"Distilled from two public Quick, Draw! classifiers through their answers cached in "
            f"`{config.teacher_cache}` (`training/taught.py`): weight {config.distill_weight} on the "
            f"geometric mean of their answers on each whole drawing, softened at temperature "
            f"{config.distill_temperature}, the rest on the labels, for every view of that drawing "
            f"(strokes of another drawing mixed in with probability {config.stroke_mix}). The teachers: "
            "DoodleNet (ml5.js, github.com/ml5js/ml5-data-and-models, MIT licence, Copyright (c) 2018 "
            "ml5) and a small ResNet (github.com/jinnyday0719/quickdraw-prediction-model, MIT licence, "
            "Copyright (c) 2024 안서진), both trained by their authors on the full Quick, Draw! "
            "dataset: what they bring is what about 70,000 drawings a category taught them (in paired "
            "runs on the dev band, docs/EXPERIMENTS.md « The public teachers », the same network taught "
            "this way read +1.5 and +3.1 top-1 over the labels alone in 6 epochs, two seeds, and +3.3 in "
            "18). The extra Quick, Draw! drawings of the cache (33 categories; © Google, CC BY 4.0) are "
            "training drawings too."
        )
    if config.icons:
        parts.append(
            f"Extra training drawings: the outline icons of {config.icons} mapped in "
            "`training/icons.yaml` (Lucide: ISC licence; Tabler Icons: MIT)."
        )
    return "\n" + " ".join(parts) if parts else ""


def _member(members: Sequence[nn.Module], trainings: Sequence[dict] = (), view_pool: str = "log") -> str:
    """The card's sentence on a two-view model's stroke-sequence member(s) (empty for none), with how
    each was trained when its checkpoint says (``sequence_training``) and how the views are pooled."""
    if not members:
        return ""
    sizes = [sum(p.numel() for p in member.parameters()) for member in members]
    params = f"{sizes[0]:,} parameters" + ("" if len(members) == 1 else " each")
    if len(set(sizes)) > 1:
        params = " + ".join(f"{size:,}" for size in sizes) + " parameters"
    records = [*trainings, *[{}] * (len(members) - len(trainings))]
    network = "1-D convolutions and a bidirectional GRU over the pen's path"
    trained = "trained by `griffon train` (network: sequence) on the same split"
    if len(members) == 1:
        recipe = _member_recipe(records[0])
        who = f"a stroke-sequence member's ({params}: {network}, {trained}{recipe}"
    else:
        recipes = "; ".join(f"member {i + 1}{_member_recipe(r) or ' (recipe not recorded)'}"
                            for i, r in enumerate(records))
        who = (f"a stroke-sequence view's, the average of {len(members)} members ({params}: {network}, "
               f"{trained}: {recipes}")
    whose = "the pair's" if len(members) == 1 else "the whole model's"
    pooled = "the normalised geometric mean" if view_pool == "log" else "the average"
    return (
        f"\nA **two-view model**: its answers are {pooled} of this network's and {who}, attached with "
        "`griffon model attach`; the Training line below is the raster network's). "
        f"The metrics are {whose}."
    )


def _member_recipe(training: dict) -> str:
    """``, 50 epochs (seed 0), taught by …`` from a member's training record (empty when unknown)."""
    if not training:
        return ""
    epochs = training.get("epochs")
    text = f", {epochs} epoch{'s' * (epochs != 1)} (seed {training.get('seed', 0)})" if epochs else ""
    if "width" in training or "hidden" in training:
        text += f", width {training.get('width', 128)}, hidden {training.get('hidden', 128)}"
    if training.get("augment"):
        changes = ", ".join(f"{key} {value}" for key, value in training["augment"].items())
        text += f", augmentation changed ({changes})"
    teachers = [*training.get("teachers", []), *training.get("sequence_teachers", [])]
    if teachers:
        names = ", ".join(f"`{t}`" for t in teachers)
        text += (
            f", taught by {len(teachers)} model(s) ({names}): weight {training.get('distill_weight')} on "
            f"their averaged answers softened at temperature {training.get('distill_temperature')}, "
            "the rest on the labels"
        )
    if training.get("teacher_cache"):
        text += (
            f", taught by the two public Quick, Draw! classifiers' answers cached in "
            f"`{training['teacher_cache']}` (DoodleNet and a small ResNet, both MIT licence): weight "
            f"{training.get('distill_weight')} on their geometric mean on each whole drawing, softened at "
            f"temperature {training.get('distill_temperature')}, the rest on the labels"
        )
    return text


def _training_line(config: Any, metrics: dict) -> str:
    """The card's Training paragraph for one trained network (its settings and what the run measured)."""
    command = config.command or f"griffon train --preset {Path(config.out).name}"
    averaging = f", weights averaged (EMA decay {config.ema})" if config.ema else ""
    start = ""
    if getattr(config, "architecture", "") == "public":
        start = (f" Starts from the public `{config.public}`'s own weights and reads its render (the "
                 "dataset's 28 × 28 `numpy_bitmap`); its batch normalisation keeps its learned statistics.")
    return (
        f"**Training.** `{command}` — {metrics.get('epochs_run')} epochs, {config.per_class} drawings "
        f"per class per epoch (class-balanced), AdamW lr {config.lr}, cosine schedule, label smoothing "
        f"{config.label_smoothing}{averaging}, augmentation {config.augment}.{start}{_distillation(config)}\n"
        f"{metrics.get('train_seconds', 0.0):.0f} s on this machine "
        f"({metrics.get('train_samples_per_second', 0.0):.0f} samples/s)."
    )


def committee_training(records: Sequence[dict], temperatures: Sequence[float]) -> str:
    """The card's Training paragraph for a committee: each member, how it was made, its temperature."""
    known = set(TrainConfig.__dataclass_fields__)
    lines = [
        f"**Training.** A committee of {len(records)} networks reading the same raster, pooled by their "
        "normalised geometric mean, each at its own temperature (`griffon model committee`):",
        "",
    ]
    for index, (record, temperature) in enumerate(zip(records, temperatures, strict=True)):
        if record.get("fine_tuned") is False:
            lines.append(f"{index + 1}. the public `{record.get('public')}` as published (temperature "
                         f"{temperature:g}): what it knew of whole drawings, untouched.")
            continue
        config = TrainConfig(**{k: v for k, v in record.items() if k in known})
        what = f"the public `{config.public}` fine-tuned" if config.architecture == "public" else "a network"
        text = _training_line(config, record.get("metrics", {})).removeprefix("**Training.** ")
        lines.append(f"{index + 1}. {what} (`{record.get('checkpoint', '?')}`, temperature {temperature:g}): "
                     + text.replace("\n", " "))
    return "\n".join(lines) + "\n\n" + PUBLIC_CREDITS


def write_model_card(
    path: Path,
    config: Any,
    meta: dict,
    metrics: dict,
    network: nn.Module,
    temperature: float = 1.0,
    members: Sequence[nn.Module] = (),
    pair_temperature: float = 1.0,
    members_training: Sequence[dict] = (),
    view_pool: str = "log",
    sources: str = "",
    committee: str = "",
) -> None:
    """Fill the card template from a run's settings, data metadata and metrics (``members``: the
    stroke-sequence members of a two-view model, whose metrics these are with the network's;
    ``members_training``: how each was trained; ``sources``: :func:`sources_section`; ``committee``:
    :func:`committee_training`, for a committee of raster networks)."""
    split = meta["per_split"]
    spec = config.raster_spec()
    public = bool(committee) or getattr(config, "architecture", "") == "public"
    text = CARD.format(
        classes=len(meta["classes"]),
        size=spec.size,
        channels=",".join(spec.channels) + (" — the dataset's own numpy_bitmap render" * public),
        architecture="committee" if committee else config.architecture,
        kwargs="" if committee else config.architecture_kwargs(),
        training=committee or _training_line(config, metrics),
        limits=PUBLIC_LIMITS if public else SCRATCH_LIMITS,
        params=sum(p.numel() for p in network.parameters()),
        member=_member(members, members_training, view_pool),
        source=Path(meta["source"]).name,
        drawings=meta["drawings"],
        train=split["train"] + split["dev"],
        dev=split["dev"],
        val=split["val"],
        holdout=metrics.get("held_out", config.holdout),
        held=int(metrics.get("held_out_drawings", metrics.get("count", 0))),
        temperature=temperature,
        temperature_source=metrics.get("temperature_source", "not fitted"),
        sources=sources,
        pair_calibration=("" if not members else (
            f" The two views' {'pool' if view_pool == 'log' else 'average'} is softened at temperature "
            f"{pair_temperature} "
            f"({metrics.get('pair_temperature_source', 'not fitted')})."
        )) + _measured_calibration(metrics),
        **{
            k: _pct(metrics, k)
            for k in (
                "full_top1",
                "full_top3",
                "kontour_top1",
                "kontour_top3",
                "half_top1",
                "half_top3",
                "table42_top1",
                "kontour_deck_top1",
                "kontour_deck_top3",
                "pictomania_top1",
            )
        },
    )
    path.write_text(text, encoding="utf-8")


def refresh(
    model_path: Path, data: Path | None = None, cache: Path = Path("runs/prepared/all"), store: bool = False,
    teachers: Path | None = None,
) -> dict:
    """Recompute a checkpoint's headline metrics on its held-out split (float reference weights) and
    rewrite ``MODEL_CARD.md`` beside it (after calibration, or with a newer metrics definition). The
    card sets a two-view model beside its raster network alone, and beside the public teachers of
    folder ``teachers`` when given (:func:`sources_section`).

    ``store`` also writes them into the checkpoint itself (its bytes change; the int8 copy beside it
    stays valid, since it is tied to the weights, which do not change)."""
    import torch

    from model import Guesser
    from model.checkpoint import sequence_training
    from training.data import default_data_root
    from training.metrics import headline_metrics
    from training.prepare import prepare_cached

    guesser = Guesser.load(model_path, backend="torch")  # the checkpoint's own float weights
    payload = torch.load(model_path, map_location="cpu", weights_only=True)
    known = set(TrainConfig.__dataclass_fields__)
    committee = ""
    record = payload["training"]
    if payload["architecture"]["name"] == "committee":  # the settings of its first trained member
        records = list(record.get("committee", []))
        committee = committee_training(records, payload["architecture"]["kwargs"]["temperatures"])
        record = next((r for r in records if r.get("fine_tuned") is not False), {})  # it names its style
    config = TrainConfig(**{k: v for k, v in record.items() if k in known})
    prepared = prepare_cached(default_data_root(data), cache, guesser.labels)
    held_out = prepared.indices(config.holdout)
    drawings = [prepared.strokes(int(i)) for i in held_out]
    metrics = headline_metrics(
        guesser.probabilities_from_views,
        drawings,
        prepared.labels[held_out],
        guesser.spec,
        class_names=guesser.labels,
        inputs=lambda part: [guesser.views(strokes) for strokes in part],
        calibrated=True,
    )
    payload["metrics"] = {**payload["metrics"], **metrics, "held_out_drawings": len(held_out)}
    raster = None
    if guesser.member is not None:
        raster = headline_metrics(guesser.raster_probabilities, drawings, prepared.labels[held_out],
                                  guesser.spec, class_names=guesser.labels)
    read_by_teachers = None
    if teachers is not None:
        from training.teachers import load_teachers, teacher_metrics

        read_by_teachers = teacher_metrics(load_teachers(teachers, classes=guesser.labels), drawings,
                                           prepared.labels[held_out])
    if store:
        torch.save(payload, model_path)
    write_model_card(
        Path(model_path).parent / "MODEL_CARD.md",
        config,
        prepared.meta,
        payload["metrics"],
        guesser.network,
        payload.get("temperature", 1.0),
        guesser.member.networks if guesser.member is not None else (),
        guesser.pair_temperature,
        sequence_training(payload),
        guesser.view_pool,
        sources_section(payload["metrics"], raster, read_by_teachers,
                        len(guesser.member.networks) if guesser.member is not None else 0),
        committee,
    )
    return payload["metrics"]


def main(argv: list[str] | None = None) -> dict:
    """Command line: recompute a checkpoint's metrics, rewrite its model card, print the metrics."""
    parser = argparse.ArgumentParser(
        description="Recompute a checkpoint's metrics and rewrite its model card."
    )
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument(
        "--store", action="store_true", help="also store the metrics in the checkpoint (changes its bytes)"
    )
    parser.add_argument(
        "--teachers", type=Path, default=None,
        help="the public teachers' folder (e.g. ../shared/models): their rows in the card's table",
    )
    args = parser.parse_args(argv)
    refuse_shipped(args.model, "python -m training.model_card")
    metrics = refresh(args.model, args.data, store=args.store, teachers=args.teachers)
    print(json.dumps(metrics, indent=1))
    return metrics


if __name__ == "__main__":
    from training.entry import run_command

    run_command(main)
