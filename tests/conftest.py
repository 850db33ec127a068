"""Shared fixtures: a small Quick, Draw! folder that our own code generates, and a tiny trained model."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURE_WORDS = ("circle", "square", "triangle", "line")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Several workers share the 2 cores: one compute thread each (and in the servers and training
    # processes they start), instead of every one of them spinning a thread per core.
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")


@pytest.fixture(scope="session", autouse=True)
def throwaway_data_dir() -> Iterator[None]:
    """Servers and apps started by the tests keep their database in a throw-away folder, never
    ./var; the folder is deleted at the end of the run."""
    if os.environ.get("GRIFFON_DATA_DIR"):
        yield
        return
    folder = tempfile.mkdtemp(prefix="griffon-test-var-")
    os.environ["GRIFFON_DATA_DIR"] = folder
    try:
        yield
    finally:
        os.environ.pop("GRIFFON_DATA_DIR", None)
        shutil.rmtree(folder, ignore_errors=True)


def shape(word: str, rng: np.random.Generator) -> list:
    """A hand-like drawing of a simple shape in canvas pixels (raw format, with times)."""
    cx, cy, r = rng.uniform(200, 400), rng.uniform(200, 400), rng.uniform(60, 180)
    if word == "circle":
        angles = np.linspace(0, 2 * math.pi, 40) + rng.uniform(0, 6)
        xs, ys = cx + r * np.cos(angles), cy + r * np.sin(angles)
    elif word == "square":
        corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]])
        xs, ys = cx + r * corners[:, 0], cy + r * corners[:, 1]
    elif word == "triangle":
        corners = np.array([[0, -1], [1, 0.8], [-1, 0.8], [0, -1]])
        xs, ys = cx + r * corners[:, 0], cy + r * corners[:, 1]
    else:
        xs, ys = np.array([cx - r, cx + r]), np.array([cy, cy + rng.uniform(-20, 20)])
    xs = xs + rng.normal(0, 2, size=len(xs))
    ys = ys + rng.normal(0, 2, size=len(ys))
    return [[np.round(xs).tolist(), np.round(ys).tolist(), list(range(0, 20 * len(xs), 20))]]


def write_fixture_folder(root: Path, per_word: int = 24, seed: int = 0) -> Path:
    """Write ``full/raw/<word>.ndjson`` files and ``categories.txt`` under ``root``."""
    rng = np.random.default_rng(seed)
    (root / "full" / "raw").mkdir(parents=True, exist_ok=True)
    for word in FIXTURE_WORDS:
        lines = []
        for i in range(per_word):
            item = {
                "word": word,
                "countrycode": "FR",
                "timestamp": "2017-03-01 10:00:00.0 UTC",
                "recognized": bool(i % 5),
                "key_id": f"{word}-{i:04d}",
                "drawing": shape(word, rng),
            }
            lines.append(json.dumps(item))
        (root / "full" / "raw" / f"{word}.ndjson").write_text("\n".join(lines) + "\n")
    (root / "categories.txt").write_text("\n".join(FIXTURE_WORDS) + "\n")
    return root


@pytest.fixture(scope="session")
def fixture_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated Quick, Draw! folder with four simple shapes."""
    return write_fixture_folder(tmp_path_factory.mktemp("quickdraw"))


@pytest.fixture(scope="session")
def tiny_checkpoint(fixture_data: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A checkpoint from a seconds-long training run on the fixture folder, trained once for the
    whole run: the pytest-xdist workers share it (the first one trains it, the others wait)."""
    from filelock import FileLock

    from training.train import parse_config, train

    root = tmp_path_factory.getbasetemp()
    root = root if worker_id == "master" else root.parent  # the folder the workers have in common
    out = root / "tiny-run"
    with FileLock(str(root / "tiny-run.lock")):
        if not (out / "model.pt").is_file():
            config = parse_config(
                [
                    "--preset", "tiny", "--data", str(fixture_data), "--categories", "",
                    "--out", str(out), "--cache", str(out / "cache"), "--epochs", "12",
                    "--per-class", "24", "--ema", "0.9",
                ]
            )
            train(config)
    return out / "model.pt"


@pytest.fixture(scope="session")
def two_view_checkpoint(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny raster checkpoint with an untrained stroke-sequence member attached (a two-view
    model); its member is saved beside it as ``sequence.pt``."""
    import torch

    from model import Guesser
    from model.sequence import StrokeSequenceNet, save_member
    from training.sequence import attach_member

    folder = tmp_path_factory.mktemp("two-view")
    classes = Guesser.load(tiny_checkpoint, backend="torch").labels
    torch.manual_seed(1)
    save_member(StrokeSequenceNet(len(classes)), classes, folder / "sequence.pt")
    return attach_member(tiny_checkpoint, folder / "sequence.pt", folder / "model.pt")


@pytest.fixture(scope="session")
def tight_server(tiny_checkpoint: Path):
    """The real service (uvicorn) with small limits and short timeouts, shared by the service tests."""
    from griffon.launch import running_server
    from tests.service_server import TIGHT

    with running_server({"GRIFFON_MODEL": str(tiny_checkpoint), **TIGHT}) as server:
        yield server


# The parallel run (`make test`: pytest-xdist `--dist loadgroup`) keeps each long file on one worker,
# with its servers and browser (started once there), and balances them by hand: the browser files wait
# on real game timers. Every other test is handed out one by one to whichever worker is free.
# Measured with 4 workers (each worker 71-74 s of tests): 81-87 s in all.
WORKER_GROUPS = {
    "test_browser_play.py": "a",
    "test_service_play.py": "b",
    "test_service_restart.py": "b",
    "test_browser_pictomania.py": "c",
    "test_service_play_pictomania.py": "c",
    "test_service_bot.py": "d",
    "test_service_api.py": "d",
    "test_model_guesser.py": "d",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the markers into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Pin the long files to their worker group (see `WORKER_GROUPS`)."""
    for item in items:
        group = WORKER_GROUPS.get(item.path.name)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse to run when pytest-xdist ignored the groups: its ``loadgroup`` mode marks a grouped
    test by a ``@group`` suffix of its node id, which some pytest/xdist pairs silently lose
    (pytest 9.2 with xdist 3.8): every worker would then start every server, a minute more."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [i.nodeid for i in session.items if i.path.name in WORKER_GROUPS and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(
            f"pytest-xdist ignored the worker groups ({lost[0]} has no @group suffix): "
            "install the pytest version pinned in pyproject.toml (make setup)"
        )
