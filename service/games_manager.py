"""The solo games of the service: creating them, finding them, expiring them, serving their sockets.

`GameManager` holds at most ``settings.max_sessions`` games; a game nobody has moved in for
``settings.idle_expiry_s`` is closed by a sweeper task. `serve_socket` runs one WebSocket: it
sends the game's frames and turns each incoming frame into a move (bounded size, rate-limited,
NaN refused); anything wrong gets a typed error frame and the socket stays open.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from typing import Any, Literal

from fastapi import WebSocket, WebSocketDisconnect

from games.ai.levels import load_level
from games.core import RuleError
from games.kontour import KontourConfig, KontourRules
from games.pictomania import PictomaniaConfig, PictomaniaRules
from service.bot_protocol import error_frame
from service.games_decks import kontour_candidates, kontour_deck, load_words, pictomania_deck
from service.games_session import (
    HUMAN,
    MAX_GUESS_CHARS,
    FrameError,
    GameSession,
    KontourSession,
    PictomaniaSession,
    Recognize,
)
from service.games_settings import PlaySettings
from service.ratelimit import RateLimit
from service.settings import Settings

log = logging.getLogger("griffon.play")
SWEEP_EVERY_S = 5.0
CLOSE_UNKNOWN_GAME = 4404
CLOSE_BAD_TOKEN = 4403
CLOSE_EXPIRED = 4410


class TooManyGames(RuntimeError):
    """Every game slot is taken (HTTP 503)."""


class UnknownGame(KeyError):
    """No game with that id (never created, or expired)."""


class GameManager:
    """All live solo games of one app."""

    def __init__(self, settings: Settings, play: PlaySettings, recognize: Recognize, labels: frozenset[str]):
        self.settings, self.play, self.recognize, self.labels = settings, play, recognize, labels
        self.kontour_config, self.pictomania_config = game_configs(play)  # read once, immutable
        self.games: dict[str, GameSession] = {}
        self.sweeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the idle-game sweeper."""
        self.sweeper = asyncio.create_task(self._sweep_forever(), name="play-sweeper")

    async def aclose(self) -> None:
        """Close every game (at shutdown)."""
        if self.sweeper is not None:
            self.sweeper.cancel()
        for game_id in list(self.games):
            await self.remove(game_id)

    def create(
        self,
        game: Literal["kontour", "pictomania"],
        opponents: int,
        level: str,
        name: str,
        seed: int | None = None,
    ) -> GameSession:
        """A new game against `opponents` AI players; raises `TooManyGames`, `ValueError`."""
        if len(self.games) >= self.settings.max_sessions:
            raise TooManyGames(f"all {self.settings.max_sessions} game slots are taken; retry later")
        seed = seed if seed is not None else secrets.randbelow(2**31)
        names = {
            HUMAN: name,
            **{f"ia{i + 1}": self.play.ai_names[i % len(self.play.ai_names)] for i in range(opponents)},
        }
        common: dict[str, Any] = dict(
            game_id=secrets.token_urlsafe(9),
            token=secrets.token_urlsafe(18),
            level=load_level(level),
            seed=seed,
            words=load_words(self.play.drawings),
            recognize=self.recognize,
            labels=self.labels,
            play=self.play,
        )
        session = (self._kontour if game == "kontour" else self._pictomania)(names, common)
        self.games[session.id] = session
        session.start()
        log.info("game %s: %s with %d AI (%s), seed %d", session.id, game, opponents, level, seed)
        return session

    def _kontour(self, names: dict[str, str], common: dict[str, Any]) -> KontourSession:
        words = common["words"]
        rules = KontourRules(self.kontour_config, judge=words.judge)
        cards, half = kontour_deck(words, common["seed"])
        names[rules.config.neutral_drawer] = "Griffon"
        players = [HUMAN, *(p for p in names if p not in (HUMAN, rules.config.neutral_drawer))]
        state, _ = rules.setup(players=players, deck=cards, seed=common["seed"], half=half)
        candidates = kontour_candidates(cards, half, self.labels)
        return KontourSession(rules, state, candidates, names=names, **common)

    def _pictomania(self, names: dict[str, str], common: dict[str, Any]) -> PictomaniaSession:
        deck, config = pictomania_deck(common["words"], self.pictomania_config, common["seed"])
        rules = PictomaniaRules(config)
        state, _ = rules.setup(players=list(names), deck=deck, seed=common["seed"])
        return PictomaniaSession(rules, state, names=names, **common)

    def get(self, game_id: str) -> GameSession:
        """The live game with that id; raises `UnknownGame`."""
        try:
            return self.games[game_id]
        except KeyError:
            raise UnknownGame(game_id) from None

    async def remove(self, game_id: str) -> None:
        """Close and forget a game."""
        session = self.games.pop(game_id, None)
        if session is not None:
            await session.close()

    async def sweep(self) -> list[str]:
        """Close the games idle for longer than ``idle_expiry_s``; returns their ids."""
        limit = asyncio.get_running_loop().time() - self.settings.idle_expiry_s
        expired = [gid for gid, g in self.games.items() if g.last_activity < limit]
        for game_id in expired:
            log.info("game %s: expired (idle)", game_id)
            await self.remove(game_id)
        return expired

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(min(SWEEP_EVERY_S, self.settings.idle_expiry_s / 2))
            await self.sweep()


