"""Sockets that never read: what the server holds for one of them is bounded in bytes, and past that
bound it lets the socket go (``play_limits.send_queue_bytes``; the kernel's own socket buffer comes
on top)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from griffon.launch import Patience, patient, running_server, tuning
from tests.play_helpers import FAST, new_game


def test_a_game_socket_that_never_reads_is_let_go_within_a_bounded_number_of_bytes(
        tiny_checkpoint: Path) -> None:
    """A person's socket that asks for the whole state again and again and never reads: once more
    than ``play_limits.send_queue_bytes`` of frames wait for it in the server (past what the kernel's socket
    buffer holds), it is let go (``too_slow``), long before the frames it asked for are all queued."""
    import socket

    from websockets.sync.client import connect

    limit = 65_536
    env = {"GRIFFON_MODEL": str(tiny_checkpoint), **tuning(**FAST, **{"play_limits.send_queue_bytes": limit})}
    with running_server(env) as server:
        game = new_game(server, game="pictomania", opponents=2)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the client reads nothing
        sock.connect(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
        # uncompressed, one message buffered: the bytes the server writes are the frames themselves
        ws = connect(server.ws_url + game["ws"], sock=sock, compression=None, max_queue=1).__enter__()
        ws.recv(timeout=patient(10))
        points = [[(i * 37) % 250, (i * 91) % 250] for i in range(1000)]
        for _ in range(8):  # a state of some 100 kB: each `sync` asks for that much
            ws.send(json.dumps({"type": "move", "move": {"kind": "stroke", "points": points}}))
            time.sleep(0.15)
        asked = 0
        patience = Patience(120, "the socket that never reads was never let go")
        while 'griffon_refusals_total{reason="too_slow"}' not in httpx.get(server.url + "/metrics").text:
            assert not patience.expired(), patience.failure(server.log()[-2000:])
            assert asked < 400, f"{asked} states of 100 kB asked for and the socket is still served"
            for _ in range(10):
                ws.send(json.dumps({"type": "sync"}))
            asked += 10
            time.sleep(0.2)
        sock.close()
