"""`griffon train`, `griffon teachers …`, `griffon model …`, `griffon data …` and `griffon eval` commands.

The way from data to a shipped model: `griffon train --preset NAME` (every network; presets in
training/presets/), `griffon model calibrate` and `griffon model attach` (each writes a new
checkpoint, never over its input), then `griffon model ship CHECKPOINT` (the Makefile's `train`
target runs the whole chain)."""

from __future__ import annotations

from pathlib import Path

import typer

from training.pack import pack_command

data_app = typer.Typer(help="Quick, Draw! data: download, prepare and pack.", no_args_is_help=True)
data_app.command("pack")(pack_command)
model_app = typer.Typer(
    help="Trained checkpoints: calibrate, attach stroke-sequence members, ship.", no_args_is_help=True
)
# commands whose arguments go as they are to an argparse parser (which answers --help itself)
FORWARDED = {"context_settings": {"allow_extra_args": True, "ignore_unknown_options": True,
                                  "help_option_names": []}, "add_help_option": False}


def register(app: typer.Typer) -> None:
    """Add the training, model, data and evaluation commands to the root `griffon` app."""
    app.command(
        "train", help="Train a network of the recognizer (every setting: `griffon train --help`).",
        **FORWARDED,
    )(train_command)
    app.command(
        "teachers", help="The public teachers: score, metrics, cache their answers (--help).", **FORWARDED,
    )(teachers_command)
    app.add_typer(model_app, name="model")
    app.add_typer(data_app, name="data")
    app.command("eval")(eval_command)


def train_command(ctx: typer.Context) -> None:
    """Forward every argument to ``training.train`` (which lists its settings with --help)."""
    from training.entry import run_command
    from training.train import main

    run_command(lambda: main(list(ctx.args)))


def teachers_command(ctx: typer.Context) -> None:
    """Forward every argument to ``training.teachers.commands``."""
    from training.entry import run_command
    from training.teachers.commands import main

    run_command(lambda: main(list(ctx.args)))


@model_app.command(
    "calibrate", help="Fit or match a softmax temperature; write it into a new checkpoint (--help).",
    **FORWARDED,
)
def calibrate_command(ctx: typer.Context) -> None:
    """Forward every argument to ``training.calibrate``."""
    from training.calibrate import main
    from training.entry import run_command

    run_command(lambda: main(list(ctx.args)))


@model_app.command(
    "attach", help="Write a two-view checkpoint: a raster model and stroke-sequence members (--help).",
    **FORWARDED,
)
def attach_command(ctx: typer.Context) -> None:
    """Forward every argument to ``training.sequence_loop.attach_main``."""
    from training.entry import run_command
    from training.sequence_loop import attach_main

    run_command(lambda: attach_main(list(ctx.args)))


@model_app.command(
    "committee", help="Pool raster networks reading the same raster into one checkpoint (--help).",
    **FORWARDED,
)
def committee_command(ctx: typer.Context) -> None:
    """Forward every argument to ``training.committee.main``."""
    from training.committee import main
    from training.entry import run_command

    run_command(lambda: main(list(ctx.args)))


