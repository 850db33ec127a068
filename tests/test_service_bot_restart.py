"""Bot transcripts and consented room drawings survive a killed server: a real server, SIGKILL, a
second server on the same database. A corrupt database stops ``griffon serve`` with its message."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import websockets

from store import open_store
from tests.service_server import REPO, running_server
from tests.test_service_bot import WORDS, Room, square


async def until(room: Room, kind: str) -> dict[str, Any]:
    """The next frame of type `kind` (the bot may speak in between)."""
    for _ in range(20):
        frame = await room.recv()
        if frame["type"] == kind:
            return frame
    raise AssertionError(f"no {kind} frame")


def test_a_bot_transcript_and_a_consented_drawing_survive_sigkill(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    data = tmp_path / "var"
    env = {"GRIFFON_MODEL": str(tiny_checkpoint), "GRIFFON_DATA_DIR": str(data)}

    async def two_rounds(ws_url: str) -> dict:
        async with websockets.connect(ws_url + "/v1/bot") as ws:
            room = Room(ws)
            welcome = await room.start(candidates=WORDS, analysis=False)
            for stroke in square():
                await room.send({"type": "stroke", "stroke": stroke})
            await room.send({"type": "round_end", "answer": "square", "drawing_consent": True})
            assert (await until(room, "round_over"))["strokes"] == 2
            await room.send({"type": "round_start", "round": "r2", "candidates": WORDS})
            await until(room, "round_ready")
            await room.send({"type": "stroke", "stroke": square(5)[0]})
            await room.send({"type": "round_end", "answer": "circle"})  # no consent: not kept
            await until(room, "round_over")
            await asyncio.sleep(0.5)  # transcripts and drawings are saved off the event loop
            return welcome  # the socket is still open when the server dies

    with running_server(env) as first:
        welcome = asyncio.run(two_rounds(first.ws_url))
        url = f"/v1/bot/sessions/{welcome['session']}"
        before = httpx.get(first.url + url, params={"key": welcome["transcript_key"]}).json()
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
    with running_server(env) as second:
        after = httpx.get(second.url + url, params={"key": welcome["transcript_key"]}).json()
        wrong = httpx.get(second.url + url, params={"key": "not the key"})
    assert [e["kind"] for e in after["events"]] == [e["kind"] for e in before["events"]]
    ends = [e for e in after["events"] if e["kind"] == "round_end"]
    assert [e["answer"] for e in ends] == ["square", "circle"]
    assert after["live"] is False and after["room"] == "test"
    assert wrong.status_code == 404
    store = open_store(f"sqlite:///{data / 'griffon.db'}")
    try:
        [drawing] = list(store.iter_drawings())
    finally:
        store.close()
    assert drawing.word == "square" and drawing.game == "room" and len(drawing.strokes) == 2
    assert drawing.strokes[0][0] == [float(x) for x in square()[0][0]]
    times = [t for s in drawing.strokes for t in s[2]]
    assert times[0] == 0 and times == sorted(times)


def test_a_corrupt_database_stops_griffon_serve_with_its_message(tmp_path: Path) -> None:
    garbage = os.urandom(4096)
    (tmp_path / "griffon.db").write_bytes(garbage)
    griffon = str(Path(sys.executable).parent / "griffon")
    done = subprocess.run([griffon, "serve", "--port", "1"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "GRIFFON_DATA_DIR": str(tmp_path)}, timeout=60)
    assert done.returncode == 1
    assert "is not a usable SQLite database" in done.stderr and "move the file away" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert (tmp_path / "griffon.db").read_bytes() == garbage  # never overwritten
    bad = subprocess.run([griffon, "serve", "--port", "1"], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "GRIFFON_DATA_DIR": str(tmp_path / "new"),
                              "GRIFFON_RETAIN_GAMES_DAYS": "soon"}, timeout=60)
    assert bad.returncode == 1 and "GRIFFON_RETAIN_GAMES_DAYS" in bad.stderr
    assert "Traceback" not in bad.stderr
