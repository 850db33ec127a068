"""Where the database is and how long it keeps things: ``GRIFFON_*`` variables, read once.

Every field of :class:`StoreSettings` maps to ``GRIFFON_<FIELD IN CAPITALS>``:

- ``GRIFFON_DATABASE_URL`` — ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or
  ``postgresql://user:password@host:5432/db``; unset: ``<GRIFFON_DATA_DIR>/griffon.db``;
- ``GRIFFON_DATA_DIR`` — the folder of the SQLite file (default ``./var``, created on first start);
- ``GRIFFON_RETAIN_*`` — retention (days; 0 = forever), see :class:`store.base.Retention`.

A bad value raises `StoreUnavailable` naming the variable, at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from store.base import Retention, Store, StoreUnavailable

ENV_PREFIX = "GRIFFON_"
DB_FILE = "griffon.db"


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
    transcript_max_bytes: int = Field(default=1_048_576, ge=1_024, le=64 * 1_048_576,
                                      description="events of one transcript, in JSON bytes")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> StoreSettings:
        """Settings from ``GRIFFON_*`` variables (default: ``os.environ``), defaults elsewhere."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw:
                values[name] = raw
        try:
            return cls(**values)
        except ValidationError as error:
            problems = "; ".join(
                f"{ENV_PREFIX}{str(e['loc'][0]).upper()}: {e['msg']}" for e in error.errors()
            )
            raise StoreUnavailable(f"invalid database settings: {problems}") from None

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
            transcript_max_bytes=self.transcript_max_bytes,
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

        return SQLiteStore(sqlite_path(url), settings.retention, settings.db_check, settings.db_synchronous)
    if url.startswith(("postgresql://", "postgres://")):
        from store.postgres import PostgresStore

        return PostgresStore(url, settings.retention)
    raise StoreUnavailable(
        f"unknown database URL {url.split(':', 1)[0]!r}: use sqlite:///path/to/file.db or postgresql://…"
    )
