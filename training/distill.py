"""Distillation shared by both training loops (``training.train``'s raster network and
``training.sequence_loop``'s stroke-sequence member): the teachers, their softened answers, the loss."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from model.checkpoint import CheckpointError
from model.guesser import Guesser
from model.raster import RasterSpec
from training.settings import TEACHER_BACKENDS


def load_teachers(
    paths: list[str], classes: list[str], spec: RasterSpec, backend: str = "torch", data: str = ""
) -> list[Guesser]:
    """The teacher checkpoints as Guessers; raises ``CheckpointError`` when one does not share the
    student's class list or raster spec.

    ``backend``: ``torch`` (the float reference) or ``onnx-int8`` (each teacher's int8 copy, about
    6× faster for four teachers; made by :func:`training.export.export_checkpoint`, calibrated on
    the training split of ``data``, when it is missing or was made from other weights)."""
    if backend not in TEACHER_BACKENDS:
        raise ValueError(f"teacher_backend must be one of {', '.join(TEACHER_BACKENDS)}, not {backend!r}")
    checks = {"expected_classes": classes, "expected_raster": spec}
    teachers = []
    for path in paths:
        try:
            teachers.append(Guesser.load(path, backend=backend, **checks))
        except CheckpointError:
            if backend == "torch":
                raise
            Guesser.load(path, backend="torch", **checks)  # a bad checkpoint raises here, as in float
            from training.export import export_checkpoint

            export_checkpoint(Path(path), Path(data) if data else None)  # missing or stale int8 copy
            teachers.append(Guesser.load(path, backend=backend, **checks))
    return teachers


def teacher_targets(
    teachers: Sequence[Guesser],
    images: torch.Tensor | None,
    temperature: float,
    sequence_teachers: Sequence[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = (),
    sequences: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """The teachers' averaged probabilities for ``images``, softened by ``temperature``; the
    stroke-sequence teachers read the same views as ``sequences`` (padded, lengths) and count as
    one teacher each (``images`` may be ``None`` when there are only those).

    A Guesser returns ``softmax(z / T)`` (its own temperature ``T``, flip TTA included), so
    ``softmax(T · log p / τ) = softmax(z / τ)``.
    """
    if teachers and images is None:
        raise ValueError("raster teachers need the views' images")
    if sequence_teachers and sequences is None:
        raise ValueError("stroke-sequence teachers need the views' sequences")
    answers = []
    batch = images.detach().float().cpu().numpy() if teachers and images is not None else None
    for teacher in teachers:
        probs = np.maximum(teacher.probabilities_from_images(batch), np.finfo(np.float32).tiny)
        answers.append(torch.softmax(torch.from_numpy(teacher.temperature * np.log(probs)) / temperature, 1))
    with torch.no_grad():  # targets, not inference tensors: the loss keeps them for its gradient
        answers += [torch.softmax(t(*sequences).float() / temperature, 1) for t in sequence_teachers]
    device = images.device if images is not None else sequences[0].device  # type: ignore[index]
    return torch.stack(answers).mean(0).to(device)


def distillation_loss(
    student_logits: torch.Tensor, targets: torch.Tensor, temperature: float
) -> torch.Tensor:
    """``τ² · KL(targets ‖ softmax(student / τ))``, averaged over the batch (Hinton et al., 2015)."""
    log_student = torch.log_softmax(student_logits.float() / temperature, dim=1)
    return nn.functional.kl_div(log_student, targets, reduction="batchmean") * temperature**2
