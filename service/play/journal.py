"""Tables in the database: each game's setup and move log, its end, and its return after a restart.

A game is stored as what it was set up with (players, names, seed, the dealt deck, the rules
config, the AI level, the consent switch) and its move log; the engines are pure, so replaying the
log through the same rules gives back the very same state (`games.core`). The session calls
`Journal.record` in its one update path (`GameSession.apply`), after the rules accepted a move:
every move is logged, the person's, the AI players' and the timer's (`Tick`).

**Stored before shown.** `record` hands the move to the store's one writer thread
(`store.group_commit.MoveWriter`: group commit, off the event loop, whatever the backend) and
returns its future; the session holds the move's frame until the future is done
(`GameSession.release`), so nobody sees a move the database does not have. When the database
cannot write (disk full, PostgreSQL down), the writer keeps every move and tries again with
back-off; the table pauses (`GameSession.pause`: the person is told, the AI players and the timers
wait) and goes on by itself once its moves are written. Nothing is dropped and no game is marked
abandoned for a failed write. A move the database refuses for good (`MoveRejected`: another server
writes the game) closes the table with a message: it can no longer be kept.

`GameSession.replay` brings a stored game back: the session is built from the setup exactly as a new one is,
every logged move is applied again at its logged time (the AI driver hears every event, as live),
the game clock goes on from the last move (timers pause while the server is down) and the AI
players resume (`driver.resume`). The page reconnects with the same id and token (only the
token's SHA-256 is stored).

Learning from play (opt-in): when the person ticked the consent switch, each drawing they finish —
a Kontour turn they drew, their Pictomania drawing of a round — is stored with its word and how it
was drawn (`store.DrawingRecord`; never an AI drawing, nothing about the person), off the event
loop (the shared `store.background.BackgroundWriter`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

from games.core import Event, Move
from service.play.views import HUMAN
from store import DrawingRecord, Encoded, StoreError
from store.background import BackgroundWriter
from store.group_commit import MoveWriter

log = logging.getLogger("griffon.play")


class Journal:
    """One game's record in the database: its moves as they are applied, its end, and (with the
    person's consent) the drawings they finish."""

    def __init__(
        self, writer: MoveWriter, game_id: str, kind: str, setup: dict[str, Any],
        drawings: BackgroundWriter | None,
    ) -> None:
        self.writer, self.id, self.kind, self.setup, self.drawings = writer, game_id, kind, setup, drawings
        self.learn = bool(setup.get("learn")) and drawings is not None
        self.writing = True  # False while a stored game is replayed (`replaying`)
        self.ended = False
        self.strokes: list[tuple[float, Any]] = []  # the person's strokes being drawn: (time, points)

    def record(
        self, session: Any, move: Move, encoded: Encoded, now: float, events: list[Event]
    ) -> Future[None] | None:
        """A move the rules accepted (its number: ``session.moves``; ``encoded``: its stored form):
        hand it to the writer, follow the person's drawing, close the game when it is over.
        Returns the write's future (None when nothing is written: a replay, a game already ended)."""
        stored = None
        if self.writing and not self.ended:
            stored = self.writer.submit(self.id, session.moves, now, encoded)
        self.follow(session, move, now, events)
        if session.state.phase == "game_over" and self.writing:
            self.end("finished", result(session.state))
        return stored

    @contextlib.contextmanager
    def replaying(self) -> Iterator[None]:
        """While a stored game is replayed: its drawings followed, nothing written."""
        self.writing = False
        try:
            yield
        finally:
            self.writing = True

    def full(self) -> bool:
        """Whether the writer's queue is full (a move applied now could not be handed over)."""
        return self.writer.pending >= self.writer.queue.maxsize - 1

    def failing(self) -> StoreError | None:
        """The database's last error while it cannot write (the writer is trying again), else None."""
        return self.writer.failing

    def end(self, status: str, outcome: dict[str, Any] | None = None) -> None:
        """The game is over (``finished``) or was closed (``expired``): it is not resumed again.
        Written after its moves (the writer keeps the order, and tries again while the database
        cannot write). Shutting the server down does not end games."""
        if self.ended:
            return
        self.ended = True
        try:
            self.writer.submit_end(self.id, status, outcome)
        except StoreError as error:  # the writer is closed (shutting down): the game stays `playing`
            log.warning("game %s: its end (%s) was not stored: %s", self.id, status, error)

    # -- the person's drawings (consent only) -------------------------------------------------------
    def follow(self, session: Any, move: Move, now: float, events: list[Event]) -> None:
        """Keep the person's strokes of the drawing in progress with their times; store the
        drawing when it is finished (Kontour: the turn they drew ends; Pictomania: the round is
        scored)."""
        if not self.learn:
            return
        player = getattr(move, "player", None)
        if player == HUMAN and move.kind == "stroke":
            self.strokes.append((now, move.points))  # type: ignore[attr-defined]
        elif player == HUMAN and move.kind == "undo" and self.strokes:
            self.strokes.pop()
        elif player == HUMAN and move.kind == "clear":
            self.strokes = []
        for event in events:
            if event.kind in ("turn_started", "round_started"):
                self.strokes = []
            elif event.kind == "turn_ended" and event.drawer == HUMAN:  # type: ignore[attr-defined]
                self._kontour_drawing(session, event)
            elif event.kind == "round_scored":
                self._pictomania_drawing(session)

    def _kontour_drawing(self, session: Any, event: Any) -> None:
        strokes, self.strokes = self.strokes, []
        if not strokes or not event.word or not self.writing:
            return
        summary = session.state.history[-1] if session.state.history else None
        conditions = {
            "style": "lines",
            "timer_s": session.rules.config.timer_s,
            "max_strokes": session.rules.config.max_strokes,
            "level": self.setup.get("level"),
            "found": bool(event.finders),
            "found_after_s": getattr(summary, "found_after_s", None),
            "players": len(session.state.players),
        }
        self._save(event.word, strokes, conditions, bool(event.finders))

    def _pictomania_drawing(self, session: Any) -> None:
        strokes, self.strokes = self.strokes, []
        state = session.state
        if not strokes or not state.results or not self.writing:
            return
        last = state.results[-1]
        word = last.words.get(HUMAN)
        found = sum(1 for o in last.outcomes.get(HUMAN, ()) if o.correct)
        conditions = {
            "style": "free",
            "timer_s": session.rules.config.round_timer_s,
            "round": last.number,
            "card_level": last.level,
            "level": self.setup.get("level"),
            "found": found > 0,
            "found_by": found,
            "players": len(state.players),
        }
        if word:
            self._save(word, strokes, conditions, found > 0)

    def _save(self, word: str, strokes: list[tuple[float, Any]], conditions: dict[str, Any],
              recognized: bool) -> None:
        assert self.drawings is not None
        start = strokes[0][0]
        raw = []
        for at, points in strokes:  # the page sends whole strokes: every point has its stroke's time
            t = round((at - start) * 1000.0, 1)
            raw.append([[float(p[0]) for p in points], [float(p[1]) for p in points], [t] * len(points)])
        self.drawings.add_drawing(DrawingRecord(word=word, game=self.kind, strokes=raw, conditions=conditions,
                                         recognized=recognized, owner_hash=self.setup.get("owner") or ""))


def result(state: Any) -> dict[str, Any]:
    """What a finished game is stored with: the winners and the scores."""
    scores = getattr(state, "scores", None) or getattr(state, "totals", {})
    return {"winners": list(state.winners), "scores": dict(scores)}


def state_clock(state: Any) -> float:
    """The game clock of a state (seconds)."""
    return float(getattr(state, "clock", 0.0))
