"""The store: every table's module mixed into one class over one connection, and the upkeep that
spans them (prune, info). The backends (`store.sqlite`, `store.postgres`) say how to connect, how
to begin a write, how big the database is and how to vacuum it; `store.open_store` picks one.

Every record is bounded and checked before it is written (`BadRecord`); a database file that is
not a database, is damaged, belongs to something else, or was written by a newer Griffon raises a
`BadDatabase` subclass when it is opened, never later and never silently.
"""

from __future__ import annotations

import time

from store.bot_keys import BotKeyRows
from store.bot_rooms import BotRoomRows
from store.drawings import DrawingRows
from store.games import GameRows
from store.lobbies import LobbyRows
from store.records import DAY_S, PruneReport, Retention, StoreInfo
from store.schema import TABLES, Schema
from store.sql import PRUNE_BATCH
from store.transcripts import TranscriptRows


class Store(Schema, GameRows, TranscriptRows, DrawingRows, BotKeyRows, LobbyRows, BotRoomRows):
    """Persistence for the service: games (setup + move log), bot transcripts, consented drawings,
    bot keys, lobbies and bot rooms, in plain SQL (``?`` placeholders, rewritten for psycopg).
    Close it with :meth:`close` (or use it as a context manager)."""

    def prune(self, retention: Retention | None = None, now: float | None = None,
              batch: int = PRUNE_BATCH) -> PruneReport:
        """Delete in transactions of at most `batch` rows (games: as many as hold at most `batch`
        moves, one at least), releasing the lock between them: the service's writes never wait
        behind one big DELETE."""
        keep = retention or self.retention
        now = time.time() if now is None else now
        games = moves = transcripts = drawings = 0
        if keep.games_days > 0:
            cutoff = now - keep.games_days * DAY_S
            while True:  # a few games at a time: at most `batch` moves (or one game) per transaction
                with self.lock, self.write():
                    found = self.run("SELECT id, moves FROM games WHERE updated_at < ? ORDER BY id LIMIT ?",
                                     (cutoff, batch)).fetchall()
                    ids, rows = [], 0
                    for game_id, count in found:
                        if ids and rows + int(count) > batch:
                            break
                        ids.append(game_id)
                        rows += int(count)
                    if ids:
                        marks = ", ".join("?" * len(ids))
                        moves += self.run(f"DELETE FROM moves WHERE game_id IN ({marks})", ids).rowcount
                        games += self.run(f"DELETE FROM games WHERE id IN ({marks})", ids).rowcount
                if len(found) < batch and len(ids) == len(found):
                    break
        if keep.transcripts_days > 0:
            cutoff = now - keep.transcripts_days * DAY_S
            transcripts += self._delete_batches(
                "DELETE FROM transcripts WHERE id IN "
                "(SELECT id FROM transcripts WHERE updated_at < ? LIMIT ?)",
                (cutoff,), batch)
        excess = int(self.rows("SELECT COUNT(*) FROM transcripts")[0][0]) - keep.transcripts_max
        while excess > 0:  # the oldest beyond the newest `transcripts_max`
            with self.lock, self.write():
                done = self.run(
                    "DELETE FROM transcripts WHERE id IN (SELECT id FROM transcripts "
                    "ORDER BY created_at, id DESC LIMIT ?)", (min(batch, excess),),
                ).rowcount
            transcripts += done
            excess = 0 if done == 0 else excess - done
        if keep.drawings_days > 0:
            cutoff = now - keep.drawings_days * DAY_S
            drawings = self._delete_batches(
                "DELETE FROM drawings WHERE key_id IN "
                "(SELECT key_id FROM drawings WHERE created_at < ? LIMIT ?)",
                (cutoff,), batch)
        return PruneReport(games, moves, transcripts, drawings)

    def counts(self) -> dict[str, int]:
        """Rows per table, and unfinished games."""
        out = {t: int(self.rows(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in TABLES}
        out["games_playing"] = int(self.rows("SELECT COUNT(*) FROM games WHERE status = 'playing'")[0][0])
        return out

    def info(self) -> StoreInfo:
        """Where, how big, schema version, counts."""
        return StoreInfo(self.backend, self.location, self.size_bytes(), self.schema_version(), self.counts())
