"""The Griffon web app: ``create_app()`` assembles routers, limits and error handling.

Run it with ``griffon serve`` or ``uvicorn service.app:create_app --factory``.

Shared objects, created once at start-up (lifespan) and put on ``app.state``:

- ``app.state.settings`` — :class:`service.settings.Settings` (``GRIFFON_*`` variables).
- ``app.state.guesser`` — the loaded ``model.Guesser`` (``settings.model`` or the shipped weights).
- ``app.state.inference`` — :class:`service.inference.BatchInference`: await
  ``probabilities(images)`` for shared batched inference, ``run_cpu(fn, *args)`` for
  preprocessing (``guesser.prepare``, ``GuessSession.stage``) off the event loop.
- ``app.state.vocabulary`` — ``vocab.Vocabulary`` (French words, ``french(key)``...).
- ``app.state.bots`` — :class:`service.bot.BotRegistry` (live bot sessions and transcripts).

Extension point: if a module ``service.play`` exists, its ``router`` (a FastAPI ``APIRouter``)
is included as is, so the solo games plug in without editing this file. It may also define
``async def startup(app)`` and ``async def shutdown(app)``, awaited after the shared objects are
ready and before they are released.

Errors: every failure is JSON ``{"error": code, "message": text}``. Raise
:class:`service.schemas.ApiError` (status, code, message) from routes; ``DrawingError`` → 422
``bad_drawing``; other ``ValueError`` → 422 ``bad_value``; request validation → 422
``invalid_request``; unknown route → 404 ``not_found``; ``Overloaded`` → 503 ``overloaded``;
body above ``max_body_bytes`` → 413 ``too_large``.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from model.strokes import DrawingError
from service.inference import BatchInference, InferenceClosed, Overloaded
from service.schemas import ApiError
from service.settings import Settings

log = logging.getLogger("griffon.service")
PLAY_MODULE = "service.play"
HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


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


class BodyLimit:
    """ASGI middleware: HTTP bodies above ``limit`` bytes get 413 (declared or streamed).

    A declared ``Content-Length`` is checked before reading (the server enforces it); a body
    without one (chunked) is read here, up to the limit, then handed on."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._reject(send)
            return
        if declared is None and scope.get("method") not in ("GET", "HEAD", "OPTIONS"):
            messages, size = [], 0  # streamed (chunked) body: read it here, up to the limit
            while True:
                message = await receive()
                messages.append(message)
                size += len(message.get("body", b""))
                if size > self.limit:
                    await self._reject(send)
                    return
                if message["type"] != "http.request" or not message.get("more_body"):
                    break
            receive = _replay(messages, receive)
        await self.app(scope, receive, send)

    async def _reject(self, send: Send) -> None:
        response = _error(413, "too_large", f"the request body is larger than {self.limit} bytes")
        await response({"type": "http"}, _no_receive, send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.message)

    @app.exception_handler(DrawingError)
    async def drawing_error(request: Request, exc: DrawingError) -> JSONResponse:
        return _error(422, "bad_drawing", str(exc))

    @app.exception_handler(ValueError)
    async def value_error(request: Request, exc: ValueError) -> JSONResponse:
        return _error(422, "bad_value", str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_request", describe_validation(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such resource: {request.url.path}"
        return _error(exc.status_code, code, message, getattr(exc, "headers", None))

    @app.exception_handler(Overloaded)
    async def overloaded(request: Request, exc: Overloaded) -> JSONResponse:
        return _error(503, "overloaded", str(exc), {"Retry-After": "1"})

    @app.exception_handler(InferenceClosed)
    async def closed(request: Request, exc: InferenceClosed) -> JSONResponse:
        return _error(503, "shutting_down", str(exc))


def load_shared(settings: Settings) -> dict[str, Any]:
    """Load the model and the vocabulary (blocking; called once, in a thread, at start-up)."""
    from model import Guesser
    from vocab import load_vocabulary, warm_up

    guesser = Guesser.load(settings.model)
    vocabulary = load_vocabulary()
    warm_up()
    return {"guesser": guesser, "vocabulary": vocabulary}


def _play_module() -> Any | None:
    if importlib.util.find_spec(PLAY_MODULE) is None:
        return None
    return importlib.import_module(PLAY_MODULE)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The whole service; ``settings`` default to the ``GRIFFON_*`` environment."""
    from service import api, bot

    settings = settings or Settings.from_env()
    play = _play_module()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        started = time.perf_counter()
        shared = await asyncio.to_thread(load_shared, settings)
        app.state.guesser = shared["guesser"]
        app.state.vocabulary = shared["vocabulary"]
        app.state.inference = BatchInference(
            app.state.guesser,
            max_batch=settings.max_batch,
            max_queue=settings.max_queue,
            batch_wait_s=settings.batch_wait_ms / 1000,
            preprocess_threads=settings.preprocess_threads,
        )
        app.state.inference.start()
        app.state.bots = bot.BotRegistry(settings)
        app.state.started_at = time.time()
        log.info("griffon service ready in %.1f s", time.perf_counter() - started)
        if play is not None and hasattr(play, "startup"):
            await play.startup(app)
        try:
            yield
        finally:
            if play is not None and hasattr(play, "shutdown"):
                await play.shutdown(app)
            await app.state.bots.aclose()
            await app.state.inference.aclose()

    app = FastAPI(
        title="Griffon",
        version="1.0",
        summary="An AI player for Kontour and Pictomania: guess/match API and a bot for rooms.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    _install_error_handlers(app)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(  # outermost, so that error responses carry CORS headers too
        CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"], allow_headers=["*"]
    )
    app.include_router(api.router)
    app.include_router(bot.router)
    if play is not None:
        app.include_router(play.router)
    return app
