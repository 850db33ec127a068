"""Solo games in the browser: the page, its static files, `POST /v1/play` and `WS /v1/play/{id}`.

Included by `service.app.create_app` (which awaits `startup(app)` / `shutdown(app)` around the
shared model). The game logic lives in `service.games_*`; the routes only translate HTTP.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Response, WebSocket
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import HTTPConnection

from games.ai import level_names
from service.errors import NotFound, ServiceError, Unavailable
from service.frames import error_frame
from service.play.manager import (
    CLOSE_BAD_TOKEN,
    CLOSE_FULL,
    CLOSE_TOO_SLOW,
    CLOSE_UNKNOWN_GAME,
    GameManager,
    TooManyGames,
    UnknownGame,
    serve_socket,
)
from service.play.session import HUMAN, Recognize, accepted_opponents
from service.play.settings import PlaySettings
from service.play.words import DeckSetupError
from service.replicas import Ownership, Replica
from service.shared import ClientDep, Shared, client_of
from service.workers import RELAY_CLOSE, RELAYED, relay, relay_to
from store import StoreError
from store.leases import Lease

STATIC = Path(__file__).parent.parent / "static"
MEDIA = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}
MAX_STATIC_NAME = 100
GAME_HEADER = "X-Griffon-Game"  # on POST /v1/play's answer: HAProxy's stick table learns the game's replica
router = APIRouter()


class NewGame(BaseModel):
    """A solo game against the AI."""

    model_config = ConfigDict(extra="forbid")

    game: Literal["kontour", "pictomania"]
    opponents: int = Field(default=2, ge=1, le=5, description="AI players (Pictomania: 2-5)")
    level: Literal["easy", "normal", "hard"] = "normal"
    name: str = Field(default="Vous", min_length=1, max_length=24, pattern=r"^[^<>&\"]+$")
    seed: int | None = Field(default=None, ge=0, le=2**31, description="same seed, same deal")
    learn: bool = Field(default=False, description="the person agrees that their finished drawings be "
                        "kept (word, strokes, game conditions; nothing about them) to train the model")


class GameCreated(BaseModel):
    """What the page keeps to play (and resume) the game."""

    game_id: str
    token: str
    player: str
    game: str
    ws: str


def make_recognizer(shared: Shared) -> Callable[[str], Recognize]:
    """``recognizer(key)`` -> ``await recognize(drawing, candidates)`` through the shared batched
    inference; each game has its own ``key`` (its turn in the fair preprocessing pool, its budget)."""
    guesser, inference = shared.guesser, shared.inference

    def recognizer(key: str) -> Recognize:
        async def recognize(drawing: list[Any], candidates: Sequence[str]) -> dict[str, float]:
            chosen = guesser.candidate_indices(list(candidates))
            probs = await inference.recognize(guesser.prepare_views, drawing, key=key)
            return guesser.as_dict(probs, chosen)

        return recognize

    return recognizer


def read_settings() -> PlaySettings:
    """The ``GRIFFON_PLAY_*`` settings, read by ``create_app`` next to the service's (a bad value
    stops ``griffon serve`` at once with one line naming it: `PlaySettingsError`)."""
    return PlaySettings.from_env()


async def startup(app: FastAPI) -> None:
    """Create the game manager once the model and the inference worker are ready."""
    shared: Shared = app.state.shared
    play = getattr(app.state, "play_settings", None) or PlaySettings.from_env()
    labels = frozenset(shared.guesser.labels)
    manager = GameManager(shared.settings, play, make_recognizer(shared), labels, app.state.store,
                          spend_points=shared.spend_points, metrics=shared.metrics,
                          workers=app.state.workers)
    app.state.play = manager
    for kind in ("kontour", "pictomania"):
        shared.metrics.watch(shared.metrics.tables, functools.partial(manager.open_count, kind), game=kind)
    shared.metrics.watch(shared.metrics.sockets, manager.socket_count, kind="play")
    manager.start()
    replica: Replica | None = getattr(app.state, "replica", None)
    if replica is None:
        manager.resume()  # the games in progress when the server stopped (service.play.journal)
    else:  # the games are taken over as their leases expire (service.replicas)
        manager.ownership = Ownership(replica, manager)
        manager.ownership.start()


def get_games(connection: HTTPConnection) -> GameManager:
    """The app's :class:`GameManager` (a FastAPI dependency)."""
    return connection.app.state.play


GamesDep = Annotated[GameManager, Depends(get_games)]


