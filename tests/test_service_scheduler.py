"""The fair shares of the recognizer (service/scheduler.py), and the batcher that uses them: between
the live class (tables, rooms) and anonymous HTTP clients, between the clients of a class, by cost."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import numpy as np
import pytest

from griffon.launch import patient
from service.scheduler import HTTP, LIVE, FairQueue, class_weights, work_class


def serve(queue: FairQueue[str], pops: int, cost: dict[str, float] | None = None) -> Counter[str]:
    """Pop ``pops`` items, each charged ``cost[key]`` (1 by default) and finished at once; every
    client pushes a new item as soon as one is served (a backlog that never runs dry)."""
    served: Counter[str] = Counter()
    for _ in range(pops):
        chosen = queue.pop()
        assert chosen is not None
        cls, key, item = chosen
        queue.charge(cls, key, (cost or {}).get(key, 1.0))
        queue.finish(cls, key)
        served[key] += 1
        queue.push(cls, key, item)
    return served


def test_keys_name_their_class() -> None:
    assert work_class("game:abc") == LIVE and work_class("bot:xyz") == LIVE
    assert work_class("203.0.113.9") == HTTP and work_class("") == HTTP
    assert class_weights(0.25) == {LIVE: 0.75, HTTP: 0.25}
    with pytest.raises(ValueError, match="between 0 and 1"):
        class_weights(1.0)


def test_thirty_addresses_share_one_class_share_against_one_table() -> None:
    queue: FairQueue[str] = FairQueue(class_weights(0.25))
    queue.push(LIVE, "game:victim", "stroke")
    for i in range(30):
        queue.push(HTTP, f"10.0.0.{i}", "guess")
    served = serve(queue, 400)
    attackers = sum(n for key, n in served.items() if key != "game:victim")
    assert served["game:victim"] == 300 and attackers == 100  # 3:1, not 1:30
    assert max(served[f"10.0.0.{i}"] for i in range(30)) - min(served[f"10.0.0.{i}"] for i in range(30)) <= 1


def test_clients_of_a_class_get_equal_work_not_equal_turns() -> None:
    queue: FairQueue[str] = FairQueue(class_weights(0.25))
    queue.push(LIVE, "game:heavy", "big drawing")
    queue.push(LIVE, "game:light", "small drawing")
    served = serve(queue, 110, cost={"game:heavy": 10.0, "game:light": 1.0})
    assert served == {"game:light": 100, "game:heavy": 10}


def test_a_class_alone_gets_everything() -> None:
    queue: FairQueue[str] = FairQueue(class_weights(0.25))
    for i in range(3):
        queue.push(HTTP, f"10.0.0.{i}", "guess")
    assert sum(serve(queue, 30).values()) == 30


def test_a_client_back_from_a_pause_keeps_its_debt_but_not_its_idleness() -> None:
    queue: FairQueue[str] = FairQueue(class_weights(0.25))
    queue.push(LIVE, "game:a", "x")
    queue.push(LIVE, "game:b", "x")
    serve(queue, 20)  # 10 each
    # game:c arrives late: it starts level with the others, it does not get 10 turns in a row
    queue.push(LIVE, "game:c", "x")
    assert serve(queue, 9) == {"game:a": 3, "game:b": 3, "game:c": 3}
    # game:a comes back owing much: the others go first until it is level
    for cls, key in ((LIVE, "game:b"), (LIVE, "game:c")):
        assert queue.remove(cls, key, "x")
    chosen = queue.pop()
    assert chosen == (LIVE, "game:a", "x")
    queue.charge(LIVE, "game:a", 50.0)
    queue.finish(LIVE, "game:a")
    queue.push(LIVE, "game:b", "x")
    queue.push(LIVE, "game:a", "y")
    assert [queue.pop()[1] for _ in range(2)] == ["game:b", "game:a"]


def test_an_ineligible_client_is_passed_over_and_removed_items_are_gone() -> None:
    queue: FairQueue[str] = FairQueue(class_weights(0.5))
    queue.push(LIVE, "game:a", "a1")
    queue.push(LIVE, "game:b", "b1")
    assert queue.pop(lambda cls, flow: flow.key != "game:a") == (LIVE, "game:b", "b1")
    assert queue.remove(LIVE, "game:a", "a1") and not queue.remove(LIVE, "game:a", "a1")
    assert len(queue) == 0 and queue.pop() is None


def test_forgotten_clients_stay_bounded() -> None:
    queue: FairQueue[str] = FairQueue(class_weights(0.5), max_flows=20)
    for i in range(100):
        queue.push(HTTP, f"10.0.{i}.1", "x")
        cls, key, _ = queue.pop()
        queue.finish(cls, key)
    assert len(queue.flows[HTTP]) <= 20


# -- the batcher: forward passes filled fairly ------------------------------------------------------
class SlowModel:
    """Records each forward pass's rows (the view's own value) and waits at the first until released."""

    def __init__(self) -> None:
        self.passes: list[list[str]] = []
        self.entered, self.release = threading.Event(), threading.Event()

    def probabilities_from_views(self, views: list[str]) -> np.ndarray:
        if not self.passes:
            self.entered.set()
            self.release.wait(patient(10))
        self.passes.append(list(views))
        return np.zeros((len(views), 3))


def test_a_forward_pass_carries_a_bounded_share_of_http_drawings() -> None:
    from service.inference import BatchInference

    model = SlowModel()

    async def scenario() -> None:
        inference = BatchInference(model, max_batch=8, batch_wait_s=0.0, http_share=0.25)
        inference.start()
        first = asyncio.ensure_future(inference.probabilities(["first"], key="10.0.0.1"))
        assert await asyncio.to_thread(model.entered.wait, patient(10))  # the worker holds the first pass
        calls = [inference.probabilities([f"http{i}"], key=f"10.0.1.{i}") for i in range(12)]
        calls += [inference.probabilities([f"live{i}"], key=f"game:{i}") for i in range(4)]
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0)  # every call is queued before the worker is let go
        model.release.set()
        await asyncio.gather(first, *tasks)
        await inference.aclose()

    asyncio.run(scenario())
    second = model.passes[1]
    assert sum(v.startswith("live") for v in second) == 4  # every waiting stroke of a table
    assert sum(v.startswith("http") for v in second) == 2  # and 8 * 0.25 anonymous drawings
    assert all(sum(v.startswith("http") for v in p) <= 2 for p in model.passes[1:])
    assert sorted(v for p in model.passes for v in p) == sorted(
        ["first", *(f"http{i}" for i in range(12)), *(f"live{i}" for i in range(4))])


# -- the event loop: each table's share ---------------------------------------------------------------
def test_a_table_over_its_share_of_the_event_loop_waits_and_one_under_it_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bench.bench_play_frames import pictomania_session
    from service.play import table as session_module
    from service.ratelimit import RateLimit

    now = [0.0]
    waits: list[float] = []

    async def recorded_sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(session_module.asyncio, "sleep", recorded_sleep)
    table = pictomania_session(loop_budget=RateLimit(0.25, 2.0, clock=lambda: now[0]))

    async def scenario() -> None:
        await table.take_turn(0.01)  # a person's stroke: a few milliseconds
        assert waits == []
        await table.take_turn(2.5)  # past the 2-second burst: the debt is paid at 0.25 s a second
        assert waits == [pytest.approx((0.01 + 2.5 - 2.0) / 0.25)]

    asyncio.run(scenario())


def test_every_table_gets_its_share_of_the_loop(tiny_checkpoint) -> None:
    from tests.service_server import in_process

    with in_process(tiny_checkpoint, capacity={"table_loop_share": 0.2, "table_loop_burst_s": 1.5}) as app:
        created = app.post("/v1/play", json={"game": "kontour"}).json()
        budget = app.app.state.play.games[created["game_id"]].loop_budget
        assert (budget.rate, budget.burst) == (0.2, 1.5)
