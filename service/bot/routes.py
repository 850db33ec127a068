"""The bot player for web rooms: ``WS /v1/bot`` (protocol versions 1 and 2) and its transcripts.

A room connects, says ``hello``, announces rounds, streams the drawing and the other players'
guesses; the bot answers with ``guess`` frames when its policy speaks (see
``docs/BOT_PROTOCOL.md``). ``GET /v1/bot/sessions/{id}?key=...`` shows what one saw and said, to
whoever holds the key the room got in ``welcome``; ``GET /v1/bot/sessions`` lists sessions (live,
then the last ``transcripts_kept`` finished ones) only when ``list_bot_sessions`` is on.
With a database (:class:`store.transcripts.TranscriptArchive`), each transcript is also saved
after round ends (at most every ``transcript_save_s`` per session, the latest snapshot only) and
always when the session ends, off the event loop, and read back from there once it is no longer
in memory (after a restart): retention is the database's (``GRIFFON_RETAIN_TRANSCRIPTS_*``).
A room's drawing (``round_end`` with ``drawing_consent``) is stored only when the server accepts
them (``accept_room_drawings``, off by default) and within ``room_drawings_per_day`` per client
address; ``round_over`` then says ``drawing_kept``.

API keys (service/bot/keys.py, ``BotRegistry.keys``): checked at ``hello``; 4401 no key where one
is required, or an unknown one; 4403 a revoked key (also a live room's, within
``bot_keys_refresh_s``); 4429 over the key's rooms at once. A stroke over its strokes per minute
gets ``quota_exceeded`` and the room stays.

A version 2 session that loses its socket without ``bye`` waits ``bot_resume_s`` for its room to
say ``hello`` with ``resume`` (its id and resume token); meanwhile it still counts toward
``max_bot_sessions``, then it ends as if the socket had closed.

With a database and one process (no ``--workers``), or as a replica (``service.replicas``), a
version 2 room's memory is also kept in the database (``bot_rooms``, `service.bot.memory`), off
the event loop, the latest snapshot per room: after every frame that changes it, and at least
every half ``bot_resume_s`` while the room lives (a row not written for ``bot_resume_s`` plus that
is a dead room's, resumable no longer, and pruned). **Durability:** the welcome (its new resume
token) and every word the bot says reach the room only once the snapshot holding them is
committed; a stroke is stored within the writer's latency (milliseconds), and a room that resumes
is told how many strokes the bot holds (``welcome.round.strokes``: the clients send the others
again). A resume that reaches a process which does not hold the room is relayed to the replica
holding its lease; when none lives (it died, or the server restarted), the room is taken over from
its stored memory: the round goes on with its strokes, the words already said (never said again),
the wrong words heard, the gestures, and its clock. A room that ends for good (``bye``, flooding, a
revoked key, its resume time out) is deleted; a clean shutdown keeps every room's memory for its
resume elsewhere (or after the restart).

Close codes: 1000 after ``bye``; 4408 idle for ``bot_idle_timeout_s``; 4429 a client that keeps
flooding past the rate limit (dropped frames of any type, see :class:`Connection`); 4503 the
server already holds ``max_bot_sessions`` bots; 1013 the server is at capacity (an ``overloaded``
frame with ``retry_after`` comes first: service/capacity.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Header, WebSocket, WebSocketDisconnect
from starlette.requests import HTTPConnection

from service.bot.keys import BotKeys, KeyRefused, presented_key
from service.bot.memory import BadMemory, restore, snapshot
from service.bot.protocol import (
    Bye,
    Clear,
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
    parse_frame,
)
from service.bot.session import BotSession, Frame, Transcript, negotiate
from service.bot.words import WordIndex
from service.capacity import RETRY_AFTER_S, Capacity
from service.errors import NotFound
from service.frames import FrameError, error_frame
from service.ratelimit import RateLimit
from service.settings import Settings
from service.shared import Shared, SharedDep, client_of
from service.workers import RELAYED, relay_to
from store import DrawingRecord, Store, StoreError, token_matches
from store.background import BackgroundWriter
from store.leases import Lease, is_lease_lost
from store.transcripts import TranscriptArchive

if TYPE_CHECKING:
    from service.replicas import Ownership

log = logging.getLogger("griffon.bot")
router = APIRouter(tags=["bot"])
CLOSE_IDLE, CLOSE_FLOOD, CLOSE_FULL, CLOSE_KEY_REVOKED = 4408, 4429, 4503, 4403
CLOSE_TRY_LATER = 1013  # the server is at capacity (RFC 6455: try again later)
CLOSE_MOVED = 1012  # the room is driven by another replica now (service.replicas): resume there
RESUME_GRACE_S = 2.0  # how long a resume waits for the old socket's loss to be seen (_old_socket_gone)
CHANGES = (RoundStart, StrokeEnd, WholeStroke, Undo, Clear, PlayerGuess, Verdict)  # frames that change a
# room's memory (RoundEnd: remembered with its transcript)
FLOOD_FACTOR = 4  # dropped frames, in bursts, beyond a 1/FLOOD_FACTOR share of the rate: closed
MAX_QUOTA_CLIENTS = 100_000  # client addresses counted per day for room drawings (beyond: refused)
DAY_S = 86_400


class BotRegistry:
    """Live bot sessions and the transcripts of finished ones (the newest ``transcripts_kept``)."""

    def __init__(self, settings: Settings, archive: TranscriptArchive | None = None,
                 writer: BackgroundWriter | None = None, clock: Callable[[], float] = time.time,
                 keys: BotKeys | None = None, rooms: Store | None = None) -> None:
        self.settings = settings
        self.rooms = rooms if writer is not None else None  # rooms' memory stored (service.bot.memory)
        self.ownership: Ownership | None = None  # a replica's leases (set at start-up: service.replicas)
        self.remembered_at: dict[str, float] = {}  # session id -> when its memory was last queued
        self.taken_over = self.stood_down = 0
        self.keys = keys  # the rooms' API keys and quotas (None: no database, no keys)
        self.archive = archive  # transcripts in the database: they survive a restart
        self.writer = writer  # consented room drawings (round_end with drawing_consent), off the loop
        self.clock = clock
        self.quota_day = -1
        self.room_drawings: dict[str, int] = {}  # client address -> drawings stored today
        self.live: dict[str, BotSession] = {}  # attached or waiting for a resume (detached)
        self.finished: OrderedDict[str, Transcript] = OrderedDict()
        self.expiries: dict[str, asyncio.TimerHandle] = {}  # detached session -> its end
        self._related: Any = None
        self._words: WordIndex | None = None

    @property
    def live_count(self) -> int:
        """Open bot connections."""
        return len(self.live)

    @property
    def transcript_count(self) -> int:
        """Transcripts readable at ``/v1/bot/sessions``."""
        return len(self.live) + len(self.finished)

    def open(self, shared: Shared) -> BotSession | None:
        """A new session, or None when ``max_bot_sessions`` are already open — not counting one
        place for each session waiting for its room to resume it (a resume needs a connection
        before its hello can name the session: `over_limit` refuses the others at hello)."""
        if len(self.live) >= self.settings.max_bot_sessions + len(self.expiries):
            return None
        if self._words is None:
            self._words = WordIndex(shared.guesser.labels, shared.vocabulary.form_index)
        session = BotSession(shared, secrets.token_hex(6), related=self.related(), words=self._words)
        self.live[session.id] = session
        return session

    def over_limit(self) -> bool:
        """Whether more than ``max_bot_sessions`` sessions are open (a new one and those waiting
        for a resume included)."""
        return len(self.live) > self.settings.max_bot_sessions

    def release(self, session: BotSession, resumable: bool) -> None:
        """The session's socket is gone: keep it ``bot_resume_s`` for a resume when ``resumable``
        (version 2, no ``bye``), else finish it."""
        if not resumable or self.settings.bot_resume_s <= 0 or session.id not in self.live:
            self.finish(session)
            return
        session.detach(time.monotonic())
        loop = asyncio.get_running_loop()
        self.expiries[session.id] = loop.call_later(self.settings.bot_resume_s, self._expire, session)
        self.remember(session)

    def _expire(self, session: BotSession) -> None:
        self.expiries.pop(session.id, None)
        if session.detached_at is not None and self.live.get(session.id) is session:
            self.finish(session)

    def resume(self, session_id: str, token: str) -> BotSession | None:
        """The detached session ``session_id`` if ``token`` is its resume token (it is attached again)."""
        session = self.live.get(session_id)
        if session is None or not session.resumable_with(token):
            return None
        expiry = self.expiries.pop(session_id, None)
        if expiry is not None:
            expiry.cancel()
        session.attach()
        return session

    def forget(self, session: BotSession) -> None:
        """Drop a session that never said hello (its connection resumed another one)."""
        self.live.pop(session.id, None)

    def finish(self, session: BotSession) -> None:
        """Close a session and keep its transcript."""
        expiry = self.expiries.pop(session.id, None)
        if expiry is not None:
            expiry.cancel()
        session.close()
        self.live.pop(session.id, None)
        if self.keys is not None:
            self.keys.release(session.id)
        self.finished[session.id] = session.transcript
        while len(self.finished) > self.settings.transcripts_kept:
            self.finished.popitem(last=False)
        self.save(session, final=True)
        self.forget_memory(session)

    def save(self, session: BotSession, final: bool = False) -> None:
        """Queue the session's transcript for the database (after round ends: throttled, the
        latest snapshot only; at the end: ``final``, always written)."""
        if self.archive is not None:
            self.archive.save(session.transcript, final)

    def keep_drawing(self, drawing: DrawingRecord, client: str) -> bool:
        """Store a room's consented drawing if the server accepts them and `client` is within its
        daily quota; whether it was queued."""
        if not self.settings.accept_room_drawings or self.writer is None:
            return False
        day = int(self.clock() // DAY_S)
        if day != self.quota_day:
            self.quota_day, self.room_drawings = day, {}
        used = self.room_drawings.get(client, 0)
        if used >= self.settings.room_drawings_per_day or (
            used == 0 and len(self.room_drawings) >= MAX_QUOTA_CLIENTS
        ):
            return False
        if not self.writer.add_drawing(drawing):
            return False
        self.room_drawings[client] = used + 1
        return True

    async def stored(self, session_id: str, key: str) -> Frame | None:
        """A transcript no longer in memory (e.g. from before a restart), read from the database."""
        if self.archive is None or not key:
            return None
        return await asyncio.to_thread(self.archive.get, session_id[:64], key)

    def transcript(self, session_id: str, key: str) -> Transcript | None:
        """The transcript of a live or finished session, if ``key`` is its key."""
        live = self.live.get(session_id)
        found = live.transcript if live is not None else self.finished.get(session_id)
        return found if found is not None and found.readable_with(key) else None

    def summaries(self) -> list[Frame]:
        """Every known session, newest first."""
        every = [s.transcript for s in self.live.values()] + list(self.finished.values())
        return [t.summary() for t in sorted(every, key=lambda t: -t.started_at)]

    def related(self) -> Callable[[str], Any]:
        """Words related to a word: sharing a theme side of the Pictomania deck."""
        if self._related is None:
            from games.words import load_game_words  # the one relation map (games.words)

            self._related = load_game_words().related
        return self._related

    async def aclose(self) -> None:
        """Shutdown: finish every live session; a room whose memory is stored is kept there
        instead (detached), for its resume on another replica or after the restart."""
        for session in list(self.live.values()):
            if self._stored(session):
                expiry = self.expiries.pop(session.id, None)
                if expiry is not None:
                    expiry.cancel()
                if session.detached_at is None:
                    session.detach(time.monotonic())
                self.remember(session)
                self.save(session, final=True)
                self.live.pop(session.id, None)
                if self.keys is not None:
                    self.keys.release(session.id)
            else:
                self.finish(session)  # the final transcripts: written when the app closes the writer

    # -- rooms' memory in the database (service.bot.memory) ----------------------------------------
    def _stored(self, session: BotSession) -> bool:
        """Whether the room's memory is kept in the database (a room that may resume)."""
        return (self.rooms is not None and self.settings.bot_resume_s > 0 and session.version == 2
                and not session.moved)

    def remember(self, session: BotSession) -> Future[None] | None:
        """Queue the room's memory for the database (the latest replaces a waiting one); the
        future is done once it is committed. None: not stored (version 1, no database...)."""
        if not self._stored(session) or self.writer is None or self.live.get(session.id) is not session:
            return None
        room = self.keys.rooms.get(session.id) if self.keys is not None else None
        future = self.writer.save_room(snapshot(session, room.key.id if room is not None else None))
        self.remembered_at[session.id] = time.monotonic()
        loop = asyncio.get_running_loop()

        def written(done: Future[None]) -> None:  # on the writer's thread
            error = done.exception()
            if error is not None and is_lease_lost(error):
                loop.call_soon_threadsafe(self.stand_down, session.id)

        future.add_done_callback(written)
        return future

    async def remembered(self, session: BotSession) -> bool:
        """Queue the room's memory and wait until it is committed; False when another replica
        took the room (the fence refused it: the session stands down). A database that cannot
        write is logged: the room goes on (its memory lives here)."""
        future = self.remember(session)
        if future is None:
            return not session.moved
        try:
            await asyncio.wrap_future(future)
        except Exception as error:  # the store's refusal, or a record it could not write
            if is_lease_lost(error):
                self.stand_down(session.id)
                return False
            log.warning("bot room %s: memory not stored: %s", session.id, error)
        return not session.moved

    def forget_memory(self, session: BotSession) -> None:
        """A room ended for good: its stored memory and its lease go."""
        self.remembered_at.pop(session.id, None)
        if self._stored(session) and self.writer is not None:
            self.writer.delete_room(session.id)
            if self.ownership is not None:
                self.ownership.room_over(session.id)

    def stand_down(self, session_id: str) -> None:
        """Another replica took this room (its lease, the fence): stop driving it without writing;
        its socket closes with 1012 and the room resumes over there."""
        session = self.live.pop(session_id, None)
        if session is None or session.moved:
            return
        session.moved = True
        self.stood_down += 1
        expiry = self.expiries.pop(session_id, None)
        if expiry is not None:
            expiry.cancel()
        if self.keys is not None:
            self.keys.release(session_id, keep_row=True)
        if self.ownership is not None:
            self.ownership.room_gone(session_id)
        self.remembered_at.pop(session_id, None)
        log.warning("bot room %s: driven by another replica now; standing down", session_id)

    def refresh_every(self) -> float:
        """Seconds between two writes of a live room whose memory did not change."""
        return max(1.0, min(30.0, self.settings.bot_resume_s / 2))

    async def upkeep(self) -> None:
        """Write again the memory of the live rooms not written for a while (a row not written
        for long is a dead room's), and delete the dead rooms' rows."""
        if self.rooms is None:
            return
        every = self.refresh_every()
        now = time.monotonic()
        for session in list(self.live.values()):
            if now - self.remembered_at.get(session.id, float("-inf")) >= every:
                self.remember(session)
        try:
            await asyncio.to_thread(self.rooms.prune_bot_rooms, self.settings.bot_resume_s + 2 * every)
        except StoreError as error:
            log.warning("bot rooms: prune failed: %s", error)

    async def upkeep_forever(self) -> None:
        """:meth:`upkeep` every :meth:`refresh_every` / 2 seconds."""
        while True:
            await asyncio.sleep(self.refresh_every() / 2)
            try:
                await self.upkeep()
            except Exception:  # a bug must not stop the upkeep for good
                log.exception("bot rooms: upkeep failed")

    async def locate(self, shared: Shared, session_id: str, token: str) -> BotSession | Lease | None:
        """Where a room resuming ``session_id`` is driven when this process does not hold it: the
        lease of the replica that does (relay there; the room tries again while that lease expires
        unrenewed), or the room taken over here from its stored memory (detached: `resume` attaches
        it), or None (unknown, ended, expired, bad token: the room starts afresh)."""
        if self.rooms is None or session_id in self.live or session_id in self.finished:
            return None
        if self.ownership is not None and (lease := await self.ownership.room_holder(session_id)) is not None:
            return lease
        stored = await self._load(session_id, token)
        if stored is None:
            return None
        if self.ownership is not None:
            lease = await self.ownership.claim_room(session_id)
            if lease is None or lease.holder != self.ownership.replica.holder:
                # another's, live or expiring between the claim and the read: the room tries again
                return lease
            stored = await self._load(session_id, token)  # the latest, now that it is ours
            if stored is None:
                self.ownership.room_over(session_id)
                return None
        if session_id in self.live:  # taken over meanwhile by another resume on this process
            return None
        session = BotSession(shared, session_id, related=self.related(), words=self._words_of(shared))
        earlier = None
        if self.archive is not None:
            with contextlib.suppress(StoreError):
                found = await asyncio.to_thread(self.archive.store.load_transcript, session_id)
                earlier = found.events if found is not None else None
        try:
            await restore(session, stored, token, earlier)
        except BadMemory as error:
            log.warning("bot room %s: cannot be taken over: %s", session_id, error)
            if self.ownership is not None:
                self.ownership.room_over(session_id)
            return None
        if session_id in self.live:
            return None
        session.resume_token = token
        self.live[session_id] = session
        session.detach(time.monotonic())
        loop = asyncio.get_running_loop()
        self.expiries[session_id] = loop.call_later(self.settings.bot_resume_s, self._expire, session)
        self.taken_over += 1
        log.info("bot room %s: taken over from its stored memory (%.1f s old)", session_id, stored.age)
        return session

    async def outlast(self, shared: Shared, session_id: str, token: str,
                      lease: Lease) -> BotSession | Lease | None:
        """The holder of ``lease`` cannot be reached (it died): wait for its lease to run out,
        then `locate` the room again (taken over here, most often)."""
        assert self.ownership is not None
        leases = self.ownership.leases
        left = lease.expires_at - await asyncio.to_thread(leases.now)
        await asyncio.sleep(min(max(0.0, left) + 0.05, leases.lease_s + 0.5))
        return await self.locate(shared, session_id, token)

    async def _load(self, session_id: str, token: str) -> Any:
        """The stored memory of ``session_id`` if ``token`` opens it and it is fresh enough."""
        assert self.rooms is not None
        try:
            stored = await asyncio.to_thread(self.rooms.load_bot_room, session_id[:64])
        except StoreError as error:
            log.warning("bot room %s: memory not read: %s", session_id[:64], error)
            return None
        if stored is None or not token_matches(token, stored.token_hash):
            return None
        if stored.age > self.settings.bot_resume_s + self.refresh_every():
            return None
        return stored

    def _words_of(self, shared: Shared) -> WordIndex:
        if self._words is None:
            self._words = WordIndex(shared.guesser.labels, shared.vocabulary.form_index)
        return self._words


