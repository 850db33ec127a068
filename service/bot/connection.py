"""One bot room's socket: reads frames, enforces limits, dispatches to its session (service.bot.session),
runs the speaking ticker and the bot's drawing turn; the resume of a room held elsewhere (another
worker: relayed; another replica: relayed or taken over from its stored memory).

See `service.bot.routes` for the close codes and the whole picture.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect

from service.bot.drawing import Declined, Step, drawings
from service.bot.keys import KeyRefused, presented_key
from service.bot.protocol import (
    V2_TYPES,
    Bye,
    Clear,
    DrawStop,
    DrawTurn,
    Erase,
    Fill,
    Hello,
    Ping,
    PlayerGuess,
    Points,
    RoundEnd,
    RoundStart,
    StrokeEnd,
    StrokeStart,
    Undo,
    Verdict,
    WholeStroke,
    negotiate,
    parse_frame,
)
from service.bot.registry import BotRegistry
from service.bot.session import BotSession, Frame
from service.frames import FrameError, error_frame
from service.ratelimit import RateLimit
from service.settings import Settings
from service.workers import RELAYED, Workers, relay, relay_to
from store.leases import Lease

log = logging.getLogger("griffon.bot")
CLOSE_IDLE, CLOSE_FLOOD, CLOSE_FULL, CLOSE_KEY_REVOKED = 4408, 4429, 4503, 4403
CLOSE_TRY_LATER = 1013  # the server is at capacity (RFC 6455: try again later)
CLOSE_MOVED = 1012  # the room is driven by another replica now (service.replicas): resume there
RESUME_GRACE_S = 2.0  # how long a resume waits for the old socket's loss to be seen (_old_socket_gone)
CHANGES = (RoundStart, StrokeEnd, WholeStroke, Undo, Clear, PlayerGuess, Verdict, Erase)  # frames that
# change a room's memory (RoundEnd: remembered with its transcript)
FLOOD_FACTOR = 4  # dropped frames, in bursts, beyond a 1/FLOOD_FACTOR share of the rate: closed


class Connection:
    """Reads frames, enforces limits, dispatches to the session, runs the speaking ticker."""

    def __init__(self, ws: WebSocket, session: BotSession, settings: Settings,
                 registry: BotRegistry | None = None, client: str = "?",
                 workers: Workers | None = None) -> None:
        self.ws, self.session, self.settings, self.registry = ws, session, settings, registry
        self.workers = workers  # `griffon serve --workers N`: a resume of another worker's room is relayed
        self.client = client  # the peer address: the room drawings' daily quota
        self.limit = RateLimit(settings.max_message_rate, settings.max_message_burst)
        burst = FLOOD_FACTOR * settings.max_message_burst
        self.flood = RateLimit(settings.max_message_rate / FLOOD_FACTOR, burst)  # dropped frames
        self.last_rate_error = float("-inf")
        self.lock = asyncio.Lock()
        # held from a guess's decision to its frame sent: a round starts or ends only after it
        self.speaking = asyncio.Lock()
        self.open = True
        self.resumable = True  # False after bye or flooding: the session ends with the socket
        self.relayed = False  # the socket was carried to the replica that holds its room
        self.text: str | None = None  # the frame being handled, as received (a hello to relay)
        self.drawing: asyncio.Task[None] | None = None  # the bot's drawing turn being streamed
        self.drawing_turn: Any = None
        self.drawn = 0  # strokes of that turn begun so far

    async def send(self, frame: Frame) -> None:
        """Send one frame (serialised: the reader and the ticker both send)."""
        async with self.lock:
            if self.open:
                await self.ws.send_json(frame)

    async def close(self, code: int, reason: str = "") -> None:
        """Close the socket once."""
        async with self.lock:
            if self.open:
                self.open = False
                with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                    await self.ws.close(code, reason)

    async def run(self) -> None:
        """Serve until the client leaves, says bye, idles or floods."""
        ticker = asyncio.create_task(self._tick())
        try:
            while self.open:
                try:
                    message = await asyncio.wait_for(self.ws.receive(), self.settings.bot.idle_timeout_s)
                except TimeoutError:
                    await self.send(error_frame("idle_timeout", "no frame for "
                                                f"{self.settings.bot.idle_timeout_s:g} s: closing"))
                    await self.close(CLOSE_IDLE, "idle timeout")
                    break
                if message["type"] == "websocket.disconnect":
                    self.open = False
                    break
                await self._handle(message.get("text"), message.get("bytes"))
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            if self.drawing is not None:
                self.drawing.cancel()

    async def _handle(self, text: str | None, data: bytes | None) -> None:
        if not self.limit.allow():  # every frame counts, whatever its type (ping, points...)
            await self._rate_limited()
            return
        if self.session.moved:
            await self._moved()
            return
        try:
            frame = parse_frame(text if data is None else None, self.settings.max_frame_bytes)
            self.text = text
            for reply in await self._dispatch(frame):
                await self.send(reply)
        except FrameError as error:
            await self.send(error.to_frame())
        except (WebSocketDisconnect, asyncio.CancelledError):
            raise
        except Exception:  # a bug: logged once, the room gets a typed frame, the socket lives on
            log.exception("bot session %s: frame handling failed", self.session.id)
            await self.send(error_frame("internal_error", "the server failed on this frame"))

    async def _rate_limited(self) -> None:
        """A dropped frame. Flooding: more dropped frames than the flood bucket holds (4 × burst,
        refilled at a quarter of the rate), whether in a row or between allowed ones."""
        if not self.flood.allow():
            self.resumable = False
            self.session.shared.metrics.refused("flooding")
            await self.send(error_frame("flooding", "too many frames over the rate limit: closing"))
            await self.close(CLOSE_FLOOD, "flooding")
            return
        now = time.monotonic()
        if now - self.last_rate_error >= 1.0:  # one error frame per second at most
            self.last_rate_error = now
            await self.send(error_frame(
                "rate_limited",
                f"more than {self.settings.max_message_rate:g} frames/s: frames are being dropped",
            ))

    async def _dispatch(self, frame: Any) -> list[Frame]:
        s = self.session
        if isinstance(frame, Ping):
            return [{"type": "pong"} | ({"ref": frame.id} if frame.id is not None else {})]
        if isinstance(frame, Hello):
            if s.version is not None:
                raise FrameError("already_greeted", "hello was already received", frame.id)
            return await self._hello(frame)
        if s.version is None:
            raise FrameError("hello_first", "send hello first", frame.id)
        return await self._dispatch_greeted(frame)

    async def _old_socket_gone(self, session: BotSession) -> None:
        """A room that lost its socket may say hello again before this server has seen the loss (a
        busy event loop, a socket closed an instant earlier): wait for the old socket's release, at
        most ``RESUME_GRACE_S``; a socket still open after that keeps its session."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(session.released.wait(), RESUME_GRACE_S)

    async def _moved(self) -> None:
        """Another replica drives this room now: close, for the room to resume over there."""
        self.resumable = False
        await self.close(CLOSE_MOVED, "the room moved to another server: resume")

    async def _hello(self, frame: Hello) -> list[Frame]:
        """Negotiate the version, admit the room (its key, for the session it will hold), then
        resume its session (held here, relayed to the replica holding it, or taken over from its
        stored memory) or welcome a new one."""
        negotiate(frame)  # unsupported_version, or version 2 fields from a version 1 room
        resume = frame.resume
        old = None
        if resume is not None and await self._relayed_to_owner(resume.session):
            return []
        if resume is not None and self.registry is not None:
            found = self.registry.live.get(resume.session)
            if found is not None and found.detached_at is None and found.holds_token(resume.token):
                await self._old_socket_gone(found)
            old = found if found is not None and found.resumable_with(resume.token) else None
            if found is None and (elsewhere := await self._elsewhere(resume.session, resume.token)):
                if elsewhere is True:
                    return []  # relayed, or closed for a retry
                old = elsewhere
        if not await self._admit(frame, old.id if old is not None else self.session.id):
            return []  # a refused resume leaves the old session as it was, waiting out its time
        if old is None and self.registry is not None and self.registry.over_limit():
            limit = self.settings.bot.max_sessions
            self.session.shared.metrics.refused("server_full")
            await self.send(error_frame("server_full", f"the server already holds {limit} bots", frame.id))
            await self.close(CLOSE_FULL, "server full")
            return []
        frames: list[Frame] = []
        if resume is not None:
            taken = None
            if old is not None and self.registry is not None:
                taken = self.registry.resume(resume.session, resume.token)
            if taken is None:
                frames.append(error_frame(
                    "resume_failed", "no session to resume with this id and token (unknown, "
                    f"ended, or lost more than {self.settings.bot.resume_s:g} s ago): a new session starts",
                ) | ({"ref": frame.id} if frame.id is not None else {}))
            else:
                if self.registry is not None:
                    self.registry.forget(self.session)
                self.session = taken
                return await self._welcome(taken.on_hello(frame, resumed=True))
        welcome = self.session.on_hello(frame)
        registry = self.registry
        if registry is not None and registry.room_leases is not None and registry.rooms is not None \
                and self.session.version == 2:
            await registry.room_leases.claim_room(self.session.id)  # before its memory is first written
        return frames + await self._welcome(welcome)

    async def _relayed_to_owner(self, session_id: str) -> bool:
        """Under ``--workers N``, a resume of a room another worker owns (its id says which) is
        relayed there with its hello, for the rest of the socket's life; whether it was."""
        workers = self.workers
        if workers is None or workers.owns(session_id) or self.ws.scope.get(RELAYED):
            return False
        self.relayed, self.open, self.resumable = True, False, False
        await relay(self.ws, workers, workers.owner(session_id), self.client, first=self.text)
        return True

    async def _welcome(self, frames: list[Frame]) -> list[Frame]:
        """The welcome, once the room's memory with its new resume token is stored (a room that
        resumes elsewhere has it); nothing when another replica took the room meanwhile."""
        if self.registry is not None and not await self.registry.remembered(self.session):
            await self._moved()
            return []
        return frames

    async def _elsewhere(self, session_id: str, token: str) -> BotSession | bool | None:
        """A resumed room this process does not hold: relayed to the replica that holds it (True),
        or taken over here from its stored memory (the session), or None (resume_failed)."""
        registry, shared = self.registry, self.session.shared
        assert registry is not None
        found = await registry.locate(shared, session_id, token)
        if isinstance(found, Lease) and registry.room_leases is not None:
            if self.ws.scope.get(RELAYED):  # relayed once already: the room retries
                await self.close(CLOSE_TRY_LATER, "the room is changing servers: resume again")
                return True
            if await relay_to(self.ws, found.address, registry.room_leases.replica.secret, self.client,
                              first=self.text):
                self.relayed, self.open, self.resumable = True, False, False
                return True
            found = await registry.outlast(shared, session_id, token, found)  # its holder is gone
        if isinstance(found, Lease):
            await self.close(CLOSE_TRY_LATER, "the room's server cannot be reached: resume again")
            return True
        return found

    async def _admit(self, frame: Hello, session_id: str) -> bool:
        """Check the room's API key (``hello.key`` or ``Authorization: Bearer``) for the session
        ``session_id``; a refused room gets the error frame and is closed."""
        keys = self.registry.keys if self.registry is not None else None
        if keys is None:
            return True
        try:
            await keys.admit(presented_key(frame.key, self.ws.headers.get("authorization")),
                             session_id, self._key_revoked)
        except KeyRefused as refused:
            await self.send(error_frame(refused.code, refused.message, frame.id))
            await self.close(refused.close_code, refused.code)
            return False
        return True

    async def _key_revoked(self) -> None:
        self.resumable = False  # a revoked key's room ends with its socket: no resume
        await self.send(error_frame("key_revoked", "the API key of this room was revoked: closing"))
        await self.close(CLOSE_KEY_REVOKED, "key_revoked")

    async def _dispatch_greeted(self, frame: Any) -> list[Frame]:
        s = self.session
        keys = self.registry.keys if self.registry is not None else None
        if keys is not None and isinstance(frame, StrokeEnd | WholeStroke):  # the key's strokes per minute
            keys.check_stroke(s, frame.id, whole=isinstance(frame, WholeStroke))
        frames = await self._apply(frame)
        if self.registry is not None and isinstance(frame, CHANGES):
            self.registry.remember(s)  # its memory, off the event loop (the latest replaces a waiting one)
        return frames

    async def _apply(self, frame: Any) -> list[Frame]:
        s = self.session
        if s.version == 1 and frame.type in V2_TYPES:
            raise FrameError("invalid_frame", f"{frame.type} needs protocol version 2", frame.id)
        match frame:
            case Erase():
                return await s.on_erase(frame)
            case Fill():
                return []  # the recognizer reads lines: a fill changes none
            case DrawTurn():
                await asyncio.to_thread(drawings)  # the drawing pack, read once, off the event loop
                stopped = await self._stop_drawing()
                try:
                    steps = s.on_draw_turn(frame)
                except Declined as declined:
                    return [*stopped, {"type": "draw_declined", "turn": frame.turn, "word": frame.word,
                                       "reason": declined.reason, "message": declined.message}]
                for reply in stopped:
                    await self.send(reply)
                self.drawing_turn, self.drawn = frame.turn, 0
                self.drawing = asyncio.create_task(self._draw(steps))
                return []
            case DrawStop():
                return await self._stop_drawing()
            case RoundStart():
                async with self.speaking:  # a guess of the round it replaces is sent before that round ends
                    return s.on_round_start(frame)
            case StrokeStart():
                s.on_stroke_start(frame.x, frame.y, frame.t, frame.id)
                return []
            case Points():
                s.on_points(frame.x, frame.y, frame.t, frame.id)
                return []
            case StrokeEnd():
                return await s.on_stroke_end(frame.id)
            case WholeStroke():
                return await s.add_stroke(frame.stroke, frame.id)
            case Undo():
                return s.on_undo(frame.id)
            case Clear():
                return s.on_clear(frame.id)
            case PlayerGuess():
                return s.on_player_guess(frame)
            case Verdict():
                return s.on_verdict(frame)
            case RoundEnd():
                drawing = s.round_drawing(frame.answer) if frame.drawing_consent else None
                async with self.speaking:  # a guess already decided reaches the room before round_over
                    frames = s.on_round_end(frame)
                if self.registry is not None:
                    self.registry.save(s)
                    self.registry.remember(s)
                    if frame.drawing_consent:
                        kept = drawing is not None and self.registry.keep_drawing(drawing, self.client)
                        frames[0]["drawing_kept"] = kept
                return frames
            case Bye():
                self.resumable = False
                await self.send({"type": "bye"})
                await self.close(1000, "bye")
                return []
        raise FrameError("unknown_type", f"unhandled frame {type(frame).__name__}")

    async def _draw(self, steps: list[Step]) -> None:
        """Send a drawing turn's frames, each at its time."""
        start = time.monotonic()
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            for step in steps:
                delay = start + step.at - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                if step.frame["type"] == "draw_points" and step.frame["stroke"] >= self.drawn:
                    self.drawn = step.frame["stroke"] + 1
                await self.send(step.frame)
        self.drawing = None

    async def _stop_drawing(self) -> list[Frame]:
        """End the drawing turn in progress: its ``draw_done`` (``stopped: true``), or nothing."""
        task, self.drawing = self.drawing, None
        if task is None or task.done():
            return []
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return [{"type": "draw_done", "turn": self.drawing_turn, "strokes": self.drawn, "stopped": True}]

    async def _tick(self) -> None:
        period = self.settings.bot.tick_s
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            while self.open:
                await asyncio.sleep(period)
                if self.session.moved:
                    await self._moved()
                    return
                async with self.speaking:
                    frame = self.session.tick()
                    if frame is None:
                        continue
                    if self.registry is not None and not await self.registry.remembered(self.session):
                        await self._moved()  # the word is not said: another replica drives the room
                        return
                    await self.send(frame)
