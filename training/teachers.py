"""Two public Quick, Draw! classifiers read as *teachers*, with our own code (torch; no TensorFlow).

The teachers (both trained by their authors on Google's full Quick, Draw! dataset, 345 categories):

- **DoodleNet**, by ml5.js: https://github.com/ml5js/ml5-data-and-models (``models/doodlenet/``,
  commit 0612a3e7c51cbffdc5db701dff49d16d1ac26fa8), MIT licence, Copyright (c) 2018 ml5;
- **quickdraw-prediction-model**, a small ResNet by jinnyday0719:
  https://github.com/jinnyday0719/quickdraw-prediction-model (``web/tfjs_model/``, commit
  bb1d600a7b2139e0f36cb199eac8ab30dda71e4f), MIT licence, Copyright (c) 2024 안서진.

Each folder keeps its ``LICENSE``, which must travel with any copy of the files. The drawings they
learned from are Google's Quick, Draw! dataset (CC BY 4.0).

Both are TensorFlow.js *layers* models: ``model.json`` holds the Keras topology and a
``weightsManifest`` (names, shapes and dtypes of the weights, concatenated in the shard files).
:class:`LayersNetwork` interprets that graph in torch (NCHW inside; Keras kernels are
``(h, w, in, out)``, ``same`` padding is TensorFlow's, asymmetric for even strides, and ``Flatten``
reads channels-last). Their class orders are mapped onto ours by name (spaces, underscores and case
aside); a class missing on either side is an error.

Both learned from the dataset's ``numpy_bitmap`` files (28 × 28, divided by 255: the ResNet's
``src/train.py`` and DoodleNet's notebook), so both read the same render (:func:`render`), the one
googlecreativelab/quickdraw-dataset issue 19 reproduces with Cairo: the simplified
drawing (:func:`model.strokes.simplify_drawing`) centred in a 256 box, padded by 16 units on each
side plus half a line, drawn with round caps and joins and a 16-unit anti-aliased line, reduced to
28 × 28; white ink on black, floats in [0, 1]. It differs from that Cairo code by 0.002 a pixel on
average and gives the same top-1 within a point. Top-1 on our training split: DoodleNet 68.7 %, the
ResNet 74.9 %, their geometric mean 74.7 % (Kontour lines: 51.8, 52.0, 54.6; the first half of the
strokes: 39.6, 44.5, 43.9). Thinner or thicker lines, other margins, a blur, a crisper edge, a
half-pixel shift or a gamma read no better (DoodleNet falls to 5 % on a half-pixel bilinear shift).

``python -m training.teachers score`` prints each teacher's top-1 (and that of their geometric mean) on
whole, Kontour-style and half drawings; ``python -m training.teachers metrics --split dev`` every
headline metric of the experiments table (Kontour deck and Pictomania tables included);
``python -m training.teachers cache --out FILE`` stores their answers on every training drawing as a
compact ``.npz`` keyed by ``key_id`` (:func:`read_cache`), what ``--teacher-cache`` distils from
(:mod:`training.taught`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import cv2
import numba
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from model.strokes import DrawingError, simplify_drawing, validate_drawing
from training.augment import first_fraction, kontour_style
from training.data import DataError, DrawingRecord, default_data_root, load_dataset

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_ENV = "GRIFFON_TEACHERS"
SHARED_MODELS = REPO_ROOT.parent / "shared" / "models"
TEACHER_NAMES = ("doodlenet", "quickdraw-resnet")
OUR_CLASSES = REPO_ROOT / "model" / "weights" / "categories.txt"
CLASS_FILES = ("class_names.txt", "class.json")
EXTRA_DATA = REPO_ROOT.parent / "shared" / "data" / "quickdraw-extra"


class TeacherError(RuntimeError):
    """A teacher folder that is missing, malformed, or uses something this reader does not know."""


# -- weights ---------------------------------------------------------------------------------------
_DTYPES = {"float32": np.float32, "int32": np.int32, "bool": np.bool_}


def read_weights(folder: Path, manifest: list[dict]) -> dict[str, np.ndarray]:
    """Every weight of a ``weightsManifest``: each group's shards concatenated, then cut in order."""
    weights: dict[str, np.ndarray] = {}
    for group in manifest:
        try:
            payload = b"".join((folder / path).read_bytes() for path in group["paths"])
        except OSError as error:
            raise TeacherError(f"cannot read a weight shard of {folder}: {error}") from error
        offset = 0
        for entry in group["weights"]:
            name, shape, dtype = entry["name"], [int(d) for d in entry["shape"]], entry["dtype"]
            if "quantization" in entry:
                raise TeacherError(f"{folder}: weight {name} is quantized; this reader does not support that")
            if dtype not in _DTYPES:
                raise TeacherError(f"{folder}: weight {name} has unsupported dtype {dtype!r}")
            count = int(np.prod(shape)) if shape else 1
            size = count * np.dtype(_DTYPES[dtype]).itemsize
            if offset + size > len(payload):
                raise TeacherError(f"{folder}: the shard ends inside weight {name} ({len(payload)} bytes)")
            values = np.frombuffer(
                payload, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<"), count=count, offset=offset
            )
            weights[name] = values.reshape(shape).astype(_DTYPES[dtype])
            offset += size
        if offset != len(payload):
            raise TeacherError(f"{folder}: {len(payload) - offset} shard bytes are not in the manifest")
    return weights


