"""The shipped deployment files (deploy/): valid as shipped, their ports in step, and run as an
operator runs them (the real HAProxy with deploy/haproxy.cfg in front of a real server logging at
``info``): no log line either of them writes holds a game's token."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from griffon.launch import REPO, patient, running_haproxy, running_server


def test_no_log_line_of_the_balancer_or_the_server_holds_a_game_token(tiny_checkpoint: Path,
                                                                         tmp_path: Path) -> None:
    if haproxy_binary() is None:
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


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)


def test_the_shipped_haproxy_config_is_valid_as_shipped() -> None:
    binary = haproxy_binary()
    if binary is None:
        pytest.skip("HAProxy is not installed (Debian: apt-get install haproxy)")
    checked = subprocess.run([binary, "-c", "-f", str(REPO / "deploy" / "haproxy.cfg")],
                             capture_output=True, text=True, timeout=patient(30))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_each_replica_s_port_is_the_one_haproxy_sends_it() -> None:
    """A replica's port is written twice (docs/DEPLOY.md): its env file and its `server` line."""
    config = (REPO / "deploy" / "haproxy.cfg").read_text()
    servers = dict(re.findall(r"^\s*server (\S+) \S+:(\d+)", config, re.M))
    ports = {}
    for env in sorted((REPO / "deploy" / "env").glob("r*.env")):
        values = dict(line.split("=", 1) for line in env.read_text().splitlines() if "=" in line
                      and not line.startswith("#"))
        ports[values["GRIFFON_REPLICA_NAME"]] = values["LISTEN_PORT"]
    assert len(ports) == 3 and ports == servers
