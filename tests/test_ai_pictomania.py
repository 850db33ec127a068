"""Pictomania AI: joint reasoning over opponents' numbers and the commit-or-wait policy."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from games.ai import (
    OpponentState,
    PictomaniaAIError,
    PictomaniaGuesser,
    independent_number_marginals,
    joint_number_marginals,
)
from games.ai.levels import PictomaniaGuesserLevel
from games.ai.pictomania_guesser import expected_token

LEVEL = PictomaniaGuesserLevel(
    reaction_s=0.0,
    noise=0.0,
    temperature=1.0,
    think_s=0.0,
    wrong_cost=1.5,
    learn_rate=0.25,
    others_commit_rate=0.3,
    others_accuracy=0.6,
    min_ev=0.2,
)
# 6 cards x 7 words: card s, number n -> "w<s><n>"
CARDS = [[f"w{s}{n}" for n in range(1, 8)] for s in range(6)]


def brute_force(lik: np.ndarray, free_s: list[int], free_n: list[int]) -> np.ndarray:
    n_opp = lik.shape[0]
    out = np.zeros((n_opp, 7))
    for syms in itertools.permutations(free_s, n_opp):
        for nums in itertools.permutations(free_n, n_opp):
            w = np.prod([lik[j, syms[j], nums[j]] for j in range(n_opp)])
            for j in range(n_opp):
                out[j, nums[j]] += w
    return out / out.sum(axis=1, keepdims=True)


def test_joint_marginals_match_brute_force_enumeration() -> None:
    rng = np.random.default_rng(0)
    lik = rng.random((3, 6, 7))
    free_s, free_n = [0, 1, 3, 4, 5], [0, 1, 2, 4, 5, 6]
    got = joint_number_marginals(lik, free_s, free_n)
    np.testing.assert_allclose(got, brute_force(lik, free_s, free_n), atol=1e-12)
    assert np.allclose(got.sum(axis=1), 1.0)
    assert np.all(got[:, 3] == 0)  # the AI's own number


@pytest.mark.parametrize("opponents", [1, 2, 5])
def test_joint_marginals_match_brute_force_for_every_table_size(opponents: int) -> None:
    rng = np.random.default_rng(opponents)
    lik = rng.random((opponents, 6, 7)) ** 3  # peaked, as real readings are
    free_s, free_n = [0, 2, 3, 4, 5], [0, 1, 2, 3, 4, 6]
    np.testing.assert_allclose(joint_number_marginals(lik, free_s, free_n),
                               brute_force(lik, free_s, free_n), atol=1e-12)


def test_marginals_are_computed_again_only_when_a_new_reading_shows(monkeypatch) -> None:
    import games.ai.pictomania_guesser as guesser

    calls = []
    real = guesser.joint_number_marginals
    monkeypatch.setattr(guesser, "joint_number_marginals", lambda *a: calls.append(1) or real(*a))
    ai = make(level=LEVEL.model_copy(update={"reaction_s": 1.0}))
    ai.observe("ana", probs_for({"w24": 0.6}), now=0.0)
    first = ai.marginals(0.5)  # the reading is not visible yet
    assert ai.marginals(0.9) is first and len(calls) == 1
    second = ai.marginals(1.0)  # now it is
    assert second is not first and len(calls) == 2
    assert second["ana"][3] > first["ana"][3]
    for now in (1.1, 1.5, 2.0):  # ticks with nothing new: no work
        assert ai.marginals(now) is second
    assert len(calls) == 2
    ai.forget("ana")
    assert ai.marginals(2.1)["ana"][3] == pytest.approx(first["ana"][3]) and len(calls) == 3


def test_all_different_numbers_change_the_reading_of_an_ambiguous_drawing() -> None:
    # Opponent A clearly draws w13 (number 3). Opponent B is ambiguous: w23 or w35, leaning w23.
    lik = np.full((2, 6, 7), 1e-3)
    lik[0, 1, 2] = 0.95
    lik[1, 2, 2] = 0.55
    lik[1, 3, 4] = 0.40
    free_s, free_n = [1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6]  # the AI holds symbol 0, number 1
    alone = independent_number_marginals(lik, free_s, free_n)
    joint = joint_number_marginals(lik, free_s, free_n)
    assert int(np.argmax(alone[1])) + 1 == 3
    assert int(np.argmax(joint[1])) + 1 == 5
    assert joint[1, 4] > 0.9


def probs_for(word_probs: dict[str, float]) -> dict[str, float]:
    rest = 1.0 - sum(word_probs.values())
    others = [w for card in CARDS for w in card if w not in word_probs]
    return word_probs | {w: rest / len(others) for w in others}


def make(joint: bool = True, level: PictomaniaGuesserLevel = LEVEL) -> PictomaniaGuesser:
    return PictomaniaGuesser(
        level=level,
        rng=random.Random(0),
        cards=CARDS,
        my_symbol=0,
        my_number=1,
        opponents=["ana", "bob"],
        tokens=[3, 2],
        joint=joint,
    )


def test_joint_reasoning_changes_the_committed_guess() -> None:
    # Alone, bob's drawing is a coin toss between 3 and 5 (and 3 is already played on ana):
    # a cautious AI (min_ev 1) does not bet on it. Jointly, ana's clear 3 makes bob a sure 5.
    decisions = {}
    cautious = LEVEL.model_copy(update={"min_ev": 1.0})
    for joint in (True, False):
        ai = make(joint, level=cautious)
        ai.observe("ana", probs_for({"w13": 0.9}), now=0.0)
        ai.observe("bob", probs_for({"w23": 0.5, "w35": 0.45}), now=0.0)
        done = {"ana": OpponentState(drawing_done=True), "bob": OpponentState(drawing_done=True)}
        first = ai.decide(1.0, done)
        second = ai.decide(2.0, done)
        decisions[joint] = {c.opponent: c.number for c in (first, second) if c is not None}
    assert decisions[True] == {"ana": 3, "bob": 5}
    assert decisions[False] == {"ana": 3}


def test_sure_early_guess_is_committed_at_once() -> None:
    ai = make()
    ai.observe("ana", probs_for({"w24": 0.97}), now=0.0)
    commit = ai.decide(0.5, {"ana": OpponentState(stack=0)})
    assert commit is not None and (commit.opponent, commit.number) == ("ana", 4)
    assert commit.ev_now >= commit.ev_wait
    assert ai.decide(1.0, {}) is None  # one guess per opponent, bob not seen yet


def test_unsure_guess_waits_while_the_opponent_draws_then_commits_when_done() -> None:
    ai = make()
    ai.observe("ana", probs_for({"w24": 0.62, "w36": 0.3}), now=0.0)
    assert ai.decide(1.0, {"ana": OpponentState(drawing_done=False)}) is None
    commit = ai.decide(2.0, {"ana": OpponentState(drawing_done=True)})
    assert commit is not None and commit.number == 4


def test_hopeless_guess_is_never_committed_and_the_ai_can_finish() -> None:
    ai = make()
    flat = probs_for({})
    ai.observe("ana", flat, now=0.0)
    ai.observe("bob", flat, now=0.0)
    done = {p: OpponentState(drawing_done=True) for p in ("ana", "bob")}
    assert ai.decide(1.0, done) is None
    assert ai.finished(1.0, done)
    assert not ai.finished(1.0, {"ana": OpponentState(drawing_done=False)})


def test_an_ai_whose_number_for_a_drawing_is_spent_still_finishes() -> None:
    """Regression: the AI bet 4 on bob (wrong), then ana's drawing clearly shows number 4. Its
    "finish?" check used to look at 4 (spent) and its "bet?" check did not: it never ended and the
    round ran out its timer. Now it bets a remaining plausible number or takes its token."""
    ai = make()
    ai.observe("bob", probs_for({"w34": 0.95}), now=0.0)
    first = ai.decide(0.5, {"bob": OpponentState(drawing_done=True), "ana": OpponentState()})
    assert first is not None and (first.opponent, first.number) == ("bob", 4)
    ai.observe("ana", probs_for({"w24": 0.97}), now=1.0)
    done = {p: OpponentState(stack=1, drawing_done=True) for p in ("ana", "bob")}
    for t in range(2, 20):
        ai.decide(float(t), done)
        if ai.finished(float(t), done):
            break
    else:
        pytest.fail("the AI never finishes when its number for a drawing is spent")
    assert 4 not in [n for o, n in ai.committed.items() if o == "ana"]


def test_more_cards_ahead_make_waiting_costlier() -> None:
    ai = make()
    ev_now_empty, ev_wait_empty = ai.evaluate(0.7, OpponentState(stack=0))
    ev_now_full, _ = ai.evaluate(0.7, OpponentState(stack=1))
    assert ev_now_full < ev_now_empty
    assert ev_wait_empty > ev_now_empty  # early and still drawing: worth waiting at 0.7


def test_expected_token_by_position() -> None:
    assert expected_token([3, 2, 2], 0, 0.6) == 3
    assert expected_token([3, 2, 2], 1, 1.0) == 2
    assert expected_token([3, 2, 2], 1, 0.0) == 3
    assert expected_token([3, 2], 2, 1.0) == 0
    assert expected_token([3, 2, 2], 0.5, 1.0) == pytest.approx(2.5)


def test_reaction_delay_and_think_time() -> None:
    level = LEVEL.model_copy(update={"reaction_s": 1.0, "think_s": 2.0})
    ai = make(level=level)
    ai.observe("ana", probs_for({"w24": 0.97}), now=0.0)
    ai.observe("bob", probs_for({"w36": 0.97}), now=0.0)
    assert ai.decide(0.5, {}) is None
    assert ai.decide(1.0, {}) is not None
    assert ai.decide(2.0, {}) is None
    assert ai.decide(3.0, {}) is not None


def test_bad_tables_raise_typed_errors() -> None:
    ai = make()
    with pytest.raises(PictomaniaAIError, match="unknown opponent"):
        ai.observe("zoe", {}, now=0.0)
    with pytest.raises(PictomaniaAIError, match="my_number"):
        PictomaniaGuesser(LEVEL, random.Random(0), CARDS, 0, 8, ["a"], [3, 2])
    with pytest.raises(PictomaniaAIError, match="distinct"):
        joint_number_marginals(np.ones((3, 6, 7)), [1, 2], [1, 2, 3])


def test_a_number_card_is_used_once() -> None:
    ai = make()
    ai.observe("ana", probs_for({"w24": 0.97}), now=0.0)
    ai.observe("bob", probs_for({"w34": 0.5, "w46": 0.3, "w55": 0.2}), now=0.0)
    done = {p: OpponentState(drawing_done=True) for p in ("ana", "bob")}
    assert ai.decide(1.0, done).number == 4
    second = ai.decide(2.0, done)
    assert second is None or second.number != 4


def test_the_driver_rereads_a_drawing_after_an_undo_and_forgets_it_after_a_clear() -> None:
    """The AI guessers read the person's drawing as it is after an undo (a new recognition of the
    strokes left; a reading of the longer drawing that arrives late is dropped) and know nothing
    of it once it is cleared."""
    from games.pictomania import Clear, PictoStroke, Undo
    from tests.test_ai_pacing import Decoder, PersonTable

    table = PersonTable("hard")
    ai = table.players[1]
    blank = table.driver.brains[ai].marginals(0.0)["joueur"]
    lines = [((10.0, 10.0), (100.0, 10.0)), ((10.0, 40.0), (210.0, 40.0)), ((10.0, 70.0), (130.0, 70.0))]
    for i, line in enumerate(lines):
        table.now = 1.0 + i
        table.apply(PictoStroke(player="joueur", points=line))
    [three] = [look for look in table.driver.looks() if look.subject == "joueur"]
    assert len(three.drawing) == 3
    table.now = 5.0
    table.apply(Undo(player="joueur"))
    [two] = [look for look in table.driver.looks() if look.subject == "joueur"]
    assert len(two.drawing) == 2 and two.ticket[1] > three.ticket[1]
    table.driver.seen(three, Decoder().probabilities(three.drawing, three.candidates), 6.0)  # stale
    assert np.allclose(table.driver.brains[ai].marginals(6.0)["joueur"], blank)
    table.driver.seen(two, Decoder().probabilities(two.drawing, two.candidates), 6.0)
    read = table.driver.brains[ai].marginals(30.0)["joueur"]
    assert not np.allclose(read, blank)  # the two strokes left say something
    table.now = 31.0
    table.apply(Clear(player="joueur"))
    assert [look for look in table.driver.looks() if look.subject == "joueur"] == []
    assert np.allclose(table.driver.brains[ai].marginals(31.0)["joueur"], blank)
    assert not table.driver.drawing_done(table.state, "joueur", 32.0)  # a clear is drawing too


def test_the_ai_players_never_bet_at_the_same_instant() -> None:
    """Three AI players reading the same drawings bet one after another, a pause between two bets
    (`BET_PAUSE_S`), never together in one tick."""
    from games.ai.driver import BET_PAUSE_S
    from games.pictomania import PictoStroke
    from tests.test_ai_pacing import Decoder, PersonTable

    table = PersonTable("hard")
    times: list[float] = []
    table.now = 0.5
    table.apply(PictoStroke(player="joueur", points=((30.0, 30.0), (200.0, 30.0), (200.0, 200.0))))

    def placed() -> int:
        return sum(len(stack) for stack in table.state.round.stacks.values())

    while table.state.phase == "playing" and table.now < 200:
        table.now = round(table.now + 0.1, 6)
        before = placed()
        table.driver.step(table, table.now)
        times.extend(table.now for _ in range(placed() - before))
        for look in table.driver.looks():
            table.driver.seen(look, Decoder().probabilities(look.drawing, look.candidates), table.now)
    assert len(times) >= 3  # the AIs did bet
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= BET_PAUSE_S[0] - 1e-6, gaps


def test_stroke_cache_converts_only_the_new_polylines() -> None:
    """A drawing that grows, loses its last stroke, holds an empty polyline, or starts over reads
    as the whole conversion would; the polylines kept from the previous call keep their converted
    strokes (the same objects: not converted again)."""
    from games.ai.driver import StrokeCache, _as_strokes

    cache = StrokeCache()
    lines = [tuple((float(i + k), float(2 * k)) for k in range(3)) for i in range(4)]
    first = cache.convert("ana", (lines[0], lines[1]))
    assert first == _as_strokes((lines[0], lines[1]))
    grown = cache.convert("ana", (lines[0], lines[1], (), lines[2]))
    assert grown == _as_strokes((lines[0], lines[1], lines[2]))
    assert grown[0] is first[0] and grown[1] is first[1]
    undone = cache.convert("ana", (lines[0], lines[1], ()))
    assert undone == _as_strokes((lines[0], lines[1])) and undone[1] is first[1]
    other = cache.convert("bob", (lines[3],))
    assert other == _as_strokes((lines[3],))
    equal_not_same = tuple(tuple(p) for p in lines[0])  # another object: converted again
    again = cache.convert("ana", (equal_not_same, lines[1]))
    assert again == first and again[0] is not first[0]
    cache.clear()
    assert cache.convert("ana", (lines[1],)) == _as_strokes((lines[1],))
