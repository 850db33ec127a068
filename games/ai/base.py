"""What the AI players need from the outside world, as small protocols, plus shared helpers.

The AI players never import the recognizer: they receive probability dictionaries (word key ->
probability). Anything with ``probabilities(drawing, candidates)`` (the real ``model.Guesser``
or a fixed table in tests) is a :class:`ProbabilitySource`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol

Drawing = list[list[list[float]]]
"""A drawing: strokes ``[[x...], [y...]]`` or ``[[x...], [y...], [t...]]``."""

ToFrench = Callable[[str], str]
"""Maps a category key (``"house"``) to the French word the AI says (``"maison"``)."""

Related = Callable[[str], Collection[str]]
"""Maps a category key to the keys of words related to it (same theme)."""

MIN_PROB = 1e-9


class ProbabilitySource(Protocol):
    """Anything that turns a drawing into probabilities over word keys (``model.Guesser``)."""

    def probabilities(
        self, drawing: Any, candidates: Sequence[str] | None = None
    ) -> dict[str, float]: ...


def identity_french(key: str) -> str:
    """Fallback `ToFrench`: say the key itself."""
    return key


def no_relations(key: str) -> Collection[str]:
    """Fallback `Related`: nothing is related to anything."""
    return ()


def relations_from_groups(groups: Iterable[Iterable[str]]) -> Related:
    """A `Related` where words are related when they share a group (e.g. a Pictomania card)."""
    index: dict[str, set[str]] = {}
    for group in groups:
        members = set(group)
        for key in members:
            index.setdefault(key, set()).update(members - {key})
    frozen = {key: frozenset(value) for key, value in index.items()}
    return lambda key: frozen.get(key, frozenset())


def normalize(probs: Mapping[str, float]) -> dict[str, float]:
    """Probabilities rescaled to sum to 1 (uniform if they sum to 0)."""
    if not probs:
        return {}
    total = sum(max(0.0, p) for p in probs.values())
    if total <= 0:
        return {key: 1.0 / len(probs) for key in probs}
    return {key: max(0.0, p) / total for key, p in probs.items()}


def perturb(
    probs: Mapping[str, float], rng: random.Random, noise: float, temperature: float
) -> dict[str, float]:
    """A noisier, flatter copy of `probs`: softmax((log p + noise * N(0, 1)) / temperature).

    Keys are visited in sorted order so the result depends only on `probs` and the rng state.
    """
    keys = sorted(probs)
    if not keys:
        return {}
    logits = []
    for key in keys:
        value = math.log(max(probs[key], MIN_PROB))
        if noise > 0:
            value += rng.gauss(0.0, noise)
        logits.append(value / temperature)
    top = max(logits)
    weights = [math.exp(v - top) for v in logits]
    total = sum(weights)
    return {key: w / total for key, w in zip(keys, weights, strict=True)}
