"""Admission: a table or a bot room is refused when the process's CPU budget is held."""

from __future__ import annotations

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
    settings = dict(capacity_cores=1, capacity_utilisation=1.0, pictomania_table_cost=0.6,
                    kontour_table_cost=0.6, bot_room_cost=0.3, games_per_client=5)
    with in_process(**settings) as app:
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
