-- Griffon storage, version 1: games and their move logs, bot transcripts, consented drawings.
-- One SQL text for SQLite and PostgreSQL: only types both read the same way (TEXT, INTEGER,
-- BIGINT, DOUBLE PRECISION); JSON is stored as TEXT; flags are 0/1 integers; times are Unix seconds.

CREATE TABLE games (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    setup TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    moves INTEGER NOT NULL,
    result TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);

CREATE INDEX games_by_status ON games (status, updated_at);

CREATE TABLE moves (
    game_id TEXT NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    move TEXT NOT NULL,
    PRIMARY KEY (game_id, seq)
);

CREATE TABLE transcripts (
    id TEXT PRIMARY KEY,
    key_hash TEXT,
    summary TEXT NOT NULL,
    events TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);

CREATE INDEX transcripts_by_created ON transcripts (created_at);

CREATE TABLE drawings (
    key_id TEXT PRIMARY KEY,
    word TEXT NOT NULL,
    game TEXT NOT NULL,
    conditions TEXT NOT NULL,
    strokes TEXT NOT NULL,
    recognized INTEGER NOT NULL,
    consent INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);

CREATE INDEX drawings_by_word ON drawings (word, created_at);
