-- Griffon storage, version 7: the game each room's code leads to once the room has started (its first
-- game, then each « Rejouer »), so that the room's link still leads there after a restart, and on
-- any replica. ``updated_at``: when the room last started a game (old rows are deleted).

CREATE TABLE room_games (
    code TEXT PRIMARY KEY,
    game_id TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);

CREATE INDEX room_games_by_update ON room_games (updated_at);