# -- the layers graph -------------------------------------------------------------------------------
_ACTIVATIONS = {
    "linear": lambda x: x,
    "relu": F.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softmax": lambda x: torch.softmax(x, dim=1),
}


def _activation(name: str | None, layer: str) -> Any:
    if (name or "linear") not in _ACTIVATIONS:
        raise TeacherError(f"layer {layer}: unsupported activation {name!r}")
    return _ACTIVATIONS[name or "linear"]


def _pair(value: Any) -> tuple[int, int]:
    return (int(value), int(value)) if isinstance(value, int) else (int(value[0]), int(value[1]))


def _same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TensorFlow's ``same`` padding of one axis: the extra pixel goes after (bottom, right)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _pad_same(
    x: torch.Tensor,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    value: float = 0.0,
) -> torch.Tensor:
    top, bottom = _same_padding(x.shape[2], kernel[0], stride[0], dilation[0])
    left, right = _same_padding(x.shape[3], kernel[1], stride[1], dilation[1])
    if top == bottom == left == right == 0:
        return x
    return F.pad(x, (left, right, top, bottom), value=value)


class _Layer(nn.Module):
    """One Keras layer on NCHW tensors (``inputs`` is the list of its inbound tensors)."""

    def __init__(self, name: str, config: dict) -> None:
        super().__init__()
        self.layer_name = name
        self.config = config

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


def _weight(weights: dict[str, np.ndarray], layer: str, name: str) -> torch.Tensor:
    key = f"{layer}/{name}"
    if key not in weights:
        raise TeacherError(f"layer {layer}: weight {key} is not in the manifest")
    return torch.from_numpy(np.ascontiguousarray(weights.pop(key), dtype=np.float32))


class _Conv2D(_Layer):
    def __init__(self, name: str, config: dict, weights: dict[str, np.ndarray]) -> None:
        super().__init__(name, config)
        if config.get("data_format", "channels_last") != "channels_last" or int(config.get("groups", 1)) != 1:
            raise TeacherError(f"layer {name}: only channels-last, ungrouped convolutions are supported")
        self.kernel_size = _pair(config["kernel_size"])
        self.stride = _pair(config.get("strides", 1))
        self.dilation = _pair(config.get("dilation_rate", 1))
        self.padding = config.get("padding", "valid")
        if self.padding not in ("same", "valid"):
            raise TeacherError(f"layer {name}: unsupported padding {self.padding!r}")
        kernel = _weight(weights, name, "kernel")  # (h, w, in, out)
        self.weight = nn.Parameter(kernel.permute(3, 2, 0, 1).contiguous(), requires_grad=False)
        bias = _weight(weights, name, "bias") if config.get("use_bias", True) else None
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)
        self.activation = _activation(config.get("activation"), name)

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        if self.padding == "same":
            x = _pad_same(x, self.kernel_size, self.stride, self.dilation)
        return self.activation(F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation))


class _Dense(_Layer):
    def __init__(self, name: str, config: dict, weights: dict[str, np.ndarray]) -> None:
        super().__init__(name, config)
        self.weight = nn.Parameter(_weight(weights, name, "kernel").T.contiguous(), requires_grad=False)
        bias = _weight(weights, name, "bias") if config.get("use_bias", True) else None
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)
        self.activation = _activation(config.get("activation"), name)

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        if inputs[0].dim() != 2:
            raise TeacherError(f"layer {self.layer_name}: Dense needs a flat input, not {inputs[0].dim()}-d")
        return self.activation(F.linear(inputs[0], self.weight, self.bias))


class _BatchNorm(_Layer):
    def __init__(self, name: str, config: dict, weights: dict[str, np.ndarray]) -> None:
        super().__init__(name, config)
        axis = config.get("axis", -1)
        axis = axis[0] if isinstance(axis, list) and len(axis) == 1 else axis
        if axis not in (-1, 3):
            raise TeacherError(f"layer {name}: batch normalization over axis {axis} is not supported")
        mean, variance = _weight(weights, name, "moving_mean"), _weight(weights, name, "moving_variance")
        gamma = _weight(weights, name, "gamma") if config.get("scale", True) else torch.ones_like(mean)
        beta = _weight(weights, name, "beta") if config.get("center", True) else torch.zeros_like(mean)
        scale = gamma / torch.sqrt(variance + float(config.get("epsilon", 1e-3)))
        self.register_buffer("scale", scale.reshape(1, -1, 1, 1))
        self.register_buffer("shift", (beta - mean * scale).reshape(1, -1, 1, 1))

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        return inputs[0] * self.scale + self.shift


class _Pool(_Layer):
    def __init__(self, name: str, config: dict, kind: str) -> None:
        super().__init__(name, config)
        if config.get("data_format", "channels_last") != "channels_last":
            raise TeacherError(f"layer {name}: only channels-last pooling is supported")
        self.kind = kind
        self.pool = _pair(config.get("pool_size", 2))
        self.stride = _pair(config.get("strides") or self.pool)
        self.padding = config.get("padding", "valid")
        if self.padding not in ("same", "valid") or (self.padding == "same" and kind == "average"):
            raise TeacherError(f"layer {name}: unsupported {kind} pooling padding {self.padding!r}")

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        if self.kind == "max":
            if self.padding == "same":
                x = _pad_same(x, self.pool, self.stride, (1, 1), value=float("-inf"))
            return F.max_pool2d(x, self.pool, self.stride)
        return F.avg_pool2d(x, self.pool, self.stride)


