"""A two-view model (raster network + stroke-sequence member, one checkpoint) behind the real
uvicorn server: HTTP guesses, batches and a bot's streamed stroke give the model's own answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import websockets

from griffon.launch import Server, patient, running_server
from model import Guesser
from tests.conftest import FIXTURE_WORDS, shape


@pytest.fixture(scope="module")
def served(two_view_checkpoint: Path) -> Iterator[tuple[Server, Guesser]]:
    with running_server({"GRIFFON_MODEL": str(two_view_checkpoint)}) as server:
        yield server, Guesser.load(two_view_checkpoint)


def test_http_guesses_and_batches_are_the_two_view_model_s(served: tuple[Server, Guesser]) -> None:
    server, local = served
    assert local.member is not None
    rng = np.random.default_rng(5)
    drawings = [shape(word, rng) for word in FIXTURE_WORDS]
    one = httpx.post(server.url + "/v1/guess", json={"drawing": drawings[1], "top_k": 4}, timeout=patient(30))
    assert one.status_code == 200, one.text
    expected = local.guess(drawings[1], top_k=4)
    assert [g["label"] for g in one.json()["guesses"]] == [g.label for g in expected]
    assert [g["prob"] for g in one.json()["guesses"]] == pytest.approx([g.prob for g in expected], abs=1e-4)
    batch = httpx.post(server.url + "/v1/guess/batch", json={"drawings": drawings, "top_k": 1},
                       timeout=patient(30))
    assert batch.status_code == 200, batch.text
    labels = [r["guesses"][0]["label"] for r in batch.json()["results"]]
    assert labels == [g[0].label for g in local.guess_batch(drawings, top_k=1)]


def test_a_bot_s_stroke_is_analysed_by_both_views(served: tuple[Server, Guesser]) -> None:
    server, local = served
    (xs, ys, _), = shape("square", np.random.default_rng(3))

    async def scenario() -> dict:
        async with websockets.connect(server.ws_url + "/v1/bot") as ws:
            async def ask(frame: dict) -> dict:
                await ws.send(json.dumps(frame))
                return json.loads(await asyncio.wait_for(ws.recv(), patient(10)))

            await ask({"type": "hello", "versions": [1], "room": "test", "analysis": True})
            ready = await ask({"type": "round_start", "round": "r1", "difficulty": "easy", "seed": 1,
                               "candidates": list(FIXTURE_WORDS)})
            assert ready["type"] == "round_ready", ready
            return await ask({"type": "stroke", "stroke": [xs, ys]})

    analysis = asyncio.run(scenario())
    assert analysis["type"] == "analysis" and analysis["strokes"] == 1, analysis
    session = local.session(candidates=FIXTURE_WORDS, top_k=len(analysis["top"]))
    expected = session.add_stroke([xs, ys])
    assert [g["label"] for g in analysis["top"]] == [g.label for g in expected]