@model_app.command("ship")
def ship_command(
    source: Path = typer.Argument(..., help="a checkpoint, or a run folder (its two-view.pt, calibrated.pt "
                                  "or model.pt, the first found)"),
    dest: Path = typer.Option(None, help="where the shipped files go (default: model/weights)"),
    data: Path = typer.Option(None, help="Quick, Draw! folder (default: the configured one)"),
    cache: Path = typer.Option(Path("runs/prepared/all"), help="prepared-data cache"),
    check_drawings: int = typer.Option(None, help="held-out drawings the int8 copy is checked on (64)"),
    teachers: Path = typer.Option(None, help="the public teachers' folder (e.g. ../shared/models): "
                                  "measured beside the model in its card"),
) -> None:
    """Ship a checkpoint: write griffon-default.pt, MODEL_CARD.md, the int8 copy and categories.txt
    into --dest, after checking them (nothing changes there when a check fails)."""
    from model import CheckpointError
    from model.guesser import DEFAULT_WEIGHTS
    from training.data import DataError
    from training.ship import CHECK_DRAWINGS, ship
    from training.teachers import TeacherError

    try:
        shipped = ship(source, dest or DEFAULT_WEIGHTS.parent, data, cache, check_drawings or CHECK_DRAWINGS,
                       teachers)
    except (CheckpointError, DataError, TeacherError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from error
    typer.echo(shipped.summary())


@data_app.command("download")
def download_command(
    categories: str = typer.Option(..., help="comma-separated category names, e.g. cat,dog"),
    format: str = typer.Option("simplified", "--format", help="simplified | raw | binary | sketchrnn"),
    data: Path = typer.Option(None, help="data folder (default: the configured one, else ./data/quickdraw)"),
    base_url: str = typer.Option(None, help="bucket address (default: Google's public bucket)"),
) -> None:
    """Download Quick, Draw! files into the data folder (resumable, with a progress bar)."""
    from training.data import download_root
    from training.download import BUCKET_URL, DownloadError, download

    try:
        paths = download(categories.split(","), format, download_root(data), base_url or BUCKET_URL)
    except DownloadError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from error
    for path in paths:
        typer.echo(f"{path}  {path.stat().st_size} bytes")


@data_app.command("prepare")
def prepare_command(
    data: Path = typer.Option(None, help="Quick, Draw! folder (default: the configured one)"),
    out: Path = typer.Option(Path("runs/prepared/all"), help="output folder"),
) -> None:
    """Read a data folder once and write simplified arrays + meta.json (what training reads)."""
    from training.data import DataError, default_data_root
    from training.prepare import prepare

    try:
        prepared = prepare(default_data_root(data), out)
    except DataError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from error
    typer.echo(f"{len(prepared)} drawings → {out} ({prepared.meta['per_split']})")


def eval_command(
    model: Path = typer.Option(None, help="checkpoint to evaluate (default: the shipped weights)"),
    data: Path = typer.Option(None, help="Quick, Draw! folder (default: the configured one)"),
    split: str = typer.Option("val", help="val | dev (where settings are compared) | train | all"),
    compare: Path = typer.Option(None, help="a second checkpoint, evaluated on the same drawings"),
    out: Path = typer.Option(Path("reports/eval"), help="folder for report.json and report.html"),
    workers: int = typer.Option(None, help="preprocessing processes (default: CPU count, at most 8)"),
    batch_size: int = typer.Option(256, help="drawings per inference batch"),
    limit: int = typer.Option(None, help="evaluate a seeded random sample of this many drawings"),
    seed: int = typer.Option(0, help="seed for --limit and the latency sample"),
    latency_samples: int = typer.Option(200, help="drawings timed one at a time (0: none)"),
    skip_unknown: bool = typer.Option(False, help="leave out categories the model does not know"),
    html: bool = typer.Option(True, help="also write report.html"),
    backend: str = typer.Option(
        None, help="inference back-end: auto (default, as served) | onnx-int8 | onnx | torch (the reference)"
    ),
) -> None:
    """Evaluate a model (or compare two) on a Quick, Draw! folder; writes report.json and report.html."""
    from model import CheckpointError
    from training.data import DataError, default_data_root
    from training.eval_data import load_eval_data
    from training.eval_metrics import table_name
    from training.eval_models import load_model
    from training.eval_settings import EvalError, EvalSettings
    from training.evaluate import default_workers, evaluate, write_report

    try:
        settings = EvalSettings(
            batch_size=batch_size,
            workers=default_workers() if workers is None else workers,
            limit=limit,
            seed=seed,
            latency_samples=latency_samples,
        )
        models = [load_model(model, backend=backend)]
        if compare is not None:
            models.append(load_model(compare, backend=backend))
            if models[1].name == models[0].name:
                models[0].name = models[0].info["name"] = f"A: {models[0].name}"
                models[1].name = models[1].info["name"] = f"B: {models[1].name}"
        dataset = load_eval_data(default_data_root(data), split)
        result = evaluate(models, dataset, settings, progress=True, skip_unknown=skip_unknown)
        paths = write_report(result, out, html=html)
    except (CheckpointError, DataError, EvalError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from error
    for entry in result.report["models"]:
        head = entry["metrics"]["headline"]
        table = table_name(head)
        typer.echo(
            f"{entry['name']} ({entry.get('backend')}): top-1 {head['top1']:.3f}  top-3 {head['top3']:.3f}  "
            f"MAP@3 {head['map3']:.3f}  {table} {head[f'{table}_top1']:.3f} "
            f"(exact {head[f'{table}_expected']:.3f})  "
            f"kontour {head['kontour_top1']:.3f}  kontour deck {_fmt(head['kontour_deck_top1'])}  "
            f"pictomania {_fmt(head['pictomania_top1'])}  ECE {head['ece']:.3f}  "
            f"({head['drawings']} drawings)"
        )
    summary = result.report["data"]
    if summary["corrupt_records"] or summary["rejected_drawings"]:
        typer.echo(
            f"data: {summary['corrupt_records']} corrupt records, {summary['rejected_drawings']} rejected "
            "drawings (per file in the report)"
        )
    for path in paths.values():
        typer.echo(f"wrote {path}")


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"
