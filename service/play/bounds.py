"""The bounds of a person's moves: what one stroke may hold, how long a game's log may grow.

A person's stroke holds 1 to ``Settings.max_stroke_points`` points (the one stroke limit of the
service: HTTP, bot rooms and games alike), each a finite ``[x, y]`` within the canvas and a little
slack; a typed guess at most `MAX_GUESS_CHARS` characters; a game's log at most
``PlaySettings.max_moves`` moves and ``max_log_bytes`` bytes of moves (`GameTooLong`), so that no
player can grow the database without end. A move is encoded once, as the store keeps it
(`encode_move`): its size bounds the log, its text is what the store writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from games.core import InvalidMove, Move, RuleError
from service.play.settings import PlaySettings
from service.settings import Settings
from store import Encoded

COORD_MIN, COORD_MAX = -64.0, 320.0  # the page draws on a 0-255 canvas; a little slack outside
MAX_GUESS_CHARS = 80


class GameTooLong(RuleError):
    """The game's move log reached ``max_moves`` moves or ``max_log_bytes`` bytes: the person's
    moves are refused (the AI players and the timers still end the turn / round)."""

    code = "game_too_long"


def encode_move(move: Move) -> Encoded:
    """A move as the store keeps it (its compact JSON) and its size in bytes."""
    return Encoded.of(move.to_dict())


@dataclass(frozen=True)
class MoveBounds:
    """The bounds of one game's moves (the manager makes them from the settings)."""

    stroke_points: int  # points in one stroke: ``Settings.max_stroke_points``
    max_moves: int
    max_log_bytes: int

    @classmethod
    def of(cls, play: PlaySettings, settings: Settings | None = None) -> MoveBounds:
        """The bounds the settings set (``settings`` None: the service's defaults)."""
        stroke_points = (settings or Settings()).max_stroke_points
        return cls(stroke_points, play.max_moves, play.max_log_bytes)

    def points(self, raw: Any) -> list[tuple[float, float]]:
        """A stroke's points from a frame (`check_points`); `InvalidMove` when they are not."""
        return check_points(raw, self.stroke_points)

    def check_length(self, moves: int, log_bytes: int, move: Encoded) -> None:
        """Refuse a person's move (`encode_move`) once the game's log (``moves`` moves,
        ``log_bytes`` bytes) is full (`GameTooLong`): strokes undone and drawn again, guesses..."""
        if moves >= self.max_moves or log_bytes + move.size > self.max_log_bytes:
            raise GameTooLong(
                f"this game has reached its length limit ({self.max_moves} moves, "
                f"{self.max_log_bytes} bytes of moves): start a new game",
                moves=moves, bytes=log_bytes,
            )


def check_points(raw: Any, limit: int) -> list[tuple[float, float]]:
    """Stroke points from a frame: 1 to `limit` finite ``[x, y]`` pairs within the canvas.

    One pass over exact JSON types first (a stroke of 1,000 points is checked in a fraction of a
    millisecond of the event loop); anything it does not accept goes through `_checked_points`,
    which accepts or names the first bad point."""
    if not isinstance(raw, list) or not 1 <= len(raw) <= limit:
        raise InvalidMove(f"a stroke needs 1 to {limit} points [x, y]")
    # NaN and infinities fail the bounds; a bool is not exactly an int
    if all(type(p) is list and len(p) == 2 and type(p[0]) in _NUMBERS and type(p[1]) in _NUMBERS
           and COORD_MIN <= p[0] <= COORD_MAX and COORD_MIN <= p[1] <= COORD_MAX for p in raw):
        return [(float(x), float(y)) for x, y in raw]
    return _checked_points(raw)


_NUMBERS = (float, int)


def _checked_points(raw: list[Any]) -> list[tuple[float, float]]:
    points = []
    for p in raw:
        if not (isinstance(p, list | tuple) and len(p) == 2):
            raise InvalidMove("each point must be a pair [x, y]")
        x, y = p
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y)):
            raise InvalidMove("point coordinates must be numbers")
        if not all(COORD_MIN <= v <= COORD_MAX for v in (x, y)):  # NaN, infinities, huge integers
            raise InvalidMove(f"point coordinates must be finite, within {COORD_MIN}..{COORD_MAX}")
        points.append((float(x), float(y)))
    return points
