"""The bot sessions of one server process: live ones (attached, or waiting for their room's resume),
the transcripts of finished ones, the rooms' memory in the database, the consented room drawings.

See `service.bot.routes` for the whole picture (resume, memory, keys, drawings).
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
from typing import TYPE_CHECKING, Any

from service.bot.keys import BotKeys
from service.bot.memory import BadMemory, restore, snapshot
from service.bot.session import BotSession, Frame
from service.bot.transcript import Transcript
from service.bot.word_index import WordIndex
from service.settings import Settings
from service.shared import Shared
from service.workers import Workers
from store import DrawingRecord, Store, StoreError, token_matches
from store.background import BackgroundWriter
from store.leases import Lease, is_lease_lost
from store.transcripts import TranscriptArchive

if TYPE_CHECKING:
    from service.replicas import RoomLeases


log = logging.getLogger("griffon.bot")
MAX_QUOTA_CLIENTS = 100_000  # client addresses counted per day for room drawings (beyond: refused)
DAY_S = 86_400


class BotRegistry:
    """Live bot sessions and the transcripts of finished ones (the newest ``bot.transcripts_kept``)."""

    def __init__(self, settings: Settings, archive: TranscriptArchive | None = None,
                 writer: BackgroundWriter | None = None, clock: Callable[[], float] = time.time,
                 keys: BotKeys | None = None, rooms: Store | None = None,
                 room_leases: Callable[[Callable[[str], None]], RoomLeases] | None = None) -> None:
        """``rooms``: where the rooms' memory is stored (service.bot.memory; None: not stored);
        ``room_leases(stand_down)``: a replica's leases on its bot rooms, built with the registry's
        `stand_down` (`service.replicas.RoomLeases`; None: one server alone)."""
        self.settings = settings
        self.rooms = rooms if writer is not None else None  # rooms' memory stored (service.bot.memory)
        self.room_leases = room_leases(self.stand_down) if room_leases is not None else None
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

    def open(self, shared: Shared, workers: Workers | None = None) -> BotSession | None:
        """A new session, or None when ``bot.max_sessions`` are already open — not counting one
        place for each session waiting for its room to resume it (a resume needs a connection
        before its hello can name the session: `over_limit` refuses the others at hello). Under
        ``workers``, its id is one this worker owns (a resume landing elsewhere is relayed here)."""
        if len(self.live) >= self.settings.bot.max_sessions + len(self.expiries):
            return None
        session_id = secrets.token_hex(6)
        while workers is not None and not workers.owns(session_id):
            session_id = secrets.token_hex(6)
        session = BotSession(shared, session_id, related=self.related(), words=self.words(shared))
        self.live[session.id] = session
        return session

    def over_limit(self) -> bool:
        """Whether more than ``bot.max_sessions`` sessions are open (a new one and those waiting
        for a resume included)."""
        return len(self.live) > self.settings.bot.max_sessions

    def release(self, session: BotSession, resumable: bool) -> None:
        """The session's socket is gone: keep it ``bot.resume_s`` for a resume when ``resumable``
        (version 2, no ``bye``), else finish it."""
        if not resumable or self.settings.bot.resume_s <= 0 or session.id not in self.live:
            self.finish(session)
            return
        session.detach(time.monotonic())
        loop = asyncio.get_running_loop()
        self.expiries[session.id] = loop.call_later(self.settings.bot.resume_s, self._expire, session)
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
        while len(self.finished) > self.settings.bot.transcripts_kept:
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
        if not self.settings.bot.accept_drawings or self.writer is None:
            return False
        day = int(self.clock() // DAY_S)
        if day != self.quota_day:
            self.quota_day, self.room_drawings = day, {}
        used = self.room_drawings.get(client, 0)
        if used >= self.settings.bot.drawings_per_day or (
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
        return (self.rooms is not None and self.settings.bot.resume_s > 0 and session.version == 2
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
            if self.room_leases is not None:
                self.room_leases.room_over(session.id)

    def stand_down(self, session_id: str) -> None:
        """Another replica took this room (its lease, the fence): stop driving it without writing;
        its socket closes with 1012 and the room resumes over there."""
        session = self.live.pop(session_id, None)
        if session is None or not session.hand_over():
            return
        self.stood_down += 1
        expiry = self.expiries.pop(session_id, None)
        if expiry is not None:
            expiry.cancel()
        if self.keys is not None:
            self.keys.release(session_id, keep_row=True)
        if self.room_leases is not None:
            self.room_leases.room_gone(session_id)
        self.remembered_at.pop(session_id, None)
        log.warning("bot room %s: driven by another replica now; standing down", session_id)

    def refresh_every(self) -> float:
        """Seconds between two writes of a live room whose memory did not change."""
        return max(1.0, min(30.0, self.settings.bot.resume_s / 2))

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
            await asyncio.to_thread(self.rooms.prune_bot_rooms, self.settings.bot.resume_s + 2 * every)
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
        leases = self.room_leases
        if leases is not None and (lease := await leases.room_holder(session_id)) is not None:
            return lease
        stored = await self._load(session_id, token)
        if stored is None:
            return None
        if self.room_leases is not None:
            lease = await self.room_leases.claim_room(session_id)
            if lease is None or lease.holder != self.room_leases.replica.holder:
                # another's, live or expiring between the claim and the read: the room tries again
                return lease
            stored = await self._load(session_id, token)  # the latest, now that it is ours
            if stored is None:
                self.room_leases.room_over(session_id)
                return None
        if session_id in self.live:  # taken over meanwhile by another resume on this process
            return None
        session = BotSession(shared, session_id, related=self.related(), words=self.words(shared))
        earlier = None
        if self.archive is not None:
            with contextlib.suppress(StoreError):
                found = await asyncio.to_thread(self.archive.store.load_transcript, session_id)
                earlier = found.events if found is not None else None
        try:
            await restore(session, stored, token, earlier)
        except BadMemory as error:
            log.warning("bot room %s: cannot be taken over: %s", session_id, error)
            if self.room_leases is not None:
                self.room_leases.room_over(session_id)
            return None
        if session_id in self.live:
            return None
        session.resume_token = token
        self.live[session_id] = session
        session.detach(time.monotonic())
        loop = asyncio.get_running_loop()
        self.expiries[session_id] = loop.call_later(self.settings.bot.resume_s, self._expire, session)
        self.taken_over += 1
        log.info("bot room %s: taken over from its stored memory (%.1f s old)", session_id, stored.age)
        return session

    async def outlast(self, shared: Shared, session_id: str, token: str,
                      lease: Lease) -> BotSession | Lease | None:
        """The holder of ``lease`` cannot be reached (it died): wait for its lease to run out,
        then `locate` the room again (taken over here, most often)."""
        assert self.room_leases is not None
        leases = self.room_leases.leases
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
        if stored.age > self.settings.bot.resume_s + self.refresh_every():
            return None
        return stored

    def words(self, shared: Shared) -> WordIndex:
        """The word rule over the model's labels (``service.bot.word_index``), built once."""
        if self._words is None:
            self._words = WordIndex(shared.guesser.labels, shared.vocabulary.lookup)
        return self._words
