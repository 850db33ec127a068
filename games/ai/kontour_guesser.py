"""The Kontour AI guesser: watches a drawing stroke by stroke and says words over time.

Policy (all times in seconds, every knob from `KontourGuesserLevel`):

1. ``observe(probs, now)`` after each stroke: the distribution is perturbed once with the level's
   noise and temperature (so the AI is consistently wrong in its own way, not flickering), and
   becomes *visible* at ``now + reaction_s`` (times a random factor ``1 ± reaction_jitter``).
2. ``decide(now)``: take the latest visible distribution, multiply the words related to a guess
   marked « proche » by ``close_boost`` and a guess marked « hors sujet » and its relatives by
   ``off_topic_factor``, drop every word already said (by anyone) this turn, renormalise, and say
   the best word if its probability reaches the current threshold. The threshold decays linearly
   from ``threshold`` to ``threshold_floor`` over the turn (players get bolder as time runs out).
   At most ``max_guesses_per_s`` words per second, and nothing before ``min_strokes`` strokes
   were seen — unless ``pause_s`` is set (a live room, where a drawing may be a single line):
   then the wait for more lines ends once the drawer drew nothing new for ``pause_s`` after the
   last line was read (``pen_down`` says a line is being drawn: no pause then).
3. Typing: a chosen word is said once typed, ``type_base_s + type_char_s * len(word)`` seconds
   later (times ``1 ± reaction_jitter``); meanwhile the AI types, and drops the word if another
   player says it first.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from games.ai.base import (
    Related,
    ToFrench,
    identity_french,
    no_relations,
    normalize,
    perturb,
)
from games.ai.levels import KontourGuesserLevel

GESTURES: tuple[str, ...] = ("proche", "hors_sujet")  # the engine's gesture names


class GuesserError(ValueError):
    """A call the AI guesser cannot make sense of (unknown gesture, time going back...)."""


@dataclass(frozen=True)
class Say:
    """One word the AI says: the category key, the French word, and how sure it was."""

    key: str
    word: str
    prob: float
    at: float


@dataclass
class _Observation:
    visible_at: float
    probs: dict[str, float]
    strokes: int  # strokes in the drawing it was computed on


@dataclass
class _Belief:
    """A belief and what it was computed from (the very set and list of words heard and said,
    held here so that their identity stays theirs, and their sizes; the gestures seen)."""

    observation: _Observation  # the latest visible one
    heard: set[str]
    heard_size: int
    said: list[str]
    said_size: int
    gestures: int
    probs: dict[str, float]
    best: str | None  # the most likely word (the first in sorted order among equals)

    def still(self, guesser: KontourGuesser, latest: _Observation) -> bool:
        """Whether this belief is still `guesser`'s with `latest` the newest visible reading."""
        return (self.observation is latest and self.heard is guesser._excluded
                and self.heard_size == len(guesser._excluded) and self.said is guesser.said
                and self.said_size == len(guesser.said) and self.gestures == guesser._gestures)


