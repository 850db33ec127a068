"""The `griffon` command line: one entry point that gathers each package's commands.

Each package owns its commands and exposes ``register(app)``; this module only assembles them
(heavy imports stay inside the command functions, so ``griffon --help`` answers at once).
"""

from __future__ import annotations

import typer

import store.cli
import training.cli
import vocab.cli
from griffon import replicas_status, serve, simulate

app = typer.Typer(
    help="Griffon: an AI player for the drawing games Kontour and Pictomania.",
    no_args_is_help=True,
    add_completion=False,
)

for _module in (training.cli, vocab.cli, simulate, serve, replicas_status, store.cli):
    _module.register(app)


def main() -> None:
    """Run the `griffon` command line."""
    app()


if __name__ == "__main__":
    main()
