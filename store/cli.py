"""`griffon db …` (where the database is, its size, retention, vacuum, export) and `griffon data export`.

Every command reads the same settings as the server (``GRIFFON_DATABASE_URL``, ``GRIFFON_DATA_DIR``,
``GRIFFON_RETAIN_*``; see `store.settings`); ``--url`` overrides the database for one command.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path

import typer

from store.base import Store, StoreError
from store.settings import CLI_TIMEOUT_MS, StoreSettings, open_store

db_app = typer.Typer(help="The database: games, bot transcripts, consented drawings.", no_args_is_help=True)
URL = typer.Option(
    None, "--url", help="database URL (default: $GRIFFON_DATABASE_URL, else $GRIFFON_DATA_DIR/griffon.db)"
)


def register(app: typer.Typer) -> None:
    """Add `griffon db …` to the root app, and `export` to its `data` group when there is one."""
    app.add_typer(db_app, name="db")
    for group in app.registered_groups:
        if group.name == "data" and group.typer_instance is not None:
            group.typer_instance.command("export", help="Export consented drawings (= griffon db export).")(
                export_command
            )


@contextmanager
def _opened(url: str | None) -> Iterator[Store]:
    try:
        settings = StoreSettings.from_env().model_copy(update={"db_timeout_ms": CLI_TIMEOUT_MS})
        if url:
            settings = settings.model_copy(update={"database_url": url})
        with open_store(settings) as store:
            yield store
    except StoreError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None


def human_bytes(n: float) -> str:
    """``1536`` → ``1.5 KiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


@db_app.command("info")
def info_command(url: str = URL, as_json: bool = typer.Option(False, "--json", help="JSON output")) -> None:
    """Where the database is, its size, schema version, record counts and retention."""
    with _opened(url) as store:
        info = store.info()
        words = store.drawing_counts()
    retention = asdict(StoreSettings.from_env().retention)
    if as_json:
        typer.echo(json.dumps({**asdict(info), "retention": retention, "drawings_per_word": words}, indent=2))
        return
    counts = info.counts
    typer.echo(f"database   {info.backend}: {info.location}")
    typer.echo(f"size       {human_bytes(info.size_bytes)} ({info.size_bytes} bytes)")
    typer.echo(f"schema     version {info.schema_version}")
    playing, moves = counts["games_playing"], counts["moves"]
    typer.echo(f"games      {counts['games']} ({playing} in progress), {moves} moves")
    typer.echo(f"transcripts {counts['transcripts']} (bot sessions)")
    typer.echo(f"drawings   {counts['drawings']} in {len(words)} categories (consented)")
    typer.echo("retention  " + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                         for k, v in retention.items()))


@db_app.command("prune")
def prune_command(
    url: str = URL,
    games_days: float = typer.Option(None, help="delete games untouched for this many days (0 = never)"),
    transcripts_days: float = typer.Option(None, help="delete transcripts older than this (0 = never)"),
    transcripts_max: int = typer.Option(None, help="keep at most this many transcripts"),
    drawings_days: float = typer.Option(None, help="delete drawings older than this (0 = never)"),
) -> None:
    """Apply the retention rules now (defaults: the GRIFFON_RETAIN_* settings)."""
    keep = StoreSettings.from_env().retention
    overrides = {"games_days": games_days, "transcripts_days": transcripts_days,
                 "transcripts_max": transcripts_max, "drawings_days": drawings_days}
    keep = replace(keep, **{k: v for k, v in overrides.items() if v is not None})
    with _opened(url) as store:
        report = store.prune(keep)
    typer.echo(f"deleted {report.games} games ({report.moves} moves), {report.transcripts} transcripts, "
               f"{report.drawings} drawings")


@db_app.command("vacuum")
def vacuum_command(url: str = URL) -> None:
    """Give the space of deleted records back to the disk."""
    with _opened(url) as store:
        before = store.info().size_bytes
        store.vacuum()
        after = store.info().size_bytes
    typer.echo(f"{human_bytes(before)} → {human_bytes(after)}")


@db_app.command("export")
def export_command(
    out: Path = typer.Option(..., "--out", help="folder to write (full/raw/<word>.ndjson)"),
    mix: Path = typer.Option(None, "--mix", help="a Quick, Draw! folder to add the played drawings to"),
    include_rooms: bool = typer.Option(
        False, "--include-rooms", help="also the drawings rooms gave (unchecked clients: look at them first)"
    ),
    url: str = URL,
) -> None:
    """Write the consented drawings in the Quick, Draw! raw layout (for `griffon train --data OUT`)."""
    from store.export import export_quickdraw

    with _opened(url) as store:
        try:
            report = export_quickdraw(store, out, mix, include_rooms)
        except StoreError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"{report.drawings} drawings in {len(report.words)} categories → {out}/full/raw"
               + (f" (with {mix}: {report.linked_files} files linked)" if mix else ""))
    if report.skipped_room_drawings:
        rooms = report.skipped_room_drawings
        typer.echo(f"{rooms} drawings given by rooms left out (--include-rooms to add them)")
    if report.skipped_unknown_words:
        left = report.skipped_unknown_words
        typer.echo(f"{left} drawings left out: their word is not in {mix}/categories.txt")
