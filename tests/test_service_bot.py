"""The bot protocol over the real uvicorn server: a full round with the example room client,
every malformed frame, rate limits, idle timeout, a full server, a client dropped mid-round, and
transcripts readable with their key only; version 2 (negotiation, paces, one-line drawings,
normalised words, replaced rounds, floods of any frame type, resume, y direction)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import websockets

from griffon.launch import REPO, Server, eventually, patient, running_server
from tests.conftest import shape

WORDS = ["square", "circle", "triangle", "line"]


@pytest.fixture(scope="module")
def server(tiny_checkpoint: Path) -> Iterator[Server]:
    env = {"GRIFFON_MODEL": str(tiny_checkpoint), "GRIFFON_MAX_POINTS": "500",
           "GRIFFON_MAX_STROKE_POINTS": "500", "GRIFFON_MAX_FRAME_BYTES": "8192",
           "GRIFFON_BOT_LIST_SESSIONS": "true", "GRIFFON_BOT_RESUME_S": "4"}
    with running_server(env) as running:
        yield running


@pytest.fixture(scope="module")
def tight(tight_server: Server) -> Server:
    return tight_server


def square(seed: int = 3) -> list:
    """A square in two strokes (every AI level waits for a second line before it speaks)."""
    (xs, ys, ts), = shape("square", np.random.default_rng(seed))
    return [[xs[:3], ys[:3], ts[:3]], [xs[2:], ys[2:], ts[2:]]]


class Room:
    """A minimal test room over one WebSocket."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def send(self, frame: dict | str | bytes) -> None:
        await self.ws.send(frame if isinstance(frame, str | bytes) else json.dumps(frame))

    async def recv(self, timeout: float = 5.0) -> dict:
        """The next frame; TimeoutError after ``timeout`` seconds on a quiet machine, longer on a busy one."""
        return json.loads(await asyncio.wait_for(self.ws.recv(), patient(timeout)))

    async def ask(self, frame: dict | str | bytes, timeout: float = 5.0) -> dict:
        await self.send(frame)
        return await self.recv(timeout)

    async def quiet(self, seconds: float) -> list[dict]:
        """Every frame received until none comes for ``seconds`` (stretched on a busy machine)."""
        frames = []
        try:
            while True:
                frames.append(await self.recv(seconds))
        except TimeoutError:
            return frames

    async def start(self, analysis: bool = True, **round_fields: Any) -> dict:
        welcome = await self.ask({"type": "hello", "versions": [1], "room": "test", "analysis": analysis})
        assert welcome["type"] == "welcome" and welcome["version"] == 1
        frame = {"type": "round_start", "round": "r1", "difficulty": "hard", "seed": 1} | round_fields
        ready = await self.ask(frame)
        assert ready["type"] == "round_ready", ready
        return welcome


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def connect(server: Server) -> Any:
    return await websockets.connect(server.ws_url + "/v1/bot", open_timeout=patient(10))


# -- a full round --------------------------------------------------------------------------------
def test_example_room_client_plays_a_full_round(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "square.json"
    path.write_text(json.dumps({"word": "square", "drawing": square()}))
    command = [sys.executable, "examples/room_client.py", "--url", server.ws_url + "/v1/bot",
               "--drawing", str(path), "--difficulty", "hard", "--speed", "2", "--linger", "10",
               "--candidates", *WORDS]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=patient(60))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["found"] is True
    printed = [line for line in result.stdout.splitlines() if "bot: «" in line]
    assert printed[-1].endswith("✔ trouvé !") and len(printed) == summary["guesses"]
    assert "?key=" in summary["transcript"]
    transcript = httpx.get(server.url + summary["transcript"]).json()
    guesses = [e for e in transcript["events"] if e["kind"] == "guess"]
    assert len(guesses) == summary["guesses"] and guesses[-1]["label"] == "square"
    assert len({g["label"] for g in guesses}) == len(guesses)  # never twice the same word
    assert {g["label"] for g in guesses} <= set(WORDS)
    kinds = [e["kind"] for e in transcript["events"]]
    assert kinds[0] == "round_start" and "stroke" in kinds and "verdict" in kinds
    end = next(e for e in transcript["events"] if e["kind"] == "round_end")
    assert end["answer"] == "square" and end["found_by"] == "bot"
    assert transcript["live"] is False
    listed = httpx.get(server.url + "/v1/bot/sessions").json()["sessions"]
    assert summary["session"] in {s["id"] for s in listed}


