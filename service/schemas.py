"""Request/response schemas of the HTTP API (with bounds).

Static bounds here are hard ceilings (the recognizer's own limits); the configurable, usually
tighter ones (``Settings.max_points``...) are checked by :func:`check_drawing` before any work, so
that the message names the setting's value.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from model.strokes import MAX_POINTS, MAX_STROKES, DrawingError
from service.settings import Settings

Number = Annotated[float, Field(allow_inf_nan=False, strict=True)]  # a JSON number: not "5", not true
Coordinates = Annotated[list[Number], Field(max_length=MAX_POINTS)]
StrokeJSON = Annotated[list[Coordinates], Field(min_length=2, max_length=3)]
Drawing = Annotated[list[StrokeJSON], Field(min_length=1, max_length=MAX_STROKES)]
Text = Annotated[str, Field(min_length=1, max_length=200)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorOut(BaseModel):
    """Every error response: a stable code and a readable message."""

    error: str = Field(examples=["bad_drawing"])
    message: str = Field(examples=["stroke 0: coordinates must be finite (no NaN or infinity)"])


class GuessRequest(_Strict):
    """One drawing in Quick, Draw! stroke format, ``[[x...], [y...](, [t...])]`` per stroke."""

    drawing: Drawing
    top_k: int = Field(default=5, ge=1, le=345, strict=True)
    candidates: list[Text] | None = Field(
        default=None,
        min_length=1,
        max_length=345,
        description="restrict guesses to these words (category keys or French words); omit for all",
    )


class BatchRequest(_Strict):
    """Many drawings guessed with the same ``top_k`` and candidates."""

    drawings: list[Drawing] = Field(min_length=1, max_length=512)
    top_k: int = Field(default=5, ge=1, le=345, strict=True)
    candidates: list[Text] | None = Field(default=None, min_length=1, max_length=345)


class GuessOut(BaseModel):
    """One guess: category key, French word, probability."""

    label: str = Field(examples=["cat"])
    word: str = Field(examples=["chat"])
    prob: float = Field(ge=0, le=1)


class GuessResponse(BaseModel):
    """The best guesses for one drawing, best first."""

    guesses: list[GuessOut]


class BatchResponse(BaseModel):
    """One result per drawing, in request order."""

    results: list[GuessResponse]


class MatchRequest(_Strict):
    """A player's guess judged against the answer (and optionally the words on the table)."""

    answer: Text
    guess: Annotated[str, Field(max_length=200)]
    table: list[Text] | None = Field(default=None, max_length=64)
    answer_kind: Literal["key", "word"] | None = Field(
        default=None, description="read answer and table as category keys or French words (see vocab.match)"
    )


class MatchResponse(BaseModel):
    """The matcher's verdict (see ``vocab.match``)."""

    accepted: bool
    reason: str
    category: str | None = None
    other: str | None = None
    distance: int | None = None


class WordOut(BaseModel):
    """A vocabulary word."""

    category: str
    word: str
    article: str
    gender: str
    synonyms: list[str]
    variants: list[str]
    drawable: bool
    difficulty: int


class VocabularyResponse(BaseModel):
    """Every word, plus which ones the loaded model can recognise."""

    count: int
    model_labels: list[str]
    words: list[WordOut]


def check_drawing(drawing: list, settings: Settings, where: str = "") -> int:
    """The drawing's point count; :class:`DrawingError` when it exceeds the configured limits
    (strokes, points per stroke, points per drawing)."""
    prefix = f"{where}: " if where else ""
    if len(drawing) > settings.max_strokes:
        raise DrawingError(f"{prefix}too many strokes: {len(drawing)} > {settings.max_strokes}")
    points = 0
    for i, stroke in enumerate(drawing):
        n = len(stroke[0]) if stroke else 0
        if n > settings.max_stroke_points:
            raise DrawingError(f"{prefix}stroke {i}: too many points: {n} > {settings.max_stroke_points}")
        points += n
    if points > settings.max_points:
        raise DrawingError(f"{prefix}too many points: {points} > {settings.max_points}")
    return points
