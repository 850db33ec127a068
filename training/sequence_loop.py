"""The stroke-sequence members of the shipped two-view model: training one, comparing it with a raster
model, and attaching members to one (issue 12's "stroke-sequence member").

The raster model sees ink and a coarse order channel; a member reads each simplified drawing as
a sequence of points (position, step, stroke start and end, stroke rank), through 1-D convolutions
and a bidirectional GRU. It trains on the same split, class-balanced epochs and game-style
augmentations as the raster network (``training.train``, ``training.augment``), then reports the
headline metrics (``training.metrics``) of the member alone, of the raster model given with
``compare`` alone, and of the two pooled as a two-view checkpoint pools them. A member is trained
by the one training command, with a preset that says ``network: sequence`` (or ``--network
sequence``; its settings: :class:`training.settings.SequenceConfig`)::

    griffon train --preset sequence-untaught          # the shipped recipe's untaught member
    griffon train --network sequence --max-minutes 40 --compare runs/shipped/model.pt --out runs/seq

A member can also teach a raster student (``griffon train --sequence-teacher runs/sequence/sequence.pt``,
beside or instead of ``--teacher``): the distillation loop then hands it each augmented view as a
sequence, so the student keeps one raster model's speed (measured: the student gains nothing from it;
README).

The other way round, raster models can teach a member (``teacher``, their int8 copies by default):
each augmented view is also rasterized for them, and the member learns their averaged, softened
answers beside the labels (as the raster student does; ``training.distill``). The shipped recipe's
taught member learns lightly from member A (``training/presets/sequence-taught.yaml``). Other members
can teach one too (``sequence_teacher``, on ONNX Runtime by default), so that a member learns several
members' answers and still reads only the pen's path; both kinds of teacher can be given together,
each counting once in the average.

The simplified Quick, Draw! format keeps no timing, so the member sees order, not speed. The network,
its features, exact ONNX form and checkpoint live in ``model.sequence``; :func:`attach_member` writes
a new two-view checkpoint (raster network + one or more members, the members averaged into one
sequence view) that ``Guesser`` serves, and never writes over its inputs::

    griffon model attach --model runs/shipped/calibrated.pt --member runs/sequence/sequence.pt \
        --out runs/shipped/attached.pt
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from model import Guesser
from model.checkpoint import (
    DEFAULT_VIEW_POOL,
    VIEW_POOLS,
    CheckpointError,
    read_checkpoint,
    save_checkpoint,
)
from model.guesser import pool_views
from model.raster import RasterSpec, rasterize
from model.sequence import (
    FEATURES,
    MAX_STEPS,
    SequenceMember,
    StrokeSequenceNet,
    featurize,
    load_member,
    member_training,
    pad_sequences,
    save_member,
)
from training.augment import AugmentConfig, augment
from training.data import default_data_root, key_hash
from training.distill import distillation_loss, load_teachers, teacher_targets
from training.metrics import headline_metrics, mcnemar_p, rasterize_all
from training.outputs import new_output
from training.prepare import PreparedData, prepare_cached
from training.schedule import balanced_epoch, warmup_cosine
from training.settings import TEACHER_BACKENDS, SequenceConfig
from training.taught import drawing_target, with_cached_targets


def collate(items: list[tuple]) -> tuple[torch.Tensor, ...]:
    """Pad sequences to the longest of the batch: ``(features, lengths, labels)``, or
    ``(features, lengths, extras, labels)`` for items that carry the view's raster or the drawing's
    cached target too."""
    batch, lengths = pad_sequences([item[0] for item in items])
    labels = torch.tensor([item[-1] for item in items])
    if len(items[0]) == 2:
        return batch, lengths, labels
    return batch, lengths, torch.from_numpy(np.stack([item[1] for item in items])), labels


class AugmentedSequences(Dataset):
    """Augmented drawings as sequences; the RNG depends on (seed, epoch, position). With ``spec``
    each item also carries the same view rasterized, for raster teachers: ``(sequence, image, label)``;
    with ``cached`` (the public teachers' softened answers and which drawings have one,
    :func:`training.taught.with_cached_targets`) it carries the whole drawing's target:
    ``(sequence, target, label)``."""

    def __init__(
        self, data: PreparedData, order: np.ndarray, seed: int, epoch: int, spec: RasterSpec | None = None,
        augmentation: AugmentConfig | None = None, cached: tuple[np.ndarray, np.ndarray] | None = None,
    ):
        if spec is not None and cached is not None:
            raise ValueError("a member learns from raster teachers or from the teachers' cache, not both")
        self.data, self.order, self.seed, self.epoch, self.spec = data, order, seed, epoch, spec
        self.augment, self.cached = augmentation or AugmentConfig(), cached

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, position: int) -> tuple:
        index = int(self.order[position])
        rng = np.random.default_rng((self.seed, self.epoch, position))
        strokes, label = augment(self.data.strokes(index), rng, self.augment), int(self.data.labels[index])
        if self.cached is not None:
            return featurize(strokes), drawing_target(*self.cached, self.data.labels, index), label
        if self.spec is None:
            return featurize(strokes), label
        return featurize(strokes), rasterize(strokes, self.spec), label


def predict(network: StrokeSequenceNet, drawings: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """Class probabilities ``(n, classes)`` of the member for simplified drawings."""
    network.eval()
    batch, lengths = pad_sequences([featurize(strokes) for strokes in drawings])
    with torch.inference_mode():
        return torch.softmax(network(batch, lengths), dim=1).numpy()


@dataclass(frozen=True)
class Distillation:
    """Teachers for a member: the member learns ``(1 − weight) · cross-entropy + weight · τ² ·
    KL(teachers ‖ member)`` on each augmented view (``training.distill.teacher_targets``). Raster
    teachers (``--teacher``) read the same view rasterized; other stroke-sequence members
    (``--sequence-teacher``) read it as the member does. Each teacher counts once in the average."""

    teachers: tuple[Guesser, ...] = ()
    weight: float = 0.7
    temperature: float = 2.0
    sequence_teachers: tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], ...] = ()
    cached: tuple[np.ndarray, np.ndarray] | None = None  # (targets, has_target) of with_cached_targets

    def __post_init__(self) -> None:
        has_teachers = bool(self.teachers or self.sequence_teachers)
        if has_teachers == (self.cached is not None):
            raise ValueError("distillation needs teachers or the teachers' cached answers (one of the two)")
        if not 0.0 <= self.weight <= 1.0 or self.temperature <= 0:
            raise ValueError("distillation needs a weight in [0, 1] and a temperature > 0")


class OnnxSequenceTeacher:
    """A stroke-sequence teacher on ONNX Runtime (``model.sequence.SequenceMember``, about 3× faster
    than the packed PyTorch network, measured): called on padded sequences and their lengths, it returns
    log-probabilities, which serve as logits (``softmax(log p / τ) = softmax(z / τ)``)."""

    def __init__(self, network: StrokeSequenceNet) -> None:
        self.member = SequenceMember(network, "onnx")

    def __call__(self, batch: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        sequences = [row[:length].numpy() for row, length in zip(batch, lengths.tolist(), strict=True)]
        probs = np.maximum(self.member.probabilities(sequences), np.finfo(np.float32).tiny)
        return torch.from_numpy(np.log(probs))


def train_member(
    data: PreparedData, minutes: float, epochs: int, seed: int = 0, lr: float = 3e-3,
    per_class: int = 32, batch_size: int = 128, workers: int = 1, distillation: Distillation | None = None,
    width: int = 128, hidden: int = 128, augmentation: AugmentConfig | None = None,
    weight_decay: float = 0.05, label_smoothing: float = 0.1,
) -> tuple[StrokeSequenceNet, list[dict]]:
    """Train a member on the training split (validation held out) for ``epochs`` or ``minutes``,
    whichever ends first (the learning rate anneals over the budget, as in ``training.train``);
    with ``distillation`` it also learns its teachers' softened answers. ``width`` and ``hidden``
    size its convolutions and GRU (the shipped members: 128 and 128); ``augmentation`` defaults to the
    raster members' (``training.augment.AugmentConfig()``)."""
    torch.manual_seed(seed)
    network = StrokeSequenceNet(len(data.classes), width=width, hidden=hidden)
    optimizer = torch.optim.AdamW(network.parameters(), lr=lr, weight_decay=weight_decay)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=label_smoothing)
    pool = data.indices("train")
    rng = np.random.default_rng(seed)
    steps_per_epoch = math.ceil(len(data.classes) * per_class / batch_size)
    started, step, log = time.perf_counter(), 0, []

    def done() -> float:
        by_time = (time.perf_counter() - started) / 60 / minutes if minutes else 0.0
        return min(1.0, max(step / (steps_per_epoch * epochs), by_time))

    spec = distillation.teachers[0].spec if distillation and distillation.teachers else None
    cached = distillation.cached if distillation else None
    for epoch in range(epochs):
        order = balanced_epoch(data.labels, pool, per_class, rng)
        loader = DataLoader(
            AugmentedSequences(data, order, seed, epoch, spec, augmentation, cached), batch_size=batch_size,
            shuffle=False, num_workers=workers, collate_fn=collate, persistent_workers=False,
        )
        network.train()
        total = 0.0
        for batch in tqdm(loader, desc=f"epoch {epoch + 1}/{epochs}", leave=False):
            x, lengths, labels = batch[0], batch[1], batch[-1]
            rate = lr * warmup_cosine(step, steps_per_epoch, done())
            for group in optimizer.param_groups:
                group["lr"] = rate
            logits = network(x, lengths)
            loss = loss_fn(logits, labels)
            if distillation is not None:
                targets = batch[2] if cached is not None else teacher_targets(
                    distillation.teachers, batch[2] if spec is not None else None, distillation.temperature,
                    distillation.sequence_teachers, (x, lengths),
                )
                kd = distillation_loss(logits, targets, distillation.temperature)
                loss = (1 - distillation.weight) * loss + distillation.weight * kd
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(network.parameters(), 5.0)
            optimizer.step()
            total += loss.item()
            step += 1
        log.append({"epoch": epoch + 1, "loss": round(total / len(loader), 4),
                    "seconds": round(time.perf_counter() - started, 1)})
        print(json.dumps(log[-1]), flush=True)
        if done() >= 1.0:
            break
    return network, log


