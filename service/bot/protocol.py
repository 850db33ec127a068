"""Frames of the bot protocol ``WS /v1/bot`` (versions 1 and 2), as pydantic models.

Every frame is one JSON object with a ``type``. A client may add an ``id`` (string or integer)
to any frame; an error caused by that frame echoes it as ``ref``. Spec and changelog:
``docs/BOT_PROTOCOL.md``. The models accept the version 2 fields (``hello.y``, ``hello.resume``,
``round_start.pace``); :func:`version_2_fields` names those a version 1 room may not send.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, TypeAdapter, ValidationError

from service.frames import FrameError, load_json

PROTOCOL = "griffon-bot"
SUPPORTED_VERSIONS: tuple[int, ...] = (1, 2)
V1_SUPPORTED_UNTIL = "2027-06-30"  # version 1 is deprecated; it keeps working until this date
PACES = ("instant", "human")
Y_DIRECTIONS = ("down", "up")
GAMES = ("kontour", "pictomania", "other")
LANGUAGES = ("fr", "en")

Number = Annotated[float, Field(allow_inf_nan=False)]
Color = Annotated[str, Field(max_length=64)]  # the room's pen or fill colour, as it names it (ignored)
Coords = Annotated[list[Number], Field(min_length=1, max_length=10_000)]
Int53 = Annotated[int, Field(ge=-(2**53), le=2**53)]  # an integer any JSON client reads exactly
FrameId = Annotated[str, Field(max_length=64)] | Int53 | None
Text = Annotated[str, Field(min_length=1, max_length=200)]
MAX_CANDIDATES = 1000  # words of a round's candidates, or of a POST /v1/words/check list


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: FrameId = None


class Resume(BaseModel):
    """A session to take back after a lost socket: its id and the ``resume_token`` of its last welcome."""

    model_config = ConfigDict(extra="forbid")
    session: Annotated[str, Field(min_length=1, max_length=64)]
    token: Annotated[str, Field(min_length=1, max_length=128)]


class Hello(_Frame):
    """First frame: the versions the room speaks; ``analysis`` asks for per-stroke analysis.

    ``key``: the room's API key, in any version. Version 2: ``y`` (which way the room's y axis
    points) and ``resume`` (take back a session whose socket was lost)."""

    type: Literal["hello"]
    versions: list[int] = Field(min_length=1, max_length=16)
    room: Annotated[str, Field(max_length=100)] | None = None
    name: Annotated[str, Field(max_length=100)] | None = None
    analysis: bool = False
    key: Annotated[str, Field(max_length=200)] | None = Field(
        default=None, description="the room's API key (or the header Authorization: Bearer KEY)")
    y: Literal["down", "up"] | None = Field(
        default=None, description="(v2) which way the room's y axis points: down (canvas and screen "
        "coordinates, as in Quick, Draw!; the default) or up (the bot flips it)")
    resume: Resume | None = Field(
        default=None, description="(v2) take back a session whose socket was lost without bye")


class RoundStart(_Frame):
    """A round begins: what is played, the words it may be, the language and difficulty."""

    type: Literal["round_start"]
    round: Annotated[str, Field(min_length=1, max_length=64)] | Int53
    game: Literal["kontour", "pictomania", "other"] = "other"
    candidates: list[Text] | None = Field(default=None, min_length=1, max_length=MAX_CANDIDATES)
    language: Literal["fr", "en"] = "fr"
    difficulty: Annotated[str, Field(max_length=32)] | None = None
    duration_s: float = Field(default=30.0, gt=0, le=600)
    seed: Annotated[int, Field(ge=0, le=2**31)] | None = None
    pace: Literal["instant", "human"] | None = Field(
        default=None, description="(v2) instant: answers right after each stroke; human (the default): "
        "reads and types like a person")
    reaction_s: float | None = Field(
        default=None, ge=0, le=10, description="(v2) seconds the bot takes to read each stroke, in either "
        "pace (± the level's jitter): instant's judgement with a person's reading time")
    hold_s: float | None = Field(
        default=None, ge=0, le=600, description="(v2) the bot says nothing during the round's first hold_s "
        "seconds: the people at the table have a go first")


class StrokeStart(_Frame):
    """A stroke begins at one point (``t`` in ms, optional, as in Quick, Draw!). ``color`` and
    ``width``: the room's pen, accepted and ignored (the recognizer reads lines)."""

    type: Literal["stroke_start"]
    x: Number
    y: Number
    t: Number | None = None
    color: Color | None = None
    width: Annotated[float, Field(ge=0, le=10_000, allow_inf_nan=False)] | None = None


