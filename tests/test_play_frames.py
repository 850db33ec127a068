"""The play socket's frames in process: a full state on connect, then one update per move whose size
is the move's, not the game's (a 300-stroke Pictomania drawing is not sent again with each stroke),
and the page's merge of the updates (`apply_update`, mirrored by `service/static/app.js`) rebuilds
exactly the state the server would send whole."""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

import pytest

from bench.bench_play_frames import drain, uniform
from bench.bench_play_frames import pictomania_session as bench_session
from bench.bench_play_frames import stroke as bench_stroke
from games.ai.levels import load_level
from games.core import Tick
from games.kontour import Guess, KontourRules
from games.pictomania import Done, NextRound
from service.play.clock import ManualClock
from service.play.manager import game_configs
from service.play.settings import PlaySettings
from service.play.sockets import handle_text
from service.play.table import KontourSession, PictomaniaSession, Seating
from service.play.table_words import kontour_candidates, kontour_deck, load_words
from service.play.views import HUMAN, accepted_opponents, apply_update
from service.settings import Settings
from service.shared import Shared

POINTS = 300  # points a stroke (the socket accepts 1,000; the bench sends those)


def pictomania_session(seed: int = 3, play: PlaySettings | None = None) -> PictomaniaSession:
    """The benchmark's game (bench.bench_play_frames), with the default play settings unless given."""
    return bench_session(seed, play or PlaySettings())


def stroke(i: int, n: int = POINTS) -> str:
    return bench_stroke(i, n)


def move(**fields: Any) -> str:
    return json.dumps({"type": "move", "move": fields})


def test_the_update_after_a_stroke_does_not_grow_with_the_drawing() -> None:
    async def run() -> tuple[int, int, int, int]:
        session = pictomania_session()
        queue = session.attach()
        full = drain(queue)[0]
        assert full["type"] == "state" and full["seq"] == 0
        sizes = {}
        for i in range(1, 301):
            assert handle_text(session, stroke(i)) is None
            [update] = drain(queue)
            assert update["type"] == "update" and update["seq"] == i
            sizes[i] = len(json.dumps(update))
            await asyncio.sleep(0)  # let the AIs' recognitions run
        whole = len(json.dumps(session.frame([])))
        await session.close()
        return sizes[10], sizes[300], whole, len(session.state.round.drawings[HUMAN])

    at10, at300, whole, strokes = asyncio.run(run())
    assert strokes == 300
    assert abs(at300 - at10) < 100, (at10, at300)  # the same size: the new stroke and a few figures
    assert at300 < whole / 30, (at300, whole)  # the old frame re-sent the whole drawing each time


def test_merging_every_update_rebuilds_the_state_the_server_would_send_whole() -> None:
    """Strokes, an undo, a clear, bets, tokens, the round's end and the next round: the merged
    state equals a fresh full frame, results (with their drawings) included."""

    async def run() -> None:
        session = pictomania_session(seed=5)
        queue = session.attach()
        page = drain(queue)[0]
        script = [stroke(1, 5), stroke(2, 7), move(kind="undo"), stroke(3, 4), move(kind="clear"),
                  stroke(4, 6), stroke(5, 3), move(kind="undo"), move(kind="guess", target="ia1", number=2),
                  move(kind="done")]
        for text in script:
            assert handle_text(session, text) is None, text
        session.apply(Done(player="ia1"))  # the last bonus token: the round is scored
        assert session.state.phase == "scored"
        session.apply(NextRound(player=HUMAN))
        assert handle_text(session, stroke(6, 8)) is None
        for frame in drain(queue):
            page = apply_update(page, frame)
        whole = session.frame([])
        assert page["state"] == whole["state"]
        assert page["fr"] == whole["fr"]  # every word shown in the game, past rounds' too
        assert set(page["state"]["round"]["cards"][0]["words"]) <= set(page["fr"])
        result = page["state"]["results"][0]
        assert result["drawings"][HUMAN] == [[[20.0 + k, 20.0 + (4 + k) % 200] for k in range(6)]]
        assert page["state"]["round"]["drawings"][HUMAN] == [[[20 + k, 20 + (6 + k) % 200] for k in range(8)]]
        await session.close()

    asyncio.run(run())


