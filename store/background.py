"""The one background writer: what the service stores off the event loop, on one thread.

Two kinds of work, both bounded:

- **drawings** (`add_drawing`): a queue; beyond ``max_pending`` waiting, a drawing is dropped and
  counted (`dropped`), never the game slowed down;
- **transcript snapshots** (`save_transcript`): at most one pending per session — a newer snapshot
  replaces the waiting one — and one session's transcript is written at most every
  ``min_interval_s`` (a room sending 30 round ends a second costs one write every few seconds);
  ``final=True`` (the session ended) is written as soon as the thread is free;
- **bot rooms' memory** (`save_room`, `delete_room`): at most one pending per room, the latest
  (a newer snapshot, or the room's deletion, replaces the waiting one), never throttled, written
  first, every pending room in one transaction. Each call returns a `concurrent.futures.Future`
  done once that snapshot, or a newer one of the same room, is committed (or refused: the
  exception, e.g. the replicas' fence, `store.MoveRejected`); the service waits on it before a
  word the bot says reaches the room.

**The database cannot write now** (`StoreUnavailable`: a lock held too long, a server restarting):
what failed goes back in its queue (unless a newer snapshot of the same room or transcript is
waiting) and the thread pauses, 50 ms doubling to `RETRY_MAX_S`, before its next job — a room's
deletion, a final transcript, a drawing already acknowledged are written once the database is back,
never lost to a busy moment. A room's *save* still fails its futures at once (the room goes on,
its memory living in the process) while its record waits for the retry. A refusal for good
(`BadRecord`, the fence's `MoveRejected`) is logged, counted in `failed`, and not retried.

`flush` writes everything pending now (throttled snapshots included) and waits for it; `close`
does the same and stops the thread. Both raise `WriterClosed` rather than wait for ever on a
closed writer or a dead thread. One instance per store is shared by every part of the service
(`shared_writer`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol

from store.bot_rooms import MAX_BOT_ROOM_BYTES
from store.errors import StoreError, StoreUnavailable
from store.records import BotRoomRecord, DrawingRecord, TranscriptRecord

log = logging.getLogger("griffon.store")
MAX_PENDING = 1_000
MIN_INTERVAL_S = 5.0
RETRY_FIRST_S = 0.05  # the pause after a first failed write (the database cannot write now)
RETRY_MAX_S = 1.0  # the longest pause between two tries
RoomJob = dict[str, tuple[BotRoomRecord | None, list[Future[None]]]]  # session -> (latest or None: delete)



class BackgroundStore(Protocol):
    """What the writer writes through (`store.Store`)."""

    def add_drawing(self, record: DrawingRecord, consent: bool, now: float | None = None) -> str: ...

    def save_transcript(self, record: TranscriptRecord, now: float | None = None,
                        max_bytes: int = ...) -> TranscriptRecord: ...

    def save_bot_rooms(self, rooms: Sequence[BotRoomRecord], deleted: Sequence[str] = (),
                       max_bytes: int = ...) -> None: ...

class WriterClosed(StoreError):
    """The background writer was closed (or its thread died): nothing more is written."""


class BackgroundWriter:
    """Writes drawings and transcript snapshots to `store` from one background thread."""

    def __init__(self, store: BackgroundStore, max_pending: int = MAX_PENDING,
                 min_interval_s: float = MIN_INTERVAL_S, clock: Callable[[], float] = time.monotonic,
                 room_bytes: int = MAX_BOT_ROOM_BYTES) -> None:
        """``room_bytes``: the most a bot room's memory may weigh when written."""
        self.store, self.max_pending, self.clock = store, max_pending, clock
        self.min_interval_s = min_interval_s
        self.cond = threading.Condition()
        self.drawings: deque[DrawingRecord] = deque()
        self.snapshots: dict[str, tuple[TranscriptRecord, int, float]] = {}  # id -> (record, max bytes, due)
        self.last_written: dict[str, float] = {}  # session id -> when its transcript was last written
        self.rooms: RoomJob = {}
        self.room_bytes = room_bytes
        self.rooms_written = self.room_batches = 0
        self.retries = 0  # writes tried again after `StoreUnavailable`
        self.pause_s = 0.0  # the pause before the next job (0: the last write went through)
        self.paused_until = float("-inf")  # on `clock`
        self.busy = False
        self.closed = False
        self.dropped = self.failed = 0
        self.drawings_written = self.transcripts_written = 0
        self.thread = threading.Thread(target=self._run, name="griffon-store-writer", daemon=True)
        self.thread.start()

    # -- the event loop's side (never waits on the database) ---------------------------------------
    def add_drawing(self, record: DrawingRecord) -> bool:
        """Queue a consented drawing; False when it was dropped (too many waiting, or closed)."""
        with self.cond:
            if self.closed or len(self.drawings) >= self.max_pending:
                self.dropped += 1
                log.warning("a consented drawing of %r was not stored: %d already waiting (or closed)",
                            record.word, len(self.drawings))
                return False
            self.drawings.append(record)
            self.cond.notify_all()
            return True

    def save_transcript(self, record: TranscriptRecord, max_bytes: int, final: bool = False) -> bool:
        """Queue a transcript snapshot (it replaces the session's waiting one); False when dropped."""
        with self.cond:
            waiting = self.snapshots.get(record.id)
            if self.closed or (waiting is None and len(self.snapshots) >= self.max_pending):
                self.dropped += 1
                log.warning("transcript %s not saved: %d sessions already waiting (or closed)",
                            record.id, len(self.snapshots))
                return False
            now = self.clock()
            if final:
                due = now
            elif waiting is not None:
                due = waiting[2]
            else:
                due = max(now, self.last_written.get(record.id, -self.min_interval_s) + self.min_interval_s)
            self.snapshots[record.id] = (record, max_bytes, due)
            self.cond.notify_all()
            return True

    def save_room(self, record: BotRoomRecord) -> Future[None]:
        """Queue a bot room's memory (it replaces the room's waiting snapshot); the future is done
        when it (or a newer one) is committed. Never waits; a closed writer fails the future."""
        return self._room(record.session, record)

    def delete_room(self, session: str) -> Future[None]:
        """Queue the deletion of a bot room's memory (it replaces the room's waiting snapshot)."""
        return self._room(session, None)

    def _room(self, session: str, record: BotRoomRecord | None) -> Future[None]:
        future: Future[None] = Future()
        with self.cond:
            if self.closed:
                future.set_exception(WriterClosed("the background writer is closed"))
                return future
            waiting = self.rooms.get(session)
            self.rooms[session] = (record, [*waiting[1], future] if waiting else [future])
            self.cond.notify_all()
        return future

    @property
    def pending(self) -> int:
        """Drawings, transcript snapshots and bot rooms waiting."""
        with self.cond:
            return len(self.drawings) + len(self.snapshots) + len(self.rooms) + int(self.busy)

    # -- waiting for it (tests, shutdown) --------------------------------------------------------
    def flush(self, timeout: float | None = 30.0) -> None:
        """Write everything pending now (throttled snapshots too) and wait for it.
        `WriterClosed` if the thread is gone; `TimeoutError` after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            if self.closed or not self.thread.is_alive():
                raise WriterClosed("the background writer is closed (or its thread died)")
            self._due_now()
            while self.drawings or self.snapshots or self.rooms or self.busy:
                if not self.thread.is_alive():
                    raise WriterClosed("the background writer's thread is not running")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"the background writer did not finish within {timeout} s")
                self.cond.wait(0.1 if left is None else min(left, 0.1))

    def close(self, timeout: float | None = 30.0) -> None:
        """Write what is pending, then stop the thread (later saves are dropped and counted)."""
        with self.cond:
            self.closed = True
            self._due_now()
            self.cond.notify_all()
        self.thread.join(timeout)

    def _due_now(self) -> None:
        now = self.clock()
        for key, (record, max_bytes, _) in list(self.snapshots.items()):
            self.snapshots[key] = (record, max_bytes, now)

    # -- the thread --------------------------------------------------------------------------------
    def _next(self) -> DrawingRecord | tuple[TranscriptRecord, int] | RoomJob | None:
        """The next job, waiting for one (and for the pause after a failed write); None when closed
        and nothing is left."""
        with self.cond:
            while True:
                now = self.clock()
                if now < self.paused_until and not self.closed:
                    self.cond.wait(max(0.01, min(self.paused_until - now, RETRY_MAX_S)))
                    continue
                if self.rooms:
                    rooms, self.rooms = self.rooms, {}
                    self.busy = True
                    return rooms
                if self.drawings:
                    self.busy = True
                    return self.drawings.popleft()
                due = [k for k, (_, _, at) in self.snapshots.items() if at <= now]
                if due:
                    record, max_bytes, _ = self.snapshots.pop(due[0])
                    self.busy = True
                    return record, max_bytes
                if self.closed and not self.snapshots:
                    return None
                wait = min((at for _, _, at in self.snapshots.values()), default=now + 60.0) - now
                self.cond.wait(max(0.01, min(wait, 60.0)))

    def _run(self) -> None:
        while (job := self._next()) is not None:
            try:
                if isinstance(job, dict):
                    if not self._write_rooms(job):
                        continue  # tried again later (the pause stands)
                elif isinstance(job, DrawingRecord):
                    self.store.add_drawing(job, consent=True)
                    self.drawings_written += 1
                else:
                    self.store.save_transcript(job[0], max_bytes=job[1])
                    self.transcripts_written += 1
                    self._written(job[0].id)
            except StoreUnavailable as error:
                self._again(job, error)
            except Exception as error:  # logged and counted; the thread goes on
                self.failed += 1
                log.warning("%s was not stored: %s", _named(job), error)
            else:
                self.pause_s = 0.0
            finally:
                with self.cond:
                    self.busy = False
                    self.cond.notify_all()

    def _again(self, job: DrawingRecord | tuple[TranscriptRecord, int] | RoomJob,
               error: StoreUnavailable) -> None:
        """The database cannot write now: ``job`` goes back in its queue (behind a newer snapshot of
        the same room or transcript, which replaces it) and the thread pauses; a closed writer
        gives up instead (what is left fails, counted). A room's save fails its futures now."""
        failed: list[Future[None]] = []
        with self.cond:
            if self.closed:
                self.failed += 1
                log.warning("%s was not stored (the writer is closing): %s", _named(job), error)
                if isinstance(job, dict):
                    failed = [future for _, futures in job.values() for future in futures]
            else:
                self.retries += 1
                self.pause_s = min(RETRY_MAX_S, max(RETRY_FIRST_S, 2 * self.pause_s))
                self.paused_until = self.clock() + self.pause_s
                if self.retries == 1 or self.pause_s >= RETRY_MAX_S:
                    log.warning("%s: the database cannot write now, trying again in %.2f s: %s",
                                _named(job), self.pause_s, error)
                if isinstance(job, DrawingRecord):
                    self.drawings.appendleft(job)
                elif isinstance(job, tuple):
                    if job[0].id not in self.snapshots:
                        self.snapshots[job[0].id] = (job[0], job[1], self.paused_until)
                else:
                    for session, (record, futures) in job.items():
                        if record is not None:  # the room goes on now; its memory is written later
                            failed += futures
                            futures = []
                        newer = self.rooms.get(session)  # a newer snapshot replaces this one
                        if newer is not None:
                            record, futures = newer[0], futures + newer[1]
                        self.rooms[session] = (record, futures)
        for future in failed:
            future.set_exception(error)

    def _write_rooms(self, rooms: RoomJob) -> bool:
        """One transaction for every waiting room; when it is refused, one per room, so that one
        refused room (the fence, too large) never costs the others their snapshot. False: the
        database could not write now, and the rooms not written go back in the queue (`_again`)."""
        parts = [rooms] if len(rooms) == 1 else [rooms, *({k: v} for k, v in rooms.items())]
        done: set[str] = set()
        for part in parts:
            saved = [record for record, _ in part.values() if record is not None]
            deleted = [session for session, (record, _) in part.items() if record is None]
            try:
                self.store.save_bot_rooms(saved, deleted, self.room_bytes)
            except StoreUnavailable as error:
                self._again({k: v for k, v in rooms.items() if k not in done}, error)
                return False
            except Exception as error:
                if part is rooms and len(rooms) > 1:
                    continue  # one room at a time
                self.failed += 1
                log.warning("bot room %s not stored: %s", ", ".join(part)[:200], error)
                _fail(part, error)
            else:
                self.room_batches += 1
                self.rooms_written += len(part)
                for _, futures in part.values():
                    for future in futures:
                        future.set_result(None)
                if part is rooms:
                    return True
            done.update(part)
        return True

    def _written(self, session_id: str) -> None:
        with self.cond:
            now = self.clock()
            self.last_written[session_id] = now
            if len(self.last_written) > 4 * self.max_pending:  # bounded: forget the sessions written long ago
                for key, at in list(self.last_written.items()):
                    if at <= now - self.min_interval_s:
                        del self.last_written[key]


def _named(job: DrawingRecord | tuple[TranscriptRecord, int] | RoomJob) -> str:
    """What a job writes, for the log."""
    if isinstance(job, DrawingRecord):
        return f"a drawing of {job.word!r}"
    if isinstance(job, tuple):
        return f"transcript {job[0].id}"
    return "bot room " + ", ".join(job)[:200]


def _fail(rooms: RoomJob, error: BaseException) -> None:
    """Every future of ``rooms`` gets ``error``."""
    for _, futures in rooms.values():
        for future in futures:
            future.set_exception(error)


def shared_writer(store: BackgroundStore, **options: float) -> BackgroundWriter:
    """The store's one background writer, created on first use with ``options`` (the arguments of
    `BackgroundWriter`; closed with `close_shared_writer`)."""
    with _SHARED_LOCK:
        writer = getattr(store, "_background_writer", None)
        if writer is None or writer.closed:
            writer = BackgroundWriter(store, **options)  # type: ignore[arg-type]
            store._background_writer = writer  # type: ignore[attr-defined]
        return writer


_SHARED_LOCK = threading.Lock()
