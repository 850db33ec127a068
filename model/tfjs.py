"""The public Quick, Draw! classifiers as torch modules of our own code (no TensorFlow).

Both public models (``model/public/``, each folder with its MIT ``LICENSE``, which must travel with
any copy of the files) are TensorFlow.js *layers* models: ``model.json`` holds the Keras topology and
a ``weightsManifest`` (names, shapes and dtypes of the weights, concatenated in the shard files).
:class:`LayersNetwork` builds that graph as torch layers (NCHW inside; Keras kernels are
``(h, w, in, out)``, ``same`` padding is TensorFlow's, asymmetric for even strides, and ``Flatten``
reads channels-last), its weights read from the shard. :class:`PublicNetwork` is the registered
architecture ``public`` (:mod:`model.network`): one of those models with its outputs in our class
order, giving logits, trainable (its batch normalisation stays at the statistics it learned, a fixed
per-channel scale and shift; dropout is the identity), exportable to ONNX like our other networks.

- **DoodleNet**, by ml5.js: https://github.com/ml5js/ml5-data-and-models (``models/doodlenet/``,
  commit 0612a3e7c51cbffdc5db701dff49d16d1ac26fa8), MIT licence, Copyright (c) 2018 ml5;
- **quickdraw-prediction-model**, a small ResNet by jinnyday0719:
  https://github.com/jinnyday0719/quickdraw-prediction-model (``web/tfjs_model/``, commit
  bb1d600a7b2139e0f36cb199eac8ab30dda71e4f), MIT licence, Copyright (c) 2024 안서진.

Both were trained by their authors on Google's full Quick, Draw! dataset (CC BY 4.0) and read the
dataset's 28 × 28 ``numpy_bitmap`` render (:mod:`model.bitmap`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

PUBLIC_DIR = Path(__file__).resolve().parent / "public"
PUBLIC_MODELS = ("doodlenet", "quickdraw-resnet")
CLASS_FILES = ("class_names.txt", "class.json")

class PublicModelError(RuntimeError):
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
            raise PublicModelError(f"cannot read a weight shard of {folder}: {error}") from error
        offset = 0
        for entry in group["weights"]:
            name, shape, dtype = entry["name"], [int(d) for d in entry["shape"]], entry["dtype"]
            if "quantization" in entry:
                raise PublicModelError(f"{folder}: weight {name} is quantized; not supported")
            if dtype not in _DTYPES:
                raise PublicModelError(f"{folder}: weight {name} has unsupported dtype {dtype!r}")
            count = int(np.prod(shape)) if shape else 1
            size = count * np.dtype(_DTYPES[dtype]).itemsize
            if offset + size > len(payload):
                raise PublicModelError(f"{folder}: the shard ends inside weight {name} (of {len(payload)})")
            values = np.frombuffer(
                payload, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<"), count=count, offset=offset
            )
            weights[name] = values.reshape(shape).astype(_DTYPES[dtype])
            offset += size
        if offset != len(payload):
            raise PublicModelError(f"{folder}: {len(payload) - offset} shard bytes are not in the manifest")
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
        raise PublicModelError(f"layer {layer}: unsupported activation {name!r}")
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
        raise PublicModelError(f"layer {layer}: weight {key} is not in the manifest")
    return torch.from_numpy(np.ascontiguousarray(weights.pop(key), dtype=np.float32))


class _Conv2D(_Layer):
    def __init__(self, name: str, config: dict, weights: dict[str, np.ndarray]) -> None:
        super().__init__(name, config)
        if config.get("data_format", "channels_last") != "channels_last" or int(config.get("groups", 1)) != 1:
            raise PublicModelError(f"layer {name}: only channels-last, ungrouped convolutions are supported")
        self.kernel_size = _pair(config["kernel_size"])
        self.stride = _pair(config.get("strides", 1))
        self.dilation = _pair(config.get("dilation_rate", 1))
        self.padding = config.get("padding", "valid")
        if self.padding not in ("same", "valid"):
            raise PublicModelError(f"layer {name}: unsupported padding {self.padding!r}")
        kernel = _weight(weights, name, "kernel")  # (h, w, in, out)
        self.weight = nn.Parameter(kernel.permute(3, 2, 0, 1).contiguous())
        bias = _weight(weights, name, "bias") if config.get("use_bias", True) else None
        self.bias = None if bias is None else nn.Parameter(bias)
        self.activation = _activation(config.get("activation"), name)

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        if self.padding == "same":
            x = _pad_same(x, self.kernel_size, self.stride, self.dilation)
        return self.activation(F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation))


class _Dense(_Layer):
    def __init__(self, name: str, config: dict, weights: dict[str, np.ndarray]) -> None:
        super().__init__(name, config)
        self.weight = nn.Parameter(_weight(weights, name, "kernel").T.contiguous())
        bias = _weight(weights, name, "bias") if config.get("use_bias", True) else None
        self.bias = None if bias is None else nn.Parameter(bias)
        self.activation = _activation(config.get("activation"), name)

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        if inputs[0].dim() != 2:
            raise PublicModelError(f"layer {self.layer_name}: Dense needs a flat input ({inputs[0].dim()}-d)")
        return self.activation(F.linear(inputs[0], self.weight, self.bias))


class _BatchNorm(_Layer):
    def __init__(self, name: str, config: dict, weights: dict[str, np.ndarray]) -> None:
        super().__init__(name, config)
        axis = config.get("axis", -1)
        axis = axis[0] if isinstance(axis, list) and len(axis) == 1 else axis
        if axis not in (-1, 3):
            raise PublicModelError(f"layer {name}: batch normalization over axis {axis} is not supported")
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
            raise PublicModelError(f"layer {name}: only channels-last pooling is supported")
        self.kind = kind
        self.pool = _pair(config.get("pool_size", 2))
        self.stride = _pair(config.get("strides") or self.pool)
        self.padding = config.get("padding", "valid")
        if self.padding not in ("same", "valid") or (self.padding == "same" and kind == "average"):
            raise PublicModelError(f"layer {name}: unsupported {kind} pooling padding {self.padding!r}")

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
        raise PublicModelError(f"layer {name}: only a plain ReLU is supported")
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
            raise PublicModelError(f"layer {name}: only channels-last {class_name} is supported")
        return _Function(name, config, functions[class_name])
    raise PublicModelError(f"layer {name}: unsupported layer type {class_name}")


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
            raise PublicModelError(f"unsupported model topology {kind!r} (expected Sequential or Functional)")
        weights = dict(weights)
        self.layers = nn.ModuleDict()
        self.nodes: list[_Node] = []
        previous: str | None = None
        for layer in layers:
            class_name, layer_config = layer["class_name"], layer["config"]
            name = layer_config.get("name") or layer.get("name")
            if not name or name in self.layers:
                raise PublicModelError(f"layer names must be present and unique (got {name!r})")
            self.layers[name] = _build_layer(class_name, name, layer_config, weights)
            if kind == "Sequential":
                inputs = [previous] if previous else []
            else:
                inputs = _inbound_names(layer)
            self.nodes.append(_Node(name, inputs))
            previous = name
        if weights:
            raise PublicModelError(f"weights not used by any layer: {', '.join(sorted(weights))}")
        if kind == "Sequential":
            self.input_names, self.output_name = [], previous
        else:
            self.input_names = [entry[0] for entry in config.get("input_layers", [])]
            outputs = config.get("output_layers", [])
            if len(self.input_names) != 1 or len(outputs) != 1:
                raise PublicModelError("only models with one input and one output are supported")
            self.output_name = outputs[0][0]
        known = {node.name for node in self.nodes}
        computed: set[str] = set()
        for node in self.nodes:
            missing = [name for name in node.inputs if name not in known]
            if missing:
                raise PublicModelError(f"layer {node.name} reads unknown layers: {', '.join(missing)}")
            later = [name for name in node.inputs if name not in computed]
            if later:
                raise PublicModelError(f"layer {node.name} reads layers listed after it: {', '.join(later)}")
            computed.add(node.name)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """The model's output for channels-last images ``(n, h, w, c)`` or ``(n, h, w)``."""
        x = images.float()
        if x.dim() not in (3, 4):
            raise PublicModelError(f"expected (n, h, w) or (n, h, w, c) images, got shape {tuple(x.shape)}")
        return self.forward_nchw(x.unsqueeze(1) if x.dim() == 3 else x.permute(0, 3, 1, 2))

    def forward_nchw(self, x: torch.Tensor) -> torch.Tensor:
        """The model's output for ``(n, c, h, w)`` images (what our networks read)."""
        values: dict[str, torch.Tensor] = {}
        for index, node in enumerate(self.nodes):
            if node.inputs:
                inputs = [values[name] for name in node.inputs]
            elif index == 0 or node.name in self.input_names:
                inputs = [x]
            else:
                raise PublicModelError(f"layer {node.name} has no input")
            values[node.name] = self.layers[node.name](inputs)
        return values[self.output_name]


