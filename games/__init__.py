"""Griffon's game engines: pure, deterministic rules for Kontour and Pictomania.

- `games.core`: the shared model (immutable state, typed moves and events, phases, `RuleError`s,
  seeded `rng`, `replay`).
- `games.kontour`: `KontourRules` (straight-line drawing, timer, tie window, tiebreak turn).
- `games.pictomania`: `PictomaniaRules` (simultaneous rounds, stacks, bonus tokens, black sheep).
- `games.geometry`: straightening and merging of Kontour strokes.
- `games.words`: the one adapter from `vocab/` (French words, judge, related words, decks).
- `games.ai`: the AI players and their one driver (`games.ai.driver`), run by the service and
  `games.simulator` alike.

Constants come from `games/data/*.yaml`. Nothing here reads a clock or global randomness, and
nothing imports FastAPI, asyncio, `service/`, `model/` or `training/` (the recognizer, the dataset
and the straight-line cutter are injected; `tests/test_architecture.py`). See docs/GAMES.md.
"""
