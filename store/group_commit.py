"""Group commit for the move log: the event loop hands moves over and never waits on the database.

`MoveWriter.submit` queues a move and returns a `concurrent.futures.Future` at once; one background
thread commits everything that queued meanwhile in one transaction (one disk flush for many moves:
what makes PostgreSQL with synchronous commit, or SQLite with ``synchronous=full``, keep up with many
games). `submit_end` queues a game's end behind its moves (a game ended before its last moves are
written would refuse them). The service's journal (service/play/journal.py) shows a move to the
person only once its future is done; async code awaits ``asyncio.wrap_future(future)``.

Failures are of two kinds:

- **the database cannot write now** (`StoreUnavailable`: disk full, server down or restarting, a
  lock held too long): the writer keeps the batch and tries it again, with back-off (50 ms doubling
  to `RETRY_MAX_S`), for as long as it takes — nothing is dropped. `failing` holds the last error
  meanwhile (what the service shows as a pause) and is None again once a write goes through;
- **the database refuses a move** (`MoveRejected`, `BadRecord`: a game finished meanwhile, a move out
  of sequence): the batch is tried again one move at a time, so one bad game never costs the others
  their moves; each refused move's future carries the error. A move refused after a failed attempt
  whose commit may have gone through (the connection dropped at COMMIT) is looked up: found as
  submitted, it counts as written.

The queue is bounded: `submit` raises `WriterOverloaded` rather than grow without end.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from store.database import Store
from store.errors import StoreError, StoreUnavailable
from store.records import Encoded

log = logging.getLogger("griffon.store")
Entry = tuple[str, int, float, dict[str, Any] | Encoded]  # game id, seq, game clock, move (its data or JSON)
RETRY_FIRST_S = 0.05
RETRY_MAX_S = 1.0  # the longest wait between two tries: the store back, the writer finds out within it
GIVE_UP_S = 5.0  # after `close` timed out on a failing database: what is left fails (never shown)


class WriterOverloaded(StoreError):
    """More moves are waiting than the writer's bound."""


class WriterClosed(StoreError):
    """The writer was closed."""


@dataclass
class Job:
    """One thing to write: a move (``entry``), a game's end (``end``: status, result) or a flush marker."""

    future: Future[None]
    entry: Entry | None = None
    end: tuple[str, str, dict[str, Any] | None] | None = None
    tried: bool = field(default=False)  # an attempt failed after possibly committing