def compare(
    network: StrokeSequenceNet, raster: Guesser, data: PreparedData, split: str = "val"
) -> dict[str, dict]:
    """Headline metrics of the member, of the raster model and of the two views pooled as a two-view
    checkpoint pools them by default (:func:`model.guesser.pool_views`) on ``split``, and the paired
    McNemar p-value of the pooled answer against the raster model (whole drawings, top-1)."""
    indices = data.indices(split)
    drawings = [data.strokes(int(i)) for i in indices]
    labels = data.labels[indices]
    spec = raster.spec
    inputs = {
        "sequence": lambda part: part,
        "raster": lambda part: rasterize_all(part, spec),
        "pooled": lambda part: (part, rasterize_all(part, spec)),
    }
    models = {
        "sequence": lambda part: predict(network, part),
        "raster": raster.probabilities_from_images,
        "pooled": lambda pair: pool_views(
            raster.probabilities_from_images(pair[1]), predict(network, pair[0])
        ),
    }
    results = {
        name: headline_metrics(models[name], drawings, labels, spec, class_names=data.classes,
                               inputs=inputs[name])
        for name in models
    }
    chunks = range(0, len(drawings), 256)  # one more pass of each model over whole drawings
    by_sequence = np.concatenate([predict(network, drawings[s : s + 256]) for s in chunks])
    by_raster = np.concatenate(
        [raster.probabilities_from_images(rasterize_all(drawings[s : s + 256], spec)) for s in chunks]
    )
    right = {
        "raster": np.argmax(by_raster, axis=1) == labels,
        "pooled": np.argmax(pool_views(by_raster, by_sequence), axis=1) == labels,
    }
    only_pooled = int((right["pooled"] & ~right["raster"]).sum())
    only_raster = int((right["raster"] & ~right["pooled"]).sum())
    results["paired"] = {"only_pooled": only_pooled, "only_raster": only_raster,
                         "mcnemar_p": mcnemar_p(only_pooled, only_raster)}
    return results


