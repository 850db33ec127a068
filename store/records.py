"""What the store keeps and gives back: the records (frozen dataclasses), their bounds, and the checks
every record passes before it is written (`BadRecord` otherwise)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from store.errors import BadRecord

MAX_ID_CHARS = 64
MAX_DRAWING_STROKES = 1_000  # the recognizer's own limits (model.DrawingError)
MAX_DRAWING_POINTS = 10_000
MAX_WORD_CHARS = 64
DAY_S = 86_400.0



@dataclass(frozen=True)
class StoredMove:
    """One entry of a game's move log: its number, the game clock (seconds) and the move's data."""

    seq: int
    at: float
    move: dict[str, Any]


@dataclass(frozen=True)
class StoredGame:
    """A game as stored: what it was set up with, and every move since, in order."""

    id: str
    kind: str
    setup: dict[str, Any]
    token_hash: str
    status: str
    created_at: float
    updated_at: float
    moves: list[StoredMove]
    result: dict[str, Any] | None = None


@dataclass(frozen=True)
class TranscriptRecord:
    """A bot session's transcript: a small summary and its events (bounded in bytes on save)."""

    id: str
    summary: dict[str, Any]
    events: list[dict[str, Any]]
    key_hash: str | None = None
    created_at: float | None = None
    dropped: int = 0  # events cut to fit the byte bound


@dataclass(frozen=True)
class BotRoomRecord:
    """A bot room's resumable memory (protocol version 2): the session id, the SHA-256 of its
    resume token (never the token), its API key's id, its state as JSON data, and its round's
    transcript events (the first ones that fit beside the state are kept, as a transcript's)."""

    session: str
    token_hash: str
    state: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    key_id: str | None = None
    created_at: float | None = None
    strokes: list[str] = field(default_factory=list)  # each stroke as JSON, encoded once by its writer


@dataclass(frozen=True)
class StoredBotRoom:
    """A bot room as stored, with ``age``: seconds since its last write, on the database's clock."""

    session: str
    token_hash: str
    key_id: str | None
    state: dict[str, Any]
    events: list[dict[str, Any]]
    created_at: float
    age: float
    strokes: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class DrawingRecord:
    """A finished drawing, stored with the player's consent.

    ``strokes`` are ``[[x...], [y...], [t...]]`` (``t`` in ms from the drawing's first point);
    ``conditions`` say how it was drawn (``{"style": "lines" | "free", "timer_s": 30, ...}``);
    ``recognized``: whether the word was found; ``owner_hash``: the hash of the withdrawal key the
    person's page holds (`Store.withdraw_drawings` deletes every drawing given under it). Nothing
    about the person is kept.
    """

    word: str
    game: str
    strokes: list[list[list[float]]]
    conditions: dict[str, Any] = field(default_factory=dict)
    recognized: bool = False
    key_id: str = ""
    created_at: float = 0.0
    owner_hash: str = ""  # the SHA-256 of the giver's withdrawal key (`hash_token`); "" for none


@dataclass(frozen=True)
class BotKey:
    """An API key of bot rooms, as stored: the SHA-256 of its secret (never the secret), its
    quotas (0: no limit) and whether it was revoked."""

    id: str
    name: str
    secret_hash: str
    max_rooms: int
    strokes_per_minute: int
    created_at: float
    revoked_at: float | None = None
    last_used_at: float | None = None

    @property
    def revoked(self) -> bool:
        """Whether the key was revoked."""
        return self.revoked_at is not None


@dataclass(frozen=True)
class Retention:
    """How long records are kept (days; 0 = forever) and how many transcripts at most."""

    games_days: float = 30.0
    transcripts_days: float = 30.0
    transcripts_max: int = 10_000
    drawings_days: float = 0.0


@dataclass(frozen=True)
class PruneReport:
    """How many records `Store.prune` deleted."""

    games: int
    moves: int
    transcripts: int
    drawings: int


