"""``griffon train``: the one training entry point, for the raster network and the stroke-sequence
members. This module reads top to bottom: data, model, loop, checkpoint (of the raster network; a
preset with ``network: sequence`` runs :func:`training.sequence_loop.train_sequence` instead).

    griffon train --help                   # every setting of both networks (python -m training.train)
    griffon train --preset public-resnet   # the public ResNet fine-tuned for the games (a shipped member)
    griffon train --preset public-doodlenet  # the public DoodleNet, the same way
    griffon train --preset sequence-taught # a stroke-sequence member taught lightly by the cache
    griffon train --preset tiny --teacher runs/a/model.pt runs/b/model.pt   # distillation, seconds
    torchrun --nproc_per_node=2 -m training.train --preset tiny   # the raster loop, distributed (DDP)

Settings (``training.settings``) come from the network's dataclass, then a preset file
(``training/presets/<name>.yaml``), then command-line flags. Under ``torchrun`` each process trains on
its share of every epoch's class-balanced sample and gradients are averaged (DistributedDataParallel;
gloo on CPU, nccl on GPU); only rank 0 evaluates and writes files.

Distillation (``--teacher PATH [PATH...]``): every batch's augmented images (after mixup, when on)
are shown to the teachers too, through their public :class:`model.Guesser` (their own temperature
and flip TTA); their probabilities, softened by ``--distill-temperature``, are averaged and the
student learns ``(1 − w) · cross-entropy + w · τ² · KL(teachers ‖ student)`` with ``w`` =
``--distill-weight`` (``training.distill``). Teachers must share the student's class list and raster
spec. ``--teacher-backend onnx-int8`` runs the teachers through their int8 copies (made by
``training.export`` when missing): about 6× faster than the float reference for four teachers.
``--init PATH`` starts from a checkpoint's weights instead of random ones; a checkpoint of another
architecture is refused.

Outline icons (``--icons lucide,tabler``): the hand-mapped icons of ``training/icons.yaml``, drawn as
strokes, join their categories' training drawings (training only; see :mod:`training.icons`).

Joint class × rotation labels (``--rotation-labels true``): each image is turned by 0, 90, 180 or
270° at random and the network learns ``class × 4 + turn`` over four times as many outputs; the
checkpoint keeps only the upright rows of the last layer, so it is an ordinary model of the classes.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
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
from training.distill import distillation_loss, load_teachers, teacher_targets
from training.icons import icon_drawings
from training.metrics import headline_metrics
from training.model_card import write_model_card
from training.prepare import PreparedData, prepare_cached
from training.schedule import balanced_epoch, warmup_cosine
from training.sequence_loop import check_sequence_config, train_sequence
from training.settings import TEACHER_BACKENDS, SequenceConfig, TrainConfig, parse_config
from training.taught import drawing_target, mix_strokes, with_cached_targets


# -- data ----------------------------------------------------------------------------------------
class AugmentedDrawings(Dataset):
    """Random augmented rasters of the chosen drawings; the RNG depends on (seed, epoch, position).

    With ``sequences`` each item also carries the same view as a stroke sequence, for the
    stroke-sequence teachers (``model.sequence.featurize``). With ``targets`` (the teachers' cached
    answers, :mod:`training.taught`) an item is ``(image, target, label, partner label, λ)``: a view
    that took strokes of a partner drawing (``config.stroke_mix``) learns ``λ`` of its own drawing's
    target and label and ``1 − λ`` of the partner's (``λ``: its share of the ink; 1 without a partner).
    """

    def __init__(
        self, data: PreparedData, order: np.ndarray, spec: RasterSpec, config: TrainConfig, epoch: int,
        sequences: bool = False, targets: np.ndarray | None = None, has_target: np.ndarray | None = None,
    ):
        self.data, self.order, self.spec = data, order, spec
        self.augment = AugmentConfig(**config.augment)
        self.seed, self.epoch, self.sequences = config.seed, epoch, sequences
        self.targets, self.has_target, self.stroke_mix = targets, has_target, config.stroke_mix

    def __len__(self) -> int:
        return len(self.order)

    def _target(self, index: int) -> np.ndarray:
        return drawing_target(self.targets, self.has_target, self.data.labels, index)  # type: ignore[arg-type]

    def __getitem__(self, position: int) -> tuple:
        index = int(self.order[position])
        rng = np.random.default_rng((self.seed, self.epoch, position))
        strokes, partner, lam = self.data.strokes(index), index, 1.0
        if self.targets is not None and self.stroke_mix and rng.random() < self.stroke_mix:
            partner = int(self.order[int(rng.integers(len(self.order)))])
            strokes, lam = mix_strokes(strokes, self.data.strokes(partner), rng)
        strokes = augment(strokes, rng, self.augment)
        spec = line_width_view(self.spec, rng, self.augment.line_width_jitter)
        image, label = torch.from_numpy(rasterize(strokes, spec)), int(self.data.labels[index])
        if self.targets is not None:
            target = lam * self._target(index) + (1 - lam) * self._target(partner)
            return image, torch.from_numpy(target), label, int(self.data.labels[partner]), float(lam)
        if not self.sequences:
            return image, label
        return image, featurize(strokes), label


def collate_views(items: list[tuple]) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
    """Batch ``(image, sequence, label)`` items: images, padded sequences with their lengths, labels."""
    sequences, lengths = pad_sequences([sequence for _, sequence, _ in items])
    images = torch.stack([image for image, _, _ in items])
    return images, (sequences, lengths), torch.tensor([label for _, _, label in items])


# -- starting weights, mixup ---------------------------------------------------------------------
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


def native_cpu_bf16(cpuinfo: str | None = None) -> bool:
    """Whether the CPU computes bf16 natively (AVX512-BF16 or AMX flags in ``/proc/cpuinfo``).
    oneDNN also runs bf16 on plain AVX-512 by converting, which trains slower than fp32: on this
    project's Xeon (AVX-512, no BF16) a step of member A takes 3.9 s in bf16 and 3.0 s in fp32."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    lines = (line for line in cpuinfo.splitlines() if line.startswith("flags") and ":" in line)
    flags = next((line.split(":", 1)[1].split() for line in lines), [])
    return "avx512_bf16" in flags or "amx_bf16" in flags


