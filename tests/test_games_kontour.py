"""Kontour rules, scenario by scenario (RULES.md, "Kontour").

States are literal: `table()` builds a game whose pile is in the order written here (not shuffled),
and turns are scripted move by move with the time (seconds) of each move. Expected scores are
worked out by hand from the rule sheet in the comments.
"""

from __future__ import annotations

import json

import pytest

from games.core import (
    AlreadyFound,
    BadSetup,
    ClockWentBack,
    GameOver,
    InvalidMove,
    LoggedMove,
    NotAllowed,
    NotAStraightLine,
    NotYourTurn,
    Tick,
    TimeOver,
    TooManyStrokes,
    UnknownPlayer,
    WrongPhase,
    events_for,
    replay,
)
from games.kontour import (
    ChooseWord,
    DrawCard,
    Gesture,
    Guess,
    KontourCard,
    KontourConfig,
    KontourRules,
    KontourState,
    Stroke,
    WordPair,
    exact_judge,
)

# A tiny French judge standing in for vocab.match: accepted answers per category key.
ANSWERS = {
    "cat": {"chat", "chatte", "un chat"},
    "giraffe": {"girafe"},
    "sun": {"soleil"},
    "tornado": {"tornade"},
    "house": {"maison"},
    "castle": {"chateau", "château"},
    "tree": {"arbre"},
    "bicycle": {"vélo", "bicyclette"},
}


def judge(key: str, text: str) -> bool:
    return text.strip().lower() in ANSWERS[key]


CAT_CARD = KontourCard(
    top=WordPair(blue="cat", orange="giraffe"), bottom=WordPair(blue="sun", orange="tornado")
)
HOUSE_CARD = KontourCard(
    top=WordPair(blue="house", orange="castle"), bottom=WordPair(blue="tree", orange="bicycle")
)
DECK = (CAT_CARD, HOUSE_CARD, CAT_CARD, HOUSE_CARD)


def rules(**overrides: object) -> KontourRules:
    return KontourRules(KontourConfig.load(**overrides), judge=judge)


def table(
    r: KontourRules,
    players: tuple[str, ...] = ("ana", "bob", "cy"),
    deck: tuple[KontourCard, ...] = DECK,
    scores: dict[str, int] | None = None,
    half: str = "top",
) -> KontourState:
    """A literal game state: pile in the given order, given scores, ana to draw."""
    state, _ = r.setup(players=players, deck=list(deck), seed=1, half=half)
    state = state.replace(deck=deck)
    if scores:
        state = state.replace(scores={**state.scores, **scores})
    return state


def play(r: KontourRules, state: KontourState, script: list[tuple[float, object]]):
    """Apply (now, move) pairs in order; returns the final state and all events."""
    events = []
    for now, move in script:
        state, new = r.apply(state, move, now)
        events += new
    return state, events


def line(x0: float, y0: float, x1: float, y1: float, wobble: float = 0.0) -> tuple:
    """A hand-drawn near-line: 9 points along the chord, the middle ones off by `wobble`."""
    pts = []
    for i in range(9):
        t = i / 8
        off = wobble if 0 < i < 8 and i % 2 else 0.0
        pts.append((x0 + t * (x1 - x0) - off * (y1 - y0) / 100, y0 + t * (y1 - y0) + off))
    return tuple(pts)


def start_turn(r: KontourRules, state: KontourState, t: float = 0.0, color: str = "blue"):
    drawer = state.drawer
    return play(r, state, [(t, DrawCard(player=drawer)), (t + 1, ChooseWord(player=drawer, color=color))])


def kinds(events) -> list[str]:
    return [e.kind for e in events]


# --------------------------------------------------------------------------------------------
# Setup