def test_streamed_stroke_undo_clear_and_analysis(server: Server) -> None:
    async def scenario() -> None:
        async with await connect(server) as ws:
            room = Room(ws)
            await room.start(candidates=WORDS, difficulty="easy")
            (xs, ys, _), = shape("square", np.random.default_rng(3))
            await room.send({"type": "stroke_start", "x": xs[0], "y": ys[0]})
            await room.send({"type": "points", "x": xs[1:3], "y": ys[1:3]})
            await room.send({"type": "points", "x": xs[3:], "y": ys[3:]})
            first = await room.ask({"type": "stroke_end"})
            assert first["type"] == "analysis" and first["strokes"] == 1, first
            assert sum(g["prob"] for g in first["top"]) <= 1.0001
            second = await room.ask({"type": "stroke", "stroke": [[0, 100], [0, 100]]})
            assert second["strokes"] == 2
            undone = await room.ask({"type": "undo"})
            assert undone["strokes"] == 1 and undone["top"] == first["top"]  # no new inference
            await room.send({"type": "clear"})
            over = await room.ask({"type": "round_end", "answer": "square"})
            assert over == {"type": "round_over", "round": "r1", "said": [], "strokes": 0}

    run(scenario())


def test_other_players_correct_guess_silences_the_bot(server: Server) -> None:
    async def scenario() -> None:
        async with await connect(server) as ws:
            room = Room(ws)
            await room.start(analysis=False, candidates=WORDS)
            await room.send({"type": "player_guess", "player": "ana", "text": "carré", "correct": True})
            for stroke in square():
                await room.send({"type": "stroke", "stroke": stroke[:2]})
            assert await room.quiet(2.5) == []  # hard level would speak within ~1 s otherwise

    run(scenario())


# -- malformed frames: typed errors, and the connection stays usable -----------------------------
ERRORS = [
    ("x", "bad_json", "the frame is not valid JSON: Expecting value"),
    ("[1]", "bad_frame", "a frame must be a JSON object with a 'type'"),
    ({"type": "dance"}, "unknown_type", "unknown frame type 'dance' (known: hello, round_start, "
     "stroke_start, points, stroke_end, stroke, undo, clear, player_guess, verdict, round_end, "
     "ping, bye, erase, fill, draw_turn, draw_stop)"),
    ('{"type": "points", "id": 7, "x": [NaN], "y": [1]}', "invalid_frame",
     "points: x.0: Input should be a finite number"),
    ({"type": "hello", "versions": [1]}, "already_greeted", "hello was already received"),
    ({"type": "stroke_end"}, "no_round", "no round in progress: send round_start first"),
    ({"type": "round_start", "round": 2, "difficulty": "godlike"}, "unknown_difficulty",
     "unknown AI level 'godlike' (known: easy, normal, hard)"),
    ({"type": "round_start", "round": 2, "game": "chess"}, "invalid_frame",
     "round_start: game: Input should be 'kontour', 'pictomania' or 'other'"),
    (b"\x00\x01", "binary_not_supported", "frames must be JSON text, not binary"),
    ('{"type": "ping", "id": "\\ud800"}', "bad_json",
     "the frame holds a lone UTF-16 surrogate (\\ud800-\\udfff)"),
    ("[" * 4000 + "]" * 4000, "bad_json", "the frame is nested too deeply"),
    ('{"type": "ping", "id": ' + "9" * 5000 + "}", "bad_json",
     "the frame is not usable JSON: Exceeds the limit (4300 digits) for integer string conversion"),
    ({"type": "ping", "id": 2**60}, "invalid_frame", "ping: id"),
]


def test_malformed_frames_get_typed_errors(server: Server) -> None:
    async def scenario() -> None:
        async with await connect(server) as ws:
            room = Room(ws)
            assert await room.ask({"type": "round_start", "round": 1}) == {
                "type": "error", "code": "hello_first", "message": "send hello first"}
            assert (await room.ask({"type": "hello", "versions": [7]}))["code"] == "unsupported_version"
            await room.ask({"type": "hello", "versions": [1]})
            for frame, code, message in ERRORS:
                reply = await room.ask(frame)
                assert reply["type"] == "error" and reply["code"] == code, (frame, reply)
                assert reply["message"].startswith(message), (frame, reply)
            assert (await room.ask('{"type": "points", "id": 7, "x": [NaN], "y": [1]}'))["ref"] == 7
            assert await room.ask({"type": "ping", "id": "p1"}) == {"type": "pong", "ref": "p1"}

    run(scenario())


def test_a_frame_above_the_limit_closes_the_socket_1009(server: Server) -> None:
    async def scenario() -> None:
        async with await connect(server) as ws:
            room = Room(ws)
            assert await room.ask({"type": "ping", "pad": "x" * 8000}) == {  # just under the limit
                "type": "error", "code": "invalid_frame",
                "message": "ping: pad: Extra inputs are not permitted"}
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await room.ask(json.dumps({"type": "ping", "pad": "x" * 8200}))
            assert closed.value.rcvd.code == 1009  # uvicorn refuses it before buffering more

    run(scenario())


