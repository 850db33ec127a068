"""A bot room's resumable memory as JSON data: what the store keeps so that the room resumes its
round on another server (a replica that took over) or on the same one after a restart.

`snapshot` reads a :class:`~service.bot.session.BotSession` (protocol version 2) into a record:
the session id, the SHA-256 of its resume token, its API key's id, and its state — version,
analysis, y axis, the transcript's counters and this round's transcript events, and the open
round: round id, game, language, level, pace, candidates, its clock, the strokes kept (as the
recognizer read them: y pointing down, with times), the words the bot said (with their guess ids),
the players' wrong words heard, the drawer's gestures, who found the word, the room's spelling of
each candidate. `restore` builds the
session back: the drawing is staged again and read once by the model, and a new AI policy is
given every word already said or heard (it never says one again) and the gestures; the round's
clock goes on from the stored one plus the time since the write (the database's clock).

The transcript's read key is stored sealed with the resume token (XOR with an HMAC-SHA256 of the
token): the database alone gives neither; the room that resumes, holding the token, gets the same
transcript key back. A state over ``limit`` bytes first loses this round's transcript events
(counted as dropped), then is refused (`MemoryTooLarge`): the room then resumes only on the server
that holds it in memory.
"""

from __future__ import annotations

import hmac
import random
import time
from typing import Any

from games.ai import AILevelError, KontourGuesser, load_level
from model.strokes import DrawingError
from service.bot.kept_strokes import stroke_text
from service.bot.pace import policy_level
from service.bot.session import ANALYSIS_TOP, BotSession, Round, _Said
from service.bot.transcript import Transcript
from service.errors import ServiceError
from service.inference import Overloaded
from store import BotRoomRecord, StoredBotRoom, hash_token

Frame = dict[str, Any]
FORMAT = 1
SEAL_LABEL = b"griffon transcript key"


class BadMemory(ValueError):
    """A stored memory that cannot be resumed (bad data, an unknown level, a bad drawing)."""


def seal(secret: str, token: str) -> str:
    """``secret`` (at most 32 bytes) XOR an HMAC-SHA256 of ``token``, as hex."""
    data = secret.encode("utf-8")
    pad = hmac.digest(token.encode("utf-8"), SEAL_LABEL, "sha256")
    if len(data) > len(pad):
        raise ValueError("a sealed secret holds at most 32 bytes")
    return bytes(a ^ b for a, b in zip(data, pad, strict=False)).hex()


def unseal(sealed: str, token: str) -> str | None:
    """The secret `seal` sealed with ``token``; None when it does not open."""
    try:
        data = bytes.fromhex(sealed)
        pad = hmac.digest(token.encode("utf-8"), SEAL_LABEL, "sha256")
        text = bytes(a ^ b for a, b in zip(data, pad, strict=False)).decode("ascii")
    except (ValueError, TypeError):
        return None
    return text if len(data) <= len(pad) and text.isprintable() else None


def snapshot(session: BotSession, key_id: str | None) -> BotRoomRecord:
    """The record of ``session``'s memory now. Cheap on the event loop: lists are copied, not
    encoded (the writer's thread encodes and bounds it: `store.Store.save_bot_rooms`)."""
    transcript = session.transcript
    rnd = session.round
    round_state: Frame | None = None
    before = len(transcript.events)
    events: list[Frame] = []
    if rnd is not None:
        before = min(rnd.events_from, len(transcript.events))
        events = transcript.events[before:]
        round_state = {
            "round": rnd.round_id, "game": rnd.game, "language": rnd.language, "difficulty": rnd.difficulty,
            "candidates": rnd.candidates, "duration_s": rnd.duration_s, "seed": rnd.seed, "pace": rnd.pace,
            "elapsed_s": round(session.clock() - rnd.t0, 3),
            "heard": sorted(rnd.heard),
            "said": [[s.guess_id, s.key, s.text] for s in rnd.said],
            "gestures": [list(g) for g in rnd.gestures], "found_by": rnd.found_by, "events": len(events),
            "spelling": dict(rnd.spelling), "siblings": {k: list(v) for k, v in rnd.siblings.items()},
            "silent": rnd.silent, "reaction_s": rnd.reaction_s, "hold_s": rnd.hold_s,
        }
    state: Frame = {
        "format": FORMAT, "version": session.version, "analysis": session.analysis, "y": session.y,
        "next_guess_id": session._next_guess_id, "detached": session.detached_at is not None,
        "transcript": {
            "key": seal(transcript.key, session.resume_token), "room": transcript.room,
            "name": transcript.name, "started_at": transcript.started_at, "rounds": transcript.rounds,
            "guesses": transcript.guesses, "dropped": transcript.dropped, "events_before": before,
        },
        "round": round_state,
    }
    strokes = list(rnd.stroke_texts) if rnd is not None else []
    return BotRoomRecord(session.id, hash_token(session.resume_token), state, events, key_id,
                         transcript.started_at, strokes)


