"""Bot rooms on `griffon serve --workers 2`: a room whose socket is killed resumes whichever worker
its new socket lands on (a resume landing on the other worker is relayed to the room's own)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import websockets
from websockets.asyncio.client import unix_connect

from griffon.launch import patient, running_server
from service.workers import Workers
from tests.conftest import shape

KILLS = 24


async def ask(ws: websockets.ClientConnection, frame: dict, kind: str) -> dict:
    """Send ``frame``; the next frame of type ``kind`` (errors fail the test, guesses are skipped)."""
    await ws.send(json.dumps(frame))
    while True:
        reply = json.loads(await asyncio.wait_for(ws.recv(), patient(10)))
        assert reply["type"] != "error", reply
        if reply["type"] == kind:
            return reply


@pytest.mark.slow
def test_a_killed_bot_socket_resumes_on_either_worker(tiny_checkpoint: Path, tmp_path: Path) -> None:
    folder = tmp_path / "workers"
    env = {"GRIFFON_MODEL": str(tiny_checkpoint), "GRIFFON_WORKER_DIR": str(folder),
           "GRIFFON_BOT_RESUME_S": "30"}
    (xs, ys, ts), = shape("square", np.random.default_rng(3))

    with running_server(env, workers=2) as server:
        async def scenario() -> tuple[int, int]:
            ws = await websockets.connect(server.ws_url + "/v1/bot", open_timeout=patient(10))
            welcome = await ask(ws, {"type": "hello", "versions": [2], "room": "workers"}, "welcome")
            session, token = welcome["session"], welcome["resume_token"]
            other = 1 - Workers(0, 2, folder, "").owner(session)  # the worker that does not hold it
            await ask(ws, {"type": "round_start", "round": 1, "candidates": ["square", "circle"],
                           "pace": "instant", "seed": 1}, "round_ready")
            strokes = resumed = 0
            for kill in range(KILLS):
                await ws.send(json.dumps({"type": "stroke", "stroke": [xs, ys, ts]}))
                await ws.send(json.dumps({"type": "ping", "id": kill}))
                await ask(ws, {"type": "ping", "id": f"sync{kill}"}, "pong")
                strokes += 1
                ws.transport.abort()  # the socket dies, not the server
                if kill % 2:  # through the port: either worker
                    ws = await websockets.connect(server.ws_url + "/v1/bot", open_timeout=patient(10))
                else:  # straight onto the worker that does not hold the room
                    ws = await unix_connect(str(folder / f"worker-{other}.sock"), uri="ws://worker/v1/bot",
                                            open_timeout=patient(10))
                back = await ask(ws, {"type": "hello", "versions": [2], "room": "workers",
                                      "resume": {"session": session, "token": token}}, "welcome")
                assert back["session"] == session and back["resumed"] is True, back
                assert back["round"]["round"] == 1 and back["round"]["strokes"] == strokes, back
                token = back["resume_token"]
                resumed += 1
            over = await ask(ws, {"type": "round_end"}, "round_over")
            assert over["strokes"] == strokes
            await ws.send(json.dumps({"type": "bye"}))
            await ws.close()
            return resumed, strokes

        resumed, strokes = asyncio.run(scenario())
    assert resumed == KILLS and strokes == KILLS
