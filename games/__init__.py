"""Griffon's game engines: pure, deterministic rules for Kontour and Pictomania.

- `games.core`: the shared model (immutable state, typed moves and events, phases, `RuleError`s,
  seeded `rng`, `replay`).
- `games.kontour`: `KontourRules` (straight-line drawing, timer, tie window, tiebreak turn).
- `games.pictomania`: `PictomaniaRules` (simultaneous rounds, stacks, bonus tokens, black sheep).
- `games.geometry`: straightening and merging of Kontour strokes.

Constants come from `games/data/*.yaml`. Nothing here reads a clock or global randomness, and
nothing imports FastAPI, asyncio, `service/` or `model/`. See docs/GAMES.md.
"""
