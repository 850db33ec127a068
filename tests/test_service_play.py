"""Solo games: over the real uvicorn server (POST /v1/play and the game WebSocket: moves out of
turn, malformed frames, a reconnect that resumes, the bounds on games, idle expiry, rates and frame
size), the socket limits (idle timeout, sockets per game, guess rate) in process, and a whole
Kontour turn each way (the person draws while the AI guesses, then the AI draws at a human pace
while the person guesses) in process on a clock the test moves (tests/local_play.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from griffon.launch import Patience, Server, eventually, patient
from tests.local_play import LocalTable
from tests.play_helpers import HAS_WEIGHTS, HOUSE, Player, has_event, model_env, new_game, play_server
from tests.service_server import in_process


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest):
    # Pictomania rounds of 12 s: the AI players start drawing several seconds into a round. No test
    # here waits for a Kontour turn to run out: 60-second turns, so that a busy machine never sees a
    # turn end between two moves of a test.
    with play_server(request, {"pictomania_round_s": 12, "kontour_timer_s": 60}) as running:
        yield running


@pytest.fixture(scope="module")
def table(request: pytest.FixtureRequest):
    """The service's game manager in process (the shipped model), 12-second Pictomania rounds."""
    local = LocalTable(model_env(request), pictomania_round_s=12)
    yield local
    local.close()


def move_frame(move: dict) -> str:
    return json.dumps({"type": "move", "move": move})


def is_state(frame: dict) -> bool:
    return frame["type"] == "state"


# -- creating games ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"game": "chess"}, "body.game"),
        ({"game": "kontour", "opponents": 0}, "body.opponents"),
        ({"game": "kontour", "opponents": 6}, "body.opponents"),
        ({"game": "kontour", "level": "expert"}, "body.level"),
        ({"game": "kontour", "name": "<script>"}, "body.name"),
        ({"game": "kontour", "colour": "blue"}, "body.colour"),
        ({"game": "pictomania", "opponents": 1}, "pictomania takes 2-5 AI opponents, got 1"),
    ],
)
def test_bad_new_game_requests_get_422_with_the_reason(server, body, fragment) -> None:
    response = httpx.post(server.url + "/v1/play", json=body, timeout=patient(10))
    assert response.status_code == 422
    assert response.json()["error"] == "invalid_request"
    assert fragment in response.json()["message"]


def test_the_options_say_what_a_new_game_accepts_from_the_rules_files(server) -> None:
    from games.kontour import KontourConfig
    from games.pictomania import PictomaniaConfig

    options = httpx.get(server.url + "/v1/play/options", timeout=patient(10)).json()
    assert options["levels"] == ["easy", "normal", "hard"]
    pictomania = PictomaniaConfig.load()
    assert options["opponents"]["pictomania"] == {"min": pictomania.min_players - 1,
                                                  "max": min(5, pictomania.max_players - 1)}
    assert options["opponents"]["kontour"]["min"] == KontourConfig.load().min_players - 1


def test_the_page_and_its_static_files_are_served(server) -> None:
    page = httpx.get(server.url + "/", timeout=patient(10))
    assert page.status_code == 200 and "Griffon" in page.text and 'lang="fr"' in page.text
    script = httpx.get(server.url + "/static/app.js", timeout=patient(10))
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    for bad in ("nope.js", "..%2Fplay.py", ".hidden.css", "play.py"):
        missing = httpx.get(server.url + "/static/" + bad, timeout=patient(10))
        assert missing.status_code == 404, bad
        assert missing.json()["error"] == "not_found"


def test_unknown_game_and_wrong_token_get_an_error_frame_and_a_close_code(server) -> None:
    with connect(server.ws_url + "/v1/play/nope?token=x", open_timeout=patient(10)) as ws:
        frame = json.loads(ws.recv(timeout=patient(5)))
        message = "no game 'nope' (over or expired)"
        assert frame == {"type": "error", "code": "unknown_game", "message": message}
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=patient(5))
        assert closed.value.rcvd.code == 4404
    game = new_game(server, game="kontour", opponents=1)
    with connect(f"{server.ws_url}/v1/play/{game['game_id']}?token=wrong", open_timeout=patient(10)) as ws:
        assert json.loads(ws.recv(timeout=patient(5)))["code"] == "bad_token"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=patient(5))
        assert closed.value.rcvd.code == 4403


