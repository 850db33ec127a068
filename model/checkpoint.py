"""Self-describing checkpoints: weights plus everything needed to rebuild and trust them.

A checkpoint is a ``torch.save`` dictionary with:

- ``format``: :data:`FORMAT` (a version string);
- ``architecture``: ``{"name": ..., "kwargs": {...}}`` for :func:`model.network.create_model`;
- ``classes``: the class labels, in output order (official Quick, Draw! category names);
- ``input_contract``: ``{"preprocessing": ..., "raster": RasterSpec.to_dict()}``;
- ``fingerprint``: sha256 of the classes and the input contract, so a tampered list is refused;
- ``temperature``: the softmax temperature (calibration), 1.0 when not fitted;
- ``training``: the training configuration; ``metrics``: what training measured;
- ``state_dict``: the weights;
- for a two-view model, ``sequence_members`` (the weights of its stroke-sequence members, one or
  more, averaged) and ``sequence_training`` (how each was trained, in the same order); files written
  before committees hold one member as ``sequence_member`` and its record as a dict, and still load
  (:func:`sequence_members`); and ``view_pool``, how the raster network's and the sequence view's
  probabilities are pooled (:data:`VIEW_POOLS`: ``log``, their normalised geometric mean, or
  ``mean``, their average — files that do not say were written for the average).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from model.raster import RasterSpec

if TYPE_CHECKING:
    import torch

VIEW_POOLS = ("log", "mean")  # how a two-view model pools its views (model.guesser.pool_views)
DEFAULT_VIEW_POOL = "log"  # what new two-view files say; files that say nothing were written for "mean"


def unknown_view_pool(pool: object) -> str | None:
    """Why ``pool`` is not a view pool (``None`` when it is one)."""
    if pool in VIEW_POOLS:
        return None
    return f"unknown view pool {pool!r} (expected one of {', '.join(VIEW_POOLS)})"

FORMAT = "griffon-checkpoint/1"
PREPROCESSING = "quickdraw-simplified/1"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: unreadable, inconsistent, or not matching expectations."""


