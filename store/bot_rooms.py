"""Bot rooms' resumable memory as stored (`service.bot.memory`), bounded in bytes per room."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from store.errors import BadRecord
from store.records import BotRoomRecord, StoredBotRoom, check_id, fit_events, to_json
from store.sql import SqlCore

MAX_BOT_ROOM_BYTES = 1_048_576  # a bot room's stored memory, at most (the service passes its smaller bound)


class BotRoomRows(SqlCore):
    """The ``bot_rooms`` table."""

    def save_bot_rooms(self, rooms: Sequence[BotRoomRecord], deleted: Sequence[str] = (),
                       max_bytes: int = MAX_BOT_ROOM_BYTES) -> None:
        """Insert or replace bot rooms' memory and delete others', in one transaction: each room's
        state, strokes and events take at most ``max_bytes`` of JSON together (the last events are
        cut to fit); `BadRecord` for a state and strokes over it (nothing written)."""
        limit = max(4, min(int(max_bytes), MAX_BOT_ROOM_BYTES))
        rows = []
        for room in rooms:
            check_id(room.session, "bot room session")
            check_id(room.token_hash, "resume token hash")
            if room.key_id is not None:
                check_id(room.key_id, "bot key id")
            if not all(isinstance(s, str) and s.startswith("[") for s in room.strokes):
                raise BadRecord(f"bot room {room.session}: each stroke is given as its JSON list")
            strokes = "[" + ",".join(room.strokes) + "]"
            text = to_json(room.state, limit - 2, f"bot room {room.session}'s state")
            size = len(text.encode("utf-8")) + len(strokes.encode("utf-8"))
            if size > limit - 2:
                raise BadRecord(f"bot room {room.session}'s state and strokes are larger than {limit} bytes")
            events = to_json(fit_events(room.events, limit - size)[0], limit - size, "the bot room's events")
            created = time.time() if room.created_at is None else float(room.created_at)
            total = size + len(events.encode("utf-8"))
            rows.append((room.session, room.token_hash, room.key_id, text, strokes, events, total, created))
        gone = [check_id(session, "bot room session") for session in deleted]
        with self.lock, self.write():
            for row in rows:
                self.run(
                    "INSERT INTO bot_rooms (session, token_hash, key_id, state, strokes, events, bytes, "
                    f"created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, {self.now_sql}) ON CONFLICT "
                    "(session) DO UPDATE SET token_hash = excluded.token_hash, key_id = excluded.key_id, "
                    "state = excluded.state, strokes = excluded.strokes, events = excluded.events, "
                    "bytes = excluded.bytes, updated_at = excluded.updated_at", row,
                )
            for session in gone:
                self.run("DELETE FROM bot_rooms WHERE session = ?", (session,))

    def load_bot_room(self, session: str) -> StoredBotRoom | None:
        """A bot room's stored memory (None: unknown, or deleted)."""
        found = self.rows(
            f"SELECT session, token_hash, key_id, state, strokes, events, created_at, {self.now_sql} - "
            "updated_at FROM bot_rooms WHERE session = ?", (session,),
        )
        if not found:
            return None
        sid, token_hash, key_id, state, strokes, events, created, age = found[0]
        try:
            data, drawn, listed = json.loads(state), json.loads(strokes), json.loads(events)
        except ValueError as error:
            raise BadRecord(f"bot room {sid}: its stored state is not JSON: {error}") from None
        if not isinstance(data, dict) or not isinstance(drawn, list) or not isinstance(listed, list):
            raise BadRecord(f"bot room {sid}: its stored state is not a JSON object and lists")
        return StoredBotRoom(sid, token_hash, key_id, data, listed, float(created), max(0.0, float(age)),
                             drawn)

    def prune_bot_rooms(self, older_than_s: float) -> int:
        """Delete the bot rooms not written for ``older_than_s`` seconds (database clock); how many."""
        with self.lock, self.write():
            return int(self.run(f"DELETE FROM bot_rooms WHERE updated_at < {self.now_sql} - ?",
                                (float(older_than_s),)).rowcount)
