"""Pictomania rules, scenario by scenario (RULES.md, "Pictomania").

`table()` builds a literal round: the secrets (symbol, number) are written in the test instead of
being dealt by the seed. Whole rounds are scripted move by move; the expected scores are worked out
by hand from the rule sheet in the comments.
"""

from __future__ import annotations

import json

import pytest

from games.core import (
    AlreadyDone,
    AlreadyGuessed,
    BadSetup,
    GameOver,
    InvalidMove,
    LoggedMove,
    NotAllowed,
    Tick,
    TimeOver,
    UnknownPlayer,
    WrongPhase,
    events_for,
    replay,
)
from games.pictomania import (
    CardUsed,
    Clear,
    Done,
    NextRound,
    NothingToUndo,
    PictoCard,
    PictomaniaConfig,
    PictomaniaRules,
    PictomaniaState,
    PictoStroke,
    PlaceGuess,
    Secret,
    TooManyStrokes,
    Undo,
)

THEMES = ["animal", "fruit", "tool", "vehicle", "body", "weather", "house", "sport"]


def card(level: int, theme: str) -> PictoCard:
    return PictoCard(level=level, words=tuple(f"{theme}{k}" for k in range(1, 8)))


# 8 cards per level: enough for two rounds of level 2 (6 + 6 would need 12, see below)
DECK = [card(level, f"{t}-L{level}-") for level in (1, 2, 3, 4) for t in THEMES] + [
    card(2, f"extra{i}-L2-") for i in range(4)
]


def rules(**overrides: object) -> PictomaniaRules:
    return PictomaniaRules(PictomaniaConfig.load(**overrides))


def table(r: PictomaniaRules, secrets: dict[str, tuple[int, int]], seed: int = 1) -> PictomaniaState:
    """Round 1 with literal secrets {player: (symbol, number)}, started at t=0."""
    state, _ = r.setup(players=list(secrets), deck=DECK, seed=seed)
    literal = {p: Secret(symbol=s, number=n) for p, (s, n) in secrets.items()}
    return state.replace(round=state.round.replace(secrets=literal))


def play(r: PictomaniaRules, state: PictomaniaState, script: list[tuple[float, object]]):
    events = []
    for now, move in script:
        state, new = r.apply(state, move, now)
        events += new
    return state, events


def guess(player: str, target: str, number: int) -> PlaceGuess:
    return PlaceGuess(player=player, target=target, number=number)


# --------------------------------------------------------------------------------------------
# Setup


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_every_player_gets_a_distinct_symbol_and_a_distinct_number(n):
    r = rules()
    players = [f"p{i}" for i in range(n)]
    for seed in range(25):
        state, events = r.setup(players=players, deck=DECK, seed=seed)
        secrets = state.round.secrets
        assert len({s.symbol for s in secrets.values()}) == n
        assert len({s.number for s in secrets.values()}) == n
        assert all(0 <= s.symbol < 6 and 1 <= s.number <= 7 for s in secrets.values())
        # each player privately learns their word: cards[symbol].words[number - 1]
        dealt = [e for e in events if e.kind == "secret_dealt"]
        assert [e.to for e in dealt] == [(p,) for p in players]
        for e in dealt:
            assert e.word == state.round.cards[e.symbol].words[e.number - 1]


def test_round_setup_six_cards_of_the_rounds_level_and_players_minus_one_bonus_tokens():
    r = rules()
    state, events = r.setup(players=["a", "b", "c", "d"], deck=DECK, seed=3)
    assert [len(cards) for cards in state.round_cards] == [6] * 5
    assert [{c.level for c in cards} for cards in state.round_cards] == [{1}, {2}, {2}, {3}, {4}]
    all_cards = [c for cards in state.round_cards for c in cards]
    assert len(set(all_cards)) == 30  # no card twice in a game
    assert state.round.bonus_left == (3, 2, 2)  # 4 players: 3 tokens
    assert state.round.deadline == 120.0
    assert events[1].kind == "round_started" and events[1].cards == state.round.cards


def test_card_count_and_levels_come_from_config():
    r = rules(cards_per_round=3, rounds=2, levels_per_round=[4, 4])
    state, _ = r.setup(players=["a", "b", "c"], deck=DECK, seed=3)
    assert [[c.level for c in cards] for cards in state.round_cards] == [[4, 4, 4], [4, 4, 4]]


