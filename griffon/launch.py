"""Start Griffon's parts on this machine, for tests, benchmarks and local trials: the service in
a subprocess on a free 127.0.0.1 port, and a throw-away PostgreSQL server.

>>> with running_server({"GRIFFON_MODEL": str(checkpoint)}) as server:
...     httpx.get(server.url + "/healthz")
...     server.ws_url + "/v1/bot"
>>> with running_postgres() as url:        # postgresql://griffon@127.0.0.1:PORT/postgres
...     store = open_store(url)

``running_server`` waits until ``/healthz`` answers 200 (the model is loaded), and stops the process
(SIGTERM, then SIGKILL) on exit; the server's output is kept in ``server.log()`` for failure messages.
Each server gets a database of its own in a new temporary folder, unless ``env`` names one
(``GRIFFON_DB_DIR`` or ``GRIFFON_DB_URL``: a restart test starts a second server on the first
one's data).

``running_postgres``: ``initdb`` into a temporary folder, ``pg_ctl start`` on a free 127.0.0.1 port
(Unix socket in the same folder), trust authentication for the local user ``griffon``; stopped and
deleted on exit. PostgreSQL refuses to run as root: as root the server runs as the ``postgres``
system user (``runuser``). Raises `PostgresUnavailable` with the reason when the machine cannot start
one (no binaries...).

Waiting on a busy machine: every wait here is given in seconds on a quiet machine (at most
`ORDINARY_LOAD` runnable processes per core: the test suite alone) and stretched by `slowness` (the
load average per core over that, or ``GRIFFON_TEST_SLOWNESS``), read again while waiting: a run
that starts on a quiet laptop and gets busy waits longer. `Patience` is such a deadline; `patient`
stretches a one-off timeout; `eventually` polls a condition. When a wait gives up it raises
`TooSlow`, whose message says whether the machine was busy:

>>> eventually(lambda: server.alive(), 30, "the service was not up")
TooSlow: the machine is slow (load 24.8 on 2 cores): the service was not up after 124 s (30 s
allowed, x4.1 for the load)
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

from store.settings import TUNING_ENV, check_tuning_keys

REPO = Path(__file__).resolve().parent.parent
T = TypeVar("T")

# ------------------------------------------------------------------------------------------------
# Waiting on a busy machine

SLOWNESS_VARIABLE = "GRIFFON_TEST_SLOWNESS"
# The seconds given to a wait already allow for this many runnable processes per core: the test
# suite's own four workers and their servers keep two cores about that busy.
ORDINARY_LOAD = 3.0
MAX_SLOWNESS = 30.0  # a wait never stretches beyond 30 times its given length
BUSY = 1.5  # from this factor on, a wait that gives up blames the machine


@dataclass(frozen=True)
class Slowness:
    """How many times longer than usual things take here now (`factor`, 1 to 30), and what it was
    read from: the 1-minute load average per core this process may use, over `ORDINARY_LOAD`; or
    ``GRIFFON_TEST_SLOWNESS`` when set."""

    factor: float
    load: float
    cores: int
    forced: bool = False

    def describe(self) -> str:
        """``load 12.4 on 2 cores`` (and the variable, when it sets the factor)."""
        machine = f"load {self.load:.1f} on {self.cores} core{'s' if self.cores > 1 else ''}"
        return f"{SLOWNESS_VARIABLE}={self.factor:g}, {machine}" if self.forced else machine


def slowness() -> Slowness:
    """The machine's slowness now (see `Slowness`); a bad ``GRIFFON_TEST_SLOWNESS`` raises ValueError."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        load = 0.0
    forced = os.environ.get(SLOWNESS_VARIABLE, "").strip()
    if forced:
        try:
            factor = float(forced)
        except ValueError:
            factor = float("nan")
        if not 1.0 <= factor <= MAX_SLOWNESS:  # also refuses nan
            raise ValueError(f"{SLOWNESS_VARIABLE} must be a number from 1 to {MAX_SLOWNESS:g}: {forced!r}")
        return Slowness(factor, load, cores, forced=True)
    return Slowness(min(MAX_SLOWNESS, max(1.0, load / cores / ORDINARY_LOAD)), load, cores)