# -- Kontour ----------------------------------------------------------------------------------


def test_a_full_kontour_turn_each_way(table: LocalTable) -> None:
    p = table.new_game(game="kontour", opponents=1, level="hard", name="Ana", seed=5)
    first = p.until(is_state)
    assert first["names"] == {"joueur": "Ana", "ia1": "Plume", "griffon": "Griffon"}
    assert p.state["phase"] == "draw" and p.state["drawer"] == "joueur"
    assert p.state["seed"] == "hidden" and p.state["deck"] == []

    # The person draws: card, word, six straight lines; a curve is refused; an extension merges.
    p.move(kind="draw_card")
    p.until(has_event("card_drawn"))
    card = p.state["turn"]["card"]
    p.move(kind="choose_word", color="orange")
    p.until(has_event("drawing_started"))
    assert p.state["turn"]["word"] == card["orange"]
    assert p.frame["fr"][card["orange"]]  # French word shown to the drawer
    for line in HOUSE:
        p.move(kind="stroke", points=line)
    p.until(has_event("stroke_added", count=6))
    p.move(kind="stroke", points=[[10, 10], [60, 90], [110, 10]])
    assert "straight" in p.error("not_a_straight_line")["message"]
    p.move(kind="stroke", points=[[200, 230], [235, 230]])
    merged = p.until(has_event("stroke_added", merged_into=1))
    assert merged["state"]["turn"]["segments"][1]["x1"] == pytest.approx(235, abs=1)
    assert len(p.state["turn"]["segments"]) == 6
    p.move(kind="guess", text="maison")
    assert p.error("not_allowed")["message"] == "the drawer may not guess"
    ended = p.until(has_event("turn_ended", drawer="joueur"), timeout=12)
    summary = next(e for e in ended["events"] if e["kind"] == "turn_ended")
    assert summary["word"] == card["orange"]
    assert HAS_WEIGHTS, "the play tests run the shipped recognizer (model/weights)"
    ai_guesses = [e for e in p.events("guess_made") if e["player"] == "ia1"]
    assert ai_guesses, "the AI said nothing about six lines in 6 s"
    assert all(e["text"] for e in ai_guesses)

    # Rotation: the AI draws at a human pace, the person guesses and plays out of turn.
    p.until(has_event("drawing_started", drawer="ia1"), timeout=10)
    assert p.state["turn"]["card"] is None and p.state["turn"]["word"] is None  # hidden
    p.move(kind="stroke", points=HOUSE[0])
    assert p.error("not_your_turn")["message"] == "only the drawer (ia1) may draw"
    p.move(kind="draw_card")
    assert "phase 'drawing'" in p.error("wrong_phase")["message"]
    p.move(kind="guess", text="zzzz")
    wrong = p.until(has_event("guess_made", player="joueur"))
    assert not next(e for e in wrong["events"] if e["kind"] == "guess_made")["accepted"]
    p.until(has_event("turn_ended", drawer="ia1"), timeout=12)
    times = [f["now"] for f in p.frames if has_event("stroke_added", drawer="ia1")(f)]
    assert times, "the AI drew nothing"
    assert all(b - a >= 0.3 for a, b in zip(times, times[1:], strict=False)), times
    assert p.state["drawer"] == "joueur" and p.state["phase"] == "draw"
    assert [h["drawer"] for h in p.state["history"]] == ["joueur", "ia1"]
    p.close()


