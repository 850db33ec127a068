"""One settings object for the service, read from ``GRIFFON_*`` environment variables.

Every field of :class:`Settings` maps to ``GRIFFON_<FIELD NAME IN CAPITALS>``; for example
``GRIFFON_MODEL=runs/tiny/model.pt`` or ``GRIFFON_MAX_BODY_BYTES=2000000``. Lists
(``GRIFFON_ALLOWED_ORIGINS``) are comma separated. A bad value raises :class:`SettingsError` naming
the variable, at start-up rather than at the first request. :func:`read_environment` is the one
environment reader (`store.settings.read_environment`; the solo games' ``GRIFFON_PLAY_*``
settings use it too).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from store import settings as store_settings

ENV_PREFIX = "GRIFFON_"
M = TypeVar("M", bound=BaseModel)


class SettingsError(ValueError):
    """An environment variable that does not hold a valid setting."""


def read_environment(
    cls: type[M], prefix: str, environ: Mapping[str, str] | None = None, what: str = "settings",
    error_class: type[SettingsError] = SettingsError,
) -> M:
    """``cls`` from ``<prefix><FIELD>`` variables (`store.settings.read_environment`, the one
    reader); raises ``error_class`` (a :class:`SettingsError`) naming each bad variable."""
    return store_settings.read_environment(cls, prefix, environ, what, error_class)


class Settings(BaseModel):
    """Limits and knobs of the service (defaults suit a small 2-core machine)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: Path | None = Field(default=None, description="checkpoint path; None = shipped weights")
    # -- HTTP and connections -------------------------------------------------------------------
    max_body_bytes: int = Field(default=2_000_000, ge=1_000, description="larger bodies get 413")
    max_points: int = Field(default=4_000, ge=10, le=10_000, description="points per drawing")
    max_stroke_points: int = Field(default=1_000, ge=2, le=10_000, description="points per stroke")
    max_strokes: int = Field(default=500, ge=1, le=1_000, description="strokes per drawing")
    max_guess_batch: int = Field(default=64, ge=1, le=512, description="drawings per /guess/batch")
    max_top_k: int = Field(default=20, ge=1, le=345)
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="other web origins allowed by CORS and on WebSockets ('*' = any); same-origin always",
    )
    header_timeout_s: float = Field(default=10.0, gt=0, le=300, description="request head must arrive")
    body_timeout_s: float = Field(default=10.0, gt=0, le=300, description="longest silence in a body")
    keep_alive_s: float = Field(default=5.0, gt=0, le=300, description="idle keep-alive connections")
    max_connections: int = Field(default=2_000, ge=10, description="open connections; beyond: refused")
    max_client_connections: int = Field(default=256, ge=1, description="open connections per client")
    trusted_proxies: list[str] = Field(
        default_factory=list, description="proxies whose X-Forwarded-For names the client"
    )
    # -- per-client budgets (a client = an IP address) ------------------------------------------
    client_cpu_share: float = Field(
        default=0.5, gt=0, le=64, description="preprocessing seconds per second for one client"
    )
    client_cpu_burst_s: float = Field(default=2.0, gt=0, le=600, description="preprocessing burst")
    client_points_per_s: float = Field(default=10_000, gt=0, description="points sent per second")
    client_points_burst: int = Field(default=40_000, ge=10, description="points in a burst")
    games_per_client: int = Field(default=3, ge=1, description="live solo games per client")
    games_per_client_hour: int = Field(default=30, ge=1, description="games created per hour")
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
    game_idle_timeout_s: float = Field(default=90.0, gt=0, description="silent game sockets close")
    max_game_sockets: int = Field(default=4, ge=1, le=64, description="open sockets per game")
    guess_rate: float = Field(default=1.0, gt=0, description="guesses per second in a game")
    guess_burst: int = Field(default=3, ge=1, description="guesses in a burst")
    max_message_rate: float = Field(default=60.0, gt=0, description="frames/s per connection")
    max_message_burst: int = Field(default=120, ge=1, description="frames allowed in a burst")
    max_frame_bytes: int = Field(default=262_144, ge=1_024, description="bytes per WebSocket frame")
    bot_tick_s: float = Field(default=0.05, gt=0, le=1, description="bot policy decision period")
    transcript_bytes: int = Field(default=65_536, ge=1_024, le=1_048_576,
                                  description="JSON bytes per transcript (live and in the database)")
    transcript_save_s: float = Field(default=5.0, ge=0, le=3600,
                                     description="a live transcript is saved at most this often")
    accept_room_drawings: bool = Field(
        default=False, description="store the drawings rooms give (round_end drawing_consent)"
    )
    room_drawings_per_day: int = Field(default=50, ge=0, le=100_000,
                                       description="room drawings stored per client address a day")
    transcripts_kept: int = Field(default=200, ge=1, description="finished bot sessions kept")
    list_bot_sessions: bool = Field(default=False, description="GET /v1/bot/sessions lists them all")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``GRIFFON_*`` variables (default: ``os.environ``), defaults elsewhere."""
        return read_environment(cls, ENV_PREFIX, environ, "service settings")
