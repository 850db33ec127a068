"""A game's WebSockets: the frames a person's page sends, read and applied; the frames of the game, sent.

`serve_socket` runs one accepted socket of a seat of a `GameManager`'s game: it sends the game's
frames (`_send_loop`: encoded once each, bounded in bytes waiting) and turns each incoming frame into
a move (`handle_text`: bounded size, rate-limited, guesses at a human pace, NaN, deep nesting and
lone surrogates refused; a table whose frames took more than ``capacity.table_loop_share`` of the event loop
waits before its next one is read); anything wrong gets a typed error frame and the socket stays
open. A socket silent for ``play_limits.idle_timeout_s`` is closed (4408; the page pings every 20 s), one
that does not read its frames is closed with 1013 (the page reconnects); 4410 means the game is
over, 1012 that it moved to another replica (reconnect there).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import WebSocket, WebSocketDisconnect

from games.core import RuleError
from service.errors import RateLimited
from service.frames import FrameError, error_frame, load_json
from service.play.bounds import MAX_GUESS_CHARS
from service.play.manager import GameManager
from service.play.table import HUMAN, GameSession
from service.ratelimit import RateLimit
from service.settings import Settings
from service.shared import client_of

log = logging.getLogger("griffon.play")
CLOSE_UNKNOWN_GAME = 4404
CLOSE_BAD_TOKEN = 4403
CLOSE_EXPIRED = 4410
CLOSE_IDLE = 4408
CLOSE_FULL = 4429
CLOSE_TOO_SLOW = 1013
CLOSE_MOVED = 1012  # the game moved to another replica (service.replicas): reconnect
CLOSE_WAIT_S = 5.0  # how long a socket too slow to read its frames is given to take its close


BAD_FRAME = "bad_frame"  # the code of a games frame the server cannot read
STROKES = ("stroke",)  # timed as a stroke's acknowledgement here without a database, else when written


def read_frame(text: str) -> dict[str, Any]:
    """Parse one client frame (JSON object, no NaN/Infinity, no lone surrogate); raises `FrameError`."""
    try:
        data = load_json(text, reject_constants=True)
    except FrameError as error:
        raise FrameError(BAD_FRAME, error.message) from None
    if not isinstance(data, dict):
        raise FrameError(BAD_FRAME, "a frame must be a JSON object with a 'type'")
    if data.get("type") not in ("move", "ping", "sync", "again"):
        got = str(data.get("type"))[:40]
        expected = "expected 'move', 'ping', 'sync' or 'again'"
        raise FrameError(BAD_FRAME, f"unknown frame type ({expected})", got=got)
    return data


def encode_frame(frame: dict[str, Any]) -> str:
    """A server frame as compact JSON text (orjson: a stroke's update of 1,000 points in a tenth of
    ``json.dumps``'s time; NaN and infinities, which the frames never hold, would be ``null``)."""
    return orjson.dumps(frame, option=orjson.OPT_NON_STR_KEYS).decode()


def handle_text(
    session: GameSession, text: str, guesses: RateLimit | None = None,
    spend: Callable[[int], None] | None = None, seat: str = HUMAN,
    again: Callable[[GameSession, str], dict[str, Any] | None] | None = None,
) -> dict[str, Any] | None:
    """Apply one client frame of `seat`'s socket; returns the frame to send back (error or pong), if any.

    ``guesses`` bounds the typed guesses (a person types a word a second, not fifty); ``spend(n)``
    charges a stroke's points to the client's point budget before any work (`RateLimited`);
    ``again(session, seat)`` plays a room's ended game again (`Rooms.again`: the ``again`` frame)."""
    started = time.perf_counter()
    try:
        data = read_frame(text)
        if data["type"] == "ping":
            return {"type": "pong", "now": round(session.now(), 3)}
        if data["type"] == "again":
            if again is None:
                raise FrameError(BAD_FRAME, "this socket cannot start another game")
            return again(session, seat)
        if data["type"] == "sync":  # the page missed an update: the whole state again
            return session.frame([], seat)
        move = data.get("move")
        if isinstance(move, dict) and move.get("kind") == "guess" and isinstance(move.get("text"), str):
            if len(move["text"]) > MAX_GUESS_CHARS:  # a typed word (Kontour), not a token placed
                raise FrameError(BAD_FRAME, f"a guess holds at most {MAX_GUESS_CHARS} characters")
            if guesses is not None and not guesses.allow():
                return error_frame("rate_limited", "one guess at a time: wait a moment before the next")
        if spend is not None and isinstance(move, dict) and isinstance(move.get("points"), list):
            spend(len(move["points"]))
        session.human_move(move, seat)
        if session.metrics is not None and move.get("kind") in STROKES and session.journal is None:
            session.metrics.stroke_ack.labels(source="play").observe(time.perf_counter() - started)
    except RuleError as error:
        return {"type": "error", **error.to_dict()}
    except FrameError as error:
        return error.to_frame()
    except RateLimited as error:
        frame = error_frame(error.code, error.message)
        if error.retry_after is not None:
            frame["retry_after"] = round(error.retry_after, 1)
        return frame
    except Exception:  # a bug: logged, the player gets a typed frame, the game goes on
        log.exception("game %s: frame handling failed", session.id)
        return error_frame("internal_error", "the server failed on this frame")
    return None


async def _send_loop(
    websocket: WebSocket, queue: asyncio.Queue[dict[str, Any] | None], manager: GameManager,
    session: GameSession,
) -> None:
    """Encode the socket's frames as they come and write them in order; a socket that lets more
    than ``play_limits.send_queue_bytes`` of them wait (it does not read) is let go and closed
    (1013): what one socket holds of the server's memory is bounded in bytes, not only in frames."""
    outbox: deque[str] = deque()
    waiting = 0  # bytes in the outbox
    more = asyncio.Event()
    closing: tuple[int, str] | None = None

    async def write() -> None:
        nonlocal waiting
        while True:
            await more.wait()
            more.clear()
            while outbox:
                await websocket.send_text(outbox[0])
                waiting -= len(outbox.popleft())
            if closing is not None:
                await websocket.close(*closing)
                return

    writer = asyncio.create_task(write())
    try:
        while not writer.done():
            frame = await queue.get()
            if frame is None:
                if session.moved:  # another replica drives it now (service.replicas): reconnect there
                    closing = (CLOSE_MOVED, "the game moved to another server; reconnect")
                elif manager.games.get(session.id) is session:  # dropped for not reading, game goes on
                    closing = (CLOSE_TOO_SLOW, "socket too slow; reconnect")
                else:
                    closing = (CLOSE_EXPIRED, "game closed")
                more.set()
                await writer  # the frames before it, then the close
                return
            started = time.perf_counter()
            text = encode_frame(frame)  # the table's loop time too
            await session.take_turn(time.perf_counter() - started)
            if waiting + len(text) > manager.settings.play_limits.send_queue_bytes:
                manager.refused("too_slow")
                session.detach(queue)  # its seat's frames stop here; the game goes on
                outbox.clear()
                writer.cancel()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(websocket.close(CLOSE_TOO_SLOW, "socket too slow; reconnect"),
                                           CLOSE_WAIT_S)  # a socket that never reads may not take it
                return
            outbox.append(text)
            waiting += len(text)
            more.set()
    finally:
        writer.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await writer


def _reply(
    session: GameSession, text: str, settings: Settings, limit: RateLimit, guesses: RateLimit | None,
    spend: Callable[[int], None] | None = None, seat: str = HUMAN,
    again: Callable[[GameSession, str], dict[str, Any] | None] | None = None,
) -> dict[str, Any] | None:
    if len(text) > settings.max_frame_bytes:
        return error_frame("frame_too_large", f"a frame holds at most {settings.max_frame_bytes} bytes")
    if not limit.allow():
        if limit.warned:
            return None  # one error per flood, not one per dropped frame
        limit.warned = True
        return error_frame("rate_limited", f"at most {settings.max_message_rate:g} frames per second")
    limit.warned = False
    return handle_text(session, text, guesses, spend, seat, again)


async def serve_socket(
    websocket: WebSocket, session: GameSession, manager: GameManager, seat: str = HUMAN
) -> None:
    """Run one accepted socket of `seat` in `session` until it disconnects, idles or the game ends."""
    settings = manager.settings
    manager.joined.add(session.id)
    queue = session.attach(seat)
    sender = asyncio.create_task(_send_loop(websocket, queue, manager, session))
    limit = RateLimit(settings.max_message_rate, settings.max_message_burst)
    spend = None
    if manager.spend_points is not None:
        spend = functools.partial(manager.spend_points, client_of(websocket))
    try:
        while True:
            try:
                message = await asyncio.wait_for(websocket.receive(), settings.play_limits.idle_timeout_s)
            except TimeoutError:
                sender.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sender
                idle = f"no frame for {settings.play_limits.idle_timeout_s:g} s: closing"
                await websocket.send_json(error_frame("idle_timeout", idle))
                await websocket.close(CLOSE_IDLE, "idle timeout")
                break
            if message["type"] == "websocket.disconnect":
                break
            text = message.get("text")
            if text is None:
                text = (message.get("bytes") or b"").decode("utf-8", "replace")
            if session.frozen is not None:
                session.frozen()  # a frame that waited out a freeze: every table stood down first
            if session.moved:  # another replica drives the table: the sender closes with 1012
                continue
            started = time.perf_counter()
            guesses = manager.guesses.get((session.id, seat))
            reply = _reply(session, text, settings, limit, guesses, spend, seat, manager.rooms.again)
            await session.take_turn(time.perf_counter() - started)
            if reply is not None:
                await queue.put(reply)  # a client that does not read is slowed down, not buffered
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        session.detach(queue)
        sender.cancel()