def test_a_word_not_chosen_in_time_reaches_the_page_as_a_turn_without_a_word() -> None:
    """« Temps écoulé »: the Kontour page (kontour.js ``renderOverlay``) shows it, and « Vous n'avez
    pas choisi de mot à temps », when the state it holds is back in ``draw`` and the last turn of its
    history has no word. Those are the frames a person who took the card and never chose gets (the
    update of the timer's end, and the whole state on a reload); a turn whose word was chosen (the
    AI's, next) keeps its word, the overlay's « Le mot était »."""
    import asyncio

    from service.play.clock import ManualClock
    from service.play.manager import GameManager
    from service.play.settings import PlaySettings
    from service.play.table import HUMAN
    from service.settings import Settings
    from tests.test_service_persistence import move, play_a_while, uniform

    async def run() -> None:
        games = GameManager(Settings(), PlaySettings(), lambda key: uniform, frozenset(), clock=ManualClock())
        session = games.create("kontour", opponents=1, level="normal", name="Ana", seed=7)
        assert session.driver is not None
        session.driver.cancel()  # the test moves the clock
        queue = session.attach(HUMAN)
        play_a_while(session, 1, [move(kind="draw_card")])
        timer = session.rules.config.timer_s
        assert session.state.phase == "choose" and session.state.turn.drawer == HUMAN
        play_a_while(session, timer + 1, [])  # the card taken, no word chosen: the timer runs out
        frames = []
        while not queue.empty():
            frames.append(queue.get_nowait())
        ended = [e for f in frames if f["type"] == "update" for e in f["events"] if e["kind"] == "turn_ended"]
        assert ended and (ended[0]["drawer"], ended[0]["word"], ended[0]["reason"]) == (HUMAN, None, "time")
        page = session.frame([], HUMAN)  # what the page holds (the whole state: a reload's)
        last = page["state"]["history"][-1]
        assert page["state"]["phase"] == "draw" and page["state"]["drawer"] == "ia1"
        assert last["drawer"] == HUMAN and last["word"] is None and last["finders"] == []
        play_a_while(session, 3 * timer, [])  # the AI's turn: a word chosen, then the timer
        history = session.frame([], HUMAN)["state"]["history"]
        assert len(history) >= 2 and history[1]["drawer"] == "ia1" and history[1]["word"]
        session.detach(queue)
        await games.aclose()

    asyncio.run(run())


def test_malformed_frames_get_typed_errors_and_the_game_goes_on(server) -> None:
    p = Player(server, new_game(server, game="kontour", opponents=1))
    p.until(is_state)
    cases = [
        ("not json", "bad_frame"),
        ("[1, 2]", "bad_frame"),
        (json.dumps({"type": "dance"}), "bad_frame"),
        (json.dumps({"type": "move"}), "invalid_move"),
        (move_frame({"kind": "fly"}), "invalid_move"),
        (move_frame({"kind": "tick"}), "invalid_move"),
        ('{"type": "move", "move": {"kind": "stroke", "points": [[NaN, 1], [2, 3]]}}', "bad_frame"),
        (move_frame({"kind": "stroke", "points": [[1e9, 1], [2, 3]]}), "invalid_move"),
        (move_frame({"kind": "stroke", "points": [[1, 1]] * 1001}), "invalid_move"),
        (move_frame({"kind": "stroke", "points": [["a", 1], [2, 3]]}), "invalid_move"),
        (move_frame({"kind": "guess", "text": "x" * 81}), "bad_frame"),
        (move_frame({"kind": "choose_word", "color": "red"}), "invalid_move"),
        ('{"type": "move", "move": {"kind": "guess", "text": "\\ud800"}}', "bad_frame"),
        ("[" * 5000 + "]" * 5000, "bad_frame"),
        ('{"type": "ping", "n": ' + "9" * 5000 + "}", "bad_frame"),
    ]
    for text, code in cases:
        p.send(text)
        frame = p.error(code)
        assert frame["message"], text[:40]
    p.move(kind="choose_word", color="blue")  # right move, wrong phase
    assert p.error("wrong_phase")["phase"] == "draw"
    p.move(kind="draw_card")  # the game goes on
    p.until(has_event("card_drawn"))
    assert p.state["phase"] == "choose"
    p.send(json.dumps({"type": "ping"}))
    assert p.until(lambda f: f["type"] == "pong")["now"] > 0
    p.send("x" * 300_000)  # above the 256 KiB frame limit: uvicorn closes before buffering it
    with pytest.raises(ConnectionClosed) as closed:
        p.until(lambda f: False, timeout=5)
    assert closed.value.rcvd.code == 1009


