"""Writing a checkpoint's serving bundle (:mod:`model.bundle`: the format, and its reading by
``Guesser.load``): the checkpoint loaded through PyTorch, its ONNX graphs exported beside it, the
manifest written last. Apart from the format because writing needs a loaded `Guesser`, which reads
bundles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from model.bundle import FORMAT, file_sha256, float_path, manifest_digest, manifest_path, members_path
from model.checkpoint import fingerprint, write_whole


def write_bundle(checkpoint: Path | str) -> list[Path]:
    """Write the serving bundle of ``checkpoint`` beside it (PyTorch exports the ONNX graphs); the
    int8 copy is named when one made from these weights sits beside it. Returns the files written
    (the manifest last)."""
    from model.guesser import Guesser
    from model.runtime import export_onnx, int8_path, onnx_session, onnx_source, weights_sha256
    from model.sequence import SequenceMember, member_onnx_bytes

    checkpoint = Path(checkpoint)
    guesser = Guesser.load(checkpoint, backend="torch")  # verifies the checkpoint
    network, spec = guesser.network, guesser.spec
    assert network is not None  # a torch-loaded Guesser holds its network
    raster_sha256 = weights_sha256(network)
    written = [write_whole(float_path(checkpoint), export_onnx(network, len(spec.channels), spec.size))]
    files = {"raster_float": written[0]}
    quantized = int8_path(checkpoint)
    if quantized.is_file() and onnx_source(onnx_session(quantized)) == raster_sha256:
        files["raster_int8"] = quantized
    if isinstance(guesser.member, SequenceMember):
        written.append(write_whole(members_path(checkpoint), member_onnx_bytes(guesser.member.networks)))
        files["members"] = written[-1]
    metadata = guesser.metadata
    contract = metadata["input_contract"]
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "checkpoint": checkpoint.name,
        "checkpoint_sha256": file_sha256(checkpoint),
        "raster_weights_sha256": raster_sha256,
        "classes": guesser.labels,
        "input_contract": contract,
        "fingerprint": fingerprint(guesser.labels, contract),
        "temperature": guesser.temperature,
        "pair_temperature": guesser.pair_temperature,
        "view_pool": guesser.view_pool,
        "flip_tta": guesser.flip_tta,
        "members": guesser.member.count if guesser.member is not None else 0,
        "metadata": metadata,
        "files": {role: {"name": file.name, "sha256": file_sha256(file)} for role, file in files.items()},
    }
    manifest["digest"] = manifest_digest(manifest)
    text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    written.append(write_whole(manifest_path(checkpoint), text.encode("utf-8")))
    return written


