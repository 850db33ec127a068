"""Bot transcripts kept in the database, so that they survive a restart: their table (`TranscriptRows`,
mixed into `store.Store`) and the archive the service reads and writes them through.

The service keeps live transcripts in memory (``service.bot.session.Transcript``); it hands each one
to `TranscriptArchive.save` at the end of every round and, with ``final=True``, when the session
ends. The write is the shared `store.background.BackgroundWriter`'s: off the event loop, at most
one snapshot waiting per session (a newer one replaces it), one session written at most every
``min_interval_s``; the final one is always written. The transcript's read key is stored only as
its SHA-256; `get` checks it.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

from store.background import BackgroundWriter
from store.records import TranscriptRecord, check_id, fit_events, to_json
from store.sql import SqlCore
from store.tokens import hash_token, token_matches

MAX_TRANSCRIPT_BYTES = 1_048_576  # the store's own ceiling; the service passes its smaller bound
MAX_SUMMARY_BYTES = 16_384


class TranscriptRows(SqlCore):
    """The ``transcripts`` table."""

    def save_transcript(self, record: TranscriptRecord, now: float | None = None,
                        max_bytes: int = MAX_TRANSCRIPT_BYTES) -> TranscriptRecord:
        """Insert or replace a transcript, its events cut to `max_bytes` of JSON (never more than
        `MAX_TRANSCRIPT_BYTES`); returns what was kept."""
        check_id(record.id, "transcript id")
        if record.key_hash is not None:
            check_id(record.key_hash, "key hash")
        summary = to_json(record.summary, MAX_SUMMARY_BYTES, "the transcript summary")
        limit = max(2, min(int(max_bytes), MAX_TRANSCRIPT_BYTES))
        events, dropped = fit_events(record.events, limit)
        text = to_json(events, limit, "the transcript events")
        now = time.time() if now is None else now
        created = record.created_at if record.created_at is not None else now
        with self.lock, self.write():
            self.run(
                "INSERT INTO transcripts (id, key_hash, summary, events, bytes, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET key_hash = excluded.key_hash, "
                "summary = excluded.summary, events = excluded.events, bytes = excluded.bytes, "
                "updated_at = excluded.updated_at",
                (record.id, record.key_hash, summary, text, len(text.encode("utf-8")), created, now),
            )
        return TranscriptRecord(record.id, record.summary, events, record.key_hash, created,
                                record.dropped + dropped)

    def load_transcript(self, transcript_id: str) -> TranscriptRecord | None:
        """One transcript, or None."""
        found = self.rows(
            "SELECT id, summary, events, key_hash, created_at FROM transcripts WHERE id = ?", (transcript_id,)
        )
        if not found:
            return None
        tid, summary, events, key_hash, created = found[0]
        return TranscriptRecord(tid, json.loads(summary), json.loads(events), key_hash, float(created))

    def list_transcripts(self, limit: int = 100) -> list[TranscriptRecord]:
        """The newest transcripts (summaries only: ``events`` is empty), newest first."""
        found = self.rows(
            "SELECT id, summary, key_hash, created_at FROM transcripts ORDER BY created_at DESC, id LIMIT ?",
            (limit,),
        )
        return [TranscriptRecord(t, json.loads(s), [], k, float(c)) for t, s, k, c in found]


class LiveTranscript(Protocol):
    """What the archive reads from the service's transcript object."""

    session_id: str
    key: str
    started_at: float
    events: list[dict[str, Any]]

    def summary(self) -> dict[str, Any]: ...


class TranscriptArchive:
    """Saves transcripts off the event loop (through `writer`) and reads them back by id and key."""

    def __init__(self, store: TranscriptRows, writer: BackgroundWriter,
                 max_bytes: int = MAX_TRANSCRIPT_BYTES) -> None:
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
