"""The stroke-sequence member of the shipped two-view model: training it, comparing it with a raster
model, and attaching it to one (issue 12's "stroke-sequence member").

The raster model sees ink and a coarse order channel; this member reads each simplified drawing as
a sequence of points (position, step, stroke start and end, stroke rank), through 1-D convolutions
and a bidirectional GRU. It trains on the same split, class-balanced epochs and game-style
augmentations as the raster members (``training.train``, ``training.augment``), then reports the
headline metrics (``training.metrics``) of the member alone, of the raster model given with
``--compare`` alone, and of the two averaged (probabilities, equal weights, fixed beforehand)::

    python -m training.sequence --minutes 40 --compare runs/shipped/model.pt --out runs/sequence

A member can also teach a raster student (``griffon train --sequence-teacher runs/sequence/sequence.pt``,
beside or instead of ``--teacher``): the distillation loop then hands it each augmented view as a
sequence, so the student keeps one raster model's speed (measured: the student gains nothing from it;
README).

The other way round, raster models can teach a member (``--teacher A B C D``, their int8 copies by
default): each augmented view is also rasterized for them, and the member learns their averaged,
softened answers beside the labels (as the raster student does in ``training.train``; measured:
alone it gains 9 points of top-1, beside the raster student it adds less than an untaught member;
README)::

    python -m training.sequence --epochs 50 --minutes 0 --teacher runs/member-a/model.pt \
        runs/member-b/model.pt runs/member-c/model.pt runs/member-d/model.pt --out runs/sequence-kd

Other members can teach one too (``--sequence-teacher``, on ONNX Runtime by default), so that a
member learns several members' answers and still reads only the pen's path; both kinds of teacher
can be given together, each counting once in the average.

The simplified Quick, Draw! format keeps no timing, so the member sees order, not speed. The network,
its features, exact ONNX form and checkpoint live in ``model.sequence``; ``attach`` writes a two-view
checkpoint (raster network + one or more members, the members averaged into one sequence view) that
``Guesser`` serves::

    python -m training.sequence attach --model runs/shipped/model.pt --member runs/sequence/sequence.pt \
        --out runs/shipped/two-view.pt
"""

from __future__ import annotations

import argparse
import json
import math
import sys
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
from training.data import default_data_root
from training.entry import run_command
from training.metrics import headline_metrics, mcnemar_p, rasterize_all
from training.prepare import PreparedData, prepare_cached
from training.schedule import balanced_epoch, warmup_cosine
from training.train import TEACHER_BACKENDS, distillation_loss, load_teachers, teacher_targets


def collate(items: list[tuple]) -> tuple[torch.Tensor, ...]:
    """Pad sequences to the longest of the batch: ``(features, lengths, labels)``, or
    ``(features, lengths, images, labels)`` for items that carry the view's raster too."""
    batch, lengths = pad_sequences([item[0] for item in items])
    labels = torch.tensor([item[-1] for item in items])
    if len(items[0]) == 2:
        return batch, lengths, labels
    return batch, lengths, torch.from_numpy(np.stack([item[1] for item in items])), labels


