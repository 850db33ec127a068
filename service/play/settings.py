"""Knobs of the solo games and rooms with friends, read from ``GRIFFON_PLAY_*`` variables.

A `store.settings.EnvSettings` (pydantic-settings): each operator's field maps to
``GRIFFON_PLAY_<FIELD IN CAPITALS>``, e.g. ``GRIFFON_PLAY_ROOM_GRACE_S=60``. The rules constants
themselves live in ``games/data/*.yaml``; the overrides of the rules (shorter timers for tests and
demos), the pace of the AI players and the bounds of a game's log are ``tuning`` fields: constructor
parameters, which a server started by the tests takes from ``GRIFFON_TUNING``. The games' limits
shared with the rest of the service (games per client, idle expiry, guess rate; also
``GRIFFON_PLAY_*``) are ``service.settings.Settings.play_limits`` (`service.settings.PlayLimits`);
docs/CONFIG.md lists them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from service.settings import SettingsError
from store.settings import EnvSettings, tuning


class PlaySettingsError(SettingsError):
    """A ``GRIFFON_PLAY_*`` variable that does not hold a valid value."""


class PlaySettings(EnvSettings):
    """Rooms of the solo games; overrides of the rules and pacing (tuning)."""

    model_config = SettingsConfigDict(env_prefix="GRIFFON_PLAY_")
    env_error: ClassVar[type[Exception]] = PlaySettingsError
    env_what: ClassVar[str] = "play settings"

    kontour_timer_s: float | None = tuning(
        default=None, gt=0, le=600, description="Kontour sand timer, in seconds (unset: the rules')"
    )
    kontour_draw_card_s: float | None = tuning(
        default=None, gt=0, le=600,
        description="seconds a Kontour drawer in a room of friends has to take their card before it is "
        "taken for them (unset: the rules')",
    )
    kontour_target: int | None = tuning(
        default=None, ge=1, le=50, description="points that win a Kontour game (unset: the rules')"
    )
    pictomania_round_s: float | None = tuning(
        default=None, gt=0, le=1200,
        description="length of a Pictomania round, in seconds (unset: the rules')",
    )
    pictomania_rounds: int | None = tuning(
        default=None, ge=1, le=5, description="rounds in a Pictomania game (unset: the rules')"
    )
    tick_s: float = tuning(
        default=0.1, gt=0, le=1, description="seconds between two looks of the AI players and the timers"
    )
    ai_think_s: float | None = tuning(
        default=None, ge=0, le=30,
        description="seconds the AI drawer waits before taking a Kontour card (unset: its level's pace)",
    )
    between_turns_s: float = tuning(
        default=3.0, ge=0, le=60, description="pause between two Kontour turns, in seconds"
    )
    human_done_after_s: float = tuning(
        default=6.0, gt=0,
        description="seconds without a stroke after which a person's Pictomania drawing is done",
    )
    room_grace_s: float = Field(
        default=30.0, gt=0, le=600,
        description="seconds a person of a room may be away before an AI plays their seat",
    )
    rooms_per_client: int = Field(
        default=2, ge=1, le=20, description="rooms one client may have open at once"
    )
    room_seats: int = tuning(
        default=6, ge=2, le=6, description="seats of a room, people and AI players (within the rules' bounds)"
    )
    lobby_expiry_s: float = Field(
        default=1800.0, gt=0, description="seconds after which a room nobody started is closed"
    )
    max_pictomania_strokes: int | None = tuning(
        default=None, ge=1, le=1_000,
        description="strokes a player may draw in a Pictomania round, undone ones too (unset: the rules')",
    )
    max_moves: int = tuning(
        default=10_000, ge=10, description="moves logged per game, every player's; beyond: game_too_long"
    )
    max_log_bytes: int = tuning(
        default=2 * 1024 * 1024, ge=10_000,
        description="bytes of moves logged per game, every player's; beyond: game_too_long",
    )
    drawings: Path | None = tuning(
        default=None,
        description="drawing pack of the AI drawer (unset: the shipped pack, games/data/drawings)",
    )
    ai_names: ClassVar[tuple[str, ...]] = ("Plume", "Fusain", "Pastel", "Crayon", "Gouache")  # the AI players
