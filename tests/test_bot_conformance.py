"""Bot protocol conformance (docs/BOT_PROTOCOL.md), the same scenarios through both clients: the
JavaScript client (clients/js/griffon-bot.js, through Node) and the Python room client
(tests/bot_clients.py adapts each to one interface).

Against any server: ``GRIFFON_CONFORMANCE_URL=wss://host/v1/bot pytest tests/test_bot_conformance.py``
(its model must know the Quick, Draw! words ``square``, ``circle``, ``triangle``, ``line``); without
it, the suite starts a real ``griffon serve``. Scenarios of protocol version 2 skip, with the
reason, on a server that answers ``welcome.version`` 1. ``key_required`` needs a server whose
operator requires keys: ``GRIFFON_CONFORMANCE_KEYS_URL``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from griffon.launch import running_server
from tests.bot_clients import CLIENTS, BotClient, ClientError, node_command
from tests.conftest import shape
from tests.play_helpers import model_env

WORDS = ["square", "circle", "triangle", "line"]
EXTERNAL = os.environ.get("GRIFFON_CONFORMANCE_URL")
KEYS_URL = os.environ.get("GRIFFON_CONFORMANCE_KEYS_URL")


def square(seed: int = 3) -> list:
    """A square in two strokes (every AI level waits for a second line before it speaks)."""
    (xs, ys, _), = shape("square", np.random.default_rng(seed))
    return [[xs[:3], ys[:3]], [xs[2:], ys[2:]]]


@pytest.fixture(scope="module")
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The bot endpoint under test: ``GRIFFON_CONFORMANCE_URL``, or a server started here."""
    if EXTERNAL:
        yield EXTERNAL
        return
    # every room of this file comes from one address, many waiting for a resume at once: that
    # address may hold the whole budget here (the per-address bounds have their own tests)
    one_client = {"GRIFFON_CAPACITY_CLIENT_SHARE": "1", "GRIFFON_BOT_ROOMS_PER_CLIENT": "256"}
    with running_server({**model_env(request), **one_client}) as server:
        yield server.ws_url + "/v1/bot"


@pytest.fixture(params=sorted(CLIENTS))
def client(request: pytest.FixtureRequest) -> Iterator[BotClient]:
    if request.param == "js" and node_command() is None:
        pytest.skip("no Node >= 20 on PATH for the JavaScript client")
    made = CLIENTS[request.param]()
    yield made
    made.stop()


def greet(client: BotClient, url: str, **options: Any) -> dict[str, Any]:
    """Connect and greet; the `welcome` event is read (the next one is a reconnect's)."""
    welcome = client.connect(url, room="conformance", name="griffon", **options)
    assert client.event("welcome")["session"] == welcome["session"]
    return welcome


def needs_v2(welcome: dict[str, Any], what: str) -> None:
    if welcome["version"] < 2:
        pytest.skip(f"{what} is protocol version 2; this server speaks version {welcome['version']}")


def draw(client: BotClient, strokes: list) -> None:
    for stroke in strokes:
        client.op("stroke", *stroke)


# -- version 1 and 2 -----------------------------------------------------------------------------
def test_greeting_negotiates_the_highest_common_version(client: BotClient, url: str) -> None:
    welcome = greet(client, url)
    assert welcome["type"] == "welcome" and welcome["protocol"] == "griffon-bot"
    assert welcome["version"] in (1, 2)
    assert welcome["session"] and "?key=" in welcome["transcript"]
    assert {"max_points", "max_stroke_points", "max_frame_bytes"} <= set(welcome["limits"])
    if welcome["version"] >= 2:
        assert welcome["resume_token"] and welcome["resumed"] is False
        assert welcome["y"] == "down" and set(welcome["paces"]) == {"instant", "human"}


def test_a_round_with_a_guess(client: BotClient, url: str) -> None:
    greet(client, url)
    ready = client.op("start_round", round="c1", candidates=WORDS, difficulty="hard", seed=1)
    assert ready["type"] == "round_ready" and ready["round"] == "c1" and ready["candidates"] == len(WORDS)
    draw(client, square())
    guess = client.event("guess", timeout=20, label="square")
    assert guess["round"] == "c1" and guess["guess_id"] >= 1 and guess["word"] == "carré"
    client.op("verdict", guess["guess_id"], correct=True)
    over = client.op("end_round", answer="square")
    assert over["type"] == "round_over" and over["round"] == "c1" and guess["text"] in over["said"]
    assert set(over["said"]) <= set(WORDS) and over["strokes"] == 2  # the room's own spelling


def test_candidates_the_model_cannot_guess_are_listed_not_refused(client: BotClient, url: str) -> None:
    welcome = greet(client, url)
    ready = client.op("start_round", round="c2", candidates=["square", "not-a-word-xyz", "Circles"])
    assert ready["round"] == "c2" and ready["candidates"] == 2
    assert ready.get("unknown") == (["not-a-word-xyz"] if welcome["version"] >= 2 else None)
    assert client.op("start_round", round="c3", candidates=WORDS)["round"] == "c3"  # the socket lives on


def test_the_bot_draws_its_turn_and_declines_a_word_it_cannot_draw(client: BotClient, url: str) -> None:
    needs_v2(greet(client, url), "a drawing turn")
    declined = client.op("draw_turn", turn="d1", word="xyzzy")
    assert declined["type"] == "draw_declined" and declined["reason"] == "unknown_word"
    start = client.op("draw_turn", turn="d2", word="squares", language="en", duration_s=3)
    assert start["type"] == "draw_start" and start["label"] == "square" and start["strokes"] >= 1
    done = client.event("draw_done", timeout=20, turn="d2")
    assert done["strokes"] == start["strokes"] and done["stopped"] is False
    ends = [e for e in client.log if e.get("event") == "draw_stroke_end" and e["data"]["turn"] == "d2"]
    points = [e for e in client.log if e.get("event") == "draw_points" and e["data"]["turn"] == "d2"]
    assert len(ends) == start["strokes"]
    assert {p["data"]["stroke"] for p in points} == set(range(start["strokes"]))