def test_drawing_errors_in_a_round(server: Server) -> None:
    async def scenario() -> None:
        async with await connect(server) as ws:
            room = Room(ws)
            await room.start(analysis=True)
            assert (await room.ask({"type": "points", "x": [1], "y": [2]}))["code"] == "no_stroke"
            await room.send({"type": "stroke_start", "x": 0, "y": 0})
            again = await room.ask({"type": "stroke_start", "x": 0, "y": 0})
            assert again["code"] == "stroke_open"
            uneven = await room.ask({"type": "points", "x": [1, 2], "y": [2]})
            assert uneven["message"] == "points: x, y (and t) must have the same length"
            run_ = list(range(300))
            await room.send({"type": "points", "x": run_, "y": run_})
            big = await room.ask({"type": "points", "x": run_, "y": run_})
            assert big == {"type": "error", "code": "too_many_points",
                           "message": "a stroke holds at most 500 points"}
            await room.send({"type": "undo"})  # drops the open stroke
            first = await room.ask({"type": "stroke", "stroke": [run_, run_]})
            assert first["type"] == "analysis" and first["strokes"] == 1
            total = await room.ask({"type": "stroke", "stroke": [run_[:250], run_[:250]]})
            assert total == {"type": "error", "code": "too_many_points",
                             "message": "a drawing holds at most 500 points"}
            wrong = await room.ask({"type": "verdict", "guess_id": 3, "correct": True})
            assert wrong == {"type": "error", "code": "unknown_guess", "message": "no guess 3 in this round"}
            ok = await room.ask({"type": "stroke", "stroke": [[0, 50], [0, 50]]})
            assert ok["type"] == "analysis" and ok["strokes"] == 2  # still usable

    run(scenario())


# -- limits ----------------------------------------------------------------------------------------
def test_rate_limit_then_flooding_closes(tight: Server) -> None:
    async def scenario() -> None:
        async with await connect(tight) as ws:
            room = Room(ws)
            for _ in range(8):
                await room.send({"type": "ping"})
            # the first answer may be slow on a loaded machine (a fresh clone compiles its kernels in
            # every test worker at once); then the rest arrive together
            frames = [await room.recv(10.0), *await room.quiet(0.5)]
            pongs = [f for f in frames if f["type"] == "pong"]
            errors = [f for f in frames if f["type"] == "error"]
            # the burst of 5 answered (more if tokens came back meanwhile: a busy machine), the rest
            # dropped after one warning
            assert 5 <= len(pongs) < 8 and [e["code"] for e in errors] == ["rate_limited"], frames
            assert errors[0]["message"] == "more than 5 frames/s: frames are being dropped"
            await asyncio.sleep(1.2)  # tokens come back
            assert await room.ask({"type": "ping"}) == {"type": "pong"}
            with pytest.raises(websockets.ConnectionClosed) as closed:
                for _ in range(100):  # at once: far more than 20 refused in a row, however slow the machine
                    await room.send({"type": "ping"})
                await room.quiet(2.0)
                await room.recv(2.0)
            assert closed.value.rcvd.code == 4429

    run(scenario())


def test_idle_connection_times_out(tight: Server, tight_env: dict) -> None:
    idle = tight_env["GRIFFON_BOT_IDLE_TIMEOUT_S"]  # 2.5 s on a quiet machine

    async def scenario() -> None:
        async with await connect(tight) as ws:
            room = Room(ws)
            await room.ask({"type": "hello", "versions": [1]})
            error = await room.recv(float(idle) + 2.5)
            assert error == {"type": "error", "code": "idle_timeout",
                             "message": f"no frame for {idle} s: closing"}
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await room.recv(5.0)
            assert closed.value.rcvd.code == 4408

    run(scenario())


def test_server_full(tight: Server) -> None:
    async def scenario() -> None:
        async with await connect(tight) as one, await connect(tight) as two:
            await Room(one).ask({"type": "ping"})
            await Room(two).ask({"type": "ping"})
            async with await connect(tight) as three:
                await Room(three).ask({"type": "ping"})
                async with await connect(tight) as four:
                    refused = await Room(four).recv()
                    assert refused == {"type": "error", "code": "server_full",
                                       "message": "the server already holds 3 bots"}
                    with pytest.raises(websockets.ConnectionClosed) as closed:
                        await Room(four).recv()
                    assert closed.value.rcvd.code == 4503

    run(scenario())


