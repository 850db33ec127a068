"""Temperature scaling: fit the softmax temperature that minimises the negative log-likelihood on
drawings a model never trained on, and write a new checkpoint that carries it (``--out``; by default
``calibrated.pt`` beside the checkpoint it is applied to). The input checkpoints are never
rewritten: an ``--out`` that names one of them is refused.

The AI players act on the recognizer's probabilities, so they should mean what they say. Label
smoothing makes the raw network under-confident; one scalar temperature fixes most of it without
changing any ranking (top-k accuracy is unchanged).

To keep the validation split untouched, a model's temperature is fitted on the *dev* band with a
run of the same recipe that held dev out, and then applied to the shipped recipe's checkpoint:

    griffon model calibrate --model runs/dev-run/model.pt --split dev \
        --apply-to runs/full-run/model.pt --out runs/full-run/calibrated.pt

A distilled student has no such run (its teachers saw every training drawing), so its temperature is
matched instead to a calibrated reference it learnt from (``--match``): the temperature whose
probabilities on the dev band come closest (cross-entropy) to the reference's own. Both models
trained on those drawings, so they are over-confident there alike; validation stays untouched:

    griffon model calibrate --model runs/student/model.pt --match runs/full-run/calibrated.pt \
        --out runs/student/calibrated.pt

A student of soft targets (the public teachers' answers, `training/taught.py`) stays
under-confident even on the drawings it trained on, so matching it to a reference leaves it
under-confident; ``--trained-on`` fits its temperature on the dev band with the labels although it
trained on those drawings (the sharpest temperature the dev band supports; validation untouched):

    griffon model calibrate --model runs/student/model.pt --split dev --trained-on \
        --out runs/student/calibrated.pt

For a two-view model (``griffon model attach``) the temperature is that of the two views' pool
(``pair_temperature``); the raster network keeps its own.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import torch

from model import Guesser
from model.checkpoint import CheckpointError, read_checkpoint, sequence_members
from training.data import default_data_root
from training.metrics import calibration
from training.outputs import new_output
from training.prepare import prepare_cached


def fit_temperature(logits: torch.Tensor, labels: torch.Tensor, grid: np.ndarray | None = None) -> float:
    """The temperature (on a fine grid, 0.2–3.0) with the lowest negative log-likelihood."""
    grid = grid if grid is not None else np.round(np.arange(0.2, 3.0001, 0.01), 2)
    losses = [float(torch.nn.functional.cross_entropy(logits / t, labels)) for t in grid]
    return float(grid[int(np.argmin(losses))])


def held_out_logits(
    model_path: Path, split: str, data: Path, cache: Path
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits and labels of ``split`` for a model whose training held that split out.

    The probabilities come from the model's own :meth:`model.Guesser.probabilities_from_views` (so
    flip test-time augmentation is included when the checkpoint uses it); since they are
    ``softmax(logits / T)``, ``T · log p`` gives the logits back up to a per-row constant, which
    changes no softmax.
    """
    guesser = Guesser.load(model_path, backend="torch")  # the checkpoint's own float weights
    held = guesser.metadata.get("training", {}).get("holdout")
    if held != split:
        raise CheckpointError(
            f"{model_path} held out {held!r}, not {split!r}: fitting on drawings it trained on would "
            "make it over-confident"
        )
    return split_logits(guesser, split, data, cache)


