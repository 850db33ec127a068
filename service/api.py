"""HTTP routes: guess, batch guess, match, vocabulary, decks, health (thin; no torch here)."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from fastapi import APIRouter, Request

from service.schemas import (
    ApiError,
    BatchRequest,
    BatchResponse,
    ErrorOut,
    GuessOut,
    GuessRequest,
    GuessResponse,
    MatchRequest,
    MatchResponse,
    VocabularyResponse,
    WordOut,
    check_drawing,
)

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut} for status in (413, 422, 503)
}
router = APIRouter()


# -- helpers (shared with the bot and the solo games) ----------------------------------------------
def resolve_candidates(state: Any, candidates: Sequence[str] | None) -> list[str] | None:
    """Map candidate words (category keys or French words) to the model's labels.

    Raises ``ApiError(422, "unknown_candidate")`` naming the words the model cannot guess.
    """
    if candidates is None:
        return None
    labels = set(state.guesser.labels)
    keys, unknown = [], []
    for text in candidates:
        key = key_for(state, text, labels)
        (keys if key in labels else unknown).append(key if key in labels else text)
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:10])
        raise ApiError(422, "unknown_candidate", f"the model cannot guess these candidates: {shown}")
    return list(dict.fromkeys(keys))


def key_for(state: Any, text: str, labels: Collection[str] | None = None) -> str | None:
    """The model label a word stands for: the label itself, or its vocabulary category (else None)."""
    if text in (labels if labels is not None else state.guesser.labels):
        return text
    try:
        return state.vocabulary.category_for(text)
    except (KeyError, ValueError):
        return None


def french_word(state: Any, label: str) -> str:
    """The French word for a model label (the label itself if the vocabulary lacks it)."""
    words = state.vocabulary.words
    return words[label].word if label in words else label


def rank(state: Any, probs: np.ndarray, top_k: int, indices: np.ndarray | None) -> list[GuessOut]:
    """The best ``top_k`` guesses of one probability row (restricted to candidate ``indices``)."""
    return [
        GuessOut(label=g.label, word=french_word(state, g.label), prob=g.prob)
        for g in state.guesser.rank(probs, top_k, indices)
    ]


async def guess_drawings(
    state: Any, drawings: list[list], top_k: int, candidates: list[str] | None
) -> list[GuessResponse]:
    """Validate, rasterise (thread pool) and classify (shared batcher) several drawings."""
    settings = state.settings
    if top_k > settings.max_top_k:
        raise ApiError(422, "bad_top_k", f"top_k must be at most {settings.max_top_k}")
    chosen = resolve_candidates(state, candidates)
    where = len(drawings) > 1
    for i, drawing in enumerate(drawings):
        check_drawing(drawing, settings.max_strokes, settings.max_points, f"drawing {i}" if where else "")
    images = await state.inference.run_cpu(_prepare_all, state.guesser, drawings, where)
    probs = await state.inference.probabilities(images)
    indices = state.guesser.candidate_indices(chosen)
    return [GuessResponse(guesses=rank(state, row, top_k, indices)) for row in probs]


def _prepare_all(guesser: Any, drawings: list[list], where: bool) -> np.ndarray:
    from model.strokes import DrawingError

    images = []
    for i, drawing in enumerate(drawings):
        try:
            images.append(guesser.prepare(drawing))
        except DrawingError as error:
            raise DrawingError(f"drawing {i}: {error}" if where else str(error)) from error
    return np.stack(images)


# -- routes ----------------------------------------------------------------------------------------
@router.post("/v1/guess", response_model=GuessResponse, responses=ERRORS, tags=["recognizer"])
async def guess(body: GuessRequest, request: Request) -> GuessResponse:
    """Top-k guesses (label, French word, probability) for one drawing."""
    state = request.app.state
    return (await guess_drawings(state, [body.drawing], body.top_k, body.candidates))[0]


@router.post("/v1/guess/batch", response_model=BatchResponse, responses=ERRORS, tags=["recognizer"])
async def guess_batch(body: BatchRequest, request: Request) -> BatchResponse:
    """Guesses for many drawings at once (one shared forward pass per batch)."""
    state = request.app.state
    if len(body.drawings) > state.settings.max_guess_batch:
        raise ApiError(
            422, "batch_too_large", f"at most {state.settings.max_guess_batch} drawings per batch"
        )
    results = await guess_drawings(state, body.drawings, body.top_k, body.candidates)
    return BatchResponse(results=results)


@router.post("/v1/match", response_model=MatchResponse, responses=ERRORS, tags=["vocabulary"])
async def match(body: MatchRequest) -> MatchResponse:
    """Judge a typed guess against the answer (a category key or a French word)."""
    from vocab import match as judge

    verdict = judge(body.answer, body.guess, table=body.table)
    return MatchResponse(
        accepted=verdict.accepted,
        reason=verdict.reason,
        category=verdict.category,
        other=verdict.other,
        distance=verdict.distance,
    )


@router.get("/v1/vocabulary", response_model=VocabularyResponse, tags=["vocabulary"])
async def vocabulary(request: Request) -> VocabularyResponse:
    """Every French word with its category key, forms and difficulty."""
    state = request.app.state
    words = [WordOut(**w.model_dump(include=set(WordOut.model_fields))) for w in state.vocabulary]
    return VocabularyResponse(count=len(words), model_labels=state.guesser.labels, words=words)


@router.get("/v1/decks/kontour", tags=["vocabulary"])
async def kontour_deck() -> dict[str, Any]:
    """The Kontour cards (two halves, blue and orange words)."""
    from vocab import kontour_deck as deck

    cards = [card.model_dump(mode="json") for card in deck()]
    return {"count": len(cards), "cards": cards}


@router.get("/v1/decks/pictomania", tags=["vocabulary"])
async def pictomania_deck() -> dict[str, Any]:
    """The Pictomania cards (seven words per side, by level)."""
    from vocab import pictomania_deck as deck

    cards = [card.model_dump(mode="json") for card in deck()]
    return {"count": len(cards), "cards": cards}


@router.get("/healthz", tags=["service"])
async def healthz(request: Request) -> dict[str, Any]:
    """Liveness plus the model, the shared batcher's counters and the live bot sessions."""
    state = request.app.state
    return {
        "status": "ok",
        "uptime_s": round(time.time() - state.started_at, 1),
        "model": {"classes": len(state.guesser.labels)},
        "inference": state.inference.stats.to_dict() | {"pending": state.inference.pending},
        "bots": {"live": state.bots.live_count, "transcripts": state.bots.transcript_count},
    }