async def shutdown(app: FastAPI) -> None:
    """Close every game (also after a `startup` that failed half-way)."""
    manager: GameManager | None = getattr(app.state, "play", None)
    if manager is not None:
        if manager.ownership is not None:  # the leases given up first: the others take the games now
            await manager.ownership.aclose()
        await manager.aclose()


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    """The game page."""
    return FileResponse(STATIC / "index.html", media_type="text/html")


@router.get("/static/{name}", include_in_schema=False)
async def static(name: str) -> FileResponse:
    """The page's scripts and styles (one flat folder, no build step)."""
    path = STATIC / name
    usable = len(name) <= MAX_STATIC_NAME and "/" not in name and not name.startswith(".")
    if not usable or path.suffix not in MEDIA or not path.is_file():
        raise NotFound(f"no such static file: {name[:MAX_STATIC_NAME]}")
    return FileResponse(path, media_type=MEDIA[path.suffix])


@router.get("/v1/play/options", tags=["solo games"])
async def play_options() -> dict[str, Any]:
    """What a new game accepts: AI opponents per game (from the rules files) and the AI levels."""
    return {"opponents": accepted_opponents(), "levels": level_names()}


@router.post("/v1/play", response_model=GameCreated, status_code=201, tags=["solo games"])
async def new_game(body: NewGame, games: GamesDep, client: ClientDep, response: Response) -> GameCreated:
    """Start a solo game against AI players; returns its id and the player's token.

    Bounded per client: ``games_per_client`` live games, ``games_per_client_hour`` created."""
    limits = accepted_opponents()[body.game]
    if not limits["min"] <= body.opponents <= limits["max"]:
        raise ServiceError(f"{body.game} takes {limits['min']}-{limits['max']} AI opponents, "
                           f"got {body.opponents}", code="invalid_request")
    try:
        game = games.create(body.game, body.opponents, body.level, body.name, body.seed, client=client,
                            learn=body.learn)
    except TooManyGames as error:
        raise Unavailable(str(error), code="too_many_games", retry_after=30) from None
    except DeckSetupError as error:
        raise Unavailable(str(error), code="no_deck") from None
    except StoreError as error:
        raise Unavailable(f"the game could not be stored: {error}", code="database_unavailable",
                          retry_after=30) from None
    ws = f"/v1/play/{game.id}?token={game.token}"
    response.headers[GAME_HEADER] = game.id  # a load balancer sends the game's socket here (deploy/)
    return GameCreated(game_id=game.id, token=game.token, player=HUMAN, game=body.game, ws=ws)


@router.websocket("/v1/play/{game_id}")
async def play_socket(websocket: WebSocket, game_id: str, games: GamesDep, token: str = "") -> None:
    """The game's socket: state frames out, move frames in (see docs/PLAY.md); relayed to the
    worker that holds the game when it landed on another (service/workers.py)."""
    await websocket.accept()
    workers = games.workers
    if workers is not None and not workers.owns(game_id):
        await relay(websocket, workers, workers.owner(game_id), client_of(websocket))
        return
    try:
        if games.ownership is not None:  # one replica of several: the game may be another's
            held = await games.ownership.locate(game_id)
            if isinstance(held, Lease) and websocket.scope.get(RELAYED):  # relayed once already
                await websocket.close(CLOSE_TOO_SLOW, "the game is changing servers; reconnect")
                return
            if isinstance(held, Lease):
                secret = games.ownership.replica.secret
                if await relay_to(websocket, held.address, secret, client_of(websocket)):
                    return
                held = await games.ownership.outlast(game_id, held)  # its holder is gone: take it over
            if isinstance(held, Lease):
                await websocket.close(RELAY_CLOSE, "the game's server cannot be reached; retry")
                return
        game = games.get(game_id)
    except UnknownGame:
        await websocket.send_json(error_frame("unknown_game", f"no game '{game_id[:40]}' (over or expired)"))
        await websocket.close(CLOSE_UNKNOWN_GAME, "unknown game")
        return
    if not game.check_token(token):
        await websocket.send_json(error_frame("bad_token", "this token does not belong to the game"))
        await websocket.close(CLOSE_BAD_TOKEN, "bad token")
        return
    if len(game.listeners) >= games.settings.max_game_sockets:
        limit = games.settings.max_game_sockets
        games.refused("too_many_sockets")
        await websocket.send_json(error_frame("too_many_sockets", f"a game holds at most {limit} sockets"))
        await websocket.close(CLOSE_FULL, "too many sockets")
        return
    await serve_socket(websocket, game, games)
