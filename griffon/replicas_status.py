"""`griffon replicas status`: which replica is up and what each holds, read from the database.

Replicas (service/replicas.py, docs/DEPLOY.md) register in ``griffon_replicas`` while they run and
hold each table and bot room they drive by a lease in ``griffon_leases`` (store/leases.py); this
command reads both, from any host that reaches the database (``GRIFFON_DB_URL``).
"""

from __future__ import annotations

import json
from dataclasses import asdict

import typer

replicas_app = typer.Typer(help="Replicas on one PostgreSQL database (docs/DEPLOY.md).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add `griffon replicas …` to the root app."""
    app.add_typer(replicas_app, name="replicas")


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"


@replicas_app.command("status")
def status_command(
    url: str = typer.Option(None, help="database URL (default: GRIFFON_DB_URL)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Each replica seen in the last day: up or not (seen within twice the lease), its address, the
    tables and bot rooms it holds now; and the tables no live replica holds (waiting for one)."""
    from service.replicas import ReplicaSettings
    from service.settings import SettingsError
    from store import Store, StoreError, StoreSettings, open_store
    from store.leases import status

    try:
        settings = StoreSettings.from_env()
        if url:
            settings = settings.model_copy(update={"database_url": url})
        lease_s = ReplicaSettings.from_env().lease_s
        store = open_store(settings)
        try:
            if not isinstance(store, Store):
                raise StoreError("replicas share a PostgreSQL database: set GRIFFON_DB_URL=postgresql://...")
            replicas, waiting = status(store, lease_s)
        finally:
            store.close()
    except (StoreError, SettingsError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        found = {"replicas": [asdict(r) for r in replicas], "tables_waiting": waiting}
        typer.echo(json.dumps(found, indent=2))
        return
    if not replicas:
        typer.echo("no replica has run on this database in the last day")
    else:
        typer.echo(f"{'replica':<12} {'state':<5} {'address':<22} {'seen':>8} {'started':>8} {'tables':>7} "
                   f"{'bot rooms':>9}  holder")
        for r in replicas:
            typer.echo(f"{r.name:<12} {'up' if r.up else 'down':<5} {r.address:<22} {_ago(r.seen_s):>8} "
                       f"{_ago(r.started_s):>8} {r.games:>7} {r.rooms:>9}  {r.holder}")
    typer.echo(f"tables held by no live replica (taken over within the lease): {waiting}")