def test_setup_half_given_or_from_seed_and_deck_shuffled_by_seed():
    r = rules()
    s1, ev = r.setup(players=["ana", "bob"], deck=list(DECK), seed=5, half="bottom")
    assert s1.half == "bottom" and ev[0].kind == "game_started"
    halves = {r.setup(players=["ana", "bob"], deck=list(DECK), seed=s)[0].half for s in range(20)}
    assert halves == {"top", "bottom"}  # chosen from the seed when not given
    a, _ = r.setup(players=["ana", "bob"], deck=list(DECK), seed=9)
    b, _ = r.setup(players=["ana", "bob"], deck=list(DECK), seed=9)
    assert a == b  # same seed, same game
    assert sorted(map(str, a.deck)) == sorted(map(str, DECK))  # a permutation of the deck
    orders = {r.setup(players=["ana", "bob"], deck=list(DECK) * 3, seed=s)[0].deck for s in range(6)}
    assert len(orders) > 1


def test_setup_half_from_config():
    r = rules(half="bottom")
    assert all(r.setup(players=["a", "b"], deck=list(DECK), seed=s)[0].half == "bottom" for s in range(5))


@pytest.mark.parametrize(
    "players, deck",
    [(["solo"], DECK), (["ana", "ana"], DECK), (["ana", "bob"], ()), (["ana", "griffon"], DECK)],
)
def test_bad_setups_are_refused(players, deck):
    with pytest.raises(BadSetup):
        rules().setup(players=players, deck=list(deck), seed=1)


# --------------------------------------------------------------------------------------------
# A turn: card, timer, choice


def test_drawing_the_card_starts_the_30s_timer_and_shows_the_half_to_the_drawer_only():
    r = rules()
    state = table(r)
    state, events = r.apply(state, DrawCard(player="ana"), 12.0)
    assert state.phase == "choose"
    assert state.turn.started_at == 12.0 and state.turn.deadline == 42.0
    assert state.turn.card == WordPair(blue="cat", orange="giraffe")  # top half, first card
    private = [e for e in events if e.kind == "card_drawn"]
    assert private[0].to == ("ana",)
    assert events_for(events, "bob") == [e for e in events if e.kind == "turn_started"]


def test_bottom_half_is_played_for_the_whole_game():
    r = rules()
    state = table(r, half="bottom")
    state, _ = start_turn(r, state, color="orange")
    assert state.turn.word == "tornado"


@pytest.mark.parametrize("color, word, drawer_points", [("blue", "cat", 1), ("orange", "giraffe", 2)])
def test_blue_word_gives_the_drawer_1_point_orange_2(color, word, drawer_points):
    r = rules()
    state, _ = start_turn(r, table(r), color=color)
    assert state.turn.word == word
    answer = {"cat": "chat", "giraffe": "girafe"}[word]
    state, events = r.apply(state, Guess(player="bob", text=answer), 5.0)
    # bob first finder: 1 point; ana drawer: 1 (blue) or 2 (orange).
    assert state.scores == {"ana": drawer_points, "bob": 1, "cy": 0}
    assert [(e.player, e.points, e.reason) for e in events if e.kind == "points_scored"] == [
        ("bob", 1, "first_finder"),
        ("ana", drawer_points, "drawer"),
    ]


def test_only_the_drawer_draws_the_card_and_chooses():
    r = rules()
    state = table(r)
    with pytest.raises(NotYourTurn) as err:
        r.apply(state, DrawCard(player="bob"), 0.0)
    assert err.value.code == "not_your_turn" and "ana" in err.value.message
    state, _ = r.apply(state, DrawCard(player="ana"), 0.0)
    with pytest.raises(NotYourTurn):
        r.apply(state, ChooseWord(player="cy", color="blue"), 1.0)


def test_moves_in_the_wrong_phase_name_the_phase():
    r = rules()
    state = table(r)
    with pytest.raises(WrongPhase) as err:
        r.apply(state, Guess(player="bob", text="chat"), 0.0)
    assert err.value.phase == "draw" and "'draw'" in str(err.value)
    state, _ = r.apply(state, DrawCard(player="ana"), 0.0)
    with pytest.raises(WrongPhase, match="phase 'choose'"):
        r.apply(state, Stroke(player="ana", points=line(0, 0, 100, 0)), 0.5)
    with pytest.raises(WrongPhase, match="phase 'choose'"):
        r.apply(state, DrawCard(player="ana"), 0.5)