def test_dropped_client_mid_round(server: Server) -> None:
    async def scenario() -> tuple[str, str]:
        ws = await connect(server)
        room = Room(ws)
        welcome = await room.start(candidates=WORDS)
        await room.ask({"type": "stroke", "stroke": square()[0][:2]})
        ws.transport.abort()  # no close handshake: the client just vanishes
        return welcome["session"], welcome["transcript_key"]

    session, key = run(scenario())

    def ended() -> dict | None:
        transcript = httpx.get(f"{server.url}/v1/bot/sessions/{session}", params={"key": key}).json()
        return None if transcript["live"] else transcript

    transcript = eventually(ended, 5, "the dropped client's session was still live")
    assert transcript["events"][-1]["kind"] == "round_end"
    assert transcript["events"][-1]["why"] == "disconnected"
    assert httpx.get(server.url + "/healthz").json()["status"] == "ok"

    async def again() -> None:
        async with await connect(server) as ws:
            await Room(ws).start()

    run(again())


def test_transcripts_need_their_key_and_listing_is_off_by_default(tight: Server) -> None:
    async def scenario() -> dict:
        async with await connect(tight) as ws:
            room = Room(ws)
            welcome = await room.start(candidates=WORDS)
            for i in range(12):  # ~300 bytes each: more than the 2,048 bytes a transcript keeps here
                await room.send({"type": "player_guess", "player": "ana" * 30, "text": f"mot {i} " * 25})
                await asyncio.sleep(0.21)  # under the 5 frames/s of this server
            await room.ask({"type": "ping"})
            return welcome

    welcome = run(scenario())
    url = f"{tight.url}/v1/bot/sessions/{welcome['session']}"
    missing = {"error": "unknown_session", "message": f"no bot session '{welcome['session']}' readable "
               "with this key (the last 200 finished sessions are kept)"}
    assert httpx.get(url).json() == missing
    assert httpx.get(url, params={"key": "guess"}).json() == missing
    transcript = httpx.get(url, headers={"X-Griffon-Key": welcome["transcript_key"]}).json()
    assert transcript["dropped_events"] > 0 and transcript["bytes"] <= 2048
    sizes = [len(json.dumps(e, ensure_ascii=False).encode()) for e in transcript["events"]]
    assert sum(sizes) == transcript["bytes"]
    listing = httpx.get(tight.url + "/v1/bot/sessions")
    assert listing.status_code == 404 and listing.json() == {
        "error": "not_found", "message": "the list of bot sessions is not public on this server "
        "(GRIFFON_BOT_LIST_SESSIONS); read one with its key"}
    nope = httpx.get(tight.url + "/v1/bot/sessions/nope", params={"key": "x"})
    assert nope.status_code == 404 and nope.json()["error"] == "unknown_session"


def test_asyncapi_spec_matches_the_frame_models() -> None:
    import yaml

    from service.bot import protocol as bot_protocol

    spec = yaml.safe_load((REPO / "docs" / "asyncapi.yaml").read_text())
    assert spec["asyncapi"].startswith("3.")
    schemas = spec["components"]["schemas"]
    adapter_models = bot_protocol.ClientFrame.__origin__.__args__  # the union's members
    by_type = {m.model_fields["type"].annotation.__args__[0]: m for m in adapter_models}
    assert set(by_type) == set(bot_protocol.CLIENT_TYPES)
    for kind, model in by_type.items():
        expected = model.model_json_schema(ref_template="#/components/schemas/{model}")
        expected.pop("title", None)
        assert schemas[kind] == expected, kind
    documented = set(schemas["error"]["properties"]["code"]["enum"])
    used = {code for _, code, _ in ERRORS} | {"frame_too_large", "hello_first", "stroke_open", "no_stroke",
                                                "too_many_points", "unknown_guess", "idle_timeout",
                                                "server_full", "rate_limited", "flooding",
                                                "internal_error"}
    assert used <= documented


# -- drawings given by rooms ---------------------------------------------------------------------
def round_over(ws: Any) -> dict:
    """The next ``round_over`` frame (the bot may speak before it)."""
    for _ in range(30):
        frame = ws.receive_json()
        if frame["type"] == "round_over":
            return frame
    raise AssertionError("no round_over")


def consented_rounds(ws: Any, rounds: int) -> list[dict]:
    """``rounds`` rounds of a square, each ended with ``drawing_consent``; their ``round_over``."""
    ws.send_json({"type": "hello", "versions": [1], "room": "test", "analysis": False})
    assert ws.receive_json()["type"] == "welcome"
    overs = []
    for n in range(rounds):
        ws.send_json({"type": "round_start", "round": f"r{n}", "candidates": WORDS, "seed": n})
        assert ws.receive_json()["type"] == "round_ready"
        for stroke in square(n):
            ws.send_json({"type": "stroke", "stroke": stroke})
        ws.send_json({"type": "round_end", "answer": "square", "drawing_consent": True})
        overs.append(round_over(ws))
    return overs


