"""Shared pieces of the solo-game tests (no tests here): server environment, a WebSocket client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from griffon.launch import Patience, Server, patient, running_server
from service.play.session import apply_update

WEIGHTS = Path(__file__).resolve().parents[1] / "model" / "weights" / "griffon-default.pt"
HAS_WEIGHTS = WEIGHTS.is_file()

# Short timers so that a whole turn, round or game fits in a test.
FAST = {
    "GRIFFON_PLAY_KONTOUR_TIMER_S": "6",
    "GRIFFON_PLAY_AI_THINK_S": "0.3",
    "GRIFFON_PLAY_BETWEEN_TURNS_S": "0.3",
    "GRIFFON_PLAY_PICTOMANIA_ROUND_S": "6",
    "GRIFFON_PLAY_PICTOMANIA_ROUNDS": "2",
}
HOUSE = [  # a house in 6 straight lines, on the page's 0-255 canvas
    [[50, 110], [50, 230]],
    [[50, 230], [200, 230]],
    [[200, 230], [200, 110]],
    [[200, 110], [50, 110]],
    [[40, 115], [125, 30]],
    [[125, 30], [210, 115]],
]


def model_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The shipped weights when present, else the tiny test checkpoint."""
    if HAS_WEIGHTS:
        return {}
    return {"GRIFFON_MODEL": str(request.getfixturevalue("tiny_checkpoint"))}


@contextmanager
def play_server(request: pytest.FixtureRequest, **extra: str) -> Iterator[Server]:
    """The real service with fast game timers (and `extra` variables)."""
    with running_server({**FAST, **model_env(request), **extra}) as server:
        yield server


def new_game(server: Server, **body: Any) -> dict[str, Any]:
    """POST /v1/play; returns the JSON (asserting 201)."""
    response = httpx.post(server.url + "/v1/play", json=body, timeout=patient(10))
    assert response.status_code == 201, response.text
    return response.json()


class FrameReader:
    """What a test sees of one game: the latest state and every frame received, read one by one
    (`recv`) against a clock (`clock`). Two readers: `Player` (a real WebSocket, real seconds) and
    `LocalPlayer` (in process, on the game's own clock moved forward by the test)."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.state: dict[str, Any] = {}
        self.frame: dict[str, Any] = {}

    def send(self, frame: Any) -> None:
        raise NotImplementedError

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The next frame, or None when none came within `timeout` seconds of `clock`."""
        raise NotImplementedError

    def clock(self) -> float:
        raise NotImplementedError

    def move(self, **move: Any) -> None:
        self.send({"type": "move", "move": move})

    def accept(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Keep a received frame: an update is merged into the last full state, as the page does."""
        if frame["type"] == "update":
            frame = {**apply_update(self.frame, frame), "type": "update"}
        self.frames.append(frame)
        if frame["type"] in ("state", "update"):
            self.frame, self.state = frame, frame["state"]
        return frame

    def until(self, test: Callable[[dict[str, Any]], bool], timeout: float = 15.0) -> dict[str, Any]:
        """Read frames until one satisfies `test`; fails after `timeout` seconds of `clock`."""
        end = self.clock() + timeout
        while self.clock() < end:
            frame = self.recv(max(0.01, end - self.clock()))
            if frame is not None and test(frame):
                return frame
        raise AssertionError(f"no matching frame within {timeout} s; last: {self.frames[-3:]}")

    def error(self, code: str, timeout: float = 5.0) -> dict[str, Any]:
        """The next error frame, which must have `code`."""
        frame = self.until(lambda f: f["type"] == "error", timeout)
        assert frame["code"] == code, frame
        return frame

    def events(self, kind: str) -> list[dict[str, Any]]:
        """Every event of `kind` received so far."""
        frames = [f for f in self.frames if f["type"] in ("state", "update")]
        return [e for f in frames for e in f["events"] if e["kind"] == kind]


class Player(FrameReader):
    """A WebSocket client of one game on a real server."""

    def __init__(self, server: Server, game: dict[str, Any]) -> None:
        super().__init__()
        self.ws: ClientConnection = connect(server.ws_url + game["ws"], open_timeout=patient(10)).__enter__()

    def clock(self) -> float:
        return time.monotonic()

    def until(self, test: Callable[[dict[str, Any]], bool], timeout: float = 15.0) -> dict[str, Any]:
        """Read frames until one satisfies `test`; fails after `timeout` seconds on a quiet machine,
        longer on a busy one (`griffon.launch.Patience`)."""
        patience = Patience(timeout, "no matching frame came")
        while (left := patience.left()) > 0:
            frame = self.recv(max(0.01, left))
            if frame is not None and test(frame):
                return frame
        raise AssertionError(str(patience.failure(f"last frames: {self.frames[-3:]}")))

    def send(self, frame: Any) -> None:
        self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    def recv(self, timeout: float) -> dict[str, Any] | None:
        try:
            return self.accept(json.loads(self.ws.recv(timeout=timeout)))
        except TimeoutError:
            return None

    def close(self) -> None:
        self.ws.close()


def has_event(kind: str, **fields: Any) -> Callable[[dict[str, Any]], bool]:
    """A frame test: a state frame carrying an event of `kind` with these fields."""

    def test(frame: dict[str, Any]) -> bool:
        return frame["type"] in ("state", "update") and any(
            e["kind"] == kind and all(e.get(k) == v for k, v in fields.items()) for e in frame["events"]
        )

    return test
