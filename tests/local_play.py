"""Solo games in process, on a clock the test moves (no tests here).

`LocalTable` is the service's game manager with its real parts (the recognizer behind the batched
inference, the AI driver, the rules, the frames a socket would carry) but no server: a game's
clock moves only when the test waits for a frame, one driver tick (`tick_s`) at a time, and every
recognition the AI players asked for is finished before the next tick. A 2-minute game plays in
seconds, and the same frames reach the test as over the WebSocket (`bench.support.Player`).
The real server and socket are covered by a few tests of their own (tests/test_service_play.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from bench.support import FrameReader
from service.app import start_shared
from service.play.clock import ManualClock
from service.play.manager import GameManager
from service.play.settings import PlaySettings
from service.play.sockets import handle_text
from service.play.table import GameSession
from service.play.web import make_recognizer
from service.settings import Settings
from tests.play_helpers import FAST


class LocalTable:
    """A game manager in this process: `new_game` deals a game as ``POST /v1/play`` would."""

    def __init__(self, environ: Mapping[str, str], **tuned: float) -> None:
        """``environ``: ``GRIFFON_*`` and ``GRIFFON_PLAY_*`` variables, as the server reads them;
        ``tuned``: tuning fields of `PlaySettings` (over the `FAST` timers)."""
        self.loop = asyncio.new_event_loop()
        self.shared = self.loop.run_until_complete(start_shared(Settings.from_env(environ)))
        play = PlaySettings.model_validate({**PlaySettings.from_env(environ).model_dump(), **FAST, **tuned})
        labels = frozenset(self.shared.guesser.labels)
        self.clock = ManualClock()  # moved by `LocalPlayer.recv`, one driver tick at a time
        self.manager = GameManager(
            self.shared.settings, play, make_recognizer(self.shared), labels, clock=self.clock
        )

    def new_game(self, game: str = "kontour", opponents: int = 1, level: str = "normal",
                 name: str = "Joueur", seed: int | None = None) -> LocalPlayer:
        """A new game and its one reader (the game's own driver task does not run: see `LocalPlayer`)."""

        async def create() -> GameSession:
            return self.manager.create(game, opponents, level, name, seed=seed)  # type: ignore[arg-type]

        return LocalPlayer(self, self.loop.run_until_complete(create()))

    def run(self, session: GameSession, action: Callable[[], Any]) -> Any:
        """Call ``action()`` in the event loop (as the server's handlers and driver do), then let
        every recognition the AI players asked for finish (and those they ask for then)."""

        async def run() -> Any:
            result = action()
            while session.tasks:
                await asyncio.gather(*list(session.tasks), return_exceptions=True)
            return result

        return self.loop.run_until_complete(run())

    def close(self) -> None:
        self.loop.run_until_complete(self.manager.aclose())
        self.loop.run_until_complete(self.shared.inference.aclose())
        self.loop.close()


class LocalPlayer(FrameReader):
    """The person's side of one in-process game: frames in and out as on the game's socket; while
    no frame is waiting, `recv` moves the game's clock one driver tick forward and runs that tick."""

    def __init__(self, table: LocalTable, session: GameSession) -> None:
        super().__init__()
        self.table, self.session = table, session
        assert session.driver is not None
        session.driver.cancel()  # the test moves the clock: no real-time driver
        self.queue = session.attach()

    def clock(self) -> float:
        return self.session.now()

    def send(self, frame: Any) -> None:
        """One client frame, handled as the socket handler does (the reply joins the frames)."""
        text = frame if isinstance(frame, str) else json.dumps(frame)
        reply = self.table.run(self.session, lambda: handle_text(self.session, text))
        if reply is not None:
            self.queue.put_nowait(reply)

    def recv(self, timeout: float) -> dict[str, Any] | None:
        if self.queue.empty():
            self.table.clock.advance(self.session.play.tick_s)  # `tick_s` of game time pass at once
            self.table.run(self.session, self.session.tick)
        if self.queue.empty():
            return None
        frame = self.queue.get_nowait()
        assert frame is not None, "the game was closed"
        return self.accept(json.loads(json.dumps(frame)))  # what the socket would carry

    def close(self) -> None:
        self.session.detach(self.queue)