class _Function(_Layer):
    """A layer without weights: a function of its inputs."""

    def __init__(self, name: str, config: dict, function: Any) -> None:
        super().__init__(name, config)
        self.function = function

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        return self.function(inputs)


def _flatten_channels_last(inputs: list[torch.Tensor]) -> torch.Tensor:
    x = inputs[0]
    return (x.permute(0, 2, 3, 1) if x.dim() == 4 else x).flatten(1)


def _relu_layer(name: str, config: dict) -> Any:
    if (
        config.get("max_value") is not None
        or float(config.get("negative_slope") or 0) != 0
        or float(config.get("threshold") or 0) != 0
    ):
        raise TeacherError(f"layer {name}: only a plain ReLU (no max value, slope or threshold) is supported")
    return lambda inputs: F.relu(inputs[0])


def _build_layer(class_name: str, name: str, config: dict, weights: dict[str, np.ndarray]) -> _Layer:
    if class_name == "Conv2D":
        return _Conv2D(name, config, weights)
    if class_name == "Dense":
        return _Dense(name, config, weights)
    if class_name == "BatchNormalization":
        return _BatchNorm(name, config, weights)
    if class_name in ("MaxPooling2D", "AveragePooling2D"):
        return _Pool(name, config, "max" if class_name == "MaxPooling2D" else "average")
    functions = {
        "InputLayer": lambda inputs: inputs[0],
        "Dropout": lambda inputs: inputs[0],  # inference: identity
        "Flatten": _flatten_channels_last,
        "GlobalAveragePooling2D": lambda inputs: inputs[0].mean(dim=(2, 3)),
        "GlobalMaxPooling2D": lambda inputs: inputs[0].amax(dim=(2, 3)),
        "Add": lambda inputs: torch.stack(inputs).sum(dim=0),
    }
    if class_name == "ReLU":
        return _Function(name, config, _relu_layer(name, config))
    if class_name == "Activation":
        activation = _activation(config.get("activation"), name)
        return _Function(name, config, lambda inputs: activation(inputs[0]))
    if class_name in functions:
        if (
            class_name in ("Flatten", "GlobalAveragePooling2D", "GlobalMaxPooling2D")
            and config.get("data_format", "channels_last") != "channels_last"
        ):
            raise TeacherError(f"layer {name}: only channels-last {class_name} is supported")
        return _Function(name, config, functions[class_name])
    raise TeacherError(f"layer {name}: unsupported layer type {class_name}")


@dataclass
class _Node:
    name: str
    inputs: list[str]


class LayersNetwork(nn.Module):
    """A TensorFlow.js layers model (Sequential or Functional) run in torch.

    Input: channels-last images, as Keras reads them: ``(n, h, w, c)``, or ``(n, h, w)`` for one
    channel; output: the model's output, e.g. softmax probabilities.
    """

    def __init__(self, topology: dict, weights: dict[str, np.ndarray]) -> None:
        super().__init__()
        model = topology.get("model_config", topology)
        kind, config = model.get("class_name"), model.get("config")
        layers = config if isinstance(config, list) else (config or {}).get("layers")
        if kind not in ("Sequential", "Functional", "Model") or not isinstance(layers, list) or not layers:
            raise TeacherError(f"unsupported model topology {kind!r} (expected Sequential or Functional)")
        weights = dict(weights)
        self.layers = nn.ModuleDict()
        self.nodes: list[_Node] = []
        previous: str | None = None
        for layer in layers:
            class_name, layer_config = layer["class_name"], layer["config"]
            name = layer_config.get("name") or layer.get("name")
            if not name or name in self.layers:
                raise TeacherError(f"layer names must be present and unique (got {name!r})")
            self.layers[name] = _build_layer(class_name, name, layer_config, weights)
            if kind == "Sequential":
                inputs = [previous] if previous else []
            else:
                inputs = _inbound_names(layer)
            self.nodes.append(_Node(name, inputs))
            previous = name
        if weights:
            raise TeacherError(f"weights not used by any layer: {', '.join(sorted(weights))}")
        if kind == "Sequential":
            self.input_names, self.output_name = [], previous
        else:
            self.input_names = [entry[0] for entry in config.get("input_layers", [])]
            outputs = config.get("output_layers", [])
            if len(self.input_names) != 1 or len(outputs) != 1:
                raise TeacherError("only models with one input and one output are supported")
            self.output_name = outputs[0][0]
        known = {node.name for node in self.nodes}
        computed: set[str] = set()
        for node in self.nodes:
            missing = [name for name in node.inputs if name not in known]
            if missing:
                raise TeacherError(f"layer {node.name} reads unknown layers: {', '.join(missing)}")
            later = [name for name in node.inputs if name not in computed]
            if later:
                raise TeacherError(f"layer {node.name} reads layers listed after it: {', '.join(later)}")
            computed.add(node.name)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.float()
        if x.dim() not in (3, 4):
            raise TeacherError(f"expected (n, h, w) or (n, h, w, c) images, got shape {tuple(x.shape)}")
        x = x.unsqueeze(1) if x.dim() == 3 else x.permute(0, 3, 1, 2)
        values: dict[str, torch.Tensor] = {}
        for index, node in enumerate(self.nodes):
            if node.inputs:
                inputs = [values[name] for name in node.inputs]
            elif index == 0 or node.name in self.input_names:
                inputs = [x]
            else:
                raise TeacherError(f"layer {node.name} has no input")
            values[node.name] = self.layers[node.name](inputs)
        return values[self.output_name]