def patient(seconds: float) -> float:
    """``seconds`` on a quiet machine, stretched by the machine's slowness now: for one-off timeouts
    (a subprocess, an HTTP request, a socket read)."""
    return seconds * slowness().factor


class TooSlow(TimeoutError):
    """A wait gave up; the message says how busy the machine was."""


class Patience:
    """A deadline of ``seconds`` on a quiet machine, stretched by the worst slowness seen while
    waiting (read again at each `left`). ``what`` completes the failure message: "the service was
    not ready" gives "... the service was not ready after 40 s ..."."""

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds, self.what = seconds, what
        self.started = time.monotonic()
        self.worst = slowness()
        self.extra = 0.0  # seconds granted on top (`grant`)

    def grant(self, seconds: float) -> None:
        """Push the deadline back by ``seconds`` (time spent on something this deadline is not for)."""
        self.extra += seconds

    def left(self) -> float:
        """Seconds left before the deadline (negative once past it)."""
        now = slowness()
        if now.factor > self.worst.factor:
            self.worst = now
        return self.started + self.extra + self.seconds * self.worst.factor - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0

    def failure(self, detail: str = "") -> TooSlow:
        """The error to raise on giving up (``detail``: appended on its own lines, a log...)."""
        waited = time.monotonic() - self.started
        said = f"{self.what} after {waited:.0f} s"
        if self.worst.forced:
            message = f"{said} ({self.seconds:g} s, x{self.worst.factor:g}: {self.worst.describe()})"
        elif self.worst.factor >= BUSY:
            message = (f"the machine is slow ({self.worst.describe()}): {said} ({self.seconds:g} s allowed, "
                       f"x{self.worst.factor:.1f} for the load)")
        else:
            message = f"{said}; the machine is not busy ({self.worst.describe()}): not a slowness problem"
        return TooSlow(message + (f"\n{detail}" if detail else ""))


def eventually(check: Callable[[], T], seconds: float, what: str, every: float = 0.05) -> T:
    """Call ``check`` until it returns something true, and return that; gives up (`TooSlow`) after
    ``seconds`` on a quiet machine (`Patience`). ``what`` names what did not happen: "the game was
    not pruned"."""
    patience = Patience(seconds, what)
    while True:
        result = check()
        if result:
            return result
        if patience.expired():
            raise patience.failure()
        time.sleep(every)



def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """A running service: ``url`` (http://127.0.0.1:PORT), ``ws_url``, the process and its log."""

    url: str
    ws_url: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        """Everything the server printed so far."""
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        """Whether the server process is still running."""
        return self.process.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the whole server, supervisor and workers (its own process group, as a
        crashed host or ``systemctl kill`` would); SIGKILL: waited for."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)
        if sig == signal.SIGKILL:
            self.process.wait(timeout=30)


def tuning(**knobs: object) -> dict[str, str]:
    """The environment that gives a server started here these tuning fields of its settings (the
    rules' timers, the periods: ``GRIFFON_TUNING``, docs/CONFIG.md), e.g. ``tuning(tick_s=0.05)``; a
    feature's field by its path, ``tuning(**{"bot.tick_s": 0.02})``. A key no settings class tunes
    raises ValueError here, naming it (and the nearest key)."""
    from griffon.serve import tuned_classes

    check_tuning_keys(knobs, tuned_classes())
    return {TUNING_ENV: json.dumps(knobs)}


def tuned(env: Mapping[str, str], **knobs: object) -> dict[str, str]:
    """``env`` with ``knobs`` added to the tuning fields it already gives."""
    return {**env, **tuning(**{**json.loads(env.get(TUNING_ENV) or "{}"), **knobs})}