def test_unknown_player_and_bad_gesture():
    r = rules()
    state, _ = start_turn(r, table(r))
    with pytest.raises(UnknownPlayer):
        r.apply(state, Guess(player="zoe", text="chat"), 2.0)
    with pytest.raises(InvalidMove, match="unknown gesture"):
        r.apply(state, Gesture(player="ana", gesture="thumbs_up"), 2.0)


# --------------------------------------------------------------------------------------------
# Straight lines only, at most 15, extensions free


def test_near_line_is_straightened_to_its_endpoints_and_a_curve_is_refused():
    r = rules()
    state, _ = start_turn(r, table(r))
    state, events = r.apply(state, Stroke(player="ana", points=line(0, 0, 200, 0, wobble=4)), 2.0)
    assert state.turn.segments[0].as_points() == [(0.0, 0.0), (200.0, 0.0)]
    assert events[0].count == 1
    arc = tuple((100 + 80 * c, 100 + 80 * s) for c, s in [(1, 0), (0.7, 0.7), (0, 1), (-0.7, 0.7)])
    with pytest.raises(NotAStraightLine) as err:
        r.apply(state, Stroke(player="ana", points=arc), 3.0)
    assert err.value.code == "not_a_straight_line"


def test_fifteen_strokes_at_most_but_extensions_do_not_count():
    r = rules()
    state, _ = start_turn(r, table(r))
    # 15 horizontal lines, 10 px apart: 15 strokes.
    script = [(2 + i * 0.1, Stroke(player="ana", points=line(0, i * 10, 100, i * 10))) for i in range(15)]
    state, _ = play(r, state, script)
    assert state.turn.strokes == 15
    with pytest.raises(TooManyStrokes) as err:  # a 16th line
        r.apply(state, Stroke(player="ana", points=line(0, 0, 0, 100)), 4.0)
    assert err.value.code == "too_many_strokes" and "15" in err.value.message
    # extending the first line along the same direction is still allowed and does not count
    state, events = r.apply(state, Stroke(player="ana", points=line(104, 0, 180, 1)), 4.5)
    assert events[0].merged_into == 0 and events[0].count == 15
    assert state.turn.segments[0].x1 == pytest.approx(180.0)
    assert state.turn.strokes == 15 and state.turn.strokes_submitted == 16
    # guessing goes on after the 15th stroke while time remains
    state, events = r.apply(state, Guess(player="bob", text="chat"), 20.0)
    assert events[0].accepted


def test_stroke_after_the_timer_is_refused():
    r = rules()
    state, _ = start_turn(r, table(r))
    with pytest.raises(TimeOver) as err:
        r.apply(state, Stroke(player="ana", points=line(0, 0, 100, 0)), 30.0)
    assert err.value.code == "time_over"


def test_only_the_drawer_draws_and_gestures():
    r = rules()
    state, _ = start_turn(r, table(r))
    with pytest.raises(NotYourTurn):
        r.apply(state, Stroke(player="bob", points=line(0, 0, 100, 0)), 2.0)
    with pytest.raises(NotYourTurn):
        r.apply(state, Gesture(player="bob", gesture="proche"), 2.0)
    state, events = r.apply(state, Gesture(player="ana", gesture="proche", about="chien"), 2.0)
    assert events[0].kind == "gesture_made" and events[0].gesture == "proche"
    assert events[0].about == "chien" and events[0].to is None
    _, events = r.apply(state, Gesture(player="ana", gesture="hors_sujet"), 2.5)
    assert events[0].gesture == "hors_sujet"


# --------------------------------------------------------------------------------------------
# Guessing and scoring