def attach_member(
    model: Path | str,
    members: Path | str | Sequence[Path | str],
    out: Path | str,
    view_pool: str = DEFAULT_VIEW_POOL,
) -> Path:
    """Write a new two-view checkpoint ``out``: the raster model ``model`` with one or more
    stroke-sequence members (same classes). ``Guesser`` averages the members into the sequence view
    and pools that with the raster network, with equal weights, by ``view_pool`` (``log``: the
    normalised geometric mean, as measured by :func:`compare`; ``mean``: the average). The raster part
    keeps its weights, temperature, training record and metrics. ``out`` may not be one of the inputs
    (``CheckpointError``)."""
    paths = [members] if isinstance(members, (str, Path)) else list(members)
    out = new_output(out, [model, *paths], "attach")
    payload = read_checkpoint(model)
    if not paths:
        raise CheckpointError("attach needs at least one stroke-sequence member")
    half = any(t.dtype == torch.float16 for t in payload["state_dict"].values())
    attached = [
        {"features": FEATURES, "max_steps": MAX_STEPS, "training": member_training(path),
         "state_dict": load_member(path, payload["classes"]).state_dict()}
        for path in paths
    ]
    save_checkpoint(
        out,
        architecture=payload["architecture"]["name"],
        architecture_kwargs=payload["architecture"]["kwargs"],
        classes=payload["classes"],
        spec=payload["raster_spec"],
        state_dict=payload["state_dict"],
        training=payload.get("training"),
        metrics=payload.get("metrics"),
        temperature=payload.get("temperature", 1.0),
        half=half,
        sequence_members=attached,
        view_pool=view_pool,
    )
    return out


