"""Three replicas on one PostgreSQL database behind HAProxy (deploy/haproxy.cfg), as an operator runs
them (docs/DEPLOY.md): Kontour and Pictomania tables played through the balancer; one replica
killed with SIGKILL mid-game, its tables taken over by the others from the stored log with every
acknowledged move, the AI players going on and the round's timers not restarted; the replica
started again and given new tables. A replica paused (SIGSTOP) past its lease, then resumed, stands
down without writing a move (a table's) or a memory (a bot room's). A room's lobby whose replica is
killed is taken over by another from the database and started there.

Run with ``make test-replicas`` (``pytest -m replicas``): it needs PostgreSQL and HAProxy
(``make system-deps``) and starts three servers, so the ordinary suite leaves it out.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI
from websockets.sync.client import connect

from bench.support import until
from griffon.launch import (
    Patience,
    Replicas,
    eventually,
    patient,
    running_haproxy,
    running_postgres,
    running_replicas,
    tuning,
)
from store import Store, open_store
from tests.play_helpers import HOUSE, Player, has_event

pytestmark = pytest.mark.replicas

RENEW_S = 1.0
ENV = {
    # no turn, no round ends while a replica is down; a Kontour turn the person leaves ends soon
    # after, and an AI player draws the next one
    **tuning(kontour_timer_s=30, pictomania_round_s=60, ai_think_s=0.3, between_turns_s=0.3,
             renew_s=RENEW_S),
    "GRIFFON_PLAY_GAMES_PER_CLIENT": "50",
    "GRIFFON_PLAY_GAMES_PER_CLIENT_HOUR": "500",
    "GRIFFON_CAPACITY_CORES": "8",
    "GRIFFON_REPLICA_LEASE_S": "3",
}


@dataclass
class Cluster:
    replicas: Replicas
    url: str  # HAProxy's
    db: Store

    def holder(self, game_id: str) -> str:
        """The replica (r1, r2...) that holds the game's lease."""
        rows = self.db.rows("SELECT holder FROM griffon_leases WHERE game_id = ?", (game_id,))
        return rows[0][0].split(":")[0] if rows else ""

    def index(self, name: str) -> int:
        return int(name[1:]) - 1


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with (
        running_postgres() as database,
        running_replicas(3, database, ENV) as replicas,
        running_haproxy(replicas.ports) as url,
    ):
        db = open_store(database)
        assert isinstance(db, Store)
        try:
            yield Cluster(replicas, url, db)
        finally:
            db.close()


class Page(Player):
    """A person's page on one table, through the balancer; reconnects as the page does
    (service/static/app.js: any close but 4403, 4404 and 4410, again and again)."""

    def __init__(self, url: str, game: dict[str, Any]) -> None:
        self.url, self.game = url.replace("http://", "ws://") + game["ws"], game
        self.id: str = game["game_id"]
        self.acked: list[dict[str, Any]] = []  # the person's moves the server acknowledged
        self.reconnect()

    def reconnect(self) -> dict[str, Any]:
        """Connect until the game's state comes; returns that frame."""
        patience = Patience(30, f"game {self.id} did not come back")
        while not patience.expired():
            try:
                self.ws = connect(self.url, open_timeout=patient(5)).__enter__()
                frame = json.loads(self.ws.recv(timeout=patient(10)))
            except (OSError, TimeoutError, ConnectionClosed, InvalidStatus, InvalidURI):
                time.sleep(0.5)
                continue
            assert frame["type"] == "state", frame
            self.frames, self.frame, self.state = [], {}, {}
            return self.accept(frame)
        raise patience.failure()

    def play(self, event: str, **move: Any) -> dict[str, Any]:
        """A move of the person, and the frame that acknowledges it (its event, by them)."""
        self.move(**move)
        who = "drawer" if event in ("stroke_added", "card_drawn", "drawing_started") else "player"
        frame = self.until(has_event(event, **{who: "joueur"}))
        self.acked.append(move)
        return frame