def test_unlimited_guesses_drawer_may_not_guess_and_a_finder_does_not_guess_again():
    r = rules()
    state, _ = start_turn(r, table(r))
    state, _ = play(
        r,
        state,
        [(2 + i, Guess(player="bob", text=w)) for i, w in enumerate(["chien", "lion", "tigre", "souris"])],
    )
    assert [g.accepted for g in state.turn.guesses] == [False] * 4
    with pytest.raises(NotAllowed, match="drawer"):
        r.apply(state, Guess(player="ana", text="chat"), 7.0)
    state, _ = r.apply(state, Guess(player="bob", text="Chat"), 7.0)
    with pytest.raises(AlreadyFound):
        r.apply(state, Guess(player="bob", text="chat"), 7.1)
    assert state.scores == {"ana": 1, "bob": 1, "cy": 0}


def test_answers_within_the_300ms_tie_window_each_score_1_later_ones_do_not():
    r = rules()
    state, _ = start_turn(r, table(r), color="orange")  # giraffe, orange: drawer 2
    state, _ = play(
        r,
        state,
        [
            (10.0, Guess(player="bob", text="girafe")),  # first: bob 1, ana 2
            (10.3, Guess(player="cy", text="girafe")),  # +300 ms, inside the window: cy 1
        ],
    )
    assert state.scores == {"ana": 2, "bob": 1, "cy": 1}
    assert state.turn.finders == ("bob", "cy")
    # the turn closed at 10.3 s: a later answer is too late
    r4 = rules()
    s4 = table(r4, players=("ana", "bob", "cy", "dee"))
    s4, _ = start_turn(r4, s4, color="orange")
    s4, _ = r4.apply(s4, Guess(player="bob", text="girafe"), 10.0)
    with pytest.raises(TimeOver):
        r4.apply(s4, Guess(player="cy", text="girafe"), 10.301)
    s4, events = r4.apply(s4, Tick(), 10.301)
    assert s4.scores == {"ana": 2, "bob": 1, "cy": 0, "dee": 0}
    assert events[0].kind == "turn_ended" and events[0].at == pytest.approx(10.3)


def test_tie_window_is_read_from_config():
    r = rules(tie_window_s=1.0)
    state, _ = start_turn(r, table(r))
    state, _ = play(
        r, state, [(5.0, Guess(player="bob", text="chat")), (5.9, Guess(player="cy", text="chat"))]
    )
    assert state.scores == {"ana": 1, "bob": 1, "cy": 1}


def test_nobody_finds_before_the_timer_nobody_scores_and_the_turn_ends_on_tick():
    r = rules()
    state, _ = start_turn(r, table(r))  # card drawn at 0: timer ends at 30
    state, _ = r.apply(state, Guess(player="bob", text="chien"), 29.9)
    with pytest.raises(TimeOver):
        r.apply(state, Guess(player="bob", text="chat"), 30.0)
    state, events = r.apply(state, Tick(), 30.0)
    assert state.scores == {"ana": 0, "bob": 0, "cy": 0}
    assert kinds(events) == ["turn_ended"]
    assert events[0].reason == "time" and events[0].word == "cat"  # revealed at the end
    assert state.phase == "draw" and state.drawer == "bob"


def test_turn_ended_by_time_is_closed_by_the_next_drawers_move_too():
    r = rules()
    state, _ = start_turn(r, table(r))
    state, events = r.apply(state, DrawCard(player="bob"), 45.0)
    assert kinds(events) == ["turn_ended", "turn_started", "card_drawn"]
    assert state.turn.drawer == "bob" and state.turn.deadline == 75.0


def test_rotation_goes_to_the_drawers_left_and_wraps():
    r = rules()
    state = table(r)
    drawers = []
    for k in range(4):
        drawers.append(state.drawer)
        state, _ = start_turn(r, state, t=k * 40.0)
        state, _ = r.apply(state, Tick(), k * 40.0 + 30.0)
    assert drawers == ["ana", "bob", "cy", "ana"]


# --------------------------------------------------------------------------------------------
# End of game and tiebreak


