-- Griffon storage, version 5: the lobbies of rooms with friends not yet started, so that a restart
-- keeps them. ``lobby``: the room as JSON (its game, AI levels, client, and its seats with their
-- names and the SHA-256 of each person's token, never a token). A started room's lobby is deleted:
-- its game is stored in ``games`` (the room's code in its setup).

CREATE TABLE rooms (
    code TEXT PRIMARY KEY,
    lobby TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
