"""Token buckets (sockets, per-client budgets) on an injected clock, and the fair preprocessing pool."""

from __future__ import annotations

import asyncio
import time

import pytest

from griffon.launch import patient
from service.ratelimit import Buckets, DecayingRate, RateLimit


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


def test_a_decaying_rate_reads_a_steady_cost_and_forgets_an_old_one() -> None:
    now = [0.0]
    used = DecayingRate(window_s=5.0, clock=lambda: now[0])
    assert used.rate() == 0.0
    for _ in range(500):  # 50 s of 0.02 s spent every 0.1 s: 0.2 s a second
        now[0] += 0.1
        used.add(0.02)
    assert used.rate() == pytest.approx(0.2, rel=0.03)
    now[0] += 5.0  # one window later, nothing spent: about e^-1 of it is left
    assert used.rate() == pytest.approx(0.2 * 0.3679, rel=0.03)
    now[0] += 50.0
    assert used.rate() < 0.001


def test_charge_leaves_a_debt_and_retry_after_says_when_it_is_paid() -> None:
    now = [0.0]
    limit = RateLimit(rate=1.0, burst=2, clock=lambda: now[0])
    limit.charge(5)
    assert limit.tokens == -3 and not limit.allow(0.0)
    assert limit.retry_after(1) == 4.0
    now[0] += 4.0
    assert limit.allow(1)


def test_buckets_remember_a_bounded_number_of_keys() -> None:
    now = [0.0]
    buckets = Buckets(rate=1.0, burst=1, max_keys=10, clock=lambda: now[0])
    for i in range(10):
        assert buckets[f"client{i}"].allow()
    assert not buckets["client0"].allow()  # remembered: still empty
    now[0] += 5  # every bucket is full again: nothing worth remembering
    for i in range(10, 30):
        buckets[f"client{i}"].allow()
    assert len(buckets.table) <= 10


def test_the_preprocessing_pool_serves_keys_in_turn_and_bills_cpu_time() -> None:
    """One thread; a client with a backlog of 6 jobs delays another client by one job, not six."""
    from service.errors import RateLimited
    from service.inference import BatchInference

    order: list[str] = []

    def job(name: str) -> str:
        end = time.thread_time() + 0.02  # CPU time, billed to the key
        while time.thread_time() < end:
            pass
        order.append(name)
        return name

    async def scenario() -> None:
        pool = BatchInference(object(), preprocess_threads=1, cpu_share=0.01, cpu_burst_s=0.05)
        heavy = [asyncio.create_task(pool.run_cpu(job, f"a{i}", key="a")) for i in range(6)]
        await asyncio.sleep(0)
        light = asyncio.create_task(pool.run_cpu(job, "b0", key="b"))
        await asyncio.gather(*heavy, light)
        with pytest.raises(RateLimited, match="too much drawing work from this client"):
            await pool.run_cpu(job, "a6", key="a")  # 0.12 s of CPU against a 0.05 s burst
        assert await pool.run_cpu(job, "b1", key="b") == "b1"
        await pool.aclose()

    asyncio.run(scenario())
    assert order.index("b0") <= 2, order


def test_one_key_never_holds_every_preprocessing_thread() -> None:
    import threading

    from service.inference import BatchInference

    lock, running, most = threading.Lock(), [0], [0]

    def job() -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    meeting = threading.Barrier(2, timeout=patient(10))

    def together() -> None:
        meeting.wait()  # returns once the other client's job runs at the same time (else raises)

    async def scenario() -> None:
        pool = BatchInference(object(), preprocess_threads=2)
        await asyncio.gather(*(pool.run_cpu(job, key="game:a") for _ in range(5)))
        assert most[0] == 1  # the second thread stays free for other clients
        most[0] = 0
        await asyncio.gather(*(pool.run_cpu(job, key=f"10.0.0.{i}") for i in range(5)))
        assert most[0] == 1  # anonymous HTTP clients, many addresses: one thread between them all
        # two tables: both threads work
        await asyncio.gather(*(pool.run_cpu(together, key=k) for k in ("game:a", "bot:b")))
        await pool.aclose()

    asyncio.run(scenario())
