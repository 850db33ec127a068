"""``GET /metrics``: the Prometheus text format, counting what happens in the app."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.service_server import in_process


def samples(app) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics`` by (name, sorted labels)."""
    answer = app.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@pytest.fixture(scope="module")
def app() -> Iterator[object]:
    # the shipped model: a Pictomania table needs its words
    with in_process(play_limits={"max_games": 1}) as client:
        yield client


def test_metrics_count_tables_strokes_recognitions_and_refusals(app) -> None:
    before = samples(app)
    assert before[("griffon_tables_open", (("game", "pictomania"),))] == 0
    assert before[("griffon_bot_rooms_open", ())] == 0
    created = app.post("/v1/play", json={"game": "pictomania", "opponents": 2})
    assert created.status_code == 201, created.text
    game = created.json()
    refused = app.post("/v1/play", json={"game": "kontour", "opponents": 1})
    assert refused.status_code == 503, refused.text
    with app.websocket_connect(game["ws"]) as ws:
        assert ws.receive_json()["type"] == "state"
        ws.send_json({"type": "move", "move": {"kind": "stroke", "points": [[10, 10], [60, 80], [120, 40]]}})
        for _ in range(50):  # the AI's own strokes may come first
            frame = ws.receive_json()
            if any(e.get("kind") == "stroke_drawn" and e.get("player") == game["player"]
                   for e in frame.get("events", [])):
                break
        else:
            pytest.fail("the person's stroke never came back")
        during = samples(app)
    assert during[("griffon_tables_open", (("game", "pictomania"),))] == 1
    assert during[("griffon_sockets_open", (("kind", "play"),))] == 1
    assert during[("griffon_strokes_total", (("source", "play"),))] == 1
    assert during[("griffon_stroke_ack_seconds_count", (("source", "play"),))] == 1
    assert during[("griffon_store_write_seconds_count", ())] >= 1
    assert during[("griffon_refusals_total", (("reason", "too_many_games"),))] == 1
    guess = app.post("/v1/guess", json={"drawing": [[[0, 50, 100], [0, 80, 0]]]})
    assert guess.status_code == 200
    after = samples(app)
    assert after[("griffon_guesses_total", (("source", "api"),))] == 1
    assert after[("griffon_inference_batch_size_count", ())] >= 1
    assert after[("griffon_inference_queue", ())] == 0


def test_metrics_show_the_background_writer_waiting_on_a_locked_database(app) -> None:
    """SQLite's write lock held elsewhere: a consented drawing waits in the background writer,
    which tries again (``retries``), and is written once the lock is let go (``pending`` back to 0)."""
    import sqlite3

    from griffon.launch import eventually
    from store import DrawingRecord

    writer = app.app.state.bots.writer
    assert samples(app)[("griffon_store_background", (("what", "retries"),))] == writer.retries
    other = sqlite3.connect(writer.store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        before = writer.retries
        stroke = [[0.0, 50.0, 90.0], [0.0, 80.0, 5.0], [0.0, 16.0, 32.0]]  # x, y, t
        assert writer.add_drawing(DrawingRecord("cat", "room", [stroke]))
        eventually(lambda: writer.retries > before, 30, "the writer never tried again")
        waiting = samples(app)
        assert waiting[("griffon_store_background", (("what", "pending"),))] >= 1
        assert waiting[("griffon_store_background", (("what", "retries"),))] > before
    finally:
        other.execute("COMMIT")
        other.close()
    eventually(lambda: samples(app)[("griffon_store_background", (("what", "pending"),))] == 0, 30,
               "the drawing was never written")
    assert samples(app)[("griffon_store_background", (("what", "failed"),))] == 0
    assert writer.store.drawing_counts().get("cat") == 1
