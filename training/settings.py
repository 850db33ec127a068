"""The settings of ``griffon train``: one dataclass per network, one way to set them.

Settings come from the dataclass defaults, then a preset file (``training/presets/<name>.yaml``),
then command-line flags. ``network`` (a preset key or ``--network``) picks the network and so the
dataclass: ``raster`` (:class:`TrainConfig`, the CNN of ``training.train``; the default) or
``sequence`` (:class:`SequenceConfig`, the stroke-sequence member of ``training.sequence_loop``). A
setting that the chosen network does not have is refused, naming the network.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import shlex
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ClassVar

import yaml

from model.raster import RasterSpec
from training.augment import AugmentConfig

PRESETS_DIR = Path(__file__).resolve().parent / "presets"
TEACHER_BACKENDS = ("torch", "onnx-int8")


@dataclass
class TrainConfig:
    """Every setting of the raster network's training (each one is a ``--flag`` of the command line),
    and the command line itself (``command``, recorded by :func:`parse_config`)."""

    NETWORK: ClassVar[str] = "raster"

    data: str = ""  # Quick, Draw! folder; empty = the configured one (training.data.default_data_root)
    out: str = "runs/latest"  # where the checkpoint, model card and metrics go
    cache: str = "runs/prepared"  # prepared-data cache
    holdout: str = "val"  # what to leave out and report on: "val" (shipped) or "dev" (experiments)
    categories: str = ""  # comma-separated subset of classes (empty = all)
    architecture: str = "resnet"  # resnet | plain | public (a public model's own graph and weights)
    public: str = "quickdraw-resnet"  # with architecture public: which one (model/public/)
    style: str = "fit"  # raster style: fit (size, line_width, channels) | bitmap (the public models' render)
    widths: str = "32,64,128,256"
    blocks: str = "1,1,1,1"
    dropout: float = 0.3
    size: int = 48
    line_width: float = 1.6
    channels: str = "ink,order"
    epochs: int = 40
    per_class: int = 32  # drawings per class and epoch (class-balanced sampling)
    batch_size: int = 128
    lr: float = 3e-3
    weight_decay: float = 0.05
    label_smoothing: float = 0.1
    warmup_epochs: float = 1.0
    workers: int = 1
    threads: int = 0  # torch intra-op threads per process (0 = leave torch's default)
    bf16: str = "auto"  # bf16 autocast on CPUs that support it: auto | on | off
    flip_tta: bool = False  # average with the mirrored image at inference
    seed: int = 0
    ema: float = 0.0  # decay of an exponential moving average of the weights, saved instead (0 = off)
    teacher: list[str] = field(default_factory=list)  # checkpoints to distil from (empty = no distillation)
    teacher_backend: str = "torch"  # the teachers' back-end: torch (float reference) or onnx-int8 (faster)
    sequence_teacher: list[str] = field(default_factory=list)  # stroke-sequence members to distil from
    teacher_cache: str = ""  # the teachers' cached answers (training.teachers cache): distil from them
    cache_teachers: str = ""  # which cached teachers the targets pool, e.g. quickdraw-resnet (empty = all)
    stroke_mix: float = 0.0  # chance a view adds another drawing's first strokes (--teacher-cache)
    init: str = ""  # a checkpoint whose weights start the run (same classes, raster, architecture)
    distill_temperature: float = 2.0  # softens teacher and student distributions in the distillation loss
    distill_weight: float = 0.7  # share of the distillation loss (the rest: cross-entropy on the labels)
    mixup: float = 0.0  # α of Beta(α, α): mix pairs of images and their targets (0 = off)
    rotation_labels: bool = False  # joint class × rotation (0/90/180/270°) targets; upright rows shipped
    icons: str = ""  # outline icon sets added as training drawings, e.g. "lucide,tabler" (training/icons.py)
    eval_every: int = 10  # epochs between evaluations (0 = only at the end)
    max_minutes: float = 0.0  # time budget: the LR schedule anneals by time and training stops (0 = off)
    half_weights: bool = True  # store float16 weights (half the file size)
    augment: dict = field(default_factory=lambda: AugmentConfig().to_dict())
    command: str = ""  # the command line that made the run (recorded by parse_config; not a flag)

    def raster_spec(self) -> RasterSpec:
        """The raster spec of this run (the checkpoint's input contract)."""
        if self.style == "bitmap":
            return RasterSpec.bitmap()
        channels = tuple(c for c in self.channels.split(",") if c)
        return RasterSpec(size=self.size, line_width=self.line_width, channels=channels)

    def architecture_kwargs(self) -> dict:
        """Keyword arguments for :func:`model.network.create_model` (besides channels and classes)."""
        if self.architecture == "public":
            return {"source": self.public}
        kwargs: dict = {"widths": [int(w) for w in self.widths.split(",")], "dropout": self.dropout}
        if self.architecture == "resnet":
            kwargs["blocks"] = [int(b) for b in self.blocks.split(",")]
        return kwargs


@dataclass
class SequenceConfig:
    """Every setting of a stroke-sequence member's training (``network: sequence``): it trains on the
    training split (validation held out) and writes ``sequence.pt`` and ``metrics.json`` to ``out``."""

    NETWORK: ClassVar[str] = "sequence"

    data: str = ""  # Quick, Draw! folder; empty = the configured one (training.data.default_data_root)
    out: str = "runs/sequence"  # where sequence.pt and metrics.json go
    cache: str = "runs/prepared"  # prepared-data cache (shared with the raster runs)
    categories: str = ""  # comma-separated subset of classes (empty = all)
    compare: str = ""  # a raster-only checkpoint: report it alone and pooled with the member
    split: str = "val"  # where --compare reports: "val" or "dev"
    width: int = 128  # channels of the 1-D convolutions (8-512)
    hidden: int = 128  # GRU hidden size, each direction (8-512)
    epochs: int = 200
    max_minutes: float = 40.0  # time budget: the LR schedule anneals by time and training stops (0 = off)
    per_class: int = 32  # drawings per class and epoch (class-balanced sampling)
    batch_size: int = 128
    lr: float = 3e-3
    weight_decay: float = 0.05
    label_smoothing: float = 0.1
    workers: int = 1
    threads: int = 2  # torch intra-op threads
    seed: int = 0
    teacher: list[str] = field(default_factory=list)  # raster checkpoints to distil from
    sequence_teacher: list[str] = field(default_factory=list)  # stroke-sequence members to distil from
    teacher_backend: str = "onnx-int8"  # raster teachers' int8 copies and members on ONNX Runtime, or torch
    distill_temperature: float = 2.0  # softens teacher and member distributions in the distillation loss
    distill_weight: float = 0.7  # share of the distillation loss (the rest: cross-entropy on the labels)
    teacher_cache: str = ""  # the public teachers' cached answers (training.taught); replaces the teachers
    augment: dict = field(default_factory=dict)  # overrides of training.augment.AugmentConfig's defaults
    command: str = ""  # the command line that made the run (recorded by parse_config; not a flag)


CONFIGS: dict[str, type[TrainConfig] | type[SequenceConfig]] = {
    config.NETWORK: config for config in (TrainConfig, SequenceConfig)
}
NETWORKS = tuple(CONFIGS)
Config = TrainConfig | SequenceConfig


def _defaults(config: type) -> dict[str, object]:
    instance = config()
    return {item.name: getattr(instance, item.name) for item in fields(config) if item.name != "command"}


def _comments(config: type) -> dict[str, str]:
    """The comment after each field of a settings dataclass (its description in ``--help``)."""
    found = {}
    for line in inspect.getsource(config).splitlines():
        match = re.match(r"\s+(\w+): [^#]+#\s*(.+)$", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _help(name: str, defaults: dict[str, dict[str, object]], comments: dict[str, dict[str, str]]) -> str:
    """What the setting is, then ``default X`` when every network that has it shares its default,
    else one default per network (and which networks have it)."""
    having = {network: values[name] for network, values in defaults.items() if name in values}
    said = [comments[network][name] for network in having if name in comments[network]]
    described = f"{said[0]}; " if said else ""
    if name == "augment":
        keys = ", ".join(f"{k}={v}" for k, v in AugmentConfig().to_dict().items())
        example = '{"order_dropout_p": 0.3}'
        only = "" if len(having) == len(defaults) else f" ({', '.join(having)} only)"
        return f"JSON overrides of the augmentation{only}, e.g. '{example}'; defaults: {keys}"
    values = list(having.values())
    if len(having) == len(defaults) and all(v == values[0] for v in values):
        return f"{described}default {values[0]!r}"
    return described + "; ".join(f"{network}: default {value!r}" for network, value in having.items())


def build_parser() -> argparse.ArgumentParser:
    """The ``griffon train`` parser: every setting of every network (no defaults: unset flags are
    ``None``, so the preset and the dataclass decide)."""
    parser = argparse.ArgumentParser(
        prog="griffon train",
        description="Train a network of the recognizer: the raster CNN or a stroke-sequence member.",
        epilog="Settings: the network's defaults, then the preset, then these flags.",
    )
    names = ", ".join(sorted(path.stem for path in PRESETS_DIR.glob("*.yaml")))
    parser.add_argument("--preset", default="", help=f"a preset of training/presets ({names}) or a YAML path")
    parser.add_argument(
        "--network", choices=NETWORKS, default=None,
        help="which network to train (default: the preset's `network`, else raster)",
    )
    defaults = {network: _defaults(config) for network, config in CONFIGS.items()}
    comments = {network: _comments(config) for network, config in CONFIGS.items()}
    types = {item.name: item.type for config in CONFIGS.values() for item in fields(config)}
    seen: list[str] = []
    for values in defaults.values():
        seen += [name for name in values if name not in seen]
    for name in seen:
        flag = f"--{name.replace('_', '-')}"
        help_text = _help(name, defaults, comments)
        if name == "augment":
            parser.add_argument(flag, type=json.loads, metavar="JSON", help=help_text)
        elif name in ("teacher", "sequence_teacher"):
            parser.add_argument(flag, nargs="+", metavar="PATH", help=help_text)
        elif types[name] in ("bool", bool):
            parser.add_argument(flag, type=_bool, help=help_text)
        else:
            kind = {"str": str, "int": int, "float": float}.get(str(types[name]), str)
            parser.add_argument(flag, type=kind, help=help_text)
    return parser


def parse_config(argv: list[str] | None = None) -> Config:
    """Defaults ← preset file ← flags, for the network the flags or the preset name."""
    parser = build_parser()
    args = parser.parse_args(argv)
    preset: dict = {}
    if args.preset:
        path = Path(args.preset)
        path = path if path.suffix else PRESETS_DIR / f"{args.preset}.yaml"
        if not path.is_file():
            parser.error(f"no preset {args.preset!r} (looked for {path})")
        try:
            preset = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as error:
            parser.error(f"preset {path} is not valid YAML: {error}")
        if not isinstance(preset, dict):
            parser.error(f"preset {path} is not a mapping of settings")
        preset = dict(preset)
    network = args.network or preset.pop("network", "raster")
    preset.pop("network", None)
    if network not in CONFIGS:
        parser.error(f"unknown network {network!r} (expected one of {', '.join(NETWORKS)})")
    config = CONFIGS[network]()
    for key, value in preset.items():
        _set(config, key, value, parser)
    for key, value in vars(args).items():
        if key not in ("preset", "network") and value is not None:
            _set(config, key, value, parser)
    config.command = "griffon train " + shlex.join(sys.argv[1:] if argv is None else argv)
    return config


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {text}")


def _set(config: Config, key: str, value: object, parser: argparse.ArgumentParser) -> None:
    known = {item.name for item in fields(config)} - {"command"}
    if key not in known:
        others = [n for n, c in CONFIGS.items() if n != config.NETWORK and key in {f.name for f in fields(c)}]
        where = f" (a setting of the {' and '.join(others)} network)" if others else ""
        parser.error(f"the {config.NETWORK} network has no setting {key!r}{where}")
    if key == "augment":
        if not isinstance(value, dict):
            parser.error(f"augment must be a mapping of augmentation settings, not {value!r}")
        value = {**config.augment, **value}
        try:
            AugmentConfig(**value)  # validate names
        except TypeError as error:
            parser.error(f"augment: {error}")
    setattr(config, key, value)