def test_a_gap_is_detected_and_a_sync_frame_gets_the_whole_state() -> None:
    async def run() -> None:
        session = pictomania_session()
        queue = session.attach()
        page = drain(queue)[0]
        handle_text(session, stroke(1, 3))
        handle_text(session, stroke(2, 3))
        first, second = drain(queue)
        with pytest.raises(ValueError, match="does not follow"):
            apply_update(page, second)  # the first one was lost
        again = handle_text(session, json.dumps({"type": "sync"}))
        assert again is not None and again["type"] == "state" and again["seq"] == 2
        assert len(again["state"]["round"]["drawings"][HUMAN]) == 2
        assert apply_update(apply_update(page, first), second)["state"] == again["state"]
        await session.close()

    asyncio.run(run())


def test_the_config_names_what_the_page_needs() -> None:
    async def run() -> dict[str, Any]:
        session = pictomania_session()
        config = session.frame([])["config"]
        await session.close()
        return config

    config = asyncio.run(run())
    assert config["unclaimed_penalty"] in ("all", "lowest") and config["cards_per_round"] == 6
    assert config["opponents"] == accepted_opponents()
    assert accepted_opponents()["pictomania"]["min"] == 2  # 3 players at least (rules file)
    assert accepted_opponents()["kontour"] == {"min": 1, "max": 5}


def test_kontour_updates_carry_the_turn_and_the_ended_turns_only() -> None:
    """Kontour uses the same frames: the merged state equals the whole one after a turn the person
    drew (its segments kept in the history) and a turn that ran out."""

    async def run() -> None:
        play = PlaySettings()
        words = load_words(None)
        config, _ = game_configs(play)
        rules = KontourRules(config.replace(timer_s=0.3), judge=words.judge)
        cards, half = kontour_deck(words, 5)
        names = {HUMAN: "Ana", "ia1": "Plume", "griffon": "Griffon"}
        state, _ = rules.setup(players=[HUMAN, "ia1"], deck=cards, seed=5, half=half)
        clock = ManualClock()
        session = KontourSession(
            rules, state, kontour_candidates(cards, half, words.drawable), game_id="k",
            seating=Seating(names, load_level("normal"), token="t"), seed=5, words=words, recognize=uniform,
            labels=frozenset(), play=play, clock=clock,
        )
        queue = session.attach()
        page = drain(queue)[0]
        for text in (move(kind="draw_card"), move(kind="choose_word", color="blue"),
                     move(kind="stroke", points=[[50, 110], [50, 230]]),
                     move(kind="stroke", points=[[50, 230], [200, 230]])):
            assert handle_text(session, text) is None, text
        session.apply(Guess(player="ia1", text="zzz"))
        clock.advance(0.4)  # past the turn's 0.3 s
        session.apply(Tick())  # the turn ran out
        updates = drain(queue)
        assert all(f["type"] == "update" and "history" not in f["set"] for f in updates)
        for frame in updates:
            page = apply_update(page, frame)
        assert page["state"] == session.frame([])["state"]
        [turn] = page["state"]["history"]
        assert [(s["x0"], s["y0"], s["x1"], s["y1"]) for s in turn["segments"]] == [
            (50, 110, 50, 230), (50, 230, 200, 230)]
        await session.close()

    asyncio.run(run())


def test_stroke_and_undo_cannot_be_repeated_without_end() -> None:
    """The rules count the strokes SUBMITTED in a round (undone ones too): a flood of stroke +
    undo pairs stops at the cap with a typed frame, whatever is left on the board."""

    async def run() -> tuple[int, dict[str, Any] | None, int]:
        session = pictomania_session(play=PlaySettings(max_pictomania_strokes=20))
        refused = None
        for i in range(1, 100):
            refused = handle_text(session, stroke(i, 10))
            if refused is not None:
                break
            assert handle_text(session, move(kind="undo")) is None
        await session.close()
        return i, refused, len(session.state.round.drawings[HUMAN])

    tried, refused, on_board = asyncio.run(run())
    assert tried == 21 and on_board == 0
    assert refused is not None and refused["code"] == "too_many_strokes" and refused["limit"] == 20


@pytest.mark.parametrize("limits", [{"max_moves": 30}, {"max_log_bytes": 40_000}])
def test_a_game_log_is_bounded_and_beyond_the_person_gets_game_too_long(limits: dict[str, int]) -> None:
    async def run() -> tuple[int, dict[str, Any] | None, int, int]:
        session = pictomania_session(play=PlaySettings(**limits))
        refused = None
        for i in range(1, 200):
            refused = handle_text(session, stroke(i, 100))
            if refused is not None:
                break
        moves, size = session.moves, session.log_bytes
        if "max_moves" in limits:  # any move, not only strokes
            assert handle_text(session, move(kind="undo"))["code"] == "game_too_long"
        assert handle_text(session, json.dumps({"type": "ping"}))["type"] == "pong"  # the socket lives
        await session.close()
        return i, refused, moves, size

    tried, refused, moves, size = asyncio.run(run())
    assert refused is not None and refused["code"] == "game_too_long", refused
    assert "start a new game" in refused["message"]
    assert moves <= limits.get("max_moves", 10_000) and size <= limits.get("max_log_bytes", 2**21)
    assert tried == moves + 1  # every stroke before the limit was taken