@pytest.mark.parametrize(
    "players, deck, message",
    [
        (["a", "b"], DECK, "3-6 players"),
        ([f"p{i}" for i in range(7)], DECK, "3-6 players"),
        (["a", "a", "b"], DECK, "distinct"),
        (["a", "b", "c"], DECK[:8], "not enough level-2 cards"),
        (["a", "b", "c"], [PictoCard(level=1, words=("x",))], "7 words"),
    ],
)
def test_bad_setups_are_refused(players, deck, message):
    with pytest.raises(BadSetup, match=message):
        rules().setup(players=players, deck=deck, seed=1)


def test_same_seed_same_deal():
    r = rules()
    a, _ = r.setup(players=["a", "b", "c"], deck=DECK, seed=11)
    b, _ = r.setup(players=["a", "b", "c"], deck=DECK, seed=11)
    c, _ = r.setup(players=["a", "b", "c"], deck=DECK, seed=12)
    assert a == b and a != c


# --------------------------------------------------------------------------------------------
# Drawing and guessing


def test_strokes_are_stored_on_the_players_board():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, events = play(
        r,
        state,
        [
            (1.0, PictoStroke(player="a", points=[(0, 0), (5, 9), (12, 3)])),
            (2.0, PictoStroke(player="a", points=[(1, 1)])),
        ],
    )
    assert state.round.drawings["a"] == (((0, 0), (5, 9), (12, 3)), ((1, 1),))
    assert state.round.drawings["b"] == ()
    assert events[0].kind == "stroke_drawn" and events[0].to is None


def test_undo_removes_the_last_stroke_and_clear_the_whole_drawing():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    first, second, third = ((0, 0), (5, 9)), ((1, 1),), ((7, 7), (8, 8))
    state, _ = play(r, state, [(1.0, PictoStroke(player="a", points=first)),
                               (2.0, PictoStroke(player="a", points=second)),
                               (2.5, PictoStroke(player="b", points=third))])
    state, events = r.apply(state, Undo(player="a"), 3.0)
    assert state.round.drawings["a"] == (first,)
    assert state.round.drawings["b"] == (third,)  # only the mover's drawing changes
    assert [e.to_dict() for e in events] == [
        {"kind": "stroke_undone", "to": None, "player": "a", "strokes_left": 1}
    ]
    state, _ = r.apply(state, PictoStroke(player="a", points=second), 4.0)  # drawing goes on
    state, events = r.apply(state, Clear(player="a"), 5.0)
    assert state.round.drawings["a"] == () and state.round.drawings["b"] == (third,)
    assert [e.to_dict() for e in events] == [{"kind": "drawing_cleared", "to": None, "player": "a"}]
    state, _ = r.apply(state, PictoStroke(player="a", points=third), 6.0)
    assert state.round.drawings["a"] == (third,)


def test_undo_or_clear_of_an_empty_drawing_is_a_typed_error_and_changes_nothing():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    for move in (Undo(player="a"), Clear(player="a")):
        with pytest.raises(NothingToUndo) as err:
            r.apply(state, move, 1.0)
        assert err.value.code == "nothing_to_undo" and err.value.details == {"player": "a"}
    state, _ = r.apply(state, PictoStroke(player="a", points=[(0, 0)]), 2.0)
    state, _ = r.apply(state, Undo(player="a"), 3.0)
    with pytest.raises(NothingToUndo):
        r.apply(state, Undo(player="a"), 4.0)
    assert r.parse_move({"kind": "undo", "player": "a"}) == Undo(player="a")
    assert r.parse_move({"kind": "clear", "player": "a"}) == Clear(player="a")


def test_strokes_submitted_per_round_are_capped_undone_ones_included():
    r = rules(max_strokes_per_round=3)
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    stroke = PictoStroke(player="a", points=[(0, 0), (5, 5)])
    state, _ = play(r, state, [(1.0, stroke), (1.1, Undo(player="a")), (1.2, stroke),
                               (1.3, Clear(player="a")), (1.4, stroke)])
    assert len(state.round.drawings["a"]) == 1 and state.round.submitted == {"a": 3}
    with pytest.raises(TooManyStrokes) as err:
        r.apply(state, stroke, 1.5)  # one stroke on the board, three submitted: refused
    assert err.value.to_dict() == {"code": "too_many_strokes", "player": "a", "limit": 3,
                                   "message": "at most 3 strokes a round (undone ones count)"}
    state, _ = r.apply(state, PictoStroke(player="b", points=[(1, 1)]), 1.6)  # the others draw on
    assert state.round.submitted == {"a": 3, "b": 1}
    assert PictomaniaConfig.load().max_strokes_per_round == 300  # games/data/pictomania.yaml