def attach_main(argv: list[str] | None = None) -> Path:
    """``griffon model attach --model M --member S [S2 …] --out O``: write the two-view checkpoint of
    the raster model and the member(s) to a new file."""
    parser = argparse.ArgumentParser(
        prog="griffon model attach", description="Write a two-view checkpoint: a raster model and its "
        "stroke-sequence member(s), to a new file (never over an input)."
    )
    parser.add_argument("--model", type=Path, required=True, help="raster checkpoint")
    parser.add_argument("--member", type=Path, nargs="+", required=True,
                        help="stroke-sequence member(s) (sequence.pt); several are averaged")
    parser.add_argument("--out", type=Path, required=True, help="the two-view checkpoint to write")
    parser.add_argument("--pool", choices=VIEW_POOLS, default=DEFAULT_VIEW_POOL,
                        help="how the raster network and the sequence view are pooled: log (their "
                             "normalised geometric mean, the default) or mean (their average)")
    args = parser.parse_args(argv)
    out = attach_member(args.model, args.member, args.out, args.pool)
    print(f"wrote {out}")
    return out


def check_sequence_config(config: SequenceConfig) -> None:
    """Refuse settings that cannot train, before any data is read (``ValueError`` naming the flag)."""
    try:
        AugmentConfig(**config.augment)
    except TypeError as error:
        raise ValueError(f"--augment: {error}") from None
    if not 0.0 <= config.distill_weight <= 1.0 or config.distill_temperature <= 0:
        raise ValueError("--distill-weight must lie in [0, 1] and --distill-temperature be > 0")
    if not (8 <= config.width <= 512 and 8 <= config.hidden <= 512):
        raise ValueError("--width and --hidden must lie between 8 and 512")
    if config.teacher_backend not in TEACHER_BACKENDS:
        raise ValueError(f"--teacher-backend must be one of {', '.join(TEACHER_BACKENDS)}")
    if config.split not in ("val", "dev"):
        raise ValueError("--split must be val or dev")
    if config.teacher_cache and (config.teacher or config.sequence_teacher):
        raise ValueError("--teacher-cache replaces --teacher and --sequence-teacher")