def test_a_reconnect_resumes_the_game(server) -> None:
    game = new_game(server, game="kontour", opponents=2, seed=9)
    p = Player(server, game)
    p.until(is_state)
    p.move(kind="draw_card")
    p.until(has_event("card_drawn"))
    card = p.state["turn"]["card"]
    p.close()
    again = Player(server, game)
    frame = again.until(is_state)
    assert frame["events"] == []
    assert again.state["phase"] == "choose" and again.state["turn"]["card"] == card
    assert 0 < frame["time_left"] <= 60  # the turn's own timer, still running
    again.move(kind="choose_word", color="blue")
    again.until(has_event("drawing_started"))
    again.close()


def test_the_message_rate_is_bounded(server) -> None:
    p = Player(server, new_game(server, game="kontour", opponents=1))
    p.until(is_state)
    for _ in range(300):
        p.send(json.dumps({"type": "ping"}))
    limited = p.until(lambda f: f.get("code") == "rate_limited", timeout=10)
    assert "frames per second" in limited["message"]
    p.close()


# -- Pictomania -------------------------------------------------------------------------------


# -- bounds -----------------------------------------------------------------------------------


def test_game_slots_are_bounded_and_idle_games_expire(tight_server, tight_env) -> None:
    small = tight_server  # 2 game slots, idle games expire (after 2 s on a quiet machine)
    expiry = float(tight_env["GRIFFON_PLAY_IDLE_EXPIRY_S"])
    games = [new_game(small, game="kontour", opponents=1) for _ in range(2)]
    full = httpx.post(small.url + "/v1/play", json={"game": "kontour"}, timeout=patient(10))
    assert full.status_code == 503
    message = "all 2 game slots are taken; retry later"
    assert full.json() == {"error": "too_many_games", "message": message}
    p = Player(small, games[0])
    p.until(is_state)
    patience = Patience(expiry + 8, "the idle game was not closed")
    with pytest.raises(ConnectionClosed) as closed:
        while not patience.expired():
            try:
                p.ws.recv(timeout=1)
            except TimeoutError:
                pass
        raise patience.failure()
    assert closed.value.rcvd.code == 4410
    # The other game, as idle, goes too (a socket that only listens does not keep a game alive).
    eventually(lambda: first_answer(small, games[1]) == "unknown_game", expiry + 8,
               "the other idle game was kept")
    assert new_game(small, game="pictomania", opponents=2)["game_id"]


def first_answer(server: Server, game: dict) -> str:
    """What a new socket of `game` receives first: a frame type, or an error's code."""
    with connect(server.ws_url + game["ws"], open_timeout=patient(10)) as ws:
        frame = json.loads(ws.recv(timeout=patient(5)))
    return frame.get("code") or frame["type"]


# -- socket limits, in process --------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(tiny_checkpoint: Path):
    with in_process(tiny_checkpoint, play_limits={"idle_timeout_s": 1.5, "max_game_sockets": 2,
                                                "guess_rate": 0.01, "guess_burst": 3}) as client:
        yield client


def test_idle_game_socket_is_closed_4408_and_the_game_lives_on(app) -> None:
    game = app.post("/v1/play", json={"game": "kontour", "opponents": 1}).json()
    with app.websocket_connect(game["ws"]) as ws:
        assert ws.receive_json()["type"] == "state"
        frames = []
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                frames.append(ws.receive_json())
        idle = {"type": "error", "code": "idle_timeout", "message": "no frame for 1.5 s: closing"}
        assert frames[-1] == idle
        assert closed.value.code == 4408
    with app.websocket_connect(game["ws"]) as ws:  # the game itself is still there
        assert ws.receive_json()["type"] == "state"


