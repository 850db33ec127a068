"""Shared pieces of the solo-game tests (no tests here): the server's environment; the WebSocket
client is `bench.support`'s (the benchmarks play through it too)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.support import FrameReader, Player, has_event, new_game
from griffon.launch import Server, running_server, tuning

WEIGHTS = Path(__file__).resolve().parents[1] / "model" / "weights" / "griffon-default.pt"
HAS_WEIGHTS = WEIGHTS.is_file()

# Short timers so that a whole turn, round or game fits in a test (tuning fields of PlaySettings).
FAST: dict[str, float] = {
    "kontour_timer_s": 6,
    "ai_think_s": 0.3,
    "between_turns_s": 0.3,
    "pictomania_round_s": 6,
    "pictomania_rounds": 2,
}
HOUSE = [  # a house in 6 straight lines, on the page's 0-255 canvas
    [[50, 110], [50, 230]],
    [[50, 230], [200, 230]],
    [[200, 230], [200, 110]],
    [[200, 110], [50, 110]],
    [[40, 115], [125, 30]],
    [[125, 30], [210, 115]],
]


def model_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The shipped weights when present, else the tiny test checkpoint."""
    if HAS_WEIGHTS:
        return {}
    return {"GRIFFON_MODEL": str(request.getfixturevalue("tiny_checkpoint"))}


@contextmanager
def play_server(request: pytest.FixtureRequest, tuned: dict[str, float] | None = None,
                **extra: str) -> Iterator[Server]:
    """The real service with fast game timers (`FAST`, then the tuning fields ``tuned``) and the
    `extra` variables."""
    with running_server({**tuning(**{**FAST, **(tuned or {})}), **model_env(request), **extra}) as server:
        yield server


__all__ = ["FAST", "HAS_WEIGHTS", "HOUSE", "FrameReader", "Player", "has_event", "model_env", "new_game",
           "play_server"]
