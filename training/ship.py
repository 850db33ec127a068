"""``griffon model ship RUN_OR_CHECKPOINT``: make a checkpoint the shipped model, with everything
that goes beside it, checked.

Into ``--dest`` (default ``model/weights``) it writes ``griffon-default.pt`` (a byte copy of the
checkpoint), ``MODEL_CARD.md`` (:func:`training.model_card.refresh`: the metrics measured again on
the checkpoint's held-out split), ``griffon-default.int8.onnx`` and the serving bundle
(:func:`training.export.export_checkpoint`: ``griffon-default.serving.json``, ``.float.onnx`` and, for
a two-view model, ``.members.onnx``, which serve the model without PyTorch, :mod:`model.bundle`) and
``categories.txt`` (the classes in output order). Everything is built and checked in a
staging folder inside ``--dest`` first and moved into place only when every check passes, so a
refused checkpoint leaves the shipped files as they were. The checks:

- the checkpoint, and its copy, load with :meth:`model.Guesser.load` (which verifies the format,
  the fingerprint of the class list and input contract, and that the weights fit the architecture);
- the int8 copy is the one ``Guesser`` serves (made from these very weights), and its answers agree
  with the float reference's on a few held-out drawings (:data:`MIN_INT8_AGREEMENT`);
- the bundle serves the copy (``Guesser.load`` verifies its manifest, the checkpoint's sha256 and
  its files' sha256).

A run folder ships its most finished checkpoint: :data:`RUN_CHECKPOINTS`, in that order.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from model.bundle import file_sha256, float_path, manifest_path, members_path, read_bundle
from model.checkpoint import CheckpointError
from model.guesser import DEFAULT_WEIGHTS, Guesser
from model.runtime import int8_path
from training.data import default_data_root
from training.export import export_checkpoint
from training.model_card import refresh
from training.prepare import prepare_cached

RUN_CHECKPOINTS = ("two-view.pt", "calibrated.pt", "model.pt")  # what a run folder ships, first found
CHECK_DRAWINGS = 64  # held-out drawings the int8 copy is compared on
MIN_INT8_AGREEMENT = 0.95  # share of those whose top-1 answer must be the float reference's
HEADLINE = {"full_top1": "top-1", "full_top3": "top-3", "kontour_top1": "Kontour", "half_top1": "half",
            "table42_top1": "table-42", "pictomania_top1": "Pictomania"}  # fmt: skip


@dataclass
class Shipped:
    """What ``ship`` wrote and measured."""

    source: Path
    checkpoint: Path
    files: list[Path]
    sha256: str
    classes: int
    members: int
    held_out: str
    metrics: dict
    int8_agreement: float
    int8_max_difference: float
    checked_drawings: int
    served_backend: str
    temperatures: dict = field(default_factory=dict)

    def summary(self) -> str:
        """A few lines for the terminal."""
        plural = "s" * (self.members != 1)
        kind = f"two-view ({self.members} stroke-sequence member{plural})" if self.members else "raster only"
        shown = ", ".join(f"{name} {100 * self.metrics[k]:.1f} %" for k, name in HEADLINE.items()
                          if k in self.metrics)  # fmt: skip
        temps = ", ".join(f"{k} {v:g}" for k, v in self.temperatures.items())
        lines = [
            f"shipped {self.source} → {self.checkpoint}",
            f"  sha256 {self.sha256}, {self.classes} classes, {kind}, {temps}",
            f"  held out {self.held_out} ({self.metrics.get('held_out_drawings', '?')} drawings): {shown}",
            f"  int8 copy: top-1 as the float reference on {self.int8_agreement:.1%} of "
            f"{self.checked_drawings} held-out drawings (largest probability gap "
            f"{self.int8_max_difference:.3f}); served back-end {self.served_backend}",
            *[f"  wrote {path} ({_size(path.stat().st_size)})" for path in self.files],
        ]
        return "\n".join(lines)


def _size(size: int) -> str:
    return f"{size / 1e6:.2f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"


class ShipError(CheckpointError):
    """A checkpoint that must not be shipped (its int8 copy disagrees with it, or it is missing)."""


def resolve(source: Path | str) -> Path:
    """The checkpoint ``source`` names: itself, or a run folder's most finished one."""
    source = Path(source)
    if source.is_dir():
        for name in RUN_CHECKPOINTS:
            if (source / name).is_file():
                return source / name
        raise ShipError(f"{source} holds none of {', '.join(RUN_CHECKPOINTS)}")
    if not source.is_file():
        raise ShipError(f"no checkpoint at {source}")
    return source


