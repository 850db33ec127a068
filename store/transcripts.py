"""Bot transcripts kept in the database, so that they survive a restart.

The service keeps live transcripts in memory (``service.bot_session.Transcript``); it hands each one
to `TranscriptArchive.save` at the end of every round and when the session ends. Writes happen on a
background thread (never on the event loop), bounded: beyond ``max_pending`` waiting saves, new ones
are dropped and counted. The transcript's read key is stored only as its SHA-256; `get` checks it.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from store.base import Store, StoreError, TranscriptRecord, hash_token, token_matches

log = logging.getLogger("griffon.store")


class LiveTranscript(Protocol):
    """What the archive reads from the service's transcript object."""

    session_id: str
    key: str
    started_at: float
    events: list[dict[str, Any]]

    def summary(self) -> dict[str, Any]: ...


class TranscriptArchive:
    """Saves transcripts off the event loop and reads them back by id and key."""

    def __init__(self, store: Store, max_pending: int = 1_000) -> None:
        self.store, self.max_pending = store, max_pending
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="griffon-transcripts")
        self.pending = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def save(self, transcript: LiveTranscript) -> Future[None] | None:
        """Queue a copy of the transcript for saving (insert or replace); None when dropped."""
        record = TranscriptRecord(
            id=transcript.session_id,
            summary=dict(transcript.summary()),
            events=list(transcript.events),  # a snapshot: the live list goes on growing
            key_hash=hash_token(transcript.key),
            created_at=transcript.started_at,
        )
        with self.lock:
            if self.pending >= self.max_pending:
                self.dropped += 1
                log.warning("transcript %s not saved: %d saves already waiting", record.id, self.pending)
                return None
            self.pending += 1
        return self.executor.submit(self._write, record)

    def _write(self, record: TranscriptRecord) -> None:
        try:
            self.store.save_transcript(record)
        except StoreError as error:
            log.warning("transcript %s not saved: %s", record.id, error)
        finally:
            with self.lock:
                self.pending -= 1

    def get(self, session_id: str, key: str) -> dict[str, Any] | None:
        """The stored transcript as ``GET /v1/bot/sessions/{id}`` shows it, if `key` opens it."""
        found = self.store.load_transcript(session_id)
        if found is None or found.key_hash is None or not token_matches(key, found.key_hash):
            return None
        return found.summary | {"live": False, "events": found.events, "event_count": len(found.events)}

    def summaries(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest stored transcripts' summaries, newest first (not live: from the database)."""
        return [t.summary | {"live": False} for t in self.store.list_transcripts(limit)]

    def close(self) -> None:
        """Finish the waiting saves."""
        self.executor.shutdown(wait=True)
