"""The tables in the browser: the page, its static files, `POST /v1/play` (a game against AI
players), `POST /v1/rooms` and the lobby's socket (a room with friends), `WS /v1/play/{id}` (any
table's socket).

Included by `service.app.create_app` (which awaits `startup(app)` / `shutdown(app)` around the
shared model). The game logic lives in `service.play.manager`, `service.play.table` and
`service.play.rooms`; the routes only translate HTTP.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Response, WebSocket
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from starlette.requests import HTTPConnection, Request

from games.ai import level_names
from service.errors import STORE_DOWN, NotFound, ServiceError, Unavailable
from service.frames import error_frame
from service.placement import Placement
from service.play.manager import GameManager, TooManyGames, UnknownGame
from service.play.rooms import CODE, RoomError, serve_lobby
from service.play.settings import PlaySettings
from service.play.sockets import CLOSE_BAD_TOKEN, CLOSE_FULL, CLOSE_TOO_SLOW, CLOSE_UNKNOWN_GAME, serve_socket
from service.play.table import Recognize
from service.play.table_words import DeckSetupError
from service.play.views import HUMAN, accepted_opponents
from service.replicas import Ownership, Replica
from service.shared import ClientDep, Shared, client_of
from service.workers import RELAY_CLOSE, RELAYED, relay, relay_to
from store import StoreError
from store.leases import Lease

log = logging.getLogger("griffon.play")

STATIC = Path(__file__).parent.parent / "static"
MEDIA = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}
MAX_STATIC_NAME = 100
GAME_HEADER = "X-Griffon-Game"  # on POST /v1/play's answer: HAProxy's stick table learns the game's replica
ROOM_HEADER = "X-Griffon-Room"  # on POST /v1/rooms's answer: the same for the room's lobby
router = APIRouter()


WithdrawKey = Annotated[str, Field(min_length=16, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")]


class NewGame(BaseModel):
    """A solo game against the AI."""

    model_config = ConfigDict(extra="forbid")

    game: Literal["kontour", "pictomania"]
    opponents: int = Field(default=2, ge=1, le=5, description="AI players (Pictomania: 2-5)")
    level: Literal["easy", "normal", "hard"] = "normal"
    name: str = Field(default="Vous", min_length=1, max_length=24, pattern=r"^[^<>&\"]+$")
    seed: int | None = Field(default=None, ge=0, le=2**31, description="same seed, same deal")
    learn: StrictBool = Field(default=False, description="the person agrees that their finished drawings "
                              "be kept (word, strokes, game conditions; nothing about them) to train the "
                              "model: JSON true only")
    withdraw_key: WithdrawKey | None = Field(
        default=None, description="a secret the page keeps (16-128 URL-safe characters): "
        "POST /v1/drawings/withdraw with it deletes the drawings given with it (only its hash is stored)")


class Withdrawal(BaseModel):
    """Take back the consent: delete the drawings given with this withdrawal key."""

    model_config = ConfigDict(extra="forbid")

    key: WithdrawKey


class Withdrawn(BaseModel):
    """How many drawings were deleted."""

    deleted: int


class NewRoom(BaseModel):
    """A room: the host's table, friends join it from its link."""

    model_config = ConfigDict(extra="forbid")

    game: Literal["kontour", "pictomania"]
    name: str = Field(min_length=1, max_length=24, pattern=r"^[^<>&\"]+$")
    ai: int = Field(default=1, ge=0, le=5, description="AI seats to begin with (the host changes them)")
    level: Literal["easy", "normal", "hard"] = "normal"