def int8_agreement(checkpoint: Path, drawings: list) -> tuple[float, float]:
    """(share of ``drawings`` whose top-1 answer is the same on the int8 copy as on the float
    reference, largest probability difference); an int8 copy not made from these weights is refused
    by ``Guesser.load`` (``CheckpointError``)."""
    reference = Guesser.load(checkpoint, backend="torch")
    int8 = Guesser.load(checkpoint, backend="onnx-int8")
    views = [reference.views(strokes) for strokes in drawings]
    float_probs = reference.probabilities_from_views(views)
    int8_probs = int8.probabilities_from_views(views)
    same = float(np.mean(np.argmax(float_probs, 1) == np.argmax(int8_probs, 1)))
    return same, float(np.abs(float_probs - int8_probs).max())


def ship(
    source: Path | str,
    dest: Path | str = DEFAULT_WEIGHTS.parent,
    data: Path | str | None = None,
    cache: Path | str = Path("runs/prepared/all"),
    check_drawings: int = CHECK_DRAWINGS,
    teachers: Path | str | None = None,
) -> Shipped:
    """Ship the checkpoint ``source`` (or a run folder's) into ``dest``; see the module docstring
    (``teachers``: the public teachers' folder, measured beside the model in its card).
    Raises :class:`CheckpointError` (a tampered or unusable checkpoint, an int8 copy that disagrees)
    or :class:`training.data.DataError` (no data to measure on), leaving ``dest`` as it was."""
    checkpoint = resolve(source)
    Guesser.load(checkpoint, backend="torch")  # verifies before anything is written
    root = default_data_root(data)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest, prefix=".ship-"))
    try:
        staged = staging / DEFAULT_WEIGHTS.name
        shutil.copyfile(checkpoint, staged)
        guesser = Guesser.load(staged, backend="torch")
        metrics = refresh(staged, root, Path(cache),  # writes MODEL_CARD.md beside the copy
                          teachers=Path(teachers) if teachers is not None else None)
        export_checkpoint(staged, root)  # griffon-default.int8.onnx and the serving bundle beside it
        if read_bundle(staged) is None:
            raise ShipError(f"no serving bundle was written beside {staged}")
        (staging / "categories.txt").write_text("".join(f"{c}\n" for c in guesser.labels), encoding="utf-8")
        held_out = (guesser.metadata.get("training") or {}).get("holdout", "val")
        prepared = prepare_cached(root, Path(cache), guesser.labels)
        indices = prepared.indices(held_out)
        if not len(indices):
            raise ShipError(f"the {held_out} split of {root} is empty: nothing to check the int8 copy on")
        chosen = np.unique(np.linspace(0, len(indices) - 1, min(check_drawings, len(indices))).astype(int))
        drawings = [prepared.strokes(int(indices[i])) for i in chosen]
        agreement, difference = int8_agreement(staged, drawings)
        if agreement < MIN_INT8_AGREEMENT:
            raise ShipError(
                f"the int8 copy of {checkpoint} answers as the float model on only {agreement:.0%} of "
                f"{len(drawings)} held-out drawings (at least {MIN_INT8_AGREEMENT:.0%} needed); not shipped"
            )
        bundle = [path(staged).name for path in (float_path, members_path, manifest_path)]  # manifest last
        names = [DEFAULT_WEIGHTS.name, int8_path(staged).name, "MODEL_CARD.md", "categories.txt", *bundle]
        names = [name for name in names if (staging / name).is_file()]  # no members file: raster only
        for name in bundle:  # a raster-only model leaves no members file of an earlier one
            if name not in names:
                (dest / name).unlink(missing_ok=True)
        for name in names:
            os.replace(staging / name, dest / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    shipped = dest / DEFAULT_WEIGHTS.name
    served = Guesser.load(shipped)  # as the service loads it
    temperatures = {"temperature": served.temperature}
    if served.member is not None:
        temperatures["pair temperature"] = served.pair_temperature
    return Shipped(
        source=Path(source), checkpoint=shipped, files=[dest / name for name in names],
        sha256=file_sha256(shipped), classes=len(served.labels),
        members=served.member.count if served.member is not None else 0, held_out=held_out,
        metrics=metrics, int8_agreement=agreement, int8_max_difference=difference,
        checked_drawings=len(drawings), served_backend=served.backend, temperatures=temperatures,
    )
