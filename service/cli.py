"""The `griffon` command line: one entry point that gathers each package's commands.

Each package owns its commands in its own ``cli.py`` and exposes ``register(app)``;
this module only assembles them (heavy imports stay inside the command functions).
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    help="Griffon: an AI player for the drawing games Kontour and Pictomania.",
    no_args_is_help=True,
    add_completion=False,
)

COMMAND_MODULES = ("training.cli", "vocab.cli", "service.simulate_cli", "service.serve_cli", "store.cli")

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    """Run the `griffon` command line."""
    app()


if __name__ == "__main__":
    main()
