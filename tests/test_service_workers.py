"""`griffon serve --workers 2`: a game's socket that lands on the other worker is relayed to the
one that holds the game, the metrics add up every worker's, and a worker killed mid-game comes
back with its games."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import unix_connect
from websockets.exceptions import WebSocketException

from griffon.launch import REPO, Patience, eventually, free_port, patient, running_server
from griffon.serve import bound_socket
from service.workers import Workers

STROKE = {"type": "move", "move": {"kind": "stroke", "points": [[10, 10], [60, 80], [120, 40]]}}


def worker_pid(supervisor: int, index: int) -> int:
    """The process of worker ``index`` among the supervisor's children (by its environment)."""
    for pid in Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split():
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        if f"GRIFFON_WORKER_INDEX={index}".encode() in environ:
            return int(pid)
    raise AssertionError(f"no worker {index}")


async def read_until(ws, wanted, limit: int = 60) -> dict:
    for _ in range(limit):
        frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if wanted(frame):
            return frame
    raise AssertionError("the frame never came")


def my_stroke(frame: dict) -> bool:
    events = frame.get("events", [])
    return any(e.get("kind") == "stroke_drawn" and e.get("player") == "joueur" for e in events)


@pytest.mark.slow
def test_two_workers_relay_sockets_add_up_metrics_and_bring_a_killed_worker_back(tmp_path: Path) -> None:
    folder = tmp_path / "workers"
    with running_server({"GRIFFON_WORKER_DIR": str(folder)}, workers=2) as server:
        sockets = [str(folder / f"worker-{i}.sock") for i in range(2)]

        async def play() -> dict:
            async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=sockets[0])) as http:
                created = await http.post("http://worker/v1/play",
                                          json={"game": "pictomania", "opponents": 2})
            assert created.status_code == 201, created.text
            game = created.json()
            assert Workers(0, 2, folder, "").owner(game["game_id"]) == 0  # made by worker 0, held by it
            async with unix_connect(sockets[1], uri="ws://worker" + game["ws"]) as ws:  # through worker 1
                state = json.loads(await ws.recv())
                assert state["type"] == "state" and state["id"] == game["game_id"]
                await ws.send(json.dumps(STROKE))
                await read_until(ws, my_stroke)
            async with unix_connect(sockets[1], uri="ws://worker/v1/play/unknown?token=x") as ws:
                assert json.loads(await ws.recv())["code"] == "unknown_game"
                await ws.wait_closed()
                assert ws.close_code == 4404  # the owner's close code, through the relay or not
            return game

        game = asyncio.run(play())
        metrics = httpx.get(server.url + "/metrics", timeout=30).text
        assert 'griffon_tables_open{game="pictomania"} 1.0' in metrics
        assert 'griffon_strokes_total{source="play"} 1.0' in metrics

        killed = worker_pid(server.process.pid, 0)
        os.kill(killed, signal.SIGKILL)  # the game's worker dies mid-game

        async def back() -> None:
            patience = Patience(120, "the killed worker did not come back with its game")
            while not patience.expired():  # the supervisor starts it again; it resumes its games
                await asyncio.sleep(0.2)
                try:
                    async with unix_connect(sockets[1], uri="ws://worker" + game["ws"]) as ws:
                        state = json.loads(await asyncio.wait_for(ws.recv(), patient(30)))
                except (OSError, TimeoutError, WebSocketException):  # the worker is starting again
                    continue
                if state.get("type") == "state":
                    assert state["state"]["round"]["drawings"]["joueur"], "the acknowledged stroke came back"
                    return
            raise patience.failure(server.log()[-3000:])

        asyncio.run(back())
        assert server.alive() and worker_pid(server.process.pid, 0) != killed


def test_a_worker_that_cannot_start_stops_the_server_with_its_status(tmp_path: Path) -> None:
    env = {**os.environ, "GRIFFON_MODEL": str(tmp_path / "missing.pt"), "GRIFFON_DB_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "griffon.serve", "--port", str(free_port()), "--workers", "2"],
        env=env, capture_output=True, text=True, timeout=patient(120), cwd=REPO,
    )
    assert done.returncode != 0
    assert "stopped at start" in done.stderr, done.stderr[-2000:]


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended, every thread of it (exited, or a zombie nobody reaped yet:
    its main thread shows as a zombie while its other threads still exit, its files still open)."""
    try:
        zombie = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        return zombie and len(list(Path(f"/proc/{pid}/task").iterdir())) <= 1
    except (FileNotFoundError, ProcessLookupError):
        return True


def health(socket_path: Path) -> httpx.Response:
    """GET /healthz of one worker, over its private socket."""
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(socket_path)), timeout=patient(10)) as client:
        return client.get("http://worker/healthz")


@pytest.mark.slow
def test_a_dead_worker_makes_healthz_degraded_and_a_killed_supervisor_takes_its_workers_along(
        tiny_checkpoint: Path, tmp_path: Path) -> None:
    folder = tmp_path / "workers"
    env = {"GRIFFON_WORKER_DIR": str(folder), "GRIFFON_MODEL": str(tiny_checkpoint)}
    with running_server(env, workers=2) as server:
        supervisor, port = server.process.pid, int(server.url.rsplit(":", 1)[1])
        assert health(folder / "worker-0.sock").json()["unreachable_workers"] == []
        os.kill(supervisor, signal.SIGSTOP)  # so that it does not start worker 1 again at once
        try:
            killed = worker_pid(supervisor, 1)
            os.kill(killed, signal.SIGKILL)
            eventually(lambda: gone(killed), patient(10), "worker 1 did not die")
            degraded = health(folder / "worker-0.sock")
        finally:
            os.kill(supervisor, signal.SIGCONT)
        assert degraded.status_code == 503, degraded.text  # half the games cannot be reached
        assert degraded.json()["status"] == "degraded" and degraded.json()["unreachable_workers"] == [1]
        eventually(lambda: health(folder / "worker-0.sock").status_code == 200, patient(120),
                   "worker 1 was not started again")

        workers = [worker_pid(supervisor, i) for i in range(2)]
        os.kill(supervisor, signal.SIGKILL)  # the supervisor alone, as a crash or the OOM killer does
        server.process.wait(timeout=patient(10))
        try:
            eventually(lambda: all(gone(pid) for pid in workers), patient(30),
                       "the workers outlived their supervisor")
        finally:
            server.kill()  # whatever is left of its process group
        bound_socket("127.0.0.1", port).close()  # a new server can listen on the port
