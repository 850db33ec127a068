"""The SQL plumbing every table's module shares: one DB-API connection under a lock, the write
transaction with its bounded wait, the driver's errors turned into typed ones. The backends
(`store.sqlite`, `store.postgres`) fill in its hooks; the tables' modules (`store.games`, ...) are
mixed in over it (`store.database.Store`)."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Self

from store.errors import LEASE_LOST_STATE, BadRecord, MoveRejected, StoreUnavailable
from store.records import Retention

PRUNE_BATCH = 500  # rows per prune transaction: the lock is released between batches
STALL_BACKOFF_S = 2.0  # after a game write timed out, the next ones fail at once for this long


class SqlCore(ABC):
    """One DB-API connection (guarded by a lock) and the statements run on it. Thread-safe; every
    method of the tables' modules is one short transaction. Times are Unix seconds (``now`` may be
    given, for tests)."""

    backend = ""
    location = ""
    paramstyle = "qmark"  # "format" for psycopg: '?' becomes '%s'
    now_sql = "((julianday('now') - 2440587.5) * 86400.0)"  # the database's clock, Unix seconds
    driver_error: type[Exception] = Exception  # the driver's base error class
    integrity_error: type[Exception] = Exception  # its constraint-violation class

    def __init__(self, conn: Any, retention: Retention | None = None, write_wait_s: float = 5.0) -> None:
        self.conn = conn
        self.lock = threading.RLock()
        self.retention = retention or Retention()
        self.write_wait_s = write_wait_s  # the longest a game write waits for the lock
        self.stalled_until = 0.0  # monotonic time before which game writes fail without waiting

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The lock and a write transaction, for the short writes the service makes on its event
        loop (a game's creation, its moves, its end): the lock is waited for at most
        `write_wait_s` (the database's own busy wait is as short), then `StoreUnavailable` — a
        stalled database costs a game (abandoned, logged), never a frozen server. After such a
        failure the next game writes fail at once for `STALL_BACKOFF_S` (a hundred games do not
        each wait `write_wait_s` in turn)."""
        if time.monotonic() < self.stalled_until:
            raise StoreUnavailable(f"{self.location}: busy (a write timed out less than "
                                   f"{STALL_BACKOFF_S:g} s ago), not waiting again")
        if not self.lock.acquire(timeout=self.write_wait_s):
            self.stalled_until = time.monotonic() + STALL_BACKOFF_S
            raise StoreUnavailable(f"{self.location}: busy, the write waited {self.write_wait_s:g} s")
        try:
            with self.write():
                yield
        except StoreUnavailable as error:
            if any(word in str(error).lower() for word in ("locked", "busy", "timeout")):
                self.stalled_until = time.monotonic() + STALL_BACKOFF_S  # not a lost connection
            raise
        finally:
            self.lock.release()

    # -- backend hooks ---------------------------------------------------------------------------
    @abstractmethod
    def write(self) -> AbstractContextManager[Any]:
        """A write transaction (SQLite: BEGIN IMMEDIATE; PostgreSQL: a transaction block)."""

    @abstractmethod
    def tables(self) -> set[str]:
        """Names of the tables in the database (schema)."""

    @abstractmethod
    def size_bytes(self) -> int:
        """Bytes the database takes."""

    @abstractmethod
    def vacuum(self) -> None:
        """Give freed space back (SQLite VACUUM + WAL checkpoint; PostgreSQL VACUUM ANALYZE)."""

    # -- plumbing --------------------------------------------------------------------------------
    def sql(self, text: str) -> str:
        """The statement in the driver's placeholder style."""
        return text.replace("?", "%s") if self.paramstyle == "format" else text

    def run(self, text: str, params: Sequence[Any] = ()) -> Any:
        """Execute one statement; returns the cursor. Driver errors become `StoreError`s."""
        with self.guard():
            return self.conn.execute(self.sql(text), tuple(params))

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Turn the driver's errors into typed store errors."""
        try:
            yield
        except self.integrity_error as error:
            raise BadRecord(f"refused by the database: {error}") from error
        except self.driver_error as error:
            if getattr(error, "sqlstate", None) == LEASE_LOST_STATE:  # not a failing database: no retry
                raise MoveRejected(f"{self.location}: {str(error).strip()}") from error
            raise StoreUnavailable(f"{self.location}: {str(error).strip()}") from error

    def rows(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Execute a query and fetch every row."""
        with self.lock:
            return [tuple(r) for r in self.run(text, params).fetchall()]

    def _delete_batches(self, statement: str, params: tuple[Any, ...], batch: int) -> int:
        """Run a ``... LIMIT ?`` DELETE until it deletes fewer than `batch` rows; one transaction each."""
        total = 0
        while True:
            with self.lock, self.write():
                done = self.run(statement, (*params, batch)).rowcount
            total += done
            if done < batch:
                return total

    def close(self) -> None:
        """Close the connection."""
        for name in ("_move_writer", "_background_writer"):  # store.group_commit's, store.background's
            writer = getattr(self, name, None)
            if writer is not None:
                writer.close()  # what it holds is written first
        with self.lock:
            self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
