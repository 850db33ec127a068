"""A bot session's transcript: what it saw and said, turn by turn, readable with its key only."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

Frame = dict[str, Any]


class Transcript:
    """What one bot session saw and said, turn by turn, bounded in bytes (later events are dropped).

    Readable only with its ``key`` (given to the room in ``welcome``); ``limit`` counts the JSON
    bytes of the events.
    """

    def __init__(self, session_id: str, room: str | None, name: str | None, limit: int) -> None:
        self.session_id = session_id
        self.key = secrets.token_urlsafe(18)
        self.room = room
        self.name = name
        self.limit = limit
        self.started_at = time.time()
        self.ended_at: float | None = None
        self.events: list[Frame] = []
        self.bytes = 0
        self.dropped = 0
        self.rounds = 0
        self.guesses = 0

    def readable_with(self, key: str) -> bool:
        """Whether ``key`` is this transcript's key (constant-time comparison)."""
        return secrets.compare_digest(key.encode(), self.key.encode())

    def add(self, kind: str, round_id: Any, t: float | None, **data: Any) -> None:
        """Record one event (``t``: seconds since the round started), if it fits in ``limit`` bytes."""
        self.add_event({"kind": kind, "round": round_id, "t": None if t is None else round(t, 3)} | data)

    def add_event(self, event: Frame) -> None:
        """Record one event as it is (a stored one), if it fits in ``limit`` bytes."""
        size = len(json.dumps(event, ensure_ascii=False).encode("utf-8"))
        if self.bytes + size > self.limit:
            self.dropped += 1
            return
        self.bytes += size
        self.events.append(event)

    def summary(self) -> Frame:
        """The transcript without its events."""
        return {
            "id": self.session_id,
            "room": self.room,
            "name": self.name,
            "live": self.ended_at is None,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "rounds": self.rounds,
            "guesses": self.guesses,
            "events": len(self.events),
            "bytes": self.bytes,
            "dropped_events": self.dropped,
        }

    def to_dict(self) -> Frame:
        """The whole transcript, JSON-ready."""
        return self.summary() | {"events": self.events, "event_count": len(self.events)}
