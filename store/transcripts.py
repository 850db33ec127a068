"""Bot transcripts kept in the database, so that they survive a restart.

The service keeps live transcripts in memory (``service.bot.session.Transcript``); it hands each one
to `TranscriptArchive.save` at the end of every round and, with ``final=True``, when the session
ends. The write is the shared `store.background.BackgroundWriter`'s: off the event loop, at most
one snapshot waiting per session (a newer one replaces it), one session written at most every
``min_interval_s``; the final one is always written. The transcript's read key is stored only as
its SHA-256; `get` checks it.
"""

from __future__ import annotations

from typing import Any, Protocol

from store.background import BackgroundWriter
from store.base import MAX_TRANSCRIPT_BYTES, Store, TranscriptRecord, hash_token, token_matches


class LiveTranscript(Protocol):
    """What the archive reads from the service's transcript object."""

    session_id: str
    key: str
    started_at: float
    events: list[dict[str, Any]]

    def summary(self) -> dict[str, Any]: ...


class TranscriptArchive:
    """Saves transcripts off the event loop (through `writer`) and reads them back by id and key."""

    def __init__(self, store: Store, writer: BackgroundWriter, max_bytes: int = MAX_TRANSCRIPT_BYTES) -> None:
        self.store, self.writer, self.max_bytes = store, writer, max_bytes

    def save(self, transcript: LiveTranscript, final: bool = False) -> bool:
        """Queue a snapshot of the transcript (insert or replace); False when it was dropped."""
        record = TranscriptRecord(
            id=transcript.session_id,
            summary=dict(transcript.summary()),
            events=list(transcript.events),  # a shallow snapshot: the live list goes on growing
            key_hash=hash_token(transcript.key),
            created_at=transcript.started_at,
        )
        return self.writer.save_transcript(record, self.max_bytes, final)

    def get(self, session_id: str, key: str) -> dict[str, Any] | None:
        """The stored transcript as ``GET /v1/bot/sessions/{id}`` shows it, if `key` opens it."""
        found = self.store.load_transcript(session_id)
        if found is None or found.key_hash is None or not token_matches(key, found.key_hash):
            return None
        return found.summary | {"live": False, "events": found.events, "event_count": len(found.events)}

    def summaries(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest stored transcripts' summaries, newest first (not live: from the database)."""
        return [t.summary | {"live": False} for t in self.store.list_transcripts(limit)]