def test_a_guess_decided_before_round_end_reaches_the_room_before_round_over(tiny_checkpoint: Path) -> None:
    """A guess waits for its memory to be stored before it is sent; a round_end that arrives in that
    wait is answered after the guess, so every word of ``round_over.said`` reached the room first.
    The store is made slow (0.5 s a write) to open the window every time."""
    from tests.service_server import in_process

    with in_process(tiny_checkpoint, bot={"tick_s": 0.02}) as http:
        registry = http.app.state.bots
        stored = registry.remembered
        calls: list[str] = []
        deciding = threading.Event()  # the ticker decided a word and waits on the store

        async def slowly_remembered(session: Any) -> bool:
            calls.append(session.id)
            if len(calls) > 1:  # the first call is the welcome's
                deciding.set()
            await asyncio.sleep(0.5)
            return await stored(session)

        registry.remembered = slowly_remembered
        with http.websocket_connect("/v1/bot") as ws:
            ws.send_json({"type": "hello", "versions": [2], "room": "slow store", "analysis": True})
            assert ws.receive_json()["type"] == "welcome"
            ws.send_json({"type": "round_start", "round": 1, "candidates": ["square", "circle"],
                          "pace": "instant", "difficulty": "hard", "seed": 3})
            assert ws.receive_json()["type"] == "round_ready"
            ws.send_json({"type": "stroke", "stroke": square()[0]})
            assert ws.receive_json()["type"] == "analysis"
            assert deciding.wait(patient(10)), "the ticker decided no word"
            ws.send_json({"type": "round_end", "answer": "square"})
            frames = [ws.receive_json()]
            while frames[-1]["type"] != "round_over":
                frames.append(ws.receive_json())
    guesses = [frame["text"] for frame in frames if frame["type"] == "guess"]
    assert guesses and frames[-1]["said"] == guesses


def test_room_drawings_are_refused_by_default(server: Server) -> None:
    async def go() -> dict:
        async with websockets.connect(server.ws_url + "/v1/bot") as ws:
            room = Room(ws)
            await room.start(candidates=WORDS, analysis=False)
            for stroke in square():
                await room.send({"type": "stroke", "stroke": stroke})
            await room.send({"type": "round_end", "answer": "square", "drawing_consent": True})
            for _ in range(30):
                frame = await room.recv()
                if frame["type"] == "round_over":
                    return frame
        raise AssertionError("no round_over")

    assert run(go())["drawing_kept"] is False  # GRIFFON_BOT_ACCEPT_DRAWINGS is off


def test_room_drawings_when_accepted_are_bounded_per_address_and_day(tiny_checkpoint: Path) -> None:
    from tests.service_server import in_process

    with in_process(tiny_checkpoint, bot={"accept_drawings": True, "drawings_per_day": 2}) as http:
        with http.websocket_connect("/v1/bot") as ws:
            overs = consented_rounds(ws, 2)
        with http.websocket_connect("/v1/bot") as ws:  # a new session from the same address
            overs += consented_rounds(ws, 1)
        store = http.app.state.store
        store._background_writer.flush(timeout=patient(10))
        assert [o["drawing_kept"] for o in overs] == [True, True, False]
        assert store.drawing_counts() == {"square": 2}
        assert {d.game for d in store.iter_drawings()} == {"room"}


# -- protocol version 2 ----------------------------------------------------------------------------
async def hello(room: Room, versions: list[int], **fields: Any) -> dict:
    return await room.ask({"type": "hello", "versions": versions, "room": "test", "analysis": False} | fields)


def one_line_square(seed: int = 3) -> list:
    """A square drawn without lifting the pen."""
    (xs, ys, ts), = shape("square", np.random.default_rng(seed))
    return [xs, ys, ts]


async def first_guess(room: Room, seconds: float = 10.0) -> dict:
    """The next ``guess`` frame (errors fail the test)."""
    while True:
        frame = await room.recv(seconds)
        assert frame["type"] != "error", frame
        if frame["type"] == "guess":
            return frame


