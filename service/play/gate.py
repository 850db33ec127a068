"""Stored before shown: a table's moves wait for the database before anyone sees them.

With a database, a move's frames are held (`Gate.hold`) until the store's writer says the move is
written; the state runs ahead, what the sockets see (`Gate.shown`) follows the database. While the
database cannot write, the table pauses (`GameSession.pause`): the person is told (a ``paused``
frame), their moves are refused (`TablePaused`), the AI players and the timers wait, and the game
clock stops — a pause never eats a turn's or a round's time; the rules see a clock that did not
count it. Once the held moves are written the table resumes by itself (``resumed``). A move the
database refuses for good (another server writes the game) loses the table (`Gate.lost`).

The gate keeps the account (the held moves, the pause); the session sends the frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from games.core import Event, RuleError
from service.play.journal import Journal

PAUSE_AFTER_S = 2.0  # a move not written after this long pauses the table (a database that hangs)
PAUSED_MESSAGE = "Sauvegarde impossible — nouvel essai…"  # what the page shows while the table waits
LOST_MESSAGE = "Cette partie ne peut plus être enregistrée : elle s'arrête ici."


class TablePaused(RuleError):
    """The table waits for the database: no move until its held moves are written."""

    code = "paused"


@dataclass
class Held:
    """A move applied but not yet written: its frame waits (`GameSession.release`)."""

    seq: int
    state: Any  # the state after the move
    frames: dict[str, dict[str, Any]]  # its update frame per seat with a socket then (others: a full frame)
    events: list[Event]  # its events (each seat is sent those it may see)
    stored: Future[None] | None  # the write (None: nothing to write, e.g. after the game's end)
    since: float  # time.monotonic() when it was applied
    stroke: bool  # the person's stroke: its acknowledgement is timed


class Gate:
    """One table's moves between the rules and the sockets: held until written, in order."""

    def __init__(self, journal: Journal | None) -> None:
        """``journal``: the table's move log (None: nothing is stored, nothing waits)."""
        self.journal = journal
        self.held: deque[Held] = deque()  # moves applied, waiting for the database
        self.shown: tuple[Any, int] | None = None  # (state, seq) the sockets have while moves are held
        self.paused_at: float | None = None  # the game's clock() when the table paused
        self.pauses = 0  # how many times the table paused
        self.lost = False  # the database refused a move for good: the game is being closed

    @property
    def closed(self) -> bool:
        """Whether no move may be applied now (paused, or lost)."""
        return self.paused_at is not None or self.lost

    def check_open(self) -> None:
        """`TablePaused` while the table waits for the database."""
        if self.closed:
            raise TablePaused("the game is paused until the database can store its moves again")

    def must_hold(self, stored: Future[None] | None) -> bool:
        """Whether a move (its write ``stored``) waits: it is written, or moves before it wait."""
        return stored is not None or bool(self.held)

    def hold(self, held: Held, before: Any, written: Callable[[], None]) -> None:
        """Keep a move's frames until the database has it; ``written()`` is called on the event
        loop once it has (at once when there is nothing to write). ``before``: the state before
        the move, what the sockets may see meanwhile when nothing else is held."""
        if not self.held:
            self.shown = (before, held.seq - 1)
        self.held.append(held)
        if held.stored is None:
            written()
            return
        loop = asyncio.get_running_loop()

        def done(_: Future[None]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the server is gone
                loop.call_soon_threadsafe(written)

        held.stored.add_done_callback(done)

    def pop_written(self) -> Held | None:
        """The first held move once its write is done (None: nothing held, or not written yet)."""
        if self.held and (self.held[0].stored is None or self.held[0].stored.done()):
            return self.held.popleft()
        return None

    def stalled(self) -> str | None:
        """Why the table must pause now (a held move waits on a database that cannot write, or
        hangs), or None."""
        if self.paused_at is not None or not self.held or self.journal is None:
            return None
        error = self.journal.failing()
        if error is not None:
            return str(error)
        if time.monotonic() - self.held[0].since > PAUSE_AFTER_S:
            return f"a write waits for over {PAUSE_AFTER_S:g} s"
        return None

    def pause(self, now: float) -> None:
        """The table pauses at the game's clock() ``now``."""
        self.paused_at = now
        self.pauses += 1

    def unpause(self, now: float) -> float:
        """The table goes on at clock() ``now``; returns how long it was paused."""
        assert self.paused_at is not None
        paused = now - self.paused_at
        self.paused_at = None
        return paused

    def show(self, held: Held) -> None:
        """``held`` is written: the sockets may see its state."""
        self.shown = (held.state, held.seq)

    def settled(self) -> bool:
        """Whether no move is held any more (the sockets may see the state itself again)."""
        if not self.held:
            self.shown = None
        return not self.held

    def lose(self) -> None:
        """The database refused a move for good: nothing more is held, nor shown."""
        self.lost = True
        self.held.clear()
