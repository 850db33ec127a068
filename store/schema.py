"""The schema: the numbered migrations ``store/migrations/NNNN_name.sql``, the applied ones listed in
``griffon_schema``, and `Schema.migrate`, which checks a database and brings it up to date."""

from __future__ import annotations

import time
from pathlib import Path

from store.errors import ForeignDatabase, SchemaTooNew, StoreError
from store.sql import SqlCore

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SCHEMA_TABLE = "griffon_schema"
TABLES = ("games", "moves", "transcripts", "drawings")  # counted by `info`
KEY_TABLES = ("bot_keys", "bot_key_rooms")  # the API keys of bot rooms
ROOM_TABLES = ("rooms", "room_games", "bot_rooms")  # lobbies; the games rooms lead to; bot rooms' memory


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


class Schema(SqlCore):
    """The schema's version and migrations."""

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
                    "it is not a Griffon database; point GRIFFON_DB_URL elsewhere"
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
