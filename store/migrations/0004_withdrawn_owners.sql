-- Griffon storage, version 4: the withdrawal keys whose givers took their consent back (their
-- SHA-256 only). A drawing given under one of them is never stored again, whichever server
-- process or restart its game is played on.

CREATE TABLE withdrawn_owners (
    owner_hash TEXT PRIMARY KEY,
    withdrawn_at DOUBLE PRECISION NOT NULL
);
