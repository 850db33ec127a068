"""The API keys of bot rooms as stored (`service.bot.keys` checks them): each key's quotas, and the
rooms open under it by every server sharing the database."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Sequence
from typing import Any

from store.errors import BadRecord, UnknownKey
from store.records import BotKey, check_id
from store.sql import PRUNE_BATCH, SqlCore

KEY_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
MAX_KEY_QUOTA = 1_000_000


def check_key_name(name: Any) -> str:
    """A bot key's name: 1 to 64 letters, digits, ``_``, ``.`` or ``-`` (it labels metrics)."""
    if not isinstance(name, str) or not KEY_NAME_RE.match(name):
        raise BadRecord(f"a key name is 1 to 64 letters, digits, '_', '.' or '-' (first a letter or digit), "
                        f"not {str(name)[:80]!r}")
    return name


def check_quota(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_KEY_QUOTA:
        raise BadRecord(f"{what} must be an integer from 0 (no limit) to {MAX_KEY_QUOTA}")
    return value


class BotKeyRows(SqlCore):
    """The ``bot_keys`` and ``bot_key_rooms`` tables."""

    _KEY_COLUMNS = ("id, name, secret_hash, max_rooms, strokes_per_minute, created_at, revoked_at, "
                    "last_used_at")

    @staticmethod
    def _key(row: Sequence[Any]) -> BotKey:
        kid, name, secret_hash, rooms, strokes, created, revoked, used = row
        return BotKey(kid, name, secret_hash, int(rooms), int(strokes), float(created),
                      None if revoked is None else float(revoked), None if used is None else float(used))

    def create_bot_key(self, name: str, secret_hash: str, max_rooms: int, strokes_per_minute: int,
                       now: float | None = None) -> BotKey:
        """Store a new key (`BadRecord` if the name is taken or malformed)."""
        check_key_name(name)
        check_id(secret_hash, "key hash")
        key = BotKey(secrets.token_hex(6), name, secret_hash, check_quota(max_rooms, "rooms at once"),
                     check_quota(strokes_per_minute, "strokes per minute"),
                     time.time() if now is None else now)
        with self.lock, self.write():
            if self.run("SELECT 1 FROM bot_keys WHERE name = ?", (name,)).fetchone() is not None:
                raise BadRecord(f"a key named {name!r} exists already (names are never reused)")
            self.run(f"INSERT INTO bot_keys ({self._KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
                     (key.id, key.name, key.secret_hash, key.max_rooms, key.strokes_per_minute,
                      key.created_at))
        return key

    def list_bot_keys(self) -> list[BotKey]:
        """Every key, revoked ones too, oldest first."""
        found = self.rows(f"SELECT {self._KEY_COLUMNS} FROM bot_keys ORDER BY created_at, id")
        return [self._key(r) for r in found]

    def find_bot_key(self, secret_hash: str) -> BotKey | None:
        """The key whose secret hashes to `secret_hash`, or None."""
        found = self.rows(f"SELECT {self._KEY_COLUMNS} FROM bot_keys WHERE secret_hash = ?", (secret_hash,))
        return self._key(found[0]) if found else None

    def bot_keys(self, ids: Sequence[str]) -> list[BotKey]:
        """The keys with these ids (what a server re-reads to see revocations and new quotas)."""
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        return [self._key(r) for r in self.rows(
            f"SELECT {self._KEY_COLUMNS} FROM bot_keys WHERE id IN ({marks})", tuple(ids))]

    def revoke_bot_key(self, name_or_id: str, now: float | None = None) -> BotKey:
        """Revoke a key by its name or id (`UnknownKey` if none); a revoked key stays revoked."""
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
        """Count a room open under a key, unless the key already holds `max_rooms` rooms (0: no
        limit) renewed since `fresh_after`: the rooms it then holds, or None when refused."""
        check_id(session, "session id")
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
        """Mark these ``(session, key_id)`` rooms as still open, counting again any that had
        expired (the rooms of a process that stops renewing expire)."""
        now = time.time() if now is None else now
        for start in range(0, len(rooms), PRUNE_BATCH):
            part = [(session, key_id, holder, now) for session, key_id in rooms[start:start + PRUNE_BATCH]]
            with self.lock, self.write(), self.guard():
                self.conn.cursor().executemany(self.sql(
                    "INSERT INTO bot_key_rooms (session, key_id, holder, seen_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (session) DO UPDATE SET seen_at = excluded.seen_at"), part)

    def release_key_room(self, session: str) -> None:
        """A room closed: it no longer counts."""
        with self.lock, self.write():
            self.run("DELETE FROM bot_key_rooms WHERE session = ?", (session,))

    def key_rooms(self, key_ids: Sequence[str], fresh_after: float) -> dict[str, int]:
        """Rooms open per key (renewed since `fresh_after`), by every server sharing the database."""
        if not key_ids:
            return {}
        marks = ", ".join("?" * len(key_ids))
        found = self.rows(f"SELECT key_id, COUNT(*) FROM bot_key_rooms WHERE key_id IN ({marks}) "
                          "AND seen_at >= ? GROUP BY key_id", (*key_ids, fresh_after))
        return {k: int(n) for k, n in found}
