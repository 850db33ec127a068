"""The HTTP API in process (TestClient): every route, every error status and message.

The real uvicorn server is exercised by ``test_service_attacks.py`` (timeouts, sizes, budgets)
and the bot and game socket tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from griffon.launch import patient
from service.settings import Settings, SettingsError
from tests.conftest import shape
from tests.service_server import in_process

LIMITS = {
    "max_points": 2000,
    "max_stroke_points": 1500,
    "max_strokes": 50,
    "max_guess_batch": 8,
    "max_body_bytes": 100_000,
    "allowed_origins": ["https://rooms.example"],
}
LABELS = {"circle", "square", "triangle", "line"}


@pytest.fixture(scope="module")
def client(tiny_checkpoint: Path) -> Iterator[httpx.Client]:
    with in_process(tiny_checkpoint, **LIMITS) as http:
        yield http


def drawing(word: str = "square", seed: int = 1) -> list:
    return shape(word, np.random.default_rng(seed))


def assert_error(response: httpx.Response, status: int, code: str, message: str) -> None:
    assert response.status_code == status, response.text
    assert response.json() == {"error": code, "message": message}


# -- success paths -------------------------------------------------------------------------------
def test_health_reports_model_and_counters(client: httpx.Client) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["model"] == {"classes": 4}
    assert {"batches", "images", "pending", "rejected"} <= set(body["inference"])


def test_guess_returns_top_k_with_french_words(client: httpx.Client) -> None:
    response = client.post("/v1/guess", json={"drawing": drawing("square"), "top_k": 3})
    assert response.status_code == 200
    guesses = response.json()["guesses"]
    assert len(guesses) == 3
    assert {g["label"] for g in guesses} <= LABELS
    probs = [g["prob"] for g in guesses]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1.0001
    french = {"circle": "cercle", "square": "carré", "triangle": "triangle", "line": "ligne"}
    assert all(g["word"] == french[g["label"]] for g in guesses)


def test_guess_recognises_the_shapes_it_was_trained_on(client: httpx.Client) -> None:
    for word in ("circle", "square", "line"):
        best = client.post("/v1/guess", json={"drawing": drawing(word, 7)}).json()["guesses"][0]
        assert best["label"] == word


def test_candidates_accept_keys_and_french_words_and_renormalise(client: httpx.Client) -> None:
    body = {"drawing": drawing("circle"), "top_k": 5, "candidates": ["cercle", "square"]}
    guesses = client.post("/v1/guess", json=body).json()["guesses"]
    assert {g["label"] for g in guesses} == {"circle", "square"}
    assert sum(g["prob"] for g in guesses) == pytest.approx(1.0, abs=1e-4)


def test_batch_keeps_request_order(client: httpx.Client) -> None:
    words = ["circle", "line", "square"]
    body = {"drawings": [drawing(w, 7) for w in words], "top_k": 1}
    results = client.post("/v1/guess/batch", json=body).json()["results"]
    assert [r["guesses"][0]["label"] for r in results] == words


def test_match_accepts_and_rejects(client: httpx.Client) -> None:
    ok = client.post("/v1/match", json={"answer": "cat", "guess": "chats"}).json()
    assert ok["accepted"] is True and ok["reason"] == "inflection" and ok["category"] == "cat"
    wrong = client.post("/v1/match", json={"answer": "chat", "guess": "chien"}).json()
    assert wrong["accepted"] is False


def test_vocabulary_and_decks(client: httpx.Client) -> None:
    vocabulary = client.get("/v1/vocabulary").json()
    assert vocabulary["count"] == len(vocabulary["words"]) == 345
    assert set(vocabulary["model_labels"]) == LABELS
    cat = next(w for w in vocabulary["words"] if w["category"] == "cat")
    assert cat["word"] == "chat" and cat["gender"] == "m"
    kontour = client.get("/v1/decks/kontour").json()
    assert kontour["count"] == len(kontour["cards"]) > 0
    assert {"top", "bottom"} <= set(kontour["cards"][0])
    pictomania = client.get("/v1/decks/pictomania").json()
    assert all(len(side["words"]) == 7 for card in pictomania["cards"] for side in card["sides"])


def test_openapi_docs_and_cors_allow_list(client: httpx.Client) -> None:
    assert "swagger" in client.get("/docs").text.lower()
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/guess", "/v1/guess/batch", "/v1/match", "/v1/vocabulary", "/healthz"} <= set(paths)
    allowed = client.get("/healthz", headers={"Origin": "https://rooms.example"})
    assert allowed.headers["access-control-allow-origin"] == "https://rooms.example"
    other = client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    preflight = client.options("/v1/play", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 400 and "access-control-allow-origin" not in preflight.headers


def test_security_headers_on_pages_and_errors(client: httpx.Client) -> None:
    for response in (client.get("/"), client.get("/v1/nope"), client.get("/healthz")):
        headers = response.headers
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "no-referrer"
        csp = headers["content-security-policy"]
        assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp
    assert "cdn.jsdelivr.net" in client.get("/docs").headers["content-security-policy"]


def test_concurrent_requests_all_succeed(tiny_checkpoint: Path) -> None:
    with in_process(tiny_checkpoint) as http:
        transport = httpx.ASGITransport(app=http.app)

        async def burst() -> list[int]:
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                calls = [client.post("/v1/guess", json={"drawing": drawing("circle", i)}) for i in range(24)]
                return [r.status_code for r in await asyncio.gather(*calls)]

        before = http.get("/healthz").json()["inference"]["images"]
        assert http.portal.call(burst) == [200] * 24
        assert http.get("/healthz").json()["inference"]["images"] == before + 24


# -- error paths ---------------------------------------------------------------------------------
def test_unknown_candidates_are_named(client: httpx.Client) -> None:
    body = {"drawing": drawing(), "candidates": ["square", "licornx", "chat"]}
    assert_error(client.post("/v1/guess", json=body), 422, "unknown_candidate",
                 "the model cannot guess these candidates: 'licornx', 'chat'")


def test_nan_is_rejected(client: httpx.Client) -> None:
    raw = b'{"drawing": [[[NaN, 1, 2], [0, 1, 2]]]}'
    response = client.post("/v1/guess", content=raw, headers={"content-type": "application/json"})
    assert_error(response, 422, "invalid_request", "body.drawing.0.0.0: Input should be a finite number")


def test_too_many_points_and_strokes(client: httpx.Client) -> None:
    long = [[list(range(1501)), list(range(1501))]]
    assert_error(client.post("/v1/guess", json={"drawing": long}), 422, "bad_drawing",
                 "stroke 0: too many points: 1501 > 1500")
    two = [[list(range(1000)), list(range(1000))], [list(range(1001)), list(range(1001))]]
    assert_error(client.post("/v1/guess", json={"drawing": two}), 422, "bad_drawing",
                 "too many points: 2001 > 2000")
    many = [[[i, i + 1], [0, 1]] for i in range(51)]
    assert_error(client.post("/v1/guess", json={"drawing": many}), 422, "bad_drawing",
                 "too many strokes: 51 > 50")


def test_unusable_drawings(client: httpx.Client) -> None:
    assert_error(client.post("/v1/guess", json={"drawing": [[[5], [5]]]}), 422, "bad_drawing",
                 "a single point is not a drawing")
    assert_error(client.post("/v1/guess", json={"drawing": [[[1, 2], [1]]]}), 422, "bad_drawing",
                 "stroke 0: x and y must be lists of the same length")
    assert_error(client.post("/v1/guess", json={"drawing": []}), 422, "invalid_request",
                 "body.drawing: List should have at least 1 item after validation, not 0")
    assert_error(client.post("/v1/guess", json={"drawing": [[[1, 2]]]}), 422, "invalid_request",
                 "body.drawing.0: List should have at least 2 items after validation, not 1")


def test_bad_parameters(client: httpx.Client) -> None:
    assert_error(client.post("/v1/guess", json={"drawing": drawing(), "top_k": 0}), 422,
                 "invalid_request", "body.top_k: Input should be greater than or equal to 1")
    assert_error(client.post("/v1/guess", json={"drawing": drawing(), "top_k": 21}), 422,
                 "bad_top_k", "top_k must be at most 20")
    assert_error(client.post("/v1/guess", json={"drawing": drawing(), "colour": "red"}), 422,
                 "invalid_request", "body.colour: Extra inputs are not permitted")
    assert_error(client.post("/v1/guess", json={}), 422, "invalid_request",
                 "body.drawing: Field required")


def test_malformed_json(client: httpx.Client) -> None:
    headers = {"content-type": "application/json"}
    response = client.post("/v1/guess", content=b'{"drawing": [', headers=headers)
    assert response.status_code == 422
    assert response.json()["error"] == "invalid_request"
    assert "JSON decode error" in response.json()["message"]


def test_batch_errors_name_the_drawing(client: httpx.Client) -> None:
    body = {"drawings": [drawing(), [[[3], [3]]]]}
    assert_error(client.post("/v1/guess/batch", json=body), 422, "bad_drawing",
                 "drawing 1: a single point is not a drawing")
    body = {"drawings": [drawing()] * 9}
    assert_error(client.post("/v1/guess/batch", json=body), 422, "batch_too_large",
                 "at most 8 drawings per batch")


def test_match_errors(client: httpx.Client) -> None:
    assert_error(client.post("/v1/match", json={"answer": "", "guess": "chat"}), 422,
                 "invalid_request", "body.answer: String should have at least 1 character")
    assert_error(client.post("/v1/match", json={"answer": "chat"}), 422, "invalid_request",
                 "body.guess: Field required")


def test_an_ambiguous_answer_is_refused_and_answer_kind_settles_it(client: httpx.Client) -> None:
    refused = client.post("/v1/match", json={"answer": "crayon", "guess": "le crayon"})
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == "bad_answer"
    assert "answer_kind" in refused.json()["message"] and "pencil" in refused.json()["message"]
    as_word = client.post("/v1/match", json={"answer": "crayon", "guess": "le crayon", "answer_kind": "word"})
    assert as_word.status_code == 200 and as_word.json()["accepted"] is True
    as_key = client.post("/v1/match", json={"answer": "crayon", "guess": "le crayon", "answer_kind": "key"})
    assert as_key.status_code == 200 and as_key.json()["accepted"] is False
    unknown = client.post("/v1/match", json={"answer": "nope", "guess": "x", "answer_kind": "key"})
    assert unknown.status_code == 422 and unknown.json()["error"] == "bad_answer"


def test_body_too_large_declared_and_streamed(client: httpx.Client) -> None:
    message = "the request body is larger than 100000 bytes"
    big = json.dumps({"drawing": drawing(), "pad": "x" * 100_000}).encode()
    assert_error(client.post("/v1/guess", content=big, headers={"content-type": "application/json"}),
                 413, "too_large", message)

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit counts what arrives
        for _ in range(30):
            yield b" " * 8192

    assert_error(client.post("/v1/guess", content=chunks(), headers={"content-type": "application/json"}),
                 413, "too_large", message)


def test_unknown_routes_and_methods(client: httpx.Client) -> None:
    assert_error(client.get("/v1/nope"), 404, "not_found", "no such resource: /v1/nope")
    assert_error(client.get("/v1/guess"), 405, "method_not_allowed", "Method Not Allowed")


def test_overloaded_queue_answers_503(tiny_checkpoint: Path) -> None:
    with in_process(tiny_checkpoint, model={"max_queue": 2}) as small:
        body = {"drawings": [drawing(), drawing("circle"), drawing("line")]}
        response = small.post("/v1/guess/batch", json=body)
        assert_error(response, 503, "overloaded",
                     "the recognizer is busy (0 drawings waiting); retry shortly")
        assert response.headers["retry-after"] == "1"
        assert small.post("/v1/guess", json={"drawing": drawing()}).status_code == 200


def test_shutting_down_answers_503(tiny_checkpoint: Path) -> None:
    with in_process(tiny_checkpoint) as app:
        app.portal.call(app.app.state.shared.inference.aclose)
        assert_error(app.post("/v1/guess", json={"drawing": drawing()}), 503, "shutting_down",
                     "the inference worker is not running")


def test_a_bug_is_a_500_without_detail(client: httpx.Client) -> None:
    async def broken() -> None:
        raise ValueError("secret internal detail")

    client.app.add_api_route("/test/broken", broken)
    response = client.get("/test/broken")
    assert_error(response, 500, "internal_error", "the server failed on this request; it has been logged")
    assert "secret" not in response.text


def test_budgets_answer_429_with_retry_after(tiny_checkpoint: Path) -> None:
    with in_process(tiny_checkpoint, client_points_per_s=10, client_points_burst=100) as small:
        now = [0.0]
        small.app.state.shared.points.clock = lambda: now[0]  # the budgets' time moves only when told
        body = {"drawing": [[list(range(60)), list(range(60))]]}
        assert small.post("/v1/guess", json=body).status_code == 200
        refused = small.post("/v1/guess", json=body)
        assert refused.status_code == 429 and refused.json()["error"] == "rate_limited"
        # 60 points taken from a burst of 100, 60 more asked: 20 missing at 10 a second
        assert refused.json()["message"] == "more than 10 points per second from this client; retry in 2.0 s"
        assert refused.headers["retry-after"] == "2"
        now[0] += 1.5  # 15 points back: 5 still missing
        again = small.post("/v1/guess", json=body)
        assert again.json()["message"].endswith("retry in 0.5 s") and again.headers["retry-after"] == "1"
        now[0] += 0.5
        assert small.post("/v1/guess", json=body).status_code == 200
    with in_process(tiny_checkpoint, client_cpu_share=1e-6, client_cpu_burst_s=1e-5) as slow:
        statuses = [slow.post("/v1/guess", json={"drawing": drawing()}).status_code for _ in range(3)]
        assert statuses[0] == 200 and statuses[-1] == 429
        refused = slow.post("/v1/guess", json={"drawing": drawing()})
        assert refused.json()["message"].startswith("too much drawing work from this client; retry in")


# -- settings --------------------------------------------------------------------------------------
def test_settings_from_environment() -> None:
    settings = Settings.from_env({"GRIFFON_MODEL_MAX_BATCH": "8", "GRIFFON_ALLOWED_ORIGINS": "https://a, https://b"})
    assert settings.model.max_batch == 8 and settings.allowed_origins == ["https://a", "https://b"]
    assert Settings.from_env({}).allowed_origins == []  # same origin only, by default
    with pytest.raises(SettingsError, match="GRIFFON_MODEL_MAX_BATCH: Input should be less than or equal to"):
        Settings.from_env({"GRIFFON_MODEL_MAX_BATCH": "100000"})


def test_play_settings_use_the_same_reader() -> None:
    from service.play.settings import PlaySettings, PlaySettingsError

    play = PlaySettings.from_env({"GRIFFON_PLAY_ROOMS_PER_CLIENT": "4", "GRIFFON_TUNING": '{"tick_s": 0.2}'})
    assert play.rooms_per_client == 4 and play.tick_s == 0.2 and play.pictomania_rounds is None
    with pytest.raises(PlaySettingsError, match="GRIFFON_PLAY_ROOMS_PER_CLIENT: Input should be less than"):
        PlaySettings.from_env({"GRIFFON_PLAY_ROOMS_PER_CLIENT": "70"})
    with pytest.raises(PlaySettingsError, match="GRIFFON_TUNING 'tick_s': Input should be less than or eq"):
        PlaySettings.from_env({"GRIFFON_TUNING": '{"tick_s": 5}'})


def test_a_tuning_field_is_no_variable_of_its_own_and_a_plain_constructor_reads_no_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from service.play.settings import PlaySettings

    as_a_variable = "GRIFFON_PLAY_" + "tick_s".upper()  # where tick_s would be read, were it a variable
    assert PlaySettings.from_env({as_a_variable: "0.2"}).tick_s == PlaySettings().tick_s == 0.1
    monkeypatch.setenv("GRIFFON_PLAY_ROOMS_PER_CLIENT", "3")
    assert PlaySettings().rooms_per_client == 2 and PlaySettings.from_env().rooms_per_client == 3
    assert PlaySettings(tick_s=0.2, rooms_per_client=5).tick_s == 0.2  # every field: a constructor parameter


def test_the_tuning_a_test_gives_its_server_reaches_each_settings_class() -> None:
    from griffon.launch import tuned, tuning
    from service.play.settings import PlaySettings

    env = tuned({"GRIFFON_MAX_POINTS": "100", **tuning(tick_s=0.05)}, kontour_timer_s=6,
                **{"bot.tick_s": 0.5})  # a feature's field by its path
    play, service = PlaySettings.from_env(env), Settings.from_env(env)
    assert (play.tick_s, play.kontour_timer_s, service.bot.tick_s, service.max_points) == (0.05, 6, 0.5, 100)
    assert PlaySettings.from_env(tuned(env, tick_s=0.2)).tick_s == 0.2  # the later value wins
    with pytest.raises(ValueError, match="no tuning field 'bot_tick_s' \\(did you mean 'bot.tick_s'\\?\\)"):
        tuning(bot_tick_s=0.5)  # a key by its former, flat name: refused before any server starts


def test_each_feature_is_a_nested_model_read_with_its_own_prefix() -> None:
    env = {"GRIFFON_MODEL": "other.pt", "GRIFFON_MODEL_THREADS": "3", "GRIFFON_CAPACITY_CORES": "6",
           "GRIFFON_PLAY_MAX_GAMES": "9", "GRIFFON_BOT_MAX_SESSIONS": "4",
           "GRIFFON_BOT_ROOMS_PER_CLIENT": "5", "GRIFFON_MAX_POINTS": "100",
           "GRIFFON_TUNING": '{"bot.tick_s": 0.5, "capacity.bot_room_cost": 0}'}
    s = Settings.from_env(env)
    assert (s.model.checkpoint, s.model.threads, s.capacity.cores) == (Path("other.pt"), 3, 6)
    assert (s.play_limits.max_games, s.bot.max_sessions, s.bot.rooms_per_client) == (9, 4, 5)
    assert (s.bot.tick_s, s.capacity.bot_room_cost, s.max_points) == (0.5, 0, 100)
    assert Settings().bot.max_sessions == 200  # a plain constructor reads no environment, the parts' neither
    assert Settings.from_env({"GRIFFON_BOT_TICK_S": "0.5"}).bot.tick_s == 0.05  # a tuning field: no variable
    bad = {"GRIFFON_BOT_MAX_SESSIONS": "0", "GRIFFON_MAX_POINTS": "1",
           "GRIFFON_TUNING": '{"model.http_share": 2}'}
    with pytest.raises(SettingsError) as raised:  # one line naming every bad variable, a part's too
        Settings.from_env(bad)
    message = str(raised.value)
    assert message.startswith("invalid service settings: ") and "\n" not in message
    for named in ("GRIFFON_TUNING 'model.http_share': Input should be less than 1",
                  "GRIFFON_BOT_MAX_SESSIONS: Input should be greater than or equal to 1",
                  "GRIFFON_MAX_POINTS: Input should be greater than or equal to 10"):
        assert named in message


def test_a_renamed_variable_set_by_its_former_name_is_refused_naming_the_new_one() -> None:
    """A former name is not read: an environment that sets it is refused, so that an operator's
    limit is never silently dropped; the new name is read."""
    with pytest.raises(SettingsError, match="GRIFFON_MAX_SESSIONS was renamed GRIFFON_PLAY_MAX_GAMES"):
        Settings.from_env({"GRIFFON_MAX_SESSIONS": "7"})
    with pytest.raises(SettingsError, match="GRIFFON_MAX_SESSIONS was renamed"):
        Settings.from_env({"GRIFFON_PLAY_MAX_GAMES": "5", "GRIFFON_MAX_SESSIONS": "7"})
    assert Settings.from_env({"GRIFFON_PLAY_MAX_GAMES": "5"}).play_limits.max_games == 5


# -- the shared micro-batcher, in process with the real model --------------------------------------
def test_batcher_shares_forward_passes_and_bounds_its_queue() -> None:
    import torch

    from model import Guesser, RasterSpec
    from model.network import create_model
    from service.inference import BatchInference, Overloaded

    torch.manual_seed(0)  # an untrained network: the batcher must only give each caller its row
    guesser = Guesser(create_model("plain", num_classes=4), sorted(LABELS), RasterSpec())
    views = [guesser.prepare_views(drawing(w, i)) for i in range(10) for w in ("circle", "square", "line")]
    expected = guesser.probabilities_from_views(views)

    async def concurrent(max_queue: int) -> tuple[list, BatchInference]:
        inference = BatchInference(guesser, max_batch=8, max_queue=max_queue, batch_wait_s=0.002)
        inference.start()
        try:
            calls = [inference.probabilities([one]) for one in views]
            return await asyncio.gather(*calls, return_exceptions=True), inference
        finally:
            await inference.aclose()

    results, inference = asyncio.run(concurrent(max_queue=64))
    np.testing.assert_allclose(np.concatenate(results), expected, atol=1e-5)
    assert inference.stats.images == 30 and inference.stats.batches < 30
    assert inference.stats.largest_batch <= 8

    results, inference = asyncio.run(concurrent(max_queue=4))
    rejected = [r for r in results if isinstance(r, Overloaded)]
    assert 0 < len(rejected) <= 26 and inference.stats.rejected == len(rejected)
    assert all(isinstance(r, np.ndarray) for r in results if not isinstance(r, Overloaded))


# -- solo games: creation budgets and the deck error (sockets: test_service_play.py) ---------------
def test_game_creation_is_budgeted_per_client(tiny_checkpoint: Path) -> None:
    with in_process(tiny_checkpoint, play_limits={"games_per_client": 2, "games_per_client_hour": 3}) as app:
        kontour = {"game": "kontour", "opponents": 1}
        created = [app.post("/v1/play", json=kontour).json() for _ in range(2)]
        with app.websocket_connect(created[0]["ws"]), app.websocket_connect(created[1]["ws"]):
            assert_error(app.post("/v1/play", json=kontour), 429, "too_many_games",
                         "you already have 2 games open (at most 2); finish or leave one first")
        third = app.post("/v1/play", json=kontour)  # replaces the oldest game its player left
        assert third.status_code == 201
        games = app.app.state.play.games
        assert created[0]["game_id"] not in games and created[1]["game_id"] in games
        refused = app.post("/v1/play", json=kontour)
        assert refused.status_code == 429 and refused.json()["error"] == "rate_limited"
        assert refused.json()["message"].startswith("at most 3 new games per hour; retry in ")
        assert int(refused.headers["retry-after"]) > 60


def test_no_deck_is_503(tiny_checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import service.play.manager
    from service.play.table_words import DeckSetupError

    def no_deck(*args: object) -> None:
        raise DeckSetupError("need at least 4 drawable words for a Kontour deck, got 0")

    monkeypatch.setattr(service.play.manager, "kontour_deck", no_deck)
    with in_process(tiny_checkpoint) as app:
        assert_error(app.post("/v1/play", json={"game": "kontour"}), 503, "no_deck",
                     "need at least 4 drawable words for a Kontour deck, got 0")


def test_a_test_server_whose_port_was_taken_moves_to_another(
    tight_server, tiny_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two xdist workers may draw the same free port: the one that loses the bind must not take the
    other's server for its own (it once ran a browser test against another file's settings)."""
    from griffon import launch

    taken = int(tight_server.url.rsplit(":", 1)[1])
    draws = iter([taken])
    real = launch.free_port
    monkeypatch.setattr(launch, "free_port", lambda: next(draws, None) or real())
    with launch.running_server({"GRIFFON_MODEL": str(tiny_checkpoint)}) as server:
        assert server.url != tight_server.url
        assert httpx.get(server.url + "/healthz", timeout=patient(10)).status_code == 200
    assert tight_server.alive()