def test_the_stroke_count_starts_again_each_round():
    r = rules(max_strokes_per_round=1)
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    first = PictoStroke(player="a", points=[(0, 0)])
    state, _ = play(r, state, [(1.0, first), (200.0, NextRound(player="a"))])
    assert state.round.number == 2 and state.round.submitted == {}
    state, _ = r.apply(state, PictoStroke(player="a", points=[(0, 0)]), 201.0)
    assert state.round.submitted == {"a": 1}


def test_undo_and_clear_only_while_playing_and_not_once_done():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, _ = play(r, state, [(1.0, PictoStroke(player="a", points=[(0, 0)])), (2.0, Done(player="a"))])
    for move in (Undo(player="a"), Clear(player="a")):
        with pytest.raises(AlreadyDone):
            r.apply(state, move, 3.0)
    state, _ = r.apply(state, Done(player="b"), 4.0)  # the last bonus token: scored
    assert state.phase == "scored"
    with pytest.raises(WrongPhase, match="scored"):
        r.apply(state, Undo(player="c"), 5.0)
    with pytest.raises(TimeOver):  # after the round timer
        r.apply(table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)}), Clear(player="a"), 500.0)


def test_the_round_result_keeps_every_drawing_as_the_round_ended():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, _ = play(r, state, [(1.0, PictoStroke(player="a", points=[(0, 0), (9, 9)])),
                               (2.0, PictoStroke(player="a", points=[(3, 3)])),
                               (3.0, Undo(player="a")),
                               (4.0, PictoStroke(player="c", points=[(5, 5)])),
                               (5.0, Done(player="b")), (6.0, Done(player="c"))])
    result = state.results[0]
    assert result.drawings == {"a": (((0, 0), (9, 9)),), "b": (), "c": (((5, 5),),)}
    state, _ = r.apply(state, NextRound(player="a"), 7.0)
    assert state.round.drawings["a"] == () and state.results[0].drawings["a"] == (((0, 0), (9, 9)),)
    assert r.view(state, "b").results[0].drawings == result.drawings  # public once scored


def test_one_irrevocable_guess_per_opponent_in_placement_order():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, events = play(r, state, [(1.0, guess("b", "a", 4)), (2.0, guess("c", "a", 1))])
    assert [(c.guesser, c.number) for c in state.round.stacks["a"]] == [("b", 4), ("c", 1)]
    assert [(e.guesser, e.target, e.position) for e in events] == [("b", "a", 0), ("c", "a", 1)]
    with pytest.raises(AlreadyGuessed) as err:  # b may not change or add to their guess on a
        r.apply(state, guess("b", "a", 1), 3.0)
    assert err.value.code == "already_guessed" and "b already placed a guess on a" in err.value.message


def test_each_guessing_card_is_used_once_and_guesses_are_checked():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3), "d": (3, 4)})
    state, _ = r.apply(state, guess("a", "b", 5), 1.0)
    with pytest.raises(CardUsed):  # a's card 5 is on b's stack already
        r.apply(state, guess("a", "c", 5), 2.0)
    with pytest.raises(NotAllowed, match="own drawing"):
        r.apply(state, guess("a", "a", 1), 2.0)
    with pytest.raises(InvalidMove, match="1-7"):
        r.apply(state, guess("a", "c", 8), 2.0)
    with pytest.raises(UnknownPlayer):
        r.apply(state, guess("a", "zed", 3), 2.0)
    with pytest.raises(UnknownPlayer):
        r.apply(state, guess("zed", "a", 3), 2.0)