@contextmanager
def running_server(
    env: Mapping[str, str] | None = None, startup_timeout: float = 240.0, repo: Path = REPO,
    workers: int = 1, log_level: str = "warning",
) -> Iterator[Server]:
    """Run ``python -m griffon.serve`` (the uvicorn set-up of ``griffon serve``: timeouts,
    WebSocket size) with ``env`` added to the environment, as ``workers`` processes, logging at
    ``log_level`` (``"info"``: uvicorn's access and WebSocket handshake lines too).

    ``repo``: another checkout to run instead (benchmarks compare two commits); the command that
    checkout has (``griffon.serve``, ``service.serve_cli`` or plain uvicorn) starts it.
    ``startup_timeout``: seconds on a quiet machine, stretched on a busy one (`Patience`); a fresh
    checkout's server compiles its numba kernels at start (4.5 minutes seen with two test suites on
    2 cores, load 13)."""
    port = free_port()
    env = dict(env or {})
    own_data = "GRIFFON_DB_DIR" not in env and "GRIFFON_DB_URL" not in env
    if own_data:
        env["GRIFFON_DB_DIR"] = tempfile.mkdtemp(prefix="griffon-test-db-")
    environ = {**os.environ, **env, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(repo)}
    server: Server | None = None
    try:
        for attempt in range(3):  # another test's server may take the free port first: pick another
            server = _start(repo, environ, free_port() if attempt else port, workers, log_level)
            try:
                _wait_ready(server, startup_timeout)
                break
            except PortTaken:
                _stop(server.process)
                server.log_path.unlink(missing_ok=True)
                server = None
        if server is None:
            raise RuntimeError("the service found no free port in 3 tries")
        yield server
    finally:
        if server is not None:
            _stop(server.process)
            server.log_path.unlink(missing_ok=True)
        if own_data:
            shutil.rmtree(env["GRIFFON_DB_DIR"], ignore_errors=True)


class PortTaken(RuntimeError):
    """The service could not listen on its port: another process took it between ``free_port`` and
    the bind."""