def test_version_negotiation_keeps_version_1_as_it_was(server: Server) -> None:
    async def scenario() -> None:
        async with await connect(server) as ws:
            room = Room(ws)
            v1 = await hello(room, [1])
            assert v1["version"] == 1 and "resume_token" not in v1 and "paces" not in v1
            assert (await room.ask({"type": "round_start", "round": 1, "candidates": WORDS}))["round"] == 1
            again = await room.ask({"type": "round_start", "round": 2, "candidates": WORDS})
            assert again["type"] == "round_ready" and "pace" not in again  # no round_over in v1
            paced = await room.ask({"type": "round_start", "round": 3, "pace": "instant"})
            assert paced == {"type": "error", "code": "invalid_frame",
                             "message": "round_start: pace needs protocol version 2"}
            over = await room.ask({"type": "round_end"})
            assert over == {"type": "round_over", "round": 2, "said": [], "strokes": 0}
        async with await connect(server) as ws:
            refused = await hello(Room(ws), [1], y="up")
            assert refused == {"type": "error", "code": "invalid_frame",
                               "message": "hello: y needs protocol version 2"}
        async with await connect(server) as ws:
            room = Room(ws)
            v2 = await hello(room, [1, 2, 9])
            assert v2["version"] == 2 and v2["resumed"] is False and v2["y"] == "down"
            assert v2["paces"] == ["instant", "human"] and len(v2["resume_token"]) >= 32
            ready = await room.ask({"type": "round_start", "round": "a", "candidates": WORDS})
            assert ready["pace"] == "human"
            await room.send({"type": "round_start", "round": "b", "candidates": WORDS, "pace": "instant"})
            replaced = await room.recv()
            assert replaced == {"type": "round_over", "round": "a", "said": [], "strokes": 0,
                                "why": "replaced"}
            assert (await room.recv()) | {"seed": 0} == {
                "type": "round_ready", "round": "b", "difficulty": "normal", "candidates": 4, "seed": 0,
                "pace": "instant", "unknown": []}
            over = await room.ask({"type": "round_end"})
            assert over["why"] == "round_end"

    run(scenario())


@pytest.mark.parametrize("pace", ["instant", "human"])
def test_a_one_line_drawing_is_guessed_at_either_pace(server: Server, pace: str) -> None:
    async def scenario() -> dict:
        async with await connect(server) as ws:
            room = Room(ws)
            await hello(room, [2])
            await room.ask({"type": "round_start", "round": 1, "candidates": WORDS, "difficulty": "hard",
                            "seed": 5, "pace": pace})
            await room.send({"type": "stroke", "stroke": one_line_square()})
            return await first_guess(room)

    guess = run(scenario())
    assert guess["strokes"] == 1 and guess["label"] in WORDS


def test_candidates_and_players_guesses_are_normalised(server: Server) -> None:
    async def scenario() -> tuple[dict, list[str]]:
        async with await connect(server) as ws:
            room = Room(ws)
            welcome = await hello(room, [2])
            ready = await room.ask({"type": "round_start", "round": 1, "pace": "instant",
                                    "difficulty": "hard",
                                    "candidates": ["Square", " the  Circles ", "les triangles", "CARRÉ"]})
            assert ready["type"] == "round_ready" and ready["candidates"] == 3, ready
            await room.send({"type": "player_guess", "player": "ana", "text": "  SQUARES "})
            for stroke in square():
                await room.send({"type": "stroke", "stroke": stroke})
            said = [f["label"] for f in await room.quiet(2.0) if f["type"] == "guess"]
            await room.ask({"type": "round_end"})
            return welcome, said

    welcome, said = run(scenario())
    assert "square" not in said  # a player's wrong « SQUARES » is never said by the bot
    transcript = httpx.get(server.url + welcome["transcript"]).json()
    start = next(e for e in transcript["events"] if e["kind"] == "round_start")
    assert start["candidates"] == ["square", "circle", "triangle"]
    heard = next(e for e in transcript["events"] if e["kind"] == "player_guess")
    assert heard["key"] == "square"
    said_in_round = [e["label"] for e in transcript["events"] if e["kind"] == "guess"]
    assert "square" not in said_in_round  # every word said, read or not by the room before round_end


def test_every_frame_type_counts_toward_flooding(tight: Server) -> None:
    """Frames a little faster than allowed (5/s): some pass, so the dropped ones are never many in
    a row, yet the connection is closed, for pings as for points."""
    async def flood(frame: dict) -> int:
        async with await connect(tight) as ws:
            room = Room(ws)
            reader = asyncio.create_task(room.quiet(30.0))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                for _ in range(2_000):
                    await room.send(frame)
                    await asyncio.sleep(0.02)  # 50 frames/s: one in ten allowed
            reader.cancel()
            return closed.value.rcvd.code

    assert run(flood({"type": "ping"})) == 4429
    assert run(flood({"type": "points", "x": [1], "y": [2]})) == 4429


def test_a_full_server_still_lets_a_lost_room_resume_and_refuses_a_new_one(tight: Server) -> None:
    """Three bots is the most (tight settings): one loses its socket and waits for a resume; a new
    room is refused at hello (the waiting session keeps its place), the lost one comes back."""
    async def scenario() -> None:
        async with await connect(tight) as one, await connect(tight) as two:
            await hello(Room(one), [2])
            await hello(Room(two), [2])
            ws = await connect(tight)
            welcome = await hello(Room(ws), [2])
            ws.transport.abort()
            async with await connect(tight) as stranger:
                refused = await hello(Room(stranger), [2])
                assert refused["type"] == "error" and refused["code"] == "server_full"
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await Room(stranger).recv()
                assert closed.value.rcvd.code == 4503
            resume = {"session": welcome["session"], "token": welcome["resume_token"]}
            for _ in range(40):  # until the server has seen the socket go (it is then waiting)
                async with await connect(tight) as back:
                    again = await hello(Room(back), [2], resume=resume)
                if again["type"] == "welcome":
                    break
                await asyncio.sleep(0.25)
            assert again["type"] == "welcome" and again["resumed"] is True

    run(scenario())