def _inbound_names(layer: dict) -> list[str]:
    """The names of the layers a Functional layer reads (Keras 2 ``inbound_nodes`` format)."""
    nodes = layer.get("inbound_nodes", [])
    if not nodes:
        return []
    if len(nodes) != 1:
        raise PublicModelError(f"layer {layer['config'].get('name')}: shared layers are not supported")
    names = []
    for entry in nodes[0]:
        if not isinstance(entry, list) or not entry or not isinstance(entry[0], str):
            raise PublicModelError(f"layer {layer['config'].get('name')}: unreadable inbound_nodes {entry!r}")
        names.append(entry[0])
    return names


def read_layers_model(folder: Path | str) -> LayersNetwork:
    """Read a TensorFlow.js layers model folder (``model.json`` + shards) as an eval-mode torch module."""
    folder = Path(folder)
    try:
        description = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PublicModelError(f"cannot read {folder / 'model.json'}: {error}") from error
    if description.get("format", "layers-model") != "layers-model" or "modelTopology" not in description:
        raise PublicModelError(f"{folder / 'model.json'} is not a TensorFlow.js layers model")
    try:
        weights = read_weights(folder, description["weightsManifest"])
        network = LayersNetwork(description["modelTopology"], weights)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise PublicModelError(f"{folder / 'model.json'}: malformed model description ({error!r})") from error
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
        raise PublicModelError(f"cannot read the class names of {folder}: {error}") from error
    raise PublicModelError(f"{folder} has no class list ({' or '.join(CLASS_FILES)})")


