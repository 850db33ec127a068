"""Persistence for Griffon: games (setup + move log), bot transcripts and consented drawings.

One interface (`Store`), two backends: SQLite, the embedded default (a WAL file under the data
folder, created on first start), and PostgreSQL for a deployment that outgrows one machine.

>>> from store import open_store, StoreSettings
>>> db = open_store(StoreSettings.from_env())      # $GRIFFON_DATABASE_URL, else $GRIFFON_DATA_DIR/griffon.db
>>> db.create_game("g1", "kontour", {"seed": 42, ...}, hash_token(token))
>>> db.append_move("g1", 0, 0.0, {"kind": "draw_card", "player": "joueur"})
>>> [g.moves for g in db.load_unfinished_games()]   # what a restarted server replays
"""

from __future__ import annotations

from store.base import (
    LATEST_VERSION,
    BadDatabase,
    BadRecord,
    BotKey,
    BotRoomRecord,
    CorruptDatabase,
    DrawingRecord,
    ForeignDatabase,
    MoveRejected,
    PruneReport,
    Retention,
    SchemaTooNew,
    Store,
    StoredBotRoom,
    StoredGame,
    StoredMove,
    StoreError,
    StoreInfo,
    StoreUnavailable,
    TranscriptRecord,
    UnknownKey,
    hash_token,
    new_key_secret,
    token_matches,
)
from store.settings import StoreSettings, open_store

__all__ = [
    "LATEST_VERSION",
    "BadDatabase",
    "BadRecord",
    "BotKey",
    "BotRoomRecord",
    "CorruptDatabase",
    "DrawingRecord",
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
