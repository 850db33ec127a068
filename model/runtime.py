"""Inference back-ends: the float PyTorch network (the reference) and ONNX Runtime (the fast path).

The checkpoint stays the single source of truth. ONNX Runtime runs either

- ``onnx-int8``: a statically quantized copy of the checkpoint (int8 weights per channel, uint8
  activations, QDQ format), shipped beside it as ``<checkpoint>.int8.onnx`` and made by
  ``python -m training.export`` from the checkpoint and calibration drawings of the training split.
  The file records the sha256 of the weights it was made from; a file that does not match the
  weights of the checkpoint it sits beside is ignored (never silently used). ``model.Guesser``
  answers a near tie of this path again with the float network (``model.guesser.NEAR_TIE``), so its
  answers are the float model's wherever rounding could have changed them;
- ``onnx``: the float network exported in memory when the checkpoint is loaded (about a second).

Beside a checkpoint, its serving bundle (:mod:`model.bundle`) holds these ONNX graphs ready made:
``Guesser.load`` then serves from it without importing PyTorch, which this module imports only for
its PyTorch paths (``torch_runner``, ``export_onnx``).

``auto`` picks ``onnx-int8`` when a matching file exists, else ``onnx``, else ``torch`` (when
ONNX Runtime is not installed or the export fails). ``GRIFFON_MODEL_BACKEND`` sets the default.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnxruntime
    import torch

BACKENDS = ("auto", "onnx-int8", "onnx", "torch")
BACKEND_ENV = "GRIFFON_MODEL_BACKEND"
INPUT, OUTPUT = "images", "logits"
SOURCE_KEY = "griffon.weights_sha256"
CHUNK = 16  # rasters per network call: small enough for the activations to stay in the CPU cache
OPSET = 17

Runner = Callable[[np.ndarray], np.ndarray]  # float32 rasters (n, c, h, w) -> logits (n, classes)
_EXPORTED: dict[tuple[str, int, int], bytes] = {}  # float ONNX exports by weights sha256


class BackendError(RuntimeError):
    """A requested back-end cannot run (ONNX Runtime missing, no matching int8 file, failed export)."""


def int8_path(checkpoint: Path | str) -> Path:
    """Where the int8 ONNX copy of a checkpoint lives: beside it, ``<stem>.int8.onnx``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.stem}.int8.onnx")


def weights_sha256(network: torch.nn.Module) -> str:
    """sha256 of a network's weights (every tensor's name, shape and float32 values, in order).

    What an exported copy must match: rewriting a checkpoint's temperature, metrics or card leaves
    it unchanged; retraining changes it."""
    digest = hashlib.sha256()
    for name, tensor in network.state_dict().items():
        digest.update(f"{name}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def default_backend() -> str:
    """The back-end ``Guesser.load`` uses when none is given: ``$GRIFFON_MODEL_BACKEND`` or ``auto``."""
    name = os.environ.get(BACKEND_ENV, "auto").strip() or "auto"
    if name not in BACKENDS:
        raise BackendError(f"{BACKEND_ENV}={name!r} is not one of {', '.join(BACKENDS)}")
    return name


def torch_runner(network: torch.nn.Module) -> Runner:
    """Logits from the float PyTorch network (the reference path)."""
    import torch  # the PyTorch paths only: serving from a bundle never imports it

    def run(images: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return network(torch.from_numpy(images)).numpy()

    return run


def export_onnx(network: torch.nn.Module, channels: int, size: int) -> bytes:
    """The float network as an ONNX model (dynamic batch), with PyTorch's TorchScript exporter."""
    import torch

    example = torch.zeros(1, channels, size, size)
    buffer = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated, not removed, in torch 2.x
        warnings.simplefilter("ignore")
        torch.onnx.export(
            network.eval(),
            example,
            buffer,
            input_names=[INPUT],
            output_names=[OUTPUT],
            dynamic_axes={INPUT: {0: "batch"}, OUTPUT: {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )
    return buffer.getvalue()


def onnx_session(model: bytes | str | Path, threads: int | None = None) -> onnxruntime.InferenceSession:
    """An ONNX Runtime CPU session for a model (bytes or a file).

    ``threads``: intra-op threads (default 1: on 2 cores a second thread gained nothing for this
    small network, at batch 1 or in chunks of 16, and the other core is left to preprocessing). Threads
    sleep instead of spinning between calls, so an idle pool does not steal CPU."""
    import onnxruntime as ort  # imported only when an ONNX back-end is used

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def onnx_runner(session: onnxruntime.InferenceSession, chunk: int = CHUNK) -> Runner:
    """Logits from an ONNX Runtime session, ``chunk`` rasters per call (a large batch at once
    spills the activations out of the CPU cache: 35–60 % more CPU per drawing at 256)."""

    def run(images: np.ndarray) -> np.ndarray:
        if len(images) <= chunk:
            return session.run(None, {INPUT: images})[0]
        parts = [session.run(None, {INPUT: images[i : i + chunk]})[0] for i in range(0, len(images), chunk)]
        return np.concatenate(parts)

    return run


def onnx_source(session: onnxruntime.InferenceSession) -> str | None:
    """The weights sha256 recorded in an ONNX model made by ``python -m training.export``."""
    return session.get_modelmeta().custom_metadata_map.get(SOURCE_KEY)


def select_runner(
    backend: str, checkpoint: Path, network: torch.nn.Module, channels: int, size: int
) -> tuple[str, Runner]:
    """``(backend actually used, runner)`` for a requested back-end (see the module docstring)."""
    if backend not in BACKENDS:
        raise BackendError(f"unknown back-end {backend!r}; known: {', '.join(BACKENDS)}")
    if backend == "torch":
        return "torch", torch_runner(network)
    try:
        import onnxruntime  # noqa: F401
    except ImportError as error:
        if backend == "auto":
            return "torch", torch_runner(network)
        raise BackendError(f"back-end {backend!r} needs onnxruntime: {error}") from error
    if backend in ("auto", "onnx-int8"):
        quantized = int8_path(checkpoint)
        session = None
        if quantized.is_file():
            try:
                session = onnx_session(quantized)
            except Exception as error:  # ONNX Runtime raises its own types
                if backend == "onnx-int8":
                    raise BackendError(f"cannot read {quantized}: {error}") from error
        if session is not None and onnx_source(session) == weights_sha256(network):
            return "onnx-int8", onnx_runner(session)
        if backend == "onnx-int8":
            state = "was made from another checkpoint" if session is not None else "does not exist"
            raise BackendError(
                f"{quantized} {state}; run: python -m training.export --checkpoint {checkpoint}"
            )
    try:
        key = (weights_sha256(network), channels, size)
        if key not in _EXPORTED:  # a process that loads one checkpoint many times exports it once
            _EXPORTED[key] = export_onnx(network, channels, size)
        return "onnx", onnx_runner(onnx_session(_EXPORTED[key]))
    except Exception as error:  # any exporter failure falls back to the reference
        if backend == "auto":
            return "torch", torch_runner(network)
        raise BackendError(f"ONNX export failed: {error}") from error