def game_configs(play: PlaySettings) -> tuple[KontourConfig, PictomaniaConfig]:
    """The rules config files with the ``GRIFFON_PLAY_*`` overrides (timers, target, rounds)."""
    kontour: dict[str, Any] = {}
    if play.kontour_timer_s is not None:
        kontour["timer_s"] = play.kontour_timer_s
    if play.kontour_target is not None:
        kontour["target_score"] = play.kontour_target
    pictomania: dict[str, Any] = {}
    if play.pictomania_round_s is not None:
        pictomania["round_timer_s"] = play.pictomania_round_s
    picto = PictomaniaConfig.load(**pictomania)
    if play.pictomania_rounds is not None:
        n = play.pictomania_rounds
        picto = picto.replace(rounds=n, levels_per_round=picto.levels_per_round[:n])
    return KontourConfig.load(**kontour), picto


# ------------------------------------------------------------------------------------------------
# WebSocket


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number the game accepts")


def read_frame(text: str) -> dict[str, Any]:
    """Parse one client frame (JSON object, no NaN/Infinity); raises `FrameError`."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        raise FrameError(f"the frame is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise FrameError("a frame must be a JSON object with a 'type'")
    if data.get("type") not in ("move", "ping"):
        raise FrameError("unknown frame type (expected 'move' or 'ping')", got=str(data.get("type"))[:40])
    return data


def handle_text(session: GameSession, text: str) -> dict[str, Any] | None:
    """Apply one client frame; returns the frame to send back (error or pong), if any."""
    try:
        data = read_frame(text)
        if data["type"] == "ping":
            return {"type": "pong", "now": round(session.now(), 3)}
        move = data.get("move")
        if isinstance(move, dict) and isinstance(move.get("text"), str):
            if len(move["text"]) > MAX_GUESS_CHARS:
                raise FrameError(f"a guess holds at most {MAX_GUESS_CHARS} characters")
        session.human_move(move)
    except RuleError as error:
        return {"type": "error", **error.to_dict()}
    return None


async def _send_loop(websocket: WebSocket, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
    while True:
        frame = await queue.get()
        if frame is None:
            await websocket.close(CLOSE_EXPIRED, "game closed")
            return
        await websocket.send_json(frame)


def _reply(session: GameSession, text: str, settings: Settings, limit: RateLimit) -> dict[str, Any] | None:
    if len(text) > settings.max_frame_bytes:
        return error_frame("frame_too_large", f"a frame holds at most {settings.max_frame_bytes} bytes")
    if not limit.allow():
        if limit.warned:
            return None  # one error per flood, not one per dropped frame
        limit.warned = True
        return error_frame("rate_limited", f"at most {settings.max_message_rate:g} frames per second")
    limit.warned = False
    return handle_text(session, text)


async def serve_socket(websocket: WebSocket, session: GameSession, settings: Settings) -> None:
    """Run one accepted socket of `session` until it disconnects."""
    queue = session.attach()
    sender = asyncio.create_task(_send_loop(websocket, queue))
    limit = RateLimit(settings.max_message_rate, settings.max_message_burst)
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            text = message.get("text")
            if text is None:
                text = (message.get("bytes") or b"").decode("utf-8", "replace")
            reply = _reply(session, text, settings, limit)
            if reply is not None:
                await queue.put(reply)  # a client that does not read is slowed down, not buffered
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        session.detach(queue)
        sender.cancel()
