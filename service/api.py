"""HTTP routes: guess, batch guess, match, vocabulary, decks, health (thin; no torch here)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from service.bot.routes import BotsDep
from service.errors import LimitExceeded, ServiceError
from service.prometheus import CONTENT_TYPE, merge
from service.schemas import (
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
from service.shared import ClientDep, Shared, SharedDep
from service.workers import Workers

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut} for status in (413, 422, 429, 503)
}
router = APIRouter()


def rank(shared: Shared, probs: np.ndarray, top_k: int, indices: np.ndarray | None) -> list[GuessOut]:
    """The best ``top_k`` guesses of one probability row (restricted to candidate ``indices``)."""
    return [
        GuessOut(label=g.label, word=shared.french_word(g.label), prob=g.prob)
        for g in shared.guesser.rank(probs, top_k, indices)
    ]


async def guess_drawings(
    shared: Shared, client: str, drawings: list[list], top_k: int, candidates: list[str] | None
) -> list[GuessResponse]:
    """Check the limits and the client's budget, rasterise (fair thread pool), classify (batcher)."""
    settings = shared.settings
    if top_k > settings.max_top_k:
        raise LimitExceeded(f"top_k must be at most {settings.max_top_k}", code="bad_top_k")
    chosen = shared.resolve_candidates(candidates)
    where = len(drawings) > 1
    points = 0
    for i, drawing in enumerate(drawings):
        points += check_drawing(drawing, settings, f"drawing {i}" if where else "")
    shared.inference.check_room(len(drawings))
    shared.spend_points(client, points)
    # one fair turn per drawing: a batch of heavy drawings never holds a thread for all of them
    jobs = [asyncio.ensure_future(shared.inference.recognize(_prepare_one, shared.guesser, drawing,
                                                             f"drawing {i}" if where else "", key=client))
            for i, drawing in enumerate(drawings)]
    try:
        probs = await asyncio.gather(*jobs)
    finally:
        for job in jobs:  # one drawing refused: the others' turns are given back
            job.cancel()
    shared.metrics.guesses.labels(source="api").inc(len(drawings))
    indices = shared.guesser.candidate_indices(chosen)
    return [GuessResponse(guesses=rank(shared, row, top_k, indices)) for row in probs]


def _prepare_one(guesser: Any, drawing: list, where: str) -> Any:
    """The views of one drawing; a refusal names the drawing (``where``) in a batch."""
    from model.strokes import DrawingError

    try:
        return guesser.prepare_views(drawing)
    except DrawingError as error:
        raise DrawingError(f"{where}: {error}" if where else str(error)) from error


# -- routes ----------------------------------------------------------------------------------------
@router.post("/v1/guess", response_model=GuessResponse, responses=ERRORS, tags=["recognizer"])
async def guess(body: GuessRequest, shared: SharedDep, client: ClientDep) -> GuessResponse:
    """Top-k guesses (label, French word, probability) for one drawing."""
    return (await guess_drawings(shared, client, [body.drawing], body.top_k, body.candidates))[0]


@router.post("/v1/guess/batch", response_model=BatchResponse, responses=ERRORS, tags=["recognizer"])
async def guess_batch(body: BatchRequest, shared: SharedDep, client: ClientDep) -> BatchResponse:
    """Guesses for many drawings at once (one shared forward pass per batch)."""
    limit = shared.settings.max_guess_batch
    if len(body.drawings) > limit:
        raise LimitExceeded(f"at most {limit} drawings per batch", code="batch_too_large")
    results = await guess_drawings(shared, client, body.drawings, body.top_k, body.candidates)
    return BatchResponse(results=results)


@router.post("/v1/match", response_model=MatchResponse, responses=ERRORS, tags=["vocabulary"])
async def match(body: MatchRequest) -> MatchResponse:
    """Judge a typed guess against the answer (a category key or a French word)."""
    from vocab import AmbiguousAnswerError, UnknownCategoryError
    from vocab import match as judge

    try:
        verdict = judge(body.answer, body.guess, table=body.table, answer_kind=body.answer_kind)
    except (AmbiguousAnswerError, UnknownCategoryError) as exc:  # « crayon » read two ways; a bad key
        raise ServiceError(exc.args[0], code="bad_answer") from None
    return MatchResponse(
        accepted=verdict.accepted,
        reason=verdict.reason,
        category=verdict.category,
        other=verdict.other,
        distance=verdict.distance,
    )


@router.get("/v1/vocabulary", response_model=VocabularyResponse, tags=["vocabulary"])
async def vocabulary(shared: SharedDep) -> VocabularyResponse:
    """Every French word with its category key, forms and difficulty."""
    words = [WordOut(**w.model_dump(include=set(WordOut.model_fields))) for w in shared.vocabulary]
    return VocabularyResponse(count=len(words), model_labels=shared.guesser.labels, words=words)


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


@router.get("/metrics", tags=["service"], response_class=Response)
async def metrics(request: Request, shared: SharedDep, local: bool = False) -> Response:
    """The service's metrics in the Prometheus text format (tables, rooms, sockets, strokes,
    recognitions, the inference queue and batches, latencies, refusals): every worker's, added
    up (``local=true``: this process's only)."""
    workers: Workers | None = request.app.state.workers
    own = shared.metrics.render()
    if local or workers is None:
        return Response(own, media_type=CONTENT_TYPE)
    others = [i for i in range(workers.count) if i != workers.index]
    texts = await asyncio.gather(*(_local_metrics(workers, i) for i in others))
    return Response(merge([own.decode(), *[t for t in texts if t]]), media_type=CONTENT_TYPE)


async def _local_metrics(workers: Workers, index: int) -> str:
    """Worker ``index``'s own metrics over its private socket ('' when it does not answer)."""
    transport = httpx.AsyncHTTPTransport(uds=str(workers.socket_path(index)))
    try:
        async with httpx.AsyncClient(transport=transport, timeout=2.0) as client:
            answer = await client.get("http://worker/metrics", params={"local": "true"})
            return answer.text if answer.status_code == 200 else ""
    except httpx.HTTPError:
        return ""


@router.get("/healthz", tags=["service"])
async def healthz(request: Request, shared: SharedDep, bots: BotsDep) -> Any:
    """Liveness plus the model, the shared batcher's counters and the live bot sessions; 503
    (``"status": "degraded"``) while a sibling worker cannot be reached (its games neither)."""
    workers: Workers | None = request.app.state.workers
    unreachable = await workers.unreachable() if workers is not None else []
    health = {
        "status": "degraded" if unreachable else "ok",
        "worker": workers.index if workers is not None else 0,
        "unreachable_workers": unreachable,
        "uptime_s": round(time.time() - shared.started_at, 1),
        "model": {"classes": len(shared.guesser.labels)},
        "inference": shared.inference.stats.to_dict() | {"pending": shared.inference.pending},
        "bots": {"live": bots.live_count, "transcripts": bots.transcript_count},
    }
    return JSONResponse(health, status_code=503) if unreachable else health
