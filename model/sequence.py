"""The stroke-sequence member in PyTorch: the network (1-D convolutions, a bidirectional GRU, mean and
max over the points), its exact ONNX form and its checkpoint; what it reads (the pen's path in order,
:func:`featurize`) and how its ONNX graph runs without PyTorch are in :mod:`model.sequence_view`.
Trained by ``training.sequence_loop``; a two-view checkpoint (the shipped one) carries one or more beside
its raster network: ``Guesser`` averages the members into the sequence view, then the sequence view
with the raster network."""

from __future__ import annotations

import io
import pickle
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import torch
from torch import nn

from model.checkpoint import CheckpointError, save_whole
from model.runtime import BackendError, onnx_session, weights_sha256
from model.sequence_view import FEATURES, MAX_STEPS, SequenceView, onnx_sequence_runner, pad
from model.sequence_view import featurize as featurize  # where training and the tests read it


def pad_sequences(sequences: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad featurized drawings to the longest: ``(batch (n, steps, FEATURES), lengths (n,))``."""
    batch, lengths = pad(sequences)
    return torch.from_numpy(batch), torch.from_numpy(lengths)


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

    def encode(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The convolutions' features ``(n, steps, width)`` of padded sequences and the mask of real
        steps ``(n, steps, 1)``; padding stays zero, so a drawing's answer does not depend on its batch."""
        mask = (torch.arange(x.shape[1])[None, :] < lengths[:, None]).unsqueeze(1)  # (n, 1, steps)
        h = x.transpose(1, 2) * mask
        for block in self.conv:
            h = block(h) * mask
        return h.transpose(1, 2), mask.transpose(1, 2)

    def classify(self, out: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits from the GRU's outputs ``(n, steps, 2 · hidden)``: mean and max over the real steps."""
        mean = (out * mask).sum(1) / lengths[:, None].clamp(min=1)
        peak = out.masked_fill(~mask, float("-inf")).max(1).values
        return self.head(torch.cat([mean, peak], dim=1))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits for padded sequences ``x`` ``(n, steps, FEATURES)`` of the given lengths. The GRU's
        backward direction runs forwards over each drawing reversed in place (padding stays at the
        end, where ``classify`` ignores it): the answers of packed sequences, and a training step
        3.8x faster on CPU than packed sequences (whose backward pass zero-fills the whole packed
        batch at every step)."""
        h, mask = self.encode(x, lengths)
        ahead, behind = partial(_one_direction, self.gru, ""), partial(_one_direction, self.gru, "_reverse")
        return self.classify(both_ways(h, lengths, ahead, behind), mask, lengths)


_GRU_WEIGHTS = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")


def both_ways(
    h: torch.Tensor, lengths: torch.Tensor, ahead: Callable[[torch.Tensor], torch.Tensor],
    behind: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """A bidirectional GRU's outputs ``(n, steps, 2 · hidden)`` on padded sequences ``h``: ``ahead``
    runs forwards over them, ``behind`` forwards over each drawing reversed in place (its padding
    stays at the end), its outputs put back in the drawing's order."""
    positions, ends = torch.arange(h.shape[1])[None, :], lengths[:, None]
    mirror = torch.where(positions < ends, ends - 1 - positions, positions).unsqueeze(2)
    forwards = ahead(h)
    backwards = behind(torch.gather(h, 1, mirror.expand(-1, -1, h.shape[2])))  # the mirror is its own inverse
    return torch.cat([forwards, torch.gather(backwards, 1, mirror.expand(-1, -1, backwards.shape[2]))], dim=2)


def _one_direction(gru: nn.GRU, suffix: str, h: torch.Tensor) -> torch.Tensor:
    """One direction (``""`` or ``"_reverse"``) of a one-layer bidirectional GRU run forwards over
    ``h`` ``(n, steps, input)`` with that direction's own weights (stateless: safe across threads)."""
    weights = [getattr(gru, name + suffix) for name in _GRU_WEIGHTS]
    start = h.new_zeros(1, h.shape[0], gru.hidden_size)
    out, _ = torch.ops.aten.gru.input(h, start, weights, True, 1, 0.0, gru.training, False, True)
    return out


def member_network(num_classes: int, state_dict: dict[str, torch.Tensor]) -> StrokeSequenceNet:
    """A member network with the given weights, its sizes (width, hidden) read from their shapes."""
    width = int(state_dict["conv.1.0.weight"].shape[0])
    hidden = int(state_dict["gru.weight_hh_l0"].shape[1])
    network = StrokeSequenceNet(num_classes, width=width, hidden=hidden)
    network.load_state_dict({k: v.float() for k, v in state_dict.items()})
    return network.eval()


class ExportableMember(nn.Module):
    """The same member without packed sequences, so ``torch.onnx.export`` can trace it: the GRU's
    backward direction runs forwards over each drawing reversed in place (padding stays at the end),
    which gives the packed network's answers on padded batches. Outputs probabilities."""

    def __init__(self, network: StrokeSequenceNet):
        super().__init__()
        gru = network.gru
        self.network = network
        self.forwards = nn.GRU(gru.input_size, gru.hidden_size, batch_first=True)
        self.backwards = nn.GRU(gru.input_size, gru.hidden_size, batch_first=True)
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(self.forwards, f"{name}_l0").data = getattr(gru, f"{name}_l0").data
            getattr(self.backwards, f"{name}_l0").data = getattr(gru, f"{name}_l0_reverse").data

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Probabilities for padded sequences ``x`` ``(n, steps, FEATURES)`` of the given lengths."""
        h, mask = self.network.encode(x, lengths)
        out = both_ways(h, lengths, lambda t: self.forwards(t)[0], lambda t: self.backwards(t)[0])
        return torch.softmax(self.network.classify(out, mask, lengths), dim=1)


class ExportableCommittee(nn.Module):
    """Several members as one graph: the average of their probabilities (one member: its own)."""

    def __init__(self, networks: Sequence[StrokeSequenceNet]):
        super().__init__()
        self.members = nn.ModuleList(ExportableMember(network.eval()).eval() for network in networks)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Averaged probabilities for padded sequences ``x`` ``(n, steps, FEATURES)``."""
        outputs = [member(x, lengths) for member in self.members]
        return outputs[0] if len(outputs) == 1 else torch.stack(outputs).mean(0)


def member_onnx_bytes(networks: Sequence[StrokeSequenceNet]) -> bytes:
    """The members as one ONNX graph averaging their probabilities (inputs ``sequences`` ``(n, steps,
    FEATURES)`` float32 and ``lengths`` ``(n,)`` int64; output ``probabilities``), for ONNX Runtime."""
    exportable = ExportableCommittee(networks).eval()
    example = (torch.zeros(2, 8, FEATURES), torch.tensor([8, 5]))
    buffer = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter (as model.runtime): deprecated, not removed
        warnings.simplefilter("ignore")
        torch.onnx.export(
            exportable, example, buffer, input_names=["sequences", "lengths"],
            output_names=["probabilities"], opset_version=17, dynamo=False,
            dynamic_axes={"sequences": {0: "n", 1: "steps"}, "lengths": {0: "n"}, "probabilities": {0: "n"}},
        )
    return buffer.getvalue()


_EXPORTED: dict[tuple[str, ...], bytes] = {}  # the members' weights sha256 → their ONNX graph


class SequenceMember(SequenceView):
    """The stroke-sequence view of PyTorch member networks (:class:`SequenceView`): ``backend``
    ``onnx`` runs their exact ONNX form (exported here, once per process) on ONNX Runtime, ``torch``
    the packed networks (the reference). Thread-safe."""

    def __init__(
        self,
        networks: StrokeSequenceNet | Sequence[StrokeSequenceNet],
        backend: str = "onnx",
        fallback: bool = False,
    ) -> None:
        """``fallback``: when the ONNX export or session fails, run on PyTorch (``backend`` then says
        ``torch``) instead of raising :class:`model.runtime.BackendError`."""
        self.networks = [networks] if isinstance(networks, StrokeSequenceNet) else list(networks)
        if not self.networks:
            raise ValueError("a stroke-sequence view needs at least one member network")
        for network in self.networks:
            network.eval()
        classes, count = self.networks[0].head[-1].out_features, len(self.networks)
        if backend == "onnx":
            try:
                key = tuple(weights_sha256(network) for network in self.networks)
                if key not in _EXPORTED:  # a process that loads one model many times exports it once
                    _EXPORTED[key] = member_onnx_bytes(self.networks)
                super().__init__(onnx_sequence_runner(onnx_session(_EXPORTED[key])), classes, count, "onnx")
                return
            except Exception as error:  # the exporter and ONNX Runtime raise their own types
                if not fallback:
                    message = f"the stroke-sequence member cannot run on ONNX Runtime: {error}"
                    raise BackendError(message) from error
        super().__init__(self._run_torch, classes, count, "torch")

    def _run_torch(self, batch: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        x, steps = torch.from_numpy(batch), torch.from_numpy(lengths)
        with torch.inference_mode():
            probabilities = [torch.softmax(network(x, steps), dim=1) for network in self.networks]
            return torch.stack(probabilities).mean(0).numpy()


def save_member(
    network: StrokeSequenceNet, classes: list[str], path: Path | str, training: dict | None = None
) -> None:
    """Write a member checkpoint: its weights, class list, the sequence format it reads and how it
    was trained (``training``: plain JSON values, e.g. its epochs, seed and teachers)."""
    payload = {"kind": "stroke-sequence", "state_dict": network.state_dict(), "classes": list(classes),
               "features": FEATURES, "max_steps": MAX_STEPS, "training": dict(training or {})}
    save_whole(payload, Path(path))


def member_training(path: Path | str) -> dict:
    """How a member saved by :func:`save_member` was trained (empty for a file that does not say)."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as error:
        raise CheckpointError(f"{path}: cannot be read as a stroke-sequence member ({error})") from None
    record = payload.get("training") if isinstance(payload, dict) else None
    return dict(record) if isinstance(record, dict) else {}


def load_member(path: Path | str, classes: list[str] | None = None) -> StrokeSequenceNet:
    """A member saved by this module, ready for inference; ``CheckpointError`` when the file is not
    one, reads another sequence format, or (with ``classes``) knows other classes."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(payload, dict) or payload.get("kind") != "stroke-sequence":
            raise CheckpointError(f"{path}: not a stroke-sequence member (griffon train --network sequence)")
        if payload.get("features", FEATURES) != FEATURES:
            raise CheckpointError(f"{path}: reads {payload['features']} features per point, not {FEATURES}")
        if classes is not None and list(payload["classes"]) != list(classes):
            raise CheckpointError(f"{path}: its classes differ from this run's")
        network = member_network(len(payload["classes"]), payload["state_dict"])
    except (OSError, RuntimeError, KeyError, TypeError, EOFError, pickle.UnpicklingError) as error:
        raise CheckpointError(f"{path}: cannot be read as a stroke-sequence member ({error})") from None
    return network.eval()
