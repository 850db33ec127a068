"""The Pictomania AI guesser: for each opponent, decides which number to bet and **when**.

Joint reasoning. Opponent ``j`` draws ``cards[s_j][n_j]`` with an unknown symbol ``s_j`` and an
unknown number ``n_j``; all symbols are different, all numbers are different, and the AI's own
symbol and number are taken. With ``L_j(s, n)`` = the recognizer's probability (over the words on
the table) that ``j``'s drawing shows ``cards[s][n]``, the posterior of a whole assignment is
proportional to ``prod_j L_j(s_j, n_j)`` over consistent assignments only. `joint_number_marginals`
sums them exactly (for each assignment of numbers, the symbol assignments opponent by opponent over
the sets of symbols already taken) and returns ``P(n_j = n)`` for every opponent;
an AI computes them again only when a new reading of a drawing becomes visible to it. A drawing
that clearly shows number 3 thus pushes every other opponent away from 3.

When to commit (expected value in points, per opponent, with ``p`` = best marginal, ``s`` = cards
already on that opponent's stack, ``V(s)`` = expected scoring token when ``s`` cards are ahead of
ours, each correct with probability ``others_accuracy``, ``C`` = ``wrong_cost``):

- now:  ``EV_now  = p * V(s) - (1 - p) * C``
- wait one more stroke: ``p' = p + (1 - p) * learn_rate`` if the opponent is still drawing (else
  ``p' = p``), and ``s' = s + open * others_commit_rate`` more cards ahead (``open`` = players who
  may still guess that stack): ``EV_wait = p' * V(s') - (1 - p') * C``.
- commit when ``EV_now >= EV_wait`` and ``EV_now >= min_ev``; one commit per ``think_s``; a
  number already played on another stack is never played again (one guessing card per number).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from games.ai.base import MIN_PROB, perturb
from games.ai.levels import PictomaniaGuesserLevel

N_NUMBERS = 7


class PictomaniaAIError(ValueError):
    """Inconsistent table for the Pictomania AI (too many opponents, unknown opponent...)."""


@cache
def _permutations(k: int, n: int) -> np.ndarray:
    """Every ordered choice of ``k`` distinct positions among ``n``: shape ``(n!/(n-k)!, k)``."""
    return np.array(list(itertools.permutations(range(n), k)), dtype=np.intp).reshape(-1, k)


@cache
def _masks_by_size(n: int) -> tuple[np.ndarray, ...]:
    """The subsets of ``n`` positions as bit masks, grouped by their size (0 … n)."""
    masks = np.arange(1 << n)
    sizes = np.array([bin(m).count("1") for m in masks])
    return tuple(masks[sizes == k] for k in range(n + 1))


def _injective_sums(m: np.ndarray) -> np.ndarray:
    """For each ``b``: the sum over every injective map ``f`` from rows to columns of
    ``prod_j m[b, j, f(j)]`` (a permanent, for a square matrix). ``m``: shape ``(B, rows, columns)``,
    rows <= columns. Row by row over the sets of columns taken, every term positive (no
    cancellation)."""
    count, rows, columns = m.shape
    by_size = _masks_by_size(columns)
    taken = np.zeros((count, 1 << columns))
    taken[:, 0] = 1.0
    for j in range(rows):
        grown = np.zeros_like(taken)
        for column in range(columns):
            bit = 1 << column
            free = by_size[j][(by_size[j] & bit) == 0]
            grown[:, free | bit] += taken[:, free] * m[:, j, column, None]
        taken = grown
    return taken[:, by_size[rows]].sum(axis=1)


def joint_number_marginals(
    likelihoods: np.ndarray, free_symbols: Sequence[int], free_numbers: Sequence[int]
) -> np.ndarray:
    """``P(n_j = n)`` for each opponent ``j`` (rows) and number index ``n`` (0-6, columns).

    `likelihoods` has shape ``(opponents, cards, 7)``; only the free symbols / numbers (those not
    held by the AI itself) are possible, and no two opponents share a symbol or a number.
    """
    lik = np.asarray(likelihoods, dtype=np.float64)
    n_opp = lik.shape[0]
    if n_opp == 0:
        return np.zeros((0, N_NUMBERS))
    if n_opp > len(free_symbols) or n_opp > len(free_numbers):
        raise PictomaniaAIError(
            f"{n_opp} opponents cannot have distinct symbols among {len(free_symbols)} "
            f"and distinct numbers among {len(free_numbers)}"
        )
    # numbers[b, j]: opponent j's number in number assignment b; for each b, the weight of every
    # symbol assignment summed: by_numbers[b] = sum over injective symbol maps of the product of
    # the opponents' likelihoods (products of values >= MIN_PROB: no underflow for 7 players)
    numbers = np.asarray(free_numbers, dtype=np.intp)[_permutations(n_opp, len(free_numbers))]
    symbols = np.asarray(free_symbols, dtype=np.intp)
    chosen = np.maximum(lik, MIN_PROB)[np.arange(n_opp)[None, :, None], symbols[None, None, :],
                                       numbers[:, :, None]]  # (b, opponent, free symbol)
    by_numbers = _injective_sums(chosen)
    by_numbers /= by_numbers.sum()
    out = np.zeros((n_opp, N_NUMBERS))
    for j in range(n_opp):
        out[j] = np.bincount(numbers[:, j], weights=by_numbers, minlength=N_NUMBERS)
    return out


def independent_number_marginals(
    likelihoods: np.ndarray, free_symbols: Sequence[int], free_numbers: Sequence[int]
) -> np.ndarray:
    """Baseline without the all-different constraint between opponents (the AI's own symbol and
    number still excluded): each opponent read on its own."""
    lik = np.asarray(likelihoods, dtype=np.float64)
    out = np.zeros((lik.shape[0], N_NUMBERS))
    numbers = list(free_numbers)
    for j in range(lik.shape[0]):
        sub = lik[j][list(free_symbols)][:, numbers].sum(axis=0)
        out[j, numbers] = sub / sub.sum() if sub.sum() > 0 else 1.0 / len(numbers)
    return out


def expected_token(tokens: Sequence[int], ahead: float, others_accuracy: float) -> float:
    """Expected scoring token won by a correct guess with `ahead` cards before it on the stack
    (fractional `ahead` interpolates), each of them correct with probability `others_accuracy`."""
    low = math.floor(ahead)
    frac = ahead - low

    def value(n: int) -> float:
        total = 0.0
        for correct in range(n + 1):
            weight = math.comb(n, correct) * others_accuracy**correct
            weight *= (1 - others_accuracy) ** (n - correct)
            total += weight * (tokens[correct] if correct < len(tokens) else 0)
        return total

    return value(low) if frac == 0 else (1 - frac) * value(low) + frac * value(low + 1)


@dataclass(frozen=True)
class Commit:
    """A guess to place: on `opponent`'s stack, the `number` (1-7), with its marginal and EVs."""

    opponent: str
    number: int
    prob: float
    ev_now: float
    ev_wait: float