def test_reaching_10_together_is_a_tie_at_the_top():
    r = rules()
    state = table(r, scores={"ana": 8, "bob": 9, "cy": 3})
    state, _ = start_turn(r, state)
    state, _ = r.apply(state, Guess(player="cy", text="chat"), 4.0)  # cy 4, ana 9
    state, events = r.apply(state, Tick(), 4.5)
    assert state.phase == "draw"  # nobody at 10 yet
    state, _ = start_turn(r, state, t=10.0)  # bob draws
    state, _ = r.apply(state, Guess(player="ana", text="maison"), 12.0)  # ana 10, bob 10?
    # ana first finder: 9 + 1 = 10; bob drawer (blue): 9 + 1 = 10 -> a tie at the top
    assert state.scores == {"ana": 10, "bob": 10, "cy": 4}
    state, events = r.apply(state, Tick(), 13.0)
    assert state.phase == "draw" and state.tied == ("ana", "bob") and state.drawer == "cy"


def test_single_leader_at_target_wins_outright():
    r = rules()
    state = table(r, scores={"ana": 9, "bob": 9, "cy": 2})
    state, _ = start_turn(r, state, color="orange")  # ana draws the orange word: +2
    state, _ = r.apply(state, Guess(player="cy", text="girafe"), 3.0)
    state, events = r.apply(state, Tick(), 4.0)
    assert state.phase == "game_over" and state.winners == ("ana",)
    assert events[-1].kind == "game_ended" and events[-1].scores == {"ana": 11, "bob": 9, "cy": 3}
    with pytest.raises(GameOver):
        r.apply(state, DrawCard(player="bob"), 5.0)


def test_target_score_from_config():
    r = rules(target_score=2)
    state, _ = start_turn(r, table(r), color="orange")
    state, _ = r.apply(state, Guess(player="bob", text="girafe"), 3.0)
    state, _ = r.apply(state, Tick(), 4.0)
    assert state.winners == ("ana",)


def test_tiebreak_turn_lowest_non_tied_draws_only_tied_guess_first_answer_wins():
    r = rules()
    # bob and cy are tied at 10 after a turn; dee (2) is lower than ana (5): dee draws.
    state = table(r, players=("ana", "bob", "cy", "dee"), scores={"ana": 5, "bob": 9, "cy": 9, "dee": 2})
    state, _ = start_turn(r, state, color="orange")  # ana draws giraffe
    state, _ = play(
        r, state, [(3.0, Guess(player="bob", text="girafe")), (3.2, Guess(player="cy", text="girafe"))]
    )
    # bob 9+1 = 10, cy 9+1 = 10 (tie window), ana 5+2 = 7
    state, events = r.apply(state, Tick(), 3.5)
    assert events[-1].kind == "tiebreak_started"
    assert (events[-1].tied, events[-1].drawer) == (("bob", "cy"), "dee")
    assert state.drawer == "dee"
    state, events = start_turn(r, state, t=5.0)  # dee draws "house" (second card)
    assert events[0].tiebreak and events[0].tied == ("bob", "cy")
    with pytest.raises(NotAllowed, match="tied"):
        r.apply(state, Guess(player="ana", text="maison"), 7.0)
    state, events = play(r, state, [(8.0, Guess(player="cy", text="maison"))])
    assert not [e for e in events if e.kind == "points_scored"]  # no points, just the winner
    state, events = r.apply(state, Tick(), 9.0)
    assert state.phase == "game_over" and state.winners == ("cy",)
    assert events[-1].reason == "tiebreak"


def test_tiebreak_drawer_skips_tied_lowest_and_falls_back_to_the_ai():
    r = rules()
    state = table(r, players=("ana", "bob", "cy"), scores={"ana": 10, "bob": 10, "cy": 10})
    assert r.tiebreak_drawer(state, ("ana", "bob")) == "cy"
    assert r.tiebreak_drawer(state, ("ana", "bob", "cy")) == "griffon"
    state = table(r, players=("ana", "bob", "cy", "dee"), scores={"ana": 3, "bob": 10, "cy": 1, "dee": 1})
    assert r.tiebreak_drawer(state, ("bob", "cy")) == "dee"  # cy is lowest but tied