def fingerprint(classes: list[str], input_contract: dict[str, Any]) -> str:
    """sha256 of the class list and the input contract (canonical JSON)."""
    payload = json.dumps({"classes": classes, "input_contract": input_contract}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def make_input_contract(spec: RasterSpec, sequence: dict[str, int] | None = None) -> dict[str, Any]:
    """The input contract stored in checkpoints for a raster spec (and, for a two-view model, the
    stroke-sequence format its member reads: ``{"features": ..., "max_steps": ...}``)."""
    contract: dict[str, Any] = {"preprocessing": PREPROCESSING, "raster": spec.to_dict()}
    if sequence is not None:
        contract["sequence"] = dict(sequence)
    return contract


def _stored(state_dict: dict[str, torch.Tensor], half: bool) -> dict[str, torch.Tensor]:
    """Weights as a checkpoint stores them: detached CPU copies, floating ones in float16 if ``half``."""
    return {
        name: (tensor.half() if half and tensor.is_floating_point() else tensor).detach().cpu().clone()
        for name, tensor in state_dict.items()
    }


def save_checkpoint(
    path: Path | str,
    *,
    architecture: str,
    architecture_kwargs: dict[str, Any],
    classes: list[str],
    spec: RasterSpec,
    state_dict: dict[str, torch.Tensor],
    training: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    temperature: float = 1.0,
    half: bool = False,
    sequence_members: Sequence[dict[str, Any]] = (),
    view_pool: str = DEFAULT_VIEW_POOL,
) -> None:
    """Write a checkpoint (``half`` stores floating weights as float16 to halve the file).

    ``sequence_members`` (each ``{"features", "max_steps", "state_dict"}``, optionally ``"training"``:
    how the member was trained, kept in ``sequence_training``) makes it a two-view model: the raster
    network and stroke-sequence members (:mod:`model.sequence`); the members' answers are averaged
    into the sequence view, which is pooled with the raster network's by ``view_pool``."""
    if (problem := unknown_view_pool(view_pool)) is not None:
        raise CheckpointError(problem)
    forms = {(int(m["features"]), int(m["max_steps"])) for m in sequence_members}
    if len(forms) > 1:
        raise CheckpointError(f"the members read different sequence formats: {sorted(forms)}")
    sequence = None if not forms else dict(zip(("features", "max_steps"), forms.pop(), strict=True))
    contract = make_input_contract(spec, sequence)
    weights = _stored(state_dict, half)
    payload = {
        "format": FORMAT,
        "architecture": {"name": architecture, "kwargs": architecture_kwargs},
        "classes": list(classes),
        "input_contract": contract,
        "fingerprint": fingerprint(list(classes), contract),
        "temperature": float(temperature),
        "training": training or {},
        "metrics": metrics or {},
        "state_dict": weights,
    }
    if sequence_members:
        payload["sequence_members"] = [_stored(m["state_dict"], half) for m in sequence_members]
        payload["sequence_training"] = [dict(m.get("training") or {}) for m in sequence_members]
        payload["view_pool"] = view_pool
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_whole(payload, path)


def save_whole(payload: dict[str, Any], path: Path) -> None:
    """``torch.save`` of ``payload`` written whole or not at all (`make train` takes a checkpoint
    that exists for a finished step)."""
    import torch  # writing and reading checkpoints: the PyTorch paths only

    buffer = io.BytesIO()
    torch.save(payload, buffer)
    write_whole(path, buffer.getvalue())


def write_whole(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all (a temporary file beside it, then renamed)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    return path


def read_checkpoint(
    path: Path | str,
    expected_classes: list[str] | None = None,
    expected_raster: RasterSpec | None = None,
) -> dict[str, Any]:
    """Load and verify a checkpoint; raise :class:`CheckpointError` naming what does not match."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}")
    import torch

    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for a corrupt file
        raise CheckpointError(f"cannot read checkpoint {path}: {error}") from error
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a {FORMAT} checkpoint")
    payload.setdefault("view_pool", "mean")
    payload["raster_spec"] = check_contents(path, payload, expected_classes, expected_raster)
    if "sequence" in payload["input_contract"] and not sequence_members(payload):
        raise CheckpointError(f"{path}: a two-view input contract without its stroke-sequence member")
    return payload


def check_contents(
    path: Path,
    contents: dict[str, Any],
    expected_classes: list[str] | None = None,
    expected_raster: RasterSpec | None = None,
) -> RasterSpec:
    """Verify what a checkpoint (or a serving bundle's manifest, :mod:`model.bundle`) says of its
    model — ``classes``, ``input_contract``, their ``fingerprint``, ``view_pool`` — against itself and
    the expectations; the raster spec it reads. Raises :class:`CheckpointError` naming the problem."""
    classes = contents.get("classes")
    contract = contents.get("input_contract")
    if not isinstance(classes, list) or not classes or len(set(classes)) != len(classes):
        raise CheckpointError(f"{path}: class list is missing, empty or has duplicates")
    if not isinstance(contract, dict) or contract.get("preprocessing") != PREPROCESSING:
        raise CheckpointError(
            f"{path}: input contract {contract!r} is not supported (expected preprocessing {PREPROCESSING!r})"
        )
    if contents.get("fingerprint") != fingerprint(classes, contract):
        raise CheckpointError(f"{path}: class list or input contract was modified (fingerprint mismatch)")
    try:
        spec = RasterSpec.from_dict(contract["raster"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: invalid raster spec in input contract: {error}") from error
    if expected_classes is not None and list(expected_classes) != classes:
        missing = sorted(set(expected_classes) - set(classes))[:5]
        extra = sorted(set(classes) - set(expected_classes))[:5]
        raise CheckpointError(
            f"{path}: class list does not match the expected one ({len(classes)} vs "
            f"{len(expected_classes)} classes; missing e.g. {missing}, unexpected e.g. {extra}, "
            "or a different order)"
        )
    if (problem := unknown_view_pool(contents.get("view_pool"))) is not None:
        raise CheckpointError(f"{path}: {problem}")
    if expected_raster is not None and expected_raster != spec:
        raise CheckpointError(f"{path}: raster spec {spec} does not match expected {expected_raster}")
    return spec


def sequence_members(payload: dict[str, Any]) -> list[dict[str, torch.Tensor]]:
    """The stroke-sequence members' weights of a checkpoint's payload (empty for a raster-only one);
    also reads a file written before committees (one ``sequence_member``)."""
    members = payload.get("sequence_members")
    if members is None and isinstance(payload.get("sequence_member"), dict):
        members = [payload["sequence_member"]]
    if not isinstance(members, list) or not all(isinstance(m, dict) for m in members):
        return []
    return members


def sequence_training(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """How each stroke-sequence member of a checkpoint was trained, in order (empty records when the
    file does not say)."""
    records = payload.get("sequence_training")
    records = [records] if isinstance(records, dict) else list(records or [])
    count = len(sequence_members(payload))
    return [dict(r) if isinstance(r, dict) else {} for r in records[:count]] + [{}] * (count - len(records))
