"""Start the real service (``griffon serve``'s uvicorn set-up, in a subprocess) on a free
127.0.0.1 port, for tests and benchmarks.

>>> with running_server({"GRIFFON_MODEL": str(checkpoint)}) as server:
...     httpx.get(server.url + "/healthz")
...     server.ws_url + "/v1/bot"

``running_server`` waits until ``/healthz`` answers 200 (the model is loaded), and stops the
process (SIGTERM, then SIGKILL) on exit; the server's output is kept in ``server.log()`` for
failure messages. Pytest fixtures can wrap it with any scope. Each server (and each
``in_process`` app) gets a database of its own in a new temporary folder, unless ``env`` names
one (``GRIFFON_DATA_DIR`` or ``GRIFFON_DATABASE_URL``: a restart test starts a second server on
the first one's data).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent

# Small limits and short timeouts: one real server (``tight_server`` in conftest) shared by the
# bot protocol, solo game and attack tests.
TIGHT = {
    "GRIFFON_MAX_MESSAGE_RATE": "5",
    "GRIFFON_MAX_MESSAGE_BURST": "5",
    "GRIFFON_BOT_IDLE_TIMEOUT_S": "2.5",
    "GRIFFON_MAX_BOT_SESSIONS": "3",
    "GRIFFON_MAX_SESSIONS": "2",
    "GRIFFON_IDLE_EXPIRY_S": "2",
    "GRIFFON_GAME_IDLE_TIMEOUT_S": "5",
    "GRIFFON_MAX_GAME_SOCKETS": "2",
    "GRIFFON_HEADER_TIMEOUT_S": "1",
    "GRIFFON_BODY_TIMEOUT_S": "1",
    "GRIFFON_KEEP_ALIVE_S": "1",
    "GRIFFON_MAX_CLIENT_CONNECTIONS": "16",
    "GRIFFON_MAX_FRAME_BYTES": "4096",
    "GRIFFON_TRANSCRIPT_BYTES": "2048",
}


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


@contextmanager
def running_server(
    env: Mapping[str, str] | None = None, startup_timeout: float = 120.0, repo: Path = REPO
) -> Iterator[Server]:
    """Run ``python -m service.serve_cli`` (the uvicorn set-up of ``griffon serve``: timeouts,
    WebSocket size) with ``env`` added to the environment.

    ``repo``: another checkout to run instead (benchmarks compare before/after); one without
    ``service/serve_cli.py``'s ``main`` is started with plain uvicorn, as it was then."""
    port = free_port()
    env = dict(env or {})
    own_data = "GRIFFON_DATA_DIR" not in env and "GRIFFON_DATABASE_URL" not in env
    if own_data:
        env["GRIFFON_DATA_DIR"] = tempfile.mkdtemp(prefix="griffon-test-db-")
    environ = {**os.environ, **env, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(repo)}
    server: Server | None = None
    try:
        for attempt in range(3):  # another test's server may take the free port first: pick another
            server = _start(repo, environ, free_port() if attempt else port)
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
            shutil.rmtree(env["GRIFFON_DATA_DIR"], ignore_errors=True)


class PortTaken(RuntimeError):
    """The service could not listen on its port: another process took it between ``free_port`` and
    the bind."""


def _start(repo: Path, environ: dict[str, str], port: int) -> Server:
    address = ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    if "def main(" in (repo / "service" / "serve_cli.py").read_text():
        command = [sys.executable, "-m", "service.serve_cli", *address]
    else:
        command = [sys.executable, "-m", "uvicorn", "service.app:create_app", "--factory", *address]
    with tempfile.NamedTemporaryFile("w+b", suffix=".log", delete=False) as log_file:
        process = subprocess.Popen(
            command, cwd=repo, env=environ, stdout=log_file, stderr=subprocess.STDOUT,
        )
    return Server(f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}", process, Path(log_file.name))


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds the socket listening on ``port`` (Linux ``/proc``; elsewhere
    assumed): a server answering on the port may be another test's that took it first."""
    fds = Path(f"/proc/{pid}/fd")
    if not fds.is_dir() or not Path("/proc/net/tcp").is_file():
        return True
    inodes = set()
    for fd in fds.iterdir():
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
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
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
    raise RuntimeError(f"the service did not become ready within {timeout} s:\n{server.log()}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@contextmanager
def in_process(**settings: object) -> Iterator[object]:
    """The app in this process (``fastapi.testclient.TestClient``, lifespan run), no sockets.

    ``settings`` are :class:`service.settings.Settings` fields. For tables of HTTP cases and
    WebSocket conversations that need no real network; keep a few real-server tests too."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings
    from store import StoreSettings

    with tempfile.TemporaryDirectory(prefix="griffon-test-db-") as folder:
        app = create_app(Settings(**settings), StoreSettings(data_dir=Path(folder)))  # type: ignore[arg-type]
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client
