"""The recognizers under evaluation: a :class:`model.Guesser` loaded from a checkpoint, any object with
``labels``/``spec``/``probabilities_from_images``, or a plain function images → probabilities."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from model.checkpoint import fingerprint, make_input_contract
from model.guesser import Views
from model.raster import RasterSpec, rasterize
from model.strokes import simplify_drawing, validate_drawing
from training.eval_settings import EvalError


class Predictor(Protocol):
    """What evaluation needs from a recognizer (a :class:`model.Guesser` qualifies)."""

    labels: list[str]
    spec: RasterSpec

    def probabilities_from_images(self, images: np.ndarray) -> np.ndarray:
        """Probabilities ``(n, classes)`` for rasters ``(n, channels, size, size)``."""
        ...


@dataclass
class ModelUnderTest:
    """A recognizer as evaluation sees it: class labels, raster spec, a predict function, a description."""

    name: str
    labels: list[str]
    spec: RasterSpec
    predict: Callable[[np.ndarray], np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)
    prepare: Callable[[Any], np.ndarray] | None = None
    # a two-view model (raster + stroke-sequence member): rasters and pen paths → probabilities
    predict_views: Callable[[np.ndarray, Sequence[np.ndarray]], np.ndarray] | None = None

    @property
    def reads_sequences(self) -> bool:
        """Whether the model also reads each drawing's pen path (``model.sequence.featurize``)."""
        return self.predict_views is not None

    def __post_init__(self) -> None:
        if len(set(self.labels)) != len(self.labels) or not self.labels:
            raise EvalError(f"model {self.name!r}: class labels are empty or repeated")
        self.index = {label: i for i, label in enumerate(self.labels)}
        self.info.setdefault("name", self.name)
        self.info.setdefault("classes", len(self.labels))
        self.info.setdefault("raster", self.spec.to_dict())
        self.info.setdefault("fingerprint", fingerprint(self.labels, make_input_contract(self.spec)))

    def prepare_one(self, drawing: Any) -> np.ndarray:
        """Validate, simplify and rasterize one drawing (the model's own ``prepare`` when it has one)."""
        if self.prepare is not None:
            return self.prepare(drawing)
        return rasterize(simplify_drawing(validate_drawing(drawing)), self.spec)


def as_model(
    predictor: Predictor | Callable[[np.ndarray], np.ndarray] | ModelUnderTest,
    labels: Sequence[str] | None = None,
    spec: RasterSpec | None = None,
    name: str = "model",
    info: dict[str, Any] | None = None,
) -> ModelUnderTest:
    """Wrap a predictor object, or a function images → probabilities plus ``labels`` and ``spec``."""
    if isinstance(predictor, ModelUnderTest):
        return predictor
    predict_views = None
    if hasattr(predictor, "probabilities_from_images"):
        labels = list(labels if labels is not None else predictor.labels)
        spec = spec or predictor.spec
        predict = predictor.probabilities_from_images
        prepare = getattr(predictor, "prepare", None)
        if getattr(predictor, "member", None) is not None:
            predict_views = _two_view_predict(predictor)
    elif callable(predictor):
        if labels is None or spec is None:
            raise EvalError("a plain predict function needs explicit labels and a raster spec")
        predict, prepare = predictor, None
    else:
        raise EvalError(f"not a predictor: {type(predictor).__name__}")
    return ModelUnderTest(name, list(labels), spec, predict, dict(info or {}), prepare, predict_views)


def _two_view_predict(guesser: Any) -> Callable[[np.ndarray, Sequence[np.ndarray]], np.ndarray]:
    def predict(images: np.ndarray, sequences: Sequence[np.ndarray]) -> np.ndarray:
        views = [Views(image, sequence) for image, sequence in zip(images, sequences, strict=True)]
        return guesser.probabilities_from_views(views)

    return predict


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_model(
    path: Path | str | None = None, name: str | None = None, backend: str | None = None
) -> ModelUnderTest:
    """Load a checkpoint (default: the shipped weights) as a :class:`ModelUnderTest` with its metadata.

    ``backend`` is passed to :meth:`model.Guesser.load` (default: what the service uses, e.g. the
    int8 ONNX copy beside the shipped weights; ``torch`` is the float reference)."""
    from model import DEFAULT_WEIGHTS, Guesser

    path = Path(path) if path is not None else DEFAULT_WEIGHTS
    guesser = Guesser.load(path, backend=backend)  # raises CheckpointError with a clear message
    meta = guesser.metadata
    training = meta.get("training") or {}
    generic = path.stem in {"model", "best", "last", "checkpoint", "final"}
    info = {
        "name": name or (f"{path.parent.name}/{path.stem}" if generic else path.stem),
        "path": str(path),
        "file_sha256": file_sha256(path),
        "file_bytes": path.stat().st_size,
        "architecture": meta.get("architecture"),
        "temperature": guesser.temperature,
        "flip_tta": guesser.flip_tta,
        # a two-view model's pool of its views (``log`` or ``mean``); None for a raster-only model
        "view_pool": guesser.view_pool if guesser.member is not None else None,
        "pair_temperature": guesser.pair_temperature if guesser.member is not None else None,
        "backend": guesser.backend,
        "training_command": training.get("command"),
        "training_data_sha256": training.get("data_sha256"),
        "training_metrics": meta.get("metrics") or {},
    }
    return as_model(guesser, name=info["name"], info=info)
