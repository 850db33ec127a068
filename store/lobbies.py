"""The rooms with friends as stored (`service.play.stored_lobbies`): the lobbies not yet started (brought
back at a restart, taken over by another replica when theirs dies), and the game each started room's
code leads to (its first game, then each « Rejouer »)."""

from __future__ import annotations

import json
import time
from typing import Any

from store.records import check_id, to_json
from store.sql import SqlCore

MAX_LOBBY_BYTES = 16_384
ROOM_GAMES_KEPT_S = 7 * 86_400.0  # a started room's code leads to its game this long after its last start


class LobbyRows(SqlCore):
    """The ``rooms`` and ``room_games`` tables."""

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

    def load_room(self, code: str) -> tuple[dict[str, Any], float] | None:
        """The stored lobby of room `code`: ``(lobby, updated_at)``; None when there is none."""
        found = self.rows("SELECT lobby, updated_at FROM rooms WHERE code = ?", (code,))
        return (json.loads(found[0][0]), float(found[0][1])) if found else None

    def stale_rooms(self, before: float, limit: int) -> list[str]:
        """The codes of at most ``limit`` lobbies not written since ``before`` (Unix time), oldest first."""
        found = self.rows("SELECT code FROM rooms WHERE updated_at < ? ORDER BY updated_at LIMIT ?",
                          (before, limit))
        return [str(row[0]) for row in found]

    def delete_room(self, code: str) -> None:
        """Forget the lobby of room `code` (started, closed or expired); none: nothing done."""
        with self.lock, self.write():
            self.run("DELETE FROM rooms WHERE code = ?", (code,))

    def save_room_game(self, code: str, game_id: str, now: float | None = None) -> None:
        """Room `code` leads to game `game_id` now (it started, or « Rejouer »); the rows of rooms
        not started for `ROOM_GAMES_KEPT_S` go."""
        check_id(code, "room code")
        check_id(game_id, "game id")
        now = time.time() if now is None else now
        with self.lock, self.write():
            self.run("INSERT INTO room_games (code, game_id, updated_at) VALUES (?, ?, ?) "
                     "ON CONFLICT (code) DO UPDATE SET game_id = excluded.game_id, "
                     "updated_at = excluded.updated_at", (code, game_id, now))
            self.run("DELETE FROM room_games WHERE updated_at < ?", (now - ROOM_GAMES_KEPT_S,))

    def room_game(self, code: str) -> str | None:
        """The game room `code` leads to (None: it never started, or long ago)."""
        found = self.rows("SELECT game_id FROM room_games WHERE code = ?", (code,))
        return str(found[0][0]) if found else None

    def room_games(self, limit: int) -> list[tuple[str, str]]:
        """The ``limit`` rooms started most recently: ``(code, game id)``, oldest first."""
        found = self.rows("SELECT code, game_id FROM room_games ORDER BY updated_at DESC, code LIMIT ?",
                          (limit,))
        return [(str(code), str(game_id)) for code, game_id in reversed(found)]
