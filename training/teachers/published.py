"""The public teachers as read by our code: their folders, their classes mapped onto ours, their
answers (`Teacher`, `load_teachers`, `geometric_mean`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from model.bitmap import BitmapSpec, render_many
from model.tfjs import (
    PUBLIC_DIR,
    PUBLIC_MODELS,
    LayersNetwork,
    PublicModelError,
    class_columns,
    read_class_names,
    read_layers_model,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS_ENV = "GRIFFON_TEACHERS"
TEACHER_NAMES = PUBLIC_MODELS
OUR_CLASSES = REPO_ROOT / "model" / "weights" / "categories.txt"
EXTRA_DATA = REPO_ROOT.parent / "shared" / "data" / "quickdraw-extra"

TeacherError = PublicModelError  # a teacher folder that is missing, malformed or unsupported


def read_our_classes(path: Path | str = OUR_CLASSES) -> list[str]:
    """Our 345 category names, in the order of the shipped model's outputs."""
    return [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


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
    """The teachers' folder: ``explicit``, else ``$GRIFFON_TEACHERS``, else the committed
    ``model/public/``."""
    if explicit:
        return Path(explicit)
    return Path(os.environ.get(MODELS_ENV) or PUBLIC_DIR)


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


