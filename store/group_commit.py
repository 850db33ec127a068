"""Group commit for the move log: the event loop hands moves over and never waits on the disk.

A store-level writer for a database whose commits are slow (PostgreSQL with synchronous commit):
`bench/bench_store.py` measures it against one commit per move (docs/STORAGE.md). The service's
journal (service/play/journal.py) commits each move itself, on the event loop, with a short
timeout; it does not use this writer.

`MoveWriter.submit` queues a move and returns a `concurrent.futures.Future` at once; one background
thread commits everything that queued meanwhile in one transaction (one disk flush for many moves:
what makes PostgreSQL with synchronous commit, or SQLite with ``synchronous=full``, keep up with many
games). Async code that must not show a move before it is durable awaits
``asyncio.wrap_future(future)``; the others just submit.

A batch the database refuses (a game finished meanwhile, a move out of sequence) is retried one game
at a time, so one bad game never costs the others their moves; each refused move's future carries
the error. The queue is bounded: `submit` raises `WriterOverloaded` rather than grow without end.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from store.base import Store, StoreError

log = logging.getLogger("griffon.store")
Entry = tuple[str, int, float, dict[str, Any]]  # game id, seq, game clock, move


class WriterOverloaded(StoreError):
    """More moves are waiting than the writer's bound."""


class WriterClosed(StoreError):
    """The writer was closed."""


class MoveWriter:
    """Commits submitted moves in batches from one background thread."""

    def __init__(self, store: Store, max_queue: int = 20_000, max_batch: int = 1_000,
                 on_error: Callable[[Entry, Exception], None] | None = None) -> None:
        self.store, self.max_batch = store, max_batch
        self.on_error = on_error
        self.queue: queue.Queue[tuple[Entry, Future[None]] | None] = queue.Queue(max_queue)
        self.batches = self.written = self.refused = 0
        self.closed = False
        self.thread = threading.Thread(target=self._run, name="griffon-move-writer", daemon=True)
        self.thread.start()

    def submit(self, game_id: str, seq: int, at: float, move: dict[str, Any]) -> Future[None]:
        """Queue one move (the game's next `seq`); the future completes when it is committed."""
        if self.closed:
            raise WriterClosed("the move writer is closed")
        future: Future[None] = Future()
        try:
            self.queue.put_nowait(((game_id, seq, at, move), future))
        except queue.Full:
            raise WriterOverloaded(f"{self.queue.maxsize} moves are waiting to be written") from None
        return future

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every move submitted so far is committed (or refused). `WriterClosed` on a
        closed writer or a dead thread (nothing would ever answer), `TimeoutError` after `timeout`."""
        if self.closed or not self.thread.is_alive():
            raise WriterClosed("the move writer is closed (or its thread died)")
        marker: Future[None] = Future()
        self.queue.put((("", -1, 0.0, {}), marker))
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
        """Write what is queued, then stop the thread."""
        if self.closed:
            return
        self.closed = True
        self.queue.put(None)
        self.thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            batch = [item]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    nxt = self.queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._write([b for b in batch if b[0][1] >= 0])
            for _, future in batch:
                if not future.done():
                    future.set_result(None)
            if stop:
                return

    def _write(self, batch: list[tuple[Entry, Future[None]]]) -> None:
        if not batch:
            return
        try:
            self.store.append_entries([entry for entry, _ in batch])
            self.batches += 1
            self.written += len(batch)
            return
        except StoreError:
            pass  # someone's move is refused: retry game by game, so the others are kept
        except Exception as error:
            log.exception("move writer: batch failed")
            for entry, future in batch:
                self._refuse(entry, future, error)
            return
        by_game: dict[str, list[tuple[Entry, Future[None]]]] = {}
        for item in batch:
            by_game.setdefault(item[0][0], []).append(item)
        for items in by_game.values():
            for entry, future in items:
                try:
                    self.store.append_entries([entry])
                    self.written += 1
                except Exception as error:
                    self._refuse(entry, future, error)
            self.batches += 1

    def _refuse(self, entry: Entry, future: Future[None], error: Exception) -> None:
        self.refused += 1
        if self.on_error is not None:
            self.on_error(entry, error)
        else:
            log.warning("move %s of game %s not stored: %s", entry[1], entry[0], error)
        future.set_exception(error)