class MoveWriter:
    """Commits submitted moves in batches from one background thread, in the order submitted."""

    def __init__(self, store: Store, max_queue: int = 20_000, max_batch: int = 1_000,
                 on_error: Callable[[Entry, Exception], None] | None = None) -> None:
        self.store, self.max_batch = store, max_batch
        self.on_error = on_error
        self.queue: queue.Queue[Job | None] = queue.Queue(max_queue)
        self.batches = self.written = self.refused = self.retries = 0
        self.failing: StoreError | None = None  # the database cannot write now (retrying)
        self.failing_since: float | None = None  # time.monotonic() of the first failure of this outage
        self.closed = False
        self.abandon = False  # closing gave up on a failing database: fail what is left
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self._run, name="griffon-move-writer", daemon=True)
        self.thread.start()

    def submit(self, game_id: str, seq: int, at: float, move: dict[str, Any] | Encoded) -> Future[None]:
        """Queue one move (the game's next `seq`: its data, or its JSON already `Encoded`); the
        future completes when it is committed."""
        return self._put(Job(Future(), entry=(game_id, seq, at, move)))

    def submit_end(self, game_id: str, status: str, result: dict[str, Any] | None = None) -> Future[None]:
        """Queue a game's end (`Store.finish_game`), written after every move submitted before it."""
        return self._put(Job(Future(), end=(game_id, status, result)))

    def _put(self, job: Job) -> Future[None]:
        if self.closed:
            raise WriterClosed("the move writer is closed")
        try:
            self.queue.put_nowait(job)
        except queue.Full:
            raise WriterOverloaded(f"{self.queue.maxsize} moves are waiting to be written") from None
        return job.future

    @property
    def pending(self) -> int:
        """Jobs waiting (not counting the batch being written)."""
        return self.queue.qsize()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every move submitted so far is committed (or refused). `WriterClosed` on a
        closed writer or a dead thread (nothing would ever answer), `TimeoutError` after `timeout`
        (the database failing all that time)."""
        if self.closed or not self.thread.is_alive():
            raise WriterClosed("the move writer is closed (or its thread died)")
        marker: Future[None] = Future()
        self.queue.put(Job(marker))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                marker.result(0.1)
                return
            except FutureTimeout:
                if not self.thread.is_alive():
                    raise WriterClosed("the move writer's thread died") from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"the move writer did not flush within {timeout} s") from None

    def close(self, timeout: float | None = 30.0) -> None:
        """Write what is queued, then stop the thread. On a database still failing after `timeout`
        seconds (1 s when it is failing already), what is left fails with `WriterClosed` (logged)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.queue.put(None, timeout=timeout)
        except queue.Full:  # the database has failed all along: nothing more will be written
            self.abandon = True
            self.wake.set()
        self.thread.join(min(timeout or 1.0, 1.0) if self.failing is not None else timeout)
        if self.thread.is_alive():
            self.abandon = True
            self.wake.set()
            self.thread.join(GIVE_UP_S)

    # -- the thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            batch, stop = [item], False
            while len(batch) < self.max_batch:
                try:
                    nxt = self.queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            try:
                self._write(batch)
            except Exception as error:  # a bug: nothing may wait for ever on a future
                log.exception("move writer: batch failed")
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(error)
            if stop:
                return

    def _write(self, batch: list[Job]) -> None:
        """Moves in runs (one transaction each), ends and markers in their place."""
        run: list[Job] = []
        for job in batch:
            if job.entry is not None:
                run.append(job)
                continue
            self._moves(run)
            run = []
            if job.end is not None:
                self._commit([job], lambda j=job: self.store.finish_game(*j.end))  # type: ignore[misc]
            elif not job.future.done():
                job.future.set_result(None)  # a flush marker: everything before it is done
        self._moves(run)

    def _moves(self, run: list[Job]) -> None:
        if not run:
            return
        if self._commit(run, lambda: self.store.append_entries([j.entry for j in run]), refuse=False):
            return
        by_game: dict[str, list[Job]] = {}  # someone's move is refused: game by game, so the others are kept
        for job in run:
            by_game.setdefault(job.entry[0], []).append(job)  # type: ignore[index]
        for jobs in by_game.values():
            if len(jobs) > 1 and self._commit(jobs, lambda js=jobs: self.store.append_entries(
                    [j.entry for j in js]), refuse=False):  # type: ignore[misc]
                continue
            for job in jobs:  # then move by move within the refused game
                if not job.future.done():
                    self._commit([job], lambda j=job: self.store.append_entries([j.entry]))  # type: ignore[list-item]

    def _commit(self, jobs: list[Job], write: Callable[[], None], refuse: bool = True) -> bool:
        """Run `write` until it goes through (True) or is refused (False; with `refuse`, the jobs'
        futures carry the error). A database that cannot write is tried again with back-off."""
        wait = RETRY_FIRST_S
        while True:
            if self.abandon:
                gone = WriterClosed("not written: the writer closed while the database was failing")
                for job in jobs:
                    self._refuse(job, gone)
                return False
            try:
                write()
            except StoreUnavailable as error:
                self._failed(error, jobs)
                self.wake.wait(wait)
                wait = min(wait * 2, RETRY_MAX_S)
                continue
            except StoreError as error:
                if len(jobs) == 1 and jobs[0].tried and self._already_written(jobs[0]):
                    self._done(jobs)
                    return True
                if refuse:
                    for job in jobs:
                        self._refuse(job, error)
                return False
            self._done(jobs)
            return True

    def _failed(self, error: StoreUnavailable, jobs: list[Job]) -> None:
        self.retries += 1
        for job in jobs:
            job.tried = True
        if self.failing is None:
            self.failing_since = time.monotonic()
            log.error("the database cannot write (%s): %d writes held, trying again until it can",
                      error, len(jobs))
        self.failing = error

    def _done(self, jobs: list[Job]) -> None:
        if self.failing is not None:
            log.warning("the database writes again after %.1f s",
                        time.monotonic() - (self.failing_since or time.monotonic()))
            self.failing = self.failing_since = None
        self.batches += 1
        for job in jobs:
            if job.entry is not None:
                self.written += 1
            if not job.future.done():
                job.future.set_result(None)

    def _already_written(self, job: Job) -> bool:
        """Whether a move refused after a failed attempt is in the log as submitted (the attempt's
        COMMIT went through, its answer was lost)."""
        if job.entry is None:
            return False
        game_id, seq, at, move = job.entry
        try:
            game = self.store.load_game(game_id)
        except StoreError:
            return False
        data = move.value() if isinstance(move, Encoded) else move
        return game is not None and len(game.moves) > seq and (
            game.moves[seq].at == at and game.moves[seq].move == data)

    def _refuse(self, job: Job, error: Exception) -> None:
        self.refused += 1
        if job.entry is not None:
            if self.on_error is not None:
                self.on_error(job.entry, error)
            else:
                log.warning("move %s of game %s not stored: %s", job.entry[1], job.entry[0], error)
        elif job.end is not None:
            log.warning("the end of game %s not stored: %s", job.end[0], error)
        if not job.future.done():
            job.future.set_exception(error)


def shared_move_writer(store: Store) -> MoveWriter:
    """The store's one move writer, created on first use (closed by `Store.close`)."""
    with _SHARED_LOCK:
        writer = getattr(store, "_move_writer", None)
        if writer is None or writer.closed:
            writer = MoveWriter(store)
            store._move_writer = writer  # type: ignore[attr-defined]
        return writer


_SHARED_LOCK = threading.Lock()
