"""Games as stored: the setup and the move log of each (what a restart or another replica replays)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

from store.errors import BadRecord, MoveRejected
from store.records import Encoded, StoredGame, StoredMove, check_id, to_json
from store.sql import SqlCore

MAX_SETUP_BYTES = 1_000_000
MAX_MOVE_BYTES = 262_144  # the service's largest WebSocket frame
MAX_RESULT_BYTES = 65_536
GAME_STATUSES = ("playing", "finished", "expired", "abandoned")


class GameRows(SqlCore):
    """The ``games`` and ``moves`` tables."""

    def create_game(
        self, game_id: str, kind: str, setup: dict[str, Any], token_hash: str, now: float | None = None
    ) -> None:
        """Store a new game's setup (`MoveRejected` if the id exists)."""
        check_id(game_id, "game id")
        check_id(kind, "game kind")
        check_id(token_hash, "token hash")
        text = to_json(setup, MAX_SETUP_BYTES, "the game setup")
        now = time.time() if now is None else now
        with self.writing():
            if self.run("SELECT 1 FROM games WHERE id = ?", (game_id,)).fetchone() is not None:
                raise MoveRejected(f"game {game_id!r} already exists")
            self.run(
                "INSERT INTO games (id, kind, setup, token_hash, status, moves, result, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, 'playing', 0, NULL, ?, ?)",
                (game_id, kind, text, token_hash, now, now),
            )

    def append_move(self, game_id: str, seq: int, at: float, move: dict[str, Any] | Encoded,
                    now: float | None = None) -> None:
        """Append move number `seq` (0, 1, 2...) at game clock `at`; `MoveRejected` if `seq` is not
        the game's next number or the game is not being played."""
        self.append_moves(game_id, seq, [(at, move)], now)

    def append_moves(
        self, game_id: str, first_seq: int, moves: Sequence[tuple[float, dict[str, Any] | Encoded]],
        now: float | None = None,
    ) -> None:
        """Append several consecutive moves in one transaction (same checks as `append_move`)."""
        self.append_entries([(game_id, first_seq + i, at, move) for i, (at, move) in enumerate(moves)], now)

    def append_entries(self, entries: Sequence[tuple[str, int, float, dict[str, Any] | Encoded]],
                       now: float | None = None) -> None:
        """Append ``(game_id, seq, at, move)`` entries of any games in one transaction (all or none):
        what a group commit (``store/group_commit.py``) writes at once."""
        if not entries:
            return
        groups: dict[str, list[int]] = {}
        rows = []
        for game_id, seq, at, move in entries:
            if not isinstance(at, int | float) or not math.isfinite(at):
                raise BadRecord("a move's time must be a finite number")
            seqs = groups.setdefault(game_id, [])
            if seqs and seq != seqs[-1] + 1:
                raise MoveRejected(f"moves of game {game_id!r} out of order ({seqs[-1]}, then {seq})")
            seqs.append(seq)
            rows.append((game_id, seq, float(at), to_json(move, MAX_MOVE_BYTES, "a move")))
        now = time.time() if now is None else now
        with self.writing():
            # every game of the batch in one statement: a batch costs the same round trips
            # (BEGIN, UPDATE, INSERT, COMMIT) whatever number of games it holds
            marks = ", ".join(["(?, ?, ?)"] * len(groups))
            advanced = {row[0] for row in self.run(
                "UPDATE games SET moves = games.moves + v.column2, updated_at = ? "
                f"FROM (VALUES {marks}) AS v WHERE games.id = v.column1 AND games.moves = v.column3 "
                "AND games.status = 'playing' RETURNING games.id",
                (now, *[x for game_id, seqs in groups.items() for x in (game_id, len(seqs), seqs[0])]),
            ).fetchall()}
            for game_id, seqs in groups.items():  # the first refused game (the transaction is rolled back)
                if game_id not in advanced:
                    raise MoveRejected(self._why_rejected(game_id, seqs[0]))
            with self.guard():
                self.conn.cursor().executemany(
                    self.sql("INSERT INTO moves (game_id, seq, at, move) VALUES (?, ?, ?, ?)"), rows
                )

    def _why_rejected(self, game_id: str, seq: int) -> str:
        row = self.run("SELECT status, moves FROM games WHERE id = ?", (game_id,)).fetchone()
        if row is None:
            return f"no game {game_id!r}"
        if row[0] != "playing":
            return f"game {game_id!r} is {row[0]}"
        return f"game {game_id!r} expects move {row[1]}, not {seq} (is another server writing it?)"

    def finish_game(self, game_id: str, status: str = "finished", result: dict[str, Any] | None = None,
                    now: float | None = None) -> None:
        """Mark a game finished (or ``expired`` / ``abandoned``): it is no longer resumed."""
        if status not in GAME_STATUSES or status == "playing":
            raise BadRecord(f"a game ends as one of {', '.join(GAME_STATUSES[1:])}, not {status!r}")
        text = None if result is None else to_json(result, MAX_RESULT_BYTES, "the game result")
        now = time.time() if now is None else now
        with self.writing():
            done = self.run(
                "UPDATE games SET status = ?, result = ?, updated_at = ? WHERE id = ?",
                (status, text, now, game_id),
            ).rowcount
            if done != 1:
                raise MoveRejected(f"no game {game_id!r}")

    def _games(self, where: str, params: Sequence[Any], limit: int) -> list[StoredGame]:
        with self.lock:
            heads = self.run(
                "SELECT id, kind, setup, token_hash, status, created_at, updated_at, result FROM games "
                f"WHERE {where} ORDER BY created_at, id LIMIT ?",
                (*params, limit),
            ).fetchall()
            games = []
            for gid, kind, setup, token_hash, status, created, updated, result in heads:
                logged = self.run(
                    "SELECT seq, at, move FROM moves WHERE game_id = ? ORDER BY seq", (gid,)
                ).fetchall()
                games.append(StoredGame(
                    id=gid, kind=kind, setup=json.loads(setup), token_hash=token_hash, status=status,
                    created_at=float(created), updated_at=float(updated),
                    moves=[StoredMove(int(s), float(a), json.loads(m)) for s, a, m in logged],
                    result=None if result is None else json.loads(result),
                ))
            return games

    def load_game(self, game_id: str) -> StoredGame | None:
        """One game with its move log, or None."""
        found = self._games("id = ?", (game_id,), 1)
        return found[0] if found else None

    def load_unfinished_games(self, limit: int = 10_000) -> list[StoredGame]:
        """Every game still ``playing``, oldest first, with its move log (what a restart replays)."""
        return self._games("status = 'playing'", (), limit)

    def unfinished_game_ids(self, limit: int = 10_000) -> list[str]:
        """The ids of the games still ``playing``, the most recently played first; reads nothing
        else (one game's damaged row cannot stop it: `load_game` each)."""
        found = self.rows("SELECT id FROM games WHERE status = 'playing' "
                          "ORDER BY updated_at DESC, created_at DESC, id LIMIT ?", (limit,))
        return [gid for (gid,) in found]
