"""`griffon serve --workers N`: N worker processes behind one port, and the one that keeps them.

The supervisor (this process) opens the database once (so that a bad database stops everything
before any worker starts, and migrations run once), checks that the port is free, and starts N
workers (``python -m griffon.workers``). Each listens on the port with ``SO_REUSEPORT``, so the
kernel spreads the connections evenly among them, and each also serves a private Unix socket in a
folder only this user can read, where sibling workers relay the games they do not hold
(service/workers.py). A worker that dies is started
again (it resumes its games from the database); one that exits with an error before it ever served
(bad settings, an unusable database, a missing model) stops the whole server with its status,
however long its start took. A worker says it serves by creating ``ready-INDEX`` in that folder. SIGTERM or
SIGINT stops every worker, then the supervisor.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from service.workers import ENV_COUNT, ENV_FOLDER, ENV_INDEX, ENV_SECRET, Workers

log = logging.getLogger("griffon.service")
ENV_ADDRESS = "GRIFFON_WORKER_ADDRESS"  # host:port:backlog every worker listens on
POLL_S = 0.5


def supervise(host: str, port: int, log_level: str, count: int, backlog: int) -> int:
    """Run ``count`` workers on ``host:port`` until a signal; returns the exit status."""
    from store import StoreSettings, open_store

    open_store(StoreSettings.from_env()).close()  # created or migrated once; a bad one stops here
    given = os.environ.get(ENV_FOLDER)
    folder = Path(given) if given else Path(tempfile.mkdtemp(prefix="griffon-workers-"))
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    environ = {**os.environ, ENV_COUNT: str(count), ENV_FOLDER: str(folder),
               ENV_SECRET: secrets.token_urlsafe(32), ENV_ADDRESS: f"{host}:{port}:{backlog}"}
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _: stopping.append(signum))

    def start(index: int) -> subprocess.Popen:
        ready_marker(folder, index).unlink(missing_ok=True)
        command = [sys.executable, "-m", "griffon.workers", "--log-level", log_level]
        return subprocess.Popen(command, env={**environ, ENV_INDEX: str(index)})

    running = {index: start(index) for index in range(count)}
    print(f"griffon: {count} workers on http://{host}:{port} (sockets in {folder})", flush=True)
    status = 0
    try:
        while not stopping:
            time.sleep(POLL_S)
            for index, process in list(running.items()):
                code = process.poll()
                if code is None or stopping:
                    continue
                if code > 0 and not ready_marker(folder, index).exists():  # killed by a signal: again
                    print(f"griffon: worker {index} stopped at start (status {code})", file=sys.stderr)
                    status = code or 1
                    stopping.append(0)
                    break
                print(f"griffon: worker {index} ended (status {code}); starting it again", file=sys.stderr)
                running[index] = start(index)
    finally:
        for process in running.values():
            if process.poll() is None:
                process.terminate()
        for process in running.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        if not given:
            shutil.rmtree(folder, ignore_errors=True)
    return status


def ready_marker(folder: Path, index: int) -> Path:
    """The file worker ``index`` creates once it serves."""
    return folder / f"ready-{index}"


def main() -> None:
    """One worker: the app on the shared port (``SO_REUSEPORT``) and on its own private socket."""
    import argparse

    import uvicorn

    from griffon.serve import bound_socket, raise_file_limit, show_progress, uvicorn_config
    from service.settings import Settings

    show_progress()
    parser = argparse.ArgumentParser(description="one worker of `griffon serve --workers N`")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args()
    workers = Workers.current()
    if workers is None:
        sys.exit("griffon.workers runs under `griffon serve --workers N`")
    raise_file_limit()
    host, port, backlog = os.environ[ENV_ADDRESS].rsplit(":", 2)
    listener = bound_socket(host, int(port), reuse_port=True)
    listener.listen(int(backlog))
    path = workers.socket_path(workers.index)
    path.unlink(missing_ok=True)
    private = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    private.bind(str(path))
    os.chmod(path, 0o600)
    private.listen(256)
    config = uvicorn_config(Settings.from_env(), "127.0.0.1", 0, args.log_level)
    marker = ready_marker(workers.folder, workers.index)

    class Worker(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                marker.touch()

    Worker(config).run(sockets=[listener, private])


if __name__ == "__main__":
    main()