def use_bf16(setting: str, device: torch.device) -> bool:
    """bf16 autocast when asked, or on ``auto`` when the CPU has native bf16 (or on a GPU)."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return native_cpu_bf16()


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
    cached = has_target = None
    if config.teacher_cache:
        data, cached, has_target = with_cached_targets(
            data, config.teacher_cache, config.distill_temperature,
            [name for name in config.cache_teachers.split(",") if name],
        )
    spec = config.raster_spec()
    held_out = data.indices(config.holdout)
    pool = np.setdiff1d(data.indices("train"), held_out)
    arch_kwargs = config.architecture_kwargs()
    if config.architecture == "public":  # its outputs are mapped onto the run's classes by name
        arch_kwargs["classes"] = list(data.classes)
    turns = ROTATIONS if config.rotation_labels else 1
    outputs = len(data.classes) * turns
    network = create_model(
        config.architecture, in_channels=len(spec.channels), num_classes=outputs, **arch_kwargs
    ).to(device)
    if config.init:
        start_from(network, config.init, data.classes, spec)
    network = network.to(memory_format=torch.channels_last)  # NHWC: 1.4-1.8x faster steps on CPU
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
    loss_each = nn.CrossEntropyLoss(label_smoothing=config.label_smoothing, reduction="none")
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
            AugmentedDrawings(
                data, order, spec, config, epoch, sequences=bool(sequence_teachers),
                targets=cached, has_target=has_target,
            ),
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
            if cached is not None:
                loss = taught_loss(model, batch, device, bf16, loss_each, config)
                labels = batch[2]
            else:
                images, labels = as_nhwc(batch[0], device), batch[-1].to(device)
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


def as_nhwc(images: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A batch of images on the device in the network's channels-last layout (same values)."""
    return images.to(device, memory_format=torch.channels_last)


def taught_loss(
    model: nn.Module, batch: list, device: torch.device, bf16: bool, loss_each: nn.Module, config: TrainConfig
) -> torch.Tensor:
    """``(1 − w) · cross-entropy + w · τ² · KL(target ‖ student)`` on a batch of
    :class:`AugmentedDrawings` with cached targets; a mixed view's cross-entropy is ``λ`` on its own
    label and ``1 − λ`` on its partner's."""
    images, targets, labels, partners, lams = (item.to(device) for item in batch)
    images = as_nhwc(images, device)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = model(images)
    logits = logits.float()
    lams = lams.float()
    ce = (lams * loss_each(logits, labels) + (1 - lams) * loss_each(logits, partners)).mean()
    kd = distillation_loss(logits, targets, config.distill_temperature)
    return (1 - config.distill_weight) * ce + config.distill_weight * kd


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
    if config.teacher_cache and (config.teacher or config.sequence_teacher or config.mixup):
        raise ValueError("--teacher-cache replaces --teacher and --sequence-teacher, and takes no mixup")
    if config.teacher_cache and config.rotation_labels:
        raise ValueError("--teacher-cache with rotation labels is not supported (the teachers see no turns)")
    if config.stroke_mix and not config.teacher_cache:
        raise ValueError("--stroke-mix needs --teacher-cache (a mixed view learns both drawings' targets)")
    if not 0.0 <= config.stroke_mix <= 1.0:
        raise ValueError("stroke_mix is a probability, in [0, 1]")
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
        state_dict={name: value.contiguous() for name, value in network.state_dict().items()},
        training=training,
        metrics=metrics,
        half=config.half_weights,
    )
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1), encoding="utf-8")
    (out / "train_log.json").write_text(json.dumps(log, indent=1), encoding="utf-8")
    write_model_card(out / "MODEL_CARD.md", config, data.meta, metrics, network)


def main(argv: list[str] | None = None) -> dict:
    """Command-line entry point: train the network the preset or ``--network`` names; a setting
    that cannot train ends the command with ``error: …`` before any data is read."""
    config = parse_config(argv)
    if isinstance(config, SequenceConfig):
        check, run = check_sequence_config, train_sequence
    else:
        check, run = check_config, train
    try:
        check(config)  # type: ignore[operator]
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    return run(config)  # type: ignore[operator]


if __name__ == "__main__":
    from training.entry import run_command

    run_command(main)
