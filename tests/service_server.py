"""The service for tests: the tight settings of the shared real server, and the app in process.

Real servers and PostgreSQL start through :mod:`griffon.launch` (``running_server``,
``running_postgres``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from griffon.launch import Server, slowness, tuning

# Small limits and short timeouts: one real server (``tight_server`` in conftest, started with
# `tight_settings`) shared by the bot protocol, solo game and attack tests.
TIGHT = {
    "GRIFFON_MAX_MESSAGE_RATE": "5",
    "GRIFFON_BOT_IDLE_TIMEOUT_S": "2.5",
    "GRIFFON_BOT_MAX_SESSIONS": "3",
    "GRIFFON_PLAY_MAX_GAMES": "2",
    "GRIFFON_PLAY_IDLE_EXPIRY_S": "2",
    "GRIFFON_PLAY_IDLE_TIMEOUT_S": "5",
    "GRIFFON_HEADER_TIMEOUT_S": "1",
    "GRIFFON_BODY_TIMEOUT_S": "1",
    "GRIFFON_KEEP_ALIVE_S": "1",
    "GRIFFON_MAX_CLIENT_CONNECTIONS": "16",
    "GRIFFON_MAX_FRAME_BYTES": "4096",
    "GRIFFON_BOT_TRANSCRIPT_BYTES": "2048",
    **tuning(max_message_burst=5, **{"play_limits.max_game_sockets": 2}),
}
# The timeouts among them, in seconds on a quiet machine.
TIGHT_TIMEOUTS = ("GRIFFON_BOT_IDLE_TIMEOUT_S", "GRIFFON_PLAY_IDLE_EXPIRY_S", "GRIFFON_PLAY_IDLE_TIMEOUT_S",
                  "GRIFFON_HEADER_TIMEOUT_S", "GRIFFON_BODY_TIMEOUT_S", "GRIFFON_KEEP_ALIVE_S")


def tight_settings() -> dict[str, str]:
    """`TIGHT` with its timeouts stretched by the machine's slowness now: on a busy machine a test's
    ordinary request or pause must not look like a stalled client to the server. Tests read the
    values the server runs with here (``tight_env``), formatted as the server writes them."""
    factor = slowness().factor
    return {name: f"{round(float(value) * factor, 1):g}" if name in TIGHT_TIMEOUTS else value
            for name, value in TIGHT.items()}


@contextmanager
def in_process(checkpoint: Path | None = None, **settings: object) -> Iterator[object]:
    """The app in this process (``fastapi.testclient.TestClient``, lifespan run), no sockets.

    ``checkpoint``: the model (unset: the shipped one); ``settings`` are :class:`service.settings.Settings`
    fields, a feature's as a dict of its own (``bot={"tick_s": 0.02}``). For tables of HTTP cases and
    WebSocket conversations that need no real network; keep a few real-server tests too."""
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings
    from store import StoreSettings

    parts = {"model": {"checkpoint": checkpoint}, "capacity": {"lag_ms": 0}}  # lag 0: tests/conftest.py
    settings = {**settings, **{name: {**given, **settings.get(name, {})} for name, given in parts.items()}}  # type: ignore[dict-item]
    with tempfile.TemporaryDirectory(prefix="griffon-test-db-") as folder:
        app = create_app(Settings(**settings), StoreSettings(data_dir=Path(folder)))  # type: ignore[arg-type]
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client


def secret_of(server: Server) -> str:
    """The workers' secret, from a worker's environment (the test runs as the same user)."""
    for pid in Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split():
        for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if entry.startswith(b"GRIFFON_WORKER_SECRET="):
                return entry.split(b"=", 1)[1].decode()
    raise AssertionError("no worker environment")
