"""Persistence for Griffon: games (setup + move log), bot transcripts and consented drawings.

One store (`Store`: a module per table's aggregate — `games`, `transcripts`, `drawings`, `bot_keys`,
`lobbies`, `bot_rooms` — mixed over the shared SQL of `sql`, with `records`, `errors`, `tokens` and
`schema` beside them), two backends: SQLite, the embedded default (a WAL file under the data folder,
created on first start), and PostgreSQL for a deployment that outgrows one machine.

>>> from store import open_store, StoreSettings
>>> db = open_store(StoreSettings.from_env())      # $GRIFFON_DB_URL, else $GRIFFON_DB_DIR/griffon.db
>>> db.create_game("g1", "kontour", {"seed": 42, ...}, hash_token(token))
>>> db.append_move("g1", 0, 0.0, {"kind": "draw_card", "player": "joueur"})
>>> [g.moves for g in db.load_unfinished_games()]   # what a restarted server replays
"""

from __future__ import annotations

from store.database import Store
from store.errors import (
    BadDatabase,
    BadRecord,
    CorruptDatabase,
    ForeignDatabase,
    MoveRejected,
    SchemaTooNew,
    StoreError,
    StoreUnavailable,
    UnknownKey,
)
from store.records import (
    BotKey,
    BotRoomRecord,
    DrawingRecord,
    Encoded,
    PruneReport,
    Retention,
    StoredBotRoom,
    StoredGame,
    StoredMove,
    StoreInfo,
    TranscriptRecord,
)
from store.schema import LATEST_VERSION
from store.settings import StoreSettings, open_store
from store.tokens import hash_token, new_key_secret, token_matches

__all__ = [
    "LATEST_VERSION",
    "BadDatabase",
    "BadRecord",
    "BotKey",
    "BotRoomRecord",
    "CorruptDatabase",
    "DrawingRecord",
    "Encoded",
    "ForeignDatabase",
    "MoveRejected",
    "PruneReport",
    "Retention",
    "SchemaTooNew",
    "Store",
    "StoreError",
    "StoreInfo",
    "StoreSettings",
    "StoreUnavailable",
    "StoredBotRoom",
    "StoredGame",
    "StoredMove",
    "TranscriptRecord",
    "UnknownKey",
    "hash_token",
    "new_key_secret",
    "open_store",
    "token_matches",
]
