"""Kontour AI guesser decisions on fixed probability sequences (no model)."""

from __future__ import annotations

import random
import statistics

import pytest

from games.ai import GuesserError, KontourGuesser, load_level, relations_from_groups
from games.ai.levels import KontourGuesserLevel

PLAIN = KontourGuesserLevel(
    reaction_s=1.0,
    threshold=0.5,
    threshold_floor=0.5,
    noise=0.0,
    temperature=1.0,
    max_guesses_per_s=1.0,
    close_boost=4.0,
    off_topic_factor=0.1,
)


def guesser(level: KontourGuesserLevel = PLAIN, **kwargs) -> KontourGuesser:
    return KontourGuesser(level=level, rng=random.Random(0), **kwargs)


def test_waits_for_its_reaction_delay_before_speaking() -> None:
    g = guesser()
    g.observe({"cat": 0.9, "dog": 0.1}, now=1.0)
    assert g.decide(1.5) is None
    said = g.decide(2.0)
    assert said is not None and (said.key, said.at) == ("cat", 2.0)
    assert said.prob == pytest.approx(0.9)


def test_speaks_only_when_confident_enough() -> None:
    g = guesser()
    g.observe({"cat": 0.4, "dog": 0.35, "car": 0.25}, now=0.0)
    assert g.decide(5.0) is None
    g.observe({"cat": 0.6, "dog": 0.3, "car": 0.1}, now=6.0)
    assert g.decide(6.5) is None  # not seen yet
    assert g.decide(7.0).key == "cat"


def test_threshold_decays_over_the_turn() -> None:
    level = PLAIN.model_copy(update={"threshold": 0.8, "threshold_floor": 0.2})
    g = guesser(level, turn_length=30.0)
    assert g.threshold(0.0) == pytest.approx(0.8)
    assert g.threshold(15.0) == pytest.approx(0.5)
    assert g.threshold(60.0) == pytest.approx(0.2)
    g.observe({"cat": 0.45, "dog": 0.55 - 0.1, "car": 0.1}, now=0.0)
    assert g.decide(1.0) is None
    assert g.decide(20.0).key == "cat"  # threshold 0.4 by then


def test_never_says_the_same_word_twice_and_renormalises() -> None:
    g = guesser()
    g.observe({"cat": 0.7, "dog": 0.2, "car": 0.1}, now=0.0)
    first = g.decide(1.0)
    second = g.decide(2.0)
    third = g.decide(3.0)
    assert (first.key, second.key, third.key) == ("cat", "dog", "car")
    assert second.prob == pytest.approx(0.2 / 0.3)
    assert g.decide(4.0) is None  # nothing left to say
    assert g.said == ["cat", "dog", "car"]


def test_rate_limit_between_words() -> None:
    level = PLAIN.model_copy(update={"max_guesses_per_s": 0.5})
    g = guesser(level)
    g.observe({"cat": 0.6, "dog": 0.4}, now=0.0)
    assert g.decide(1.0).key == "cat"
    assert g.decide(2.5) is None  # 1.5 s < 2 s
    assert g.decide(3.0).key == "dog"


def test_close_gesture_moves_toward_related_words() -> None:
    related = relations_from_groups([["cat", "tiger", "lion"]])
    probs = {"cat": 0.5, "car": 0.25, "tiger": 0.15, "bus": 0.1}
    plain = guesser(related=related)
    plain.observe(probs, now=0.0)
    assert plain.decide(1.0).key == "cat"
    assert plain.decide(2.0).key == "car"

    told = guesser(related=related)
    told.observe(probs, now=0.0)
    assert told.decide(1.0).key == "cat"
    told.gesture("proche")  # about its own last word
    said = told.decide(2.0)
    assert said.key == "tiger"
    assert said.prob == pytest.approx(0.6 / (0.25 + 0.6 + 0.1))


def test_off_topic_gesture_moves_away_from_the_guess_and_its_relatives() -> None:
    related = relations_from_groups([["cat", "dog"]])
    g = guesser(related=related)
    g.observe({"cat": 0.55, "dog": 0.3, "car": 0.15}, now=0.0)
    assert g.decide(1.0).key == "cat"
    g.gesture("hors_sujet", "cat")
    assert g.decide(2.0).key == "car"