# the settings recorded in a member's checkpoint only when a run changes them (the shipped members'
# records name their epochs, seed and time budget only)
RECORDED_WHEN_CHANGED = ("categories", "per_class", "batch_size", "lr", "weight_decay", "label_smoothing")


def train_sequence(config: SequenceConfig) -> dict:
    """Train a member as ``config`` says (``network: sequence`` of ``griffon train``), compare it with
    ``config.compare`` when given, write ``sequence.pt`` and ``metrics.json`` under ``config.out``;
    returns the comparison's results (empty without ``compare``)."""
    check_sequence_config(config)
    augmentation = AugmentConfig(**config.augment)
    torch.set_num_threads(config.threads)
    root = default_data_root(config.data or None)
    wanted = [c for c in config.categories.split(",") if c] or None
    subset = "all" if wanted is None else f"subset-{key_hash(','.join(wanted)) % 10**8}"  # as the raster runs
    data = prepare_cached(root, Path(config.cache) / subset, wanted)
    raster = None
    if config.compare:
        raster = Guesser.load(config.compare, expected_classes=data.classes, backend="torch")
        if raster.member is not None:
            raise CheckpointError(f"{config.compare} is a two-view model; compare needs a raster-only one")
    distillation = None
    if config.teacher_cache:
        data, targets, has_target = with_cached_targets(
            data, config.teacher_cache, config.distill_temperature
        )
        distillation = Distillation(
            weight=config.distill_weight, temperature=config.distill_temperature, cached=(targets, has_target)
        )
    elif config.teacher or config.sequence_teacher:
        teachers = []
        if config.teacher:
            spec = read_checkpoint(config.teacher[0], expected_classes=data.classes)["raster_spec"]
            teachers = load_teachers(config.teacher, data.classes, spec, config.teacher_backend, str(root))
        members = tuple(
            load_member(path, data.classes) if config.teacher_backend == "torch"
            else OnnxSequenceTeacher(load_member(path, data.classes))
            for path in config.sequence_teacher
        )
        distillation = Distillation(
            tuple(teachers), config.distill_weight, config.distill_temperature, members
        )
    network, log = train_member(
        data, config.max_minutes, config.epochs, config.seed, lr=config.lr, per_class=config.per_class,
        batch_size=config.batch_size, workers=config.workers, distillation=distillation,
        width=config.width, hidden=config.hidden, augmentation=augmentation,
        weight_decay=config.weight_decay, label_smoothing=config.label_smoothing,
    )
    results = compare(network, raster, data, config.split) if raster is not None else {}
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    training: dict = {"epochs": len(log), "seed": config.seed, "minutes": config.max_minutes}
    if (config.width, config.hidden) != (128, 128):
        training.update(width=config.width, hidden=config.hidden)
    if config.augment:
        training.update(augment=dict(config.augment))
    defaults = SequenceConfig()
    training.update({k: getattr(config, k) for k in RECORDED_WHEN_CHANGED
                     if getattr(config, k) != getattr(defaults, k)})
    if distillation is not None:
        training.update(teachers=list(config.teacher), sequence_teachers=list(config.sequence_teacher),
                        distill_weight=config.distill_weight, distill_temperature=config.distill_temperature)
        if config.teacher_cache:
            training.update(teacher_cache=config.teacher_cache)
    training["command"] = config.command
    save_member(network, data.classes, out / "sequence.pt", training)
    record = {"split": config.split, "teachers": list(config.teacher), "teacher_cache": config.teacher_cache,
              "sequence_teachers": list(config.sequence_teacher),
              "distill_weight": config.distill_weight if distillation else None, "epochs": log, **results}
    (out / "metrics.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(results, indent=1))
    return results
