"""A stroke-sequence member: an experiment that asks whether a network reading the pen's path in
drawing order adds to the shipped raster model (issue 12's "stroke-sequence member").

The raster model sees ink and a coarse order channel; this member reads each simplified drawing as
a sequence of points (position, step, stroke start and end, stroke rank), through 1-D convolutions
and a bidirectional GRU. It trains on the same split, class-balanced epochs and game-style
augmentations as the raster members (``training.train``, ``training.augment``), then reports the
headline metrics (``training.metrics``) of the member alone, of the raster model given with
``--compare`` alone, and of the two averaged (probabilities, equal weights, fixed beforehand)::

    python -m training.sequence --minutes 40 --compare model/weights/griffon-default.pt --out runs/sequence

A member can also teach a raster student (``griffon train --sequence-teacher runs/sequence/sequence.pt``,
beside or instead of ``--teacher``): the distillation loop then hands it each augmented view as a
sequence, so the student keeps one raster model's speed.

The simplified Quick, Draw! format keeps no timing, so the member sees order, not speed. The service
never loads a member (``model/`` knows only raster networks).
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from model import CheckpointError, Guesser
from training.augment import AugmentConfig, augment
from training.data import default_data_root
from training.metrics import headline_metrics, mcnemar_p, rasterize_all
from training.prepare import PreparedData, prepare_cached
from training.schedule import balanced_epoch, warmup_cosine

MAX_STEPS = 160  # points kept per drawing (evenly spaced when a drawing has more)
FEATURES = 7  # x, y, dx, dy, stroke start, stroke end, stroke rank


def featurize(strokes: Sequence[np.ndarray], max_steps: int = MAX_STEPS) -> np.ndarray:
    """A drawing as a ``(steps, FEATURES)`` float32 sequence, centred on its bounding box and scaled
    so its longer side spans 1: position, step from the previous point, whether the point starts or
    ends a stroke, and its stroke's rank (0 for the first stroke, 1 for the last)."""
    parts = [np.asarray(s, dtype=np.float64).reshape(-1, 2) for s in strokes if len(s)]
    if not parts:
        return np.zeros((1, FEATURES), dtype=np.float32)
    points = np.concatenate(parts)
    starts = np.concatenate([np.eye(1, len(p), 0).ravel() for p in parts])
    ends = np.concatenate([np.eye(1, len(p), len(p) - 1).ravel() for p in parts])
    rank = np.concatenate([np.full(len(p), i / max(len(parts) - 1, 1)) for i, p in enumerate(parts)])
    if len(points) > max_steps:
        keep = np.linspace(0, len(points) - 1, max_steps).round().astype(int)
        points, starts, ends, rank = points[keep], starts[keep], ends[keep], rank[keep]
    low, high = points.min(axis=0), points.max(axis=0)
    scale = max(float((high - low).max()), 1e-6)
    xy = (points - (low + high) / 2) / scale
    step = np.diff(xy, axis=0, prepend=xy[:1])
    return np.column_stack([xy, step * 4.0, starts, ends, rank]).astype(np.float32)