class Points(_Frame):
    """More points of the current stroke."""

    type: Literal["points"]
    x: Coords
    y: Coords
    t: Coords | None = None


class StrokeEnd(_Frame):
    """The current stroke is finished: the bot looks at the drawing."""

    type: Literal["stroke_end"]


class WholeStroke(_Frame):
    """A whole stroke at once, ``[[x...], [y...]]`` or ``[[x...], [y...], [t...]]``."""

    type: Literal["stroke"]
    stroke: Annotated[list[Coords], Field(min_length=2, max_length=3)]
    color: Color | None = None
    width: Annotated[float, Field(ge=0, le=10_000, allow_inf_nan=False)] | None = None


class Region(BaseModel):
    """A rectangle of the canvas: ``x``, ``y`` its corner, ``w``, ``h`` its size (room units)."""

    model_config = ConfigDict(extra="forbid")
    x: Number
    y: Number
    w: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    h: Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Erase(_Frame):
    """(v2) The drawer erased: one stroke (``stroke``: its index among the strokes on the canvas,
    from 0), or every point inside ``region`` (the strokes crossing it are cut there)."""

    type: Literal["erase"]
    stroke: Annotated[int, Field(ge=0, le=100_000)] | None = None
    region: Region | None = None


class Fill(_Frame):
    """(v2) The drawer filled an area with a colour: accepted and ignored (the recognizer reads
    lines; a fill does not change them)."""

    type: Literal["fill"]
    x: Number | None = None
    y: Number | None = None
    color: Color | None = None


class DrawTurn(_Frame):
    """(v2) The bot's turn to draw ``word`` (read by the word rule, in ``language``): it streams a
    drawing at a person's pace (``draw_start``, ``draw_points``, ``draw_stroke_end``, ``draw_done``)
    on a ``width`` × ``height`` canvas, within ``duration_s``; or it answers ``draw_declined`` at once."""

    type: Literal["draw_turn"]
    turn: Annotated[str, Field(min_length=1, max_length=64)] | Int53
    word: Text
    language: Literal["fr", "en"] = "fr"
    width: float = Field(default=255.0, gt=0, le=100_000)
    height: float = Field(default=255.0, gt=0, le=100_000)
    duration_s: float = Field(default=60.0, gt=0, le=600)
    seed: Annotated[int, Field(ge=0, le=2**31)] | None = None


class DrawStop(_Frame):
    """(v2) The room ends the bot's drawing turn early (the word was found, the time ran out)."""

    type: Literal["draw_stop"]


class Undo(_Frame):
    """The drawer removed the last stroke."""

    type: Literal["undo"]


class Clear(_Frame):
    """The drawer cleared the canvas."""

    type: Literal["clear"]


class PlayerGuess(_Frame):
    """Another player guessed ``text``; ``correct`` tells whether it was the answer."""

    type: Literal["player_guess"]
    player: Annotated[str, Field(max_length=100)] = "?"
    text: Annotated[str, Field(max_length=200)]
    correct: bool = False


class Verdict(_Frame):
    """The room's judgement of one of the bot's guesses, and the drawer's gesture if any."""

    type: Literal["verdict"]
    guess_id: int = Field(ge=1, le=2**31)
    correct: bool = False
    gesture: Literal["proche", "hors_sujet"] | None = None


