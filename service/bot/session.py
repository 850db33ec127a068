"""One bot session's state: rounds, the live recognizer session, the AI policy, the transcript.

The policy is the Kontour AI guesser of ``games.ai`` (when to speak, never the same word twice,
difficulty levels); this module feeds it the recognizer's probabilities after each stroke and
asks it, on every tick of a real clock (injected, so tests may drive it), whether to speak.
Inference goes through the app's shared :class:`service.inference.BatchInference`, with the
session's id as the key of its fair share of the preprocessing threads and of its point budget.

Paces: `service.bot.pace` (a single line is enough once the drawer paused for ``reaction_s``).
A session outlives its socket when the room may resume it (version 2): :meth:`BotSession.detach`,
then ``on_hello(..., resumed=True)``. The bot's drawing turn: `service.bot.drawing`.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from games.ai import AILevelError, KontourGuesser, load_level
from games.ai.base import Related, no_relations
from model.strokes import DrawingError
from service.bot import drawing
from service.bot.kept_strokes import erase_region, stroke_text
from service.bot.pace import policy_level
from service.bot.protocol import (
    PACES,
    PROTOCOL,
    DrawTurn,
    Erase,
    Hello,
    PlayerGuess,
    RoundEnd,
    RoundStart,
    Verdict,
    negotiate,
    version_2_fields,
)
from service.bot.transcript import Transcript
from service.bot.word_index import CandidateList, WordIndex
from service.errors import ServiceError
from service.frames import FrameError
from service.inference import Overloaded
from service.shared import Shared
from store import DrawingRecord

Frame = dict[str, Any]
ANALYSIS_TOP = 3


@dataclass
class _Said:
    guess_id: int
    key: str
    text: str


@dataclass
class Round:
    """The state of the round in progress."""

    round_id: Any
    game: str
    language: str
    difficulty: str
    candidates: list[str] | None
    duration_s: float
    seed: int
    t0: float
    session: Any  # model.GuessSession
    policy: KontourGuesser
    pace: str = "human"
    open_stroke: list[list[float]] | None = None
    stroke_points: list[int] = field(default_factory=list)  # points of each stroke on the canvas
    strokes: list[list[list[float]]] = field(default_factory=list)  # as sent, with the round's time
    stroke_texts: list[str] = field(default_factory=list)  # each stroke as JSON (service.bot.memory)
    heard: set[str] = field(default_factory=set)  # wrong words said by other players
    said: list[_Said] = field(default_factory=list)
    gestures: list[tuple[str, str]] = field(default_factory=list)
    found_by: str | None = None
    spelling: dict[str, str] = field(default_factory=dict)  # label → the candidate as the room sent it
    siblings: dict[str, tuple[str, ...]] = field(default_factory=dict)  # label → its candidate's labels
    silent: bool = False  # no candidate names a label: the bot watches and never speaks
    reaction_s: float | None = None  # the room's reading time (round_start.reaction_s)
    hold_s: float = 0.0  # the bot says nothing before this long after the round's start
    events_from: int = 0  # the transcript's events before this round's (service.bot.memory)


class BotSession:
    """The bot behind one WebSocket: call the ``on_*`` methods with parsed frames; each returns
    the frames to send back. :meth:`tick` returns a ``guess`` frame when the policy speaks."""

    def __init__(
        self, shared: Shared, session_id: str, clock: Callable[[], float] = time.monotonic,
        related: Related = no_relations, words: WordIndex | None = None,
    ) -> None:
        self.shared = shared
        self.settings = shared.settings
        self.id = session_id
        self.clock = clock
        self.related = related
        self.words = words or WordIndex(shared.guesser.labels, shared.vocabulary.lookup)
        self.version: int | None = None
        self.analysis = False
        self.y = "down"  # which way the room's y axis points ("up": flipped on the way in)
        self.resume_token = secrets.token_urlsafe(24)
        self.detached_at: float | None = None  # when the socket was lost (None: attached)
        self.released = asyncio.Event()  # set while no socket holds it (lost, or the session ended)
        self.moved = False  # another replica drives this room now (service.replicas): never written again
        self.round: Round | None = None
        self.transcript = Transcript(session_id, None, None, self.settings.bot.transcript_bytes)
        self.budget_key = f"bot:{session_id}"
        self._next_guess_id = 1
        self.artist: Any = None  # the AI drawer of this session's drawing turns (made on the first)

    # -- handshake and rounds ------------------------------------------------------------------
    def on_hello(self, frame: Hello, resumed: bool = False) -> list[Frame]:
        """Version negotiation (the highest version both sides speak) and the welcome; ``resumed``:
        this session lost its socket and the room takes it back (version 2)."""
        self.version = negotiate(frame)
        self.analysis = frame.analysis
        self.y = frame.y or "down"
        if not resumed:
            self.transcript.room, self.transcript.name = frame.room, frame.name
        welcome: Frame = {
            "type": "welcome", "protocol": PROTOCOL, "version": self.version, "session": self.id,
            "transcript": f"/v1/bot/sessions/{self.id}?key={self.transcript.key}",
            "transcript_key": self.transcript.key, "levels": _level_names(),
            "limits": self._limits(),
        }
        if self.version < 2:
            return [welcome]
        self.resume_token = secrets.token_urlsafe(24)  # a new one at every welcome
        welcome |= {"resume_token": self.resume_token, "resumed": resumed, "y": self.y, "paces": list(PACES),
                    "draws": True}
        if resumed and self.round is not None:
            rnd = self.round
            welcome["round"] = {"round": rnd.round_id, "strokes": rnd.session.stroke_count,
                                "said": [s.text for s in rnd.said], "open_stroke": False}
        if resumed:
            self.transcript.add("resumed", self.round.round_id if self.round else None, self._now())
        return [welcome]

    def resumable_with(self, token: str) -> bool:
        """Whether this session lost its socket and ``token`` is its resume token (constant time)."""
        return self.detached_at is not None and self.holds_token(token)

    def holds_token(self, token: str) -> bool:
        """Whether ``token`` is this session's resume token (constant time), socket lost or not."""
        return secrets.compare_digest(token.encode(), self.resume_token.encode())

    def detach(self, now: float) -> None:
        """The socket was lost without ``bye``: keep the session for a resume (an open stroke is dropped)."""
        self.detached_at = now
        self.released.set()
        if self.round is not None:
            self.round.open_stroke = None
        self.transcript.add("detached", self.round.round_id if self.round else None, self._now())

    def hand_over(self) -> bool:
        """Another replica drives this room from now on: this copy writes nothing more. False when it
        already was handed over."""
        if self.moved:
            return False
        self.moved = True
        return True

    def attach(self) -> None:
        """A room took this session back."""
        self.detached_at = None
        self.released.clear()

    def _limits(self) -> Frame:
        s = self.settings
        return {
            "max_points": s.max_points, "max_stroke_points": s.max_stroke_points,
            "max_strokes": s.max_strokes, "points_per_s": s.client_points_per_s,
            "max_frame_bytes": s.max_frame_bytes, "max_message_rate": s.max_message_rate,
            "max_message_burst": s.max_message_burst, "idle_timeout_s": s.bot.idle_timeout_s,
        }

    def on_round_start(self, frame: RoundStart) -> list[Frame]:
        """Start a round (replacing any round still open: version 2 sends its ``round_over`` first)."""
        if self.version == 1 and (fields := version_2_fields(frame)):
            raise FrameError("invalid_frame", f"round_start: {', '.join(fields)} needs protocol version 2",
                             frame.id)
        read = self.read_candidates(frame.candidates, frame.language)
        candidates = read.labels if read is not None else None
        silent = candidates == []  # not one word the model can guess: it watches, never speaks
        if silent:
            candidates = None
        try:
            level = load_level(frame.difficulty)
        except AILevelError as error:
            raise FrameError("unknown_difficulty", str(error), frame.id) from error
        frames: list[Frame] = []
        if self.round is not None:
            old = self.round
            self._close_round("replaced", None)
            if self.version is not None and self.version >= 2:
                frames.append(self._round_over(old, "replaced"))
        pace = frame.pace or "human"
        seed = frame.seed if frame.seed is not None else secrets.randbelow(2**31)
        tuned = policy_level(level.kontour_guesser, pace, frame.reaction_s)
        policy = KontourGuesser(
            level=tuned, rng=random.Random(seed), to_french=self._word, related=self.related,
            candidates=candidates, turn_length=frame.duration_s,
            pause_s=tuned.reaction_s if pace == "human" else None,
        )
        policy.new_turn(0.0, candidates)
        self.round = Round(
            frame.round, frame.game, frame.language, level.name, candidates, frame.duration_s,
            seed, self.clock(), self.shared.guesser.session(candidates, top_k=ANALYSIS_TOP), policy, pace,
        )
        if read is not None:
            self.round.spelling, self.round.siblings, self.round.silent = read.spelling, read.siblings, silent
        self.round.reaction_s, self.round.hold_s = frame.reaction_s, frame.hold_s or 0.0
        self.round.events_from = len(self.transcript.events)
        self.transcript.rounds += 1
        self.transcript.add(
            "round_start", frame.round, 0.0, game=frame.game, language=frame.language,
            difficulty=level.name, candidates=candidates, seed=seed, duration_s=frame.duration_s, pace=pace,
            **({"unknown": read.unknown} if read is not None and read.unknown else {}),
            **({"reaction_s": frame.reaction_s} if frame.reaction_s is not None else {}),
            **({"hold_s": frame.hold_s} if frame.hold_s is not None else {}),
        )
        count = None if read is None else len(set(read.spelling.values()))
        ready: Frame = {"type": "round_ready", "round": frame.round, "difficulty": level.name,
                        "candidates": count, "seed": seed}
        if self.version != 1:
            ready["pace"] = pace
            if read is not None:
                ready["unknown"] = read.unknown
            for name in ("reaction_s", "hold_s"):
                if getattr(frame, name) is not None:
                    ready[name] = getattr(frame, name)
        return [*frames, ready]

    def read_candidates(self, candidates: list[str] | None, language: str) -> CandidateList | None:
        """A round's candidates read by the word rule (``service.bot.word_index``): the labels to guess
        among, the room's spelling of each, and the words the model cannot guess (ignored)."""
        if candidates is None:
            return None
        return self.words.candidates(candidates, language)

    def round_drawing(self, answer: str | None) -> DrawingRecord | None:
        """The drawing of the round in progress, for the database, when the room said
        ``drawing_consent``: its strokes (``t`` in ms from its first point; the round's clock
        where the room sent no times), the answer's category, how it was drawn. None without a
        drawing or an answer the model knows."""
        rnd = self.round
        key = self.words.key(answer, rnd.language) if rnd is not None and answer else None
        if rnd is None or key is None or not rnd.strokes:
            return None
        start = min((s[2][0] for s in rnd.strokes if s[2]), default=0.0)
        strokes = [[s[0], s[1], [max(0.0, t - start) for t in s[2]]] for s in rnd.strokes]
        last = 0.0
        for stroke in strokes:  # times never go back, even where a room's clock did
            for i, t in enumerate(stroke[2]):
                stroke[2][i] = last = max(t, last)
        conditions = {"style": "free", "room_game": rnd.game, "timer_s": rnd.duration_s,
                      "found": rnd.found_by is not None, "language": rnd.language}
        return DrawingRecord(word=key, game="room", strokes=strokes, conditions=conditions,
                             recognized=rnd.found_by is not None)

    def on_round_end(self, frame: RoundEnd) -> list[Frame]:
        """Close the round and report what the bot said."""
        rnd = self._require_round(frame.id)
        self._close_round("round_end", frame.answer)
        return [self._round_over(rnd, "round_end")]

    def _round_over(self, rnd: Round, why: str) -> Frame:
        over = {"type": "round_over", "round": rnd.round_id, "said": [s.text for s in rnd.said],
                "strokes": rnd.session.stroke_count}
        return over | ({"why": why} if self.version is not None and self.version >= 2 else {})

    def _close_round(self, why: str, answer: str | None) -> None:
        rnd = self.round
        assert rnd is not None
        self.transcript.add("round_end", rnd.round_id, self._now(), why=why, answer=answer,
                            found_by=rnd.found_by, said=[s.text for s in rnd.said])
        self.round = None

    # -- drawing ------------------------------------------------------------------------------
    def on_stroke_start(self, x: float, y: float, t: float | None, ref: Any) -> None:
        """Open a stroke at one point."""
        rnd = self._require_round(ref)
        if rnd.open_stroke is not None:
            raise FrameError("stroke_open", "a stroke is already open: send stroke_end first", ref)
        rnd.open_stroke = [[x], [self._down(y)]] + ([[t]] if t is not None else [])
        rnd.policy.pen_down()

    def on_points(self, xs: list[float], ys: list[float], ts: list[float] | None, ref: Any) -> None:
        """Append points to the open stroke."""
        rnd = self._require_round(ref)
        stroke = rnd.open_stroke
        if stroke is None:
            raise FrameError("no_stroke", "no stroke is open: send stroke_start first", ref)
        if len(xs) != len(ys) or (ts is not None and len(ts) != len(xs)):
            raise FrameError("invalid_frame", "points: x, y (and t) must have the same length", ref)
        limit = self.settings.max_stroke_points
        if len(stroke[0]) + len(xs) > limit:
            raise FrameError("too_many_points", f"a stroke holds at most {limit} points", ref)
        stroke[0].extend(xs)
        stroke[1].extend(ys if self.y == "down" else [-y for y in ys])
        if len(stroke) == 3:
            stroke[2].extend(ts if ts is not None else [stroke[2][-1]] * len(xs))

    async def on_stroke_end(self, ref: Any) -> list[Frame]:
        """Close the open stroke and look at the drawing."""
        rnd = self._require_round(ref)
        if rnd.open_stroke is None:
            raise FrameError("no_stroke", "no stroke is open: send stroke_start first", ref)
        stroke, rnd.open_stroke = rnd.open_stroke, None
        return await self.add_stroke(stroke, ref, flipped=True)

    async def add_stroke(self, stroke: list[list[float]], ref: Any, flipped: bool = False) -> list[Frame]:
        """Add a whole stroke: validate and rasterise (thread pool), classify (shared batcher).
        ``flipped``: its y already points down (a streamed stroke)."""
        rnd = self._require_round(ref)
        if self.y == "up" and not flipped:
            stroke = [stroke[0], [-y for y in stroke[1]], *stroke[2:]]
        started = time.perf_counter()
        self._check_size(rnd, len(stroke[0]), ref)
        elapsed_ms = round((self.clock() - rnd.t0) * 1000.0, 1)
        metrics = self.shared.metrics
        metrics.strokes.labels(source="bot").inc()
        try:
            self.shared.spend_points(self.budget_key, len(stroke[0]))
            probs = await self.shared.inference.recognize(rnd.session.stage, stroke, key=self.budget_key)
        except DrawingError as error:
            raise FrameError("bad_drawing", str(error), ref) from error
        except ServiceError as error:  # over the session's points or CPU budget
            metrics.refused(error.code)
            raise FrameError(error.code, error.message, ref) from error
        except Overloaded as error:
            metrics.refused("overloaded")
            self._keep_stroke(rnd, stroke, elapsed_ms)
            rnd.session.commit(None)  # the stroke stays; the next one is classified with it
            raise FrameError("overloaded", str(error), ref) from error
        if probs is not None:
            metrics.guesses.labels(source="bot").inc()
            metrics.guess_time.labels(source="bot").observe(time.perf_counter() - started)
        self._keep_stroke(rnd, stroke, elapsed_ms)
        if self.round is not rnd:  # the round ended while the model was busy
            return []
        rnd.session.commit(probs)
        frames = self._after_change(rnd, "stroke", started, points=len(stroke[0]))
        metrics.stroke_ack.labels(source="bot").observe(time.perf_counter() - started)
        return frames

    @staticmethod
    def _keep_stroke(rnd: Round, stroke: list[list[float]], elapsed_ms: float) -> None:
        """Record a valid stroke in the round (its points, and its times: the client's or ours)."""
        rnd.stroke_points.append(len(stroke[0]))
        rnd.strokes.append([list(stroke[0]), list(stroke[1]),
                            list(stroke[2]) if len(stroke) > 2 else [elapsed_ms] * len(stroke[0])])
        rnd.stroke_texts.append(stroke_text(rnd.strokes[-1]))

    def _check_size(self, rnd: Round, points: int, ref: Any) -> None:
        limit_strokes, limit_points = self.settings.max_strokes, self.settings.max_points
        if points > self.settings.max_stroke_points:
            raise FrameError("too_many_points", f"a stroke holds at most {self.settings.max_stroke_points} "
                             "points", ref)
        if rnd.session.stroke_count >= limit_strokes:
            raise FrameError("too_many_strokes", f"a drawing holds at most {limit_strokes} strokes", ref)
        if sum(rnd.stroke_points) + points > limit_points:
            raise FrameError("too_many_points", f"a drawing holds at most {limit_points} points", ref)

    def on_undo(self, ref: Any) -> list[Frame]:
        """Remove the last stroke (no inference: the session remembers earlier probabilities)."""
        rnd = self._require_round(ref)
        rnd.open_stroke = None
        if rnd.session.stroke_count == 0:
            return []
        rnd.stroke_points.pop()
        if rnd.strokes:
            rnd.strokes.pop()
            rnd.stroke_texts.pop()
        rnd.session.undo()
        if rnd.session.stroke_count == 0:
            return self.on_clear(ref)
        return self._after_change(rnd, "undo", time.perf_counter())

    async def on_erase(self, frame: Erase) -> list[Frame]:
        """The drawer erased one stroke or a region: the drawing is read again without it (the
        bot keeps what it believed, as after an undo); nothing erased, nothing done."""
        rnd = self._require_round(frame.id)
        if (frame.stroke is None) == (frame.region is None):
            raise FrameError("invalid_frame", "erase: give either stroke or region", frame.id)
        if rnd.open_stroke is not None:
            raise FrameError("stroke_open", "a stroke is open: send stroke_end before erasing", frame.id)
        if frame.stroke is not None:
            if frame.stroke >= len(rnd.strokes):
                raise FrameError("no_stroke", f"no stroke {frame.stroke} on the canvas "
                                 f"({len(rnd.strokes)} strokes)", frame.id)
            kept = rnd.strokes[:frame.stroke] + rnd.strokes[frame.stroke + 1:]
        else:
            region = frame.region
            assert region is not None
            y0, y1 = (region.y, region.y + region.h)
            if self.y == "up":  # the strokes are kept with y pointing down
                y0, y1 = -y1, -y0
            kept = erase_region(rnd.strokes, region.x, region.x + region.w, y0, y1)
            if kept == rnd.strokes:
                return []
            if len(kept) > self.settings.max_strokes:
                raise FrameError("too_many_strokes", "this erase would cut the drawing into more than "
                                 f"{self.settings.max_strokes} strokes", frame.id)
        if not kept:
            return self.on_clear(frame.id)
        started = time.perf_counter()
        recognizer = rnd.session

        def stage_all() -> Any:
            """The drawing staged again from its first stroke (in the preprocessing threads)."""
            recognizer.clear()
            for stroke in kept[:-1]:
                recognizer.stage(stroke)
                recognizer.commit(None)
            return recognizer.stage(kept[-1])

        try:
            self.shared.spend_points(self.budget_key, sum(len(s[0]) for s in kept))
            probs = await self.shared.inference.recognize(stage_all, key=self.budget_key)
        except Overloaded:
            probs = None  # staged: read again with the next stroke
        except DrawingError as error:
            raise FrameError("bad_drawing", f"the erased drawing cannot be read: {error}",
                             frame.id) from error
        except ServiceError as error:  # over the session's budget, before any work: nothing erased
            raise FrameError(error.code, error.message, frame.id) from error
        rnd.stroke_points[:] = [len(stroke[0]) for stroke in kept]
        rnd.strokes[:] = kept
        rnd.stroke_texts[:] = [stroke_text(stroke) for stroke in kept]
        if self.round is not rnd:
            return []
        recognizer.commit(probs)
        return self._after_change(rnd, "erase", started)

    def on_draw_turn(self, frame: DrawTurn) -> list[drawing.Step]:
        """The bot's turn to draw ``frame.word``: the timed frames of a real drawing of it;
        `drawing.Declined` when it names nothing the bot can draw."""
        if self.artist is None:
            self.artist = drawing.drawer(frame.seed if frame.seed is not None else secrets.randbelow(2**31))
        elif frame.seed is not None:
            self.artist.rng.seed(frame.seed)
        categories = self.words.lookup.categories(frame.word, frame.language)
        try:
            key = drawing.choose(self.artist, categories, frame.word)
            steps = drawing.plan(self.artist, key, frame.turn, frame.word, frame.width, frame.height,
                                 frame.duration_s, y_up=self.y == "up")
        except drawing.Declined as declined:
            self.transcript.add("draw_declined", frame.turn, None, word=frame.word, reason=declined.reason)
            raise
        self.transcript.add("draw_turn", frame.turn, None, word=frame.word, label=key,
                            strokes=steps[0].frame["strokes"], duration_s=steps[0].frame["duration_s"])
        return steps

    def on_clear(self, ref: Any) -> list[Frame]:
        """Empty canvas: the policy forgets what it saw, but never repeats a word of this round."""
        rnd = self._require_round(ref)
        rnd.open_stroke = None
        rnd.stroke_points.clear()
        rnd.strokes.clear()
        rnd.stroke_texts.clear()
        rnd.session.clear()
        old = rnd.policy
        rnd.policy = KontourGuesser(
            level=old.level, rng=old.rng, to_french=old.to_french, related=old.related,
            candidates=rnd.candidates, turn_length=rnd.duration_s, pause_s=old.pause_s,
        )
        rnd.policy.new_turn(0.0, rnd.candidates)
        for key in set(old.said) | rnd.heard:
            rnd.policy.heard(key)
        for kind, key in rnd.gestures:
            rnd.policy.gesture(kind, key)
        self.transcript.add("clear", rnd.round_id, self._now())
        return []

    def _after_change(self, rnd: Round, kind: str, started: float, **extra: Any) -> list[Frame]:
        now = self._now()
        probs = rnd.session.probabilities()
        if probs:
            rnd.policy.observe(probs, now, strokes=rnd.session.stroke_count)
        top = [{"label": g.label, "word": self.shared.french_word(g.label), "prob": round(g.prob, 4)}
               for g in rnd.session.guesses()[:ANALYSIS_TOP]]
        self.transcript.add(kind, rnd.round_id, now, strokes=rnd.session.stroke_count,
                            top=[[g["label"], g["prob"]] for g in top], **extra)
        if not self.analysis:
            return []
        ms = round((time.perf_counter() - started) * 1000, 2)
        return [{"type": "analysis", "round": rnd.round_id, "strokes": rnd.session.stroke_count,
                 "top": top, "ms": ms}]

    # -- other players and verdicts --------------------------------------------------------------
    def on_player_guess(self, frame: PlayerGuess) -> list[Frame]:
        """Another player's guess: a wrong word is never said; a right one ends the bot's turn."""
        rnd = self._require_round(frame.id)
        keys = self.words.keys(frame.text, rnd.language)
        key = keys[0] if len(keys) == 1 else None
        if frame.correct:
            rnd.found_by = rnd.found_by or frame.player
        else:
            for word in self._wrong(rnd, keys):
                rnd.heard.add(word)
                rnd.policy.heard(word)
        self.transcript.add("player_guess", rnd.round_id, self._now(), player=frame.player,
                            text=frame.text, key=key, correct=frame.correct)
        return []

    def _wrong(self, rnd: Round, keys: tuple[str, ...]) -> tuple[str, ...]:
        """The labels a player's wrong word rules out: the one it names; a word naming several
        (« phone ») rules out a candidate read the same way (the room's « phones »), not each
        category (the answer may be the « telephone » candidate)."""
        if len(keys) <= 1:
            return keys
        return tuple(k for k in keys if rnd.spelling.get(k) is not None
                     and self.words.keys(rnd.spelling[k], rnd.language) == keys)

    def on_verdict(self, frame: Verdict) -> list[Frame]:
        """The room judged one of the bot's guesses (and the drawer may have gestured)."""
        rnd = self._require_round(frame.id)
        said = next((s for s in rnd.said if s.guess_id == frame.guess_id), None)
        if said is None:
            raise FrameError("unknown_guess", f"no guess {frame.guess_id} in this round", frame.id)
        if frame.correct:
            rnd.found_by = rnd.found_by or "bot"
        if frame.gesture is not None:
            rnd.gestures.append((frame.gesture, said.key))
            rnd.policy.gesture(frame.gesture, said.key)
        self.transcript.add("verdict", rnd.round_id, self._now(), guess_id=frame.guess_id,
                            correct=frame.correct, gesture=frame.gesture)
        return []

    # -- speaking ---------------------------------------------------------------------------------
    def tick(self) -> Frame | None:
        """Ask the policy whether to speak now; a ``guess`` frame if it does."""
        rnd = self.round
        if rnd is None or rnd.found_by is not None or rnd.silent or rnd.session.stroke_count == 0:
            return None
        now = self._now()
        if now < rnd.hold_s:  # the people at the table have a go first
            return None
        say = rnd.policy.decide(now)
        if say is None:
            return None
        text = rnd.spelling.get(say.key) or (say.word if rnd.language == "fr" else say.key)
        for sibling in rnd.siblings.get(say.key, ()):  # the candidate is said: its other labels too
            if sibling != say.key:
                rnd.heard.add(sibling)
                rnd.policy.heard(sibling)
        said = _Said(self._next_guess_id, say.key, text)
        self._next_guess_id += 1
        rnd.said.append(said)
        self.transcript.guesses += 1
        self.transcript.add("guess", rnd.round_id, now, guess_id=said.guess_id, label=say.key,
                            text=text, prob=round(say.prob, 4), strokes=rnd.session.stroke_count)
        return {"type": "guess", "round": rnd.round_id, "guess_id": said.guess_id, "text": text,
                "label": say.key, "word": say.word, "prob": round(say.prob, 4),
                "at_s": round(now, 3), "strokes": rnd.session.stroke_count}

    def close(self) -> None:
        """The connection ended: close the transcript."""
        self.released.set()
        if self.round is not None:
            self._close_round("disconnected", None)
        self.transcript.ended_at = time.time()

    # -- helpers ----------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.clock() - self.round.t0 if self.round is not None else 0.0

    def _require_round(self, ref: Any) -> Round:
        if self.round is None:
            raise FrameError("no_round", "no round in progress: send round_start first", ref)
        return self.round

    def _down(self, y: float) -> float:
        return y if self.y == "down" else -y

    def _word(self, key: str) -> str:
        return self.shared.french_word(key)



def _level_names() -> list[str]:
    from games.ai import level_names

    return level_names()
