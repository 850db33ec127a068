"""Steps that derive a checkpoint from others (calibration, attaching members) write a new file and
never write over one they read: a run's ``model.pt`` stays what its training wrote. Only
``griffon model ship`` writes into ``model/weights/`` (:func:`refuse_shipped`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from model.checkpoint import CheckpointError
from model.guesser import WEIGHTS_DIR


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether two paths name one file (the same resolved path, or links to one file)."""
    a, b = Path(a), Path(b)
    if a.resolve() == b.resolve():
        return True
    return a.exists() and b.exists() and os.path.samefile(a, b)


def new_output(out: Path | str, inputs: Iterable[Path | str], step: str) -> Path:
    """``out`` when it is none of ``inputs``; else :class:`CheckpointError` naming the step and the
    file it would have written over."""
    out = Path(out)
    for source in inputs:
        if same_file(out, source):
            raise CheckpointError(
                f"{step} would write over its input {source}: give another --out (a run's checkpoints are "
                "never rewritten in place)"
            )
    return out


def refuse_shipped(path: Path | str, step: str) -> None:
    """Raise :class:`CheckpointError` when ``step`` would write beside the shipped model: the files of
    ``model/weights/`` are written by ``griffon model ship`` alone (checked together)."""
    if Path(path).resolve().parent == WEIGHTS_DIR.resolve():
        raise CheckpointError(
            f"{step} does not write into {WEIGHTS_DIR}: run it on a copy, then `griffon model ship` it"
        )