class Connection:
    """Reads frames, enforces limits, dispatches to the session, runs the speaking ticker."""

    def __init__(self, ws: WebSocket, session: BotSession, settings: Settings,
                 registry: BotRegistry | None = None, client: str = "?") -> None:
        self.ws, self.session, self.settings, self.registry = ws, session, settings, registry
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
                    message = await asyncio.wait_for(self.ws.receive(), self.settings.bot_idle_timeout_s)
                except TimeoutError:
                    await self.send(error_frame("idle_timeout", "no frame for "
                                                f"{self.settings.bot_idle_timeout_s:g} s: closing"))
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
            limit = self.settings.max_bot_sessions
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
                    f"ended, or lost more than {self.settings.bot_resume_s:g} s ago): a new session starts",
                ) | ({"ref": frame.id} if frame.id is not None else {}))
            else:
                if self.registry is not None:
                    self.registry.forget(self.session)
                self.session = taken
                return await self._welcome(taken.on_hello(frame, resumed=True))
        welcome = self.session.on_hello(frame)
        registry = self.registry
        if registry is not None and registry.ownership is not None and registry.rooms is not None \
                and self.session.version == 2:
            await registry.ownership.claim_room(self.session.id)  # before its memory is first written
        return frames + await self._welcome(welcome)

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
        if isinstance(found, Lease) and registry.ownership is not None:
            if self.ws.scope.get(RELAYED):  # relayed once already: the room retries
                await self.close(CLOSE_TRY_LATER, "the room is changing servers: resume again")
                return True
            if await relay_to(self.ws, found.address, registry.ownership.replica.secret, self.client,
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
        match frame:
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

    async def _tick(self) -> None:
        period = self.settings.bot_tick_s
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


def get_bots(connection: HTTPConnection) -> BotRegistry:
    """The app's :class:`BotRegistry` (a FastAPI dependency)."""
    return connection.app.state.bots


BotsDep = Annotated[BotRegistry, Depends(get_bots)]


@router.websocket("/v1/bot")
async def bot_socket(ws: WebSocket, shared: SharedDep, registry: BotsDep) -> None:
    """A bot player for one room (see docs/BOT_PROTOCOL.md)."""
    await ws.accept()
    client = client_of(ws)
    capacity: Capacity | None = getattr(ws.app.state, "capacity", None)
    refusal = capacity.refusal("bot", client=client) if capacity is not None else None
    if refusal is not None:  # the house's budget, or this address's share of it (service/capacity.py)
        shared.metrics.refused("server_busy")
        await ws.send_json(error_frame("overloaded", refusal) | {"retry_after": RETRY_AFTER_S})
        await ws.close(CLOSE_TRY_LATER, "at capacity")
        return
    session = registry.open(shared)
    if session is None:
        limit = registry.settings.max_bot_sessions
        shared.metrics.refused("server_full")
        await ws.send_json(error_frame("server_full", f"the server already holds {limit} bots"))
        await ws.close(CLOSE_FULL, "server full")
        return
    if capacity is not None and capacity.rooms is not None:
        capacity.rooms.add(session.id, client)
    connection = Connection(ws, session, registry.settings, registry, client)
    try:
        await connection.run()
    except WebSocketDisconnect:
        pass
    finally:  # the connection's session: the one it resumed, if it did
        session = connection.session
        if connection.relayed or session.moved:
            registry.forget(session)
        else:
            registry.release(session, connection.resumable and session.version == 2)


@router.get("/v1/bot/sessions")
async def bot_sessions(registry: BotsDep) -> dict[str, Any]:
    """Bot sessions, newest first (only when ``GRIFFON_LIST_BOT_SESSIONS`` is on)."""
    if not registry.settings.list_bot_sessions:
        raise NotFound("the list of bot sessions is not public on this server "
                       "(GRIFFON_LIST_BOT_SESSIONS); read one with its key")
    sessions = registry.summaries()
    return {"count": len(sessions), "sessions": sessions}


@router.get("/v1/bot/sessions/{session_id}")
async def bot_transcript(
    session_id: str, registry: BotsDep, key: str = "",
    x_griffon_key: Annotated[str, Header()] = "",
) -> dict[str, Any]:
    """What one bot session saw and said, turn by turn (``?key=`` or ``X-Griffon-Key``: its key)."""
    transcript = registry.transcript(session_id, key or x_griffon_key)
    if transcript is None:
        stored = await registry.stored(session_id, key or x_griffon_key)
        if stored is not None:
            return stored
        kept = registry.settings.transcripts_kept
        raise NotFound(f"no bot session {session_id[:40]!r} readable with this key (the last {kept} "
                       "finished sessions are kept)", code="unknown_session")
    return transcript.to_dict()
