"""The Griffon web app: ``create_app()`` assembles routers, limits, security headers and errors.

Run it with ``griffon serve`` (which also sets uvicorn's timeouts and WebSocket size from the
settings: :mod:`griffon.serve`) or ``uvicorn service.app:create_app --factory``.

Shared objects, created once at start-up (lifespan), reach routes as typed dependencies:

- :class:`service.shared.Shared` (``SharedDep``): the settings, the loaded ``model.Guesser``,
  the ``vocab.Vocabulary``, the :class:`service.inference.BatchInference` (batched inference,
  fair preprocessing pool) and the per-client point budgets.
- :class:`service.bot.routes.BotRegistry` (``BotsDep``): live bot sessions and transcripts.
- ``app.state.store``: the database (:mod:`store`; ``GRIFFON_DB_URL``, else
  ``GRIFFON_DB_DIR/griffon.db``), opened by ``create_app`` itself, so that a corrupt or
  unreachable database stops ``griffon serve`` at once with its message (no traceback) and is
  never overwritten. Pruned at start and hourly (``GRIFFON_RETAIN_*``); bot transcripts are
  saved to it (:class:`store.transcripts.TranscriptArchive`); the bot rooms' API keys are read
  from it (:class:`service.bot.keys.BotKeys`, re-read every ``bot.keys_refresh_s``).

Features: the HTTP API (:mod:`service.api`), the bot socket (:mod:`service.bot`) and the games
played in the browser (:mod:`service.play`) are routers included here. The games' settings
(``GRIFFON_PLAY_*``) are read by ``create_app`` next to ``Settings.from_env()``, so that a bad value
stops ``griffon serve`` before the model loads (``app.state.play_settings``); their manager starts
after the shared objects are ready and stops before they are released (also after a start that
failed half-way: everything started is released, in reverse order).

Errors: every failure is JSON ``{"error": code, "message": text}``. Routes raise the typed
:class:`service.errors.ServiceError` family (its status and code; ``Retry-After`` when set);
``DrawingError`` → 422 ``bad_drawing``; request validation → 422 ``invalid_request``; unknown
route → 404 ``not_found``; ``Overloaded`` → 503 ``overloaded``; a `store.StoreError` → 503
``database_unavailable`` with a generic message (the path, host or user only in the server
log); ``InferenceClosed`` → 503 ``shutting_down``; body above ``max_body_bytes`` → 413
``too_large``; a body that stalls for ``body_timeout_s`` → 408 ``timeout``. Anything else is a
bug: 500 ``internal_error``, logged with its traceback, no detail to the client.

Browsers: every response carries ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``,
``Referrer-Policy: no-referrer`` and a Content-Security-Policy that allows only this origin's
scripts, styles and sockets (the API docs pages, which load Swagger UI from a CDN, get a looser
one). CORS and WebSocket ``Origin`` checks allow this origin plus ``allowed_origins``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import re
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from model.strokes import DrawingError
from service import api, demo
from service.bot import routes as bot
from service.bot.keys import BotKeys
from service.capacity import Capacity, ClientRooms, LoopLag
from service.errors import STORE_DOWN, ServiceError
from service.inference import BatchInference, InferenceClosed, Overloaded
from service.placement import Placement, weighted_load
from service.play import web as play
from service.prometheus import Metrics
from service.replicas import Ownership, Replica, ReplicaSettingsError, RoomLeases
from service.replicas import join as join_replicas
from service.settings import Settings
from service.shared import Shared
from service.workers import RelayedClient, Workers
from store import Store, StoreError, StoreSettings, open_store
from store.background import shared_writer
from store.transcripts import TranscriptArchive

log = logging.getLogger("griffon.service")
progress = logging.getLogger("griffon.start")  # the start's steps: `griffon serve` prints them
HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'{sockets}; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")
DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
            "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; img-src 'self' data: "
            "https://fastapi.tiangolo.com; object-src 'none'; frame-ancestors 'none'")
DOCS_PATHS = ("/docs", "/redoc")
CLOSE_FORBIDDEN_ORIGIN = 4403
PRUNE_EVERY_S = 3600.0


def error_body(code: str, message: str) -> dict[str, str]:
    """The JSON body of every error response."""
    return {"error": code, "message": message}


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


def describe_validation(errors: Any) -> str:
    """Pydantic errors as one readable line: ``body.top_k: Input should be ... ; ...``."""
    parts = []
    for error in list(errors)[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', 'invalid')}" if where else error.get("msg", ""))
    return "; ".join(parts) or "invalid request"


class BodyTimeout(ServiceError):
    """The client stopped sending its request body."""

    status, code = 408, "timeout"


class BodyLimit:
    """ASGI middleware: HTTP bodies above ``limit`` bytes get 413 (declared or streamed), and a
    body that goes silent for ``timeout_s`` gets 408 (a slow client cannot hold a request open).

    A declared ``Content-Length`` is checked before reading (the server enforces it); the body
    is then read here, up to the limit, and handed on (so that a stall is a 408 of ours, not a
    parse error of the framework's)."""

    def __init__(self, app: ASGIApp, limit: int, timeout_s: float = 10.0) -> None:
        self.app = app
        self.limit = limit
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        receive = self._timed(receive)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._reject(send, 413, "too_large", f"the request body is larger than {self.limit} bytes")
            return
        if scope.get("method") not in ("GET", "HEAD", "OPTIONS"):
            messages, size = [], 0  # read the body here, up to the limit, each part in time
            while True:
                try:
                    message = await receive()
                except BodyTimeout as error:
                    await self._reject(send, 408, error.code, error.message)
                    return
                messages.append(message)
                size += len(message.get("body", b""))
                if size > self.limit:
                    await self._reject(send, 413, "too_large",
                                       f"the request body is larger than {self.limit} bytes")
                    return
                if message["type"] != "http.request" or not message.get("more_body"):
                    break
            receive = _replay(messages, receive)
        await self.app(scope, receive, send)

    def _timed(self, receive: Receive) -> Receive:
        async def timed() -> Message:
            try:
                return await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                raise BodyTimeout(f"no request data for {self.timeout_s:g} s") from None

        return timed

    async def _reject(self, send: Send, status: int, code: str, message: str) -> None:
        await _error(status, code, message, {"Connection": "close"})({"type": "http"}, _no_receive, send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def same_origin(scope: Scope, allowed: list[str]) -> bool:
    """Whether a request's ``Origin`` (if any) is this server's own or in ``allowed``.

    No ``Origin`` header: not a browser page, allowed. ``"*"`` in ``allowed``: any origin."""
    headers = dict(scope.get("headers") or [])
    origin = headers.get(b"origin")
    if origin is None:
        return True
    text = origin.decode("latin-1")
    if "*" in allowed or text in allowed:
        return True
    host = headers.get(b"host", b"").decode("latin-1").lower()
    return bool(host) and urlsplit(text).netloc.lower() == host


class BrowserGuard:
    """ASGI middleware: security headers on every HTTP response; WebSocket handshakes from a
    foreign ``Origin``, or beyond ``max_sockets`` open from one address, are refused (HTTP 403)
    before the route runs."""

    def __init__(self, app: ASGIApp, allowed_origins: list[str], max_sockets: int = 256) -> None:
        self.app = app
        self.allowed = allowed_origins
        self.max_sockets = max_sockets
        self.sockets: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._socket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = DOCS_CSP if scope.get("path", "").startswith(DOCS_PATHS) else page_csp(scope)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                headers += [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                            (b"referrer-policy", b"no-referrer"),
                            (b"content-security-policy", csp.encode())]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)

    async def _socket(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = (scope.get("client") or ("?", 0))[0]
        if not same_origin(scope, self.allowed) or self.sockets[client] >= self.max_sockets:
            reason = "origin not allowed" if self.sockets[client] < self.max_sockets else "too many sockets"
            await send({"type": "websocket.close", "code": CLOSE_FORBIDDEN_ORIGIN, "reason": reason})
            return
        self.sockets[client] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.sockets[client] -= 1
            if self.sockets[client] <= 0:
                del self.sockets[client]


def page_csp(scope: Scope) -> str:
    """The page's Content-Security-Policy; its own WebSockets named explicitly (``ws://host``),
    as browsers older than CSP 3 do not count them as ``'self'``."""
    host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
    sockets = f" ws://{host} wss://{host}" if HOST.match(host) else ""
    return CSP.format(sockets=sockets)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        headers = None if exc.retry_after is None else {"Retry-After": str(max(1, round(exc.retry_after)))}
        if exc.status in (429, 503):
            _refused(request, exc.code)
        return _error(exc.status, exc.code, exc.message, headers)

    @app.exception_handler(DrawingError)
    async def drawing_error(request: Request, exc: DrawingError) -> JSONResponse:
        return _error(422, "bad_drawing", str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_request", describe_validation(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such resource: {request.url.path[:200]}"
        return _error(exc.status_code, code, message, getattr(exc, "headers", None))

    @app.exception_handler(Overloaded)
    async def overloaded(request: Request, exc: Overloaded) -> JSONResponse:
        _refused(request, "overloaded")
        return _error(503, "overloaded", str(exc), {"Retry-After": "1"})

    @app.exception_handler(StoreError)
    async def store_down(request: Request, exc: StoreError) -> JSONResponse:
        log.warning("%s %s: the database failed: %s", request.method, request.url.path, exc)
        _refused(request, "database_unavailable")
        return _error(503, "database_unavailable", STORE_DOWN, {"Retry-After": "30"})

    @app.exception_handler(InferenceClosed)
    async def closed(request: Request, exc: InferenceClosed) -> JSONResponse:
        return _error(503, "shutting_down", str(exc))

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        # Starlette re-raises after this response, so the server logs the traceback once.
        return _error(500, "internal_error", "the server failed on this request; it has been logged")


def capacity(settings: Settings, app: FastAPI, lag: LoopLag | None = None) -> Capacity:
    """The CPU budget shared by the games' tables and the bot rooms (:mod:`service.capacity`)."""

    def open_count(kind: str) -> int:
        return app.state.bots.live_count if kind == "bot" else app.state.play.open_count(kind)

    def held_by(client: str) -> float:
        return app.state.play.held_by(client, budget.costs.of) + budget.costs.bot * rooms.count(client)

    def elsewhere(client: str, what: str) -> int:  # on the sibling workers (service/placement.py)
        placement = app.state.placement
        return placement.elsewhere(client, what) if placement is not None else 0

    def changed() -> None:  # a new bot room: the siblings see it at once
        if app.state.placement is not None:
            app.state.placement.publish_soon()

    rooms = ClientRooms(lambda: app.state.bots.live, changed)
    workers = app.state.workers
    budget = Capacity.from_settings(settings, open_count, share=1 / workers.count if workers else 1.0,
                                    held_by=held_by, rooms=rooms, lag=lag.p99 if lag is not None else None,
                                    acks=app.state.shared.metrics.recent_acks.p99, elsewhere=elsewhere,
                                    cpu_share=lag.cpu.share if lag is not None else None)
    return budget


def client_counts(app: FastAPI) -> dict[str, Counter[str]]:
    """What each client holds on this worker, as its siblings count it (:mod:`service.placement`)."""
    play = app.state.play
    owners = [(client, play.games[gid]) for gid, client in play.owners.items() if gid in play.games]
    rooms = app.state.capacity.rooms
    return {"lobbies": Counter(room.client for room in play.rooms.lobbies.values()),
            "games": Counter(client for client, _ in owners),
            "left": Counter(client for client, game in owners if not game.listeners),
            "bots": rooms.counts() if rooms is not None else Counter()}


def worker_load(app: FastAPI) -> float:
    """This worker's load, as its siblings read it to place a new table (:mod:`service.placement`)."""
    return weighted_load(app.state.play, app.state.bots.live_count)


def _refused(request: Request, reason: str) -> None:
    shared = getattr(request.app.state, "shared", None)
    if shared is not None:
        shared.metrics.refused(reason)


def load_shared(settings: Settings) -> dict[str, Any]:
    """Load the model and the vocabulary (blocking; called once, in a thread, at start-up)."""
    from model import Guesser
    from vocab import load_vocabulary, warm_up

    started = time.perf_counter()
    progress.info("loading the model and preparing its drawing kernels (compiled once on a fresh "
                  "install, about 10 s; read from numba's cache afterwards)...")
    guesser = Guesser.load(settings.model.checkpoint)
    progress.info("model ready (%.1f s); loading the French vocabulary and its matcher...",
                  time.perf_counter() - started)
    vocabulary = load_vocabulary()
    warm_up()
    progress.info("ready (%.1f s since the start of loading)", time.perf_counter() - started)
    return {"guesser": guesser, "vocabulary": vocabulary}


async def start_shared(settings: Settings) -> Shared:
    """The model and vocabulary loaded (in a thread) and the batched inference started."""
    loaded = await asyncio.to_thread(load_shared, settings)
    metrics = Metrics()
    inference = BatchInference(
        loaded["guesser"],
        max_batch=settings.model.max_batch,
        max_queue=settings.model.max_queue,
        batch_wait_s=settings.model.batch_wait_ms / 1000,
        preprocess_threads=settings.model.threads,
        cpu_share=settings.client_cpu_share,
        cpu_burst_s=settings.client_cpu_burst_s,
        on_batch=metrics.batch.observe,
        http_share=settings.model.http_share,
    )
    inference.start()
    metrics.watch(metrics.queue, lambda: inference.pending)
    return Shared(settings, loaded["guesser"], loaded["vocabulary"], inference, time.time(), metrics)


async def prune_forever(store: Store, every_s: float = PRUNE_EVERY_S) -> None:
    """Apply the retention rules now and then every ``every_s`` (off the event loop)."""
    while True:
        try:
            report = await asyncio.to_thread(store.prune)
            if report.games or report.transcripts or report.drawings:
                log.info("database pruned: %s", report)
        except StoreError as error:
            log.warning("database prune failed: %s", error)
        except Exception:  # a bug must not stop the pruning for good (the next one may pass)
            log.exception("database prune failed")
        await asyncio.sleep(every_s)


def create_app(settings: Settings | None = None, store_settings: StoreSettings | None = None) -> FastAPI:
    """The whole service; ``settings`` and ``store_settings`` default to the ``GRIFFON_*``
    environment. Raises a `store.StoreError` when the database cannot be used (bad file, bad URL,
    server down): the server must not start without it."""
    settings = settings or Settings.from_env()
    workers = Workers.current()
    replica = Replica.current()  # one of several servers on one PostgreSQL database (service.replicas)
    play_settings = play.read_settings()
    store_settings = store_settings or StoreSettings.from_env()
    if replica is not None:
        if workers is not None:
            raise ReplicaSettingsError("a replica is one process: run more replicas, not --workers N")
        store_settings = replica.store_settings(store_settings)
    store = open_store(store_settings)
    if replica is not None:  # the leases in place, this replica registered: a wrong secret stops here
        try:
            join_replicas(store, replica)  # type: ignore[arg-type]
        except Exception:
            store.close()
            raise

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        started = time.perf_counter()
        async with contextlib.AsyncExitStack() as release:  # in reverse order; a failed start too
            release.callback(store.close)
            app.state.shared = await start_shared(settings)
            release.push_async_callback(app.state.shared.inference.aclose)
            writer = shared_writer(store, min_interval_s=settings.bot.transcript_save_s,  # one, for all
                                   room_bytes=settings.bot.room_bytes)
            # the last transcripts and drawings reach the database
            release.push_async_callback(asyncio.to_thread, writer.close)
            archive = TranscriptArchive(store, writer, settings.bot.transcript_bytes)
            metrics = app.state.shared.metrics
            keys = BotKeys(store, metrics, settings.bot.keys_required, settings.bot.keys_refresh_s)
            release.push_async_callback(keys.aclose)
            refresher = asyncio.create_task(keys.refresh_forever(), name="bot-keys")
            release.callback(refresher.cancel)
            for what in ("pending", "retries", "failed", "dropped"):
                metrics.watch(metrics.background, functools.partial(getattr, writer, what), what=what)
            # rooms' memory in the database: one process (or one replica) knows which rooms it holds;
            # a replica leases its rooms (service.replicas), renewed with its games' leases
            room_leases = functools.partial(RoomLeases, replica, store) if replica is not None else None
            app.state.bots = bot.BotRegistry(settings, archive, writer, keys=keys, room_leases=room_leases,
                                             rooms=store if workers is None else None)
            upkeep = asyncio.create_task(app.state.bots.upkeep_forever(), name="bot-rooms")
            release.callback(upkeep.cancel)
            metrics.watch(metrics.rooms, lambda: app.state.bots.live_count)
            metrics.watch(metrics.sockets, lambda: app.state.bots.live_count, kind="bot")
            release.push_async_callback(app.state.bots.aclose)
            pruner = asyncio.create_task(prune_forever(store), name="db-prune")
            release.callback(pruner.cancel)
            lag = LoopLag()  # the event loop's lag, measured: admission on a busy host (service/capacity.py)
            lagging = asyncio.create_task(lag.run(), name="loop-lag")
            release.callback(lagging.cancel)
            worker = str(workers.index if workers is not None else 0)
            metrics.watch(metrics.loop_lag, lambda: lag.p99() or 0.0, worker=worker)
            app.state.capacity = capacity(settings, app, lag)  # handed to the game manager, made next
            release.push_async_callback(play.shutdown, app)
            await play.startup(app)
            ownership = app.state.play.ownership
            if ownership is not None:  # a replica (service.replicas)
                for what in Ownership.FIGURES:
                    metrics.watch(metrics.replica, functools.partial(ownership.figure, what), what=what)
            if workers is not None:  # new tables on the least-loaded worker; each client counted on all
                placement = Placement(workers, functools.partial(worker_load, app),
                                      clients=functools.partial(client_counts, app),
                                      placing=settings.worker_placement)
                app.state.placement = placement
                placement.start()
                release.push_async_callback(placement.aclose)
            # What start-up loaded (the vocabulary, the lexicon, the model: most of the heap) lives
            # as long as the process: out of the collector's sight, a full collection costs a few
            # milliseconds instead of pausing every table for a hundred or more.
            gc.collect()
            gc.freeze()
            release.callback(gc.unfreeze)  # an app stopped in a longer process (tests) is collectable
            log.info("griffon service ready in %.1f s", time.perf_counter() - started)
            yield

    app = FastAPI(
        title="Griffon",
        version="1.0",
        summary="An AI player for Kontour and Pictomania: guess/match API and a bot for rooms.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.workers = workers
    app.state.placement = None  # set at start under --workers N (service.placement)
    app.state.replica = replica
    app.state.play_settings = play_settings
    app.state.store = store
    _install_error_handlers(app)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, timeout_s=settings.body_timeout_s)
    app.add_middleware(  # error responses carry CORS headers too
        CORSMiddleware, allow_origins=settings.allowed_origins, allow_methods=["GET", "POST"],
        allow_headers=["Content-Type", "X-Griffon-Key"],
    )
    app.add_middleware(
        BrowserGuard, allowed_origins=settings.allowed_origins, max_sockets=settings.max_client_connections
    )
    app.add_middleware(RelayedClient, workers=workers or replica)  # outermost: a sibling's client, restored
    app.include_router(api.router)
    app.include_router(bot.router)
    app.include_router(play.router)
    app.include_router(demo.router)
    return app
