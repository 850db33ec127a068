"""The word rule over the real server: ``POST /v1/words/check`` reads a whole list as a round
reads its candidates, a round ignores (and lists) the words the model cannot guess, and every
guess carries the candidate exactly as the room sent it."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import websockets

from griffon.launch import Server, patient, running_server
from tests.conftest import FIXTURE_WORDS, shape

LISTS = Path(__file__).parent / "data" / "words"


@pytest.fixture(scope="module")
def server(tiny_checkpoint: Path) -> Iterator[Server]:
    with running_server({"GRIFFON_MODEL": str(tiny_checkpoint)}) as running:
        yield running


@pytest.mark.parametrize("language", ["en", "fr"])
def test_a_whole_word_list_is_checked_in_one_call(server: Server, language: str) -> None:
    with (LISTS / f"skribbl_{language}.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    words = [row["word"] for row in rows] + ["Squares", "  the circle ", "zz-top"]
    reply = httpx.post(server.url + "/v1/words/check", json={"words": words, "language": language},
                       timeout=30)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["language"] == language and [w["word"] for w in body["words"]] == words
    expected = {row["word"]: [c for c in row["categories"].split("|") if c in FIXTURE_WORDS] for row in rows}
    expected |= {"Squares": ["square"], "  the circle ": ["circle"], "zz-top": []}
    assert {w["word"]: w["categories"] for w in body["words"]} == expected  # this model knows 4 labels
    assert body["known"] == sum(1 for cats in expected.values() if cats)
    assert body["unknown"] == list(dict.fromkeys(w for w in words if not expected[w]))
    square = next(w for w in body["words"] if w["word"] == "Squares")
    assert square["french"] == ["carré"]


@pytest.mark.parametrize("body", [
    {"words": []}, {"words": ["a"] * 1001}, {"words": ["x" * 201]}, {"words": [3]},
    {"words": ["chat"], "language": "de"}, {"words": ["chat"], "extra": 1}, {},
])
def test_a_bad_word_list_is_a_422(server: Server, body: dict) -> None:
    reply = httpx.post(server.url + "/v1/words/check", json=body, timeout=30)
    assert reply.status_code == 422, reply.text


def test_a_round_ignores_unknown_words_and_guesses_with_the_rooms_spelling(server: Server) -> None:
    candidates = [" the  Squares ", "CIRCLE!", "licornx", "Triangles", "carré"]
    (xs, ys, ts), = shape("square", np.random.default_rng(3))

    async def scenario() -> tuple[dict, list[dict], dict]:
        async with websockets.connect(server.ws_url + "/v1/bot", open_timeout=patient(10)) as ws:
            async def recv() -> dict:
                return json.loads(await asyncio.wait_for(ws.recv(), patient(10)))

            await ws.send(json.dumps({"type": "hello", "versions": [2]}))
            assert (await recv())["type"] == "welcome"
            await ws.send(json.dumps({"type": "round_start", "round": 1, "candidates": candidates,
                                      "language": "en", "pace": "instant", "difficulty": "hard", "seed": 2}))
            ready = await recv()
            for cut in (3, 6, len(xs)):  # the square, a side at a time
                await ws.send(json.dumps({"type": "stroke", "stroke": [xs[:cut], ys[:cut], ts[:cut]]}))
            guesses = []
            try:
                while True:
                    frame = await asyncio.wait_for(ws.recv(), patient(2.5))
                    guesses.append(json.loads(frame))
            except TimeoutError:
                pass
            await ws.send(json.dumps({"type": "round_end", "answer": "square"}))
            over = await recv()
            while over["type"] != "round_over":
                over = await recv()
            return ready, guesses, over

    ready, guesses, over = asyncio.run(scenario())
    assert ready["candidates"] == 3 and ready["unknown"] == ["licornx"]  # « carré » is the squares' again
    said = [g for g in guesses if g["type"] == "guess"]
    assert said, guesses  # three candidates, instant, hard: the bot says something
    spelled = {"square": " the  Squares ", "circle": "CIRCLE!", "triangle": "Triangles"}
    for guess in said:
        assert guess["text"] == spelled[guess["label"]], guess  # exactly as the room sent it
    assert over["said"] == [g["text"] for g in said]


def test_a_round_of_words_the_model_cannot_guess_starts_and_the_bot_stays_silent(server: Server) -> None:
    (xs, ys, ts), = shape("square", np.random.default_rng(3))

    async def scenario() -> tuple[dict, list[dict]]:
        async with websockets.connect(server.ws_url + "/v1/bot", open_timeout=patient(10)) as ws:
            await ws.send(json.dumps({"type": "hello", "versions": [2]}))
            await asyncio.wait_for(ws.recv(), patient(10))
            await ws.send(json.dumps({"type": "round_start", "round": 1, "language": "en",
                                      "candidates": ["licornx", "dinosaur"], "pace": "instant",
                                      "difficulty": "hard"}))
            ready = json.loads(await asyncio.wait_for(ws.recv(), patient(10)))
            for cut in (3, 6, len(xs)):
                await ws.send(json.dumps({"type": "stroke", "stroke": [xs[:cut], ys[:cut], ts[:cut]]}))
            frames = []
            with contextlib.suppress(TimeoutError):
                while True:
                    frames.append(json.loads(await asyncio.wait_for(ws.recv(), patient(2))))
            return ready, frames

    ready, frames = asyncio.run(scenario())
    assert ready["type"] == "round_ready" and ready["candidates"] == 0
    assert ready["unknown"] == ["licornx", "dinosaur"]
    assert [f for f in frames if f["type"] in ("guess", "error")] == []