@dataclass(frozen=True)
class OpponentState:
    """What is public about an opponent's stack at decision time."""

    stack: int = 0  # cards already placed on their stack
    drawing_done: bool = False  # they stopped drawing (took a bonus token, or no stroke since)


@dataclass
class PictomaniaGuesser:
    """The AI's guessing brain for one Pictomania round."""

    level: PictomaniaGuesserLevel
    rng: random.Random
    cards: Sequence[Sequence[str]]  # the table: cards[symbol][number - 1] = word key
    my_symbol: int
    my_number: int  # 1-7
    opponents: Sequence[str]
    tokens: Sequence[int]  # scoring token values, highest first
    joint: bool = True  # False: read each drawing on its own (for comparison)
    committed: dict[str, int] = field(default_factory=dict)
    _seen: dict[str, list[tuple[float, dict[str, float]]]] = field(default_factory=dict)
    _last_commit_at: float | None = None
    _marginals: tuple[tuple[object, ...], dict[str, np.ndarray]] | None = None  # (readings, table)

    def __post_init__(self) -> None:
        if not 0 <= self.my_symbol < len(self.cards):
            raise PictomaniaAIError(f"my_symbol {self.my_symbol} is not a card slot")
        if not 1 <= self.my_number <= N_NUMBERS:
            raise PictomaniaAIError(f"my_number {self.my_number} is not in 1-7")
        if len(self.opponents) >= len(self.cards) or len(self.opponents) >= N_NUMBERS:
            raise PictomaniaAIError(f"too many opponents ({len(self.opponents)}) for this table")
        self.table_words = [w for card in self.cards for w in card]

    def observe(self, opponent: str, probs: Mapping[str, float], now: float) -> None:
        """The recognizer's probabilities over the table's words for `opponent`'s drawing."""
        if opponent not in self.opponents:
            raise PictomaniaAIError(f"unknown opponent '{opponent}'")
        restricted = {w: probs.get(w, 0.0) for w in self.table_words}
        noisy = perturb(restricted, self.rng, self.level.noise, self.level.temperature)
        self._seen.setdefault(opponent, []).append((now + self.level.reaction_s, noisy))

    def forget(self, opponent: str) -> None:
        """Drop every reading of `opponent`'s drawing (it was undone or cleared: the next
        reading, of the strokes left, replaces them)."""
        self._seen.pop(opponent, None)

    def _latest(self, opponent: str, now: float) -> dict[str, float] | None:
        """The newest reading of `opponent`'s drawing visible at `now` (None: none yet)."""
        visible = [p for t, p in self._seen.get(opponent, []) if t <= now]
        return visible[-1] if visible else None

    def marginals(self, now: float) -> dict[str, np.ndarray]:
        """``P(number)`` (7 values, index 0 = number 1) for every opponent, as seen at `now`:
        computed again only when the readings visible at `now` differ from the last call's."""
        readings = tuple(self._latest(opp, now) for opp in self.opponents)
        cached = self._marginals
        if cached is not None and all(a is b for a, b in zip(cached[0], readings, strict=True)):
            return cached[1]
        lik = np.ones((len(self.opponents), len(self.cards), N_NUMBERS))
        for j, probs in enumerate(readings):
            if probs is not None:
                for s, card in enumerate(self.cards):
                    for n, word in enumerate(card):
                        lik[j, s, n] = probs.get(word, 0.0)
        free_s = [s for s in range(len(self.cards)) if s != self.my_symbol]
        free_n = [n for n in range(N_NUMBERS) if n != self.my_number - 1]
        reader = joint_number_marginals if self.joint else independent_number_marginals
        table = reader(lik, free_s, free_n)
        table.setflags(write=False)  # shared by every call until a new reading shows
        result = {opp: table[j] for j, opp in enumerate(self.opponents)}
        self._marginals = (readings, result)
        return result

    def evaluate(self, prob: float, state: OpponentState) -> tuple[float, float]:
        """(EV of committing now, EV of waiting one more stroke) for a best marginal `prob`."""
        lv = self.level
        cost = lv.wrong_cost
        ev_now = prob * expected_token(self.tokens, state.stack, lv.others_accuracy) - (
            1 - prob
        ) * cost
        later = prob if state.drawing_done else prob + (1 - prob) * lv.learn_rate
        open_guessers = max(0, len(self.opponents) - 1 - state.stack)
        ahead = min(state.stack + open_guessers * lv.others_commit_rate, len(self.opponents) - 1)
        ev_wait = later * expected_token(self.tokens, ahead, lv.others_accuracy) - (
            1 - later
        ) * cost
        return ev_now, ev_wait

    def decide(self, now: float, states: Mapping[str, OpponentState]) -> Commit | None:
        """The guess to place now (the one with the best EV), or None."""
        if self._last_commit_at is not None and now - self._last_commit_at < self.level.think_s:
            return None
        marg = self.marginals(now)
        best: Commit | None = None
        for opp in self.opponents:
            if opp in self.committed or not self._seen.get(opp):
                continue
            if all(t > now for t, _ in self._seen[opp]):
                continue
            index, prob = self.best_number(marg[opp])
            ev_now, ev_wait = self.evaluate(prob, states.get(opp, OpponentState()))
            if ev_now >= ev_wait and ev_now >= self.level.min_ev:
                if best is None or ev_now > best.ev_now:
                    best = Commit(opp, index + 1, prob, ev_now, ev_wait)
        if best is not None:
            self.committed[best.opponent] = best.number
            self._last_commit_at = now
        return best

    def best_number(self, marginal: np.ndarray) -> tuple[int, float]:
        """(index 0-6, probability) of the most probable number this AI can still play: a number
        already placed on another stack is gone (one guessing card per number)."""
        row = marginal.copy()
        for used in self.committed.values():
            row[used - 1] = -1.0
        index = int(np.argmax(row))
        return index, max(0.0, float(row[index]))

    def finished(self, now: float, states: Mapping[str, OpponentState]) -> bool:
        """True when nothing is left to gain by waiting: every opponent is either guessed or has
        stopped drawing with no number left worth playing (the caller also checks its own
        drawing). Judged on the numbers it can still play, as `decide` does: an AI whose number
        for a drawing was spent on another stack is done with it, not stuck."""
        marg = self.marginals(now)
        for opp in self.opponents:
            if opp in self.committed:
                continue
            state = states.get(opp, OpponentState())
            if not state.drawing_done:
                return False
            if any(t > now for t, _ in self._seen.get(opp, [])):
                return False  # still "looking" at the last strokes
            _, prob = self.best_number(marg[opp])
            ev_now, _ = self.evaluate(prob, state)
            if ev_now >= self.level.min_ev:
                return False
        return True
