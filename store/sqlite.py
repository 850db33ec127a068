"""The embedded default: one SQLite file (stdlib ``sqlite3``) in write-ahead-log mode.

``synchronous=NORMAL`` in WAL mode: a commit is in the log before `append_move` returns, so a killed
process (``kill -9``) loses nothing; only a power cut may lose the last commits (``synchronous=full``
in the URL makes every commit wait for the disk). The file is created on first start with its
folder.

An existing file is first opened **read-only** (`inspect`): not SQLite, someone else's tables, a
newer Griffon's schema, or a failed ``PRAGMA quick_check`` (``integrity_check``, or nothing:
``GRIFFON_DB_CHECK``) is refused with one line before anything is written — the file stays
byte-identical (no switch to WAL, no migration). The check is bounded (`CHECK_LIMIT_S`): on a file
too large to check in that time it stops, says so in the log, and the start goes on.
"""

from __future__ import annotations

import logging
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from store.database import Store
from store.errors import CorruptDatabase, ForeignDatabase, SchemaTooNew, StoreUnavailable
from store.records import Retention
from store.schema import LATEST_VERSION, SCHEMA_TABLE

log = logging.getLogger("griffon.store")

CHECKS = {"quick": "PRAGMA quick_check", "full": "PRAGMA integrity_check", "off": None}
SYNCHRONOUS = ("normal", "full")
BUSY_TIMEOUT_MS = 5_000
CORRUPT = ("SQLITE_NOTADB", "SQLITE_CORRUPT")
CHECK_LIMIT_S = 30.0  # the start-up check stops after this long (a very large file), with a warning


class SQLiteStore(Store):
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
        if self.path.is_file() and self.path.stat().st_size > 0:
            inspect(self.path, check)  # read-only: a file that is not ours is never written
        conn = _connect(self.path)
        super().__init__(conn, retention, busy_timeout_ms / 1000)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreUnavailable(f"{self.location}: write-ahead logging refused (journal mode {mode})")
            conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            conn.execute("PRAGMA foreign_keys = ON")
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


def inspect(path: Path, check: str = "quick", limit_s: float = CHECK_LIMIT_S) -> None:
    """Look at an existing file read-only: `CorruptDatabase` (not SQLite, or the check fails),
    `ForeignDatabase` (another application's tables), `SchemaTooNew`; nothing is written."""
    location = str(path.resolve())
    # without a write-ahead log beside it, the file is all there is: `immutable` reads it without a
    # lock and without creating the -wal and -shm files SQLite makes for a read-only WAL reader
    live = Path(f"{location}-wal").exists()
    uri = f"file:{urllib.parse.quote(location)}?{'mode=ro' if live else 'immutable=1'}"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and SCHEMA_TABLE not in tables:
                raise ForeignDatabase(
                    f"{location} holds tables ({', '.join(sorted(tables)[:5])}) but no Griffon schema: "
                    "it is not a Griffon database; point GRIFFON_DB_URL elsewhere"
                )
            if tables:
                version = conn.execute(f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_TABLE}").fetchone()[0]
                if int(version) > LATEST_VERSION:
                    raise SchemaTooNew(
                        f"{location} has schema version {version}, newer than this Griffon knows "
                        f"({LATEST_VERSION}): upgrade Griffon, or restore a backup made for this version"
                    )
            if CHECKS[check] is not None:
                _check(conn, location, CHECKS[check], limit_s)
    except sqlite3.Error as error:
        if getattr(error, "sqlite_errorname", "") in CORRUPT:
            raise CorruptDatabase(
                f"{location} is not a usable SQLite database ({error}); restore a backup or move "
                "the file away (Griffon never overwrites it)"
            ) from None
        raise StoreUnavailable(f"cannot open the database {location}: {error}") from None


def _check(conn: sqlite3.Connection, location: str, pragma: str, limit_s: float) -> None:
    """Run SQLite's own check, at most `limit_s` seconds; `CorruptDatabase` with its first findings
    on one line."""
    deadline = time.monotonic() + limit_s
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        found = [r[0] for r in conn.execute(pragma).fetchall()]
    except sqlite3.OperationalError as error:
        if "interrupt" not in str(error):
            raise
        log.warning("%s: %s stopped after %g s (a large file); the start goes on unchecked",
                    location, pragma, limit_s)
        return
    finally:
        conn.set_progress_handler(None, 0)
    if found == ["ok"]:
        return
    lines = [line.strip() for text in found for line in str(text).splitlines()]
    problems = [line for line in lines if line and not line.startswith("***")]
    raise CorruptDatabase(
        f"{location} is damaged ({'; '.join(problems[:2])}{'; …' if len(problems) > 2 else ''}); "
        "restore a backup or move the file away (Griffon never overwrites it)"
    )


def _connect(path: Path) -> sqlite3.Connection:
    if path.is_dir():
        raise StoreUnavailable(f"{path} is a folder, not a database file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: no implicit transactions, `write()` says BEGIN and COMMIT itself
        return sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as error:
        raise StoreUnavailable(f"cannot open the database {path}: {error}") from None
