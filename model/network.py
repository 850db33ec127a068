"""The CNN architectures, registered by name (a tiny timm-style registry).

Every architecture takes ``(batch, channels, size, size)`` rasters and returns class logits, and is
built from keyword arguments alone, so a checkpoint can store ``(name, kwargs)`` and rebuild it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from model.tfjs import PublicNetwork

REGISTRY: dict[str, Callable[..., nn.Module]] = {}


def register(name: str) -> Callable[[Callable[..., nn.Module]], Callable[..., nn.Module]]:
    """Class decorator adding an architecture to :data:`REGISTRY`."""

    def add(factory: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        REGISTRY[name] = factory
        return factory

    return add


def create_model(name: str, **kwargs: object) -> nn.Module:
    """Build a registered architecture; unknown names raise ``ValueError`` listing the known ones."""
    if name not in REGISTRY:
        raise ValueError(f"unknown architecture {name!r}; known: {sorted(REGISTRY)}")
    return REGISTRY[name](**kwargs)


def _conv_bn(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


@register("plain")
class PlainCNN(nn.Module):
    """VGG-style baseline: two 3×3 convolutions then 2×2 max-pooling per stage."""

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 345,
        widths: tuple[int, ...] = (32, 64, 128),
        dropout: float = 0.3,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = in_channels
        for width in widths:
            layers += [_conv_bn(cin, width), _conv_bn(width, width), nn.MaxPool2d(2)]
            cin = width
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(cin, num_classes)
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Class logits for a batch of rasters."""
        return self.head(self.features(images))


class _Residual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.body(x) + self.skip(x))


@register("resnet")
class SketchResNet(nn.Module):
    """A small ResNet: a stem, then stages of residual blocks that halve the resolution."""

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 345,
        widths: tuple[int, ...] = (32, 64, 128, 256),
        blocks: tuple[int, ...] | None = None,
        dropout: float = 0.3,
    ) -> None:
        super().__init__()
        blocks = tuple(blocks) if blocks is not None else (1,) * len(widths)
        if len(blocks) != len(widths):
            raise ValueError(f"blocks {blocks} must give one count per stage width {widths}")
        self.stem = _conv_bn(in_channels, widths[0])
        stages: list[nn.Module] = []
        cin = widths[0]
        for index, (width, count) in enumerate(zip(widths, blocks, strict=True)):
            for block in range(count):
                stride = 2 if block == 0 and index > 0 else 1
                stages.append(_Residual(cin, width, stride))
                cin = width
        self.stages = nn.Sequential(*stages)
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(cin, num_classes)
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Class logits for a batch of rasters."""
        return self.head(self.stages(self.stem(images)))


register("public")(PublicNetwork)  # a public model's own graph and weights, our class order (model.tfjs)


@register("committee")
class Committee(nn.Module):
    """Several networks reading the same raster, pooled: their normalised geometric mean.

    ``members`` are ``{"name", "kwargs"}`` of registered architectures (each gets ``in_channels`` and
    ``num_classes``); ``temperatures`` divide each member's logits first (1 by default). The output,
    the mean of the members' log-probabilities, is a logit vector whose softmax is the pool."""

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 345,
        members: Sequence[dict] = (),
        temperatures: Sequence[float] | None = None,
    ) -> None:
        super().__init__()
        if not members:
            raise ValueError("a committee needs at least one member")
        if any(member.get("name") == "committee" for member in members):
            raise ValueError("a committee's members cannot be committees")
        self.members = nn.ModuleList(
            create_model(m["name"], in_channels=in_channels, num_classes=num_classes, **m.get("kwargs", {}))
            for m in members
        )
        temperatures = list(temperatures) if temperatures is not None else [1.0] * len(members)
        if len(temperatures) != len(members) or min(temperatures) <= 0:
            raise ValueError("a committee needs one positive temperature per member")
        self.register_buffer(
            "inverse_temperatures", torch.tensor([1.0 / t for t in temperatures]), persistent=False
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """The members' mean log-probabilities (pooled logits) for a batch of rasters."""
        logs = [
            F.log_softmax(member(images).float() * self.inverse_temperatures[index], dim=1)
            for index, member in enumerate(self.members)
        ]
        return torch.stack(logs).mean(dim=0)