def test_a_room_resumes_its_round_after_a_lost_socket(server: Server) -> None:
    async def scenario() -> None:
        ws = await connect(server)
        room = Room(ws)
        welcome = await hello(room, [2])
        await room.ask({"type": "round_start", "round": "r", "candidates": WORDS, "difficulty": "hard",
                        "pace": "instant", "seed": 2})
        await room.send({"type": "stroke", "stroke": square()[0]})
        said = [f["text"] for f in await room.quiet(1.0) if f["type"] == "guess"]
        await room.send({"type": "stroke_start", "x": 0, "y": 0})  # open at the drop: dropped
        ws.transport.abort()
        resume = {"session": welcome["session"], "token": welcome["resume_token"]}
        async with await connect(server) as ws2:
            again = Room(ws2)
            back = await hello(again, [2], resume=resume)
            assert back["type"] == "welcome" and back["resumed"] is True
            assert back["session"] == welcome["session"]
            assert back["resume_token"] != welcome["resume_token"]
            kept = back["round"]
            assert (kept["round"], kept["strokes"], kept["open_stroke"]) == ("r", 1, False)
            assert kept["said"][:len(said)] == said  # and any word said after the room stopped reading
            await again.send({"type": "stroke", "stroke": square()[1]})
            over = await again.ask({"type": "round_end"})
            while over["type"] != "round_over":
                over = await again.recv()
            assert over["strokes"] == 2 and over["why"] == "round_end"
            await again.ask({"type": "bye"})
        async with await connect(server) as ws3:  # said bye: nothing to resume
            third = Room(ws3)
            resume["token"] = back["resume_token"]
            failed = await hello(third, [2], resume=resume)
            assert failed["type"] == "error" and failed["code"] == "resume_failed"
            fresh = await third.recv()
            assert fresh["type"] == "welcome" and fresh["resumed"] is False
            assert fresh["session"] != welcome["session"]

    run(scenario())


def test_a_resume_said_before_the_server_saw_the_old_socket_go_still_resumes(server: Server) -> None:
    """The room says hello again on a new socket while its old one is still open to the server (the
    loss not yet seen): the server waits for the old socket's loss, then resumes the session."""
    async def scenario() -> None:
        ws = await connect(server)
        welcome = await hello(Room(ws), [2])
        resume = {"session": welcome["session"], "token": welcome["resume_token"]}

        async def lose_the_old_socket() -> None:
            await asyncio.sleep(0.5)  # the new hello is waiting on the server by then
            ws.transport.abort()

        async with await connect(server) as ws2:
            back, _ = await asyncio.gather(hello(Room(ws2), [2], resume=resume), lose_the_old_socket())
            assert back["type"] == "welcome" and back["resumed"] is True, back
            assert back["session"] == welcome["session"]

    run(scenario())


def test_a_lost_session_ends_after_its_resume_time_and_a_wrong_token_fails(server: Server) -> None:
    async def drop() -> dict:
        ws = await connect(server)
        welcome = await hello(Room(ws), [2])
        ws.transport.abort()
        async with await connect(server) as ws2:
            room = Room(ws2)
            bad = await hello(room, [2], resume={"session": welcome["session"], "token": "x" * 32})
            assert bad["code"] == "resume_failed" and (await room.recv())["resumed"] is False
        return welcome

    welcome = run(drop())

    def ended() -> dict | None:
        transcript = httpx.get(server.url + welcome["transcript"]).json()
        return None if transcript["live"] else transcript

    eventually(ended, 20, "the lost session still waited for its room")

    async def late() -> None:
        async with await connect(server) as ws:
            room = Room(ws)
            resume = {"session": welcome["session"], "token": welcome["resume_token"]}
            assert (await hello(room, [2], resume=resume))["code"] == "resume_failed"

    run(late())


