"""`griffon db …` (where the database is, its size, retention, vacuum, export), `griffon data export`
and `griffon keys …` (the API keys of bot rooms: create, list, revoke).

Every command reads the same settings as the server (``GRIFFON_DB_URL``, ``GRIFFON_DB_DIR``,
``GRIFFON_RETAIN_*``; see `store.settings`); ``--url`` overrides the database for one command.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path

import typer

from store.database import Store
from store.errors import StoreError
from store.records import BotKey
from store.settings import CLI_TIMEOUT_MS, StoreSettings, open_store
from store.tokens import hash_token, new_key_secret

db_app = typer.Typer(help="The database: games, bot transcripts, consented drawings.", no_args_is_help=True)
URL = typer.Option(
    None, "--url", help="database URL (default: $GRIFFON_DB_URL, else $GRIFFON_DB_DIR/griffon.db)"
)


keys_app = typer.Typer(
    help="API keys of bot rooms (WS /v1/bot): required when GRIFFON_BOT_KEYS_REQUIRED=true.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add `griffon db …` and `griffon keys …` to the root app, and `export` to its `data` group
    when there is one."""
    app.add_typer(db_app, name="db")
    app.add_typer(keys_app, name="keys")
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
        keys = store.list_bot_keys()
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
    typer.echo(f"bot keys   {len(keys)} ({sum(k.revoked for k in keys)} revoked)")
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
    from store.drawings_export import export_quickdraw

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


def _when(seconds: float | None) -> str:
    import datetime

    if seconds is None:
        return "-"
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _key_json(key: BotKey) -> dict[str, object]:
    return {"id": key.id, "name": key.name, "max_rooms": key.max_rooms,
            "strokes_per_minute": key.strokes_per_minute, "created_at": key.created_at,
            "revoked_at": key.revoked_at, "last_used_at": key.last_used_at}


@keys_app.command("create")
def keys_create_command(
    name: str = typer.Option(..., "--name", help="what the key is for (labels its metrics; never reused)"),
    rooms: int = typer.Option(10, "--rooms", help="rooms the key may hold open at once (0: no limit)"),
    strokes_per_minute: int = typer.Option(
        600, "--strokes-per-minute", help="strokes its rooms may send per minute, together (0: no limit)"
    ),
    url: str = URL,
) -> None:
    """Create a key and print its secret, once: only its SHA-256 is kept."""
    secret = new_key_secret()
    with _opened(url) as store:
        try:
            key = store.create_bot_key(name, hash_token(secret), rooms, strokes_per_minute)
        except StoreError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(1) from None
    limits = (f"rooms at once {key.max_rooms or 'unlimited'}, "
              f"strokes per minute {key.strokes_per_minute or 'unlimited'}")
    typer.echo(f"key {key.name} (id {key.id}): {limits}", err=True)
    typer.echo("the secret below is shown only this once; give it to the room (hello.key, or the "
               "header 'Authorization: Bearer ...'):", err=True)
    typer.echo(secret)


@keys_app.command("list")
def keys_list_command(
    url: str = URL, as_json: bool = typer.Option(False, "--json", help="JSON output")
) -> None:
    """Every key: name, id, quotas, when created, last used and revoked (never a secret)."""
    with _opened(url) as store:
        keys = store.list_bot_keys()
    if as_json:
        typer.echo(json.dumps([_key_json(k) for k in keys], indent=2))
        return
    if not keys:
        typer.echo("no keys (griffon keys create --name NAME)")
        return
    typer.echo(f"{'name':<24} {'id':<12} {'rooms':>6} {'strokes/min':>11}  {'created':<20}  "
               f"{'last used':<20}  revoked")
    for k in keys:
        typer.echo(f"{k.name:<24} {k.id:<12} {k.max_rooms or '-':>6} {k.strokes_per_minute or '-':>11}  "
                   f"{_when(k.created_at):<20}  {_when(k.last_used_at):<20}  {_when(k.revoked_at)}")


@keys_app.command("revoke")
def keys_revoke_command(
    key: str = typer.Argument(..., help="the key's name or id"), url: str = URL
) -> None:
    """Revoke a key: its rooms are refused from now on, and the open ones closed within
    5 seconds (``bot.keys_refresh_s``; every server sharing the database)."""
    with _opened(url) as store:
        try:
            found = store.revoke_bot_key(key)
        except StoreError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"key {found.name} (id {found.id}) revoked at {_when(found.revoked_at)}")