def test_neutral_ai_draws_the_tiebreak_when_everybody_is_tied():
    r = rules()
    state = table(r, players=("ana", "bob"), scores={"ana": 9, "bob": 8})
    state, _ = start_turn(r, state, color="blue")
    state, _ = r.apply(state, Guess(player="bob", text="chat"), 3.0)  # ana 10, bob 9
    assert state.scores == {"ana": 10, "bob": 9}
    state, _ = r.apply(state, Tick(), 4.0)
    assert state.winners == ("ana",)
    state = table(r, players=("ana", "bob"), scores={"ana": 9, "bob": 9})
    state, _ = start_turn(r, state, color="blue")  # ana draws
    state, _ = r.apply(state, Guess(player="bob", text="chat"), 3.0)  # ana 10, bob 10
    state, _ = r.apply(state, Tick(), 4.0)
    assert state.tied == ("ana", "bob") and state.drawer == "griffon"
    state, _ = start_turn(r, state, t=5.0)  # the AI draws
    # simultaneous answers in a tiebreak: still tied, another tiebreak turn
    state, _ = play(
        r, state, [(7.0, Guess(player="bob", text="maison")), (7.1, Guess(player="ana", text="maison"))]
    )
    state, events = r.apply(state, Tick(), 8.0)
    assert state.phase == "draw" and state.tied == ("bob", "ana") and state.drawer == "griffon"
    # nobody finds: the same players stay tied
    state, _ = start_turn(r, state, t=10.0)
    state, _ = r.apply(state, Tick(), 40.0)
    assert state.tied == ("bob", "ana") and state.phase == "draw"


def test_empty_pile_ends_the_game_top_score_wins():
    r = rules()
    state = table(r, deck=(CAT_CARD,), scores={"ana": 3, "bob": 1, "cy": 0})
    state, _ = start_turn(r, state)
    state, events = r.apply(state, Tick(), 30.0)
    assert state.phase == "game_over" and state.winners == ("ana",)
    assert events[-1].reason == "deck_empty"


def test_tiebreak_reshuffles_an_empty_pile():
    r = rules()
    state = table(r, deck=(CAT_CARD,), scores={"ana": 0, "bob": 4, "cy": 4})
    state, _ = start_turn(r, state)
    state, _ = r.apply(state, Tick(), 30.0)
    assert state.tied == ("bob", "cy") and state.drawer == "ana"
    state, _ = start_turn(r, state, t=31.0)
    assert state.turn.word == "cat" and state.reshuffles == 1


# --------------------------------------------------------------------------------------------
# Time, views, serialisation, replay


def test_clock_may_not_go_back():
    r = rules()
    state, _ = start_turn(r, table(r), t=10.0)
    with pytest.raises(ClockWentBack):
        r.apply(state, Guess(player="bob", text="chat"), 5.0)


def test_view_hides_the_word_and_the_pile_from_guessers():
    r = rules()
    state, _ = start_turn(r, table(r))
    bob = r.view(state, "bob")
    assert bob.turn.word is None and bob.turn.card is None
    assert bob.deck == () and bob.hidden_deck == 3 and bob.seed == "hidden"
    assert "cat" not in json.dumps(bob.to_dict()) and "giraffe" not in json.dumps(bob.to_dict())
    ana = r.view(state, "ana")
    assert ana.turn.word == "cat" and ana.deck == ()
    state, _ = r.apply(state, Tick(), 30.0)
    assert r.view(state, "bob").history[-1].word == "cat"  # revealed once the turn is over


def test_state_round_trips_through_json():
    r = rules()
    state, _ = start_turn(r, table(r))
    state, _ = r.apply(state, Stroke(player="ana", points=line(0, 0, 100, 0)), 2.0)
    data = json.loads(json.dumps(state.to_dict()))
    assert KontourState.from_dict(data) == state