class RoundEnd(_Frame):
    """The round is over (``answer`` optional, recorded in the transcript). ``drawing_consent``:
    the room's players agreed that the round's drawing be kept, under the answer's word, to
    train the model (nothing about them is kept); only on a server that accepts rooms' drawings,
    within its daily quota per address (``round_over`` says ``drawing_kept``)."""

    type: Literal["round_end"]
    answer: Annotated[str, Field(max_length=200)] | None = None
    drawing_consent: StrictBool = False  # JSON true only: "yes" or 1 is not consent


class Ping(_Frame):
    """Keep-alive; answered by ``pong``."""

    type: Literal["ping"]


class Bye(_Frame):
    """The room leaves; the server closes the connection (code 1000)."""

    type: Literal["bye"]


ClientFrame = Annotated[
    Hello | RoundStart | StrokeStart | Points | StrokeEnd | WholeStroke | Undo | Clear
    | PlayerGuess | Verdict | RoundEnd | Ping | Bye | Erase | Fill | DrawTurn | DrawStop,
    Field(discriminator="type"),
]
CLIENT_TYPES = (
    "hello", "round_start", "stroke_start", "points", "stroke_end", "stroke", "undo", "clear",
    "player_guess", "verdict", "round_end", "ping", "bye", "erase", "fill", "draw_turn", "draw_stop",
)
V2_TYPES = ("erase", "fill", "draw_turn", "draw_stop")  # frames a version 1 room may not send
_ADAPTER: TypeAdapter[Any] = TypeAdapter(ClientFrame)


def parse_frame(text: str | bytes | None, max_bytes: int) -> Any:
    """Read one client frame; raises :class:`FrameError` (with a code) on anything unusable.

    Never lets a client's input raise anything else: numbers too long to convert, nesting too
    deep for the parser and lone UTF-16 surrogates (``"\\ud800"``) are ``bad_json`` too.
    """
    if text is None:
        raise FrameError("binary_not_supported", "frames must be JSON text, not binary")
    if len(text) > max_bytes:
        raise FrameError("frame_too_large", f"a frame holds at most {max_bytes} bytes")
    data = load_json(text)
    if not isinstance(data, dict):
        raise FrameError("bad_frame", "a frame must be a JSON object with a 'type'")
    ref = data.get("id") if isinstance(data.get("id"), str | int) else None
    kind = data.get("type")
    if kind not in CLIENT_TYPES:
        known = ", ".join(CLIENT_TYPES)
        raise FrameError("unknown_type", f"unknown frame type {str(kind)[:40]!r} (known: {known})", ref)
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as error:
        raise FrameError("invalid_frame", f"{kind}: {_describe(error)}", ref) from None


def version_2_fields(frame: Hello | RoundStart) -> list[str]:
    """The version 2 fields ``frame`` carries (a version 1 room may not send them)."""
    names = ("y", "resume") if isinstance(frame, Hello) else ("pace", "reaction_s", "hold_s")
    return [name for name in names if getattr(frame, name) is not None]


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:3]:
        where = ".".join(str(p) for p in item["loc"][1:])  # drop the union tag
        parts.append(f"{where}: {item['msg']}" if where else item["msg"])
    return "; ".join(parts)


def negotiate(frame: Hello) -> int:
    """The highest version both the room and this server speak; ``unsupported_version`` otherwise.
    A room that can only speak version 1 may not send version 2 fields."""
    common = sorted(set(frame.versions) & set(SUPPORTED_VERSIONS))
    if not common:
        supported = ", ".join(map(str, SUPPORTED_VERSIONS))
        raise FrameError("unsupported_version", f"this server speaks versions {supported}", frame.id)
    if common[-1] == 1 and (fields := version_2_fields(frame)):
        raise FrameError("invalid_frame", f"hello: {', '.join(fields)} needs protocol version 2", frame.id)
    return common[-1]