@dataclass(frozen=True)
class StoreInfo:
    """Where the database is, its size, schema version and record counts."""

    backend: str
    location: str
    size_bytes: int
    schema_version: int
    counts: dict[str, int]


def compact_json(value: Any) -> str:
    """The JSON text the store keeps: compact, French letters as they are; `ValueError` or
    `TypeError` for NaN, infinity and non-JSON data."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True)
class Encoded:
    """A value already in its stored form (`compact_json`), and its size: encoded once by its
    writer (a game's move: its size bounds the game's log), written as it is."""

    text: str
    size: int  # bytes (UTF-8)

    @classmethod
    def of(cls, value: Any) -> Encoded:
        """`value` encoded (raises as `compact_json`)."""
        text = compact_json(value)
        return cls(text, len(text.encode("utf-8")))

    def value(self) -> Any:
        """The value back from its text."""
        return json.loads(self.text)


def to_json(value: Any, limit: int, what: str) -> str:
    """Compact JSON of `value` (as it is when already `Encoded`), at most `limit` bytes; NaN,
    infinity and non-JSON data refused."""
    if isinstance(value, Encoded):
        text, size = value.text, value.size
    else:
        try:
            text = compact_json(value)
        except (TypeError, ValueError) as error:
            raise BadRecord(f"{what} is not JSON data: {error}") from None
        size = len(text.encode("utf-8"))
    if size > limit:
        raise BadRecord(f"{what} is larger than {limit} bytes")
    return text


def check_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_CHARS or not value.isprintable():
        raise BadRecord(f"{what} must be a printable string of 1 to {MAX_ID_CHARS} characters")
    return value


WORD_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 '\-]*$")  # the Quick, Draw! category names


def check_word(word: Any) -> str:
    """A category name safe as a file name (``full/raw/<word>.ndjson``)."""
    if not isinstance(word, str) or len(word) > MAX_WORD_CHARS or not WORD_RE.match(word):
        raise BadRecord(f"not a category name: {str(word)[:80]!r}")
    return word


def check_strokes(strokes: Any) -> list[list[list[float]]]:
    """Strokes ``[[x...], [y...], [t...]]``: equal lengths, finite numbers, within the recognizer's
    limits (1,000 strokes, 10,000 points), times never going back within a stroke."""
    if not isinstance(strokes, list) or not 1 <= len(strokes) <= MAX_DRAWING_STROKES:
        raise BadRecord(f"a drawing holds 1 to {MAX_DRAWING_STROKES} strokes")
    total, clean = 0, []
    for stroke in strokes:
        if not (isinstance(stroke, list | tuple) and len(stroke) == 3):
            raise BadRecord("each stroke is [[x...], [y...], [t...]] (times are required)")
        xs, ys, ts = (list(axis) if isinstance(axis, list | tuple) else None for axis in stroke)
        if xs is None or ys is None or ts is None or not len(xs) == len(ys) == len(ts) >= 1:
            raise BadRecord("a stroke's x, y and t lists must have the same length (at least 1)")
        values = [*xs, *ys, *ts]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values) or not all(
            math.isfinite(v) for v in values
        ):
            raise BadRecord("stroke coordinates and times must be finite numbers")
        if any(b < a for a, b in zip(ts, ts[1:], strict=False)):
            raise BadRecord("times go back within a stroke")
        total += len(xs)
        clean.append([xs, ys, ts])
    if total > MAX_DRAWING_POINTS:
        raise BadRecord(f"a drawing holds at most {MAX_DRAWING_POINTS} points")
    return clean


def fit_events(events: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], int]:
    """The first events whose JSON list fits in `limit` bytes, and how many were cut."""
    kept, size = [], 2  # the brackets
    for i, event in enumerate(events):
        piece = len(to_json(event, 2**31, "a transcript event").encode("utf-8")) + (1 if kept else 0)
        if size + piece > limit:
            return kept, len(events) - i
        kept.append(event)
        size += piece
    return kept, 0