class RoomCreated(BaseModel):
    """What the host's page keeps: the room's code and link, the host's seat and token."""

    code: str
    link: str
    token: str
    seat: str
    game: str
    ws: str


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
    replica: Replica | None = getattr(app.state, "replica", None)
    ownership = None
    if replica is not None:  # the games are leased (service.replicas), and renewed with the bot rooms'
        ownership = functools.partial(Ownership, replica, rooms=app.state.bots.room_leases)
    manager = GameManager(shared.settings, play, make_recognizer(shared), labels, app.state.store,
                          spend_points=shared.spend_points, metrics=shared.metrics,
                          workers=app.state.workers, capacity=getattr(app.state, "capacity", None),
                          ownership=ownership)
    app.state.play = manager
    for kind in ("kontour", "pictomania"):
        shared.metrics.watch(shared.metrics.tables, functools.partial(manager.open_count, kind), game=kind)
    shared.metrics.watch(shared.metrics.sockets, manager.socket_count, kind="play")
    manager.start()
    if manager.ownership is None:
        manager.resume()  # the games in progress when the server stopped (service.play.journal)
    else:  # the games are taken over as their leases expire (service.replicas)
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
async def play_options(games: GamesDep) -> dict[str, Any]:
    """What a new game accepts: AI opponents per game (from the rules files) and the AI levels; how
    many days given drawings are kept (``GRIFFON_DB_RETAIN_DRAWINGS_DAYS``; 0: until withdrawn)."""
    retention = getattr(games.store, "retention", None)
    kept = retention.drawings_days if retention is not None else 0.0
    return {"opponents": accepted_opponents(), "levels": level_names(), "drawings_kept_days": kept}


@router.post("/v1/play", response_model=GameCreated, status_code=201, tags=["solo games"])
async def new_game(
    body: NewGame, games: GamesDep, client: ClientDep, request: Request, response: Response
) -> GameCreated | Response:
    """Start a solo game against AI players; returns its id and the player's token. Under
    ``--workers N`` the game is made on the least-loaded worker (service/placement.py).

    Bounded per client: ``play_limits.games_per_client`` live games,
    ``play_limits.games_per_client_hour`` created."""
    limits = accepted_opponents()[body.game]
    if not limits["min"] <= body.opponents <= limits["max"]:
        raise ServiceError(f"{body.game} takes {limits['min']}-{limits['max']} AI opponents, "
                           f"got {body.opponents}", code="invalid_request")
    placement: Placement | None = request.app.state.placement
    if placement is None:
        return await _open_solo(body, games, client, response)

    placed = placement

    async def make() -> GameCreated:  # the client's games of the last hour, on every worker
        hourly = games.settings.play_limits.games_per_client_hour
        placed.check_created(client, hourly)
        made = await _open_solo(body, games, client, response)
        placed.made(client, hourly)
        return made

    # a new game goes where it replaces one its player left
    limit = games.settings.play_limits.games_per_client
    return await placement.place(request, body.game, client, make, games_limit=limit)


async def _open_solo(body: NewGame, games: GameManager, client: str, response: Response) -> GameCreated:
    """`new_game` made on this worker."""
    try:
        game = await games.open_game(body.game, body.opponents, body.level, body.name, body.seed,
                                     client=client, learn=body.learn,
                                     withdraw_key=body.withdraw_key)
    except TooManyGames as error:
        raise Unavailable(str(error), code="too_many_games", retry_after=30) from None
    except DeckSetupError as error:
        raise Unavailable(str(error), code="no_deck") from None
    except StoreError as error:  # the details (a file path, a host) go to the server log only
        log.warning("a new game could not be stored: %s", error)
        raise Unavailable(STORE_DOWN, code="database_unavailable", retry_after=30) from None
    ws = f"/v1/play/{game.id}?token={game.token}"
    response.headers[GAME_HEADER] = game.id  # a load balancer sends the game's socket here (deploy/)
    return GameCreated(game_id=game.id, token=game.token, player=HUMAN, game=body.game, ws=ws)


@router.post("/v1/drawings/withdraw", response_model=Withdrawn, tags=["solo games"])
async def withdraw_drawings(body: Withdrawal, games: GamesDep) -> Withdrawn:
    """Withdraw the consent to keep drawings: every drawing given with this key is deleted, and the
    games in progress with it keep no more (the key travels in the body, never in a URL)."""
    return Withdrawn(deleted=await games.withdraw(body.key))


