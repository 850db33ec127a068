"""The serving bundle: what ``Guesser.load`` needs to serve a checkpoint on ONNX Runtime without
importing PyTorch (about 480 MB of a server's memory), written beside the checkpoint ``<stem>.pt``:

- ``<stem>.serving.json``, the manifest: the classes, input contract and their fingerprint, the
  temperatures, the view pool, flip TTA, the metadata, the number of stroke-sequence members, the
  sha256 of the checkpoint file it was made from, and each ONNX file's name and sha256;
- ``<stem>.float.onnx``: the float raster network (the ``onnx`` back-end, and the near ties of the
  int8 one), as :func:`model.runtime.export_onnx` exports it;
- ``<stem>.int8.onnx``: the int8 raster copy (``python -m training.export``), when there is one made
  from these weights;
- ``<stem>.members.onnx``: the stroke-sequence members averaged in one graph, as
  :func:`model.sequence.member_onnx_bytes` exports it (two-view models only).

The answers are those of the checkpoint loaded without a bundle (the same ONNX graphs). A bundle
serves only the file it was made from: one whose recorded sha256 is not the checkpoint's is ignored
(the checkpoint loads through PyTorch, as without a bundle). A manifest changed since it was written
(its ``digest``: the sha256 of the rest, as canonical JSON) or an ONNX file that is not the one it
names raises :class:`model.checkpoint.CheckpointError`.

Written by :func:`model.bundler.write_bundle` (``python -m training.export [--bundle-only]`` and
``griffon model ship``); read here, by ``Guesser.load``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.checkpoint import CheckpointError, check_contents
from model.raster import RasterSpec

FORMAT = "griffon-serving/1"
ROLES = ("raster_float", "raster_int8", "members")  # the ONNX files a manifest may name
log = logging.getLogger(__name__)


def manifest_path(checkpoint: Path | str) -> Path:
    """Where a checkpoint's serving manifest lives: beside it, ``<stem>.serving.json``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.stem}.serving.json")


def float_path(checkpoint: Path | str) -> Path:
    """Where a checkpoint's float raster ONNX lives: beside it, ``<stem>.float.onnx``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.stem}.float.onnx")


def members_path(checkpoint: Path | str) -> Path:
    """Where a checkpoint's stroke-sequence members' ONNX lives: beside it, ``<stem>.members.onnx``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.stem}.members.onnx")


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_digest(manifest: dict[str, Any]) -> str:
    """sha256 of a manifest without its ``digest`` (canonical JSON)."""
    body = {key: value for key, value in manifest.items() if key != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Bundle:
    """A verified bundle: its manifest, the raster spec it reads and its ONNX files by role."""

    path: Path  # the manifest
    manifest: dict[str, Any]
    spec: RasterSpec
    files: dict[str, Path]


def read_bundle(
    checkpoint: Path | str,
    expected_classes: list[str] | None = None,
    expected_raster: RasterSpec | None = None,
) -> Bundle | None:
    """The verified bundle of ``checkpoint``; ``None`` when there is none or it was made from another
    file. Raises :class:`CheckpointError` for a manifest or ONNX file changed since it was written,
    or contents that do not match the expectations (as ``read_checkpoint``)."""
    checkpoint = Path(checkpoint)
    path = manifest_path(checkpoint)
    if not path.is_file() or not checkpoint.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: cannot read the serving manifest: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a {FORMAT} manifest")
    if manifest.get("digest") != manifest_digest(manifest):
        raise CheckpointError(f"{path}: the serving manifest was modified (digest mismatch)")
    if manifest.get("checkpoint_sha256") != file_sha256(checkpoint):
        log.warning("%s was made from another checkpoint than %s: ignored (re-run python -m "
                    "training.export --bundle-only --checkpoint %s)", path, checkpoint, checkpoint)
        return None
    spec = check_contents(path, manifest, expected_classes, expected_raster)
    named = manifest.get("files")
    if not isinstance(named, dict) or "raster_float" not in named or not set(named) <= set(ROLES):
        raise CheckpointError(f"{path}: its files are {named!r}, not raster_float and optional {ROLES[1:]}")
    two_view = "sequence" in manifest["input_contract"]
    members = manifest.get("members")
    if two_view != ("members" in named) or not isinstance(members, int) or (members > 0) != two_view:
        raise CheckpointError(f"{path}: its stroke-sequence members ({members!r}, files {sorted(named)}) "
                              "do not match its input contract")
    files = {}
    for role, entry in named.items():
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or Path(name).name != name:
            raise CheckpointError(f"{path}: {role} names no file beside it ({entry!r})")
        file = path.with_name(name)
        if not file.is_file():
            raise CheckpointError(f"{path}: its {role} file {file} is missing")
        if file_sha256(file) != entry.get("sha256"):
            raise CheckpointError(f"{path}: {file} is not the file it was made with (sha256 mismatch)")
        files[role] = file
    return Bundle(path, manifest, spec, files)