def test_gesture_about_another_players_guess_and_heard_words() -> None:
    related = relations_from_groups([["cat", "tiger"]])
    g = guesser(related=related)
    g.observe({"car": 0.5, "tiger": 0.3, "cat": 0.2}, now=0.0)
    g.heard("cat")  # somebody said "chat": wrong
    g.gesture("proche", "cat")  # ... but close
    said = g.decide(1.0)
    assert said.key == "tiger"
    assert "cat" not in g.belief(1.0)


def test_says_french_words() -> None:
    g = guesser(to_french={"cat": "chat", "dog": "chien"}.__getitem__)
    g.observe({"cat": 0.9, "dog": 0.1}, now=0.0)
    said = g.decide(1.0)
    assert (said.key, said.word) == ("cat", "chat")


def test_candidates_restrict_the_words() -> None:
    g = guesser(candidates=["dog", "car"])
    g.observe({"cat": 0.8, "dog": 0.15, "car": 0.05}, now=0.0)
    assert g.decide(1.0).key == "dog"


def test_bad_inputs_raise_typed_errors() -> None:
    g = guesser()
    with pytest.raises(GuesserError, match="unknown gesture"):
        g.gesture("bravo")
    g.decide(5.0)
    with pytest.raises(GuesserError, match="time went back"):
        g.decide(4.0)


def test_new_turn_forgets_the_previous_turn() -> None:
    g = guesser()
    g.observe({"cat": 0.9, "dog": 0.1}, now=0.0)
    assert g.decide(1.0).key == "cat"
    g.new_turn(40.0)
    assert g.decide(40.5) is None
    g.observe({"cat": 0.9, "dog": 0.1}, now=41.0)
    assert g.decide(42.0).key == "cat"


def test_same_seed_same_words_with_noise() -> None:
    level = load_level("easy").kontour_guesser
    seq = [{"cat": 0.49, "dog": 0.49, "car": 0.01, "bus": 0.01}] * 3  # two words over easy's floor

    def run(seed: int) -> list[str]:
        g = KontourGuesser(level=level, rng=random.Random(seed))
        out = []
        for i, probs in enumerate(seq):
            g.observe(probs, now=float(i))
        for t in range(4, 60):
            said = g.decide(t / 2)
            if said:
                out.append(said.key)
        return out

    assert run(3) == run(3)
    assert len(run(3)) >= 2


def _time_to_find(level_name: str, seed: int) -> float:
    """A drawing whose true word becomes clearer stroke by stroke (one stroke every 2 s)."""
    level = load_level(level_name).kontour_guesser
    g = KontourGuesser(level=level, rng=random.Random(seed))
    others = ["cat", "dog", "car", "bus", "tree", "sun", "hat", "cup"]
    for step in range(12):
        truth = 0.05 + 0.07 * step
        probs = {k: (1 - truth) / len(others) for k in others} | {"house": truth}
        g.observe(probs, now=2.0 * step)
        for tick in range(20):
            now = 2.0 * step + tick * 0.1
            said = g.decide(now)
            if said and said.key == "house":
                return now
    return 30.0


def test_levels_change_speed_on_the_same_drawing() -> None:
    times = {
        name: statistics.mean(_time_to_find(name, seed) for seed in range(12))
        for name in ("easy", "normal", "hard")
    }
    assert times["hard"] < times["normal"] < times["easy"]


def test_a_single_line_is_enough_once_the_drawer_paused() -> None:
    level = PLAIN.model_copy(update={"min_strokes": 3})
    waiting = guesser(level)
    waiting.observe({"cat": 0.9, "dog": 0.1}, now=0.0)
    assert waiting.decide(60.0) is None  # without pause_s: three lines, whatever the wait
    g = guesser(level, pause_s=1.5)
    g.observe({"cat": 0.9, "dog": 0.1}, now=0.0)  # read at 1.0
    assert g.decide(2.0) is None  # 1.0 s after it was read: the drawer may go on
    g.pen_down()  # a second line is being drawn: no pause
    assert g.decide(3.0) is None
    g.observe({"cat": 0.9, "dog": 0.1}, now=3.0)  # read at 4.0
    assert g.decide(5.0) is None
    said = g.decide(5.5)
    assert said is not None and said.key == "cat"
