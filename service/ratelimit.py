"""A token-bucket rate limit for WebSocket frames (shared by the bot and the game sockets)."""

from __future__ import annotations

import time
from collections.abc import Callable


class RateLimit:
    """A token bucket: ``rate`` frames per second, bursts of ``burst``; the clock is injectable.

    ``warned`` is free for the caller: whether the client was already told it is flooding.
    """

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens, self.stamp = float(burst), clock()
        self.warned = False

    def allow(self) -> bool:
        """Take one token if there is one."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
