"""How fast the bot answers in a round: its AI level's pacing, as the round's pace and the room's
tuning make it (protocol version 2: ``round_start.pace``, ``reaction_s``; docs/BOT_PROTOCOL.md).

``human`` keeps the level's pacing (a line is read ``reaction_s`` after it is drawn, a word is
typed before it is said); ``instant`` reads and types in no time, needs one line, and says at most
``INSTANT_WORDS_PER_S`` words a second; a room's ``reaction_s`` replaces the reading time of either.
"""

from __future__ import annotations

from games.ai.levels import KontourGuesserLevel

INSTANT_WORDS_PER_S = 4.0  # the instant pace's most words a second (a word per stroke, no spam)


def policy_level(level: KontourGuesserLevel, pace: str, reaction_s: float | None) -> KontourGuesserLevel:
    """The guesser's level for a round: the pace's, with the room's ``reaction_s`` if it gave one."""
    out = level if pace == "human" else instant(level)
    if reaction_s is not None:
        out = out.model_copy(update={"reaction_s": reaction_s,
                                     "reaction_jitter": level.reaction_jitter if reaction_s > 0 else 0.0})
    return out


def instant(level: KontourGuesserLevel) -> KontourGuesserLevel:
    """The level's judgement (noise, thresholds, gestures) with no reading nor typing time."""
    return level.model_copy(update={
        "reaction_s": 0.0, "reaction_jitter": 0.0, "min_strokes": 1, "type_base_s": 0.0,
        "type_char_s": 0.0, "max_guesses_per_s": max(level.max_guesses_per_s, INSTANT_WORDS_PER_S),
    })