def split_logits(guesser: Guesser, split: str, data: Path, cache: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """The logits (``T · log p``) and labels of every drawing of ``split``, whatever the model saw."""
    prepared = prepare_cached(data, cache, guesser.labels)
    indices = prepared.indices(split)
    drawings = [prepared.strokes(int(i)) for i in indices]
    chunks = [drawings[start : start + 256] for start in range(0, len(drawings), 256)]
    probs = np.concatenate([guesser.probabilities_from_views([guesser.views(d) for d in c]) for c in chunks])
    # a two-view model answers softmax(log(average) / pair_temperature): its "logits" are log(average)
    temperature = guesser.pair_temperature if guesser.member is not None else guesser.temperature
    logits = temperature * np.log(np.maximum(probs, np.finfo(np.float32).tiny))
    return torch.from_numpy(logits).float(), torch.from_numpy(prepared.labels[indices])


def match_temperature(logits: torch.Tensor, reference: torch.Tensor, grid: np.ndarray | None = None) -> float:
    """The temperature (grid 0.2–3.0) whose ``softmax(logits / T)`` is closest to the ``reference``
    probabilities (lowest cross-entropy)."""
    grid = grid if grid is not None else np.round(np.arange(0.2, 3.0001, 0.01), 2)
    losses = [float(-(reference * torch.log_softmax(logits / t, 1)).sum(1).mean()) for t in grid]
    return float(grid[int(np.argmin(losses))])


def matched(model: Path, reference: Path, split: str, data: Path, cache: Path) -> tuple[float, str]:
    """``--match``: the temperature of ``model`` that matches the calibrated ``reference`` on
    ``split``; refused when either does not say it held the validation split out (``val``, or ``dev``:
    the band within the training split, validation never being trained on)."""
    student, teacher = Guesser.load(model, backend="torch"), Guesser.load(reference, backend="torch")
    for path, guesser in ((model, student), (reference, teacher)):
        if guesser.metadata.get("training", {}).get("holdout") not in ("val", "dev"):
            raise CheckpointError(f"{path} does not say it held the validation split out: --match needs "
                                  "two models trained by `griffon train`")
    if student.labels != teacher.labels:
        raise CheckpointError(f"{model} and {reference} do not share their class list")
    logits, _ = split_logits(student, split, data, cache)
    ref_logits, _ = split_logits(teacher, split, data, cache)
    temperature = match_temperature(logits, torch.softmax(ref_logits / teacher.temperature, 1))
    source = f"matched on the {split} band to {reference} (temperature {teacher.temperature:g})"
    return temperature, source


def write_with_temperature(checkpoint: Path, out: Path, temperature: float, source: str) -> Path:
    """Write a copy of ``checkpoint`` to the new file ``out`` with a new temperature (the weights and
    fingerprint stay as they are); for a two-view model, the temperature of the two views' pool
    (``pair_temperature``). ``out`` may not be ``checkpoint`` (``CheckpointError``)."""
    out = new_output(out, [checkpoint], "calibration")
    read_checkpoint(checkpoint)  # a checkpoint that does not verify is not copied
    payload = torch.load(checkpoint, map_location="cpu", weights_only=True)
    key = "pair_temperature" if sequence_members(payload) else "temperature"
    payload[key] = float(temperature)
    payload.setdefault("metrics", {})[f"{key}_source"] = source
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.", delete=False) as handle:
        partial = Path(handle.name)
    try:
        torch.save(payload, partial)
        os.replace(partial, out)  # a reader never sees half a file
    finally:
        partial.unlink(missing_ok=True)
    return out


def main(argv: list[str] | None = None) -> dict:
    """Fit (or match) a temperature and write it into a new checkpoint; prints ECE before and after."""
    parser = argparse.ArgumentParser(prog="griffon model calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a checkpoint that held --split out")
    parser.add_argument("--split", default="dev", choices=["dev", "val"])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--cache", type=Path, default=Path("runs/prepared/all"))
    parser.add_argument(
        "--apply-to", type=Path, default=None, help="the checkpoint the temperature is for (default --model)"
    )
    parser.add_argument(
        "--match", type=Path, default=None,
        help="a calibrated checkpoint whose probabilities on --split the temperature matches",
    )
    parser.add_argument(
        "--out", type=Path, default=None,
        help="the new checkpoint to write (default: calibrated.pt beside --apply-to); never an input",
    )
    parser.add_argument(
        "--trained-on", action="store_true",
        help="fit on the dev band although --model trained on it (a student of soft targets, "
             "under-confident even on its own training drawings); never on val",
    )
    args = parser.parse_args(argv)
    if args.trained_on and (args.split != "dev" or args.match is not None):
        raise CheckpointError("--trained-on fits on the dev band only, without --match")
    target = args.apply_to or args.model
    out = new_output(args.out or target.parent / "calibrated.pt", [args.model, target, args.match or target],
                     "calibration")  # fmt: skip
    data = default_data_root(args.data)
    if args.match is not None:
        temperature, source = matched(args.model, args.match, args.split, data, args.cache)
        write_with_temperature(target, out, temperature, source)
        print(json.dumps({"temperature": temperature, "source": source, "written_to": str(out)}))
        return {"temperature": temperature}
    if args.trained_on:
        logits, labels = split_logits(Guesser.load(args.model, backend="torch"), "dev", data, args.cache)
    else:
        logits, labels = held_out_logits(args.model, args.split, data, args.cache)
    temperature = fit_temperature(logits, labels)
    before = calibration(torch.softmax(logits, 1).numpy(), labels.numpy())
    after = calibration(torch.softmax(logits / temperature, 1).numpy(), labels.numpy())
    result = {"temperature": temperature, "ece_before": before["ece"], "ece_after": after["ece"]}
    source = (f"fitted on the dev band with {args.model}, which trained on it" if args.trained_on
              else f"fitted on the {args.split} band with {args.model}, which held it out")
    write_with_temperature(target, out, temperature, source)
    print(json.dumps({**result, "written_to": str(out)}))
    return result


if __name__ == "__main__":
    from training.entry import run_command

    run_command(main)