@router.get("/r/{code}", include_in_schema=False)
async def room_page(code: str) -> FileResponse:
    """A room's link: the game page, which reads the code from its address and says in French
    whether the room is there; a code that cannot be one gets the page too, with status 404 (the
    page says the code is mistyped: never a raw JSON answer to a person)."""
    status = 200 if CODE.match(code.upper()) else 404
    return FileResponse(STATIC / "index.html", status_code=status, media_type="text/html")


@router.post("/v1/rooms", response_model=RoomCreated, status_code=201, tags=["rooms"])
async def new_room(
    body: NewRoom, games: GamesDep, client: ClientDep, request: Request, response: Response
) -> RoomCreated | Response:
    """Open a room hosted by the caller: friends join it from its link; the host fills the other
    seats with AI players and starts it through the lobby socket (docs/PLAY.md). Under
    ``--workers N`` the room, and the games it starts, are on the least-loaded worker."""
    placement: Placement | None = request.app.state.placement

    async def make() -> RoomCreated:
        if placement is not None:  # the client's lobbies on every worker (service/placement.py)
            placement.check_lobbies(client, games.play.rooms_per_client)
        try:
            room, token = await games.rooms.create_async(body.game, body.name.strip(), body.level, body.ai,
                                                         client)
        except RoomError as error:
            status = Unavailable if error.code == "too_many_games" else ServiceError
            raise status(error.message, code=error.code) from None
        except StoreError as error:  # a replica could not lease the room's code
            log.warning("a new room could not be leased: %s", error)
            raise Unavailable(STORE_DOWN, code="database_unavailable", retry_after=30) from None
        ws = f"/v1/rooms/{room.code}?token={token}"
        response.headers[ROOM_HEADER] = room.code  # a load balancer sends the lobby's sockets here
        return RoomCreated(code=room.code, link=f"/r/{room.code}", token=token, seat=HUMAN, game=body.game,
                           ws=ws)

    return await make() if placement is None else await placement.place(request, body.game, client, make)


@router.websocket("/v1/rooms/{code}")
async def room_socket(websocket: WebSocket, code: str, games: GamesDep, token: str = "") -> None:
    """A room's lobby socket (see `service.play.rooms.serve_lobby`), relayed to the worker that
    holds the room when it landed on another; on a replica, to the replica that holds its lobby or
    its game, or taken over here once that replica's lease ran out (`service.play.stored_lobbies`)."""
    await websocket.accept()
    workers, code = games.workers, code.upper()
    if workers is not None and not workers.owns(code):
        await relay(websocket, workers, workers.owner(code), client_of(websocket))
        return
    if games.ownership is not None and CODE.match(code):
        try:
            held = await games.rooms.locate(code)
            if isinstance(held, Lease) and websocket.scope.get(RELAYED):  # relayed once already
                await websocket.close(CLOSE_TOO_SLOW, "the room is changing servers; reconnect")
                return
            secret, client = games.ownership.replica.secret, client_of(websocket)
            if isinstance(held, Lease) and await relay_to(websocket, held.address, secret, client):
                return
            if isinstance(held, Lease):
                held = await games.rooms.outlast(code, held)  # its holder is gone: take it over
        except StoreError as error:  # the database is down: the page retries
            log.warning("room %s: not located: %s", code, error)
            held = None
            if code not in games.rooms.lobbies:
                await websocket.close(RELAY_CLOSE, "the room's server cannot be reached; retry")
                return
        if isinstance(held, Lease):
            await websocket.close(RELAY_CLOSE, "the room's server cannot be reached; retry")
            return
    await serve_lobby(websocket, games.rooms, code, token)


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
    seat = game.seat_of(token)
    if seat is None:
        await websocket.send_json(error_frame("bad_token", "this token does not belong to the game"))
        await websocket.close(CLOSE_BAD_TOKEN, "bad token")
        return
    if sum(1 for s in game.listeners.values() if s == seat) >= games.settings.play_limits.max_game_sockets:
        limit = games.settings.play_limits.max_game_sockets
        games.refused("too_many_sockets")
        message = f"a game holds at most {limit} sockets per player"
        await websocket.send_json(error_frame("too_many_sockets", message))
        await websocket.close(CLOSE_FULL, "too many sockets")
        return
    await serve_socket(websocket, game, games, seat)
