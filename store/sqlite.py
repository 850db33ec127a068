"""The embedded default: one SQLite file (stdlib ``sqlite3``) in write-ahead-log mode.

``synchronous=NORMAL`` in WAL mode: a commit is in the log before `append_move` returns, so a killed
process (``kill -9``) loses nothing; only a power cut may lose the last commits (``synchronous=full``
in the URL makes every commit wait for the disk). The file is created on first start with its
folder; at every start ``PRAGMA quick_check`` (or ``integrity_check``, or nothing: ``check=`` in the
URL) makes a damaged file a clear error instead of a silent loss later.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from store.base import (
    CorruptDatabase,
    Retention,
    SqlStore,
    StoreUnavailable,
)

CHECKS = {"quick": "PRAGMA quick_check", "full": "PRAGMA integrity_check", "off": None}
SYNCHRONOUS = ("normal", "full")
BUSY_TIMEOUT_MS = 5_000
CORRUPT = ("SQLITE_NOTADB", "SQLITE_CORRUPT")


class SQLiteStore(SqlStore):
    """`Store` over one SQLite file."""

    backend = "sqlite"
    driver_error = sqlite3.Error
    integrity_error = sqlite3.IntegrityError

    def __init__(self, path: str | Path, retention: Retention | None = None, check: str = "quick",
                 synchronous: str = "normal", busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        if check not in CHECKS:
            raise StoreUnavailable(f"unknown check {check!r} (use {', '.join(CHECKS)})")
        if synchronous not in SYNCHRONOUS:
            raise StoreUnavailable(f"unknown synchronous mode {synchronous!r} (use {', '.join(SYNCHRONOUS)})")
        self.path = Path(path)
        self.location = str(self.path.resolve())
        conn = _connect(self.path)
        super().__init__(conn, retention, busy_timeout_ms / 1000)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreUnavailable(f"{self.location}: write-ahead logging refused (journal mode {mode})")
            conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            conn.execute("PRAGMA foreign_keys = ON")
            if CHECKS[check] is not None:
                problems = [r[0] for r in conn.execute(CHECKS[check]).fetchall()]
                if problems != ["ok"]:
                    raise CorruptDatabase(
                        f"{self.location} is damaged ({'; '.join(problems[:3])}); restore a backup or move "
                        "the file away (Griffon never overwrites it)"
                    )
            self.migrate()
        except (sqlite3.Error, StoreUnavailable) as error:
            conn.close()
            cause = error.__cause__ if isinstance(error, StoreUnavailable) else error
            if getattr(cause, "sqlite_errorname", "") in CORRUPT:
                raise CorruptDatabase(
                    f"{self.location} is not a usable SQLite database ({cause}); restore a backup or move "
                    "the file away (Griffon never overwrites it)"
                ) from None
            if isinstance(error, StoreUnavailable):
                raise
            raise StoreUnavailable(f"cannot open the database {self.location}: {error}") from None
        except BaseException:
            conn.close()
            raise

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        self.run("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        try:
            self.run("COMMIT")
        except BaseException:  # a failed COMMIT (deferred constraint, disk full...) leaves the
            if self.conn.in_transaction:  # transaction open: every later BEGIN would fail
                self.conn.execute("ROLLBACK")
            raise

    def tables(self) -> set[str]:
        return {r[0] for r in self.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    def vacuum(self) -> None:
        with self.lock:
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _connect(path: Path) -> sqlite3.Connection:
    if path.is_dir():
        raise StoreUnavailable(f"{path} is a folder, not a database file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: no implicit transactions, `write()` says BEGIN and COMMIT itself
        return sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as error:
        raise StoreUnavailable(f"cannot open the database {path}: {error}") from None
