"""The token bucket shared by the bot and game sockets, on an injected clock."""

from __future__ import annotations

from service.ratelimit import RateLimit


def test_bursts_then_refills_at_the_rate() -> None:
    now = [100.0]
    limit = RateLimit(rate=2.0, burst=3, clock=lambda: now[0])
    assert [limit.allow() for _ in range(4)] == [True, True, True, False]
    now[0] += 0.25  # half a token
    assert not limit.allow()
    now[0] += 0.25  # one token
    assert limit.allow() and not limit.allow()
    now[0] += 60.0  # never more than the burst
    assert [limit.allow() for _ in range(4)] == [True, True, True, False]
