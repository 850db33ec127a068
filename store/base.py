"""The storage interface, its records and errors, and the SQL both backends share.

`Store` is what the service uses; `SqlStore` implements it once in plain SQL (``?`` placeholders,
rewritten for psycopg), and the backends (`store.sqlite`, `store.postgres`) only say how to connect,
how to begin a write, how big the database is and how to vacuum it. Migrations are the numbered
``store/migrations/NNNN_name.sql`` files; the applied ones are listed in ``griffon_schema``.

Every record is bounded and checked before it is written (`BadRecord`); a database file that is
not a database, is damaged, belongs to something else, or was written by a newer Griffon raises a
`BadDatabase` subclass when it is opened, never later and never silently.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SCHEMA_TABLE = "griffon_schema"
TABLES = ("games", "moves", "transcripts", "drawings")  # counted by `info`
KEY_TABLES = ("bot_keys", "bot_key_rooms")  # the API keys of bot rooms
ROOM_TABLES = ("rooms", "bot_rooms")  # lobbies not yet started; bot rooms' resumable memory

MAX_ID_CHARS = 64
MAX_SETUP_BYTES = 1_000_000
MAX_MOVE_BYTES = 262_144  # the service's largest WebSocket frame
MAX_RESULT_BYTES = 65_536
MAX_SUMMARY_BYTES = 16_384
MAX_CONDITIONS_BYTES = 4_096
MAX_LOBBY_BYTES = 16_384
MAX_DRAWING_STROKES = 1_000  # the recognizer's own limits (model.DrawingError)
MAX_DRAWING_POINTS = 10_000
MAX_WORD_CHARS = 64
MAX_TRANSCRIPT_BYTES = 1_048_576  # the store's own ceiling; the service passes its smaller bound
MAX_BOT_ROOM_BYTES = 1_048_576  # a bot room's stored memory, at most (the service passes its smaller bound)
PRUNE_BATCH = 500  # rows per prune transaction: the lock is released between batches
STALL_BACKOFF_S = 2.0  # after a game write timed out, the next ones fail at once for this long
GAME_STATUSES = ("playing", "finished", "expired", "abandoned")
DAY_S = 86_400.0


# ------------------------------------------------------------------------------------------------
# Errors


LEASE_LOST_STATE = "GF409"  # SQLSTATE of the replicas' fence refusing a write (store.leases)


class StoreError(RuntimeError):
    """Anything the store refuses or cannot do."""


class StoreUnavailable(StoreError):
    """The database cannot be reached or created (server down, folder not writable...)."""


class BadDatabase(StoreError):
    """The database exists but cannot be used as is; the message says what to do."""


class CorruptDatabase(BadDatabase):
    """The file is not a database, or its integrity check fails."""


class ForeignDatabase(BadDatabase):
    """The database holds tables but no Griffon schema (another application's)."""


class SchemaTooNew(BadDatabase):
    """The database was migrated by a newer Griffon than this one."""


class BadRecord(StoreError, ValueError):
    """A record that is too large, malformed, or not allowed (e.g. a drawing without consent)."""


class MoveRejected(StoreError):
    """A move for an unknown or finished game, or out of sequence (another writer?)."""


class UnknownKey(StoreError, LookupError):
    """No bot key has this name or id."""


# ------------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class StoredMove:
    """One entry of a game's move log: its number, the game clock (seconds) and the move's data."""

    seq: int
    at: float
    move: dict[str, Any]


@dataclass(frozen=True)
class StoredGame:
    """A game as stored: what it was set up with, and every move since, in order."""

    id: str
    kind: str
    setup: dict[str, Any]
    token_hash: str
    status: str
    created_at: float
    updated_at: float
    moves: list[StoredMove]
    result: dict[str, Any] | None = None


@dataclass(frozen=True)
class TranscriptRecord:
    """A bot session's transcript: a small summary and its events (bounded in bytes on save)."""

    id: str
    summary: dict[str, Any]
    events: list[dict[str, Any]]
    key_hash: str | None = None
    created_at: float | None = None
    dropped: int = 0  # events cut to fit the byte bound


@dataclass(frozen=True)
class BotRoomRecord:
    """A bot room's resumable memory (protocol version 2): the session id, the SHA-256 of its
    resume token (never the token), its API key's id, its state as JSON data, and its round's
    transcript events (the first ones that fit beside the state are kept, as a transcript's)."""

    session: str
    token_hash: str
    state: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    key_id: str | None = None
    created_at: float | None = None
    strokes: list[str] = field(default_factory=list)  # each stroke as JSON, encoded once by its writer


@dataclass(frozen=True)
class StoredBotRoom:
    """A bot room as stored, with ``age``: seconds since its last write, on the database's clock."""

    session: str
    token_hash: str
    key_id: str | None
    state: dict[str, Any]
    events: list[dict[str, Any]]
    created_at: float
    age: float
    strokes: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class DrawingRecord:
    """A finished drawing, stored with the player's consent.

    ``strokes`` are ``[[x...], [y...], [t...]]`` (``t`` in ms from the drawing's first point);
    ``conditions`` say how it was drawn (``{"style": "lines" | "free", "timer_s": 30, ...}``);
    ``recognized``: whether the word was found; ``owner_hash``: the hash of the withdrawal key the
    person's page holds (`Store.withdraw_drawings` deletes every drawing given under it). Nothing
    about the person is kept.
    """

    word: str
    game: str
    strokes: list[list[list[float]]]
    conditions: dict[str, Any] = field(default_factory=dict)
    recognized: bool = False
    key_id: str = ""
    created_at: float = 0.0
    owner_hash: str = ""  # the SHA-256 of the giver's withdrawal key (`hash_token`); "" for none


@dataclass(frozen=True)
class BotKey:
    """An API key of bot rooms, as stored: the SHA-256 of its secret (never the secret), its
    quotas (0: no limit) and whether it was revoked."""

    id: str
    name: str
    secret_hash: str
    max_rooms: int
    strokes_per_minute: int
    created_at: float
    revoked_at: float | None = None
    last_used_at: float | None = None

    @property
    def revoked(self) -> bool:
        """Whether the key was revoked."""
        return self.revoked_at is not None


@dataclass(frozen=True)
class Retention:
    """How long records are kept (days; 0 = forever) and how many transcripts at most."""

    games_days: float = 30.0
    transcripts_days: float = 30.0
    transcripts_max: int = 10_000
    drawings_days: float = 0.0


@dataclass(frozen=True)
class PruneReport:
    """How many records `Store.prune` deleted."""

    games: int
    moves: int
    transcripts: int
    drawings: int


@dataclass(frozen=True)
class StoreInfo:
    """Where the database is, its size, schema version and record counts."""

    backend: str
    location: str
    size_bytes: int
    schema_version: int
    counts: dict[str, int]


# ------------------------------------------------------------------------------------------------
# Helpers


def hash_token(token: str) -> str:
    """The SHA-256 of a game token or a bot key's secret: the only form stored (a stolen database
    gives neither)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_matches(token: str, token_hash: str) -> bool:
    """Whether `token` hashes to `token_hash` (constant-time comparison)."""
    return secrets.compare_digest(hash_token(token), token_hash)


KEY_PREFIX = "gk_"  # a bot key's secret starts with it: recognisable in a config file or a leak scan


def new_key_secret() -> str:
    """A bot key's secret: the prefix and 32 URL-safe random characters (192 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(24)


def to_json(value: Any, limit: int, what: str) -> str:
    """Compact JSON of `value`, at most `limit` bytes; NaN, infinity and non-JSON data refused."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise BadRecord(f"{what} is not JSON data: {error}") from None
    if len(text.encode("utf-8")) > limit:
        raise BadRecord(f"{what} is larger than {limit} bytes")
    return text


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_CHARS or not value.isprintable():
        raise BadRecord(f"{what} must be a printable string of 1 to {MAX_ID_CHARS} characters")
    return value


WORD_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 '\-]*$")  # the Quick, Draw! category names


def check_word(word: Any) -> str:
    """A category name safe as a file name (``full/raw/<word>.ndjson``)."""
    if not isinstance(word, str) or len(word) > MAX_WORD_CHARS or not WORD_RE.match(word):
        raise BadRecord(f"not a category name: {str(word)[:80]!r}")
    return word


def check_strokes(strokes: Any) -> list[list[list[float]]]:
    """Strokes ``[[x...], [y...], [t...]]``: equal lengths, finite numbers, within the recognizer's
    limits (1,000 strokes, 10,000 points), times never going back within a stroke."""
    if not isinstance(strokes, list) or not 1 <= len(strokes) <= MAX_DRAWING_STROKES:
        raise BadRecord(f"a drawing holds 1 to {MAX_DRAWING_STROKES} strokes")
    total, clean = 0, []
    for stroke in strokes:
        if not (isinstance(stroke, list | tuple) and len(stroke) == 3):
            raise BadRecord("each stroke is [[x...], [y...], [t...]] (times are required)")
        xs, ys, ts = (list(axis) if isinstance(axis, list | tuple) else None for axis in stroke)
        if xs is None or ys is None or ts is None or not len(xs) == len(ys) == len(ts) >= 1:
            raise BadRecord("a stroke's x, y and t lists must have the same length (at least 1)")
        values = [*xs, *ys, *ts]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values) or not all(
            math.isfinite(v) for v in values
        ):
            raise BadRecord("stroke coordinates and times must be finite numbers")
        if any(b < a for a, b in zip(ts, ts[1:], strict=False)):
            raise BadRecord("times go back within a stroke")
        total += len(xs)
        clean.append([xs, ys, ts])
    if total > MAX_DRAWING_POINTS:
        raise BadRecord(f"a drawing holds at most {MAX_DRAWING_POINTS} points")
    return clean


KEY_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
MAX_KEY_QUOTA = 1_000_000


def check_key_name(name: Any) -> str:
    """A bot key's name: 1 to 64 letters, digits, ``_``, ``.`` or ``-`` (it labels metrics)."""
    if not isinstance(name, str) or not KEY_NAME_RE.match(name):
        raise BadRecord(f"a key name is 1 to 64 letters, digits, '_', '.' or '-' (first a letter or digit), "
                        f"not {str(name)[:80]!r}")
    return name


def _check_quota(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_KEY_QUOTA:
        raise BadRecord(f"{what} must be an integer from 0 (no limit) to {MAX_KEY_QUOTA}")
    return value


def new_key_id() -> str:
    """A drawing id shaped like the dataset's numeric ``key_id`` but 19 digits long, starting with 9,
    so it never equals one of Google's 16-digit ids (and still fits the binary format's uint64)."""
    return str(9 * 10**18 + secrets.randbelow(10**18))


def migrations() -> list[tuple[int, str, str]]:
    """The numbered migrations ``(version, name, sql)``, in order."""
    found = []
    for path in sorted(MIGRATIONS_DIR.glob("[0-9][0-9][0-9][0-9]_*.sql")):
        found.append((int(path.name[:4]), path.stem[5:], path.read_text(encoding="utf-8")))
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise StoreError(f"migrations must be numbered 0001, 0002, ... without gaps; found {versions}")
    return found


def statements(sql: str) -> list[str]:
    """The statements of a migration file (``;``-separated; ``--`` comments dropped)."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


LATEST_VERSION = len(migrations())


# ------------------------------------------------------------------------------------------------
# The interface


class Store(ABC):
    """Persistence for the service: games (setup + move log), bot transcripts, consented drawings.

    Thread-safe; every method is one short transaction. Times are Unix seconds (``now`` may be
    given, for tests). Close it with :meth:`close` (or use it as a context manager).
    """

    backend = ""
    location = ""

    # games
    @abstractmethod
    def create_game(
        self, game_id: str, kind: str, setup: dict[str, Any], token_hash: str, now: float | None = None
    ) -> None:
        """Store a new game's setup (`MoveRejected` if the id exists)."""

    @abstractmethod
    def append_move(self, game_id: str, seq: int, at: float, move: dict[str, Any],
                    now: float | None = None) -> None:
        """Append move number `seq` (0, 1, 2...) at game clock `at`; `MoveRejected` if `seq` is not
        the game's next number or the game is not being played."""

    @abstractmethod
    def append_moves(self, game_id: str, first_seq: int, moves: Sequence[tuple[float, dict[str, Any]]],
                     now: float | None = None) -> None:
        """Append several consecutive moves in one transaction (same checks as `append_move`)."""

    @abstractmethod
    def append_entries(self, entries: Sequence[tuple[str, int, float, dict[str, Any]]],
                       now: float | None = None) -> None:
        """Append ``(game_id, seq, at, move)`` entries of any games in one transaction (all or none):
        what a group commit (``store/group_commit.py``) writes at once."""

    @abstractmethod
    def finish_game(self, game_id: str, status: str = "finished", result: dict[str, Any] | None = None,
                    now: float | None = None) -> None:
        """Mark a game finished (or ``expired`` / ``abandoned``): it is no longer resumed."""

    @abstractmethod
    def load_game(self, game_id: str) -> StoredGame | None:
        """One game with its move log, or None."""

    @abstractmethod
    def load_unfinished_games(self, limit: int = 10_000) -> list[StoredGame]:
        """Every game still ``playing``, oldest first, with its move log (what a restart replays)."""

    @abstractmethod
    def unfinished_game_ids(self, limit: int = 10_000) -> list[str]:
        """The ids of the games still ``playing``, the most recently played first; reads nothing
        else (one game's damaged row cannot stop it: `load_game` each)."""

    # transcripts
    @abstractmethod
    def save_transcript(self, record: TranscriptRecord, now: float | None = None,
                        max_bytes: int = MAX_TRANSCRIPT_BYTES) -> TranscriptRecord:
        """Insert or replace a transcript, its events cut to `max_bytes` of JSON (never more than
        `MAX_TRANSCRIPT_BYTES`); returns what was kept."""

    @abstractmethod
    def load_transcript(self, transcript_id: str) -> TranscriptRecord | None:
        """One transcript, or None."""

    @abstractmethod
    def list_transcripts(self, limit: int = 100) -> list[TranscriptRecord]:
        """The newest transcripts (summaries only: ``events`` is empty), newest first."""

    # drawings
    @abstractmethod
    def add_drawing(self, record: DrawingRecord, consent: bool, now: float | None = None) -> str:
        """Store a finished drawing the player agreed to give; returns its ``key_id`` (empty when
        its giver's withdrawal key was withdrawn: nothing is stored). Without consent nothing is
        written (`BadRecord`)."""

    @abstractmethod
    def withdraw_drawings(self, owner_hash: str) -> int:
        """Delete every drawing given under the withdrawal key whose hash is ``owner_hash``, and
        refuse any later one (`add_drawing` then stores nothing); returns how many were deleted."""

    @abstractmethod
    def iter_drawings(self, word: str | None = None, batch: int = 500,
                      skip_games: Sequence[str] = ()) -> Iterator[DrawingRecord]:
        """Every stored drawing (of one word; not those of the `skip_games` kinds), oldest first."""

    @abstractmethod
    def drawing_counts(self, skip_games: Sequence[str] = ()) -> dict[str, int]:
        """Stored drawings per word (not counting the `skip_games` kinds)."""

    # bot keys (service/bot/keys.py)
    @abstractmethod
    def create_bot_key(self, name: str, secret_hash: str, max_rooms: int, strokes_per_minute: int,
                       now: float | None = None) -> BotKey:
        """Store a new key (`BadRecord` if the name is taken or malformed)."""

    @abstractmethod
    def list_bot_keys(self) -> list[BotKey]:
        """Every key, revoked ones too, oldest first."""

    @abstractmethod
    def find_bot_key(self, secret_hash: str) -> BotKey | None:
        """The key whose secret hashes to `secret_hash`, or None."""

    @abstractmethod
    def bot_keys(self, ids: Sequence[str]) -> list[BotKey]:
        """The keys with these ids (what a server re-reads to see revocations and new quotas)."""

    @abstractmethod
    def revoke_bot_key(self, name_or_id: str, now: float | None = None) -> BotKey:
        """Revoke a key by its name or id (`UnknownKey` if none); a revoked key stays revoked."""

    @abstractmethod
    def claim_key_room(self, key_id: str, session: str, holder: str, max_rooms: int, fresh_after: float,
                       now: float | None = None) -> int | None:
        """Count a room open under a key, unless the key already holds `max_rooms` rooms (0: no
        limit) renewed since `fresh_after`: the rooms it then holds, or None when refused."""

    @abstractmethod
    def renew_key_rooms(self, rooms: Sequence[tuple[str, str]], holder: str,
                        now: float | None = None) -> None:
        """Mark these ``(session, key_id)`` rooms as still open, counting again any that had
        expired (the rooms of a process that stops renewing expire)."""

    @abstractmethod
    def release_key_room(self, session: str) -> None:
        """A room closed: it no longer counts."""

    @abstractmethod
    def key_rooms(self, key_ids: Sequence[str], fresh_after: float) -> dict[str, int]:
        """Rooms open per key (renewed since `fresh_after`), by every server sharing the database."""

    # lobbies of rooms with friends
    @abstractmethod
    def save_room(self, code: str, lobby: dict[str, Any], now: float | None = None) -> None:
        """Insert or replace the lobby of room `code` (JSON data, bounded; token hashes only)."""

    @abstractmethod
    def load_rooms(self) -> list[tuple[str, dict[str, Any], float]]:
        """Every stored lobby: ``(code, lobby, updated_at)``, oldest first."""

    @abstractmethod
    def delete_room(self, code: str) -> None:
        """Forget the lobby of room `code` (started, closed or expired); none: nothing done."""

    # upkeep
    @abstractmethod
    def save_bot_rooms(self, rooms: Sequence[BotRoomRecord], deleted: Sequence[str] = (),
                       max_bytes: int = MAX_BOT_ROOM_BYTES) -> None:
        """Insert or replace bot rooms' memory and delete others', in one transaction: each room's
        state, strokes and events take at most ``max_bytes`` of JSON together (the last events are
        cut to fit); `BadRecord` for a state and strokes over it (nothing written)."""

    @abstractmethod
    def load_bot_room(self, session: str) -> StoredBotRoom | None:
        """A bot room's stored memory (None: unknown, or deleted)."""

    @abstractmethod
    def prune_bot_rooms(self, older_than_s: float) -> int:
        """Delete the bot rooms not written for ``older_than_s`` seconds (database clock); how many."""

    @abstractmethod
    def prune(self, retention: Retention, now: float | None = None) -> PruneReport:
        """Delete what `retention` no longer keeps."""

    @abstractmethod
    def info(self) -> StoreInfo:
        """Where, how big, schema version, counts."""

    @abstractmethod
    def vacuum(self) -> None:
        """Give freed space back (SQLite VACUUM + WAL checkpoint; PostgreSQL VACUUM ANALYZE)."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------------------------------
# One SQL implementation for both backends


class SqlStore(Store):
    """`Store` in plain SQL over one DB-API connection (guarded by a lock)."""

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

    # -- schema ----------------------------------------------------------------------------------
    def schema_version(self) -> int:
        """The highest applied migration (0 for an empty database)."""
        if SCHEMA_TABLE not in self.tables():
            return 0
        return int(self.rows(f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_TABLE}")[0][0])

    def migrate(self) -> int:
        """Check the schema and apply the pending migrations; returns the version.
        `ForeignDatabase` for someone else's tables, `SchemaTooNew` for a newer Griffon's. A schema
        already current is only read (opening the database never waits on a running server's writes)."""
        with self.lock:
            found = self.tables()
            if SCHEMA_TABLE not in found and found:
                raise ForeignDatabase(
                    f"{self.location} holds tables ({', '.join(sorted(found)[:5])}) but no Griffon schema: "
                    "it is not a Griffon database; point GRIFFON_DATABASE_URL elsewhere"
                )
            if SCHEMA_TABLE in found and int(self.rows(
                    f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_TABLE}")[0][0]) == LATEST_VERSION:
                return LATEST_VERSION
            with self.write():
                self.lock_schema()
                self.run(
                    f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER PRIMARY KEY, "
                    "name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
                )
                current = int(self.run(f"SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_TABLE}").fetchone()[0])
                if current > LATEST_VERSION:
                    raise SchemaTooNew(
                        f"{self.location} has schema version {current}, newer than this Griffon knows "
                        f"({LATEST_VERSION}): upgrade Griffon, or restore a backup made for this version"
                    )
                for version, name, text in migrations()[current:]:
                    for statement in statements(text):
                        self.run(statement)
                    self.run(
                        f"INSERT INTO {SCHEMA_TABLE} (version, name, applied_at) VALUES (?, ?, ?)",
                        (version, name, time.time()),
                    )
            return max(current, LATEST_VERSION)

    def lock_schema(self) -> None:
        """Serialize concurrent first starts (PostgreSQL takes an advisory lock)."""

    # -- games -----------------------------------------------------------------------------------
    def create_game(
        self, game_id: str, kind: str, setup: dict[str, Any], token_hash: str, now: float | None = None
    ) -> None:
        _check_id(game_id, "game id")
        _check_id(kind, "game kind")
        _check_id(token_hash, "token hash")
        text = to_json(setup, MAX_SETUP_BYTES, "the game setup")
        now = time.time() if now is None else now
        with self.writing():
            if self.run("SELECT 1 FROM games WHERE id = ?", (game_id,)).fetchone() is not None:
                raise MoveRejected(f"game {game_id!r} already exists")
            self.run(
                "INSERT INTO games (id, kind, setup, token_hash, status, moves, result, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, 'playing', 0, NULL, ?, ?)",
                (game_id, kind, text, token_hash, now, now),
            )

    def append_move(self, game_id: str, seq: int, at: float, move: dict[str, Any],
                    now: float | None = None) -> None:
        self.append_moves(game_id, seq, [(at, move)], now)

    def append_moves(self, game_id: str, first_seq: int, moves: Sequence[tuple[float, dict[str, Any]]],
                     now: float | None = None) -> None:
        self.append_entries([(game_id, first_seq + i, at, move) for i, (at, move) in enumerate(moves)], now)

    def append_entries(self, entries: Sequence[tuple[str, int, float, dict[str, Any]]],
                       now: float | None = None) -> None:
        if not entries:
            return
        groups: dict[str, list[int]] = {}
        rows = []
        for game_id, seq, at, move in entries:
            if not isinstance(at, int | float) or not math.isfinite(at):
                raise BadRecord("a move's time must be a finite number")
            seqs = groups.setdefault(game_id, [])
            if seqs and seq != seqs[-1] + 1:
                raise MoveRejected(f"moves of game {game_id!r} out of order ({seqs[-1]}, then {seq})")
            seqs.append(seq)
            rows.append((game_id, seq, float(at), to_json(move, MAX_MOVE_BYTES, "a move")))
        now = time.time() if now is None else now
        with self.writing():
            # every game of the batch in one statement: a batch costs the same round trips
            # (BEGIN, UPDATE, INSERT, COMMIT) whatever number of games it holds
            marks = ", ".join(["(?, ?, ?)"] * len(groups))
            advanced = {row[0] for row in self.run(
                "UPDATE games SET moves = games.moves + v.column2, updated_at = ? "
                f"FROM (VALUES {marks}) AS v WHERE games.id = v.column1 AND games.moves = v.column3 "
                "AND games.status = 'playing' RETURNING games.id",
                (now, *[x for game_id, seqs in groups.items() for x in (game_id, len(seqs), seqs[0])]),
            ).fetchall()}
            for game_id, seqs in groups.items():  # the first refused game (the transaction is rolled back)
                if game_id not in advanced:
                    raise MoveRejected(self._why_rejected(game_id, seqs[0]))
            with self.guard():
                self.conn.cursor().executemany(
                    self.sql("INSERT INTO moves (game_id, seq, at, move) VALUES (?, ?, ?, ?)"), rows
                )

    def _why_rejected(self, game_id: str, seq: int) -> str:
        row = self.run("SELECT status, moves FROM games WHERE id = ?", (game_id,)).fetchone()
        if row is None:
            return f"no game {game_id!r}"
        if row[0] != "playing":
            return f"game {game_id!r} is {row[0]}"
        return f"game {game_id!r} expects move {row[1]}, not {seq} (is another server writing it?)"

    def finish_game(self, game_id: str, status: str = "finished", result: dict[str, Any] | None = None,
                    now: float | None = None) -> None:
        if status not in GAME_STATUSES or status == "playing":
            raise BadRecord(f"a game ends as one of {', '.join(GAME_STATUSES[1:])}, not {status!r}")
        text = None if result is None else to_json(result, MAX_RESULT_BYTES, "the game result")
        now = time.time() if now is None else now
        with self.writing():
            done = self.run(
                "UPDATE games SET status = ?, result = ?, updated_at = ? WHERE id = ?",
                (status, text, now, game_id),
            ).rowcount
            if done != 1:
                raise MoveRejected(f"no game {game_id!r}")

    def _games(self, where: str, params: Sequence[Any], limit: int) -> list[StoredGame]:
        with self.lock:
            heads = self.run(
                "SELECT id, kind, setup, token_hash, status, created_at, updated_at, result FROM games "
                f"WHERE {where} ORDER BY created_at, id LIMIT ?",
                (*params, limit),
            ).fetchall()
            games = []
            for gid, kind, setup, token_hash, status, created, updated, result in heads:
                logged = self.run(
                    "SELECT seq, at, move FROM moves WHERE game_id = ? ORDER BY seq", (gid,)
                ).fetchall()
                games.append(StoredGame(
                    id=gid, kind=kind, setup=json.loads(setup), token_hash=token_hash, status=status,
                    created_at=float(created), updated_at=float(updated),
                    moves=[StoredMove(int(s), float(a), json.loads(m)) for s, a, m in logged],
                    result=None if result is None else json.loads(result),
                ))
            return games

    def load_game(self, game_id: str) -> StoredGame | None:
        found = self._games("id = ?", (game_id,), 1)
        return found[0] if found else None

    def load_unfinished_games(self, limit: int = 10_000) -> list[StoredGame]:
        return self._games("status = 'playing'", (), limit)

    def unfinished_game_ids(self, limit: int = 10_000) -> list[str]:
        found = self.rows("SELECT id FROM games WHERE status = 'playing' "
                          "ORDER BY updated_at DESC, created_at DESC, id LIMIT ?", (limit,))
        return [gid for (gid,) in found]

    # -- transcripts -----------------------------------------------------------------------------
    def save_transcript(self, record: TranscriptRecord, now: float | None = None,
                        max_bytes: int = MAX_TRANSCRIPT_BYTES) -> TranscriptRecord:
        _check_id(record.id, "transcript id")
        if record.key_hash is not None:
            _check_id(record.key_hash, "key hash")
        summary = to_json(record.summary, MAX_SUMMARY_BYTES, "the transcript summary")
        limit = max(2, min(int(max_bytes), MAX_TRANSCRIPT_BYTES))
        events, dropped = fit_events(record.events, limit)
        text = to_json(events, limit, "the transcript events")
        now = time.time() if now is None else now
        created = record.created_at if record.created_at is not None else now
        with self.lock, self.write():
            self.run(
                "INSERT INTO transcripts (id, key_hash, summary, events, bytes, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET key_hash = excluded.key_hash, "
                "summary = excluded.summary, events = excluded.events, bytes = excluded.bytes, "
                "updated_at = excluded.updated_at",
                (record.id, record.key_hash, summary, text, len(text.encode("utf-8")), created, now),
            )
        return TranscriptRecord(record.id, record.summary, events, record.key_hash, created,
                                record.dropped + dropped)

    def load_transcript(self, transcript_id: str) -> TranscriptRecord | None:
        found = self.rows(
            "SELECT id, summary, events, key_hash, created_at FROM transcripts WHERE id = ?", (transcript_id,)
        )
        if not found:
            return None
        tid, summary, events, key_hash, created = found[0]
        return TranscriptRecord(tid, json.loads(summary), json.loads(events), key_hash, float(created))

    def list_transcripts(self, limit: int = 100) -> list[TranscriptRecord]:
        found = self.rows(
            "SELECT id, summary, key_hash, created_at FROM transcripts ORDER BY created_at DESC, id LIMIT ?",
            (limit,),
        )
        return [TranscriptRecord(t, json.loads(s), [], k, float(c)) for t, s, k, c in found]

    # -- drawings --------------------------------------------------------------------------------
    def add_drawing(self, record: DrawingRecord, consent: bool, now: float | None = None) -> str:
        if consent is not True:
            raise BadRecord("a drawing is stored only when its player agreed (consent=True)")
        word = check_word(record.word)
        _check_id(record.game, "game kind")
        strokes = to_json(check_strokes(record.strokes), 2_000_000, "the drawing")
        conditions = to_json(record.conditions, MAX_CONDITIONS_BYTES, "the drawing conditions")
        key_id = record.key_id or new_key_id()
        _check_id(key_id, "key_id")
        now = time.time() if now is None else now
        owner = record.owner_hash or None
        if owner is not None and not re.fullmatch(r"[0-9a-f]{64}", owner):
            raise BadRecord("owner_hash must be a SHA-256 in hexadecimal (store.hash_token)")
        with self.lock, self.write():
            if owner is not None and self.run("SELECT 1 FROM withdrawn_owners WHERE owner_hash = ?",
                                              (owner,)).fetchone():
                return ""  # its giver withdrew their consent: nothing is stored
            self.run(
                "INSERT INTO drawings (key_id, word, game, conditions, strokes, recognized, consent, "
                "created_at, owner_hash) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)",
                (key_id, word, record.game, conditions, strokes, int(bool(record.recognized)), now, owner),
            )
        return key_id

    def withdraw_drawings(self, owner_hash: str) -> int:
        if not owner_hash:
            return 0
        with self.lock, self.write():
            self.run("INSERT INTO withdrawn_owners (owner_hash, withdrawn_at) VALUES (?, ?) "
                     "ON CONFLICT (owner_hash) DO NOTHING", (owner_hash, time.time()))
        return self._delete_batches(
            "DELETE FROM drawings WHERE key_id IN (SELECT key_id FROM drawings WHERE owner_hash = ? LIMIT ?)",
            (owner_hash,), PRUNE_BATCH)

    def iter_drawings(self, word: str | None = None, batch: int = 500,
                      skip_games: Sequence[str] = ()) -> Iterator[DrawingRecord]:
        where, params = _drawings_where(word, skip_games)
        after: tuple[float, str] = (-math.inf, "")
        while True:  # keyset pages: no cursor held open between batches
            page = self.rows(
                "SELECT key_id, word, game, conditions, strokes, recognized, created_at FROM drawings "
                f"WHERE {where} AND (created_at > ? OR (created_at = ? AND key_id > ?)) "
                "ORDER BY created_at, key_id LIMIT ?",
                (*params, after[0], after[0], after[1], batch),
            )
            for key_id, w, game, cond, strokes, recognized, created in page:
                yield DrawingRecord(w, game, json.loads(strokes), json.loads(cond), bool(recognized),
                                    key_id, float(created))
            if len(page) < batch:
                return
            after = (float(page[-1][6]), page[-1][0])

    def drawing_counts(self, skip_games: Sequence[str] = ()) -> dict[str, int]:
        where, params = _drawings_where(None, skip_games)
        found = self.rows(
            f"SELECT word, COUNT(*) FROM drawings WHERE {where} GROUP BY word ORDER BY word", params
        )
        return {w: int(n) for w, n in found}

    # -- bot keys --------------------------------------------------------------------------------
    _KEY_COLUMNS = ("id, name, secret_hash, max_rooms, strokes_per_minute, created_at, revoked_at, "
                    "last_used_at")

    @staticmethod
    def _key(row: Sequence[Any]) -> BotKey:
        kid, name, secret_hash, rooms, strokes, created, revoked, used = row
        return BotKey(kid, name, secret_hash, int(rooms), int(strokes), float(created),
                      None if revoked is None else float(revoked), None if used is None else float(used))

    def create_bot_key(self, name: str, secret_hash: str, max_rooms: int, strokes_per_minute: int,
                       now: float | None = None) -> BotKey:
        check_key_name(name)
        _check_id(secret_hash, "key hash")
        key = BotKey(secrets.token_hex(6), name, secret_hash, _check_quota(max_rooms, "rooms at once"),
                     _check_quota(strokes_per_minute, "strokes per minute"),
                     time.time() if now is None else now)
        with self.lock, self.write():
            if self.run("SELECT 1 FROM bot_keys WHERE name = ?", (name,)).fetchone() is not None:
                raise BadRecord(f"a key named {name!r} exists already (names are never reused)")
            self.run(f"INSERT INTO bot_keys ({self._KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
                     (key.id, key.name, key.secret_hash, key.max_rooms, key.strokes_per_minute,
                      key.created_at))
        return key

    def list_bot_keys(self) -> list[BotKey]:
        found = self.rows(f"SELECT {self._KEY_COLUMNS} FROM bot_keys ORDER BY created_at, id")
        return [self._key(r) for r in found]

    def find_bot_key(self, secret_hash: str) -> BotKey | None:
        found = self.rows(f"SELECT {self._KEY_COLUMNS} FROM bot_keys WHERE secret_hash = ?", (secret_hash,))
        return self._key(found[0]) if found else None

    def bot_keys(self, ids: Sequence[str]) -> list[BotKey]:
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        return [self._key(r) for r in self.rows(
            f"SELECT {self._KEY_COLUMNS} FROM bot_keys WHERE id IN ({marks})", tuple(ids))]

    def revoke_bot_key(self, name_or_id: str, now: float | None = None) -> BotKey:
        now = time.time() if now is None else now
        with self.lock, self.write():
            self.run("UPDATE bot_keys SET revoked_at = ? WHERE (name = ? OR id = ?) AND revoked_at IS NULL",
                     (now, name_or_id, name_or_id))
            found = self.run(f"SELECT {self._KEY_COLUMNS} FROM bot_keys WHERE name = ? OR id = ?",
                             (name_or_id, name_or_id)).fetchall()
        if not found:
            raise UnknownKey(f"no key named {name_or_id[:80]!r} (nor with that id): see `griffon keys list`")
        return self._key(found[0])

    def claim_key_room(self, key_id: str, session: str, holder: str, max_rooms: int, fresh_after: float,
                       now: float | None = None) -> int | None:
        _check_id(session, "session id")
        now = time.time() if now is None else now
        with self.lock, self.write():
            # the key's row, updated first, is locked until the commit: two servers admitting rooms
            # of one key at once count one after the other (SQLite: the write lock does the same)
            self.run("UPDATE bot_keys SET last_used_at = ? WHERE id = ?", (now, key_id))
            held = int(self.run("SELECT COUNT(*) FROM bot_key_rooms WHERE key_id = ? AND seen_at >= ? "
                                "AND session <> ?", (key_id, fresh_after, session)).fetchone()[0])
            if max_rooms and held >= max_rooms:
                return None
            self.run("DELETE FROM bot_key_rooms WHERE key_id = ? AND seen_at < ?", (key_id, fresh_after))
            self.run("DELETE FROM bot_key_rooms WHERE session = ?", (session,))
            self.run("INSERT INTO bot_key_rooms (session, key_id, holder, seen_at) VALUES (?, ?, ?, ?)",
                     (session, key_id, holder, now))
        return held + 1

    def renew_key_rooms(self, rooms: Sequence[tuple[str, str]], holder: str,
                        now: float | None = None) -> None:
        now = time.time() if now is None else now
        for start in range(0, len(rooms), PRUNE_BATCH):
            part = [(session, key_id, holder, now) for session, key_id in rooms[start:start + PRUNE_BATCH]]
            with self.lock, self.write(), self.guard():
                self.conn.cursor().executemany(self.sql(
                    "INSERT INTO bot_key_rooms (session, key_id, holder, seen_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (session) DO UPDATE SET seen_at = excluded.seen_at"), part)

    def release_key_room(self, session: str) -> None:
        with self.lock, self.write():
            self.run("DELETE FROM bot_key_rooms WHERE session = ?", (session,))

    def key_rooms(self, key_ids: Sequence[str], fresh_after: float) -> dict[str, int]:
        if not key_ids:
            return {}
        marks = ", ".join("?" * len(key_ids))
        found = self.rows(f"SELECT key_id, COUNT(*) FROM bot_key_rooms WHERE key_id IN ({marks}) "
                          "AND seen_at >= ? GROUP BY key_id", (*key_ids, fresh_after))
        return {k: int(n) for k, n in found}

    # -- lobbies ---------------------------------------------------------------------------------
    def save_room(self, code: str, lobby: dict[str, Any], now: float | None = None) -> None:
        _check_id(code, "room code")
        text = to_json(lobby, MAX_LOBBY_BYTES, "the lobby")
        now = time.time() if now is None else now
        with self.lock, self.write():
            self.run("INSERT INTO rooms (code, lobby, created_at, updated_at) VALUES (?, ?, ?, ?) "
                     "ON CONFLICT (code) DO UPDATE SET lobby = excluded.lobby, "
                     "updated_at = excluded.updated_at",
                     (code, text, now, now))

    def load_rooms(self) -> list[tuple[str, dict[str, Any], float]]:
        found = self.rows("SELECT code, lobby, updated_at FROM rooms ORDER BY updated_at, code")
        return [(code, json.loads(lobby), float(updated)) for code, lobby, updated in found]

    def delete_room(self, code: str) -> None:
        with self.lock, self.write():
            self.run("DELETE FROM rooms WHERE code = ?", (code,))

    # -- bot rooms -------------------------------------------------------------------------------
    def save_bot_rooms(self, rooms: Sequence[BotRoomRecord], deleted: Sequence[str] = (),
                       max_bytes: int = MAX_BOT_ROOM_BYTES) -> None:
        limit = max(4, min(int(max_bytes), MAX_BOT_ROOM_BYTES))
        rows = []
        for room in rooms:
            _check_id(room.session, "bot room session")
            _check_id(room.token_hash, "resume token hash")
            if room.key_id is not None:
                _check_id(room.key_id, "bot key id")
            if not all(isinstance(s, str) and s.startswith("[") for s in room.strokes):
                raise BadRecord(f"bot room {room.session}: each stroke is given as its JSON list")
            strokes = "[" + ",".join(room.strokes) + "]"
            text = to_json(room.state, limit - 2, f"bot room {room.session}'s state")
            size = len(text.encode("utf-8")) + len(strokes.encode("utf-8"))
            if size > limit - 2:
                raise BadRecord(f"bot room {room.session}'s state and strokes are larger than {limit} bytes")
            events = to_json(fit_events(room.events, limit - size)[0], limit - size, "the bot room's events")
            created = time.time() if room.created_at is None else float(room.created_at)
            total = size + len(events.encode("utf-8"))
            rows.append((room.session, room.token_hash, room.key_id, text, strokes, events, total, created))
        gone = [_check_id(session, "bot room session") for session in deleted]
        with self.lock, self.write():
            for row in rows:
                self.run(
                    "INSERT INTO bot_rooms (session, token_hash, key_id, state, strokes, events, bytes, "
                    f"created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, {self.now_sql}) ON CONFLICT "
                    "(session) DO UPDATE SET token_hash = excluded.token_hash, key_id = excluded.key_id, "
                    "state = excluded.state, strokes = excluded.strokes, events = excluded.events, "
                    "bytes = excluded.bytes, updated_at = excluded.updated_at", row,
                )
            for session in gone:
                self.run("DELETE FROM bot_rooms WHERE session = ?", (session,))

    def load_bot_room(self, session: str) -> StoredBotRoom | None:
        found = self.rows(
            f"SELECT session, token_hash, key_id, state, strokes, events, created_at, {self.now_sql} - "
            "updated_at FROM bot_rooms WHERE session = ?", (session,),
        )
        if not found:
            return None
        sid, token_hash, key_id, state, strokes, events, created, age = found[0]
        try:
            data, drawn, listed = json.loads(state), json.loads(strokes), json.loads(events)
        except ValueError as error:
            raise BadRecord(f"bot room {sid}: its stored state is not JSON: {error}") from None
        if not isinstance(data, dict) or not isinstance(drawn, list) or not isinstance(listed, list):
            raise BadRecord(f"bot room {sid}: its stored state is not a JSON object and lists")
        return StoredBotRoom(sid, token_hash, key_id, data, listed, float(created), max(0.0, float(age)),
                             drawn)

    def prune_bot_rooms(self, older_than_s: float) -> int:
        with self.lock, self.write():
            return int(self.run(f"DELETE FROM bot_rooms WHERE updated_at < {self.now_sql} - ?",
                                (float(older_than_s),)).rowcount)

    # -- upkeep ----------------------------------------------------------------------------------
    def prune(self, retention: Retention | None = None, now: float | None = None,
              batch: int = PRUNE_BATCH) -> PruneReport:
        """Delete in transactions of at most `batch` rows (games: as many as hold at most `batch`
        moves, one at least), releasing the lock between them: the service's writes never wait
        behind one big DELETE."""
        keep = retention or self.retention
        now = time.time() if now is None else now
        games = moves = transcripts = drawings = 0
        if keep.games_days > 0:
            cutoff = now - keep.games_days * DAY_S
            while True:  # a few games at a time: at most `batch` moves (or one game) per transaction
                with self.lock, self.write():
                    found = self.run("SELECT id, moves FROM games WHERE updated_at < ? ORDER BY id LIMIT ?",
                                     (cutoff, batch)).fetchall()
                    ids, rows = [], 0
                    for game_id, count in found:
                        if ids and rows + int(count) > batch:
                            break
                        ids.append(game_id)
                        rows += int(count)
                    if ids:
                        marks = ", ".join("?" * len(ids))
                        moves += self.run(f"DELETE FROM moves WHERE game_id IN ({marks})", ids).rowcount
                        games += self.run(f"DELETE FROM games WHERE id IN ({marks})", ids).rowcount
                if len(found) < batch and len(ids) == len(found):
                    break
        if keep.transcripts_days > 0:
            cutoff = now - keep.transcripts_days * DAY_S
            transcripts += self._delete_batches(
                "DELETE FROM transcripts WHERE id IN "
                "(SELECT id FROM transcripts WHERE updated_at < ? LIMIT ?)",
                (cutoff,), batch)
        excess = int(self.rows("SELECT COUNT(*) FROM transcripts")[0][0]) - keep.transcripts_max
        while excess > 0:  # the oldest beyond the newest `transcripts_max`
            with self.lock, self.write():
                done = self.run(
                    "DELETE FROM transcripts WHERE id IN (SELECT id FROM transcripts "
                    "ORDER BY created_at, id DESC LIMIT ?)", (min(batch, excess),),
                ).rowcount
            transcripts += done
            excess = 0 if done == 0 else excess - done
        if keep.drawings_days > 0:
            cutoff = now - keep.drawings_days * DAY_S
            drawings = self._delete_batches(
                "DELETE FROM drawings WHERE key_id IN "
                "(SELECT key_id FROM drawings WHERE created_at < ? LIMIT ?)",
                (cutoff,), batch)
        return PruneReport(games, moves, transcripts, drawings)

    def _delete_batches(self, statement: str, params: tuple[Any, ...], batch: int) -> int:
        """Run a ``... LIMIT ?`` DELETE until it deletes fewer than `batch` rows; one transaction each."""
        total = 0
        while True:
            with self.lock, self.write():
                done = self.run(statement, (*params, batch)).rowcount
            total += done
            if done < batch:
                return total

    def counts(self) -> dict[str, int]:
        """Rows per table, and unfinished games."""
        out = {t: int(self.rows(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in TABLES}
        out["games_playing"] = int(self.rows("SELECT COUNT(*) FROM games WHERE status = 'playing'")[0][0])
        return out

    def info(self) -> StoreInfo:
        return StoreInfo(self.backend, self.location, self.size_bytes(), self.schema_version(), self.counts())

    def close(self) -> None:
        for name in ("_move_writer", "_background_writer"):  # store.group_commit's, store.background's
            writer = getattr(self, name, None)
            if writer is not None:
                writer.close()  # what it holds is written first
        with self.lock:
            self.conn.close()


def _drawings_where(word: str | None, skip_games: Sequence[str]) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause (never empty) and parameters for drawings of `word`, not of `skip_games`."""
    clauses, params = ["1 = 1"], []
    if word is not None:
        clauses.append("word = ?")
        params.append(word)
    for game in skip_games:
        clauses.append("game <> ?")
        params.append(game)
    return " AND ".join(clauses), tuple(params)


def fit_events(events: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], int]:
    """The first events whose JSON list fits in `limit` bytes, and how many were cut."""
    kept, size = [], 2  # the brackets
    for i, event in enumerate(events):
        piece = len(to_json(event, 2**31, "a transcript event").encode("utf-8")) + (1 if kept else 0)
        if size + piece > limit:
            return kept, len(events) - i
        kept.append(event)
        size += piece
    return kept, 0
