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
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from model.bitmap import BitmapSpec, render_many
from model.strokes import DrawingError, simplify_drawing, validate_drawing
from model.tfjs import (
    PUBLIC_DIR,
    PUBLIC_MODELS,
    LayersNetwork,
    PublicModelError,
    class_columns,
    read_class_names,
    read_layers_model,
)
from training.augment import first_fraction, kontour_style
from training.data import DataError, DrawingRecord, default_data_root, load_dataset

REPO_ROOT = Path(__file__).resolve().parent.parent
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

    def committee(self, names: Sequence[str] = (), floor: float = 1e-8) -> np.ndarray:
        """The normalized geometric mean of the cached teachers ``names`` (default: every one),
        ``(n, classes)``; raises :class:`TeacherError` for a teacher the cache does not hold."""
        unknown = [name for name in names if name not in self.probabilities]
        if unknown:
            raise TeacherError(f"the cache holds no teacher {unknown[0]!r} ({', '.join(self.probabilities)})")
        chosen = [self.probabilities[name] for name in (names or self.probabilities)]
        return geometric_mean(chosen, floor)


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


def extra_folder(setting: str) -> Path | None:
    """The extra drawings' folder ``--extra`` names: ``none``, a folder (which must exist), or ``auto``
    (the default): ``../shared/data/quickdraw-extra`` when it is there, else none (a fresh clone)."""
    if setting.lower() == "none":
        return None
    if setting.lower() == "auto":
        if EXTRA_DATA.is_dir():
            return EXTRA_DATA
        print(f"no extra drawings: {EXTRA_DATA} is not a folder here (--extra DIR names one)")
        return None
    return Path(setting)


def cache_command(args: argparse.Namespace) -> None:
    """Compute and store the teachers' answers on every training drawing (and the extra folder's)."""
    started = time.perf_counter()
    teachers = load_teachers(args.models)
    classes = teachers[0].classes
    records = load_dataset(args.data, "train")
    extra_root = extra_folder(args.extra)
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
        "--extra", default="auto",
        help="extra training drawings (a Quick, Draw! folder), none, or auto (the shared one if there)",
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