def _start(repo: Path, environ: dict[str, str], port: int, workers: int = 1,
           log_level: str = "warning") -> Server:
    address = ["--host", "127.0.0.1", "--port", str(port), "--log-level", log_level]
    if any((repo / "griffon" / name).is_file() for name in ("worker_process.py", "workers.py")):  # --workers
        command = [sys.executable, "-m", "griffon.serve", *address, "--workers", str(workers)]
    elif (repo / "griffon" / "serve.py").is_file():
        command = [sys.executable, "-m", "griffon.serve", *address]
    elif "def main(" in _text(repo / "service" / "serve_cli.py"):  # a checkout of the older layout
        command = [sys.executable, "-m", "service.serve_cli", *address]
    else:
        command = [sys.executable, "-m", "uvicorn", "service.app:create_app", "--factory", *address]
    with tempfile.NamedTemporaryFile("w+b", suffix=".log", delete=False) as log_file:
        process = subprocess.Popen(  # its own process group: `Server.kill` ends all of it
            command, cwd=repo, env=environ, stdout=log_file, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Server(f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}", process, Path(log_file.name))


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` or one of its children (the workers of ``--workers N``) holds a
    socket listening on ``port`` (Linux ``/proc``; elsewhere assumed): a server answering on the
    port may be another test's that took it first."""
    if not Path(f"/proc/{pid}/fd").is_dir() or not Path("/proc/net/tcp").is_file():
        return True
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = [pid, *(int(c) for c in (children.read_text().split() if children.is_file() else []))]
    inodes = set()
    for fd in (fd for p in pids if Path(f"/proc/{p}/fd").is_dir() for fd in Path(f"/proc/{p}/fd").iterdir()):
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
            return True  # state 0A: LISTEN
    return False


def _wait_ready(server: Server, timeout: float) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    patience = Patience(timeout, "the service was not ready")
    while not patience.expired():
        if not server.alive():
            if "address already in use" in server.log().lower():
                raise PortTaken(server.log())
            raise RuntimeError(f"the service exited during start-up:\n{server.log()}")
        try:
            answered = httpx.get(server.url + "/healthz", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            answered = False
        if answered and _listens(server.process.pid, port):
            return
        time.sleep(0.2)
    raise patience.failure(server.log())


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def _text(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


# ------------------------------------------------------------------------------------------------
# PostgreSQL

USER = "griffon"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here (the message says why)."""


def pg_bindir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl`` (Debian keeps them out of PATH)."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not candidates:
        raise PostgresUnavailable("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    return Path(candidates[-1]).parent


def _as_server_user() -> tuple[list[str], int | None]:
    if os.geteuid() != 0:
        return [], None
    try:
        uid = pwd.getpwnam("postgres").pw_uid
    except KeyError:
        raise PostgresUnavailable("running as root, and no 'postgres' user to run the server") from None
    return ["runuser", "-u", "postgres", "--"], uid


@dataclass
class Postgres:
    """A throw-away PostgreSQL server (`postgres_server`): its URL, and `stop` / `start` to take it
    away and bring it back (an outage, for the tests that check nothing is lost)."""

    url: str
    data: Path
    log: Path
    settings: str
    bindir: Path
    prefix: list[str]

    def stop(self) -> None:
        """Stop the server now (``pg_ctl stop -m fast``: connections are closed at once)."""
        _run([*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"],
             "pg_ctl stop", Patience(30, "PostgreSQL did not stop"), self.log)

    def start(self) -> None:
        """Start it again on the same port and data (returns once it accepts connections)."""
        started = Patience(30, "PostgreSQL was not ready")
        wait = max(1, round(started.left()))  # pg_ctl waits this long itself, then says so
        _run([*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", self.settings, "-l",
              str(self.log), "-w", "-t", str(wait), "start"], "pg_ctl start", started, self.log)


@contextmanager
def postgres_server(durable: bool = False) -> Iterator[Postgres]:
    """A fresh server (`Postgres`: its URL, `stop`, `start`). `durable=False` turns fsync off
    (tests); True keeps the defaults (benchmarks measure real commits)."""
    bindir = pg_bindir()
    prefix, uid = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="griffon-pg-"))
    if uid is not None:
        os.chown(root, uid, -1)
    port = free_port()
    data, log = root / "data", root / "server.log"
    settings = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
    if not durable:
        settings += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    server = Postgres(f"postgresql://{USER}@127.0.0.1:{port}/postgres", data, log, settings, bindir, prefix)
    try:
        initdb = Patience(120, "PostgreSQL's initdb had not finished")
        _run([*prefix, str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8",
              "--no-sync", "--no-instructions"], "initdb", initdb)
        server.start()
        try:
            yield server
        finally:
            subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True, timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def running_postgres(durable: bool = False) -> Iterator[str]:
    """A fresh server; yields its URL (`postgres_server` to stop and start it too)."""
    with postgres_server(durable) as server:
        yield server.url


def _run(command: list[str], what: str, patience: Patience, log: Path | None = None) -> None:
    """Run a PostgreSQL tool; `PostgresUnavailable` when it fails, `TooSlow` when it runs out of time
    (a busy machine is no reason to skip the PostgreSQL tests)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(1.0, patience.left()) + 30)
    except subprocess.TimeoutExpired:
        raise patience.failure() from None
    except OSError as error:
        raise PostgresUnavailable(f"{what} failed: {error}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-600:]
        tail = log.read_text(errors="replace")[-600:] if log is not None and log.exists() else ""
        if "did not start in time" in said:  # pg_ctl -t ran out
            raise patience.failure(tail)
        raise PostgresUnavailable(f"{what} failed: {said} {tail}")


# ------------------------------------------------------------------------------------------------
# Replicas behind HAProxy (docs/DEPLOY.md)

HAPROXY_CONFIG = REPO / "deploy" / "haproxy.cfg"


class HaproxyUnavailable(RuntimeError):
    """HAProxy is not installed here (Debian: apt-get install haproxy)."""


@dataclass
class Replicas:
    """``count`` replicas (``griffon serve`` processes named r1, r2...) on one PostgreSQL database,
    each on its own 127.0.0.1 port; `start`, `kill`, `pause` and `resume` one by its index."""

    env: dict[str, str]
    ports: list[int]
    servers: dict[int, Server]

    def name(self, index: int) -> str:
        return f"r{index + 1}"

    def url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}"

    def start(self, index: int, startup_timeout: float = 240.0, wait: bool = True) -> Server:
        """Start replica ``index`` (again) and wait until it answers (``wait``)."""
        port = self.ports[index]
        environ = {**os.environ, **self.env, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO),
                   "GRIFFON_REPLICA_NAME": self.name(index),
                   "GRIFFON_REPLICA_ADDRESS": f"127.0.0.1:{port}"}
        old = self.servers.get(index)
        if old is not None:
            old.log_path.unlink(missing_ok=True)
        server = _start(REPO, environ, port)
        self.servers[index] = server
        if wait:
            _wait_ready(server, startup_timeout)
        return server

    def kill(self, index: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to replica ``index``, all its processes (SIGKILL: it dies at once, and is
        waited for)."""
        self.servers[index].kill(sig)

    def stop(self, index: int) -> None:
        """Stop replica ``index`` cleanly (SIGTERM: it gives its leases up)."""
        _stop(self.servers[index].process)

    def logs(self) -> str:
        """Every replica's output so far, each under its name."""
        return "\n".join(f"--- {self.name(i)}\n{s.log()[-4000:]}" for i, s in sorted(self.servers.items()))


@contextmanager
def running_replicas(count: int, database_url: str, env: Mapping[str, str] | None = None,
                     startup_timeout: float = 240.0) -> Iterator[Replicas]:
    """Start ``count`` replicas on ``database_url`` (``env`` added to each one's environment, with
    a shared secret); stopped on exit."""
    shared = {"GRIFFON_DB_URL": database_url, "GRIFFON_REPLICA_SECRET": secrets.token_urlsafe(24),
              "GRIFFON_TRUSTED_PROXIES": "127.0.0.1", **(env or {})}
    replicas = Replicas(shared, [free_port() for _ in range(count)], {})
    try:
        for index in range(count):  # all at once: each loads the model
            replicas.start(index, wait=False)
        for index in range(count):
            _wait_ready(replicas.servers[index], startup_timeout)
        yield replicas
    finally:
        for server in replicas.servers.values():
            if server.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(server.process.pid, signal.SIGCONT)  # a paused one must hear SIGTERM
            _stop(server.process)
            server.log_path.unlink(missing_ok=True)


def haproxy_config(ports: list[int], listen: int, source: Path = HAPROXY_CONFIG) -> str:
    """deploy/haproxy.cfg for a local run: listening on 127.0.0.1:``listen``, its servers the
    replicas on ``ports``, in the foreground, as this user, logging to its output, without the
    system's socket, at most 4,000 connections."""
    dropped = ("chroot", "user", "group", "daemon", "stats socket")
    lines, servers_done = [], False
    for line in source.read_text().splitlines():
        word = line.strip()
        if word.startswith(dropped):
            continue
        if word.startswith("log /dev/log"):
            line = "    log stdout format raw local0"  # the balancer's output file
        elif word.startswith("bind "):
            line = f"    bind 127.0.0.1:{listen}"
        elif word.startswith("maxconn "):
            line = "    maxconn 4000"  # within an ordinary limit of open files
        elif word.startswith("server "):
            if servers_done:
                continue
            servers_done = True
            lines += [f"    server r{i + 1} 127.0.0.1:{port}" for i, port in enumerate(ports)]
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"


@contextmanager
def running_haproxy(ports: list[int], log: Path | None = None) -> Iterator[str]:
    """HAProxy with deploy/haproxy.cfg in front of the replicas on ``ports``; yields its URL.
    ``log``: where its log lines go (kept after it stops; by default a file removed with it)."""
    binary = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
    if binary is None:
        raise HaproxyUnavailable("HAProxy is not installed (Debian: apt-get install haproxy)")
    folder = Path(tempfile.mkdtemp(prefix="griffon-haproxy-"))
    listen = free_port()
    config = folder / "haproxy.cfg"
    config.write_text(haproxy_config(ports, listen))
    log_path = log or folder / "haproxy.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=log_file,
                                   stderr=subprocess.STDOUT)
    try:
        eventually(lambda: process.poll() is not None or _answers(f"http://127.0.0.1:{listen}/healthz"),
                   30, "HAProxy was not ready")
        if process.poll() is not None:
            raise HaproxyUnavailable(f"HAProxy exited: {log_path.read_text(errors='replace')[-2000:]}")
        yield f"http://127.0.0.1:{listen}"
    finally:
        _stop(process)
        shutil.rmtree(folder, ignore_errors=True)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False
