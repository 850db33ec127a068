"""`griffon serve`: run the web service with uvicorn, its limits taken from the settings.

:func:`uvicorn_config` is the one place that turns :class:`service.settings.Settings` into
uvicorn's knobs (tests and benchmarks start the server through it too,
``python -m griffon.serve --port N``):

- ``header_timeout_s``: a connection must deliver a whole request head within this time, or it
  gets 408 and is closed (uvicorn alone waits forever: a slowloris holds sockets until the
  process runs out of file descriptors). Bodies: ``body_timeout_s`` (:class:`service.app.BodyLimit`).
- ``keep_alive_s``: idle keep-alive connections close.
- ``max_connections``: uvicorn's concurrency limit (503 beyond); ``max_client_connections``:
  HTTP connections open at once from one address (beyond: closed at once); WebSockets per
  address are counted by the app (``service.app.BrowserGuard``).
- ``max_frame_bytes``: uvicorn's WebSocket message limit (it would otherwise buffer 16 MiB
  messages before the app sees them); pings every 20 s drop dead peers.
- ``trusted_proxies``: the only peers whose ``X-Forwarded-For`` is believed (default: none).
- No log line holds a query string (game tokens and transcript keys travel there): the access
  log's and the WebSocket handshake lines (:func:`install_log_filters`).

``--workers N`` (:func:`supervise`): this process, the supervisor, opens the database once (so that
a bad database stops everything before any worker starts, and migrations run once), checks that the
port is free, and starts N workers (``python -m griffon.worker_process``, each on the port with
``SO_REUSEPORT``). A worker that dies is started again (it resumes its games from the database);
one that exits with an error before it ever served (bad settings, an unusable database, a missing
model) stops the whole server with its status, however long its start took. SIGTERM or SIGINT stops
every worker, then the supervisor; a supervisor killed outright takes its workers with it (they
watch it: griffon/worker_process.py), so that a new server can listen on the port.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from service.settings import Settings, SettingsError
from service.workers import ENV_COUNT, ENV_FOLDER, ENV_INDEX, ENV_SECRET
from store.settings import EnvSettings, check_tuning_keys, read_tuning, retired_in

log = logging.getLogger("griffon.service")
POLL_S = 0.5


def register(app: typer.Typer) -> None:
    """Add the `serve` command to the root `griffon` app."""
    app.command("serve")(serve)


def serve(
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8000, help="port to listen on"),
    log_level: str = typer.Option("info", help="uvicorn log level"),
    workers: int = typer.Option(
        0, min=0, max=64, help="worker processes (0: one per usable core; 1: a single process)"
    ),
) -> None:
    """Serve the solo games, the bot protocol and the HTTP API with the shipped model."""
    import uvicorn

    from service.capacity import usable_cores
    from service.play.settings import PlaySettings
    from service.replicas import ReplicaSettings
    from store import StoreError

    raise_file_limit()
    show_progress()
    default_replica_address(host, port)
    try:
        settings = Settings.from_env()
        PlaySettings.from_env()  # a bad GRIFFON_PLAY_* value stops here too
        replica = ReplicaSettings.from_env().name is not None  # and GRIFFON_REPLICA_*
        check_tuning(tuned_classes())  # and a misspelt GRIFFON_TUNING key
        warn_retired(os.environ)
        count = workers or (1 if replica else usable_cores())
        if replica and count > 1:
            raise SettingsError("a replica (GRIFFON_REPLICA_NAME) is one process: run more replicas "
                                "rather than --workers N")
        backlog = min(2048, settings.max_connections)
        listener = bound_socket(host, port)  # before the model loads: a taken port is said at once
        port = listener.getsockname()[1]  # --port 0: the one the system chose
        typer.echo(f"griffon: starting on http://{host}:{port} ({count} worker"
                   f"{'s' if count > 1 else ''}); open it in a browser once 'griffon: ready' shows")
        if count == 1:  # uvicorn listens on it once the app has started
            uvicorn.Server(uvicorn_config(settings, host, port, log_level)).run(sockets=[listener])
        else:
            listener.close()  # each worker binds the port itself (SO_REUSEPORT)
            status = supervise(host, port, log_level, count, backlog=backlog)
            if status:
                raise typer.Exit(status)
    except (SettingsError, StoreError, PortError) as error:
        # a bad GRIFFON_* value (GRIFFON_PLAY_* included: read by create_app before the model
        # loads), a corrupt / unreachable database: its message, no traceback
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None


def tuned_classes() -> tuple[type[EnvSettings], ...]:
    """The settings classes a server reads ``GRIFFON_TUNING`` into (their parts' fields included)."""
    from service.play.settings import PlaySettings
    from service.replicas import ReplicaSettings

    return Settings, PlaySettings, ReplicaSettings


def check_tuning(classes: tuple[type[EnvSettings], ...]) -> None:
    """Raise `SettingsError` when ``GRIFFON_TUNING`` names a field none of ``classes`` tunes."""
    try:
        check_tuning_keys(sorted(read_tuning(os.environ)), classes)
    except ValueError as error:
        raise SettingsError(str(error)) from None


def warn_retired(environ: Mapping[str, str]) -> None:
    """One warning line for each retired variable ``environ`` still sets (it changes nothing)."""
    for name in retired_in(environ):
        log.warning("%s is no longer read (docs/CONFIG.md: a tuning field or a constant now); "
                    "remove it from the environment", name)


def default_replica_address(host: str, port: int) -> None:
    """A replica (``GRIFFON_REPLICA_NAME``) listening on one address is reached there by the others:
    ``GRIFFON_REPLICA_ADDRESS`` defaults to ``host:port`` (not for 0.0.0.0, ``::`` or ``--port 0``,
    where it must be set)."""
    if (os.environ.get("GRIFFON_REPLICA_NAME") and not os.environ.get("GRIFFON_REPLICA_ADDRESS")
            and host not in ("", "0.0.0.0", "::") and port):
        os.environ["GRIFFON_REPLICA_ADDRESS"] = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class PortError(RuntimeError):
    """The service cannot listen on its address (the port taken by another server, a bad host)."""


def bound_socket(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to ``host:port`` and not yet listening: connections are refused until the
    server listens on it (a load balancer sends them elsewhere meanwhile). Without ``reuse_port``,
    another server already there (even one sharing its port with ``SO_REUSEPORT``) makes this
    fail: :class:`PortError`, one line."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as error:
        raise PortError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as error:
        sock.close()
        reason = os.strerror(error.errno) if error.errno and error.errno > 0 else str(error)
        raise PortError(f"cannot listen on {host}:{port}: {reason}") from None
    return sock


def show_progress() -> None:
    """Print the start's steps (the ``griffon.start`` logger: loading the model, compiling its
    kernels, ready) on stderr (each worker of ``--workers N`` calls it too)."""
    logger = logging.getLogger("griffon.start")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("griffon: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def raise_file_limit() -> int:
    """Raise the soft limit of open files to the hard one; returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft


def uvicorn_config(settings: Settings, host: str, port: int, log_level: str = "info") -> Any:
    """The ``uvicorn.Config`` of the service under ``settings``."""
    import uvicorn

    config = uvicorn.Config(
        "service.app:create_app", factory=True, host=host, port=port, log_level=log_level,
        http=guarded_protocol(settings),
        ws_max_size=settings.max_frame_bytes,
        ws_ping_interval=20.0, ws_ping_timeout=20.0,
        timeout_keep_alive=max(1, round(settings.keep_alive_s)),
        limit_concurrency=settings.max_connections,
        backlog=min(2048, settings.max_connections),
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=",".join(settings.trusted_proxies) or None,
    )
    install_log_filters()
    return config


QUERY = re.compile(r"(/[^\s?\"']*)\?[^\s\"']*")  # a path's query string, up to a space or a quote
LOGGERS_WITH_PATHS = ("uvicorn.access", "uvicorn.error")  # HTTP lines; WebSocket handshake lines


def install_log_filters() -> None:
    """Keep query strings (game tokens, transcript keys) out of uvicorn's log lines: its access
    log and the ``"WebSocket /path?query" [accepted]`` lines it writes to ``uvicorn.error``, on the
    loggers and on their handlers (records that reach them from below too). Idempotent."""
    for name in LOGGERS_WITH_PATHS:
        logger = logging.getLogger(name)
        for target in (logger, *logger.handlers):
            if drop_query_strings not in target.filters:
                target.addFilter(drop_query_strings)


def drop_query_strings(record: logging.LogRecord) -> bool:
    """Log filter: ``/v1/play/abc?token=...`` is logged as ``/v1/play/abc``, in the message and
    in each of its string arguments."""
    if isinstance(record.msg, str) and "?" in record.msg:
        record.msg = QUERY.sub(r"\1", record.msg)
    if isinstance(record.args, tuple):
        record.args = tuple(QUERY.sub(r"\1", a) if isinstance(a, str) and "?" in a else a
                            for a in record.args)
    elif isinstance(record.args, dict):
        record.args = {k: QUERY.sub(r"\1", v) if isinstance(v, str) and "?" in v else v
                       for k, v in record.args.items()}
    return True


def guarded_protocol(settings: Settings) -> type:
    """uvicorn's HTTP protocol with a deadline for each request head and a per-address cap."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    head_timeout, per_client = settings.header_timeout_s, settings.max_client_connections
    open_by_client: Counter[str] = Counter()

    class GuardedProtocol(HttpToolsProtocol):
        """Closes a connection whose request head does not arrive in time (408), or that is
        one too many from its address."""

        head_timer: asyncio.TimerHandle | None = None
        counted: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family == socket.AF_UNIX:
                return  # a sibling worker's relay (service/workers.py): its client is counted there
            host = self.client[0] if self.client else "?"
            if open_by_client[host] >= per_client:
                transport.close()
                return
            open_by_client[host] += 1
            self.counted = host
            self._arm()

        def _arm(self) -> None:
            if self.head_timer is None:
                self.head_timer = self.loop.call_later(head_timeout, self._head_timed_out)

        def _disarm(self) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def _uncount(self) -> None:
            if self.counted is not None:
                open_by_client[self.counted] -= 1
                if open_by_client[self.counted] <= 0:
                    del open_by_client[self.counted]
                self.counted = None

        def _head_timed_out(self) -> None:
            self.head_timer = None
            if not self.transport.is_closing():
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\n"
                                     b"content-length: 0\r\n\r\n")
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:
                self._arm()  # bytes of a new request head: it has head_timeout to complete
            super().data_received(data)

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def handle_websocket_upgrade(self) -> None:
            self._disarm()
            self._uncount()  # the socket now belongs to the WebSocket protocol
            super().handle_websocket_upgrade()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            self._uncount()
            super().connection_lost(exc)

    return GuardedProtocol


def supervise(host: str, port: int, log_level: str, count: int, backlog: int) -> int:
    """Run ``count`` workers on ``host:port`` until a signal; returns the exit status."""
    from store import StoreSettings, open_store

    open_store(StoreSettings.from_env()).close()  # created or migrated once; a bad one stops here
    given = os.environ.get(ENV_FOLDER)
    folder = Path(given) if given else Path(tempfile.mkdtemp(prefix="griffon-workers-"))
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    environ = {**os.environ, ENV_COUNT: str(count), ENV_FOLDER: str(folder),
               ENV_SECRET: secrets.token_urlsafe(32)}
    lifeline, ours = os.pipe()  # workers read lifeline; ours closes only when this process ends
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _: stopping.append(signum))

    def start(index: int) -> subprocess.Popen:
        ready_marker(folder, index).unlink(missing_ok=True)
        command = [sys.executable, "-m", "griffon.worker_process", "--log-level", log_level,
                   "--listen", f"{host}:{port}:{backlog}", "--lifeline", str(lifeline)]
        return subprocess.Popen(command, env={**environ, ENV_INDEX: str(index)}, pass_fds=(lifeline,))

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
        os.close(lifeline)
        os.close(ours)
        if not given:
            shutil.rmtree(folder, ignore_errors=True)
    return status


def ready_marker(folder: Path, index: int) -> Path:
    """The file worker ``index`` creates once it serves."""
    return folder / f"ready-{index}"


def main() -> None:
    """``python -m griffon.serve --host H --port P``: the same server as `griffon serve`."""
    typer.run(serve)


if __name__ == "__main__":
    main()
