"""Difficulty levels of the AI players, read from ``games/data/ai_levels.yaml``."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
LEVELS_FILE = DATA_DIR / "ai_levels.yaml"


class AILevelError(ValueError):
    """An unknown level name or a malformed levels file."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KontourGuesserLevel(_Frozen):
    """How a Kontour AI guesser perceives and speaks (see docs/AI_PLAYERS.md)."""

    reaction_s: float = Field(ge=0)
    reaction_jitter: float = Field(default=0.0, ge=0, le=1)
    threshold: float = Field(gt=0, le=1)
    threshold_floor: float = Field(gt=0, le=1)
    noise: float = Field(ge=0)
    temperature: float = Field(gt=0)
    max_guesses_per_s: float = Field(gt=0)
    close_boost: float = Field(ge=1)
    off_topic_factor: float = Field(gt=0, le=1)
    min_strokes: int = Field(default=1, ge=1)  # strokes seen before it may speak
    type_base_s: float = Field(default=0.0, ge=0)  # typing a word: hand to keys, Enter...
    type_char_s: float = Field(default=0.0, ge=0)  # ...plus this per character of the word


class PictomaniaGuesserLevel(_Frozen):
    """When a Pictomania AI commits its guesses (see docs/AI_PLAYERS.md)."""

    reaction_s: float = Field(ge=0)
    noise: float = Field(ge=0)
    temperature: float = Field(gt=0)
    think_s: float = Field(ge=0)
    wrong_cost: float = Field(ge=0)
    learn_rate: float = Field(ge=0, le=1)
    others_commit_rate: float = Field(ge=0, le=1)
    others_accuracy: float = Field(ge=0, le=1)
    min_ev: float
    bet_s: float = Field(default=0.0, ge=0)  # placing a bet; its drawing waits meanwhile
    done_s: float = Field(default=0.0, ge=0)  # a last look before taking its token


class StrokePace(_Frozen):
    """How fast a drawing is drawn: thinking time, speed along a stroke, pause between strokes."""

    speed: float = Field(gt=0)  # canvas units (0-255) per second along a stroke
    pause_s: float = Field(ge=0)  # between two strokes
    start_s: float = Field(ge=0)  # before the first stroke
    max_s: float | None = Field(default=None, gt=0)  # a longer drawing is drawn faster to fit


class DrawerLevel(_Frozen):
    """How the AI drawer paces its drawings and how it picks and reacts in Kontour."""

    kontour: StrokePace
    pictomania: StrokePace
    orange_rate: float = Field(ge=0, le=1)
    gesture_rate: float = Field(ge=0, le=1)
    card_s: float = Field(default=0.0, ge=0)  # Kontour: before taking the card
    choose_s: float = Field(default=0.0, ge=0)  # Kontour: reading the card, choosing the word
    gesture_s: float = Field(default=0.0, ge=0)  # Kontour: reacting to a wrong guess


class AILevel(_Frozen):
    """One difficulty level: settings of every AI role."""

    name: str
    kontour_guesser: KontourGuesserLevel
    pictomania_guesser: PictomaniaGuesserLevel
    drawer: DrawerLevel


def _parse(data: Any, source: str) -> tuple[str, dict[str, AILevel]]:
    if not isinstance(data, dict) or not isinstance(data.get("levels"), dict):
        raise AILevelError(f"{source}: expected a mapping with a 'levels' mapping")
    levels: dict[str, AILevel] = {}
    for name, body in data["levels"].items():
        if not isinstance(body, dict):
            raise AILevelError(f"{source}: level '{name}' must be a mapping")
        try:
            levels[str(name)] = AILevel(name=str(name), **body)
        except (ValidationError, TypeError) as error:
            raise AILevelError(f"{source}: level '{name}' is invalid: {error}") from error
    default = str(data.get("default", "normal"))
    if default not in levels:
        raise AILevelError(f"{source}: default level '{default}' is not defined")
    return default, levels


@cache
def _load(path: str) -> tuple[str, dict[str, AILevel]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise AILevelError(f"cannot read AI levels file {path}: {error}") from error
    return _parse(yaml.safe_load(text), path)


def level_names(path: Path | None = None) -> list[str]:
    """The level names defined in the levels file, in file order."""
    return list(_load(str(path or LEVELS_FILE))[1])


def load_level(name: str | None = None, path: Path | None = None) -> AILevel:
    """The level called `name` (the file's default when None); `AILevelError` if unknown."""
    default, levels = _load(str(path or LEVELS_FILE))
    key = default if name is None else name
    if key not in levels:
        raise AILevelError(f"unknown AI level '{key}' (known: {', '.join(levels)})")
    return levels[key]
