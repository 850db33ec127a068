"""Train the sketch recognizer. Reads top to bottom: settings, data, model, loop, checkpoint.

    python -m training.train --help                 # every setting
    python -m training.train --preset member-a      # an ensemble member (75 min on 2 CPU cores)
    python -m training.train --preset shipped       # the student: from scratch, taught by A, B, C, D
    python -m training.train --preset tiny --teacher runs/a/model.pt runs/b/model.pt   # distillation
    torchrun --nproc_per_node=2 -m training.train --preset tiny   # the same, distributed (DDP)

Settings come from the dataclass below, then a preset file (``training/presets/<name>.yaml``), then
command-line flags. Under ``torchrun`` each process trains on its share of every epoch's
class-balanced sample and gradients are averaged (DistributedDataParallel; gloo on CPU, nccl on GPU);
only rank 0 evaluates and writes files.

Distillation (``--teacher PATH [PATH...]``): every batch's augmented images (after mixup, when on)
are shown to the teachers too, through their public :class:`model.Guesser` (their own temperature
and flip TTA); their probabilities, softened by ``--distill-temperature``, are averaged and the
student learns ``(1 − w) · cross-entropy + w · τ² · KL(teachers ‖ student)`` with ``w`` =
``--distill-weight``. Teachers must share the student's class list and raster spec.
``--teacher-backend onnx-int8`` runs the teachers through their int8 copies (made by
``training.export`` when missing): about 6× faster than the float reference for four teachers.
``--init PATH`` starts from a checkpoint's weights instead of random ones (an earlier shipped student
started from its strongest teacher); a checkpoint of another architecture is refused.

Outline icons (``--icons lucide,tabler``): the hand-mapped icons of ``training/icons.yaml``, drawn as
strokes, join their categories' training drawings (training only; see :mod:`training.icons`).

Joint class × rotation labels (``--rotation-labels true``): each image is turned by 0, 90, 180 or
270° at random and the network learns ``class × 4 + turn`` over four times as many outputs; the
checkpoint keeps only the upright rows of the last layer, so it is an ordinary model of the classes.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import yaml
from torch import nn
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from model.checkpoint import CheckpointError, save_checkpoint
from model.guesser import Guesser
from model.network import create_model
from model.raster import RasterSpec, rasterize
from model.sequence import featurize, load_member, pad_sequences
from training.augment import AugmentConfig, augment, line_width_view
from training.data import default_data_root, key_hash
from training.icons import icon_drawings
from training.metrics import headline_metrics
from training.prepare import PreparedData, prepare_cached
from training.schedule import balanced_epoch, warmup_cosine

PRESETS_DIR = Path(__file__).resolve().parent / "presets"
TEACHER_BACKENDS = ("torch", "onnx-int8")


# -- settings ------------------------------------------------------------------------------------
@dataclass
class TrainConfig:
    """Every training setting (each one is a ``--flag`` of the command line), and the command line
    itself (``command``, recorded by :func:`parse_config`)."""

    data: str = ""  # Quick, Draw! folder; empty = the configured one (training.data.default_data_root)
    out: str = "runs/latest"  # where the checkpoint, model card and metrics go
    cache: str = "runs/prepared"  # prepared-data cache
    holdout: str = "val"  # what to leave out and report on: "val" (shipped) or "dev" (experiments)
    categories: str = ""  # comma-separated subset of classes (empty = all)
    architecture: str = "resnet"
    widths: str = "32,64,128,256"
    blocks: str = "1,1,1,1"
    dropout: float = 0.3
    size: int = 48
    line_width: float = 1.6
    channels: str = "ink,order"
    epochs: int = 40
    per_class: int = 32  # drawings per class and epoch (class-balanced sampling)
    batch_size: int = 128
    lr: float = 3e-3
    weight_decay: float = 0.05
    label_smoothing: float = 0.1
    warmup_epochs: float = 1.0
    workers: int = 1
    threads: int = 0  # torch intra-op threads per process (0 = leave torch's default)
    bf16: str = "auto"  # bf16 autocast on CPUs that support it: auto | on | off
    flip_tta: bool = False  # average with the mirrored image at inference
    seed: int = 0
    ema: float = 0.0  # decay of an exponential moving average of the weights, saved instead (0 = off)
    teacher: list[str] = field(default_factory=list)  # checkpoints to distil from (empty = no distillation)
    teacher_backend: str = "torch"  # the teachers' back-end: torch (float reference) or onnx-int8 (faster)
    sequence_teacher: list[str] = field(default_factory=list)  # stroke-sequence members (training.sequence)
    init: str = ""  # a checkpoint whose weights start the run (same classes, raster, architecture)
    distill_temperature: float = 2.0  # softens teacher and student distributions in the distillation loss
    distill_weight: float = 0.7  # share of the distillation loss (the rest: cross-entropy on the labels)
    mixup: float = 0.0  # α of Beta(α, α): mix pairs of images and their targets (0 = off)
    rotation_labels: bool = False  # joint class × rotation (0/90/180/270°) targets; upright rows shipped
    icons: str = ""  # outline icon sets added as training drawings, e.g. "lucide,tabler" (training/icons.py)
    eval_every: int = 10  # epochs between evaluations (0 = only at the end)
    max_minutes: float = 0.0  # time budget: the LR schedule anneals by time and training stops (0 = off)
    half_weights: bool = True  # store float16 weights (half the file size)
    augment: dict = field(default_factory=lambda: AugmentConfig().to_dict())
    command: str = ""  # the command line that made the run (recorded by parse_config; not a flag)

    def raster_spec(self) -> RasterSpec:
        """The raster spec of this run (the checkpoint's input contract)."""
        channels = tuple(c for c in self.channels.split(",") if c)
        return RasterSpec(size=self.size, line_width=self.line_width, channels=channels)

    def architecture_kwargs(self) -> dict:
        """Keyword arguments for :func:`model.network.create_model` (besides channels and classes)."""
        kwargs: dict = {"widths": [int(w) for w in self.widths.split(",")], "dropout": self.dropout}
        if self.architecture == "resnet":
            kwargs["blocks"] = [int(b) for b in self.blocks.split(",")]
        return kwargs


def parse_config(argv: list[str] | None = None) -> TrainConfig:
    """Defaults ← preset file ← flags."""
    parser = argparse.ArgumentParser(prog="griffon train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="", help=f"a preset name in {PRESETS_DIR} or a YAML path")
    for item in fields(TrainConfig):
        if item.name == "command":
            continue
        if item.name == "augment":
            keys = ", ".join(f"{k}={v}" for k, v in AugmentConfig().to_dict().items())
            example = '{"order_dropout_p": 0.3}'
            help_text = f"JSON overrides of the augmentation, e.g. '{example}'; keys: {keys}"
            parser.add_argument("--augment", type=json.loads, help=help_text)
            continue
        default = item.default
        kind = type(default)
        if item.name == "teacher":
            parser.add_argument("--teacher", nargs="+", metavar="PATH", help="checkpoints to distil from")
        elif item.name == "sequence_teacher":
            help_text = "stroke-sequence members (python -m training.sequence) to distil from as well"
            parser.add_argument("--sequence-teacher", nargs="+", metavar="PATH", help=help_text)
        elif kind is bool:
            parser.add_argument(f"--{item.name.replace('_', '-')}", type=_bool, help=f"default {default}")
        else:
            parser.add_argument(f"--{item.name.replace('_', '-')}", type=kind, help=f"default {default!r}")
    args = parser.parse_args(argv)
    config = TrainConfig()
    if args.preset:
        path = Path(args.preset)
        path = path if path.suffix else PRESETS_DIR / f"{args.preset}.yaml"
        if not path.is_file():
            parser.error(f"no preset {args.preset!r} (looked for {path})")
        for key, value in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            _set(config, key, value, parser)
    for key, value in vars(args).items():
        if key != "preset" and value is not None:
            _set(config, key, value, parser)
    config.command = "griffon train " + shlex.join(sys.argv[1:] if argv is None else argv)
    return config


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {text}")


def _set(config: TrainConfig, key: str, value: object, parser: argparse.ArgumentParser) -> None:
    if not hasattr(config, key):
        parser.error(f"unknown setting {key!r}")
    if key == "augment":
        value = {**config.augment, **dict(value)}  # type: ignore[arg-type]
        AugmentConfig(**value)  # validate names
    setattr(config, key, value)


# -- data ----------------------------------------------------------------------------------------
class AugmentedDrawings(Dataset):
    """Random augmented rasters of the chosen drawings; the RNG depends on (seed, epoch, position).

    With ``sequences`` each item also carries the same view as a stroke sequence, for the
    stroke-sequence teachers (``model.sequence.featurize``)."""

    def __init__(
        self, data: PreparedData, order: np.ndarray, spec: RasterSpec, config: TrainConfig, epoch: int,
        sequences: bool = False,
    ):
        self.data, self.order, self.spec = data, order, spec
        self.augment = AugmentConfig(**config.augment)
        self.seed, self.epoch, self.sequences = config.seed, epoch, sequences

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, position: int) -> tuple:
        index = int(self.order[position])
        rng = np.random.default_rng((self.seed, self.epoch, position))
        strokes = augment(self.data.strokes(index), rng, self.augment)
        spec = line_width_view(self.spec, rng, self.augment.line_width_jitter)
        image, label = torch.from_numpy(rasterize(strokes, spec)), int(self.data.labels[index])
        if not self.sequences:
            return image, label
        return image, featurize(strokes), label


def collate_views(items: list[tuple]) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
    """Batch ``(image, sequence, label)`` items: images, padded sequences with their lengths, labels."""
    sequences, lengths = pad_sequences([sequence for _, sequence, _ in items])
    images = torch.stack([image for image, _, _ in items])
    return images, (sequences, lengths), torch.tensor([label for _, _, label in items])


# -- distillation --------------------------------------------------------------------------------
def load_teachers(
    paths: list[str], classes: list[str], spec: RasterSpec, backend: str = "torch", data: str = ""
) -> list[Guesser]:
    """The teacher checkpoints as Guessers; raises ``CheckpointError`` when one does not share the
    student's class list or raster spec.

    ``backend``: ``torch`` (the float reference) or ``onnx-int8`` (each teacher's int8 copy, about
    6× faster for four teachers; made by :func:`training.export.export_checkpoint`, calibrated on
    the training split of ``data``, when it is missing or was made from other weights)."""
    if backend not in TEACHER_BACKENDS:
        raise ValueError(f"teacher_backend must be one of {', '.join(TEACHER_BACKENDS)}, not {backend!r}")
    checks = {"expected_classes": classes, "expected_raster": spec}
    teachers = []
    for path in paths:
        try:
            teachers.append(Guesser.load(path, backend=backend, **checks))
        except CheckpointError:
            if backend == "torch":
                raise
            Guesser.load(path, backend="torch", **checks)  # a bad checkpoint raises here, as in float
            from training.export import export_checkpoint  # only for int8 teachers

            export_checkpoint(Path(path), Path(data) if data else None)  # missing or stale int8 copy
            teachers.append(Guesser.load(path, backend=backend, **checks))
    return teachers


def start_from(network: nn.Module, path: str, classes: list[str], spec: RasterSpec) -> None:
    """Copy the weights of checkpoint ``path`` into ``network`` (``--init``: e.g. the student of a
    distillation starts from one of its teachers); raises ``CheckpointError`` when the checkpoint
    has other classes, another raster spec or another architecture."""
    start = Guesser.load(path, expected_classes=classes, expected_raster=spec, backend="torch")
    try:
        network.load_state_dict(start.network.state_dict())
    except RuntimeError as error:
        first = str(error).splitlines()[1].strip() if "\n" in str(error) else str(error)
        raise CheckpointError(f"{path}: its architecture differs from this run's ({first})") from None


def teacher_targets(
    teachers: Sequence[Guesser],
    images: torch.Tensor | None,
    temperature: float,
    sequence_teachers: Sequence[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = (),
    sequences: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """The teachers' averaged probabilities for ``images``, softened by ``temperature``; the
    stroke-sequence teachers read the same views as ``sequences`` (padded, lengths) and count as
    one teacher each (``images`` may be ``None`` when there are only those).

    A Guesser returns ``softmax(z / T)`` (its own temperature ``T``, flip TTA included), so
    ``softmax(T · log p / τ) = softmax(z / τ)``.
    """
    if teachers and images is None:
        raise ValueError("raster teachers need the views' images")
    if sequence_teachers and sequences is None:
        raise ValueError("stroke-sequence teachers need the views' sequences")
    answers = []
    batch = images.detach().float().cpu().numpy() if teachers and images is not None else None
    for teacher in teachers:
        probs = np.maximum(teacher.probabilities_from_images(batch), np.finfo(np.float32).tiny)
        answers.append(torch.softmax(torch.from_numpy(teacher.temperature * np.log(probs)) / temperature, 1))
    with torch.no_grad():  # targets, not inference tensors: the loss keeps them for its gradient
        answers += [torch.softmax(t(*sequences).float() / temperature, 1) for t in sequence_teachers]
    device = images.device if images is not None else sequences[0].device  # type: ignore[index]
    return torch.stack(answers).mean(0).to(device)


def distillation_loss(
    student_logits: torch.Tensor, targets: torch.Tensor, temperature: float
) -> torch.Tensor:
    """``τ² · KL(targets ‖ softmax(student / τ))``, averaged over the batch (Hinton et al., 2015)."""
    log_student = torch.log_softmax(student_logits.float() / temperature, dim=1)
    return nn.functional.kl_div(log_student, targets, reduction="batchmean") * temperature**2


def mix(
    images: torch.Tensor, alpha: float, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Mixup: ``λ · images + (1 − λ) · images[perm]`` with ``λ ~ Beta(α, α)``; returns the mixed
    images, the permutation and ``λ``."""
    lam = float(rng.beta(alpha, alpha))
    perm = torch.from_numpy(rng.permutation(len(images))).to(images.device)
    return lam * images + (1 - lam) * images[perm], perm, lam


# -- joint class × rotation labels ------------------------------------------------------------------
ROTATIONS = 4


def turn(
    images: torch.Tensor, labels: torch.Tensor, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Turn each image by a random multiple of 90° and label it ``class × 4 + turns``."""
    turns = torch.from_numpy(rng.integers(0, ROTATIONS, size=len(images))).to(images.device)
    out = images.clone()
    for k in range(1, ROTATIONS):
        chosen = turns == k
        out[chosen] = torch.rot90(images[chosen], k, dims=(2, 3))
    return out, labels * ROTATIONS + turns


def upright(network: nn.Module, turns: int) -> nn.Module:
    """The network itself (``turns`` = 1), else a copy whose last linear layer keeps the upright
    rows (``class × turns + 0``): an ordinary classifier of the classes."""
    if turns == 1:
        return network
    network = copy.deepcopy(network)
    head = [m for m in network.modules() if isinstance(m, nn.Linear)][-1]
    head.weight = nn.Parameter(head.weight.detach()[::turns].clone())
    head.bias = nn.Parameter(head.bias.detach()[::turns].clone())
    head.out_features = head.weight.shape[0]
    return network


# -- distributed ---------------------------------------------------------------------------------
def setup_distributed() -> tuple[int, int, torch.device]:
    """Join the process group when launched by torchrun; return (rank, world size, device)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1, torch.device("cpu")
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank = dist.get_rank()
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return rank, world, torch.device("cuda", local)
    return rank, world, torch.device("cpu")


def use_bf16(setting: str, device: torch.device) -> bool:
    """bf16 autocast when asked, or on ``auto`` when the CPU has native bf16 (or on a GPU)."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


# -- training ------------------------------------------------------------------------------------
def train(config: TrainConfig) -> dict:
    """Run one training; returns the final metrics (rank 0) and writes the checkpoint + card."""
    check_config(config)
    rank, world, device = setup_distributed()
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    root = default_data_root(config.data or None)
    wanted = [c for c in config.categories.split(",") if c] or None
    # A stable hash (not ``hash``, salted per process): every rank and every run finds the same cache.
    subset = "all" if wanted is None else f"subset-{key_hash(','.join(wanted)) % 10**8}"
    cache = Path(config.cache) / subset
    if rank == 0:
        data = prepare_cached(root, cache, wanted)
    if world > 1:
        dist.barrier()
    if rank != 0:
        data = prepare_cached(root, cache, wanted)
    if config.icons:
        drawings, labels = icon_drawings(data.classes, [name for name in config.icons.split(",") if name])
        data = data.with_extra(drawings, labels)
    spec = config.raster_spec()
    held_out = data.indices(config.holdout)
    pool = np.setdiff1d(data.indices("train"), held_out)
    arch_kwargs = config.architecture_kwargs()
    turns = ROTATIONS if config.rotation_labels else 1
    outputs = len(data.classes) * turns
    network = create_model(
        config.architecture, in_channels=len(spec.channels), num_classes=outputs, **arch_kwargs
    ).to(device)
    if config.init:
        start_from(network, config.init, data.classes, spec)
    model: nn.Module = network
    if world > 1:
        model = nn.parallel.DistributedDataParallel(
            network, device_ids=[device.index] if device.type == "cuda" else None
        )
    optimizer = torch.optim.AdamW(network.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    averaged = weight_average(network, config.ema)
    shipped = averaged.module if averaged is not None else network  # what is scored and saved
    steps_per_epoch = math.ceil(len(data.classes) * config.per_class / world / config.batch_size)
    total_steps = steps_per_epoch * config.epochs
    warmup = max(1, int(config.warmup_epochs * steps_per_epoch))
    started = time.perf_counter()

    def progress(step: int) -> float:
        """Fraction of training done: by steps, or by wall time when a time budget is set."""
        done = step / max(total_steps, 1)
        if config.max_minutes and world == 1:  # under DDP every rank must keep the same LR: steps only
            done = max(done, (time.perf_counter() - started) / 60 / config.max_minutes)
        return min(1.0, done)

    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda step: warmup_cosine(step, warmup, progress(step)),
    )
    loss_fn = nn.CrossEntropyLoss(label_smoothing=config.label_smoothing)
    if world > 1 and rank != 0:
        dist.barrier()  # rank 0 makes any missing int8 teacher copy first: one writer per file
    teachers = load_teachers(config.teacher, data.classes, spec, config.teacher_backend, config.data)
    if world > 1 and rank == 0:
        dist.barrier()
    sequence_teachers = [load_member(path, data.classes) for path in config.sequence_teacher]
    distilling = bool(teachers or sequence_teachers)
    bf16 = use_bf16(config.bf16, device)
    log: list[dict] = []
    samples = 0
    for epoch in range(config.epochs):
        model.train()
        order = balanced_epoch(
            data.labels, pool, config.per_class, np.random.default_rng((config.seed, epoch))
        )
        order = order[rank::world]
        loader = DataLoader(
            AugmentedDrawings(data, order, spec, config, epoch, sequences=bool(sequence_teachers)),
            batch_size=config.batch_size,
            shuffle=False,
            num_workers=config.workers,
            persistent_workers=False,
            collate_fn=collate_views if sequence_teachers else None,
        )
        running, seen = 0.0, 0
        mixing = np.random.default_rng((config.seed, epoch, rank, 1))
        turning = np.random.default_rng((config.seed, epoch, rank, 2))
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{config.epochs}", disable=rank != 0, leave=False)
        for batch in bar:
            images, labels = batch[0].to(device), batch[-1].to(device)
            sequences = batch[1] if sequence_teachers else None
            perm, lam = None, 1.0
            if config.rotation_labels:
                images, labels = turn(images, labels, turning)
            if config.mixup:
                images, perm, lam = mix(images, config.mixup, mixing)
            targets = None
            if distilling:
                targets = teacher_targets(
                    teachers, images, config.distill_temperature, sequence_teachers, sequences
                )
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                logits = model(images)
                loss = loss_fn(logits, labels)
                if perm is not None:
                    loss = lam * loss + (1 - lam) * loss_fn(logits, labels[perm])
            if targets is not None:
                kd = distillation_loss(logits, targets, config.distill_temperature)
                loss = (1 - config.distill_weight) * loss + config.distill_weight * kd
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            if averaged is not None:
                averaged.update_parameters(network)
            running += float(loss.detach()) * len(labels)
            seen += len(labels)
            bar.set_postfix(loss=f"{running / seen:.3f}")
        samples += seen * world
        entry = {"epoch": epoch + 1, "loss": running / max(seen, 1), "seconds": time.perf_counter() - started}
        last = epoch + 1 == config.epochs
        out_of_time = bool(config.max_minutes) and (time.perf_counter() - started) / 60 >= config.max_minutes
        if world > 1:  # rank 0's clock decides for everybody
            flag = torch.tensor([float(out_of_time)], device=device)
            dist.broadcast(flag, src=0)
            out_of_time = bool(flag.item())
        if rank == 0 and (
            last or out_of_time or (config.eval_every and (epoch + 1) % config.eval_every == 0)
        ):
            final = last or out_of_time
            if averaged is not None:
                raw = evaluate(upright(network, turns), data, held_out, spec, config.flip_tta, quick=True)
                entry.update({f"raw_{k}": v for k, v in raw.items()})
            scored = upright(shipped, turns)
            entry.update(evaluate(scored, data, held_out, spec, config.flip_tta, quick=not final))
        if rank == 0:
            tqdm.write(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in entry.items()}))
        log.append(entry)
        if out_of_time:
            break
    elapsed = time.perf_counter() - started
    metrics = {k: v for k, v in log[-1].items() if k not in ("epoch", "loss", "seconds")}
    metrics.update(
        held_out=config.holdout,
        epochs_run=len(log),
        train_seconds=round(elapsed, 1),
        train_samples_per_second=round(samples / elapsed, 1),
        train_drawings=int(len(pool)),
        held_out_drawings=int(len(held_out)),
    )
    if rank == 0:
        write_outputs(config, upright(shipped, turns), data, spec, arch_kwargs, metrics, log)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return metrics


def check_config(config: TrainConfig) -> None:
    """Refuse settings that cannot train, before any data is read (``ValueError``)."""
    if not 0.0 <= config.distill_weight <= 1.0 or config.distill_temperature <= 0 or config.mixup < 0:
        raise ValueError("distill weight must be in [0, 1], distill temperature > 0, mixup ≥ 0")
    if (config.teacher or config.sequence_teacher) and config.rotation_labels:
        raise ValueError("distillation with rotation labels is not supported (the teachers see no turns)")
    if config.sequence_teacher and config.mixup:
        raise ValueError("stroke-sequence teachers with mixup are not supported (a sequence cannot be mixed)")
    if config.init and config.rotation_labels:
        raise ValueError("--init with rotation labels is not supported (the checkpoint has 1 turn per class)")
    if config.teacher_backend not in TEACHER_BACKENDS:
        raise ValueError(f"teacher_backend must be one of {', '.join(TEACHER_BACKENDS)}")
    AugmentConfig(**config.augment)  # unknown augmentation keys raise TypeError


def weight_average(network: nn.Module, decay: float) -> torch.optim.swa_utils.AveragedModel | None:
    """An exponential moving average of the weights and BatchNorm statistics (None when decay is 0)."""
    if not decay:
        return None
    if not 0.0 < decay < 1.0:
        raise ValueError(f"ema must be in (0, 1), got {decay}")
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

    return AveragedModel(network, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=True)


def evaluate(
    network: nn.Module,
    data: PreparedData,
    indices: np.ndarray,
    spec: RasterSpec,
    flip_tta: bool,
    quick: bool,
) -> dict:
    """Headline metrics on held-out drawings (``quick``: full drawings only, for progress logs).

    Probabilities come from the public :class:`model.Guesser` around a CPU copy of the network, the
    same computation as at inference (flip TTA included when set); training is left untouched.
    """
    guesser = Guesser(copy.deepcopy(network).float().cpu(), data.classes, spec, flip_tta=flip_tta)
    drawings = [data.strokes(int(i)) for i in indices]
    labels = data.labels[indices]
    if not quick:
        return headline_metrics(
            guesser.probabilities_from_images, drawings, labels, spec, class_names=data.classes
        )
    from training.metrics import rasterize_all, topk_accuracy

    probs = np.concatenate(
        [
            guesser.probabilities_from_images(rasterize_all(drawings[s : s + 256], spec))
            for s in range(0, len(drawings), 256)
        ]
    )
    return {"full_top1": topk_accuracy(probs, labels, 1), "full_top3": topk_accuracy(probs, labels, 3)}


def write_outputs(
    config: TrainConfig,
    network: nn.Module,
    data: PreparedData,
    spec: RasterSpec,
    arch_kwargs: dict,
    metrics: dict,
    log: list[dict],
) -> None:
    """Write ``model.pt``, ``metrics.json``, ``train_log.json`` and ``MODEL_CARD.md`` under ``config.out``."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    training = asdict(config)
    training["data_sha256"] = data.meta["sha256"]
    save_checkpoint(
        out / "model.pt",
        architecture=config.architecture,
        architecture_kwargs=arch_kwargs,
        classes=data.classes,
        spec=spec,
        state_dict=network.state_dict(),
        training=training,
        metrics=metrics,
        half=config.half_weights,
    )
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1), encoding="utf-8")
    (out / "train_log.json").write_text(json.dumps(log, indent=1), encoding="utf-8")
    from training.model_card import write_model_card

    write_model_card(out / "MODEL_CARD.md", config, data.meta, metrics, network)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    train(parse_config(argv))


if __name__ == "__main__":
    from training.entry import run_command

    run_command(main)
