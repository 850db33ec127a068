"""``griffon teachers {score,metrics,cache}`` (also ``python -m training.teachers``)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from training.data import DataError, default_data_root, load_dataset
from training.teachers.answers import write_cache
from training.teachers.published import (
    EXTRA_DATA,
    MODELS_ENV,
    TeacherError,
    default_models_root,
    geometric_mean,
    load_teachers,
    teachers_probabilities,
)
from training.teachers.scores import METRIC_COLUMNS, VIEWS, labelled_drawings, teacher_metrics, view_of

DESCRIPTION = "The public teachers: their scores, their headline metrics, the cache of their answers."


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
        _, drawings, labels, _ = labelled_drawings(records, classes)
        for view in args.views.split(","):
            shown = [view_of(strokes, view) for strokes in drawings]
            answers = teachers_probabilities(teachers, shown, args.batch_size, simplified=view == "whole")
            answers.append(geometric_mean(answers))
            scores = [f"{100 * float((a.argmax(axis=1) == labels).mean()):.1f}" for a in answers]
            label = f"{split} (recognized)" if args.recognized else split
            print(f"| {label} | {view} | {len(labels)} | {' | '.join(scores)} |", flush=True)



def metrics_command(args: argparse.Namespace) -> None:
    """Print each teacher's (and their geometric mean's) headline metrics on a split, as a table."""
    teachers = load_teachers(args.models)
    records = load_dataset(args.data, args.split)
    _, drawings, labels, _ = labelled_drawings(records, teachers[0].classes)
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
    keys, drawings, labels, refused = labelled_drawings(records + extra_records, classes)
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
    """``griffon teachers {score,metrics,cache} …`` (``python -m training.teachers`` too)."""
    parser = argparse.ArgumentParser(prog="griffon teachers", description=DESCRIPTION)
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


