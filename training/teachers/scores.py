"""The teachers' scores on whole, Kontour-style and half drawings, and their headline metrics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from model.strokes import DrawingError, simplify_drawing, validate_drawing
from training.augment import first_fraction, kontour_style
from training.data import DrawingRecord
from training.teachers.published import Teacher, TeacherError, geometric_mean, teachers_probabilities

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


def labelled_drawings(
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


