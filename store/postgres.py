"""The option for a deployment that outgrows one machine: PostgreSQL through psycopg 3.

``GRIFFON_DATABASE_URL=postgresql://user:password@host:5432/griffon`` (any libpq URL; tables go to the
connection's ``search_path``, e.g. ``?options=-csearch_path%3Dgriffon``). The SQL is the one of
`store.base.SqlStore`; a concurrent first start of several servers is serialized by an advisory
lock around the migrations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from store.base import SCHEMA_TABLE, TABLES, Retention, SqlStore, StoreUnavailable

MIGRATION_LOCK = 0x6772_6966  # "grif": pg_advisory_xact_lock key
CONNECT_TIMEOUT_S = 10


def redact(url: str) -> str:
    """The URL without its password."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


class PostgresStore(SqlStore):
    """`Store` over one PostgreSQL connection (autocommit; each write is one transaction)."""

    backend = "postgresql"
    paramstyle = "format"

    def __init__(self, url: str, retention: Retention | None = None) -> None:
        try:
            import psycopg
        except ImportError:  # pragma: no cover - a dependency of the project
            raise StoreUnavailable("PostgreSQL needs psycopg: pip install 'psycopg[binary]'") from None
        self.url, self.location, self.writing = url, redact(url), 0
        super().__init__(self._connect(), retention)
        self.driver_error, self.integrity_error = psycopg.Error, psycopg.IntegrityError
        try:
            self.migrate()
        except BaseException:
            self.conn.close()
            raise

    def _connect(self) -> Any:
        import psycopg

        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as error:
            raise StoreUnavailable(f"cannot connect to {self.location}: {str(error).strip()}") from None

    def reconnect_if_lost(self) -> None:
        """After the server restarted or dropped the connection, the next operation reconnects
        (the one that met the broken connection failed with `StoreUnavailable`)."""
        if self.writing == 0 and (self.conn.closed or self.conn.broken):
            self.conn = self._connect()

    def run(self, text: str, params: Sequence[Any] = ()) -> Any:
        with self.lock:
            self.reconnect_if_lost()
            return super().run(text, params)

    @contextmanager
    def write(self) -> Iterator[Any]:
        with self.lock:
            self.reconnect_if_lost()
            self.writing += 1
            try:
                with self.guard(), self.conn.transaction():
                    yield self.conn
            finally:
                self.writing -= 1

    def lock_schema(self) -> None:
        self.run("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))

    def tables(self) -> set[str]:
        return {r[0] for r in self.rows(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )}

    def size_bytes(self) -> int:
        names = sorted(self.tables() & {*TABLES, SCHEMA_TABLE})
        if not names:
            return 0
        found = self.rows(
            "SELECT COALESCE(SUM(pg_total_relation_size(quote_ident(current_schema()) || '.' || t)), 0) "
            "FROM unnest(?::text[]) AS t", (names,),
        )
        return int(found[0][0])

    def no_limit(self) -> str:
        return "LIMIT ALL"

    def vacuum(self) -> None:
        with self.lock:
            for table in TABLES:
                self.run(f"VACUUM (ANALYZE) {table}")