def _field(data: Frame, name: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise BadMemory(f"stored bot room: {name!r} is missing or of the wrong type")
    return value


async def restore(session: BotSession, stored: StoredBotRoom, token: str,
                  earlier_events: list[Frame] | None) -> None:
    """Fill the fresh ``session`` (its id already ``stored.session``) with the stored memory;
    ``token``: the resume token the room gave (it opens the transcript key); ``earlier_events``: the
    transcript's events as archived (those before this round). `BadMemory` for a memory that
    cannot be resumed."""
    try:
        await _restore(session, stored, token, earlier_events)
    except BadMemory:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise BadMemory(f"stored bot room: {error}") from error


async def _restore(session: BotSession, stored: StoredBotRoom, token: str,
                   earlier_events: list[Frame] | None) -> None:
    state = stored.state
    if state.get("format") != FORMAT:
        raise BadMemory(f"stored bot room: unknown format {state.get('format')!r}")
    session.version = _field(state, "version", int)
    session.analysis = bool(state.get("analysis"))
    session.y = "up" if state.get("y") == "up" else "down"
    session._next_guess_id = _field(state, "next_guess_id", int)
    kept = _field(state, "transcript", dict)
    key = unseal(str(kept.get("key", "")), token)
    if key is None:
        raise BadMemory("stored bot room: its transcript key does not open with this token")
    transcript = Transcript(session.id, kept.get("room"), kept.get("name"),
                            session.settings.bot.transcript_bytes)
    transcript.key = key
    transcript.started_at = float(kept.get("started_at") or time.time())
    transcript.rounds, transcript.guesses = int(kept.get("rounds", 0)), int(kept.get("guesses", 0))
    transcript.dropped = int(kept.get("dropped", 0))
    before = int(kept.get("events_before", 0))
    earlier = [e for e in (earlier_events or [])[:before] if isinstance(e, dict)]
    for event in earlier:
        transcript.add_event(event)
    transcript.dropped += before - len(earlier)  # events the archive had not written yet
    session.transcript = transcript
    data = state.get("round")
    session.round = None if data is None else await _restore_round(session, _field(state, "round", dict),
                                                                   stored.strokes, stored.age)
    if data is not None:
        events = [e for e in stored.events if isinstance(e, dict)]
        for event in events:
            transcript.add_event(event)
        transcript.dropped += max(0, int(data.get("events", 0)) - len(events))  # cut to fit the bound
    transcript.add("taken_over", session.round.round_id if session.round else None, session._now(),
                   stored_age_s=round(stored.age, 3))


async def _restore_round(session: BotSession, data: Frame, strokes: list[Any], age: float) -> Round:
    try:
        level = load_level(_field(data, "difficulty", str))
    except AILevelError as error:
        raise BadMemory(f"stored bot room: {error}") from error
    pace = "instant" if data.get("pace") == "instant" else "human"
    candidates = data.get("candidates")
    if candidates is not None and not (isinstance(candidates, list)
                                       and all(isinstance(c, str) for c in candidates)):
        raise BadMemory("stored bot room: 'candidates' is not a list of words")
    said = [_Said(int(i), str(k), str(t)) for i, k, t in _field(data, "said", list)]
    heard = {str(w) for w in _field(data, "heard", list)}
    gestures = [(str(kind), str(word)) for kind, word in _field(data, "gestures", list)]
    duration = float(_field(data, "duration_s", (int, float)))
    seed = _field(data, "seed", int)
    elapsed = max(0.0, float(_field(data, "elapsed_s", (int, float)))) + age
    recognizer = session.shared.guesser.session(candidates, top_k=ANALYSIS_TOP)

    def stage_all() -> Any:
        """Every stroke staged again (no inference), the last one's views for the model."""
        for stroke in strokes[:-1]:
            recognizer.stage(stroke)
            recognizer.commit(None)
        return recognizer.stage(strokes[-1])

    if strokes:
        try:
            probs = await session.shared.inference.recognize(stage_all, key=session.budget_key)
        except DrawingError as error:
            raise BadMemory(f"stored bot room: its drawing is refused: {error}") from error
        except (Overloaded, ServiceError):  # read with the next stroke
            probs = None
        recognizer.commit(probs)
    reaction = data.get("reaction_s")
    reaction_s = float(reaction) if isinstance(reaction, int | float) and 0 <= reaction <= 10 else None
    tuned = policy_level(level.kontour_guesser, pace, reaction_s)
    policy = KontourGuesser(
        level=tuned, rng=random.Random(f"{seed}:{len(said)}:{len(strokes)}"), to_french=session._word,
        related=session.related, candidates=candidates, turn_length=duration,
        pause_s=tuned.reaction_s if pace == "human" else None,
    )
    policy.new_turn(0.0, candidates)
    policy.said = [s.key for s in said]  # never said again
    for word in heard:
        policy.heard(word)
    for kind, word in gestures:
        policy.gesture(kind, word)
    rnd = Round(data.get("round"), str(data.get("game", "")), str(data.get("language", "fr")), level.name,
                candidates, duration, seed, session.clock() - elapsed, recognizer, policy, pace)
    rnd.strokes = [list(map(list, s)) for s in strokes]
    rnd.stroke_texts = [stroke_text(s) for s in rnd.strokes]
    rnd.stroke_points = [len(s[0]) for s in strokes]
    rnd.heard, rnd.said, rnd.gestures = heard, said, gestures
    rnd.found_by = data.get("found_by") if isinstance(data.get("found_by"), str) else None
    spelling, siblings = data.get("spelling") or {}, data.get("siblings") or {}
    if not isinstance(spelling, dict) or not isinstance(siblings, dict):
        raise BadMemory("stored bot room: 'spelling' or 'siblings' is not a mapping")
    rnd.spelling = {str(k): str(v) for k, v in spelling.items()}
    rnd.siblings = {str(k): tuple(str(w) for w in v) for k, v in siblings.items() if isinstance(v, list)}
    rnd.silent = data.get("silent") is True
    rnd.reaction_s = reaction_s
    hold = data.get("hold_s")
    rnd.hold_s = float(hold) if isinstance(hold, int | float) and 0 <= hold <= 600 else 0.0
    rnd.events_from = len(session.transcript.events)  # this round's events follow
    probs_now = recognizer.probabilities()
    if probs_now:
        policy.observe(probs_now, elapsed, strokes=recognizer.stroke_count)
    return rnd