def test_sockets_per_game_are_bounded(app) -> None:
    game = app.post("/v1/play", json={"game": "kontour", "opponents": 1}).json()
    with app.websocket_connect(game["ws"]) as one, app.websocket_connect(game["ws"]) as two:
        assert one.receive_json()["type"] == two.receive_json()["type"] == "state"
        with app.websocket_connect(game["ws"]) as three:
            assert three.receive_json() == {"type": "error", "code": "too_many_sockets",
                                            "message": "a game holds at most 2 sockets per player"}
            with pytest.raises(WebSocketDisconnect) as closed:
                three.receive_json()
            assert closed.value.code == 4429


def test_guesses_come_at_a_human_pace(app) -> None:
    game = app.post("/v1/play", json={"game": "kontour", "opponents": 1}).json()
    with app.websocket_connect(game["ws"]) as ws:
        assert ws.receive_json()["type"] == "state"
        codes = []
        for _ in range(4):
            ws.send_text(move_frame({"kind": "guess", "text": "chat"}))
            codes.append(ws.receive_json()["code"])
        assert "rate_limited" not in codes[:3] and codes[3] == "rate_limited", codes  # 3 at once, then wait


def test_a_failed_games_start_releases_everything_the_app_started(tiny_checkpoint: Path, monkeypatch) -> None:
    """`service.play.web.startup` raising: the pruner, the inference worker, the games and the
    database are all released (no task or thread left behind)."""
    import asyncio
    import tempfile

    from fastapi.testclient import TestClient

    import service.play.web
    from service.app import create_app
    from service.settings import Settings
    from store import StoreSettings

    seen: dict[str, object] = {}

    async def broken_startup(app) -> None:
        await real_startup(app)  # the manager is made (its sweeper runs), then the start fails
        seen["tasks"] = {t.get_name() for t in asyncio.all_tasks()}
        raise RuntimeError("the games could not start")

    real_startup = service.play.web.startup
    monkeypatch.setattr(service.play.web, "startup", broken_startup)
    with tempfile.TemporaryDirectory(prefix="griffon-test-db-") as folder:
        settings = Settings(model={"checkpoint": tiny_checkpoint})
        app = create_app(settings, StoreSettings(data_dir=Path(folder)))
        closed: list[str] = []
        store_close = app.state.store.close
        monkeypatch.setattr(app.state.store, "close", lambda: (closed.append("store"), store_close()))
        with pytest.raises(RuntimeError, match="could not start"), TestClient(app):
            pass
        assert {"db-prune", "play-sweeper"} <= seen["tasks"]  # type: ignore[operator]
        assert closed == ["store"]
        assert app.state.shared.inference._closed
        assert app.state.play.sweeper.cancelled() or app.state.play.sweeper.done()


def test_the_pruner_logs_a_failure_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """A prune that fails with a bug (not a StoreError) is logged with its traceback; the next one runs."""
    import asyncio
    from types import SimpleNamespace

    from service.app import prune_forever

    class Store:
        calls = 0

        def prune(self) -> SimpleNamespace:
            self.calls += 1
            if self.calls == 1:
                raise ValueError("a bug in the retention rules")
            return SimpleNamespace(games=0, transcripts=0, drawings=0)

    store = Store()

    async def run() -> None:
        task = asyncio.create_task(prune_forever(store, every_s=0.01))  # type: ignore[arg-type]
        while store.calls < 3 and not task.done():
            await asyncio.sleep(0.01)
        task.cancel()

    with caplog.at_level("ERROR", logger="griffon.service"):
        asyncio.run(run())
    assert store.calls >= 3
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert record.getMessage() == "database prune failed" and record.exc_info is not None


# -- games and the database, in process -------------------------------------------------------------


async def _uniform(drawing: list, candidates) -> dict[str, float]:
    return {c: 1 / len(candidates) for c in candidates}