def _inbound_names(layer: dict) -> list[str]:
    """The names of the layers a Functional layer reads (Keras 2 ``inbound_nodes`` format)."""
    nodes = layer.get("inbound_nodes", [])
    if not nodes:
        return []
    if len(nodes) != 1:
        raise TeacherError(f"layer {layer['config'].get('name')}: shared layers are not supported")
    names = []
    for entry in nodes[0]:
        if not isinstance(entry, list) or not entry or not isinstance(entry[0], str):
            raise TeacherError(f"layer {layer['config'].get('name')}: unreadable inbound_nodes {entry!r}")
        names.append(entry[0])
    return names


def read_layers_model(folder: Path | str) -> LayersNetwork:
    """Read a TensorFlow.js layers model folder (``model.json`` + shards) as an eval-mode torch module."""
    folder = Path(folder)
    try:
        description = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TeacherError(f"cannot read {folder / 'model.json'}: {error}") from error
    if description.get("format", "layers-model") != "layers-model" or "modelTopology" not in description:
        raise TeacherError(f"{folder / 'model.json'} is not a TensorFlow.js layers model")
    try:
        weights = read_weights(folder, description["weightsManifest"])
        network = LayersNetwork(description["modelTopology"], weights)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise TeacherError(f"{folder / 'model.json'}: malformed model description ({error!r})") from error
    return network.eval()


# -- classes ----------------------------------------------------------------------------------------
def normalized_class(name: str) -> str:
    """A class name without case, underscores or extra spaces: ``The_Eiffel_Tower``, ``the eiffel tower``.

    Two names are the same class when these forms are equal."""
    return re.sub(r"\s+", " ", name.replace("_", " ")).strip().lower()


