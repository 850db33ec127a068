"""The games' clock: monotonic seconds, the event loop's own (`time.monotonic`) in the service, or
a `ManualClock` that tests and benchmarks move by hand (whole games on game time without waiting).
"""

from __future__ import annotations

from collections.abc import Callable

Clock = Callable[[], float]  # monotonic seconds


class ManualClock:
    """A clock that moves only when told: whole games on game time without waiting (the tests,
    `bench.bench_restart`). Give it to `GameManager(clock=...)`; every game shares it."""

    def __init__(self, start: float = 0.0) -> None:
        self.seconds = start

    def __call__(self) -> float:
        return self.seconds

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass (never backwards: the clock is monotonic)."""
        if seconds < 0:
            raise ValueError("a monotonic clock never goes back")
        self.seconds += seconds