def start_table(cluster: Cluster, game: str) -> Page:
    """A new table through the balancer, its page connected, the person's first moves made."""
    created = httpx.post(cluster.url + "/v1/play", json={"game": game, "opponents": 2}, timeout=patient(10))
    assert created.status_code == 201, created.text
    assert created.headers["x-griffon-game"] == created.json()["game_id"]
    page = Page(cluster.url, created.json())
    if game == "pictomania":
        page.play("stroke_drawn", kind="stroke", points=[[20, 20], [100, 100], [150, 60]])
    else:
        assert page.state["drawer"] == "joueur"
        page.play("card_drawn", kind="draw_card")
        page.play("drawing_started", kind="choose_word", color="orange")
        for line in HOUSE[:2]:
            page.play("stroke_added", kind="stroke", points=line)
    return page


def play_on(page: Page) -> None:
    """One more move of the person, acknowledged: a stroke; in Kontour, what the turn's phase
    allows (a card, a word, a line, or a word guessed while an AI draws). A Kontour turn may end
    as the move leaves: then again, in the next turn (three tries)."""
    if page.game["game"] == "pictomania":
        page.play("stroke_drawn", kind="stroke", points=[[30, 40], [90, 120]])
        return
    for attempt in range(3):
        page.send({"type": "sync"})
        page.until(lambda f: f["type"] == "state", timeout=10)
        drawer, phase = page.state["drawer"], page.state["phase"]
        try:
            if drawer == "joueur" and phase == "draw":
                page.play("card_drawn", kind="draw_card")
            elif drawer == "joueur" and phase == "choose":
                page.play("drawing_started", kind="choose_word", color="orange")
            elif drawer == "joueur":
                line = HOUSE[len(page.state["turn"]["segments"]) % len(HOUSE)]
                page.play("stroke_added", kind="stroke", points=line)
            else:
                page.play("guess_made", kind="guess", text="maison")
            return
        except AssertionError:
            if attempt == 2:
                raise


def time_left(page: Page) -> float:
    return float(page.frame["time_left"])


def stage(page: Page) -> tuple[Any, ...]:
    """Where the game is: the Pictomania round, the Kontour turn (turns done, drawer)."""
    if page.game["game"] == "pictomania":
        return ("round", page.state["round"]["number"])
    return ("turn", len(page.state["history"]), page.state["drawer"])


def stored_moves(cluster: Cluster, game_id: str) -> list[dict[str, Any]]:
    stored = cluster.db.load_game(game_id)
    assert stored is not None
    return [m.move for m in stored.moves]


