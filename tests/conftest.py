"""Shared fixtures: a small Quick, Draw! folder that our own code generates, and a tiny trained model;
the per-test time limit (pyproject's ``timeout``), stretched on a busy machine."""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import hypothesis
import numpy as np
import pytest
import pytest_timeout

from griffon.launch import Patience, PostgresUnavailable, patient, running_postgres, slowness
from store import Store, open_store

REPO = Path(__file__).resolve().parent.parent
FIXTURE_WORDS = ("circle", "square", "triangle", "line")

# Hypothesis times each example (its deadline) and the making of examples (the too_slow health
# check): on a busy machine neither says anything about the code.
hypothesis.settings.register_profile(
    "griffon", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("griffon")

# Admission by the event loop's measured lag and CPU share (service/capacity.py) answers how busy the
# machine is: the servers and apps the tests start admit by the measured costs only, whatever else
# runs on the host (tests/test_service_capacity.py checks both on their own, with figures it sets).
os.environ.setdefault("GRIFFON_CAPACITY_LAG_MS", "0")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Several workers share the 2 cores: one compute thread each (and in the servers and training
    # processes they start), instead of every one of them spinning a thread per core.
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")


@pytest.fixture(scope="session", autouse=True)
def throwaway_data_dir() -> Iterator[None]:
    """Servers and apps started by the tests keep their database in a throw-away folder, never
    ./var; the folder is deleted at the end of the run."""
    if os.environ.get("GRIFFON_DB_DIR"):
        yield
        return
    folder = tempfile.mkdtemp(prefix="griffon-test-var-")
    os.environ["GRIFFON_DB_DIR"] = folder
    try:
        yield
    finally:
        os.environ.pop("GRIFFON_DB_DIR", None)
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


# The tiny checkpoint: trained once, kept on disk under the hash of what makes it (the training and
# model code, this recipe, the fixture drawings, torch's version), so that later runs reuse it.
TINY_RECIPE = ["--categories", "", "--epochs", "12", "--per-class", "24", "--ema", "0.9"]  # after --data
TRAINING_CODE = ("training", "model")


def tiny_checkpoint_key() -> str:
    """A hash of everything the tiny checkpoint is made from."""
    import torch

    digest = hashlib.sha256()
    for package in TRAINING_CODE:
        for path in sorted((REPO / package).rglob("*")):
            if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    recipe = [inspect.getsource(shape), inspect.getsource(write_fixture_folder), "tiny", *TINY_RECIPE,
              "with its serving bundle"]  # a folder of its own: older checkouts' tests load it on torch
    digest.update("\0".join([*recipe, torch.__version__]).encode())
    return digest.hexdigest()[:16]


def build_tiny_checkpoint() -> Path:
    """The tiny checkpoint's path, trained first when no run (of any checkout of the same code) has
    kept one: under ``<cache>/test-checkpoints/`` (``$GRIFFON_CACHE_DIR``, else ``~/.cache/griffon``),
    with its serving bundle (a server starts on it in about half the time).
    Processes that need it at once wait for the one that trains it (a file lock)."""
    from filelock import FileLock

    from model.bundler import write_bundle
    from training.train import parse_config, train
    from vocab.lexicon import cache_dir

    folder = cache_dir() / "test-checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"tiny-{tiny_checkpoint_key()}"
    with FileLock(str(out) + ".lock"):
        if not (out / "model.pt").is_file():
            building = Path(tempfile.mkdtemp(prefix=out.name + ".building-", dir=folder))
            try:
                data = write_fixture_folder(building / "quickdraw")
                run = building / "run"
                train(parse_config(["--preset", "tiny", "--data", str(data), *TINY_RECIPE, "--out", str(run),
                                    "--cache", str(building / "prepared")]))
                write_bundle(run / "model.pt")  # servers load it on ONNX Runtime, no PyTorch
                run.rename(out)  # whole or not at all
            finally:
                shutil.rmtree(building, ignore_errors=True)
    return out / "model.pt"


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint from a seconds-long training run on the fixture drawings (`build_tiny_checkpoint`):
    trained at most once for all the pytest-xdist workers (and later runs), outside any test's time
    limit; each worker has its own copy of the run's folder (model.pt, MODEL_CARD.md, train_log.json)."""
    with outside_the_time_limit():
        kept = build_tiny_checkpoint()
    copy = tmp_path_factory.mktemp("tiny-run")
    for path in kept.parent.iterdir():
        if path.is_file():
            shutil.copy(path, copy / path.name)
    return copy / kept.name


@pytest.fixture(scope="session")
def two_view_checkpoint(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny raster checkpoint with an untrained stroke-sequence member attached (a two-view
    model); its member is saved beside it as ``sequence.pt``."""
    import torch

    from model import Guesser
    from model.sequence import StrokeSequenceNet, save_member
    from training.sequence_loop import attach_member

    folder = tmp_path_factory.mktemp("two-view")
    classes = Guesser.load(tiny_checkpoint, backend="torch").labels
    torch.manual_seed(1)
    save_member(StrokeSequenceNet(len(classes)), classes, folder / "sequence.pt")
    return attach_member(tiny_checkpoint, folder / "sequence.pt", folder / "model.pt")


@pytest.fixture(scope="session")
def tight_env() -> dict[str, str]:
    """The settings `tight_server` runs with (tests/service_server.py's `tight_settings`)."""
    from tests.service_server import tight_settings

    return tight_settings()


@pytest.fixture(scope="session")
def tight_server(tiny_checkpoint: Path, tight_env: dict[str, str]):
    """The real service (uvicorn) with small limits and short timeouts, shared by the service tests."""
    from griffon.launch import running_server

    with running_server({"GRIFFON_MODEL": str(tiny_checkpoint), **tight_env}) as server:
        yield server


# The parallel run (`make test`: pytest-xdist `--dist loadgroup`) keeps each long file on one worker,
# with its servers and browser (started once there), and balances them by hand: the browser files wait
# on real game timers. Every other test is handed out one by one to whichever worker is free.
# Measured with 4 workers: 769 s of tests in all, the longest group (a) 82 s; 194-223 s on 2 idle cores.
WORKER_GROUPS = {
    "test_browser_play.py": "a",
    "test_service_play.py": "b",
    "test_service_restart.py": "b",
    "test_browser_pictomania.py": "c",
    "test_service_play_pictomania.py": "c",
    "test_service_bot.py": "d",
    "test_service_api.py": "d",
    "test_model_guesser.py": "d",
    "test_service_bot_keys.py": "e",
    "test_js_client.py": "e",
    "test_bot_conformance.py": "e",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the markers into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Pin the long files to their worker group (see `WORKER_GROUPS`); leave the replica tests out
    unless ``-m replicas`` asks for them (``make test-replicas``: three servers, HAProxy)."""
    for item in items:
        group = WORKER_GROUPS.get(item.path.name)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
        if item.get_closest_marker("replicas") and "replicas" not in (item.config.option.markexpr or ""):
            item.add_marker(pytest.mark.skip(reason="three replicas behind HAProxy: make test-replicas"))


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


# -- the per-test time limit -------------------------------------------------------------------------
# pytest-timeout's limit (pyproject's ``timeout``) counts seconds on a quiet machine: it is stretched
# by the machine's load, read again while the test runs (griffon.launch.Patience), and time spent
# building shared things (the tiny checkpoint) does not count.
class RunningLimit:
    """The running test's limit: a `Patience`, paused while shared things are built."""

    current: RunningLimit | None = None  # the test running in this process

    def __init__(self, patience: Patience) -> None:
        self.patience = patience
        self.paused_since: float | None = None

    def left(self) -> float:
        """Seconds before the limit; while paused, a second (the alarm comes back to look)."""
        return 1.0 if self.paused_since is not None else self.patience.left()


@contextmanager
def outside_the_time_limit() -> Iterator[None]:
    """Time spent in this block is not counted against the running test's limit."""
    limit = RunningLimit.current
    if limit is None or limit.paused_since is not None:
        yield
        return
    limit.paused_since = time.monotonic()
    try:
        yield
    finally:
        limit.patience.grant(time.monotonic() - limit.paused_since)
        limit.paused_since = None


def pytest_configure(config: pytest.Config) -> None:
    """Refuse a bad ``GRIFFON_TEST_SLOWNESS`` before any test runs."""
    try:
        slowness()
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: pytest_timeout.Settings) -> bool:
    """Arm the test's time limit as a `RunningLimit`: when the alarm rings before the stretched
    deadline, it is set again for what is left. For pytest-timeout's ``signal`` method (Linux's
    default, in the main thread); otherwise pytest-timeout's own timer, the limit stretched once."""
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        pytest_timeout.pytest_timeout_set_timer(item, settings._replace(timeout=patient(settings.timeout)))
        return True
    limit = RunningLimit.current = RunningLimit(Patience(settings.timeout, f"{item.nodeid} had not finished"))

    def ring(signum: int, frame: object) -> None:
        left = limit.left()
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, left)
            return
        __tracebackhide__ = True
        pytest_timeout.dump_stacks(item.config.get_terminal_writer())
        pytest.fail(str(limit.patience.failure("(the limit: pyproject.toml's pytest timeout)")))

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        RunningLimit.current = None

    item.cancel_timeout = cancel  # type: ignore[attr-defined] - pytest-timeout's cancel hook calls it
    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(0.01, limit.left()))
    return True


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """One real PostgreSQL server per test process (skipped with the reason if none can start)."""
    server = running_postgres()
    try:
        url = server.__enter__()
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL tests skipped: {error}")
    yield url
    server.__exit__(None, None, None)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Store]:
    """A fresh SQLite store in the test's own folder (``tests/test_store.py`` has its own, over both
    backends)."""
    with open_store(f"sqlite:///{tmp_path / 'griffon.db'}") as opened:
        yield opened
