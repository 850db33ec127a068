"""Games played in the browser: the routes, the game manager, one game's session, its words,
settings and journal (moves to the store, replay at start)."""
