"""`griffon train`, `griffon data …` and `griffon eval` commands."""

from __future__ import annotations

from pathlib import Path

import typer

data_app = typer.Typer(help="Quick, Draw! data: download and prepare.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add the training and data commands to the root `griffon` app."""
    app.command(
        "train",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
        help="Train the recognizer (all options: `griffon train --help`).",
        add_help_option=False,
    )(train_command)
    app.add_typer(data_app, name="data")


def train_command(ctx: typer.Context) -> None:
    """Forward every argument to ``training.train`` (which lists its settings with --help)."""
    from training.train import main

    main(list(ctx.args))


@data_app.command("download")
def download_command(
    categories: str = typer.Option(..., help="comma-separated category names, e.g. cat,dog"),
    format: str = typer.Option("simplified", "--format", help="simplified | raw | binary | sketchrnn"),
    data: Path = typer.Option(None, help="data folder (default: $GRIFFON_DATA or ./data/quickdraw)"),
    base_url: str = typer.Option(None, help="bucket address (default: Google's public bucket)"),
) -> None:
    """Download Quick, Draw! files into the data folder (resumable, with a progress bar)."""
    import os

    from training.download import BUCKET_URL, DownloadError, download

    dest = data or Path(os.environ.get("GRIFFON_DATA", "data/quickdraw"))
    try:
        paths = download(categories.split(","), format, dest, base_url or BUCKET_URL)
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
        prepared = prepare(data or default_data_root(), out)
    except DataError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from error
    typer.echo(f"{len(prepared)} drawings → {out} ({prepared.meta['per_split']})")