def test_a_retired_variable_is_named_in_a_warning_at_start(caplog: pytest.LogCaptureFixture) -> None:
    """A variable no longer read (a tuning field now) changes nothing, so `griffon serve` says so."""
    from griffon.serve import warn_retired
    from store.settings import RENAMED, RETIRED, env_names

    with caplog.at_level("WARNING", logger="griffon.service"):
        warn_retired({"GRIFFON_PLAY_KONTOUR_TIMER_S": "30", "GRIFFON_PLAY_MAX_GAMES": "5"})
    assert "GRIFFON_PLAY_KONTOUR_TIMER_S is no longer read" in caplog.text
    assert "GRIFFON_PLAY_MAX_GAMES" not in caplog.text  # read today: no warning
    from service.play.settings import PlaySettings
    from service.replicas import ReplicaSettings
    from service.settings import BotSettings, CapacitySettings, ModelSettings, PlayLimits
    from store.settings import StoreSettings

    classes = (Settings, ModelSettings, CapacitySettings, PlayLimits, BotSettings, PlaySettings,
               ReplicaSettings, StoreSettings)
    read = {n for cls in classes for field in cls.model_fields for n in env_names(cls, field)}
    assert {"GRIFFON_MODEL", "GRIFFON_BOT_MAX_SESSIONS"} <= read
    assert RENAMED["GRIFFON_MAX_BOT_SESSIONS"] == "GRIFFON_BOT_MAX_SESSIONS"  # a former name: refused, named
    assert not RETIRED & read  # a retired name is never one that is read
