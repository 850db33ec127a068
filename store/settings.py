"""Where the database is and how long it keeps things: ``GRIFFON_*`` variables, read once.

Every field of :class:`StoreSettings` maps to ``GRIFFON_<FIELD IN CAPITALS>``:

- ``GRIFFON_DATABASE_URL`` — ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or
  ``postgresql://user:password@host:5432/db``; unset: ``<GRIFFON_DATA_DIR>/griffon.db``;
- ``GRIFFON_DATA_DIR`` — the folder of the SQLite file (default ``./var``, created on first start);
- ``GRIFFON_RETAIN_*`` — retention (days; 0 = forever), see :class:`store.base.Retention`;
- ``GRIFFON_DB_TIMEOUT_MS`` — the longest a write waits for the database (SQLite busy wait and
  the store's lock; PostgreSQL ``statement_timeout`` and ``lock_timeout``): short, so that a stalled
  database fails a game's write quickly instead of freezing the server (``griffon db`` commands
  wait longer).

A bad value raises `StoreUnavailable` naming the variable, at start-up. :func:`read_environment`
is the one environment reader of the project (``service.settings`` uses it too).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from store.base import Retention, Store, StoreUnavailable

ENV_PREFIX = "GRIFFON_"
DB_FILE = "griffon.db"
CLI_TIMEOUT_MS = 600_000  # `griffon db ...`: a long prune, export or vacuum may take minutes
M = TypeVar("M", bound=BaseModel)


def read_environment(
    cls: type[M], prefix: str, environ: Mapping[str, str] | None = None, what: str = "settings",
    error_class: type[Exception] = ValueError,
) -> M:
    """``cls`` from ``<prefix><FIELD>`` variables (default: ``os.environ``); defaults elsewhere.

    A list or tuple field is comma separated. Raises ``error_class`` naming each bad variable.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        raw = environ.get(prefix + name.upper())
        if raw is None or raw == "":
            continue
        origin = getattr(field.annotation, "__origin__", None)
        values[name] = [p.strip() for p in raw.split(",") if p.strip()] if origin in (list, tuple) else raw
    try:
        return cls(**values)
    except ValidationError as error:
        problems = "; ".join(f"{prefix}{str(e['loc'][0]).upper()}: {e['msg']}" for e in error.errors())
        raise error_class(f"invalid {what}: {problems}") from error


class StoreSettings(BaseModel):
    """The database location, its checks, and retention."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: Path = Field(default=Path("var"), description="folder of the SQLite file")
    database_url: str | None = Field(default=None, description="sqlite:///… or postgresql://…")
    db_check: Literal["quick", "full", "off"] = Field(default="quick", description="SQLite check at start")
    db_synchronous: Literal["normal", "full"] = Field(
        default="normal", description="SQLite: full = every commit waits for the disk (power cuts)"
    )
    retain_games_days: float = Field(default=30.0, ge=0, description="games untouched this long are deleted")
    retain_transcripts_days: float = Field(default=30.0, ge=0, description="bot transcripts kept this long")
    retain_transcripts_max: int = Field(default=10_000, ge=1, description="bot transcripts kept at most")
    retain_drawings_days: float = Field(default=0.0, ge=0, description="consented drawings (0 = forever)")
    db_timeout_ms: int = Field(default=500, ge=10, le=CLI_TIMEOUT_MS,
                               description="the longest a write waits for the database (then it fails)")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> StoreSettings:
        """Settings from ``GRIFFON_*`` variables (default: ``os.environ``), defaults elsewhere."""
        return read_environment(cls, ENV_PREFIX, environ, "database settings", StoreUnavailable)

    @property
    def url(self) -> str:
        """The database URL (the default SQLite file when none is set)."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / DB_FILE}"  # an absolute path gives sqlite:////…

    @property
    def retention(self) -> Retention:
        """The retention rules."""
        return Retention(
            games_days=self.retain_games_days,
            transcripts_days=self.retain_transcripts_days,
            transcripts_max=self.retain_transcripts_max,
            drawings_days=self.retain_drawings_days,
        )


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///path`` URL (``sqlite:////abs/path`` for an absolute one)."""
    return Path(url.removeprefix("sqlite:///"))


def open_store(settings: StoreSettings | str | None = None) -> Store:
    """Open (and create or migrate) the database the settings name — or a URL.

    Raises `StoreUnavailable` (cannot reach or create it) or a `BadDatabase` subclass
    (corrupt file, another application's database, a newer schema)."""
    if settings is None:
        settings = StoreSettings.from_env()
    elif isinstance(settings, str):
        settings = StoreSettings(database_url=settings)
    url = settings.url
    if url.startswith("sqlite:///"):
        from store.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url), settings.retention, settings.db_check, settings.db_synchronous,
                           settings.db_timeout_ms)
    if url.startswith(("postgresql://", "postgres://")):
        from store.postgres import PostgresStore

        return PostgresStore(url, settings.retention, settings.db_timeout_ms)
    raise StoreUnavailable(
        f"unknown database URL {url.split(':', 1)[0]!r}: use sqlite:///path/to/file.db or postgresql://…"
    )
