"""The service for tests: the tight settings of the shared real server, and the app in process.

Real servers and PostgreSQL start through :mod:`griffon.launch` (``running_server``,
``running_postgres``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