def class_columns(teacher_classes: Sequence[str], our_classes: Sequence[str]) -> np.ndarray:
    """For each of our classes, the teacher's output column with the same name.

    Raises :class:`PublicModelError` naming every class of ours the teacher lacks, or that two names
    collide once normalized."""
    column_of: dict[str, int] = {}
    for index, name in enumerate(teacher_classes):
        key = normalized_class(name)
        if key in column_of:
            raise PublicModelError(f"the teacher has two classes named {key!r}")
        column_of[key] = index
    ours = [normalized_class(name) for name in our_classes]
    if len(set(ours)) != len(ours):
        raise PublicModelError("our class list has two names that differ only by case, spaces or underscores")
    missing = [name for name, key in zip(our_classes, ours, strict=True) if key not in column_of]
    if missing:
        raise PublicModelError(f"the teacher has no class for {len(missing)} of ours: {', '.join(missing)}")
    return np.array([column_of[key] for key in ours], dtype=np.int64)




def public_folder(name: str) -> Path:
    """The committed folder of public model ``name`` (one of :data:`PUBLIC_MODELS`)."""
    if name not in PUBLIC_MODELS:
        raise PublicModelError(f"unknown public model {name!r}; known: {', '.join(PUBLIC_MODELS)}")
    return PUBLIC_DIR / name


class PublicNetwork(nn.Module):
    """A public model (``source``, its committed weights) as one of our networks: ``(n, 1, 28, 28)``
    renders of :mod:`model.bitmap` in, logits over ``classes`` (our names, in our order) out.

    The output layer's softmax is dropped and its rows are those of ``classes``; everything else is
    the public model's graph, trainable from its own weights (a checkpoint's state dict, loaded
    afterwards, replaces them)."""

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 345,
        source: str = "quickdraw-resnet",
        classes: Sequence[str] = (),
    ) -> None:
        super().__init__()
        if in_channels != 1:
            raise ValueError(f"the public models read one channel, not {in_channels}")
        if len(classes) != num_classes:
            raise ValueError(f"a public network needs its {num_classes} class names (got {len(classes)})")
        folder = public_folder(source)
        self.layers_network = read_layers_model(folder)
        output = self.layers_network.layers[self.layers_network.output_name]
        if not isinstance(output, _Dense):
            raise PublicModelError(f"{source}: the output layer is not a Dense layer")
        columns = torch.from_numpy(class_columns(read_class_names(folder), list(classes)))
        output.weight = nn.Parameter(output.weight.detach()[columns].clone())
        if output.bias is not None:
            output.bias = nn.Parameter(output.bias.detach()[columns].clone())
        output.activation = _ACTIVATIONS["linear"]
        self.layers_network.train()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Class logits for a batch of ``(n, 1, size, size)`` renders."""
        return self.layers_network.forward_nchw(images.float())
