"""The option for a deployment that outgrows one machine: PostgreSQL through psycopg 3.

``GRIFFON_DB_URL=postgresql://user:password@host:5432/griffon`` (any libpq URL; tables go to the
connection's ``search_path``, e.g. ``?options=-csearch_path%3Dgriffon``). The SQL is the one of
`store.Store`; a concurrent first start of several servers is serialized by an advisory
lock around the migrations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from store.database import Store
from store.errors import StoreUnavailable
from store.records import Retention
from store.schema import KEY_TABLES, ROOM_TABLES, SCHEMA_TABLE, TABLES

MIGRATION_LOCK = 0x6772_6966  # "grif": pg_advisory_xact_lock key
CONNECT_TIMEOUT_S = 3
STATEMENT_TIMEOUT_MS = 5_000


def redact(url: str) -> str:
    """The URL without its password."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


class PostgresStore(Store):
    """`Store` over one PostgreSQL connection (autocommit; each write is one transaction)."""

    backend = "postgresql"
    paramstyle = "format"
    now_sql = "EXTRACT(EPOCH FROM clock_timestamp())"

    def __init__(self, url: str, retention: Retention | None = None,
                 timeout_ms: int = STATEMENT_TIMEOUT_MS) -> None:
        try:
            import psycopg
        except ImportError:  # pragma: no cover - a dependency of the project
            raise StoreUnavailable("PostgreSQL needs psycopg: pip install 'psycopg[binary]'") from None
        self.url, self.location, self.depth, self.timeout_ms = url, redact(url), 0, int(timeout_ms)
        super().__init__(self._connect(), retention, timeout_ms / 1000)
        self.driver_error, self.integrity_error = psycopg.Error, psycopg.IntegrityError
        try:
            self.migrate()
        except BaseException:
            self.conn.close()
            raise

    def _connect(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
            # no statement (nor lock wait) runs longer: a stalled server fails a write quickly
            conn.execute(f"SET statement_timeout = {self.timeout_ms}")
            conn.execute(f"SET lock_timeout = {self.timeout_ms}")
            return conn
        except psycopg.Error as error:
            raise StoreUnavailable(f"cannot connect to {self.location}: {str(error).strip()}") from None

    def reconnect_if_lost(self) -> None:
        """After the server restarted or dropped the connection, the next operation reconnects
        (the one that met the broken connection failed with `StoreUnavailable`)."""
        if self.depth == 0 and (self.conn.closed or self.conn.broken):
            self.conn = self._connect()

    def run(self, text: str, params: Sequence[Any] = ()) -> Any:
        with self.lock:
            self.reconnect_if_lost()
            return super().run(text, params)

    @contextmanager
    def write(self) -> Iterator[Any]:
        with self.lock:
            self.reconnect_if_lost()
            self.depth += 1
            try:
                with self.guard(), self.conn.transaction():
                    yield self.conn
            finally:
                self.depth -= 1

    def lock_schema(self) -> None:
        self.run("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))

    def tables(self) -> set[str]:
        return {r[0] for r in self.rows(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )}

    def size_bytes(self) -> int:
        names = sorted(self.tables() & {*TABLES, *KEY_TABLES, *ROOM_TABLES, SCHEMA_TABLE})
        if not names:
            return 0
        found = self.rows(
            "SELECT COALESCE(SUM(pg_total_relation_size(quote_ident(current_schema()) || '.' || t)), 0) "
            "FROM unnest(?::text[]) AS t", (names,),
        )
        return int(found[0][0])

    def vacuum(self) -> None:
        with self.lock:
            for table in (*TABLES, *KEY_TABLES, *ROOM_TABLES):
                self.run(f"VACUUM (ANALYZE) {table}")