def read_class_names(folder: Path | str) -> list[str]:
    """A teacher's class names in its output order (``class_names.txt``: comma- or line-separated;
    ``class.json``: a list, or an object from index to name)."""
    folder = Path(folder)
    text_file, json_file = folder / CLASS_FILES[0], folder / CLASS_FILES[1]
    try:
        if text_file.is_file():
            return [
                name.strip()
                for name in re.split(r"[,\n]", text_file.read_text(encoding="utf-8"))
                if name.strip()
            ]
        if json_file.is_file():
            data = json.loads(json_file.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                return [str(data[key]) for key in sorted(data, key=int)]
            if isinstance(data, list):
                return [str(name) for name in data]
    except (OSError, ValueError) as error:
        raise TeacherError(f"cannot read the class names of {folder}: {error}") from error
    raise TeacherError(f"{folder} has no class list ({' or '.join(CLASS_FILES)})")


def class_columns(teacher_classes: Sequence[str], our_classes: Sequence[str]) -> np.ndarray:
    """For each of our classes, the teacher's output column with the same name.

    Raises :class:`TeacherError` naming every class of ours the teacher lacks, or that two names
    collide once normalized."""
    column_of: dict[str, int] = {}
    for index, name in enumerate(teacher_classes):
        key = normalized_class(name)
        if key in column_of:
            raise TeacherError(f"the teacher has two classes named {key!r}")
        column_of[key] = index
    ours = [normalized_class(name) for name in our_classes]
    if len(set(ours)) != len(ours):
        raise TeacherError("our class list has two names that differ only by case, spaces or underscores")
    missing = [name for name, key in zip(our_classes, ours, strict=True) if key not in column_of]
    if missing:
        raise TeacherError(f"the teacher has no class for {len(missing)} of ours: {', '.join(missing)}")
    return np.array([column_of[key] for key in ours], dtype=np.int64)


def read_our_classes(path: Path | str = OUR_CLASSES) -> list[str]:
    """Our 345 category names, in the order of the shipped model's outputs."""
    return [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


# -- the render -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BitmapSpec:
    """The ``numpy_bitmap`` render: units are those of the simplified drawing's 256 box."""

    size: int = 28
    line_width: float = 16.0
    padding: float = 16.0
    supersample: int = 4

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


def as_strokes(drawing: Any) -> list[np.ndarray]:
    """A drawing as ``(n, 2)`` float arrays: Quick, Draw! lists are validated, arrays taken as they are."""
    if isinstance(drawing, Sequence) and drawing and all(isinstance(s, np.ndarray) for s in drawing):
        strokes = [np.asarray(s, dtype=np.float64)[:, :2] for s in drawing if len(s)]
        if not strokes or not all(np.isfinite(s).all() for s in strokes):
            raise DrawingError("a drawing needs at least one stroke of finite points")
        return strokes
    return validate_drawing(drawing)


@numba.njit(cache=True, nogil=True)
def _draw_strokes(
    starts: np.ndarray, ends: np.ndarray, stroke_ends: np.ndarray, half_width: float, canvas: np.ndarray
) -> None:
    """Draw strokes (segments ``starts[i] → ends[i]``, stroke ``s`` ending at ``stroke_ends[s]``) in white
    on ``canvas``, coordinates in pixels. Within a stroke a pixel's ink is ``clip(half_width + 0.5 −
    distance, 0, 1)`` from its centre to the nearest segment (round caps and joins, a one-pixel
    anti-aliasing ramp; a zero-length segment is a dot); strokes are laid over one another as Cairo
    paints them (``ink + stroke × (1 − ink)``)."""
    height, width = canvas.shape
    layer = np.zeros_like(canvas)
    reach = half_width + 1.0
    first = 0
    for last in stroke_ends:
        x0, x1, y0, y1 = width, -1, height, -1
        for k in range(first, last):
            ax, ay, bx, by = starts[k, 0], starts[k, 1], ends[k, 0], ends[k, 1]
            dx, dy = bx - ax, by - ay
            length2 = dx * dx + dy * dy
            left = max(int(math.floor(min(ax, bx) - reach)), 0)
            right = min(int(math.ceil(max(ax, bx) + reach)), width - 1)
            top = max(int(math.floor(min(ay, by) - reach)), 0)
            bottom = min(int(math.ceil(max(ay, by) + reach)), height - 1)
            x0, x1, y0, y1 = min(x0, left), max(x1, right), min(y0, top), max(y1, bottom)
            for py in range(top, bottom + 1):
                cy = py + 0.5 - ay
                for px in range(left, right + 1):
                    cx = px + 0.5 - ax
                    t = 0.0
                    if length2 > 0.0:
                        t = min(max((cx * dx + cy * dy) / length2, 0.0), 1.0)
                    ink = min(half_width + 0.5 - math.hypot(cx - t * dx, cy - t * dy), 1.0)
                    if ink > layer[py, px]:
                        layer[py, px] = ink
        for py in range(y0, y1 + 1):
            for px in range(x0, x1 + 1):
                canvas[py, px] += layer[py, px] * (1.0 - canvas[py, px])
                layer[py, px] = 0.0
        first = last


def render(strokes: Sequence[np.ndarray], spec: BitmapSpec = BitmapSpec()) -> np.ndarray:
    """The ``numpy_bitmap`` image of simplified strokes: ``(size, size)`` float32 in [0, 1], white on black.

    As the reproduction published with the dataset (quickdraw-dataset issue 19, drawn with Cairo): the
    strokes keep their simplified coordinates (0–255, not scaled again), are shifted by ``(256 −
    max) / 2`` to centre them in the 256 box, the box is padded by ``padding + line_width / 2`` on
    each side and scaled to ``size`` pixels, and the lines are round-capped and anti-aliased
    (:func:`_draw_strokes`, at ``supersample`` times the size, then area-averaged)."""
    every = np.concatenate(strokes)[:, :2]
    big = spec.size * spec.supersample
    scale = big / (256.0 + 2.0 * spec.padding + spec.line_width)
    shift = (256.0 - every.max(axis=0)) / 2.0 + spec.padding + spec.line_width / 2.0
    starts, ends, stroke_ends = [], [], []
    for stroke in strokes:
        points = (np.asarray(stroke[:, :2], dtype=np.float64) + shift) * scale
        starts.append(points[:-1] if len(points) > 1 else points)
        ends.append(points[1:] if len(points) > 1 else points)
        stroke_ends.append(len(starts[-1]) + (stroke_ends[-1] if stroke_ends else 0))
    canvas = np.zeros((big, big), dtype=np.float32)
    _draw_strokes(
        np.concatenate(starts),
        np.concatenate(ends),
        np.asarray(stroke_ends, dtype=np.int64),
        spec.line_width * scale / 2.0,
        canvas,
    )
    if spec.supersample > 1:
        canvas = cv2.resize(canvas, (spec.size, spec.size), interpolation=cv2.INTER_AREA)
    return canvas


def render_many(
    drawings: Iterable[Any], spec: BitmapSpec = BitmapSpec(), simplified: bool = False
) -> np.ndarray:
    """``(n, size, size)`` renders of drawings (Quick, Draw! lists or arrays), simplified here unless
    ``simplified`` says they are (the dataset's simplified drawings are drawn as they are, not
    simplified and scaled again)."""
    images = []
    for drawing in drawings:
        strokes = as_strokes(drawing)
        images.append(render(strokes if simplified else simplify_drawing(strokes), spec))
    if not images:
        return np.zeros((0, spec.size, spec.size), dtype=np.float32)
    return np.stack(images)


# -- teachers ---------------------------------------------------------------------------------------
@dataclass
class Teacher:
    """One teacher: its network, its columns in our class order, and the render it reads."""

    name: str
    folder: Path
    network: LayersNetwork
    columns: np.ndarray
    classes: list[str]
    spec: BitmapSpec = BitmapSpec()

    @classmethod
    def load(
        cls, path: Path | str, classes: Sequence[str] | None = None, spec: BitmapSpec | None = None
    ) -> Teacher:
        """Read the teacher in folder ``path``; its outputs are mapped onto ``classes`` (default: ours)."""
        folder = Path(path)
        if not folder.is_dir():
            raise TeacherError(f"no teacher folder at {folder}")
        ours = list(classes) if classes is not None else read_our_classes()
        network = read_layers_model(folder)
        teacher_classes = read_class_names(folder)
        columns = class_columns(teacher_classes, ours)
        return cls(folder.name, folder, network, columns, ours, spec or BitmapSpec())

    def image_probabilities(self, images: np.ndarray, batch_size: int = 512) -> np.ndarray:
        """Probabilities ``(n, classes)`` in our class order for renders ``(n, size, size)``."""
        out = np.zeros((len(images), len(self.classes)), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(images), batch_size):
                batch = torch.from_numpy(np.ascontiguousarray(images[start : start + batch_size], np.float32))
                answer = self.network(batch).numpy()
                out[start : start + len(batch)] = answer[:, self.columns]
        return out

    def probabilities(
        self, drawings: Sequence[Any], batch_size: int = 512, simplified: bool = False
    ) -> np.ndarray:
        """Probabilities ``(n, classes)`` in our class order, for drawings in any Quick, Draw! form
        (``simplified``: see :func:`render_many`)."""
        out = np.zeros((len(drawings), len(self.classes)), dtype=np.float32)
        for start in range(0, len(drawings), batch_size):
            images = render_many(drawings[start : start + batch_size], self.spec, simplified)
            out[start : start + len(images)] = self.image_probabilities(images, batch_size)
        return out


def geometric_mean(probabilities: Sequence[np.ndarray], floor: float = 1e-8) -> np.ndarray:
    """The normalized geometric mean of several teachers' probabilities (rows sum to 1)."""
    logs = np.mean([np.log(np.maximum(p.astype(np.float64), floor)) for p in probabilities], axis=0)
    logs -= logs.max(axis=1, keepdims=True)
    mean = np.exp(logs)
    return (mean / mean.sum(axis=1, keepdims=True)).astype(np.float32)


def default_models_root(explicit: Path | str | None = None) -> Path:
    """The teachers' folder: ``explicit``, else ``$GRIFFON_TEACHERS``, else ``../shared/models``."""
    if explicit:
        return Path(explicit)
    return Path(os.environ.get(MODELS_ENV) or SHARED_MODELS)


def load_teachers(
    root: Path | str | None = None,
    names: Sequence[str] = TEACHER_NAMES,
    classes: Sequence[str] | None = None,
) -> list[Teacher]:
    """Both teachers (or ``names``) from ``root`` (see :func:`default_models_root`)."""
    folder = default_models_root(root)
    if not folder.is_dir():
        raise TeacherError(f"no teachers folder at {folder}; pass root=… (--models) or set {MODELS_ENV}")
    return [Teacher.load(folder / name, classes) for name in names]


def teachers_probabilities(
    teachers: Sequence[Teacher],
    drawings: Sequence[Any],
    batch_size: int = 512,
    progress: Callable[[int], object] | None = None,
    simplified: bool = False,
) -> list[np.ndarray]:
    """Each teacher's probabilities ``(n, classes)`` on ``drawings``, each batch rendered once per
    distinct render spec (``simplified``: see :func:`render_many`); ``progress(count)`` is called
    after each batch (e.g. a tqdm's ``update``)."""
    out = [np.zeros((len(drawings), len(t.classes)), dtype=np.float32) for t in teachers]
    for start in range(0, len(drawings), batch_size):
        chunk = drawings[start : start + batch_size]
        renders: dict[BitmapSpec, np.ndarray] = {}
        for index, teacher in enumerate(teachers):
            if teacher.spec not in renders:
                renders[teacher.spec] = render_many(chunk, teacher.spec, simplified)
            out[index][start : start + len(chunk)] = teacher.image_probabilities(
                renders[teacher.spec], batch_size
            )
        if progress is not None:
            progress(len(chunk))
    return out


# -- the cache of the teachers' answers ------------------------------------------------------------
CACHE_VERSION = 1


@dataclass
class TeacherCache:
    """The teachers' answers on whole drawings, keyed by ``key_id`` (what :func:`write_cache` stores).

    ``probabilities[name]`` is ``(n, classes)`` float32 in our class order; a cache written with
    ``top_k`` holds zeros outside each row's ``top_k`` largest answers."""

    key_ids: np.ndarray
    labels: np.ndarray
    extra: np.ndarray  # True for the drawings of the extra folder
    probabilities: dict[str, np.ndarray]
    classes: list[str]
    meta: dict

    def rows(self, key_ids: Iterable[str]) -> np.ndarray:
        """Row indices of ``key_ids``; raises ``KeyError`` naming the first one not cached."""
        if not hasattr(self, "_row_of"):
            self._row_of = {str(key): row for row, key in enumerate(self.key_ids)}
        out = []
        for key in key_ids:
            if key not in self._row_of:
                raise KeyError(f"drawing {key} is not in the teachers' cache")
            out.append(self._row_of[key])
        return np.asarray(out, dtype=np.int64)

    def committee(self, floor: float = 1e-8) -> np.ndarray:
        """The normalized geometric mean of every cached teacher, ``(n, classes)``."""
        return geometric_mean(list(self.probabilities.values()), floor)


def write_cache(
    path: Path | str,
    key_ids: Sequence[str],
    labels: np.ndarray,
    extra: np.ndarray,
    probabilities: dict[str, np.ndarray],
    classes: Sequence[str],
    meta: dict,
    top_k: int = 0,
) -> Path:
    """Store the teachers' answers as one compressed ``.npz``: float16 probabilities, dense or (with
    ``top_k``) each row's ``top_k`` largest as ``<name>.index`` (int16) and ``<name>.value``."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {
        "key_ids": np.asarray([str(key) for key in key_ids]),
        "labels": np.asarray(labels, dtype=np.int16),
        "extra": np.asarray(extra, dtype=bool),
        "classes": np.asarray(list(classes)),
    }
    for name, answers in probabilities.items():
        if top_k and top_k < answers.shape[1]:
            index = np.argsort(-answers, axis=1, kind="stable")[:, :top_k]
            arrays[f"{name}.index"] = index.astype(np.int16)
            arrays[f"{name}.value"] = np.take_along_axis(answers, index, axis=1).astype(np.float16)
        else:
            arrays[name] = answers.astype(np.float16)
    meta = {**meta, "version": CACHE_VERSION, "teachers": list(probabilities), "top_k": int(top_k)}
    arrays["meta"] = np.asarray(json.dumps(meta, sort_keys=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial_path = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez_compressed(partial_path, **arrays)
    os.replace(partial_path, path)
    return path


def read_cache(path: Path | str) -> TeacherCache:
    """Read what :func:`write_cache` stored (probabilities back to dense float32)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(str(archive["meta"]))
            if meta.get("version") != CACHE_VERSION:
                raise TeacherError(f"{path}: cache version {meta.get('version')}, expected {CACHE_VERSION}")
            classes = [str(name) for name in archive["classes"]]
            count = len(archive["key_ids"])
            probabilities = {}
            for name in meta["teachers"]:
                if name in archive.files:
                    probabilities[name] = archive[name].astype(np.float32)
                else:
                    dense = np.zeros((count, len(classes)), dtype=np.float32)
                    index = archive[f"{name}.index"].astype(np.int64)
                    np.put_along_axis(dense, index, archive[f"{name}.value"].astype(np.float32), axis=1)
                    probabilities[name] = dense
            return TeacherCache(
                key_ids=archive["key_ids"],
                labels=archive["labels"].astype(np.int64),
                extra=archive["extra"],
                probabilities=probabilities,
                classes=classes,
                meta=meta,
            )
    except (OSError, ValueError, KeyError) as error:
        raise TeacherError(f"cannot read the teachers' cache {path}: {error}") from error


# -- command line -----------------------------------------------------------------------------------
VIEWS = ("whole", "kontour", "half")


def view_of(strokes: list[np.ndarray], view: str) -> list[np.ndarray]:
    """A view of simplified strokes: the whole drawing, its Kontour lines (at most 15 straight
    segments, :func:`training.augment.kontour_style`) or its first half of strokes (rounded up).
    The teachers see a part view simplified on its own (aligned and scaled to the 256 box)."""
    if view == "whole":
        return strokes
    if view == "kontour":
        return kontour_style(strokes)
    if view == "half":
        return first_fraction(strokes, 0.5)
    raise ValueError(f"unknown view {view!r}; use one of {', '.join(VIEWS)}")


def _labelled_drawings(
    records: Sequence[DrawingRecord], classes: Sequence[str]
) -> tuple[list[str], list[list[np.ndarray]], np.ndarray, int]:
    """Key ids, simplified strokes and class indices of the records our validator accepts (and how
    many it refused); a record of an unknown class is an error. Drawings of the dataset's simplified
    files are kept as they are, others go through :func:`model.strokes.simplify_drawing`."""
    index_of = {name: i for i, name in enumerate(classes)}
    unknown = sorted({r.word for r in records} - set(index_of))
    if unknown:
        raise TeacherError(f"drawings of classes we do not have: {', '.join(unknown)}")
    keys, drawings, labels, refused = [], [], [], 0
    for record in records:
        try:
            strokes = validate_drawing(record.strokes)
            drawings.append(strokes if record.source == "simplified" else simplify_drawing(strokes))
        except DrawingError:
            refused += 1
            continue
        keys.append(record.key_id)
        labels.append(index_of[record.word])
    return keys, drawings, np.asarray(labels, dtype=np.int64), refused


def score_command(args: argparse.Namespace) -> None:
    """Print each teacher's top-1 (and their geometric mean's) per split and view."""
    teachers = load_teachers(args.models)
    classes = teachers[0].classes
    names = [t.name for t in teachers] + ["geometric mean"]
    print(f"| split | view | drawings | {' | '.join(names)} |")
    print(f"|---|---|---:|{'---:|' * len(names)}")
    rng = np.random.default_rng(args.seed)
    for split in args.splits.split(","):
        records = load_dataset(args.data, split)
        if args.recognized:
            records = [record for record in records if record.recognized]
        if args.limit and len(records) > args.limit:
            records = [records[i] for i in sorted(rng.choice(len(records), args.limit, replace=False))]
        _, drawings, labels, _ = _labelled_drawings(records, classes)
        for view in args.views.split(","):
            shown = [view_of(strokes, view) for strokes in drawings]
            answers = teachers_probabilities(teachers, shown, args.batch_size, simplified=view == "whole")
            answers.append(geometric_mean(answers))
            scores = [f"{100 * float((a.argmax(axis=1) == labels).mean()):.1f}" for a in answers]
            label = f"{split} (recognized)" if args.recognized else split
            print(f"| {label} | {view} | {len(labels)} | {' | '.join(scores)} |", flush=True)


METRIC_COLUMNS = (
    ("top-1", "full_top1"),
    ("top-3", "full_top3"),
    ("Kontour", "kontour_top1"),
    ("K. deck", "kontour_deck_top1"),
    ("half", "half_top1"),
    ("t-42 s0", "table42_top1"),
    ("Picto.", "pictomania_top1"),
)


def teacher_metrics(
    teachers: Sequence[Teacher],
    drawings: Sequence[list[np.ndarray]],
    labels: np.ndarray,
    batch_size: int = 512,
) -> dict[str, dict[str, float]]:
    """The headline metrics of :func:`training.metrics.headline_metrics` (every game condition) for
    each teacher and for their geometric mean, on simplified drawings; each view is simplified again
    on its own before the teachers see it, as the game would send it."""
    from training.metrics import CONDITIONS, metrics_from_probabilities

    names = [t.name for t in teachers] + ["geometric mean"]
    probs_of: dict[str, dict[str, np.ndarray]] = {name: {} for name in names}
    for condition, transform in CONDITIONS.items():
        shown = [transform(strokes) for strokes in drawings]
        answers = teachers_probabilities(teachers, shown, batch_size, simplified=condition == "full")
        answers.append(geometric_mean(answers))
        for name, answer in zip(names, answers, strict=True):
            probs_of[name][condition] = answer
    classes = teachers[0].classes
    return {name: metrics_from_probabilities(probs_of[name], labels, 0, classes) for name in names}


def metrics_command(args: argparse.Namespace) -> None:
    """Print each teacher's (and their geometric mean's) headline metrics on a split, as a table."""
    teachers = load_teachers(args.models)
    records = load_dataset(args.data, args.split)
    _, drawings, labels, _ = _labelled_drawings(records, teachers[0].classes)
    results = teacher_metrics(teachers, drawings, labels, args.batch_size)
    print(f"{args.split}: {len(labels)} drawings")
    print(f"| teacher | {' | '.join(title for title, _ in METRIC_COLUMNS)} |")
    print(f"|---|{'---:|' * len(METRIC_COLUMNS)}")
    for name, values in results.items():
        cells = [f"{100 * values[key]:.1f}" if key in values else "—" for _, key in METRIC_COLUMNS]
        print(f"| {name} | {' | '.join(cells)} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")


def cache_command(args: argparse.Namespace) -> None:
    """Compute and store the teachers' answers on every training drawing (and the extra folder's)."""
    started = time.perf_counter()
    teachers = load_teachers(args.models)
    classes = teachers[0].classes
    records = load_dataset(args.data, "train")
    extra_root = None if args.extra.lower() == "none" else Path(args.extra)
    extra_records = load_dataset(extra_root, "all") if extra_root is not None else []
    if extra_records:
        held_out = {r.key_id for r in load_dataset(args.data, "val")}
        seen = {r.key_id for r in records}
        extra_records = [r for r in extra_records if r.key_id not in held_out and r.key_id not in seen]
    keys, drawings, labels, refused = _labelled_drawings(records + extra_records, classes)
    extra_keys = {r.key_id for r in extra_records}
    extra = np.asarray([key in extra_keys for key in keys], dtype=bool)
    read_s = time.perf_counter() - started
    with tqdm(total=len(drawings), desc="teachers", unit="drawing") as bar:
        answers = teachers_probabilities(teachers, drawings, args.batch_size, bar.update, simplified=True)
    answer_s = time.perf_counter() - started - read_s
    meta = {
        "data": str(default_data_root(args.data).resolve()),
        "extra": str(extra_root) if extra_root is not None else None,
        "models": str(default_models_root(args.models).resolve()),
        "render": teachers[0].spec.to_dict(),
        "drawings": len(keys),
        "extra_drawings": int(extra.sum()),
        "refused_drawings": refused,
        "seconds": round(answer_s, 1),
    }
    by_teacher = {teacher.name: answer for teacher, answer in zip(teachers, answers, strict=True)}
    path = write_cache(args.out, keys, labels, extra, by_teacher, classes, meta, args.top_k)
    total_s = time.perf_counter() - started
    print(
        f"{len(keys)} drawings ({int(extra.sum())} extra, {refused} refused): read {read_s:.1f} s, "
        f"teachers {answer_s:.1f} s ({1000 * answer_s / max(len(keys), 1):.2f} ms a drawing), "
        f"total {total_s:.1f} s; {path} {path.stat().st_size / 2**20:.1f} MiB"
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m training.teachers {score,metrics,cache} …``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data", default=None, help="Quick, Draw! folder (default: the configured one)")
    common.add_argument(
        "--models", default=None, help=f"teachers' folder (default: ${MODELS_ENV}, else ../shared/models)"
    )
    common.add_argument("--batch-size", type=int, default=512)
    common.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    score = commands.add_parser("score", parents=[common], help=score_command.__doc__)
    score.add_argument("--splits", default="train,val")
    score.add_argument("--views", default=",".join(VIEWS))
    score.add_argument("--limit", type=int, default=0, help="score a random sample of this many per split")
    score.add_argument("--seed", type=int, default=0)
    score.add_argument("--recognized", action="store_true", help="only drawings the game recognized")
    cache = commands.add_parser("cache", parents=[common], help=cache_command.__doc__)
    cache.add_argument("--out", required=True, help="the .npz to write")
    cache.add_argument(
        "--extra", default=str(EXTRA_DATA), help="extra training drawings (a Quick, Draw! folder), or 'none'"
    )
    cache.add_argument("--top-k", type=int, default=0, help="keep each row's k largest answers (0: all)")
    metrics = commands.add_parser("metrics", parents=[common], help=metrics_command.__doc__)
    metrics.add_argument("--split", default="dev", help="train, dev or val (the teachers likely saw all)")
    metrics.add_argument("--json", default="", help="also write the metrics to this JSON file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        {"score": score_command, "cache": cache_command, "metrics": metrics_command}[args.command](args)
    except (TeacherError, DataError) as error:
        parser.exit(1, f"error: {error}\n")


if __name__ == "__main__":
    main()
