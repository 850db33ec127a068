"""The lobbies of rooms with friends as stored (`service.play.rooms`): brought back at a restart."""

from __future__ import annotations

import json
import time
from typing import Any

from store.records import check_id, to_json
from store.sql import SqlCore

MAX_LOBBY_BYTES = 16_384


class LobbyRows(SqlCore):
    """The ``rooms`` table."""

    def save_room(self, code: str, lobby: dict[str, Any], now: float | None = None) -> None:
        """Insert or replace the lobby of room `code` (JSON data, bounded; token hashes only)."""
        check_id(code, "room code")
        text = to_json(lobby, MAX_LOBBY_BYTES, "the lobby")
        now = time.time() if now is None else now
        with self.lock, self.write():
            self.run("INSERT INTO rooms (code, lobby, created_at, updated_at) VALUES (?, ?, ?, ?) "
                     "ON CONFLICT (code) DO UPDATE SET lobby = excluded.lobby, "
                     "updated_at = excluded.updated_at",
                     (code, text, now, now))

    def load_rooms(self) -> list[tuple[str, dict[str, Any], float]]:
        """Every stored lobby: ``(code, lobby, updated_at)``, oldest first."""
        found = self.rows("SELECT code, lobby, updated_at FROM rooms ORDER BY updated_at, code")
        return [(code, json.loads(lobby), float(updated)) for code, lobby, updated in found]

    def delete_room(self, code: str) -> None:
        """Forget the lobby of room `code` (started, closed or expired); none: nothing done."""
        with self.lock, self.write():
            self.run("DELETE FROM rooms WHERE code = ?", (code,))
