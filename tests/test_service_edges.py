"""Clean edges (issue 34): no 5xx on hostile bodies, no token in any log line, no path, host or user in
an error message, consent only as JSON true, and a withdrawal that deletes the drawings given.

The fuzz corpus is tests/data/fuzz_http.json (cases from the attack reports and by hand), plus
bodies hypothesis makes up; the log test reads a real server's own output (uvicorn at ``info``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from griffon.launch import Server, patient, running_server
from service.errors import STORE_DOWN
from store import DrawingRecord, StoreUnavailable, hash_token
from tests.service_server import in_process

CORPUS = Path(__file__).parent / "data" / "fuzz_http.json"
KEY = "k" * 20 + "-withdraw_1"  # a withdrawal key as the page makes them (URL-safe, 16-128 characters)


@pytest.fixture(scope="module")
def app(tiny_checkpoint: Path) -> Iterator[Any]:
    limits = {"games_per_client": 50, "games_per_client_hour": 500}
    with in_process(tiny_checkpoint, play_limits=limits) as client:
        yield client


def post(app: Any, case: dict[str, Any]) -> Any:
    if "raw" in case:
        return app.post(case["path"], content=case["raw"].encode("utf-8", "surrogatepass"),
                        headers={"Content-Type": "application/json"})
    return app.post(case["path"], json=case["json"])


def test_the_fuzz_corpus_gets_typed_4xx_and_never_a_5xx(app: Any) -> None:
    cases = json.loads(CORPUS.read_text())["cases"]
    assert len(cases) >= 50
    answers = [(case, post(app, case)) for case in cases]
    failed = [(case, r.status_code, r.text[:200]) for case, r in answers
              if not (r.status_code == 200 if case.get("ok") else 400 <= r.status_code < 500)]
    assert failed == []
    assert all(set(r.json()) == {"error", "message"} for case, r in answers if not case.get("ok"))
    empty = [r for case, r in answers
             if isinstance(case.get("json"), dict) and case["json"].get("candidates") == []]
    assert len(empty) == 2
    assert all(r.status_code == 422 and "candidates" in r.json()["message"] for r in empty)


ROUTES = ["/v1/guess", "/v1/guess/batch", "/v1/match", "/v1/play", "/v1/drawings/withdraw"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
FIELDS = st.sampled_from(["drawing", "drawings", "top_k", "candidates", "answer", "guess", "table", "game",
                          "learn", "withdraw_key", "key", "opponents", "level", "name", "seed"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(ROUTES),
       body=st.dictionaries(FIELDS, JSON_VALUES, max_size=5) | JSON_VALUES)
def test_made_up_bodies_never_get_a_5xx(app: Any, path: str, body: Any) -> None:
    response = app.post(path, json=body)
    assert response.status_code < 500, (path, body, response.text[:300])


def test_consent_is_json_true_and_nothing_else(app: Any) -> None:
    for learn in ("yes", "true", 1, "on"):
        refused = app.post("/v1/play", json={"game": "kontour", "learn": learn})
        assert refused.status_code == 422 and "learn" in refused.json()["message"], learn
    created = app.post("/v1/play", json={"game": "kontour", "learn": True, "withdraw_key": KEY})
    assert created.status_code == 201
    setup = app.app.state.store.load_game(created.json()["game_id"]).setup
    assert setup["learn"] is True and setup["owner"] == hash_token(KEY) and KEY not in json.dumps(setup)


@pytest.mark.parametrize("detail", [
    "/srv/secret-folder/griffon.db: busy, the write waited 0.5 s",
    "cannot connect to postgresql://griffon_user@db.internal.example:6543/griffon: connection refused",
])
def test_store_failures_answer_a_generic_503_and_the_details_stay_in_the_log(
    app: Any, detail: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise StoreUnavailable(detail)

    store = app.app.state.store
    monkeypatch.setattr(store, "create_game", fail)
    monkeypatch.setattr(store, "load_transcript", fail)
    monkeypatch.setattr(store, "withdraw_drawings", fail)
    answers = [app.post("/v1/play", json={"game": "kontour"}),
               app.get("/v1/bot/sessions/" + "a" * 20, params={"key": "x"}),
               app.post("/v1/drawings/withdraw", json={"key": KEY})]
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.json() == {"error": "database_unavailable", "message": STORE_DOWN}
        assert answer.headers["retry-after"] == "30"
    assert detail in caplog.text  # the operator still learns what failed


def test_withdrawing_deletes_the_drawings_given_and_stops_the_games_keeping_more(app: Any) -> None:
    created = app.post("/v1/play", json={"game": "pictomania", "learn": True, "withdraw_key": KEY})
    assert created.status_code == 201
    games, store = app.app.state.play, app.app.state.store
    journal = games.games[created.json()["game_id"]].journal
    assert journal.learn
    for word in ("cat", "house"):  # two drawings finished in the game, through the journal's writer
        journal._save(word, [(0.0, [(10.0, 10.0), (80.0, 90.0)]), (0.5, [(5.0, 60.0), (70.0, 20.0)])],
                      {"style": "free"}, False)
    other = store.add_drawing(DrawingRecord("cat", "pictomania", [[[1, 2], [3, 4], [0, 5]]],
                                            owner_hash=hash_token("another-person-key-123")), consent=True)
    games.drawings.flush()
    assert len(list(store.iter_drawings())) >= 3
    answer = app.post("/v1/drawings/withdraw", json={"key": KEY})
    assert answer.status_code == 200 and answer.json() == {"deleted": 2}
    assert [d.key_id for d in store.iter_drawings()] == [other]  # someone else's stays
    assert not journal.learn  # the game in progress keeps no more
    late = DrawingRecord("dog", "pictomania", [[[1, 2], [3, 4], [0, 5]]], owner_hash=hash_token(KEY))
    assert store.add_drawing(late, consent=True) == ""  # nor does any other process, or after a restart
    assert [d.key_id for d in store.iter_drawings()] == [other]
    assert app.post("/v1/drawings/withdraw", json={"key": KEY}).json() == {"deleted": 0}
    options = app.get("/v1/play/options").json()
    assert options["drawings_kept_days"] == store.retention.drawings_days


def test_the_page_says_how_long_drawings_are_kept_and_how_to_withdraw(app: Any) -> None:
    page = app.get("/").text
    consent = page[page.index('<label class="consent">'):page.index('id="withdraw"')]
    assert "sans limite de durée, tant que vous ne les retirez pas" in consent
    assert "retirer votre accord à tout moment" in consent and "sont alors supprimés" in consent
    script = app.get("/static/app.js").text
    assert '"/v1/drawings/withdraw"' in script and "withdraw_key" in script and "drawings_kept_days" in script


# -- logs of a real server -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chatty_server(tiny_checkpoint: Path) -> Iterator[Server]:
    """A real server logging at info: uvicorn's access lines and WebSocket handshake lines."""
    with running_server({"GRIFFON_MODEL": str(tiny_checkpoint)}, log_level="info") as server:
        yield server