def test_done_takes_the_highest_remaining_bonus_token_then_no_further_action():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3), "d": (3, 4)})
    state, events = r.apply(state, Done(player="c"), 5.0)
    assert (events[0].value, events[0].left) == (3, (2, 2))
    state, events = r.apply(state, Done(player="a"), 6.0)
    assert (events[0].value, events[0].left) == (2, (2,))
    for move in (guess("c", "b", 2), PictoStroke(player="c", points=[(0, 0)]), Done(player="c")):
        with pytest.raises(AlreadyDone):
            r.apply(state, move, 7.0)
    assert state.phase == "playing" and state.round.bonus == {"c": 3, "a": 2}


def test_last_bonus_token_ends_the_round_for_everybody():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, events = play(r, state, [(5.0, Done(player="a")), (9.0, Done(player="b"))])
    assert state.phase == "scored"
    assert [e.kind for e in events] == ["bonus_taken", "bonus_taken", "round_ended", "round_scored"]
    assert events[2].reason == "bonus_tokens" and events[2].at == 9.0
    with pytest.raises(WrongPhase, match="phase 'scored'"):
        r.apply(state, guess("c", "a", 1), 10.0)


def test_round_timer_ends_the_round():
    r = rules(round_timer_s=60)
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, _ = r.apply(state, guess("a", "b", 2), 59.9)
    with pytest.raises(TimeOver):
        r.apply(state, guess("b", "a", 1), 60.0)
    state, events = r.apply(state, Tick(), 61.0)
    assert state.phase == "scored" and events[0].reason == "time" and events[0].at == 60.0


def test_next_round_after_the_timer_closes_the_round_first():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, events = r.apply(state, NextRound(player="b"), 125.0)
    assert [e.kind for e in events][:3] == ["round_ended", "round_scored", "round_started"]
    assert state.round.number == 2 and state.round.started_at == 125.0
    assert state.results[0].reason == "time"


def test_wrong_phase_names_the_phase():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    with pytest.raises(WrongPhase) as err:
        r.apply(state, NextRound(player="a"), 1.0)
    assert err.value.phase == "playing" and err.value.code == "wrong_phase"


# --------------------------------------------------------------------------------------------
# Resolution and scoring, by hand


def test_earlier_correct_guesses_take_higher_tokens_wrong_cards_go_to_the_middle():
    r = rules()
    # 5 players: tokens 3, 2, 2, 1. e draws number 6.
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3), "d": (3, 4), "e": (4, 6)})
    state, _ = play(
        r,
        state,
        [(1, guess("d", "e", 6)), (2, guess("a", "e", 7)), (3, guess("b", "e", 6)), (4, guess("c", "e", 6))],
    )
    state, events = r.apply(state, Tick(), 120.0)
    result = state.results[0]
    # d first correct: 3; a wrong (middle); b: 2; c: 2. e keeps the 1 token.
    assert [(o.guesser, o.correct, o.token) for o in result.outcomes["e"]] == [
        ("d", True, 3),
        ("a", False, None),
        ("b", True, 2),
        ("c", True, 2),
    ]
    assert result.tokens_left["e"] == (1,)
    assert result.wrong_cards == {"a": 1, "b": 0, "c": 0, "d": 0, "e": 0}