class AugmentedSequences(Dataset):
    """Augmented drawings as sequences; the RNG depends on (seed, epoch, position). With ``spec``
    each item also carries the same view rasterized, for raster teachers: ``(sequence, image, label)``."""

    def __init__(
        self, data: PreparedData, order: np.ndarray, seed: int, epoch: int, spec: RasterSpec | None = None,
        augmentation: AugmentConfig | None = None,
    ):
        self.data, self.order, self.seed, self.epoch, self.spec = data, order, seed, epoch, spec
        self.augment = augmentation or AugmentConfig()

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, position: int) -> tuple:
        index = int(self.order[position])
        rng = np.random.default_rng((self.seed, self.epoch, position))
        strokes, label = augment(self.data.strokes(index), rng, self.augment), int(self.data.labels[index])
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
    KL(teachers ‖ member)`` on each augmented view (``training.train.teacher_targets``). Raster
    teachers (``--teacher``) read the same view rasterized; other stroke-sequence members
    (``--sequence-teacher``) read it as the member does. Each teacher counts once in the average."""

    teachers: tuple[Guesser, ...] = ()
    weight: float = 0.7
    temperature: float = 2.0
    sequence_teachers: tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], ...] = ()

    def __post_init__(self) -> None:
        has_teachers = bool(self.teachers or self.sequence_teachers)
        if not has_teachers or not 0.0 <= self.weight <= 1.0 or self.temperature <= 0:
            raise ValueError("distillation needs teachers, a weight in [0, 1] and a temperature > 0")


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
) -> tuple[StrokeSequenceNet, list[dict]]:
    """Train a member on the training split (validation held out) for ``epochs`` or ``minutes``,
    whichever ends first (the learning rate anneals over the budget, as in ``training.train``);
    with ``distillation`` it also learns its teachers' softened answers. ``width`` and ``hidden``
    size its convolutions and GRU (the shipped members: 128 and 128); ``augmentation`` defaults to the
    raster members' (``training.augment.AugmentConfig()``)."""
    torch.manual_seed(seed)
    network = StrokeSequenceNet(len(data.classes), width=width, hidden=hidden)
    optimizer = torch.optim.AdamW(network.parameters(), lr=lr, weight_decay=0.05)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    pool = data.indices("train")
    rng = np.random.default_rng(seed)
    steps_per_epoch = math.ceil(len(data.classes) * per_class / batch_size)
    started, step, log = time.perf_counter(), 0, []

    def done() -> float:
        by_time = (time.perf_counter() - started) / 60 / minutes if minutes else 0.0
        return min(1.0, max(step / (steps_per_epoch * epochs), by_time))

    spec = distillation.teachers[0].spec if distillation and distillation.teachers else None
    for epoch in range(epochs):
        order = balanced_epoch(data.labels, pool, per_class, rng)
        loader = DataLoader(
            AugmentedSequences(data, order, seed, epoch, spec, augmentation), batch_size=batch_size,
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
                targets = teacher_targets(
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
    """Write a two-view checkpoint: the raster model ``model`` with one or more stroke-sequence
    members (same classes). ``Guesser`` averages the members into the sequence view and pools that
    with the raster network, with equal weights, by ``view_pool`` (``log``: the normalised geometric
    mean, as measured by :func:`compare`; ``mean``: the average). The raster part keeps its weights,
    temperature, training record and metrics."""
    payload = read_checkpoint(model)
    paths = [members] if isinstance(members, (str, Path)) else list(members)
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
    return Path(out)


def main(argv: list[str] | None = None) -> None:
    """Command line: train a member, compare it with a raster model, write ``metrics.json``; or
    ``attach --model M --member S [S2 …] --out O``: write the two-view checkpoint of the raster model
    and the member(s)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["attach"]:
        attach = argparse.ArgumentParser(prog="python -m training.sequence attach")
        attach.add_argument("--model", type=Path, required=True, help="raster checkpoint")
        attach.add_argument("--member", type=Path, nargs="+", required=True,
                            help="stroke-sequence member(s) (sequence.pt); several are averaged")
        attach.add_argument("--out", type=Path, required=True, help="the two-view checkpoint to write")
        attach.add_argument("--pool", choices=VIEW_POOLS, default=DEFAULT_VIEW_POOL,
                            help="how the raster network and the sequence view are pooled: log (their "
                                 "normalised geometric mean, the default) or mean (their average)")
        args = attach.parse_args(argv[1:])
        run_command(lambda: print(f"wrote {attach_member(args.model, args.member, args.out, args.pool)}"))
        return
    parser = argparse.ArgumentParser(prog="python -m training.sequence", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help="Quick, Draw! folder (default: training.data rule)")
    parser.add_argument("--cache", default="runs/prepared", help="prepared-data cache (as training.train)")
    parser.add_argument("--compare", default=None, help="raster-only checkpoint: compare, alone and pooled")
    parser.add_argument("--minutes", type=float, default=40.0, help="time budget (0: epochs only)")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--split", default="val", choices=("val", "dev"))
    parser.add_argument("--teacher", nargs="+", metavar="PATH", default=[],
                        help="raster checkpoints to distil from (same classes; validation held out)")
    parser.add_argument("--sequence-teacher", nargs="+", metavar="PATH", default=[],
                        help="stroke-sequence members to distil from (same classes; validation held out)")
    parser.add_argument("--teacher-backend", default="onnx-int8", choices=TEACHER_BACKENDS,
                        help="onnx-int8: raster teachers' int8 copies and members on ONNX Runtime")
    parser.add_argument("--distill-weight", type=float, default=0.7)
    parser.add_argument("--distill-temperature", type=float, default=2.0)
    parser.add_argument("--width", type=int, default=128, help="channels of the 1-D convolutions")
    parser.add_argument("--hidden", type=int, default=128, help="GRU hidden size (each direction)")
    parser.add_argument("--augment", type=json.loads, default={}, metavar="JSON",
                        help="overrides of the augmentation, e.g. '{\"partial_p\": 0.5}'; keys: "
                        + ", ".join(AugmentConfig().to_dict()))
    parser.add_argument("--out", default="runs/sequence")
    args = parser.parse_args(argv)
    try:
        augmentation = AugmentConfig(**args.augment)
    except TypeError as error:
        raise SystemExit(f"error: --augment: {error}") from None
    if not 0.0 <= args.distill_weight <= 1.0 or args.distill_temperature <= 0:
        raise SystemExit("error: --distill-weight must lie in [0, 1] and --distill-temperature be > 0")
    if not (8 <= args.width <= 512 and 8 <= args.hidden <= 512):
        raise SystemExit("error: --width and --hidden must lie between 8 and 512")
    torch.set_num_threads(args.threads)
    root = default_data_root(args.data)
    data = prepare_cached(root, Path(args.cache) / "all", None)
    raster = None
    if args.compare:
        raster = Guesser.load(args.compare, expected_classes=data.classes, backend="torch")
        if raster.member is not None:
            raise SystemExit(f"error: {args.compare} is a two-view model; --compare needs a raster-only one")
    distillation = None
    if args.teacher or args.sequence_teacher:
        teachers = []
        if args.teacher:
            spec = read_checkpoint(args.teacher[0], expected_classes=data.classes)["raster_spec"]
            teachers = load_teachers(args.teacher, data.classes, spec, args.teacher_backend, str(root))
        members = tuple(
            load_member(path, data.classes) if args.teacher_backend == "torch"
            else OnnxSequenceTeacher(load_member(path, data.classes))
            for path in args.sequence_teacher
        )
        distillation = Distillation(tuple(teachers), args.distill_weight, args.distill_temperature, members)
    network, log = train_member(
        data, args.minutes, args.epochs, args.seed, workers=args.workers, distillation=distillation,
        width=args.width, hidden=args.hidden, augmentation=augmentation,
    )
    results = compare(network, raster, data, args.split) if raster is not None else {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    training = {"epochs": len(log), "seed": args.seed, "minutes": args.minutes}
    if (args.width, args.hidden) != (128, 128):
        training.update(width=args.width, hidden=args.hidden)
    if args.augment:
        training.update(augment=dict(args.augment))
    if distillation is not None:
        training.update(teachers=args.teacher, sequence_teachers=args.sequence_teacher,
                        distill_weight=args.distill_weight, distill_temperature=args.distill_temperature)
    save_member(network, data.classes, out / "sequence.pt", training)
    record = {"split": args.split, "teachers": args.teacher, "sequence_teachers": args.sequence_teacher,
              "distill_weight": args.distill_weight if distillation else None, "epochs": log, **results}
    (out / "metrics.json").write_text(json.dumps(record, indent=1))
    print(json.dumps({name: value for name, value in results.items()}, indent=1))


if __name__ == "__main__":
    run_command(main)
