"""Knobs of the solo games (browser play against the AI), read from ``GRIFFON_PLAY_*`` variables.

The rules constants themselves live in ``games/data/*.yaml``; these are the service's overrides
(shorter timers for tests and demos) and the pace of the AI players around the rules. Each field
maps to ``GRIFFON_PLAY_<FIELD IN CAPITALS>``, e.g. ``GRIFFON_PLAY_KONTOUR_TIMER_S=8``. Limits shared
with the rest of the service (max games, idle expiry, message rate, frame size) are in
``service.settings.Settings``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from service.settings import SettingsError, read_environment

ENV_PREFIX = "GRIFFON_PLAY_"


class PlaySettingsError(SettingsError):
    """A ``GRIFFON_PLAY_*`` variable that does not hold a valid value."""


class PlaySettings(BaseModel):
    """Overrides and pacing of the solo games."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kontour_timer_s: float | None = Field(default=None, gt=0, le=600, description="None: rules (30 s)")
    kontour_target: int | None = Field(default=None, ge=1, le=50, description="None: rules (10)")
    pictomania_round_s: float | None = Field(default=None, gt=0, le=1200, description="None: 120 s")
    pictomania_rounds: int | None = Field(default=None, ge=1, le=5, description="None: rules (5)")
    tick_s: float = Field(default=0.1, gt=0, le=1, description="AI decision / timer period")
    ai_think_s: float | None = Field(
        default=None, ge=0, le=30, description="AI drawer before taking a card (None: the AI level's card_s)"
    )
    between_turns_s: float = Field(default=3.0, ge=0, le=60, description="pause after a Kontour turn")
    human_done_after_s: float = Field(
        default=6.0, gt=0, description="Pictomania: a silent human drawing counts as finished"
    )
    max_points_per_stroke: int = Field(default=1_000, ge=2, le=10_000)
    max_pictomania_strokes: int | None = Field(
        default=None, ge=1, le=1_000,
        description="Pictomania strokes a player may draw a round, undone ones too (None: rules, 300)",
    )
    max_moves: int = Field(default=10_000, ge=10, description="moves logged per game; beyond: game_too_long")
    max_log_bytes: int = Field(
        default=2 * 1024 * 1024, ge=10_000, description="bytes of moves logged per game (game_too_long)"
    )
    drawings: Path | None = Field(
        default=None,
        description="drawing pack file for the AI drawer (None: the shipped pack, games/data/drawings)",
    )
    ai_names: tuple[str, ...] = ("Plume", "Fusain", "Pastel", "Crayon", "Gouache")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PlaySettings:
        """Settings from ``GRIFFON_PLAY_*`` variables (default: ``os.environ``)."""
        return read_environment(cls, ENV_PREFIX, environ, "play settings", PlaySettingsError)