def persons(moves: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The person's moves of a log, as the page sent them (without ``player``)."""
    return [{k: v for k, v in m.items() if k != "player"} for m in moves if m.get("player") == "joueur"]


def ai_acts(frame: dict[str, Any]) -> bool:
    """A frame with an AI player's action (a stroke, a guess, a bet)."""
    return frame["type"] in ("state", "update") and any(
        str(e.get("player") or e.get("guesser") or e.get("drawer") or "").startswith("ia")
        and e["kind"] in ("stroke_drawn", "guess_placed", "guess_made", "stroke_added")
        for e in frame["events"]
    )


def plain(value: Any) -> Any:
    """A move with its whole floats as ints (the server stores points as floats)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return int(value) if isinstance(value, float) and value.is_integer() else value


def same_points(sent: list[dict[str, Any]], stored: list[dict[str, Any]]) -> bool:
    """The moves the person sent are the stored ones."""
    return plain(sent) == plain(stored)


def test_a_killed_replica_s_tables_are_taken_over_with_every_move_and_their_timers(cluster: Cluster) -> None:
    pages: list[Page] = []
    victim = ""
    while not victim and len(pages) < 12:  # until one replica holds a table of each game
        pages += [start_table(cluster, "pictomania"), start_table(cluster, "kontour")]
        kinds: dict[str, set[str]] = {}
        for page in pages:
            kinds.setdefault(cluster.holder(page.id), set()).add(page.game["game"])
        victim = next((name for name, held in kinds.items() if len(held) == 2), "")
    assert victim, f"the balancer never gave one replica both games: {kinds}"
    assert len(kinds) == 3, f"the balancer left a replica without tables: {kinds}"
    lost = [p for p in pages if cluster.holder(p.id) == victim]
    kept = [p for p in pages if p not in lost]
    for page in lost:  # the game's clock and timer, read just now
        page.send({"type": "sync"})
        page.until(lambda f: f["type"] == "state", timeout=5)
    before = {p.id: (p.frame["seq"], p.frame["now"], time_left(p), stage(p)) for p in lost}

    cluster.replicas.kill(cluster.index(victim))  # SIGKILL: no goodbye, no lease given up
    for page in lost:
        back = page.reconnect()
        seq, now, left, where = before[page.id]
        assert back["seq"] >= seq  # every move acknowledged before the kill, and maybe an AI's since
        assert cluster.holder(page.id) not in ("", victim)
        log = stored_moves(cluster, page.id)
        assert same_points(page.acked, persons(log)), (page.acked, persons(log))
        # The round's timer goes on from the last lease renewal (at most RENEW_S before the kill):
        # not restarted, not lost.
        assert stage(page) == where
        assert back["now"] >= now - RENEW_S - 0.5
        assert time_left(page) <= left + RENEW_S + 0.5
        assert time_left(page) > 0
    for page in lost:  # the AI players resume: they draw, guess and bet (Kontour: the next turn)
        page.until(ai_acts, timeout=45)
        play_on(page)
        assert same_points(page.acked, persons(stored_moves(cluster, page.id)))
    for page in kept:  # the other replicas' tables never noticed
        play_on(page)

    cluster.replicas.start(cluster.index(victim))  # back, with a new holder name
    fresh: list[Page] = []

    def new_table_there() -> bool:
        """A new table; True once one lands on the restarted replica (the balancer sends it the
        next tables once its health checks pass: it holds the fewest connections)."""
        fresh.append(start_table(cluster, "pictomania"))
        if cluster.holder(fresh[-1].id) == victim:
            return True
        time.sleep(0.5)
        return False

    eventually(new_table_there, 30, f"no new table reached the restarted {victim}")
    fresh[-1].play("stroke_drawn", kind="stroke", points=[[70, 70], [140, 90]])
    for page in [*pages, *fresh]:
        page.close()


def test_a_replica_paused_past_its_lease_stands_down_without_writing(cluster: Cluster) -> None:
    page = start_table(cluster, "pictomania")
    paused = cluster.holder(page.id)
    index = cluster.index(paused)
    server = cluster.replicas.servers[index]
    cluster.replicas.kill(index, signal.SIGSTOP)
    try:
        page.reconnect()  # after the lease expired: another replica took the game over
        taker = cluster.holder(page.id)
        assert taker not in ("", paused)
        page.play("stroke_drawn", kind="stroke", points=[[40, 40], [80, 120]])
    finally:
        cluster.replicas.kill(index, signal.SIGCONT)
    # Resumed, the paused replica finds the game is another's: it stands down and writes nothing
    # (a move of its own would put the log out of step with the new holder's game).
    eventually(lambda: f"game {page.id}: its lease was taken" in server.log(), 30,
               "the resumed replica did not stand down")
    page.play("stroke_drawn", kind="stroke", points=[[10, 200], [200, 10]])
    page.send({"type": "sync"})
    synced = page.until(lambda f: f["type"] == "state", timeout=10)
    log = stored_moves(cluster, page.id)
    assert len(log) == synced["seq"]  # the log is exactly the new holder's game, move for move
    assert same_points(page.acked, persons(log))
    stored = cluster.db.load_game(page.id)
    assert stored is not None and stored.status == "playing"
    assert cluster.holder(page.id) == taker
    page.close()


def test_a_socket_relayed_to_a_frozen_replica_closes_and_comes_back_on_another(cluster: Cluster) -> None:
    """A page whose socket reached another replica than its table's holder (relayed there), the
    holder frozen (SIGSTOP): the relay's pings go unanswered and the socket closes (1011) while the
    holder is still frozen; the page comes back on a replica that took the table over. The holder,
    woken, stands down at once: it had stood still past its leases."""
    page = start_table(cluster, "pictomania")
    frozen = cluster.holder(page.id)
    index = cluster.index(frozen)
    other = next(i for i in range(len(cluster.replicas.ports)) if i != index)
    relayed = Page(cluster.replicas.url(other), page.game)  # straight to a replica that relays it
    relayed.play("stroke_drawn", kind="stroke", points=[[50, 50], [90, 20]])
    page.close()
    server = cluster.replicas.servers[index]
    cluster.replicas.kill(index, signal.SIGSTOP)
    try:
        patience = Patience(15, "the relayed socket stayed open on a frozen replica")
        while True:  # well before the freeze ends (the test ends it)
            try:
                relayed.ws.recv(timeout=0.5)
            except TimeoutError:
                assert not patience.expired(), patience.failure()
                continue
            except ConnectionClosed:
                break
        assert relayed.ws.close_code == 1011, relayed.ws.close_code
        relayed.reconnect()  # through the same replica: it takes the table over once the lease ran out
        assert cluster.holder(page.id) not in ("", frozen)
        relayed.play("stroke_drawn", kind="stroke", points=[[60, 60], [120, 200]])
    finally:
        cluster.replicas.kill(index, signal.SIGCONT)
    eventually(lambda: "stood still" in server.log(), 30, "the woken replica did not stand down")
    woken = httpx.get(cluster.replicas.url(index) + "/metrics", timeout=patient(10)).text
    assert 'griffon_replica{what="frozen"} 1.0' in woken
    holder = cluster.index(cluster.holder(page.id))
    taker = httpx.get(cluster.replicas.url(holder) + "/metrics", timeout=patient(10)).text
    assert re.search(r'griffon_replica\{what="taken_over"\} [1-9]', taker), taker[-2000:]
    relayed.close()


def test_a_frame_that_waited_out_a_freeze_is_not_applied_by_the_woken_replica(cluster: Cluster) -> None:
    """A person's stroke sent straight to the holder while it is frozen (SIGSTOP) waits in its socket
    while another replica takes the table over. Woken, the holder stands down before it reads that
    frame: nothing is applied or written (no refused write in its log), and the socket closes with
    1012, for the page to come back on the new holder."""
    page = start_table(cluster, "pictomania")
    frozen = cluster.holder(page.id)
    index = cluster.index(frozen)
    direct = Page(cluster.replicas.url(index), page.game)  # the holder's own port: not relayed
    page.close()
    server = cluster.replicas.servers[index]
    refused, stood = server.log().count("not stored"), server.log().count("stood still")
    cluster.replicas.kill(index, signal.SIGSTOP)
    try:
        direct.move(kind="stroke", points=[[10, 200], [200, 10]])  # waits in the frozen replica's socket
        eventually(lambda: cluster.holder(page.id) not in ("", frozen), 30, "nobody took the table over")
    finally:
        cluster.replicas.kill(index, signal.SIGCONT)
    patience = Patience(30, "the woken replica kept the socket open")
    while True:
        try:
            frame = direct.accept(json.loads(direct.ws.recv(timeout=0.5)))
        except TimeoutError:
            assert not patience.expired(), patience.failure()
            continue
        except ConnectionClosed:
            break
        assert not has_event("stroke_drawn", player="joueur")(frame), frame  # never applied there
    assert direct.ws.close_code == 1012, direct.ws.close_code
    assert server.log().count("stood still") > stood
    assert server.log().count("not stored") == refused, server.log()[-3000:]
    back = Page(cluster.url, page.game)  # the new holder: the stroke was never applied anywhere
    assert cluster.holder(page.id) not in ("", frozen)
    back.close()


def test_a_replica_stopped_cleanly_hands_its_tables_over(cluster: Cluster) -> None:
    page = start_table(cluster, "kontour")
    stopped = cluster.holder(page.id)
    index = cluster.index(stopped)
    cluster.replicas.stop(index)  # SIGTERM, as `systemctl stop` during a rolling upgrade
    live = cluster.db.rows("SELECT count(*) FROM griffon_leases WHERE holder LIKE ? AND "
                           "expires_at > EXTRACT(EPOCH FROM clock_timestamp())", (f"{stopped}:%",))
    assert live[0][0] == 0  # every lease given up at the stop: none left to run out
    back = page.reconnect()
    assert cluster.holder(page.id) not in ("", stopped)
    assert back["state"]["turn"]["segments"]  # the person's lines, drawn before the stop
    assert same_points(page.acked, persons(stored_moves(cluster, page.id)))
    play_on(page)
    page.close()
    cluster.replicas.start(index)


class JsonSocket:
    """A client socket of JSON frames (`ws`: a websockets sync connection)."""

    ws: Any

    def send(self, frame: dict[str, Any]) -> None:
        self.ws.send(json.dumps(frame))

    def read(self, timeout: float) -> dict[str, Any] | None:
        """The next frame (None: none within `timeout` s)."""
        try:
            return json.loads(self.ws.recv(timeout=max(0.1, timeout)))
        except TimeoutError:
            return None


class BotRoom(JsonSocket):
    """A bot room (protocol version 2, an analysis after each stroke) through the balancer."""

    def __init__(self, url: str) -> None:
        self.url = url.replace("http://", "ws://") + "/v1/bot"
        self.guesses: list[dict[str, Any]] = []  # every guess frame received, in order
        self.analysed = 0  # strokes the bot acknowledged with an analysis

    def hello(self, resume: dict[str, str] | None = None) -> dict[str, Any]:
        """Connect and greet (resuming ``resume``); the welcome."""
        self.ws = connect(self.url, open_timeout=patient(5)).__enter__()
        self.send({"type": "hello", "versions": [2], "room": "salon", "analysis": True}
                  | ({"resume": resume} if resume else {}))
        return self.until(lambda f: f["type"] in ("welcome", "error"), timeout=15)

    def resumed(self, resume: dict[str, str]) -> dict[str, Any] | None:
        """The welcome of a resume (None: no replica answered yet); never ``resume_failed``: the
        room's memory is stored."""
        try:
            back = self.hello(resume)
        except (OSError, TimeoutError, ConnectionClosed, InvalidStatus):
            return None
        assert back["type"] == "welcome", back
        return back

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The next frame (None: none within `timeout` s); guesses are kept on the way."""
        frame = self.read(timeout)
        if frame is not None and frame["type"] == "guess":
            self.guesses.append(frame)
        return frame

    def until(self, match: Any, timeout: float = 10) -> dict[str, Any]:
        """Frames until one matches (guesses are kept on the way)."""
        return until(self.recv, match, Patience(timeout, "the bot did not answer"))

    def stroke(self, points: list[list[float]]) -> dict[str, Any]:
        """A whole stroke, and the analysis that acknowledges it."""
        count = self.analysed + 1
        self.send({"type": "stroke", "stroke": points})
        self.until(lambda f: f["type"] == "analysis" and f["strokes"] == count)
        self.analysed = count
        return points


def test_a_bot_room_whose_replica_is_killed_resumes_its_round_on_another(cluster: Cluster) -> None:
    room = BotRoom(cluster.url)
    welcome = room.hello()
    assert welcome["type"] == "welcome" and welcome["version"] == 2, welcome
    session = welcome["session"]
    room.send({"type": "round_start", "round": "r1", "candidates": ["square", "circle", "triangle", "line",
               "house", "cat"], "difficulty": "hard", "pace": "instant", "seed": 4, "duration_s": 120})
    room.until(lambda f: f["type"] == "round_ready")
    square = [[[100, 300, 300], [100, 100, 300]], [[300, 100, 100], [300, 300, 100]]]
    for points in square:
        room.stroke(points)
    room.until(lambda f: f["type"] == "guess", timeout=20)  # it said a word: it must never say it again
    victim = cluster.holder("bot:" + session)
    assert victim, "the room holds no lease"

    cluster.replicas.kill(cluster.index(victim))  # SIGKILL: nothing written after this
    heard = [g["text"] for g in room.guesses]
    resume = {"session": session, "token": welcome["resume_token"]}
    back = eventually(lambda: room.resumed(resume), 30, "the room could not resume")
    assert back["resumed"] is True and back["session"] == session
    assert cluster.holder("bot:" + session) not in ("", victim)
    kept = back["round"]
    assert (kept["round"], kept["strokes"]) == ("r1", 2)  # every stroke the bot analysed
    assert kept["said"][:len(heard)] == heard  # every word it said (and any it said as it died)
    said_before = kept["said"]
    room.guesses.clear()
    for points in ([[120, 280], [110, 110]], [[200, 200], [90, 320]], [[100, 300], [200, 200]]):
        room.stroke(points)
    new = room.until(lambda f: f["type"] == "guess", timeout=20)  # it goes on guessing: another word
    assert new["text"] not in said_before and new["guess_id"] > len(said_before)
    room.send({"type": "round_end", "answer": "square"})
    over = room.until(lambda f: f["type"] == "round_over")
    assert over["strokes"] == 5 and over["said"][:len(said_before)] == said_before
    assert len(over["said"]) == len(set(over["said"]))  # the bot never repeated a word
    assert not {g["text"] for g in room.guesses} & set(said_before)

    def transcript() -> dict[str, Any] | None:
        found = httpx.get(cluster.url + back["transcript"], timeout=patient(5))
        events = found.json().get("events", []) if found.status_code == 200 else []
        strokes = [e for e in events if e["kind"] == "stroke" and e["round"] == "r1"]
        return found.json() if len(strokes) == 5 and any(e["kind"] == "taken_over" for e in events) else None

    eventually(transcript, 20, "the transcript lacks the strokes drawn before the kill")
    room.send({"type": "bye"})
    room.until(lambda f: f["type"] == "bye")
    eventually(lambda: not cluster.db.rows("SELECT 1 FROM bot_rooms WHERE session = ?", (session,)), 10,
               "a room that said bye kept its stored memory")


def strokes_stored(cluster: Cluster, session: str) -> int:
    """How many strokes of its round the stored memory of bot room ``session`` holds (-1: none)."""
    stored = cluster.db.load_bot_room(session)
    return -1 if stored is None else len(stored.strokes)


def test_a_replica_paused_past_a_bot_room_s_lease_stands_down_without_writing(cluster: Cluster) -> None:
    room = BotRoom(cluster.url)
    welcome = room.hello()
    session = welcome["session"]
    room.send({"type": "round_start", "round": "r1", "candidates": ["square", "circle", "triangle", "line"],
               "difficulty": "hard", "pace": "instant", "seed": 5, "duration_s": 120})
    room.until(lambda f: f["type"] == "round_ready")
    room.stroke([[100, 300, 300], [100, 100, 300]])
    # a stroke is stored within the writer's latency, not before its analysis (docs/BOT_PROTOCOL.md)
    eventually(lambda: strokes_stored(cluster, session) == 1, 10, "the room's stroke was never stored")
    paused = cluster.holder("bot:" + session)
    assert paused, "the room holds no lease"
    index = cluster.index(paused)
    server = cluster.replicas.servers[index]
    resume = {"session": session, "token": welcome["resume_token"]}
    cluster.replicas.kill(index, signal.SIGSTOP)
    try:
        back = eventually(lambda: room.resumed(resume), 30, "the room could not resume while paused")
        taker = cluster.holder("bot:" + session)
        assert back["resumed"] is True and taker not in ("", paused)
        assert back["round"]["strokes"] == 1
        room.stroke([[300, 100, 100], [300, 300, 100]])
        eventually(lambda: strokes_stored(cluster, session) == 2, 10, "its memory was not stored")
    finally:
        cluster.replicas.kill(index, signal.SIGCONT)
    # Resumed, the paused replica finds the room is another's (at its lease's renewal, or when the
    # fence refuses its write): it stands down and writes nothing (its memory of the room, one
    # stroke behind, must not replace the new holder's).
    stood_down = re.compile(rf"bot room {re.escape(session)}: [^\n]*standing down")
    eventually(lambda: stood_down.search(server.log()), 30, "the resumed replica did not stand down")
    time.sleep(2 * RENEW_S)  # a late write of the paused replica would have landed by now
    assert strokes_stored(cluster, session) == 2  # not its stale memory of one stroke
    room.stroke([[120, 280], [110, 110]])
    eventually(lambda: strokes_stored(cluster, session) == 3, 10, "the new holder's memory was not stored")
    assert cluster.holder("bot:" + session) == taker
    room.send({"type": "bye"})
    room.until(lambda f: f["type"] == "bye")


class LobbyPage(JsonSocket):
    """A person's lobby page of room ``code`` (service/static/app.js ``openLobby``): with its seat's
    token once it has one; reconnects after any close, as the page does."""

    def __init__(self, url: str, code: str, token: str = "") -> None:
        self.base, self.code, self.token = url.replace("http://", "ws://"), code, token

    def connect(self, first: tuple[str, ...] = ("lobby",)) -> dict[str, Any]:
        """Connect until a frame of a type in ``first`` comes (the lobby, the room's preview, its
        game started); returns it."""
        patience = Patience(30, f"room {self.code}: no {first} frame came back")
        url = f"{self.base}/v1/rooms/{self.code}" + (f"?token={self.token}" if self.token else "")
        while not patience.expired():
            try:
                self.ws = connect(url, open_timeout=patient(5)).__enter__()
                return self.until(lambda f: f["type"] in first, timeout=15)
            except (OSError, TimeoutError, ConnectionClosed, InvalidStatus, InvalidURI):
                time.sleep(0.5)
        raise patience.failure()

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The next frame (None: none within `timeout` s); an error frame fails the test."""
        frame = self.read(timeout)
        assert frame is None or frame["type"] != "error", frame
        return frame

    def until(self, match: Any, timeout: float = 10) -> dict[str, Any]:
        return until(self.recv, match, Patience(timeout, f"room {self.code}: the frame awaited did not come"))

    def close(self) -> None:
        self.ws.close()


def test_a_room_s_lobby_is_taken_over_when_its_replica_dies_and_starts_on_another(cluster: Cluster) -> None:
    """A room made through the balancer: its lobby's sockets reach the replica that holds it (a
    socket sent straight to another is relayed there); that replica killed (SIGKILL), the pages
    reconnect, another replica takes the lobby over from the database with its seats and tokens,
    and the host starts the game there. The room's code then leads to its game on every replica."""
    created = httpx.post(cluster.url + "/v1/rooms", json={"game": "pictomania", "name": "Ana", "ai": 1},
                         timeout=patient(10))
    assert created.status_code == 201, created.text
    room = created.json()
    code = room["code"]
    assert created.headers["x-griffon-room"] == code
    holder = cluster.holder("room:" + code)
    assert holder, "the lobby holds no lease"
    host = LobbyPage(cluster.url, code, room["token"])
    assert [s["name"] for s in host.connect()["seats"]][0] == "Ana"
    friend = LobbyPage(cluster.url, code)
    preview = friend.connect(("room",))
    assert preview["host"] == "Ana" and not preview["full"]
    friend.send({"type": "join", "name": "Léa"})
    friend.token = friend.until(lambda f: f["type"] == "joined")["token"]
    seats = host.until(lambda f: f["type"] == "lobby" and len(f["seats"]) == 3)["seats"]
    names = [s["name"] for s in seats]
    live = [i for i, server in sorted(cluster.replicas.servers.items()) if server.alive()]  # (earlier tests)
    other = next(i for i in live if cluster.replicas.name(i) != holder)
    straight = LobbyPage(cluster.replicas.url(other), code, friend.token)  # relayed to the holder
    assert straight.connect()["you"] == "ami1"
    straight.close()
    eventually(lambda: (found := cluster.db.load_room(code)) and len(found[0]["seats"]) == 3, 10,
               "the friend's seat was never stored")

    killed = time.monotonic()
    cluster.replicas.kill(cluster.index(holder))  # SIGKILL of its process group: no goodbye
    back = host.connect()  # as the page does: again, through the balancer
    took = time.monotonic() - killed
    print(f"lobby {code}: taken over {took:.2f} s after its replica was killed")
    assert [s["name"] for s in back["seats"]] == names and back["you"] == "joueur"
    assert cluster.holder("room:" + code) not in ("", holder)
    assert friend.connect()["you"] == "ami1"  # her token still gives her seat
    host.send({"type": "start"})
    game_id = host.until(lambda f: f["type"] == "started")["game_id"]
    assert friend.until(lambda f: f["type"] == "started")["game_id"] == game_id
    assert cluster.holder(game_id) not in ("", holder)
    for person, seat in ((room["token"], "joueur"), (friend.token, "ami1")):
        page = Page(cluster.url, {"ws": f"/v1/play/{game_id}?token={person}", "game_id": game_id,
                                  "game": "pictomania"})
        assert page.frame["you"] == seat and set(page.frame["seats"]) == {"joueur", "ami1"}
        page.close()
    for index in live:  # the link, reloaded, reaches the game on any replica
        if cluster.replicas.name(index) != holder:
            again = LobbyPage(cluster.replicas.url(index), code, friend.token)
            assert again.connect(("started",))["game_id"] == game_id
    cluster.replicas.start(cluster.index(holder))