def test_y_up_is_flipped_to_the_canvas_direction(server: Server) -> None:
    async def top(y: str, strokes: list) -> list:
        async with await connect(server) as ws:
            room = Room(ws)
            welcome = await hello(room, [2], y=y, analysis=True)
            assert welcome["y"] == y
            await room.ask({"type": "round_start", "round": 1, "candidates": WORDS, "seed": 1})
            await room.ask({"type": "stroke", "stroke": strokes[0]})
            await room.send({"type": "stroke_start", "x": strokes[1][0][0], "y": strokes[1][1][0]})
            await room.send({"type": "points", "x": strokes[1][0][1:], "y": strokes[1][1][1:]})
            analysis = await room.ask({"type": "stroke_end"})
            return analysis["top"]

    drawing = [[xs, ys] for xs, ys, _ in square()]
    flipped = [[xs, [-y for y in ys]] for xs, ys in drawing]
    assert run(top("up", flipped)) == run(top("down", drawing))


def test_python_client_resumes_after_a_dropped_socket(server: Server) -> None:
    from examples.room_client import BotClient

    async def scenario() -> None:
        bot = BotClient(server.ws_url + "/v1/bot", room="client")
        guesses: list[dict] = []
        bot.on("guess", guesses.append)
        welcome = await bot.connect()
        assert welcome["version"] == 2 and welcome["resumed"] is False
        ready = await bot.start_round(1, ["Square", "circle", "licornx"], pace="instant", difficulty="hard",
                                      seed=3)
        assert ready["candidates"] == 2 and ready["unknown"] == ["licornx"]
        (xs1, ys1, _), (xs2, ys2, _) = square()
        await bot.stroke_start(xs1[0], ys1[0])
        await bot.points(xs1[1:], ys1[1:])
        bot.ws.transport.abort()  # the socket drops while a stroke is open
        await bot.stroke_end()  # sent once resumed, after the client sent the open stroke again
        await bot.stroke(xs2, ys2)
        over = await bot.end_round("square")
        assert bot.resumes == 1 and bot.welcome["resumed"] is True
        assert over["strokes"] == 2 and over["why"] == "round_end"
        assert over["said"] == [g["text"] for g in guesses]
        await bot.close()

    run(scenario())


def test_the_word_rule_reads_case_spaces_articles_and_plurals_in_both_languages() -> None:
    from service.bot.word_index import WordIndex, comparison_form
    from vocab.vocabulary import load_vocabulary

    vocabulary = load_vocabulary()
    words = WordIndex(vocabulary.words.keys(), vocabulary.lookup)
    for text in ("Cat", "CAT", "cat ", " the  cats ", "les chats", "Chats", "un chat", "A cat"):
        assert words.key(text, "fr") == words.key(text, "en") == "cat", text
    assert words.key("chapeaux") == "hat" and words.key("L'Avion") == "airplane"
    assert words.key("crayon", "fr") == "crayon"  # a key as it is wins
    assert words.key("Crayon", "fr") == "pencil" and words.key("Crayon", "en") == "crayon"
    assert words.key("the eiffel towers", "en") == "The Eiffel Tower"
    assert words.key("licornx") is None and words.key("  ") is None and words.key("the") is None
    assert words.key("chevaux") == "horse" and words.key("icecreams", "en") == "ice cream"  # lexicon, spacing
    assert comparison_form("  The   Cats! ") == "cats"


def test_the_instant_pace_speaks_at_the_stroke_and_the_human_pace_after_reading_and_typing() -> None:
    """On a fake clock: the instant pace says the word at the moment the stroke is seen; the human
    pace not before its reading time plus its typing time."""
    import random

    from games.ai import KontourGuesser, load_level
    from service.bot.pace import instant

    level = load_level("normal").kontour_guesser
    fast = KontourGuesser(level=instant(level), rng=random.Random(0))
    fast.observe({"house": 0.97, "cat": 0.03}, now=2.0)
    said = fast.decide(2.0)
    assert said is not None and said.key == "house" and said.at == 2.0
    human = KontourGuesser(level=level, rng=random.Random(0), pause_s=level.reaction_s)
    human.observe({"house": 0.97, "cat": 0.03}, now=2.0)
    earliest = 2.0 + (1 - level.reaction_jitter) * (
        level.reaction_s + level.type_base_s + level.type_char_s * len("house"))
    times = [2.0 + 0.05 * i for i in range(200)]
    spoken = next(t for t in times if human.decide(t) is not None)
    assert spoken >= earliest


def test_the_protocol_doc_quotes_the_levels_pacing() -> None:
    """docs/BOT_PROTOCOL.md states each level's reading time, lines and word rate as the levels set them."""
    from games.ai import level_names, load_level

    text = " ".join((REPO / "docs" / "BOT_PROTOCOL.md").read_text().split())
    levels = {name: load_level(name).kontour_guesser for name in level_names()}
    reading = ", ".join(f"{level.reaction_s:g} s {name}" for name, level in levels.items())
    rate = ", ".join(f"{1 / level.max_guesses_per_s:.2g} s {name}" for name, level in levels.items())
    assert f"({reading}, ± 30 %)" in text
    assert f"(one every {rate})" in text
