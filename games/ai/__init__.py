"""Griffon's AI players: Kontour guesser, Pictomania guesser, drawer (pure, seeded decisions).

They never import the recognizer: probabilities come in as dictionaries (see `base`), so every
decision is testable on fixed probability sequences. Difficulty levels: `games/data/ai_levels.yaml`.
"""

from games.ai.base import ProbabilitySource, identity_french, relations_from_groups
from games.ai.drawer import (
    AIDrawer,
    DrawerError,
    ShippedLineDrawings,
    TimedStroke,
    default_source,
)
from games.ai.driver import AIKit, KontourDriver, Look, PictomaniaDriver
from games.ai.kontour_guesser import GuesserError, KontourGuesser, Say
from games.ai.levels import AILevel, AILevelError, level_names, load_level
from games.ai.lines import LineError, to_kontour_lines
from games.ai.pictomania_guesser import (
    Commit,
    OpponentState,
    PictomaniaAIError,
    PictomaniaGuesser,
    independent_number_marginals,
    joint_number_marginals,
)

__all__ = [
    "AIDrawer",
    "AIKit",
    "KontourDriver",
    "Look",
    "PictomaniaDriver",
    "AILevel",
    "AILevelError",
    "Commit",
    "DrawerError",
    "GuesserError",
    "KontourGuesser",
    "LineError",
    "OpponentState",
    "PictomaniaAIError",
    "PictomaniaGuesser",
    "ProbabilitySource",
    "Say",
    "ShippedLineDrawings",
    "TimedStroke",
    "default_source",
    "identity_french",
    "independent_number_marginals",
    "joint_number_marginals",
    "level_names",
    "load_level",
    "relations_from_groups",
    "to_kontour_lines",
]
