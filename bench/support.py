"""What the benchmarks and the tests share (bench may not import tests; tests import this): the
play socket's client — one game's frames read in order, each update merged into the last full
state as the page does it — and `until`, the one way to wait for a frame.

- `FrameReader`: what a reader of one game sees (frames, the merged state, `until`, `events`);
  `Player` reads a real WebSocket on real seconds; ``tests.local_play.LocalPlayer`` reads a game
  in process on the game's own clock.
- `until(recv, test, waiting)`: frames from ``recv(seconds)`` until one satisfies ``test``, on
  real seconds (`griffon.launch.Patience`) or a game's clock (`Deadline`).
- `new_game`: ``POST /v1/play``; `has_event`: a frame test.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol

import httpx
from websockets.sync.client import ClientConnection, connect

from griffon.launch import Patience, Server, patient
from service.play.views import HUMAN, apply_update

Frame = dict[str, Any]


class Waiting(Protocol):
    """How long `until` may still wait: `griffon.launch.Patience` (real seconds, more on a busy
    machine) or `Deadline` (a game's own clock)."""

    def left(self) -> float: ...

    def failure(self, detail: str = "") -> Exception: ...


class Deadline:
    """``seconds`` of ``clock`` (a game's own: `service.play.clock.ManualClock`) from now."""

    def __init__(self, clock: Callable[[], float], seconds: float, what: str) -> None:
        self.clock, self.seconds, self.what = clock, seconds, what
        self.end = clock() + seconds

    def left(self) -> float:
        return self.end - self.clock()

    def failure(self, detail: str = "") -> Exception:
        return AssertionError(f"{self.what} within {self.seconds:g} s of game time; {detail}")


def until(recv: Callable[[float], Frame | None], test: Callable[[Frame], bool], waiting: Waiting,
          seen: Callable[[], str] = lambda: "") -> Frame:
    """Frames from ``recv(seconds left)`` (None: none came in that time) until one satisfies
    ``test``, and that one; `AssertionError` once ``waiting`` runs out (``seen()``: what came)."""
    while (left := waiting.left()) > 0:
        frame = recv(max(0.01, left))
        if frame is not None and test(frame):
            return frame
    raise AssertionError(str(waiting.failure(seen())))


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
        return until(self.recv, test, Deadline(self.clock, timeout, "no matching frame"),
                     lambda: f"last: {self.frames[-3:]}")

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

    def __init__(self, server: Server, game: dict[str, Any], open_timeout: float = 10.0) -> None:
        super().__init__()
        self.ws: ClientConnection = connect(server.ws_url + game["ws"],
                                            open_timeout=patient(open_timeout)).__enter__()

    def clock(self) -> float:
        return time.monotonic()

    def until(self, test: Callable[[dict[str, Any]], bool], timeout: float = 15.0) -> dict[str, Any]:
        """Read frames until one satisfies `test`; fails after `timeout` seconds on a quiet machine,
        longer on a busy one (`griffon.launch.Patience`)."""
        return until(self.recv, test, Patience(timeout, "no matching frame came"),
                     lambda: f"last frames: {self.frames[-3:]}")

    def send(self, frame: Any) -> None:
        self.ws.send(frame if isinstance(frame, str) else json.dumps(frame))

    def recv(self, timeout: float) -> dict[str, Any] | None:
        try:
            return self.accept(json.loads(self.ws.recv(timeout=timeout)))
        except TimeoutError:
            return None

    def drain(self, quiet_s: float = 0.3) -> None:
        """Read every frame until none comes for ``quiet_s``."""
        while self.recv(quiet_s) is not None:
            pass

    @property
    def shown(self) -> list[Any]:
        """The person's strokes the page shows now (a Pictomania round's drawing)."""
        round_ = self.state.get("round") or {}
        return list((round_.get("drawings") or {}).get(HUMAN, []))

    @property
    def seq(self) -> int:
        """The number of the last state received (-1: none yet)."""
        return int(self.frame.get("seq", -1))

    def close(self) -> None:
        self.ws.close()


def has_event(kind: str, **fields: Any) -> Callable[[dict[str, Any]], bool]:
    """A frame test: a state frame carrying an event of `kind` with these fields."""

    def test(frame: dict[str, Any]) -> bool:
        return frame["type"] in ("state", "update") and any(
            e["kind"] == kind and all(e.get(k) == v for k, v in fields.items()) for e in frame["events"]
        )

    return test
