"""Consented drawings as stored: added, withdrawn by their giver's key, read back for the export."""

from __future__ import annotations

import json
import math
import re
import secrets
import time
from collections.abc import Iterator, Sequence
from typing import Any

from store.errors import BadRecord
from store.records import DrawingRecord, check_id, check_strokes, check_word, to_json
from store.sql import PRUNE_BATCH, SqlCore

MAX_CONDITIONS_BYTES = 4_096


def new_key_id() -> str:
    """A drawing id shaped like the dataset's numeric ``key_id`` but 19 digits long, starting with 9,
    so it never equals one of Google's 16-digit ids (and still fits the binary format's uint64)."""
    return str(9 * 10**18 + secrets.randbelow(10**18))


class DrawingRows(SqlCore):
    """The ``drawings`` and ``withdrawn_owners`` tables."""

    def add_drawing(self, record: DrawingRecord, consent: bool, now: float | None = None) -> str:
        """Store a finished drawing the player agreed to give; returns its ``key_id`` (empty when
        its giver's withdrawal key was withdrawn: nothing is stored). Without consent nothing is
        written (`BadRecord`)."""
        if consent is not True:
            raise BadRecord("a drawing is stored only when its player agreed (consent=True)")
        word = check_word(record.word)
        check_id(record.game, "game kind")
        strokes = to_json(check_strokes(record.strokes), 2_000_000, "the drawing")
        conditions = to_json(record.conditions, MAX_CONDITIONS_BYTES, "the drawing conditions")
        key_id = record.key_id or new_key_id()
        check_id(key_id, "key_id")
        now = time.time() if now is None else now
        owner = record.owner_hash or None
        if owner is not None and not re.fullmatch(r"[0-9a-f]{64}", owner):
            raise BadRecord("owner_hash must be a SHA-256 in hexadecimal (store.hash_token)")
        with self.lock, self.write():
            if owner is not None and self.run("SELECT 1 FROM withdrawn_owners WHERE owner_hash = ?",
                                              (owner,)).fetchone():
                return ""  # its giver withdrew their consent: nothing is stored
            self.run(
                "INSERT INTO drawings (key_id, word, game, conditions, strokes, recognized, consent, "
                "created_at, owner_hash) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)",
                (key_id, word, record.game, conditions, strokes, int(bool(record.recognized)), now, owner),
            )
        return key_id

    def withdraw_drawings(self, owner_hash: str) -> int:
        """Delete every drawing given under the withdrawal key whose hash is ``owner_hash``, and
        refuse any later one (`add_drawing` then stores nothing); returns how many were deleted."""
        if not owner_hash:
            return 0
        with self.lock, self.write():
            self.run("INSERT INTO withdrawn_owners (owner_hash, withdrawn_at) VALUES (?, ?) "
                     "ON CONFLICT (owner_hash) DO NOTHING", (owner_hash, time.time()))
        return self._delete_batches(
            "DELETE FROM drawings WHERE key_id IN (SELECT key_id FROM drawings WHERE owner_hash = ? LIMIT ?)",
            (owner_hash,), PRUNE_BATCH)

    def iter_drawings(self, word: str | None = None, batch: int = 500,
                      skip_games: Sequence[str] = ()) -> Iterator[DrawingRecord]:
        """Every stored drawing (of one word; not those of the `skip_games` kinds), oldest first."""
        where, params = _drawings_where(word, skip_games)
        after: tuple[float, str] = (-math.inf, "")
        while True:  # keyset pages: no cursor held open between batches
            page = self.rows(
                "SELECT key_id, word, game, conditions, strokes, recognized, created_at FROM drawings "
                f"WHERE {where} AND (created_at > ? OR (created_at = ? AND key_id > ?)) "
                "ORDER BY created_at, key_id LIMIT ?",
                (*params, after[0], after[0], after[1], batch),
            )
            for key_id, w, game, cond, strokes, recognized, created in page:
                yield DrawingRecord(w, game, json.loads(strokes), json.loads(cond), bool(recognized),
                                    key_id, float(created))
            if len(page) < batch:
                return
            after = (float(page[-1][6]), page[-1][0])

    def drawing_counts(self, skip_games: Sequence[str] = ()) -> dict[str, int]:
        """Stored drawings per word (not counting the `skip_games` kinds)."""
        where, params = _drawings_where(None, skip_games)
        found = self.rows(
            f"SELECT word, COUNT(*) FROM drawings WHERE {where} GROUP BY word ORDER BY word", params
        )
        return {w: int(n) for w, n in found}


def _drawings_where(word: str | None, skip_games: Sequence[str]) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause (never empty) and parameters for drawings of `word`, not of `skip_games`."""
    clauses, params = ["1 = 1"], []
    if word is not None:
        clauses.append("word = ?")
        params.append(word)
    for game in skip_games:
        clauses.append("game <> ?")
        params.append(game)
    return " AND ".join(clauses), tuple(params)
