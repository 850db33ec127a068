"""Token buckets: per-socket frame rates, and per-client budgets (points, CPU seconds, games).

Every bucket takes an injectable clock so tests drive time by hand.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable


class RateLimit:
    """A token bucket: ``rate`` tokens per second, at most ``burst``; the clock is injectable.

    ``allow(cost)`` takes tokens when there are enough; ``charge(cost)`` takes them anyway (a
    debt, for costs known only afterwards, like CPU time); ``retry_after(cost)`` says when
    ``cost`` tokens will be there. ``warned`` is free for the caller: whether the client was
    already told it is flooding.
    """

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens, self.stamp = float(burst), clock()
        self.warned = False

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def allow(self, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens if there are that many."""
        self._refill()
        if self.tokens < cost:
            return False
        self.tokens -= cost
        return True

    def charge(self, cost: float) -> None:
        """Take ``cost`` tokens even if that leaves a debt."""
        self._refill()
        self.tokens -= cost

    def retry_after(self, cost: float = 1.0) -> float:
        """Seconds until ``cost`` tokens are available (0 when they are)."""
        self._refill()
        return max(0.0, (min(cost, self.burst) - self.tokens) / self.rate)

    @property
    def full(self) -> bool:
        """Whether the bucket has refilled completely (a client with nothing to remember)."""
        self._refill()
        return self.tokens >= self.burst


class DecayingRate:
    """Seconds spent per second, averaged over about ``window_s`` seconds (an exponential decay):
    what a table has lately cost the event loop. The clock is injectable."""

    def __init__(self, window_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s, self.clock = window_s, clock
        self.total, self.stamp = 0.0, clock()

    def _decay(self) -> None:
        now = self.clock()
        self.total *= math.exp(-(now - self.stamp) / self.window_s)
        self.stamp = now

    def add(self, seconds: float) -> None:
        """Count ``seconds`` spent now."""
        self._decay()
        self.total += seconds

    def rate(self) -> float:
        """Seconds spent a second, lately."""
        self._decay()
        return self.total / self.window_s


class Buckets:
    """One :class:`RateLimit` per key (a client, a session), at most ``max_keys`` remembered.

    When the table is full, the oldest keys whose buckets are full again are forgotten first
    (they hold no information); if none is, the oldest key is.
    """

    def __init__(
        self, rate: float, burst: float, max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate, self.burst, self.max_keys, self.clock = rate, burst, max_keys, clock
        self.table: OrderedDict[str, RateLimit] = OrderedDict()

    def __getitem__(self, key: str) -> RateLimit:
        bucket = self.table.get(key)
        if bucket is None:
            if len(self.table) >= self.max_keys:
                self._forget()
            bucket = self.table[key] = RateLimit(self.rate, self.burst, self.clock)
        self.table.move_to_end(key)
        return bucket

    def _forget(self) -> None:
        for key in [k for k, b in list(self.table.items())[: max(1, self.max_keys // 10)] if b.full]:
            del self.table[key]
        if len(self.table) >= self.max_keys:
            self.table.popitem(last=False)