def _manager(store, **limits: int):
    from service.play.manager import GameManager
    from service.play.settings import PlaySettings
    from service.settings import Settings

    return GameManager(Settings(play_limits=limits), PlaySettings(), lambda key: _uniform, frozenset(), store)


def test_a_refused_database_write_does_not_cost_the_player_an_older_game(tmp_path: Path) -> None:
    import asyncio

    from store import StoreError, open_store

    store = open_store(f"sqlite:///{tmp_path / 'g.db'}")

    async def run() -> tuple[list[str], list[str]]:
        games = _manager(store, games_per_client=2)
        first = games.create("kontour", 1, "normal", "Ana", seed=1, client="c")
        games.create("kontour", 1, "normal", "Ana", seed=2, client="c")  # neither has a socket
        real = store.create_game

        def refuse(*args, **kwargs) -> None:
            raise StoreError("disk full")

        store.create_game = refuse  # type: ignore[method-assign]
        with pytest.raises(StoreError, match="disk full"):
            games.create("kontour", 1, "normal", "Ana", seed=3, client="c")
        kept = list(games.games)
        store.create_game = real  # type: ignore[method-assign]
        third = games.create("kontour", 1, "normal", "Ana", seed=3, client="c")  # now it replaces the oldest
        after = list(games.games)
        await games.aclose()
        assert first.id in kept and first.id not in after and third.id in after
        return kept, after

    try:
        kept, after = asyncio.run(run())
    finally:
        store.close()
    assert len(kept) == 2 and len(after) == 2


def test_a_restart_resumes_the_newest_games_and_expires_the_others(tmp_path: Path) -> None:
    import asyncio

    from store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'g.db'}")

    async def first_run() -> list[str]:
        games = _manager(store)
        made = [games.create("kontour", 1, "normal", "Ana", seed=i, client=f"c{i}").id for i in range(5)]
        for gid in list(games.games):  # a shutdown: the games stay "playing" in the database
            await games.remove(gid)
        return made

    async def restart(max_sessions: int) -> tuple[list[str], tuple[int, int]]:
        games = _manager(store, max_games=max_sessions)
        counts = games.resume()
        resumed = list(games.games)
        await games.aclose()
        return resumed, counts

    try:
        made = asyncio.run(first_run())
        resumed, counts = asyncio.run(restart(max_sessions=2))
        assert counts == (2, 0) and sorted(resumed) == sorted(made[-2:])  # the newest two
        statuses = {gid: store.load_game(gid).status for gid in made}
        assert [statuses[gid] for gid in made] == ["expired"] * 3 + ["playing"] * 2
        again, counts = asyncio.run(restart(max_sessions=5))  # the expired ones never come back
        assert counts == (2, 0) and sorted(again) == sorted(made[-2:])
    finally:
        store.close()


def test_games_asked_for_at_once_count_against_the_limits_one_by_one(tmp_path: Path) -> None:
    """Eight new games asked for at the same instant by one client, each database write slow: the
    client's games and hourly budget count each one (not eight checks before any is open)."""
    import asyncio
    import time

    from service.errors import RateLimited
    from store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'g.db'}")
    real = store.create_game

    def slow(*args, **kwargs) -> None:
        time.sleep(0.05)  # the write holds its thread: the other requests run meanwhile
        real(*args, **kwargs)

    store.create_game = slow  # type: ignore[method-assign]

    async def run() -> list[object]:
        games = _manager(store, games_per_client=1, games_per_client_hour=2, max_games=3)
        asked = [games.open_game("kontour", 1, "normal", "Ana", seed=i, client="c") for i in range(8)]
        results = await asyncio.gather(*asked, return_exceptions=True)
        assert len(games.games) == 1  # the second replaced the first (no socket held it)
        await games.aclose()
        return results

    results = asyncio.run(run())
    store.close()
    made = [r for r in results if not isinstance(r, Exception)]
    assert len(made) == 2 and all(isinstance(r, RateLimited) for r in results if r not in made)
