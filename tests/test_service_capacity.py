"""Admission: a table or a bot room is refused when the process's CPU budget is held."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from service.capacity import Capacity, Costs
from service.errors import Unavailable
from tests.service_server import in_process


def budget(open_now: Counter[str], cores: float = 2.0, utilisation: float = 0.5) -> Capacity:
    return Capacity(Costs(pictomania=0.3, kontour=0.1, bot=0.05), cores, utilisation, lambda k: open_now[k])


def test_the_budget_is_the_cores_times_the_utilisation_and_each_table_holds_its_share() -> None:
    open_now: Counter[str] = Counter(pictomania=3)  # 0.9 of the 1.0 core budget
    capacity = budget(open_now)
    assert capacity.budget == pytest.approx(1.0)
    assert capacity.held() == pytest.approx(0.9)
    assert capacity.admits("kontour") and capacity.admits("bot")
    assert not capacity.admits("pictomania")
    assert capacity.admits("pictomania", freeing="pictomania")  # a replaced game frees its share
    open_now["kontour"] += 1
    with pytest.raises(Unavailable) as refused:
        capacity.admit("kontour")
    assert refused.value.code == "server_busy" and refused.value.status == 503
    assert refused.value.retry_after and "1.00 of 1.00 cores" in refused.value.message


def test_a_full_server_refuses_a_new_table_with_503_and_a_bot_room_with_an_overloaded_frame() -> None:
    capacity = dict(cores=1, utilisation=1.0, pictomania_table_cost=0.6, kontour_table_cost=0.6,
                    bot_room_cost=0.3, client_share=1.0)  # the house's budget only (the tests' one client)
    with in_process(capacity=capacity, play_limits={"games_per_client": 5}) as app:
        first = app.post("/v1/play", json={"game": "kontour", "opponents": 1})
        assert first.status_code == 201, first.text
        with app.websocket_connect("/v1/bot") as ws:  # 0.6 + 0.3 fits in 1.0
            ws.send_json({"type": "hello", "versions": [1]})
            assert ws.receive_json()["type"] == "welcome"
            second = app.post("/v1/play", json={"game": "pictomania", "opponents": 2})
            assert second.status_code == 503
            assert second.json()["error"] == "server_busy"
            assert int(second.headers["retry-after"]) >= 1
            with app.websocket_connect("/v1/bot") as refused:  # 0.9 + 0.3 does not
                frame = refused.receive_json()
                assert frame["type"] == "error" and frame["code"] == "overloaded"
                assert frame["retry_after"] > 0
        metrics = app.get("/metrics").text
        assert 'griffon_refusals_total{reason="server_busy"} 2.0' in metrics


def test_one_client_holds_at_most_its_share_of_the_budget_and_of_bot_rooms() -> None:
    from service.capacity import ClientRooms

    open_now: Counter[str] = Counter()
    live: set[str] = set()
    rooms = ClientRooms(lambda: live)
    held = Counter[str]()
    capacity = Capacity(Costs(pictomania=0.3, kontour=0.1, bot=0.05), 2.0, 0.5, lambda k: open_now[k],
                        client_share=0.25, held_by=lambda c: held[c] + 0.05 * rooms.count(c), rooms=rooms,
                        rooms_per_client=4)
    assert capacity.admits("pictomania", client="a")  # 0.3 > 0.25, but a client's first always fits
    held["a"] = 0.3
    assert not capacity.admits("kontour", client="a") and capacity.admits("kontour", client="b")
    with pytest.raises(Unavailable, match="your address holds 0.30 of the 0.25 cores"):
        capacity.admit("bot", client="a")
    for n in range(4):
        assert capacity.admits("bot", client="b")
        live.add(f"r{n}")
        rooms.add(f"r{n}", "b")
        open_now["bot"] += 1
    assert rooms.count("b") == 4
    assert capacity.refusal("bot", client="b") == (
        "your address holds 4 bot rooms already (at most 4); retry once one has ended")
    live.discard("r0")  # a room ended: its place is free again
    assert rooms.count("b") == 3 and capacity.admits("bot", client="b")


def test_an_idle_flood_of_bot_rooms_from_one_address_leaves_room_for_the_others(tiny_checkpoint) -> None:
    """The real server, a budget of 8 bot rooms of which one address may hold a quarter: one address
    opening 8 idle rooms gets 2, and keeps only those 2 once it drops its sockets (the rooms wait for
    a resume); two other addresses still get theirs."""
    import contextlib
    import json

    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from griffon.launch import patient, running_server, tuning

    env = {"GRIFFON_MODEL": str(tiny_checkpoint), "GRIFFON_CAPACITY_CORES": "1",
           "GRIFFON_CAPACITY_UTILISATION": "0.8", **tuning(**{"capacity.bot_room_cost": 0.1})}

    def room(url: str, address: str):
        """A bot room opened from ``address`` (127.0.0.x); (its socket, its first answer's type)."""
        ws = connect(url + "/v1/bot", open_timeout=patient(10), source_address=(address, 0)).__enter__()
        try:
            with contextlib.suppress(ConnectionClosed):  # a refused room's frame comes first
                ws.send(json.dumps({"type": "hello", "versions": [2]}))
            answer = json.loads(ws.recv(timeout=patient(10)))
        except Exception:
            ws.close()
            raise
        return ws, answer["type"] if answer["type"] != "error" else answer["code"]

    with running_server(env) as server:
        flood = [room(server.ws_url, "127.0.0.1") for _ in range(8)]
        assert [kind for _, kind in flood] == ["welcome"] * 2 + ["overloaded"] * 6
        other, kind = room(server.ws_url, "127.0.0.2")
        assert kind == "welcome"
        for ws, _ in flood:
            ws.socket.close()  # gone without a bye: its room waits bot.resume_s for a resume
        again = [room(server.ws_url, "127.0.0.1") for _ in range(2)]
        assert [kind for _, kind in again] == ["overloaded"] * 2
        third, kind = room(server.ws_url, "127.0.0.3")
        assert kind == "welcome"
        for ws in (other, third, *(ws for ws, _ in again)):
            ws.close()


def test_a_lagging_event_loop_or_slow_acks_admit_nothing_new_but_a_first_table() -> None:
    lag: list[float | None] = [None]
    open_now: Counter[str] = Counter()
    capacity = Capacity(Costs(pictomania=0.1, kontour=0.1, bot=0.05), 2.0, 0.5, lambda k: open_now[k],
                        lag=lambda: lag[0], lag_limit_s=0.05)
    assert capacity.admits("pictomania")  # no figure yet
    lag[0] = 0.2
    assert capacity.admits("pictomania")  # nothing open: the first is admitted, however busy the host
    open_now["pictomania"] = 1
    with pytest.raises(Unavailable, match="lagged 200 ms at p99 lately, more than 50 ms") as refused:
        capacity.admit("bot")
    assert refused.value.code == "server_busy" and refused.value.retry_after
    lag[0] = 0.03
    assert capacity.admits("bot")  # the loop keeps up again
    acks: list[float | None] = [0.15]
    slow = Capacity(Costs(pictomania=0.1, kontour=0.1, bot=0.05), 2.0, 0.5, lambda k: open_now[k],
                    lag=lambda: 0.01, lag_limit_s=0.1, acks=lambda: acks[0])
    assert slow.refusal("bot") == ("the server is slow now (its strokes were acknowledged in 150 ms at p99 "
                                   "lately, more than 100 ms); retry in a while")
    acks[0] = 0.08
    assert slow.admits("bot")
    off = Capacity(Costs(pictomania=0.1, kontour=0.1, bot=0.05), 2.0, 0.5, lambda k: open_now[k],
                   lag=lambda: 0.2, lag_limit_s=0.0, acks=lambda: 1.0)
    assert off.admits("bot")  # capacity.lag_ms 0: the measured costs only


def test_the_loop_lag_is_measured_over_a_recent_window() -> None:
    import asyncio
    import time

    from service.capacity import LoopLag

    async def run() -> tuple[float | None, float | None]:
        lag = LoopLag(period_s=0.01, window_s=60.0)
        sampler = asyncio.create_task(lag.run())
        while len(lag.samples) < 30:
            await asyncio.sleep(0.01)
        time.sleep(0.3)  # a stall of the loop: the sampler wakes at least this late
        await asyncio.sleep(0.05)
        sampler.cancel()
        stalled = lag.p99()
        late = lag.clock() + 120  # two windows later, every sample is out of it
        lag.clock = lambda: late
        return stalled, lag.p99()

    stalled, later = asyncio.run(run())
    assert stalled is not None and stalled >= 0.25
    assert later is None


def test_the_stroke_acknowledgements_of_the_last_seconds_are_kept_for_admission() -> None:
    from service.prometheus import Metrics

    metrics = Metrics()
    assert metrics.recent_acks.p99() is None
    for n in range(30):
        metrics.stroke_ack.labels(source="play").observe(0.2 if n == 29 else 0.01)
    assert metrics.recent_acks.p99() == 0.2  # of 30 samples, the 99th percentile is the largest
    assert b'griffon_stroke_ack_seconds_count{source="play"} 30.0' in metrics.render()


def test_the_budget_shrinks_with_the_share_of_the_cpu_the_event_loop_gets() -> None:
    """A host whose other processes leave the loop 71 % of the CPU it gets on a quiet host admits
    half the tables (the ratio squared): new ones are refused (``server_busy``) while the share is
    low and admitted again once it is back."""
    from service.capacity import QUIET_CPU_SHARE, CpuShare

    now = [0.0]
    counters = [(0.0, 0.0)]  # the loop thread's (ran, waited) seconds
    cpu = CpuShare(lambda: counters[0], window_s=10.0, clock=lambda: now[0])

    def second(ran: float, waited: float) -> None:  # one more second of the thread's life
        now[0] += 1.0
        counters[0] = (counters[0][0] + ran, counters[0][1] + waited)
        cpu.sample()

    cpu.sample()
    assert cpu.share() is None  # one sample: nothing measured yet
    open_now: Counter[str] = Counter(kontour=5)  # 0.5 of the 1.0 core budget
    capacity = Capacity(Costs(pictomania=0.3, kontour=0.1, bot=0.05), 2.0, 0.5, lambda k: open_now[k],
                        lag=lambda: 0.0, lag_limit_s=0.1, cpu_share=cpu.share)
    for _ in range(10):
        second(ran=0.05, waited=0.002)  # a quiet host: the loop runs as soon as it wants
    assert cpu.share() == pytest.approx(0.05 / 0.052)
    assert capacity.admits("kontour") and capacity.admits("pictomania", client="a")
    lower = QUIET_CPU_SHARE * 0.5 ** 0.5  # busy processes beside it: 71 % of what it gets when quiet
    for _ in range(10):
        second(ran=0.05, waited=0.05 * (1 / lower - 1))
    assert cpu.share() == pytest.approx(lower)
    assert capacity.share() == pytest.approx(0.5)  # the ratio squared: a wait grows faster
    busy = r"0\.50 of 0\.50 cores held .* leaving it 50% of the CPU"
    with pytest.raises(Unavailable, match=busy) as refused:
        capacity.admit("kontour")
    assert refused.value.code == "server_busy" and refused.value.retry_after
    open_now["kontour"] = 4  # a table ended: one fits again in the scaled budget
    assert capacity.admits("kontour") and not capacity.admits("pictomania")
    open_now["kontour"] = 3
    for _ in range(10):  # busier still: the budget is never scaled below half
        second(ran=0.05, waited=0.2)
    assert cpu.share() == pytest.approx(0.2) and capacity.share() == 0.5
    assert capacity.admits("kontour") and not capacity.admits("pictomania")
    open_now["kontour"] = 5
    for _ in range(10):  # the other processes ended: the window forgets them
        second(ran=0.05, waited=0.05 * (1 / QUIET_CPU_SHARE - 1))
    assert cpu.share() == pytest.approx(QUIET_CPU_SHARE)  # what the loop gets on a quiet host
    assert capacity.share() == pytest.approx(1.0) and capacity.admits("kontour")
    for _ in range(10):  # a loop that hardly runs is not judged: its few wakes each wait a little
        second(ran=0.005, waited=0.01)
    assert cpu.share() is None and capacity.admits("kontour")
    off = Capacity(Costs(pictomania=0.3, kontour=0.1, bot=0.05), 2.0, 0.5, lambda k: open_now[k],
                   lag_limit_s=0.0, cpu_share=lambda: 0.1)
    assert off.admits("pictomania")  # capacity.lag_ms 0: the measured costs only
    empty = Capacity(Costs(pictomania=0.3, kontour=0.1, bot=0.05), 2.0, 0.5, lambda k: 0,
                     lag_limit_s=0.1, cpu_share=lambda: 0.1)
    assert empty.admits("pictomania")  # nothing open: the first fits, however busy the host


def test_the_event_loop_s_share_of_the_cpu_is_read_from_linux() -> None:
    import threading

    from service.capacity import thread_schedstat

    counters = thread_schedstat(threading.get_native_id())
    if counters is None:
        pytest.skip("this kernel does not say (no /proc/self/task/TID/schedstat)")
    end = time.thread_time() + 0.02
    while time.thread_time() < end:
        pass
    later = thread_schedstat(threading.get_native_id())
    assert later is not None and later[0] - counters[0] >= 0.015 and later[1] >= counters[1] >= 0
