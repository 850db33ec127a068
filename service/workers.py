"""Several worker processes behind one port: who owns a game, and the relay to its owner.

``griffon serve --workers N`` starts N processes that accept from the same listening socket, so a
connection lands on any of them. A game lives in one process, its **owner**, chosen by its id
(:meth:`Workers.owner`: a hash of the id, so every worker knows it without asking); a worker
creates only ids it owns. A new game or room is made on the least-loaded worker
(`service.placement`: the worker that received ``POST /v1/play`` or ``POST /v1/rooms`` forwards it
to that worker's private socket, with the same relay headers). A game's socket that lands on
another worker is **relayed** to the owner over the owner's private Unix socket (:func:`relay`):
the page and the bot client see one server. The relayed handshake or request carries the client's
address and ``Origin`` and the workers' shared secret (:class:`RelayedClient` restores the address),
so budgets and checks see the real client.

Bot rooms live where their socket lands, on ids their worker owns: a room's resuming ``hello``
that lands on another worker is relayed to the owner like a game's socket (rooms' memory is
stored for a single process or for replicas); stateless HTTP calls are served by any worker.
The workers share the database: each resumes the stored games it owns at start.

Replicas (`service.replicas`: several servers on one PostgreSQL database) relay a game's socket,
or a bot room's resuming ``hello``, to the replica that holds its lease the same way, over TCP
(:func:`relay_to`), with their own secret.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import websockets
import websockets.asyncio.client
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from websockets.asyncio.client import ClientConnection, unix_connect

ENV_INDEX, ENV_COUNT, ENV_FOLDER, ENV_SECRET = (
    "GRIFFON_WORKER_INDEX", "GRIFFON_WORKER_COUNT", "GRIFFON_WORKER_DIR", "GRIFFON_WORKER_SECRET"
)
RELAY_HEADER = "x-griffon-relay"  # the workers' secret: the handshake comes from a sibling
CLIENT_HEADER = "x-griffon-client"  # the address the sibling's client connected from
HOST_HEADER = "x-griffon-host"  # the Host the client asked for (its Origin is checked against it)
RELAYED = "griffon.relayed"  # scope key: this handshake came from a sibling (never relayed again)
RELAY_CLOSE = 1011  # the owner could not be reached
RELAY_PING_S = 1.0  # a replica relaying a socket pings the holder this often...
RELAY_PING_TIMEOUT_S = 2.0  # ...and closes the socket (1011: the page reconnects) without an answer
WRONG_SECRET_EVERY_S = 60.0  # a relay with another secret is logged at most this often
log = logging.getLogger("griffon.service")


@dataclass(frozen=True)
class Workers:
    """This process's place among the workers: its index, their count, where their private
    sockets are, and the secret they share."""

    index: int
    count: int
    folder: Path
    secret: str

    @classmethod
    def current(cls, environ: dict[str, str] | None = None) -> Workers | None:
        """The worker set up by ``griffon serve --workers N`` (None: a single process)."""
        env = os.environ if environ is None else environ
        if ENV_INDEX not in env:
            return None
        workers = cls(int(env[ENV_INDEX]), int(env[ENV_COUNT]), Path(env[ENV_FOLDER]), env[ENV_SECRET])
        if not 0 <= workers.index < workers.count:
            raise ValueError(f"worker {workers.index} of {workers.count}")
        return workers

    def owner(self, game_id: str) -> int:
        """The worker that holds the game ``game_id``."""
        return int.from_bytes(hashlib.sha256(game_id.encode()).digest()[:8], "big") % self.count

    def owns(self, game_id: str) -> bool:
        """Whether this worker holds the game ``game_id``."""
        return self.owner(game_id) == self.index

    def socket_path(self, index: int) -> Path:
        """The private Unix socket of worker ``index``."""
        return self.folder / f"worker-{index}.sock"

    def is_sibling(self, token: str | None) -> bool:
        """Whether a handshake's relay header carries the workers' secret."""
        return token is not None and hmac.compare_digest(token.encode(), self.secret.encode())

    async def unreachable(self, timeout_s: float = 1.0) -> list[int]:
        """The sibling workers whose private socket refuses a connection (dead, or gone with a
        supervisor killed outright): the games they hold cannot be played through this one."""

        async def refuses(index: int) -> bool:
            try:
                _, writer = await asyncio.wait_for(
                    asyncio.open_unix_connection(str(self.socket_path(index))), timeout_s)
            except (OSError, TimeoutError):
                return True
            writer.close()
            return False

        others = [i for i in range(self.count) if i != self.index]
        refused = await asyncio.gather(*(refuses(i) for i in others))
        return [i for i, no in zip(others, refused, strict=True) if no]


class Siblings(Protocol):
    """Who may relay a handshake here: `Workers`, or a replica (`service.replicas.Replica`)."""

    def is_sibling(self, token: str | None) -> bool: ...


class RelayedClient:
    """ASGI middleware (outermost): a handshake relayed, or a request forwarded
    (`service.placement`), by a sibling worker or replica keeps its client's address and the
    ``Host`` it asked for (the sibling's own connection is a Unix socket, or a connection to this
    replica's address); the relay headers are dropped."""

    def __init__(self, app: ASGIApp, workers: Siblings | None) -> None:
        self.app, self.workers = app, workers
        self.warned_at = -WRONG_SECRET_EVERY_S  # when a relay with a wrong secret was last logged

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.workers is not None and scope["type"] in ("http", "websocket"):
            headers = dict(scope.get("headers") or [])
            token = headers.get(RELAY_HEADER.encode())
            if token is not None:
                ours = (RELAY_HEADER.encode(), CLIENT_HEADER.encode(), HOST_HEADER.encode())
                kept = [(k, v) for k, v in scope["headers"] if k not in ours]
                scope = {**scope, "headers": kept}
                if self.workers.is_sibling(token.decode("latin-1")):
                    client = headers.get(CLIENT_HEADER.encode(), b"?").decode("latin-1")
                    scope["client"] = (client, 0)
                    scope[RELAYED] = True
                    host = headers.get(HOST_HEADER.encode())
                    if host is not None:
                        scope["headers"] = [(k, v) for k, v in kept if k != b"host"] + [(b"host", host)]
                elif time.monotonic() - self.warned_at >= WRONG_SECRET_EVERY_S:
                    self.warned_at = time.monotonic()  # the balancer strips the header: a sibling sent it
                    log.warning("a relayed %s came with another secret than this server's (is "
                                "GRIFFON_REPLICA_SECRET the same on every replica?): served as a client's",
                                "socket" if scope["type"] == "websocket" else "request")
        await self.app(scope, receive, send)


async def relay(websocket: WebSocket, workers: Workers, owner: int, client: str,
                first: str | None = None) -> None:
    """Carry an accepted socket's frames to and from the same path on worker ``owner``, until
    either side closes; the owner's close code and reason reach the client. ``first``: a frame
    this worker already read (a bot room's resuming ``hello``), sent upstream before the others."""
    path, headers = _relayed(websocket, workers.secret, client)
    try:
        upstream = await unix_connect(
            str(workers.socket_path(owner)), uri=f"ws://worker{path}", additional_headers=headers,
            max_size=None, ping_interval=None,
        )
    except (OSError, websockets.exceptions.WebSocketException):
        await websocket.close(RELAY_CLOSE, "the game's worker cannot be reached; retry")
        return
    await _carry(websocket, upstream, first)


async def relay_to(websocket: WebSocket, address: str, secret: str, client: str,
                   timeout_s: float = 3.0, first: str | None = None) -> bool:
    """`relay` to another replica at ``address`` (host:port) over TCP: the replica that holds the
    game or the bot room (`service.replicas`). False, the socket left open, when that replica
    cannot be reached. ``first``: a frame this replica already read (a bot room's ``hello``),
    sent upstream before the others. The holder is pinged every ``RELAY_PING_S``: one that stops
    answering (frozen: SIGSTOP, a stalled VM) has the socket closed with 1011 within
    ``RELAY_PING_S + RELAY_PING_TIMEOUT_S``, and the page or room comes back through a replica
    that takes the game over once the frozen holder's lease ran out."""
    path, headers = _relayed(websocket, secret, client)
    try:
        upstream = await websockets.asyncio.client.connect(
            f"ws://{address}{path}", additional_headers=headers, max_size=None, open_timeout=timeout_s,
            ping_interval=RELAY_PING_S, ping_timeout=RELAY_PING_TIMEOUT_S, close_timeout=1.0,
        )
    except (OSError, TimeoutError, websockets.exceptions.WebSocketException):
        return False
    await _carry(websocket, upstream, first)
    return True


def _relayed(websocket: WebSocket, secret: str, client: str) -> tuple[str, dict[str, str]]:
    """The path (with its query) and the handshake headers of a relayed socket."""
    path = websocket.url.path + (f"?{websocket.url.query}" if websocket.url.query else "")
    headers = {RELAY_HEADER: secret, CLIENT_HEADER: client}
    for name, header in (("origin", "origin"), ("host", HOST_HEADER)):
        value = websocket.headers.get(name)
        if value is not None:
            headers[header] = value
    return path, headers


async def _carry(websocket: WebSocket, upstream: ClientConnection, first: str | None = None) -> None:
    """Frames both ways until either side closes (``first``: sent upstream before the others)."""
    async with upstream:
        down = asyncio.create_task(_downstream(upstream, websocket))
        try:
            if first is not None:
                await upstream.send(first)
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                data = message.get("text")
                await upstream.send(data if data is not None else message.get("bytes") or b"")
        except (WebSocketDisconnect, websockets.exceptions.ConnectionClosed, RuntimeError):
            pass
        finally:
            down.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await down


async def _downstream(upstream: ClientConnection, websocket: WebSocket) -> None:
    code, reason = 1000, ""
    try:
        async for message in upstream:
            if isinstance(message, str):
                await websocket.send_text(message)
            else:
                await websocket.send_bytes(message)
    except websockets.exceptions.ConnectionClosed:
        pass
    if upstream.close_code is not None:
        code, reason = upstream.close_code, upstream.close_reason or ""
    if websocket.client_state == WebSocketState.CONNECTED:
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await websocket.close(code if code != 1006 else RELAY_CLOSE, reason)