@dataclass
class KontourGuesser:
    """One AI guesser for one Kontour turn (make a new one, or call `new_turn`, each turn)."""

    level: KontourGuesserLevel
    rng: random.Random
    to_french: ToFrench = identity_french
    related: Related = no_relations
    candidates: Sequence[str] | None = None
    turn_start: float = 0.0
    turn_length: float = 30.0
    pause_s: float | None = None  # fewer than min_strokes lines are enough after this long without one
    said: list[str] = field(default_factory=list)
    _excluded: set[str] = field(default_factory=set)
    _factors: dict[str, float] = field(default_factory=dict)
    _observations: list[_Observation] = field(default_factory=list)
    _last_said_at: float | None = None
    _last_now: float = float("-inf")
    _typing: Say | None = None  # the word being typed, `at` = when it is said
    _pen_down: bool = False  # a line is being drawn (see `pen_down`)
    _gestures: int = 0  # gestures seen so far (part of what the belief depends on)
    _known: _Belief | None = None  # the last belief computed, reused while its inputs stay the same

    def new_turn(self, turn_start: float, candidates: Sequence[str] | None = None) -> None:
        """Forget everything about the previous turn."""
        self.turn_start = turn_start
        self.candidates = candidates
        self.said = []
        self._excluded = set()
        self._factors = {}
        self._observations = []
        self._last_said_at = None
        self._last_now = float("-inf")
        self._typing = None
        self._pen_down = False
        self._known = None

    # -- inputs ---------------------------------------------------------------------------
    def observe(self, probs: Mapping[str, float], now: float, strokes: int | None = None) -> None:
        """The recognizer's distribution after a new stroke at time `now` (`strokes`: how many
        strokes the drawing has; default: one more than the previous observation)."""
        self._check_time(now)
        if self.candidates is not None:
            allowed = set(self.candidates)
            probs = {k: p for k, p in probs.items() if k in allowed}
        noisy = perturb(probs, self.rng, self.level.noise, self.level.temperature)
        jitter = self.level.reaction_jitter
        delay = self.level.reaction_s * (1 + jitter * (2 * self.rng.random() - 1) if jitter else 1)
        count = strokes if strokes is not None else len(self._observations) + 1
        self._observations.append(_Observation(now + delay, noisy, count))
        self._pen_down = False

    def pen_down(self) -> None:
        """The drawer started a line (it ends with the next `observe`): not a pause."""
        self._pen_down = True

    def heard(self, key: str) -> None:
        """Another player said `key` and it was wrong: never say it."""
        self._excluded.add(key)

    def gesture(self, kind: str, key: str | None = None) -> None:
        """The drawer's « proche » or « hors sujet » (`hors_sujet`) about guess `key` (a
        category key; default: this AI's last word)."""
        if kind not in GESTURES:
            raise GuesserError(f"unknown gesture '{kind}' (known: {', '.join(GESTURES)})")
        target = key if key is not None else (self.said[-1] if self.said else None)
        if target is None:
            return
        self._gestures += 1
        if kind == "proche":
            for other in self.related(target):
                self._factors[other] = max(self._factors.get(other, 1.0), 1.0) * (
                    self.level.close_boost
                )
        else:
            for other in {target, *self.related(target)}:
                self._factors[other] = self._factors.get(other, 1.0) * self.level.off_topic_factor

    # -- decisions ------------------------------------------------------------------------
    def threshold(self, now: float) -> float:
        """The confidence needed to speak at time `now`."""
        share = min(1.0, max(0.0, (now - self.turn_start) / self.turn_length))
        high, low = self.level.threshold, min(self.level.threshold_floor, self.level.threshold)
        return high - (high - low) * share

    def belief(self, now: float) -> dict[str, float]:
        """What the AI believes at `now`: latest visible distribution, gestures applied, words
        already said removed, renormalised (empty before the first stroke is seen)."""
        known = self._current(now)
        return dict(known.probs) if known else {}

    def _current(self, now: float) -> _Belief | None:
        """The belief at `now` and its most likely word, computed again only when what it depends
        on changed (a new observation visible, a word said or heard, a gesture): `decide` runs at
        every tick of the table."""
        latest = next((o for o in reversed(self._observations) if o.visible_at <= now), None)
        if latest is None:
            return None
        if self._known is not None and self._known.still(self, latest):
            return self._known
        gone = self._excluded | set(self.said)
        adjusted = {
            key: p * self._factors.get(key, 1.0)
            for key, p in latest.probs.items()
            if key not in gone
        }
        probs = normalize(adjusted)
        best = max(sorted(probs), key=lambda k: probs[k]) if probs else None
        self._known = _Belief(latest, self._excluded, len(self._excluded), self.said, len(self.said),
                              self._gestures, probs, best)
        return self._known

    def decide(self, now: float) -> Say | None:
        """The word to say at `now`, or None (not sure enough, too soon, nothing seen yet)."""
        self._check_time(now)
        if self._typing is not None:
            typed = self._typing
            if now < typed.at:
                return None
            self._typing = None
            if typed.key in self._excluded:  # somebody said it first: drop it
                return None
            self.said.append(typed.key)
            self._last_said_at = now
            return Say(key=typed.key, word=typed.word, prob=typed.prob, at=now)
        if self._last_said_at is not None:
            if now - self._last_said_at < 1.0 / self.level.max_guesses_per_s:
                return None
        seen = [o for o in self._observations if o.visible_at <= now]
        if not seen or (seen[-1].strokes < self.level.min_strokes and not self._paused(seen, now)):
            return None
        known = self._current(now)
        if known is None or known.best is None:
            return None
        key = known.best
        prob = known.probs[key]
        if prob < self.threshold(now):
            return None
        word = self.to_french(key)
        typing = self.level.type_base_s + self.level.type_char_s * len(word)
        if typing <= 0:
            self.said.append(key)
            self._last_said_at = now
            return Say(key=key, word=word, prob=prob, at=now)
        jitter = self.level.reaction_jitter
        typing *= 1 + jitter * (2 * self.rng.random() - 1) if jitter else 1
        self._typing = Say(key=key, word=word, prob=prob, at=now + typing)
        return None

    def _paused(self, seen: list[_Observation], now: float) -> bool:
        """Whether the drawer stopped: every line was read, the last one ``pause_s`` ago or more."""
        if self.pause_s is None or self._pen_down or len(seen) < len(self._observations):
            return False
        return now - seen[-1].visible_at >= self.pause_s

    def _check_time(self, now: float) -> None:
        if now < self._last_now:
            raise GuesserError(f"time went back: {now} < {self._last_now}")
        self._last_now = now