def collate(items: list[tuple[np.ndarray, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad sequences to the longest of the batch: ``(features, lengths, labels)``."""
    lengths = torch.tensor([len(seq) for seq, _ in items])
    batch = torch.zeros(len(items), int(lengths.max()), FEATURES)
    for row, (seq, _) in enumerate(items):
        batch[row, : len(seq)] = torch.from_numpy(seq)
    return batch, lengths, torch.tensor([label for _, label in items])


class StrokeSequenceNet(nn.Module):
    """1-D convolutions over the points, a bidirectional GRU, then mean and max over the steps."""

    def __init__(self, num_classes: int, width: int = 128, hidden: int = 128, dropout: float = 0.3):
        super().__init__()
        self.conv = nn.ModuleList(
            nn.Sequential(nn.Conv1d(cin, cout, kernel, padding=kernel // 2), nn.BatchNorm1d(cout), nn.ReLU())
            for cin, cout, kernel in ((FEATURES, 64, 5), (64, width, 5), (width, width, 3))
        )
        self.gru = nn.GRU(width, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(4 * hidden, num_classes))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits for padded sequences ``x`` ``(n, steps, FEATURES)`` of the given lengths."""
        steps = x.shape[1]
        mask = (torch.arange(steps)[None, :] < lengths[:, None]).unsqueeze(1)  # (n, 1, steps)
        h = x.transpose(1, 2) * mask
        for block in self.conv:  # padding stays zero: a drawing's answer does not depend on its batch
            h = block(h) * mask
        h = h.transpose(1, 2)
        mask = mask.transpose(1, 2)  # (n, steps, 1)
        packed = pack_padded_sequence(h, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.gru(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=steps)
        mean = (out * mask).sum(1) / lengths[:, None].clamp(min=1)
        peak = out.masked_fill(~mask, float("-inf")).max(1).values
        return self.head(torch.cat([mean, peak], dim=1))


class ExportableMember(nn.Module):
    """The same member without packed sequences, so ``torch.onnx.export`` can trace it: the GRU's
    backward direction runs forwards over each drawing reversed in place (padding stays at the end),
    which gives the packed network's answers on padded batches. Outputs probabilities."""

    def __init__(self, network: StrokeSequenceNet):
        super().__init__()
        gru = network.gru
        self.conv, self.head = network.conv, network.head
        self.forwards = nn.GRU(gru.input_size, gru.hidden_size, batch_first=True)
        self.backwards = nn.GRU(gru.input_size, gru.hidden_size, batch_first=True)
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(self.forwards, f"{name}_l0").data = getattr(gru, f"{name}_l0").data
            getattr(self.backwards, f"{name}_l0").data = getattr(gru, f"{name}_l0_reverse").data

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Probabilities for padded sequences ``x`` ``(n, steps, FEATURES)`` of the given lengths."""
        positions = torch.arange(x.shape[1])[None, :]
        mask = (positions < lengths[:, None]).unsqueeze(1)
        h = x.transpose(1, 2) * mask
        for block in self.conv:
            h = block(h) * mask
        h = h.transpose(1, 2)
        mask = mask.transpose(1, 2)
        mirror = torch.where(positions < lengths[:, None], lengths[:, None] - 1 - positions, positions)
        mirror = mirror.unsqueeze(2).expand(-1, -1, h.shape[2])  # its own inverse
        ahead, _ = self.forwards(h)
        behind, _ = self.backwards(torch.gather(h, 1, mirror))
        out = torch.cat([ahead, torch.gather(behind, 1, mirror)], dim=2)
        mean = (out * mask).sum(1) / lengths[:, None].clamp(min=1)
        peak = out.masked_fill(~mask, float("-inf")).max(1).values
        return torch.softmax(self.head(torch.cat([mean, peak], dim=1)), dim=1)


def export_member_onnx(network: StrokeSequenceNet, path: Path | str) -> Path:
    """Write the member as an ONNX graph (inputs ``sequences`` ``(n, steps, FEATURES)`` float32 and
    ``lengths`` ``(n,)`` int64; output ``probabilities``), for ONNX Runtime."""
    exportable = ExportableMember(network.eval()).eval()
    example = (torch.zeros(2, 8, FEATURES), torch.tensor([8, 5]))
    with warnings.catch_warnings():  # the TorchScript exporter (as model.runtime): deprecated, not removed
        warnings.simplefilter("ignore")
        torch.onnx.export(
            exportable, example, str(path), input_names=["sequences", "lengths"],
            output_names=["probabilities"], opset_version=17, dynamo=False,
            dynamic_axes={"sequences": {0: "n", 1: "steps"}, "lengths": {0: "n"}, "probabilities": {0: "n"}},
        )
    return Path(path)


def save_member(network: StrokeSequenceNet, classes: list[str], path: Path | str) -> None:
    """Write a member checkpoint: its weights, class list and the sequence format it reads."""
    payload = {"kind": "stroke-sequence", "state_dict": network.state_dict(), "classes": list(classes),
               "features": FEATURES, "max_steps": MAX_STEPS}
    torch.save(payload, path)


def load_member(path: Path | str, classes: list[str] | None = None) -> StrokeSequenceNet:
    """A member saved by this module, ready for inference; ``CheckpointError`` when the file is not
    one, reads another sequence format, or (with ``classes``) knows other classes."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(payload, dict) or payload.get("kind") != "stroke-sequence":
            raise CheckpointError(f"{path}: not a stroke-sequence member (python -m training.sequence)")
        if payload.get("features", FEATURES) != FEATURES:
            raise CheckpointError(f"{path}: reads {payload['features']} features per point, not {FEATURES}")
        if classes is not None and list(payload["classes"]) != list(classes):
            raise CheckpointError(f"{path}: its classes differ from this run's")
        network = StrokeSequenceNet(len(payload["classes"]))
        network.load_state_dict(payload["state_dict"])
    except (OSError, RuntimeError, KeyError, TypeError, EOFError, pickle.UnpicklingError) as error:
        raise CheckpointError(f"{path}: cannot be read as a stroke-sequence member ({error})") from None
    return network.eval()


class AugmentedSequences(Dataset):
    """Augmented drawings as sequences; the RNG depends on (seed, epoch, position)."""

    def __init__(self, data: PreparedData, order: np.ndarray, seed: int, epoch: int):
        self.data, self.order, self.seed, self.epoch = data, order, seed, epoch
        self.augment = AugmentConfig()

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, position: int) -> tuple[np.ndarray, int]:
        index = int(self.order[position])
        rng = np.random.default_rng((self.seed, self.epoch, position))
        return featurize(augment(self.data.strokes(index), rng, self.augment)), int(self.data.labels[index])


def predict(network: StrokeSequenceNet, drawings: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """Class probabilities ``(n, classes)`` of the member for simplified drawings."""
    network.eval()
    batch, lengths, _ = collate([(featurize(strokes), 0) for strokes in drawings])
    with torch.inference_mode():
        return torch.softmax(network(batch, lengths), dim=1).numpy()


def train_member(
    data: PreparedData, minutes: float, epochs: int, seed: int = 0, lr: float = 3e-3,
    per_class: int = 32, batch_size: int = 128, workers: int = 1,
) -> tuple[StrokeSequenceNet, list[dict]]:
    """Train a member on the training split (validation held out) for ``epochs`` or ``minutes``,
    whichever ends first (the learning rate anneals over the budget, as in ``training.train``)."""
    torch.manual_seed(seed)
    network = StrokeSequenceNet(len(data.classes))
    optimizer = torch.optim.AdamW(network.parameters(), lr=lr, weight_decay=0.05)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    pool = data.indices("train")
    rng = np.random.default_rng(seed)
    steps_per_epoch = math.ceil(len(data.classes) * per_class / batch_size)
    started, step, log = time.perf_counter(), 0, []

    def done() -> float:
        by_time = (time.perf_counter() - started) / 60 / minutes if minutes else 0.0
        return min(1.0, max(step / (steps_per_epoch * epochs), by_time))

    for epoch in range(epochs):
        order = balanced_epoch(data.labels, pool, per_class, rng)
        loader = DataLoader(
            AugmentedSequences(data, order, seed, epoch), batch_size=batch_size, shuffle=False,
            num_workers=workers, collate_fn=collate, persistent_workers=False,
        )
        network.train()
        total = 0.0
        for x, lengths, labels in tqdm(loader, desc=f"epoch {epoch + 1}/{epochs}", leave=False):
            rate = lr * warmup_cosine(step, steps_per_epoch, done())
            for group in optimizer.param_groups:
                group["lr"] = rate
            loss = loss_fn(network(x, lengths), labels)
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
    """Headline metrics of the member, of the raster model and of their average on ``split``, and
    the paired McNemar p-value of the average against the raster model (whole drawings, top-1)."""
    indices = data.indices(split)
    drawings = [data.strokes(int(i)) for i in indices]
    labels = data.labels[indices]
    spec = raster.spec
    inputs = {
        "sequence": lambda part: part,
        "raster": lambda part: rasterize_all(part, spec),
        "average": lambda part: (part, rasterize_all(part, spec)),
    }
    models = {
        "sequence": lambda part: predict(network, part),
        "raster": raster.probabilities_from_images,
        "average": lambda pair: (predict(network, pair[0]) + raster.probabilities_from_images(pair[1])) / 2,
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
        "average": np.argmax((by_sequence + by_raster) / 2, axis=1) == labels,
    }
    only_average = int((right["average"] & ~right["raster"]).sum())
    only_raster = int((right["raster"] & ~right["average"]).sum())
    results["paired"] = {"only_average": only_average, "only_raster": only_raster,
                         "mcnemar_p": mcnemar_p(only_average, only_raster)}
    return results


def main(argv: list[str] | None = None) -> None:
    """Command line: train a member, compare it with a raster model, write ``metrics.json``."""
    parser = argparse.ArgumentParser(prog="python -m training.sequence", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help="Quick, Draw! folder (default: training.data rule)")
    parser.add_argument("--cache", default="runs/prepared", help="prepared-data cache (as training.train)")
    parser.add_argument("--compare", default="model/weights/griffon-default.pt", help="raster checkpoint")
    parser.add_argument("--minutes", type=float, default=40.0, help="time budget (0: epochs only)")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--split", default="val", choices=("val", "dev"))
    parser.add_argument("--out", default="runs/sequence")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = prepare_cached(default_data_root(args.data), Path(args.cache) / "all", None)
    raster = Guesser.load(args.compare, expected_classes=data.classes, backend="torch")
    network, log = train_member(data, args.minutes, args.epochs, args.seed, workers=args.workers)
    results = compare(network, raster, data, args.split)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_member(network, data.classes, out / "sequence.pt")
    (out / "metrics.json").write_text(json.dumps({"split": args.split, "epochs": log, **results}, indent=1))
    print(json.dumps({name: value for name, value in results.items()}, indent=1))


if __name__ == "__main__":
    main()
