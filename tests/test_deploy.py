"""The shipped deployment files (deploy/) as an operator runs them: the real HAProxy with
deploy/haproxy.cfg in front of a real server logging at ``info``; no log line either of them writes
holds a game's token."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from griffon.launch import patient, running_haproxy, running_server


def test_no_log_line_of_the_balancer_or_the_server_holds_a_game_token(tiny_checkpoint: Path,
                                                                         tmp_path: Path) -> None:
    if not (shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists()):
        pytest.skip("HAProxy is not installed (Debian: apt-get install haproxy)")
    log = tmp_path / "haproxy.log"
    with running_server({"GRIFFON_MODEL": str(tiny_checkpoint)}, log_level="info") as server:
        with running_haproxy([int(server.url.rsplit(":", 1)[1])], log=log) as url:
            created = httpx.post(url + "/v1/play", json={"game": "kontour", "opponents": 1},
                                 timeout=patient(10))
            assert created.status_code == 201, created.text
            game = created.json()
            token = game["ws"].split("token=", 1)[1]
            assert len(token) >= 16
            with connect(url.replace("http://", "ws://") + game["ws"], open_timeout=patient(10)) as ws:
                assert json.loads(ws.recv(timeout=patient(10)))["type"] == "state"
            wrong = httpx.get(url + f"/v1/play/{game['game_id']}?token={token}", timeout=patient(10))
            assert wrong.status_code >= 400  # a plain GET of the socket's URL, token and all
        ours = server.log()
    theirs = log.read_text(errors="replace")
    path = f"/v1/play/{game['game_id']}"
    assert theirs.count(path) >= 2, theirs  # the socket's and the GET's lines are there...
    assert path in ours, ours
    assert token not in theirs, theirs  # ...without the token
    assert token not in ours, ours
