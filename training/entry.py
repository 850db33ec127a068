"""The training commands' one way to end on a user's mistake.

A missing or empty data folder (:class:`training.data.DataError`) or a checkpoint that cannot be used
(:class:`model.CheckpointError`, also raised when a step would write over its input) ends
``griffon train``, ``griffon model calibrate`` / ``attach`` and the ``python -m training.…`` modules
with one ``error: …`` line on stderr and exit status 1, not with a traceback."""

from __future__ import annotations

from collections.abc import Callable

from model.checkpoint import CheckpointError
from training.data import DataError


def run_command(main: Callable[[], object]) -> None:
    """Run a module's ``main``; a data or checkpoint error becomes ``error: …`` and exit status 1."""
    try:
        main()
    except (DataError, CheckpointError) as error:
        raise SystemExit(f"error: {error}") from None
