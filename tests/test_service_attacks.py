"""Attacks within the documented limits, against the real uvicorn server (127.0.0.1 only, bounded).

Each test is one finding of the attack report (issue 10) that must stay fixed: half-sent
requests, stalled bodies, oversized WebSocket messages, foreign origins, frames built to crash
the parser, absurd static paths, tokens in the access log. ``bench/bench_attacks.py`` measures
the same attacks at scale (latency of another room, memory after a burst).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket

import httpx
import pytest
import websockets

from griffon.launch import Patience, Server, patient
from griffon.serve import drop_query_strings

ATTACKER = "127.0.0.2"  # Linux routes all of 127/8 to lo: another client address, same machine


def open_half_requests(server: Server, count: int) -> list[socket.socket]:
    """``count`` connections from ATTACKER that send a request head without its final blank line."""
    port = int(server.url.rsplit(":", 1)[1])
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=patient(5), source_address=(ATTACKER, 0))
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        sockets.append(sock)
    return sockets


def closed_by_server(sock: socket.socket, patience: Patience) -> bytes:
    """What the server sent before closing; fails (`TooSlow`) while still open past ``patience``."""
    received = b""
    while (left := patience.left()) > 0:
        sock.settimeout(max(0.01, left))
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk
    raise patience.failure(f"received: {received[:200]!r}")


def test_half_sent_requests_are_dropped_and_others_are_served(tight_server: Server, tight_env: dict) -> None:
    sockets = open_half_requests(tight_server, 24)  # the per-address cap here is 16
    try:
        assert httpx.get(tight_server.url + "/healthz", timeout=patient(5)).status_code == 200  # from .1
        # past the header timeout (1 s on a quiet machine) every half-sent request is dropped
        header_timeout = float(tight_env["GRIFFON_HEADER_TIMEOUT_S"])
        patience = Patience(header_timeout + 3, "a half-sent request was still held")
        answers = [closed_by_server(s, patience) for s in sockets]
        timed_out = [a for a in answers if a.startswith(b"HTTP/1.1 408")]
        refused = [a for a in answers if a == b""]
        assert len(timed_out) == 16 and len(refused) == 8, answers
    finally:
        for sock in sockets:
            sock.close()


def test_a_stalled_body_gets_408(tight_server: Server, tight_env: dict) -> None:
    port = int(tight_server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=patient(5)) as sock:
        sock.sendall(b"POST /v1/match HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"answer\": ")
        timeout = tight_env["GRIFFON_BODY_TIMEOUT_S"]  # 1 s on a quiet machine
        answer = closed_by_server(sock, Patience(float(timeout) + 3, "the stalled body was still waited for"))
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert f'"error":"timeout","message":"no request data for {timeout} s"'.encode() in answer


def test_websockets_from_a_foreign_origin_are_refused(tight_server: Server) -> None:
    async def scenario() -> None:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(tight_server.ws_url + "/v1/bot", origin="https://evil.example")
        assert refused.value.response.status_code == 403
        own = tight_server.url  # the page's own origin is always allowed, and so is no origin
        for origin in (own, None):
            async with websockets.connect(tight_server.ws_url + "/v1/bot", origin=origin) as ws:
                await ws.send(json.dumps({"type": "ping"}))
                assert json.loads(await ws.recv()) == {"type": "pong"}

    asyncio.run(scenario())


def test_hostile_frames_get_typed_errors_and_no_traceback(tight_server: Server) -> None:
    hostile = ['{"type": "ping", "id": "\\ud800"}', "[" * 2000 + "]" * 2000,
               '{"type": "ping", "id": ' + "9" * 4050 + "}"]

    async def scenario() -> list[str]:
        codes = []
        async with websockets.connect(tight_server.ws_url + "/v1/bot") as ws:
            for frame in hostile:
                await ws.send(frame)
                codes.append(json.loads(await ws.recv())["code"])
                await asyncio.sleep(0.25)  # 5 frames/s here
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.send("x" * 5000)  # over the 4,096-byte frame limit
                await ws.recv()
            assert closed.value.rcvd.code == 1009
        return codes

    assert asyncio.run(scenario()) == ["bad_json", "bad_json", "invalid_frame"]  # ids: |n| <= 2**53
    long_name = httpx.get(tight_server.url + "/static/" + "a" * 300 + ".js", timeout=patient(5))
    assert long_name.status_code == 404 and long_name.json()["error"] == "not_found"
    assert "Traceback" not in tight_server.log()


def test_the_access_log_leaves_out_query_strings() -> None:
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5000", "GET", "/v1/play/abc?token=SECRET", "1.1", 101), None)
    assert drop_query_strings(record) is True
    assert "SECRET" not in record.getMessage() and "/v1/play/abc" in record.getMessage()


def test_websockets_per_address_are_capped(tiny_checkpoint) -> None:
    from starlette.websockets import WebSocketDisconnect

    from tests.service_server import in_process

    with in_process(tiny_checkpoint, max_client_connections=2) as app:
        with app.websocket_connect("/v1/bot") as one, app.websocket_connect("/v1/bot") as two:
            for ws in (one, two):
                ws.send_json({"type": "ping"})
                assert ws.receive_json() == {"type": "pong"}
            with pytest.raises(WebSocketDisconnect) as refused:
                with app.websocket_connect("/v1/bot"):
                    pass
            assert refused.value.code == 4403
        with app.websocket_connect("/v1/bot") as again:  # the count goes down when they close
            again.send_json({"type": "ping"})
            assert again.receive_json() == {"type": "pong"}
