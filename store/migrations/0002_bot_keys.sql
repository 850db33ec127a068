-- Griffon storage, version 2: API keys of bot rooms and the rooms they hold open.
-- A key is stored as the SHA-256 of its secret (never the secret); quotas of 0 mean no limit.

CREATE TABLE bot_keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL UNIQUE,
    max_rooms INTEGER NOT NULL,
    strokes_per_minute INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    revoked_at DOUBLE PRECISION,
    last_used_at DOUBLE PRECISION
);

-- One row per open room of a key, renewed by the process that holds it (seen_at); rows not
-- renewed for a while (a process that died) no longer count.
CREATE TABLE bot_key_rooms (
    session TEXT PRIMARY KEY,
    key_id TEXT NOT NULL REFERENCES bot_keys (id) ON DELETE CASCADE,
    holder TEXT NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);

CREATE INDEX bot_key_rooms_by_key ON bot_key_rooms (key_id, seen_at);
