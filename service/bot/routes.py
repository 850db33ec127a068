"""The bot player for web rooms: ``WS /v1/bot`` (protocol versions 1 and 2) and its transcripts.

A room connects, says ``hello``, announces rounds, streams the drawing and the other players'
guesses; the bot answers with ``guess`` frames when its policy speaks (see
``docs/BOT_PROTOCOL.md``). ``GET /v1/bot/sessions/{id}?key=...`` shows what one saw and said, to
whoever holds the key the room got in ``welcome``; ``GET /v1/bot/sessions`` lists sessions (live,
then the last ``bot.transcripts_kept`` finished ones) only when ``bot.list_sessions`` is on.
With a database (:class:`store.transcripts.TranscriptArchive`), each transcript is also saved
after round ends (at most every ``bot.transcript_save_s`` per session, the latest snapshot only) and
always when the session ends, off the event loop, and read back from there once it is no longer
in memory (after a restart): retention is the database's (``GRIFFON_RETAIN_TRANSCRIPTS_*``).
A room's drawing (``round_end`` with ``drawing_consent``) is stored only when the server accepts
them (``bot.accept_drawings``, off by default) and within ``bot.drawings_per_day`` per client
address; ``round_over`` then says ``drawing_kept``.

API keys (service/bot/keys.py, ``BotRegistry.keys``): checked at ``hello``; 4401 no key where one
is required, or an unknown one; 4403 a revoked key (also a live room's, within
``bot.keys_refresh_s``); 4429 over the key's rooms at once. A stroke over its strokes per minute
gets ``quota_exceeded`` and the room stays.

A version 2 session that loses its socket without ``bye`` waits ``bot.resume_s`` for its room to
say ``hello`` with ``resume`` (its id and resume token); meanwhile it still counts toward
``bot.max_sessions``, then it ends as if the socket had closed.

With a database and one process (no ``--workers``), or as a replica (``service.replicas``), a
version 2 room's memory is also kept in the database (``bot_rooms``, `service.bot.memory`), off
the event loop, the latest snapshot per room: after every frame that changes it, and at least
every half ``bot.resume_s`` while the room lives (a row not written for ``bot.resume_s`` plus that
is a dead room's, resumable no longer, and pruned). **Durability:** the welcome (its new resume
token) and every word the bot says reach the room only once the snapshot holding them is
committed; a stroke is stored within the writer's latency (milliseconds), and a room that resumes
is told how many strokes the bot holds (``welcome.round.strokes``: the clients send the others
again). A resume that reaches a process which does not hold the room is relayed to the replica
holding its lease; when none lives (it died, or the server restarted), the room is taken over from
its stored memory: the round goes on with its strokes, the words already said (never said again),
the wrong words heard, the gestures, and its clock. A room that ends for good (``bye``, flooding, a
revoked key, its resume time out) is deleted; a clean shutdown keeps every room's memory for its
resume elsewhere (or after the restart).

Under ``griffon serve --workers N`` a session's id names the worker that holds it
(`service.workers.Workers.owns`): a resuming ``hello`` that lands on another worker is relayed
there (`service.workers.relay`), so a room resumes wherever its new socket lands.

``POST /v1/words/check`` reads a room's whole word list by the word rule (``vocab.lookup``): which
words the bot can guess, under which categories.

The package, by job: `service.bot.protocol` (the frames, version negotiation), `.session` (one
bot: rounds, policy), `.pace`, `.transcript`, `.strokes`, `.words` (the word rule on the model's
labels), `.drawing` (the bot's drawing turn), `.memory` (a room's memory as data), `.keys` (API
keys), `.registry` (the sessions of a process), `.connection` (one socket), and this module (the
routes).

Close codes: 1000 after ``bye``; 4408 idle for ``bot.idle_timeout_s``; 4429 a client that keeps
flooding past the rate limit (dropped frames of any type, see :class:`Connection`); 4503 the
server already holds ``bot.max_sessions`` bots; 1013 the server is at capacity (an ``overloaded``
frame with ``retry_after`` comes first: service/capacity.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import HTTPConnection

from service.bot.connection import CLOSE_FULL, CLOSE_TRY_LATER, Connection
from service.bot.protocol import MAX_CANDIDATES, Text
from service.bot.registry import BotRegistry
from service.capacity import RETRY_AFTER_S, Capacity
from service.errors import NotFound
from service.frames import error_frame
from service.shared import SharedDep, client_of
from service.workers import Workers

__all__ = ["BotRegistry", "BotsDep", "router"]  # BotRegistry: service.bot.registry's, for the app

router = APIRouter(tags=["bot"])


def get_bots(connection: HTTPConnection) -> BotRegistry:
    """The app's :class:`BotRegistry` (a FastAPI dependency)."""
    return connection.app.state.bots


