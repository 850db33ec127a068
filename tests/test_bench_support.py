"""`bench.support.until`, the one wait for a frame: the first frame that passes, or a failure once the
time given runs out — on a game's own clock here (`Deadline`), so nothing waits for real."""

from __future__ import annotations

from typing import Any

import pytest

from bench.support import Deadline, until
from service.play.clock import ManualClock


def frames_on(clock: ManualClock, frames: list[dict[str, Any] | None]) -> Any:
    """A ``recv`` that gives the frames in turn, each after one second of ``clock`` (None: nothing
    came in that second)."""
    queue = list(frames)

    def recv(timeout: float) -> dict[str, Any] | None:
        assert timeout > 0
        clock.advance(1.0)
        return queue.pop(0) if queue else None

    return recv


def test_until_returns_the_first_frame_that_passes() -> None:
    clock = ManualClock()
    recv = frames_on(clock, [{"type": "state"}, None, {"type": "update", "n": 1}, {"type": "update", "n": 2}])
    frame = until(recv, lambda f: f["type"] == "update", Deadline(clock, 10, "no update"))
    assert frame == {"type": "update", "n": 1} and clock() == 3.0


def test_until_fails_once_its_time_is_out_and_says_what_came() -> None:
    clock = ManualClock()
    recv = frames_on(clock, [{"type": "state"}] * 20)
    with pytest.raises(AssertionError, match=r"no error within 5 s of game time; seen: 5 states"):
        until(recv, lambda f: f["type"] == "error", Deadline(clock, 5, "no error"), lambda: "seen: 5 states")
    assert clock() == 5.0