def test_no_token_or_key_reaches_a_log_line(chatty_server: Server) -> None:
    server = chatty_server
    created = httpx.post(server.url + "/v1/play", json={"game": "kontour"}, timeout=patient(30)).json()
    token, game_id = created["token"], created["game_id"]
    secrets = [token, "WRONGTOKEN123456", "SECRETKEY987654"]

    async def sockets() -> None:
        async with websockets.connect(server.ws_url + created["ws"]) as ws:
            assert json.loads(await ws.recv())["type"] == "state"
        async with websockets.connect(f"{server.ws_url}/v1/play/{game_id}?token=WRONGTOKEN123456") as ws:
            assert json.loads(await ws.recv())["code"] == "bad_token"

    asyncio.run(sockets())
    httpx.get(f"{server.url}/?game={game_id}&token={token}", timeout=patient(10))  # the page's own URL
    httpx.get(server.url + "/v1/bot/sessions/abc", params={"key": "SECRETKEY987654"}, timeout=patient(10))
    log = server.log()
    assert f'"WebSocket /v1/play/{game_id}" [accepted]' in log  # the handshake lines are there...
    assert '"GET /v1/bot/sessions/abc HTTP/1.1" 404' in log  # ...and the access lines
    assert [s for s in secrets if s in log] == []  # ...without their query strings


def test_a_room_consents_with_json_true_only(app: Any) -> None:
    with app.websocket_connect("/v1/bot") as ws:
        ws.send_json({"type": "hello", "versions": [1]})
        assert ws.receive_json()["type"] == "welcome"
        ws.send_json({"type": "round_start", "round": 1})
        ws.receive_json()
        ws.send_json({"type": "round_end", "answer": "cat", "drawing_consent": "yes"})
        refused = ws.receive_json()
        assert refused["type"] == "error" and "drawing_consent" in refused["message"]
