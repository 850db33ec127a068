"""One settings object for the service, read from ``GRIFFON_*`` environment variables.

Every field of :class:`Settings` maps to ``GRIFFON_<FIELD NAME IN CAPITALS>``; for example
``GRIFFON_MODEL=runs/tiny/model.pt`` or ``GRIFFON_MAX_BODY_BYTES=2000000``. Lists
(``GRIFFON_CORS_ORIGINS``) are comma separated. A bad value raises :class:`SettingsError` naming
the variable, at start-up rather than at the first request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

ENV_PREFIX = "GRIFFON_"


class SettingsError(ValueError):
    """An environment variable that does not hold a valid setting."""


class Settings(BaseModel):
    """Limits and knobs of the service (defaults suit a small 2-core machine)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: Path | None = Field(default=None, description="checkpoint path; None = shipped weights")
    # -- HTTP -----------------------------------------------------------------------------------
    max_body_bytes: int = Field(default=2_000_000, ge=1_000, description="larger bodies get 413")
    max_points: int = Field(default=10_000, ge=10, le=10_000, description="points per drawing")
    max_strokes: int = Field(default=500, ge=1, le=1_000, description="strokes per drawing")
    max_guess_batch: int = Field(default=256, ge=1, le=512, description="drawings per /guess/batch")
    max_top_k: int = Field(default=20, ge=1, le=345)
    cors_origins: list[str] = Field(default_factory=lambda: ["*"])
    # -- shared inference -----------------------------------------------------------------------
    max_batch: int = Field(default=64, ge=1, le=512, description="rasters per forward pass")
    max_queue: int = Field(default=512, ge=1, description="rasters waiting; beyond: 503")
    batch_wait_ms: float = Field(default=1.0, ge=0, le=100, description="gather time per batch")
    preprocess_threads: int = Field(default=2, ge=1, le=64, description="raster thread pool")
    # -- sessions (bot connections and solo games) ----------------------------------------------
    max_sessions: int = Field(default=100, ge=1, description="live solo games")
    max_bot_sessions: int = Field(default=200, ge=1, description="open bot connections")
    idle_expiry_s: float = Field(default=900.0, gt=0, description="idle solo games expire")
    bot_idle_timeout_s: float = Field(default=120.0, gt=0, description="silent bot sockets close")
    max_message_rate: float = Field(default=60.0, gt=0, description="frames/s per connection")
    max_message_burst: int = Field(default=120, ge=1, description="frames allowed in a burst")
    max_frame_bytes: int = Field(default=262_144, ge=1_024, description="bytes per WebSocket frame")
    bot_tick_s: float = Field(default=0.05, gt=0, le=1, description="bot policy decision period")
    transcript_events: int = Field(default=2_000, ge=10, description="events kept per transcript")
    transcripts_kept: int = Field(default=200, ge=1, description="finished bot sessions kept")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``GRIFFON_*`` variables (default: ``os.environ``), defaults elsewhere."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is None or raw == "":
                continue
            values[name] = [p.strip() for p in raw.split(",") if p.strip()] if (
                field.annotation == list[str]
            ) else raw
        try:
            return cls(**values)
        except ValidationError as error:
            problems = "; ".join(
                f"{ENV_PREFIX}{str(e['loc'][0]).upper()}: {e['msg']}" for e in error.errors()
            )
            raise SettingsError(f"invalid service settings: {problems}") from error
