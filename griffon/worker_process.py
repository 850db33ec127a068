"""One worker process of `griffon serve --workers N` (``python -m griffon.worker_process``), started by
the supervisor (:func:`griffon.serve.supervise`).

It listens on the shared port with ``SO_REUSEPORT`` (the kernel spreads the connections evenly
among the workers) and on its own private Unix socket, in a folder only this user can read, where
sibling workers relay the games they do not hold (service/workers.py). It says it serves by
creating ``ready-INDEX`` in that folder.

A worker never outlives its supervisor, however the supervisor ends (SIGKILL included): the kernel
sends it SIGTERM when the supervisor dies (``PR_SET_PDEATHSIG``, Linux), and a thread watches the
supervisor's end of a pipe (its *lifeline*), which closes when the supervisor dies, on any system.
Either way the worker stops as on SIGTERM (its leases given up, its listening socket closed), and
exits at once if that takes longer than ``ORPHAN_GRACE_S``: the port is free for a new server.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

from griffon.serve import (
    bound_socket,
    raise_file_limit,
    ready_marker,
    show_progress,
    uvicorn_config,
)
from service.workers import Workers

__all__ = ["main"]

log = logging.getLogger("griffon.start")
PR_SET_PDEATHSIG = 1  # linux/prctl.h
ORPHAN_GRACE_S = 10.0  # a worker whose supervisor died exits at the latest this long after


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux
    ``prctl(PR_SET_PDEATHSIG)``); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def watch_lifeline(fd: int, on_orphaned: Callable[[], None]) -> threading.Thread:
    """A daemon thread that calls ``on_orphaned()`` once the pipe ``fd`` is closed at its other
    end (the supervisor is gone)."""

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(fd, 1):
                pass
        on_orphaned()

    thread = threading.Thread(target=watch, name="griffon-lifeline", daemon=True)
    thread.start()
    return thread


def stop_orphan(grace_s: float = ORPHAN_GRACE_S) -> None:
    """The supervisor is gone: stop as on SIGTERM, and exit at once after ``grace_s`` if still up."""
    log.warning("the supervisor is gone: worker %s stops", os.environ.get("GRIFFON_WORKER_INDEX", "?"))
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace_s)
    os._exit(1)


def main() -> None:
    """One worker: the app on the shared port (``SO_REUSEPORT``) and on its own private socket."""
    import argparse

    import uvicorn

    from service.settings import Settings

    die_with_parent()
    show_progress()
    parser = argparse.ArgumentParser(description="one worker of `griffon serve --workers N`")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--listen", required=True, help="host:port:backlog every worker listens on")
    parser.add_argument("--lifeline", type=int, help="our end of a pipe the supervisor holds open")
    args = parser.parse_args()
    workers = Workers.current()
    if workers is None:
        sys.exit("griffon.worker_process runs under `griffon serve --workers N`")
    if args.lifeline is not None:  # checked after prctl: a supervisor dead before it closed this pipe
        watch_lifeline(args.lifeline, stop_orphan)
    raise_file_limit()
    host, port, backlog = args.listen.rsplit(":", 2)
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