def test_full_round_with_black_sheep_and_unguessed_drawing():
    r = rules()
    # 4 players: scoring tokens [3, 2, 2] each, bonus tokens [3, 2, 2].
    # Secrets: ana #3, bob #5, cy #1, dee #6.
    state = table(r, {"ana": (0, 3), "bob": (1, 5), "cy": (2, 1), "dee": (3, 6)})
    script = [
        (1.0, guess("bob", "ana", 3)),  # right: bob takes ana's 3
        (2.0, guess("cy", "ana", 3)),  # right: cy takes ana's 2
        (3.0, guess("dee", "ana", 4)),  # wrong: dee's card to the middle
        (4.0, guess("ana", "bob", 5)),  # right: ana takes bob's 3
        (5.0, guess("dee", "bob", 2)),  # wrong (dee: 2 wrong)
        (6.0, guess("dee", "cy", 7)),  # wrong (dee: 3 wrong)
        (7.0, guess("ana", "cy", 6)),  # wrong (ana: 1 wrong) -> nobody guessed cy
        (8.0, guess("bob", "dee", 6)),  # right: bob takes dee's 3
        (9.0, Done(player="dee")),  # bonus 3
        (10.0, Done(player="bob")),  # bonus 2
        (11.0, Done(player="cy")),  # bonus 2, the last one: the round ends
    ]
    state, events = play(r, state, script)
    assert state.phase == "scored"
    res = state.results[0]
    assert res.wrong_cards == {"ana": 1, "bob": 0, "cy": 0, "dee": 3}
    assert res.black_sheep == "dee"  # strictly the most wrong cards
    assert res.tokens_won == {"ana": (3,), "bob": (3, 3), "cy": (2,), "dee": ()}
    assert res.tokens_left == {"ana": (2,), "bob": (2, 2), "cy": (3, 2, 2), "dee": (2, 2)}
    assert res.bonus == {"ana": 0, "bob": 2, "cy": 2, "dee": 3}
    # dee: black sheep, bonus 3 counts negative; cy: nobody guessed cy, bonus discarded
    assert res.bonus_points == {"ana": 0, "bob": 2, "cy": 0, "dee": -3}
    # round score = bonus (if positive) + tokens won - black-sheep bonus - tokens not given away
    # ana: 0 + 3 - 0 - 2 = 1 ; bob: 2 + 6 - 0 - 4 = 4 ; cy: 0 + 2 - 0 - 7 = -5 ; dee: 0 + 0 - 3 - 4 = -7
    assert res.score == {"ana": 1, "bob": 4, "cy": -5, "dee": -7}
    assert state.totals == res.score
    scored = [e for e in events if e.kind == "round_scored"][0]
    assert scored.result == res and scored.to is None


def test_unclaimed_penalty_lowest_alternative():
    r = rules(unclaimed_penalty="lowest")
    state = table(r, {"ana": (0, 3), "bob": (1, 5), "cy": (2, 1), "dee": (3, 6)})
    state, _ = play(
        r,
        state,
        [
            (1.0, guess("bob", "ana", 3)),
            (2.0, guess("cy", "ana", 3)),
            (3.0, guess("dee", "ana", 4)),
            (4.0, guess("ana", "bob", 5)),
            (5.0, guess("dee", "bob", 2)),
            (6.0, guess("dee", "cy", 7)),
            (7.0, guess("ana", "cy", 6)),
            (8.0, guess("bob", "dee", 6)),
            (9.0, Done(player="dee")),
            (10.0, Done(player="bob")),
            (11.0, Done(player="cy")),
        ],
    )
    # only the lowest unclaimed token is subtracted:
    # ana: 0 + 3 - 2 = 1 ; bob: 2 + 6 - 2 = 6 ; cy: 0 + 2 - 2 = 0 ; dee: -3 + 0 - 2 = -5
    assert state.results[0].score == {"ana": 1, "bob": 6, "cy": 0, "dee": -5}


def test_no_black_sheep_when_the_most_wrong_cards_are_shared():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, _ = play(r, state, [(1, guess("a", "b", 7)), (2, guess("b", "a", 7)), (3, guess("c", "a", 1))])
    state, _ = r.apply(state, Tick(), 120.0)
    res = state.results[0]
    assert res.wrong_cards == {"a": 1, "b": 1, "c": 0} and res.black_sheep is None


def test_black_sheep_without_a_bonus_token_loses_nothing_more():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, _ = play(r, state, [(1, guess("a", "b", 7)), (2, guess("c", "a", 1))])
    state, _ = r.apply(state, Tick(), 120.0)
    res = state.results[0]
    # a black sheep (1 wrong card, the others 0) but took no bonus token.
    # a: 0 + 0 - 0 - 2 (c took a's 3) = -2 ; b: 0 + 0 - 5 = -5 ; c: 0 + 3 - 5 = -2
    assert res.black_sheep == "a" and res.bonus_points["a"] == 0
    assert res.score == {"a": -2, "b": -5, "c": -2}