def test_erase_and_fill_reach_the_bot(client: BotClient, url: str) -> None:
    needs_v2(greet(client, url), "erase")
    client.op("start_round", round="e1", candidates=WORDS, difficulty="hard", seed=1)
    draw(client, square())
    client.op("fill", x=1, y=1, color="red")
    client.op("erase", stroke=0)
    over = client.op("end_round", answer="square")
    assert over["strokes"] == 1


@pytest.mark.parametrize("frame, code", [
    ("{not json", "bad_json"),
    ("[1, 2]", "bad_frame"),
    ({"type": "teleport"}, "unknown_type"),
    ({"type": "stroke_start", "x": "left", "y": 3}, "invalid_frame"),
    ({"type": "points", "x": [1, 2], "y": [3, 4]}, "no_round"),
])
def test_a_bad_frame_is_an_error_frame_and_the_connection_goes_on(
    client: BotClient, url: str, frame: Any, code: str,
) -> None:
    greet(client, url)
    client.op("raw", frame)
    error = client.event("error", code=code)
    assert error["message"]
    assert client.op("ping") is not None  # still connected


def test_a_stroke_over_the_limits_is_refused(client: BotClient, url: str) -> None:
    welcome = greet(client, url)
    client.op("start_round", round="c4", candidates=WORDS)
    too_long = welcome["limits"]["max_stroke_points"] + 1
    xs = [float(i % 200) for i in range(too_long)]
    try:
        client.op("stroke", xs, xs)
        code = client.event("error")["code"]  # the server refused it
    except ClientError as refused:  # the client refused it before sending it
        code = refused.code
    assert code == "too_many_points"


def test_bye_closes_with_1000(client: BotClient, url: str) -> None:
    greet(client, url)
    client.op("close")
    assert client.event("close")["code"] == 1000


# -- version 2 -----------------------------------------------------------------------------------
def test_pace_instant_answers_after_one_stroke(client: BotClient, url: str) -> None:
    needs_v2(greet(client, url), "pace")
    client.op("start_round", round="p1", candidates=WORDS, difficulty="easy", seed=2, pace="instant")
    draw(client, square()[:1])  # « instant » needs one line, read at once
    guess = client.event("guess", timeout=10, round="p1")
    assert guess["strokes"] == 1 and guess["label"] in WORDS


def test_a_new_round_over_an_open_one_replaces_it(client: BotClient, url: str) -> None:
    needs_v2(greet(client, url), "round_over's why")
    client.op("start_round", round="old", candidates=WORDS)
    draw(client, square()[:1])
    ready = client.op("start_round", round="new", candidates=WORDS)
    over = client.event("round_over", round="old")
    assert over["why"] == "replaced" and over["strokes"] == 1
    assert ready["round"] == "new"
    assert client.op("end_round")["why"] == "round_end"


def test_a_dropped_socket_resumes_the_session(client: BotClient, url: str) -> None:
    welcome = greet(client, url)
    needs_v2(welcome, "resume")
    if not client.resumes:
        pytest.skip(f"the {client.name} client does not resume by itself")
    client.op("start_round", round="r1", candidates=WORDS, difficulty="hard", seed=3)
    strokes = square()
    draw(client, strokes[:1])
    client.op("drop")
    assert client.event("welcome", timeout=20)["session"] == welcome["session"]
    resumed = client.event("resumed")
    assert resumed["resumed"] is True and resumed["round"]["round"] == "r1"
    draw(client, strokes[1:])
    assert client.event("guess", timeout=20, label="square")["round"] == "r1"


def test_a_dropped_socket_on_version_1_starts_a_new_session_and_replays_the_round(
    client: BotClient, url: str,
) -> None:
    welcome = greet(client, url)
    if welcome["version"] != 1:
        pytest.skip("version 2 resumes the session (test_a_dropped_socket_resumes_the_session)")
    if not client.resumes:
        pytest.skip(f"the {client.name} client does not reconnect by itself")
    client.op("start_round", round="v1", candidates=WORDS, difficulty="hard", seed=3)
    strokes = square()
    draw(client, strokes[:1])
    client.op("drop")
    assert client.event("welcome", timeout=20)["session"] != welcome["session"]
    assert client.event("resumed")["resumed"] is False
    draw(client, strokes[1:])
    guess = client.event("guess", timeout=20, label="square")
    assert guess["round"] == "v1" and guess["strokes"] == 2  # the first stroke was sent again


def test_an_unknown_key_is_refused(client: BotClient, url: str) -> None:
    probe = CLIENTS[client.name]()
    try:
        needs_v2(greet(probe, url), "keys")
    finally:
        probe.stop()
    with pytest.raises(ClientError) as refused:
        greet(client, url, key="grf_not-a-key")
    assert refused.value.code == "bad_key" and refused.value.close_code == 4401


@pytest.mark.skipif(not KEYS_URL, reason="needs a server that requires keys: GRIFFON_CONFORMANCE_KEYS_URL")
def test_a_server_that_requires_keys_refuses_a_room_without_one(client: BotClient) -> None:
    with pytest.raises(ClientError) as refused:
        greet(client, str(KEYS_URL))
    assert refused.value.code == "key_required" and refused.value.close_code == 4401
