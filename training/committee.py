"""Pool several raster networks that read the same raster into one: ``griffon model committee``.

The shipped raster network is a committee (:class:`model.network.Committee`): the public ResNet
fine-tuned for the games, the public DoodleNet fine-tuned the same way, and the untouched public
ResNet, all reading the dataset's 28 × 28 render. Its answer is their normalised geometric mean,
each member's logits first divided by its own fitted temperature. A member is a raster checkpoint
(its architecture, weights and temperature) or ``public:NAME``, a public model as published
(:mod:`model.tfjs`). The result is a new raster checkpoint (never written over an input), ready for
``griffon model calibrate``, ``attach`` and ``ship``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from model.checkpoint import CheckpointError, read_checkpoint, save_checkpoint
from model.network import create_model
from model.raster import RasterSpec
from training.outputs import new_output
from training.teachers import read_our_classes

PUBLIC_PREFIX = "public:"


def _member(source: str, classes: list[str] | None) -> dict[str, Any]:
    """One member: ``{"name", "kwargs", "state_dict", "temperature", "classes", "spec", "training"}``
    (a public model first in the list takes our 345 categories, ``model/weights/categories.txt``)."""
    if source.startswith(PUBLIC_PREFIX):
        classes = classes if classes is not None else read_our_classes()
        kwargs = {"source": source[len(PUBLIC_PREFIX):], "classes": list(classes)}
        network = create_model("public", in_channels=1, num_classes=len(classes), **kwargs)
        return {
            "name": "public", "kwargs": kwargs, "state_dict": network.state_dict(), "temperature": 1.0,
            "classes": list(classes), "spec": RasterSpec.bitmap(),
            "training": {"public": kwargs["source"], "fine_tuned": False},
        }
    payload = read_checkpoint(source)
    if payload.get("sequence_members"):
        raise CheckpointError(f"{source} is a two-view model; a committee takes raster checkpoints")
    if payload["architecture"]["name"] == "committee":
        raise CheckpointError(f"{source} is a committee already; give its members")
    return {
        "name": payload["architecture"]["name"], "kwargs": payload["architecture"]["kwargs"],
        "state_dict": payload["state_dict"], "temperature": float(payload.get("temperature", 1.0)),
        "classes": payload["classes"], "spec": payload["raster_spec"],
        "training": {"checkpoint": str(source), **(payload.get("training") or {}), "metrics": {
            k: v for k, v in (payload.get("metrics") or {}).items()
            if k in ("epochs_run", "train_seconds", "train_samples_per_second")
        }},
    }


def _holdout(members: list[dict[str, Any]]) -> str:
    """What every trained member held out (``val`` or ``dev``), else empty; a public model as published
    holds nothing out of its own training, but nothing of ours trains it."""
    held = {m["training"].get("holdout", "") for m in members if m["training"].get("fine_tuned") is not False}
    return held.pop() if len(held) == 1 else ""


def write_committee(sources: list[str], out: Path | str) -> Path:
    """Write the committee of ``sources`` (checkpoints or ``public:NAME``) to the new file ``out``;
    raises :class:`CheckpointError` when the members differ in classes or raster spec."""
    if not sources:
        raise CheckpointError("a committee needs at least one member")
    out = new_output(out, [s for s in sources if not s.startswith(PUBLIC_PREFIX)], "committee")
    members: list[dict[str, Any]] = []
    for source in sources:
        member = _member(source, members[0]["classes"] if members else None)
        if members and member["classes"] != members[0]["classes"]:
            raise CheckpointError(f"{source}: its classes differ from {sources[0]}'s")
        if members and member["spec"] != members[0]["spec"]:
            raise CheckpointError(f"{source}: its raster spec differs from {sources[0]}'s")
        members.append(member)
    state = {
        f"members.{index}.{name}": tensor.float()
        for index, member in enumerate(members)
        for name, tensor in member["state_dict"].items()
    }
    kwargs = {
        "members": [{"name": m["name"], "kwargs": m["kwargs"]} for m in members],
        "temperatures": [m["temperature"] for m in members],
    }
    classes, spec = members[0]["classes"], members[0]["spec"]
    network = create_model("committee", in_channels=len(spec.channels), num_classes=len(classes), **kwargs)
    network.load_state_dict(state)  # every member's weights, checked against the architecture
    save_checkpoint(
        out,
        architecture="committee",
        architecture_kwargs=kwargs,
        classes=classes,
        spec=spec,
        state_dict=network.state_dict(),
        training={"committee": [m["training"] for m in members], "holdout": _holdout(members)},
    )
    return Path(out)


def main(argv: list[str] | None = None) -> Path:
    """``griffon model committee MEMBER [MEMBER …] --out O``."""
    parser = argparse.ArgumentParser(
        prog="griffon model committee",
        description="Pool raster networks that read the same raster into one raster checkpoint (their "
        "normalised geometric mean, each at its own temperature), written to a new file.",
    )
    parser.add_argument("members", nargs="+", help="raster checkpoints, or public:NAME for a public model "
                        "as published (public:quickdraw-resnet, public:doodlenet)")
    parser.add_argument("--out", type=Path, required=True, help="the committee checkpoint to write")
    args = parser.parse_args(argv)
    out = write_committee(args.members, args.out)
    print(f"wrote {out}")
    return out
