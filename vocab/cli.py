"""Command-line commands of this package (registered on the root `griffon` app)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this package's commands to the root `griffon` app."""
