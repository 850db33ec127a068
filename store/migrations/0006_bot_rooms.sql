-- Griffon storage, version 6: the resumable memory of bot rooms (protocol version 2), so that a
-- room whose server died or restarted resumes its round on another one (or on the same one, back).
-- ``state``: the session as JSON (its version, level, pace, y axis, transcript counters and the
-- open round: round id, candidates, the words the bot said, the players' wrong words heard);
-- ``strokes``: the round's strokes kept, as the recognizer read them; ``events``: this round's
-- transcript events, cut to what fits the room's bound beside the rest. ``token_hash``: the SHA-256
-- of the resume token, never the token. ``updated_at`` is the database's clock at the last write: a
-- row not written for a while belongs to a room whose server is gone.

CREATE TABLE bot_rooms (
    session TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    key_id TEXT,
    state TEXT NOT NULL,
    strokes TEXT NOT NULL,
    events TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);

CREATE INDEX bot_rooms_by_update ON bot_rooms (updated_at);