def test_replay_of_a_logged_game_reproduces_it_exactly():
    r = KontourRules(KontourConfig.load(target_score=3), judge=judge)
    setup = {"players": ["ana", "bob", "cy"], "deck": [c.to_dict() for c in DECK * 2], "seed": 77}
    state, _ = r.setup(**setup)
    log: list[LoggedMove] = []
    t = 0.0
    while state.phase != "game_over":  # each drawer draws, the next player finds at once
        drawer = state.drawer
        guesser = next(p for p in state.players if p != drawer)
        for move in (DrawCard(player=drawer), ChooseWord(player=drawer, color="blue")):
            state, _ = r.apply(state, move, t)
            log.append(LoggedMove(now=t, move=move))
        word = state.turn.word
        moves = [
            Stroke(player=drawer, points=line(0, 0, 90, 10)),
            Guess(player=guesser, text=next(iter(sorted(ANSWERS[word])))),
            Tick(),
        ]
        for dt, move in zip((2.0, 4.0, 5.0), moves, strict=True):
            state, _ = r.apply(state, move, t + dt)
            log.append(LoggedMove(now=t + dt, move=move))
        t += 10.0
    as_json = json.loads(json.dumps([e.to_dict() for e in log]))
    replayed, events = replay(r, setup, [LoggedMove.model_validate(e) for e in as_json])
    assert replayed == state
    assert events[-1].kind == "game_ended" and replayed.winners == state.winners
    again, events2 = replay(r, setup, log)
    assert again == state and events2 == events


def test_exact_judge_ignores_case_accents_and_spaces():
    assert exact_judge("château", "  CHATEAU ")
    assert not exact_judge("cat", "chat")


# --------------------------------------------------------------------------------------------
# The draw phase's clock of a room (the AI driver's, with the injected time)


def test_a_person_drawer_who_never_takes_the_card_has_it_taken_for_them() -> None:
    from games.ai import AIKit, KontourDriver, default_source, load_level
    from games.kontour import DrawCard
    from model.strokes import straight_lines

    r = rules(draw_card_s=20.0, timer_s=30.0)
    kit = AIKit(default_source(), straight_lines)

    class Table:  # what the driver acts on: the state, and `apply` at the table's time
        def __init__(self, driver: KontourDriver) -> None:
            self.state, self.now, self.moves, self.driver = table(r, players=("ana", "ia1")), 0.0, [], driver

        def apply(self, move: object) -> list:
            self.state, events = r.apply(self.state, move, self.now)
            self.moves.append((self.now, move))
            self.driver.on_events(self.state, events, self.now)
            return events

    def run(draw_card_s: float | None, until: float) -> Table:
        driver = KontourDriver(r, ["ia1"], load_level("normal"), kit, 1, ["cat", "house"], card_s=1.0,
                               between_turns_s=1.0, draw_card_s=draw_card_s)
        seen = Table(driver)
        while seen.now < until - 1e-9:
            seen.now = round(seen.now + 0.1, 6)
            driver.step(seen, seen.now)
        return seen

    patient = run(None, 200.0)  # a person alone: the table waits for them
    assert patient.moves == [] and patient.state.phase == "draw"
    room = run(20.0, 19.9)
    assert room.moves == [] and room.driver.draw_deadline(room.state) == 20.0
    room = run(20.0, 80.0)
    (at, first), *rest = room.moves
    assert (at, first) == (20.0, DrawCard(player="ana"))  # taken for her, at 20 s
    ended = next(e for e in rest if e[1].kind == "tick")  # her sand timer ran out: « Temps écoulé »
    assert ended[0] == pytest.approx(50.0, abs=0.11)
    assert room.state.history[0].word is None and room.state.history[0].drawer == "ana"
    assert room.state.turn is not None and room.state.turn.drawer == "ia1"  # the AI drew its card after