def test_the_persons_strokes_are_charged_to_the_client_point_budget() -> None:
    """The same per-client budget as ``/v1/guess`` (``Shared.spend_points``)."""
    settings = Settings(client_points_per_s=10, client_points_burst=1_000)
    shared = Shared(settings, None, None, None, 0.0)  # type: ignore[arg-type] - only the budget is used

    async def run() -> list[dict[str, Any] | None]:
        session = pictomania_session()
        spend = functools.partial(shared.spend_points, "1.2.3.4")
        replies = [handle_text(session, stroke(i, 300), spend=spend) for i in range(1, 6)]
        other = functools.partial(shared.spend_points, "5.6.7.8")
        replies.append(handle_text(session, stroke(9, 300), spend=other))
        await session.close()
        return replies

    replies = asyncio.run(run())
    assert replies[:3] == [None, None, None]  # 900 of the 1,000 points of the burst
    assert replies[3] is not None and replies[3]["code"] == "rate_limited" and replies[3]["retry_after"] > 0
    assert "points per second" in replies[3]["message"]
    assert replies[5] is None  # another client has its own budget



def test_a_games_strokes_are_bounded_by_the_services_one_stroke_limit() -> None:
    """``GRIFFON_MAX_STROKE_POINTS`` bounds a person's stroke in a game as in the HTTP API and bot
    rooms: one name for one limit."""
    from service.play.manager import GameManager

    async def run() -> tuple[Any, Any]:
        games = GameManager(Settings(max_stroke_points=40), PlaySettings(), lambda key: uniform, frozenset(),
                            clock=ManualClock())
        session = games.create("pictomania", opponents=2, level="normal", name="Ana", seed=3)
        replies = handle_text(session, stroke(1, 40)), handle_text(session, stroke(2, 41))
        await games.aclose()
        return replies

    fits, too_long = asyncio.run(run())
    assert fits is None
    assert too_long is not None and too_long["code"] == "invalid_move"
    assert "1 to 40 points" in too_long["message"]


BAD_POINTS = [
    [], "12", [[1, 2], [3]], [[True, 2]], [[1, False]], [["1", 2]], [[None, 2]],
    [[float("nan"), 2]], [[1, float("inf")]], [[-65, 2]], [[1, 321]], [[10**400, 2]], [[1, 2, 3]],
    [[1.5, 2]] * 1_001, [{"x": 1, "y": 2}],
]


@pytest.mark.parametrize("raw", BAD_POINTS + [[[0, 0]], [[-64, 320.0], (1.5, 2)], [[3, 4]] * 1_000])
def test_stroke_points_are_checked_as_the_point_by_point_reading_does(raw: Any) -> None:
    """The one-pass check of exact JSON types accepts exactly what the point-by-point reading
    accepts (tuples too), gives the same points, and refuses the rest with its message."""
    from games.core import InvalidMove
    from service.play.bounds import _checked_points, check_points

    def outcome(check: Any) -> Any:
        try:
            return check(raw)
        except InvalidMove as error:
            return f"refused: {error}"

    fast = outcome(lambda r: check_points(r, 1_000))
    if not isinstance(raw, list) or not 1 <= len(raw) <= 1_000:
        assert fast == "refused: a stroke needs 1 to 1000 points [x, y]"
    else:
        assert fast == outcome(_checked_points)
    assert isinstance(fast, str) == (raw in BAD_POINTS)


def test_a_frame_is_encoded_as_json_reads_it() -> None:
    """Compact text, French letters as they are, integer keys as strings (as ``json.dumps``)."""
    from service.play.sockets import encode_frame

    frame = {"type": "update", "fr": {"chat": "chat noir, très élégant"}, "points": [[1.5, 2.0]],
             "scores": {1: 3}, "pair": (1, 2)}
    text = encode_frame(frame)
    assert json.loads(text) == json.loads(json.dumps(frame))
    assert text == json.dumps(frame, separators=(",", ":"), ensure_ascii=False)