BotsDep = Annotated[BotRegistry, Depends(get_bots)]


@router.websocket("/v1/bot")
async def bot_socket(ws: WebSocket, shared: SharedDep, registry: BotsDep) -> None:
    """A bot player for one room (see docs/BOT_PROTOCOL.md)."""
    await ws.accept()
    client = client_of(ws)
    capacity: Capacity | None = getattr(ws.app.state, "capacity", None)
    refusal = capacity.refusal("bot", client=client) if capacity is not None else None
    if refusal is not None:  # the house's budget, or this address's share of it (service/capacity.py)
        shared.metrics.refused("server_busy")
        await ws.send_json(error_frame("overloaded", refusal) | {"retry_after": RETRY_AFTER_S})
        await ws.close(CLOSE_TRY_LATER, "at capacity")
        return
    workers: Workers | None = getattr(ws.app.state, "workers", None)
    session = registry.open(shared, workers)
    if session is None:
        limit = registry.settings.bot.max_sessions
        shared.metrics.refused("server_full")
        await ws.send_json(error_frame("server_full", f"the server already holds {limit} bots"))
        await ws.close(CLOSE_FULL, "server full")
        return
    if capacity is not None and capacity.rooms is not None:
        capacity.rooms.add(session.id, client)
    connection = Connection(ws, session, registry.settings, registry, client, workers)
    try:
        await connection.run()
    except WebSocketDisconnect:
        pass
    finally:  # the connection's session: the one it resumed, if it did
        session = connection.session
        if connection.relayed or session.moved:
            registry.forget(session)
        else:
            registry.release(session, connection.resumable and session.version == 2)


@router.get("/v1/bot/sessions")
async def bot_sessions(registry: BotsDep) -> dict[str, Any]:
    """Bot sessions, newest first (only when ``GRIFFON_BOT_LIST_SESSIONS`` is on)."""
    if not registry.settings.bot.list_sessions:
        raise NotFound("the list of bot sessions is not public on this server "
                       "(GRIFFON_BOT_LIST_SESSIONS); read one with its key")
    sessions = registry.summaries()
    return {"count": len(sessions), "sessions": sessions}


@router.get("/v1/bot/sessions/{session_id}")
async def bot_transcript(
    session_id: str, registry: BotsDep, key: str = "",
    x_griffon_key: Annotated[str, Header()] = "",
) -> dict[str, Any]:
    """What one bot session saw and said, turn by turn (``?key=`` or ``X-Griffon-Key``: its key)."""
    transcript = registry.transcript(session_id, key or x_griffon_key)
    if transcript is None:
        stored = await registry.stored(session_id, key or x_griffon_key)
        if stored is not None:
            return stored
        kept = registry.settings.bot.transcripts_kept
        raise NotFound(f"no bot session {session_id[:40]!r} readable with this key (the last {kept} "
                       "finished sessions are kept)", code="unknown_session")
    return transcript.to_dict()


class WordsCheck(BaseModel):
    """``POST /v1/words/check``: a room's word list and its language."""

    model_config = ConfigDict(extra="forbid")
    words: list[Text] = Field(min_length=1, max_length=MAX_CANDIDATES)
    language: Literal["fr", "en"] = "fr"


class WordChecked(BaseModel):
    """One word: the categories the bot guesses it by (best first; empty: it cannot guess it)."""

    word: str
    categories: list[str]
    french: list[str]


class WordsChecked(BaseModel):
    """Which words of a list the bot can guess, and under which categories."""

    language: str
    known: int
    unknown: list[str]
    words: list[WordChecked]


@router.post("/v1/words/check")
async def check_words(body: WordsCheck, shared: SharedDep, registry: BotsDep) -> WordsChecked:
    """Read a whole word list as a round's candidates would be (``vocab.lookup``'s rule): which
    words the bot can guess, under which categories, and which it cannot (ignored in a round)."""
    words = registry.words(shared)
    out = []
    for text in body.words:
        keys = words.keys(text, body.language)
        french = [shared.french_word(k) for k in keys]
        out.append(WordChecked(word=text, categories=list(keys), french=french))
    unknown = list(dict.fromkeys(w.word for w in out if not w.categories))
    return WordsChecked(language=body.language, known=sum(1 for w in out if w.categories), unknown=unknown,
                        words=out)