def test_totals_over_rounds_and_a_tie_shares_the_win():
    r = rules(rounds=2, levels_per_round=[1, 2])
    # 3 players, tokens [3, 2]. Round 1: a and b guess each other, nobody is done: timer ends.
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, _ = play(r, state, [(5.0, guess("a", "b", 2)), (6.0, guess("b", "a", 1))])
    state, _ = r.apply(state, Tick(), 120.0)
    # a: 3 (from b) - 2 (own token left) = 1 ; b: 3 - 2 = 1 ; c: 0 - (3 + 2) = -5
    assert state.totals == {"a": 1, "b": 1, "c": -5}
    state, events = r.apply(state, NextRound(player="c"), 130.0)
    assert state.phase == "playing" and state.round.number == 2 and state.round.level == 2
    assert state.round.deadline == 250.0 and state.round.bonus_left == (3, 2)
    assert [e.kind for e in events][:1] == ["round_started"]
    # Round 2: nobody does anything. Everyone loses 5.
    state, events = r.apply(state, Tick(), 250.0)
    assert state.totals == {"a": -4, "b": -4, "c": -10}
    assert state.phase == "game_over" and state.winners == ("a", "b")
    assert events[-1].kind == "game_ended" and events[-1].winners == ("a", "b")
    with pytest.raises(GameOver):
        r.apply(state, NextRound(player="a"), 260.0)


def test_five_rounds_by_default():
    r = rules()
    state, _ = r.setup(players=["a", "b", "c"], deck=DECK, seed=2)
    t = 0.0
    for number in range(1, 6):
        assert state.round.number == number
        state, _ = r.apply(state, Tick(), t + 120.0)
        t += 200.0
        if number < 5:
            state, _ = r.apply(state, NextRound(player="a"), t)
    assert state.phase == "game_over" and len(state.results) == 5


# --------------------------------------------------------------------------------------------
# Views, serialisation, replay


def test_view_hides_other_players_secrets_and_stack_numbers_until_resolution():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, events = play(r, state, [(1, guess("a", "b", 2)), (2, guess("c", "b", 5))])
    va = r.view(state, "a")
    assert va.round.secrets == {"a": Secret(symbol=0, number=1), "b": None, "c": None}
    assert va.round.word("a") == state.round.cards[0].words[0] and va.round.word("b") is None
    assert [(c.guesser, c.number) for c in va.round.stacks["b"]] == [("a", 2), ("c", None)]
    assert va.round_cards[0] == state.round.cards and va.round_cards[1:] == ((),) * 4
    assert va.seed == "hidden"
    # the 6 cards (every word on them) are public; which word b draws is not
    assert va.to_dict()["round"]["secrets"] == {"a": {"symbol": 0, "number": 1}, "b": None, "c": None}
    assert all(e.kind != "guess_placed" or "number" not in e.to_dict() for e in events_for(events, "b"))
    state, _ = r.apply(state, Tick(), 120.0)  # resolution reveals everything
    va = r.view(state, "a")
    assert va.round.secrets["b"] == Secret(symbol=1, number=2)
    assert [c.number for c in va.round.stacks["b"]] == [2, 5]


def test_state_round_trips_through_json():
    r = rules()
    state = table(r, {"a": (0, 1), "b": (1, 2), "c": (2, 3)})
    state, _ = play(r, state, [(1, guess("a", "b", 2)), (2, Done(player="a"))])
    assert PictomaniaState.from_dict(json.loads(json.dumps(state.to_dict()))) == state


def test_replay_of_a_logged_game_reproduces_it_exactly():
    r = rules(rounds=2, levels_per_round=[3, 4])
    setup = {"players": ["a", "b", "c", "d"], "deck": [c.to_dict() for c in DECK], "seed": 5}
    state, _ = r.setup(**setup)
    log: list[LoggedMove] = []
    t = 0.0

    def do(move, now):
        nonlocal state
        state, _ = r.apply(state, move, now)
        log.append(LoggedMove(now=now, move=move))

    for _ in range(2):
        secrets = state.round.secrets
        players = state.players
        for i, p in enumerate(players):  # everybody guesses its left neighbour right, or +1
            target = players[(i + 1) % 4]
            number = secrets[target].number if i % 2 == 0 else secrets[target].number % 7 + 1
            do(PictoStroke(player=p, points=[(i, 0), (i, 10)]), t + 2 * i)
            do(PlaceGuess(player=p, target=target, number=number), t + 2 * i + 1)
        for i, p in enumerate(players[:3]):
            do(Done(player=p), t + 20 + i)
        if state.phase == "scored":
            t += 60
            do(NextRound(player="a"), t)
    assert state.phase == "game_over"
    as_json = json.loads(json.dumps([e.to_dict() for e in log]))
    replayed, events = replay(r, setup, [LoggedMove.model_validate(e) for e in as_json])
    assert replayed == state
    assert events[-1].kind == "game_ended"
