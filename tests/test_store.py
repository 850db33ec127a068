"""The storage layer (`store/`), the same tests on SQLite and on a real PostgreSQL server.

The PostgreSQL server is started by the tests themselves (`griffon.launch.running_postgres`, Debian's
package); where it cannot start, those tests are skipped with the reason (a busy machine is no such
reason: a start that runs out of time fails). Each test gets a fresh database (a new SQLite file; a
new PostgreSQL schema).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import uuid
from concurrent.futures import Future
from pathlib import Path

import pytest

from games.core import LoggedMove, replay
from games.pictomania import (
    Done,
    NextRound,
    PictoCard,
    PictomaniaConfig,
    PictomaniaRules,
    PictoStroke,
    PlaceGuess,
)
from griffon.launch import eventually, patient
from store import (
    LATEST_VERSION,
    BadRecord,
    CorruptDatabase,
    DrawingRecord,
    ForeignDatabase,
    MoveRejected,
    Retention,
    SchemaTooNew,
    StoreSettings,
    StoreUnavailable,
    TranscriptRecord,
    hash_token,
    open_store,
    token_matches,
)
from store.background import BackgroundWriter, shared_writer
from store.background import WriterClosed as BackgroundClosed
from store.drawings_export import export_quickdraw
from store.group_commit import Job, MoveWriter, WriterClosed, WriterOverloaded
from store.transcripts import TranscriptArchive
from tests.conftest import write_fixture_folder
from training.data import load_dataset, read_categories, read_ndjson

REPO = Path(__file__).resolve().parent.parent
DAY = 86_400.0



@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """The URL of a fresh, empty database of each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'griffon.db'}"
        return
    import psycopg

    base = request.getfixturevalue("pg_url")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    yield f"{base}?options=-csearch_path%3D{schema}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def db(db_url):
    store = open_store(db_url)
    yield store
    store.close()


def strokes(n: int = 2, points: int = 5) -> list[list[list[float]]]:
    return [[[float(10 * s + i) for i in range(points)], [float(i * i) for i in range(points)],
             [float(100 * s + 16 * i) for i in range(points)]] for s in range(n)]


# ------------------------------------------------------------------------------------------------
# Schema


def test_a_fresh_database_gets_the_latest_schema_once(db_url):
    with open_store(db_url) as db:
        info = db.info()
        assert info.schema_version == LATEST_VERSION
        assert info.counts == {"games": 0, "moves": 0, "transcripts": 0, "drawings": 0, "games_playing": 0}
        assert info.size_bytes > 0
        db.create_game("g", "kontour", {"seed": 1}, hash_token("t"))
    with open_store(db_url) as again:  # reopening migrates nothing and loses nothing
        assert again.rows("SELECT COUNT(*) FROM griffon_schema")[0][0] == LATEST_VERSION
        assert again.info().counts["games"] == 1


def test_opening_a_current_database_never_waits_on_a_writer(tmp_path):
    """A running server holds SQLite's write lock past the busy wait: a `griffon db` command (or a
    second server) opening the same file only reads the current schema, and opens."""
    path = tmp_path / "griffon.db"
    open_store(f"sqlite:///{path}").close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with open_store(f"sqlite:///{path}") as db:
            assert db.schema_version() == LATEST_VERSION
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_newer_schema_is_refused_with_a_clear_message(db_url):
    with open_store(db_url) as db:
        with db.lock, db.write():
            db.run("INSERT INTO griffon_schema (version, name, applied_at) VALUES (?, 'future', 0)",
                   (LATEST_VERSION + 1,))
    with pytest.raises(SchemaTooNew, match=rf"schema version {LATEST_VERSION + 1}, newer than this Griffon"):
        open_store(db_url)


def test_another_applications_database_is_refused(db_url):
    with open_store(db_url) as db:
        with db.lock, db.write():
            for table in ("griffon_schema", "moves", "games", "transcripts", "drawings"):
                db.run(f"DROP TABLE {table}")
            db.run("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(ForeignDatabase, match="invoices.*not a Griffon database"):
        open_store(db_url)


# ------------------------------------------------------------------------------------------------
# Games


def test_a_game_is_stored_as_setup_and_move_log(db):
    setup = {"seed": 7, "players": ["joueur", "ia1"], "deck": [{"blue": "cat", "orange": "dog"}]}
    db.create_game("g1", "kontour", setup, hash_token("secret-token"), now=1000.0)
    moves = [{"kind": "draw_card", "player": "joueur"}, {"kind": "stroke", "points": [[1.5, 2.25], [3, 4]]},
             {"kind": "guess", "player": "ia1", "text": "chat « noir » é"}]
    for seq, move in enumerate(moves):
        db.append_move("g1", seq, 0.5 * seq, move, now=1000.0 + seq)
    [game] = db.load_unfinished_games()
    assert (game.id, game.kind, game.setup, game.status) == ("g1", "kontour", setup, "playing")
    assert [(m.seq, m.at, m.move) for m in game.moves] == [(i, 0.5 * i, m) for i, m in enumerate(moves)]
    assert game.updated_at == 1002.0 and game.created_at == 1000.0
    assert token_matches("secret-token", game.token_hash) and not token_matches("other", game.token_hash)
    assert "secret-token" not in json.dumps(game.setup) + game.token_hash
    db.finish_game("g1", result={"winners": ["joueur"]})
    assert db.load_unfinished_games() == []
    assert db.load_game("g1").result == {"winners": ["joueur"]} and db.load_game("g1").status == "finished"


def test_unfinished_game_ids_are_the_playing_ones_most_recently_played_first(db):
    for gid, at in (("old", 1.0), ("done", 2.0), ("new", 3.0)):
        db.create_game(gid, "kontour", {}, hash_token("t"), now=at)
    db.finish_game("done", now=4.0)
    db.append_move("old", 0, 0.0, {"kind": "draw_card"}, now=5.0)  # played last
    assert db.unfinished_game_ids() == ["old", "new"]
    assert db.unfinished_game_ids(limit=1) == ["old"]


def test_moves_out_of_sequence_or_after_the_end_are_refused_and_change_nothing(db):
    db.create_game("g", "pictomania", {}, hash_token("t"))
    db.append_moves("g", 0, [(0.0, {"kind": "a"}), (1.0, {"kind": "b"})])
    with pytest.raises(MoveRejected, match="expects move 2, not 1"):
        db.append_move("g", 1, 2.0, {"kind": "again"})
    with pytest.raises(MoveRejected, match="expects move 2, not 5"):
        db.append_move("g", 5, 2.0, {"kind": "gap"})
    with pytest.raises(MoveRejected, match="no game 'nope'"):
        db.append_move("nope", 0, 0.0, {"kind": "x"})
    with pytest.raises(MoveRejected, match="already exists"):
        db.create_game("g", "pictomania", {}, hash_token("t"))
    db.finish_game("g", status="expired")
    with pytest.raises(MoveRejected, match="is expired"):
        db.append_move("g", 2, 3.0, {"kind": "late"})
    assert [m.move["kind"] for m in db.load_game("g").moves] == ["a", "b"]


@pytest.mark.parametrize("move, message", [
    ({"kind": "stroke", "x": math.nan}, "not JSON data"),
    ({"kind": "stroke", "points": [[1, 2]] * 50_000}, "larger than"),
    ({"kind": {1, 2}}, "not JSON data"),
])
def test_bad_moves_are_refused(db, move, message):
    db.create_game("g", "kontour", {}, hash_token("t"))
    with pytest.raises(BadRecord, match=message):
        db.append_move("g", 0, 0.0, move)
    with pytest.raises(BadRecord, match="finite"):
        db.append_move("g", 0, math.inf, {"kind": "tick"})
    with pytest.raises(BadRecord, match="1 to 64"):
        db.create_game("x" * 65, "kontour", {}, hash_token("t"))
    with pytest.raises(BadRecord, match="ends as one of"):
        db.finish_game("g", status="playing")
    assert db.load_game("g").moves == []


DECK = [PictoCard(level=lv, words=tuple(f"{t}{lv}{k}" for k in range(7)))
        for lv in (1, 2, 3, 4) for t in "abcdefgh"]


def test_a_game_resumes_from_the_store_after_a_restart_and_finishes_identically(db_url):
    """Play half a Pictomania game, 'restart' (close, reopen), replay the stored log, finish it,
    and compare with the same game played without interruption."""
    rules = PictomaniaRules(PictomaniaConfig.load(rounds=2, levels_per_round=[1, 2]))
    setup = {"players": ["joueur", "ia1", "ia2"], "deck": [c.to_dict() for c in DECK], "seed": 11}

    def script(state, t0):
        players = state.players
        for i, p in enumerate(players):
            target = players[(i + 1) % 3]
            yield PictoStroke(player=p, points=[(i, 0), (i, 10), (i + 5, 10)]), t0 + i
            yield PlaceGuess(player=p, target=target, number=state.round.secrets[target].number), t0 + i + 0.5
        for i, p in enumerate(players[:-1]):  # the round ends when all but one are done
            yield Done(player=p), t0 + 10 + i

    def play_round(state, t0, log):
        for move, now in script(state, t0):
            state, _ = rules.apply(state, move, now)
            log.append((now, move))
        return state

    reference, _ = rules.setup(**setup)
    uninterrupted: list = []
    reference = play_round(reference, 1.0, uninterrupted)
    reference, _ = rules.apply(reference, NextRound(player="joueur"), 30.0)
    reference = play_round(reference, 31.0, uninterrupted)
    assert reference.phase == "game_over"

    with open_store(db_url) as db:  # first life of the server: round 1, then it dies
        db.create_game("p1", "pictomania", setup, hash_token("tok"))
        state, _ = rules.setup(**setup)
        log: list = []
        state = play_round(state, 1.0, log)
        for seq, (now, move) in enumerate(log):
            db.append_move("p1", seq, now, move.to_dict())
    with open_store(db_url) as db:  # second life: replay, go on, finish
        [stored] = db.load_unfinished_games()
        state, _ = replay(rules, stored.setup, [LoggedMove(now=m.at, move=m.move) for m in stored.moves])
        seq = len(stored.moves)
        rest = [(30.0, NextRound(player="joueur"))]
        state, _ = rules.apply(state, rest[0][1], 30.0)
        state = play_round(state, 31.0, rest)
        for now, move in rest:
            db.append_move("p1", seq, now, move.to_dict())
            seq += 1
        db.finish_game("p1", result={"phase": state.phase})
        assert state == reference
        final = db.load_game("p1")
        replayed, _ = replay(rules, final.setup, [LoggedMove(now=m.at, move=m.move) for m in final.moves])
        assert replayed == reference and final.status == "finished"


WRITER = """
import sys
from store import open_store, hash_token
db = open_store(sys.argv[1])
db.create_game("k", "kontour", {"seed": 1}, hash_token("t"))
seq = 0
while True:
    db.append_move("k", seq, seq * 0.01, {"kind": "stroke", "points": [[seq, 1.0]] * 40})
    print(seq, flush=True)
    seq += 1
"""


def test_a_process_killed_mid_game_loses_no_acknowledged_move(db_url):
    """SIGKILL a writer process while it appends moves: every move it reported written is there,
    in order, and the database opens cleanly."""
    proc = subprocess.Popen([sys.executable, "-c", WRITER, db_url], stdout=subprocess.PIPE, text=True,
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    acked = -1
    try:
        for line in proc.stdout:
            acked = int(line)
            if acked >= 150:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert acked >= 150, "the writer did not start"
    with open_store(db_url) as db:
        [game] = db.load_unfinished_games()
        assert len(game.moves) >= acked + 1
        assert [m.seq for m in game.moves] == list(range(len(game.moves)))
        db.append_move("k", len(game.moves), 99.0, {"kind": "tick"})  # and the game goes on


# ------------------------------------------------------------------------------------------------
# Transcripts


def test_transcripts_are_kept_bounded_in_bytes_and_replaced_by_id(db_url):
    with open_store(db_url) as db:
        events = [{"kind": "stroke", "round": 1, "t": i / 10, "strokes": i} for i in range(200)]
        kept = db.save_transcript(TranscriptRecord("s1", {"room": "salon", "rounds": 1}, events,
                                                   key_hash="abc"), now=50.0, max_bytes=2_000)
        assert 0 < len(kept.events) < 200 and kept.dropped == 200 - len(kept.events)
        assert len(json.dumps(kept.events, separators=(",", ":"))) <= 2_000
        loaded = db.load_transcript("s1")
        assert loaded.events == kept.events == events[: len(kept.events)]
        assert (loaded.summary, loaded.key_hash) == ({"room": "salon", "rounds": 1}, "abc")
        assert loaded.created_at == 50.0
        db.save_transcript(TranscriptRecord("s1", {"rounds": 2}, events[:3]), now=60.0)  # the session went on
        again = db.load_transcript("s1")
        assert again.summary == {"rounds": 2} and len(again.events) == 3 and again.created_at == 50.0
        assert db.load_transcript("nope") is None


def test_a_lobby_is_stored_replaced_and_deleted(db):
    lobby = {"game": "pictomania",
             "seats": [{"seat": "humain", "name": "Léa", "token_hash": hash_token("t")}]}
    db.save_room("ABCD", lobby, now=10.0)
    db.save_room("WXYZ", {"game": "kontour", "seats": []}, now=20.0)
    db.save_room("ABCD", lobby | {"level": "hard"}, now=30.0)  # changed: replaced, not added
    assert db.load_rooms() == [("WXYZ", {"game": "kontour", "seats": []}, 20.0),
                               ("ABCD", lobby | {"level": "hard"}, 30.0)]
    db.delete_room("WXYZ")
    db.delete_room("NONE")  # none: nothing done
    assert [code for code, _, _ in db.load_rooms()] == ["ABCD"]
    with pytest.raises(BadRecord, match="larger than"):
        db.save_room("ABCD", {"seats": ["x" * 20_000]})
    assert db.load_rooms()[0][1] == lobby | {"level": "hard"}


def test_prune_applies_the_retention_rules(db):
    now = 100 * DAY
    for i in range(6):  # transcripts 0..5 days old
        db.save_transcript(TranscriptRecord(f"t{i}", {}, [], created_at=now - i * DAY), now=now - i * DAY)
    db.create_game("old", "kontour", {}, hash_token("a"), now=now - 40 * DAY)
    db.append_move("old", 0, 0.0, {"kind": "x"}, now=now - 40 * DAY)
    db.create_game("old-finished", "kontour", {}, hash_token("a"), now=now - 50 * DAY)
    db.finish_game("old-finished", now=now - 31 * DAY)
    db.create_game("recent", "kontour", {}, hash_token("b"), now=now - 2 * DAY)
    db.append_move("recent", 0, 0.0, {"kind": "x"}, now=now - 1 * DAY)
    db.add_drawing(DrawingRecord("cat", "kontour", strokes()), consent=True, now=now - 400 * DAY)
    db.add_drawing(DrawingRecord("cat", "kontour", strokes()), consent=True, now=now)
    keep = Retention(games_days=30, transcripts_days=4.5, transcripts_max=3, drawings_days=365)
    report = db.prune(keep, now=now)
    assert (report.games, report.moves, report.drawings) == (2, 1, 1)
    assert [t.id for t in db.list_transcripts()] == ["t0", "t1", "t2"] and report.transcripts == 3
    assert [g.id for g in db.load_unfinished_games()] == ["recent"]
    assert db.info().counts["moves"] == 1
    keep_all = db.prune(Retention(games_days=0, transcripts_days=0, transcripts_max=10, drawings_days=0),
                        now=now + 1000 * DAY)
    assert keep_all == type(keep_all)(0, 0, 0, 0)
    db.vacuum()
    assert db.info().counts["drawings"] == 1


# ------------------------------------------------------------------------------------------------
# Drawings: consent, bounds, export in the Quick, Draw! raw layout


def test_a_drawing_is_stored_only_with_consent_and_checked(db):
    record = DrawingRecord("cat", "pictomania", strokes(), {"style": "free", "round_s": 120}, recognized=True)
    with pytest.raises(BadRecord, match="consent"):
        db.add_drawing(record, consent=False)
    assert db.drawing_counts() == {}
    key = db.add_drawing(record, consent=True, now=1.0)
    assert len(key) == 19 and key.isdigit() and key.startswith("9")
    [back] = list(db.iter_drawings("cat"))
    assert (back.word, back.game, back.strokes, back.conditions, back.recognized, back.key_id) == (
        "cat", "pictomania", strokes(), {"style": "free", "round_s": 120}, True, key)
    bad = [
        (DrawingRecord("../etc/passwd", "kontour", strokes()), "not a category name"),
        (DrawingRecord("cat", "kontour", []), "1 to 1000 strokes"),
        (DrawingRecord("cat", "kontour", [[[1, 2], [3, 4]]]), "times are required"),
        (DrawingRecord("cat", "kontour", [[[1, 2], [3], [0, 1]]]), "same length"),
        (DrawingRecord("cat", "kontour", [[[1, math.nan], [3, 4], [0, 1]]]), "finite"),
        (DrawingRecord("cat", "kontour", [[[1, 2], [3, 4], [5, 1]]]), "times go back"),
        (DrawingRecord("cat", "kontour", strokes(3, 4000)), "at most 10000 points"),
    ]
    for wrong, message in bad:
        with pytest.raises(BadRecord, match=message):
            db.add_drawing(wrong, consent=True)
    assert db.drawing_counts() == {"cat": 1}


def test_iterating_drawings_pages_through_all_of_them_in_order(db):
    keys = [db.add_drawing(DrawingRecord("The Eiffel Tower", "kontour", strokes(1)), True, now=float(i % 3))
            for i in range(7)]
    seen = [d.key_id for d in db.iter_drawings(batch=2)]
    assert sorted(seen) == sorted(keys) and len(seen) == 7
    assert [d.created_at for d in db.iter_drawings(batch=2)] == sorted(float(i % 3) for i in range(7))


def test_export_writes_the_quickdraw_raw_layout_that_training_reads(db, tmp_path):
    lines = DrawingRecord("circle", "kontour", strokes(3, 2), {"style": "lines", "timer_s": 30}, True)
    free = DrawingRecord("square", "pictomania", strokes(2, 6), {"style": "free"})
    keys = {db.add_drawing(lines, True, now=1_764_590_400.0), db.add_drawing(free, True),
            db.add_drawing(free, True)}
    report = export_quickdraw(db, tmp_path / "played")
    assert report.drawings == 3 and report.words == {"circle": 1, "square": 2}
    assert report.conditions == {"kontour/lines": 1, "pictomania/free": 2}
    line = json.loads((tmp_path / "played/full/raw/circle.ndjson").read_text().splitlines()[0])
    assert set(line) == {"word", "countrycode", "timestamp", "recognized", "key_id", "drawing"}
    assert line["countrycode"] == "ZZ" and line["timestamp"] == "2025-12-01 00:00:00.00000 UTC"
    records = load_dataset(tmp_path / "played")
    assert {r.key_id for r in records} == keys
    by_word = {r.word: r for r in records}
    assert by_word["circle"].strokes == strokes(3, 2) and by_word["circle"].recognized is True
    assert by_word["square"].source == "raw"
    side = [json.loads(x) for x in (tmp_path / "played/griffon-conditions.ndjson").read_text().splitlines()]
    assert {s["key_id"] for s in side} == keys
    assert json.loads((tmp_path / "played/griffon-export.json").read_text())["drawings"] == 3


def test_export_mixed_with_the_dataset_adds_played_drawings_to_its_categories(db, tmp_path):
    dataset = write_fixture_folder(tmp_path / "quickdraw", per_word=6)
    before = load_dataset(dataset)
    db.add_drawing(DrawingRecord("circle", "kontour", strokes(2), {"style": "lines"}), True)
    db.add_drawing(DrawingRecord("cat", "pictomania", strokes(2)), True)  # not one of the dataset's words
    report = export_quickdraw(db, tmp_path / "mixed", mix=dataset)
    assert report.drawings == 1 and report.skipped_unknown_words == 1 and report.linked_files > 0
    mixed = load_dataset(tmp_path / "mixed")
    assert len(mixed) == len(before) + 1
    assert read_categories(tmp_path / "mixed") == read_categories(dataset)
    circles = list(read_ndjson(tmp_path / "mixed/full/raw/circle.ndjson"))
    assert len(circles) == sum(r.word == "circle" for r in before) + 1
    assert (tmp_path / "mixed/full/raw/square.ndjson").is_symlink()
    assert load_dataset(dataset) == before  # the dataset itself is untouched
    with pytest.raises(Exception, match="not into the dataset"):
        export_quickdraw(db, dataset / "sub", mix=dataset)


# ------------------------------------------------------------------------------------------------
# Bad files and settings (SQLite)


def test_a_garbage_file_is_a_clear_error_and_is_left_untouched(tmp_path):
    path = tmp_path / "griffon.db"
    garbage = os.urandom(8192)
    path.write_bytes(garbage)
    with pytest.raises(CorruptDatabase, match=rf"{path}.*not a usable SQLite database.*restore a backup"):
        open_store(f"sqlite:///{path}")
    assert path.read_bytes() == garbage


def test_a_damaged_database_is_found_at_start_not_later(tmp_path):
    path = tmp_path / "griffon.db"
    with open_store(f"sqlite:///{path}") as db:
        db.create_game("g", "kontour", {"pad": "x" * 20_000}, hash_token("t"))
        for i in range(300):
            db.append_move("g", i, float(i), {"kind": "stroke", "points": [[i, i]] * 30})
        db.vacuum()
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(3 * page, len(data) - page, 5 * page):  # scribble over some pages (not the header)
        data[offset + 100: offset + 600] = os.urandom(500)
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptDatabase, match="damaged|not a usable"):
        open_store(f"sqlite:///{path}")


def damaged_last_page(path: Path) -> bytes:
    """A real Griffon database whose last page has its cell pointers scribbled over; its bytes."""
    with open_store(f"sqlite:///{path}") as db:
        for g in range(20):
            db.create_game(f"g{g}", "kontour", {"seed": g, "pad": "x" * 300}, hash_token("t"))
            db.append_moves(f"g{g}", 0, [(i / 2, {"kind": "stroke", "points": [[i, i + 1]] * 5})
                                         for i in range(30)])
    data = bytearray(path.read_bytes())
    assert not Path(f"{path}-wal").exists() and len(data) % 4096 == 0
    last = len(data) - 4096
    data[last + 8: last + 72] = bytes((37 * k + 11) % 256 for k in range(64))
    path.write_bytes(bytes(data))
    return bytes(data)


def test_damage_in_the_last_page_is_refused_at_start_in_one_line_and_left_untouched(tmp_path):
    path = tmp_path / "griffon.db"
    damaged = damaged_last_page(path)
    with pytest.raises(CorruptDatabase) as refused:
        open_store(f"sqlite:///{path}")
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{path} is damaged (On tree page")
    assert message.endswith("restore a backup or move the file away (Griffon never overwrites it)")
    assert path.read_bytes() == damaged and not Path(f"{path}-wal").exists()


def test_a_foreign_sqlite_file_is_refused_byte_identical(tmp_path):
    path = tmp_path / "griffon.db"
    with contextlib.closing(sqlite3.connect(path)) as other:  # another application's file (rollback journal)
        other.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        other.executemany("INSERT INTO invoices (total) VALUES (?)", [(i * 1.5,) for i in range(100)])
        other.commit()
    before = path.read_bytes()
    for check in ("quick", "off"):
        with pytest.raises(ForeignDatabase, match="invoices.*not a Griffon database"):
            open_store(StoreSettings(database_url=f"sqlite:///{path}", db_check=check))
    assert path.read_bytes() == before  # still in rollback-journal mode: never switched to WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["griffon.db"]


def test_a_truncated_database_is_a_clear_error(tmp_path):
    path = tmp_path / "griffon.db"
    with open_store(f"sqlite:///{path}") as db:
        for i in range(50):
            db.create_game(f"g{i}", "kontour", {"pad": "x" * 2_000}, hash_token("t"))
        db.vacuum()
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CorruptDatabase):
        open_store(f"sqlite:///{path}")


def test_the_default_database_is_a_wal_file_in_the_data_folder(tmp_path):
    settings = StoreSettings.from_env({"GRIFFON_DB_DIR": str(tmp_path / "data")})
    assert settings.url == f"sqlite:///{tmp_path / 'data' / 'griffon.db'}"
    with open_store(settings) as db:
        assert db.location == str(tmp_path / "data" / "griffon.db")
    mode = sqlite3.connect(tmp_path / "data" / "griffon.db").execute("PRAGMA journal_mode").fetchone()
    assert mode == ("wal",)
    assert StoreSettings.from_env({}).url == "sqlite:///var/griffon.db"


def test_bad_settings_and_urls_are_clear_errors(tmp_path):
    with pytest.raises(StoreUnavailable, match="GRIFFON_DB_RETAIN_GAMES_DAYS"):
        StoreSettings.from_env({"GRIFFON_DB_RETAIN_GAMES_DAYS": "-3"})
    with pytest.raises(StoreUnavailable, match="GRIFFON_DB_CHECK"):
        StoreSettings.from_env({"GRIFFON_DB_CHECK": "sometimes"})
    with pytest.raises(StoreUnavailable, match="unknown database URL 'mysql'"):
        open_store("mysql://x/y")
    with pytest.raises(StoreUnavailable, match="is a folder"):
        open_store(f"sqlite:///{tmp_path}")
    with pytest.raises(StoreUnavailable, match="cannot connect to postgresql://griffon:\\*\\*\\*@127.0.0.1"):
        open_store("postgresql://griffon:hunter2@127.0.0.1:1/postgres")


# ------------------------------------------------------------------------------------------------
# Group commit


def test_the_move_writer_commits_every_game_in_order_and_isolates_a_refused_move(db):
    for g in ("a", "b", "c"):
        db.create_game(g, "kontour", {}, hash_token(g))
    db.finish_game("c")
    writer = MoveWriter(db)
    futures = [writer.submit(g, i, i / 10, {"kind": "stroke", "n": i}) for i in range(200) for g in "ab"]
    late = writer.submit("c", 0, 0.0, {"kind": "too late"})
    writer.flush(timeout=patient(30))
    assert all(f.done() and f.exception() is None for f in futures)
    assert isinstance(late.exception(), MoveRejected) and writer.refused == 1
    for g in ("a", "b"):
        assert [m.move["n"] for m in db.load_game(g).moves] == list(range(200))
    assert writer.written == 400 and writer.batches < 400  # grouped into fewer transactions
    writer.close()
    with pytest.raises(WriterClosed):
        writer.submit("a", 200, 1.0, {})


def test_the_move_writer_holds_moves_while_the_database_cannot_write_and_keeps_the_order(tmp_path):
    """Another connection holds SQLite's write lock (a long ``griffon db vacuum``): the writer keeps
    the moves and the game's end, says it is failing, tries again, and writes them all in order."""
    path = tmp_path / "g.db"
    with open_store(StoreSettings(database_url=f"sqlite:///{path}", db_timeout_ms=20)) as db:
        db.create_game("a", "kontour", {}, hash_token("a"))
        writer = MoveWriter(db)
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        futures = [writer.submit("a", i, float(i), {"kind": "stroke", "n": i}) for i in range(5)]
        end = writer.submit_end("a", "finished", {"winners": []})
        eventually(lambda: writer.failing is not None, 10, "the writer did not see the lock")
        assert not any(f.done() for f in [*futures, end]) and writer.retries >= 1
        other.execute("ROLLBACK")
        other.close()
        writer.flush(timeout=patient(30))
        assert all(f.exception() is None for f in [*futures, end]) and writer.failing is None
        game = db.load_game("a")
        assert game.status == "finished" and [m.move["n"] for m in game.moves] == list(range(5))
        writer.close()


def test_a_move_refused_after_a_lost_answer_counts_as_written_when_it_is_in_the_log(db):
    """The COMMIT went through but its answer was lost (a dropped connection): the retry is refused
    (the game has moved on), and the writer finds the very move in the log."""
    db.create_game("a", "kontour", {}, hash_token("a"))
    writer = MoveWriter(db)
    writer.flush(timeout=patient(10))
    db.append_move("a", 0, 0.5, {"kind": "stroke", "n": 0})  # what the lost attempt wrote
    job = Job(Future(), entry=("a", 0, 0.5, {"kind": "stroke", "n": 0}), tried=True)
    writer._write([job])
    assert job.future.exception() is None and writer.refused == 0
    other = Job(Future(), entry=("a", 0, 0.5, {"kind": "stroke", "n": 1}), tried=True)  # not what is there
    writer._write([other])
    assert isinstance(other.future.exception(), MoveRejected)
    writer.close()


def test_the_move_writer_queue_is_bounded(db):
    db.create_game("a", "kontour", {}, hash_token("a"))
    writer = MoveWriter(db, max_queue=3)
    with db.lock:  # the database is busy: the writer thread waits, the queue fills
        first = writer.submit("a", 0, 0.0, {"kind": "x"})
        submitted, refused = 1, None
        for i in range(1, 20):
            try:
                writer.submit("a", i, 0.0, {"kind": "x"})
                submitted += 1
            except WriterOverloaded as error:
                refused = error
                break
    assert refused is not None and "waiting to be written" in str(refused) and submitted < 20
    writer.close()
    assert first.result(timeout=patient(10)) is None and len(db.load_game("a").moves) == submitted


# ------------------------------------------------------------------------------------------------
# Bot transcripts through the archive (the service's own Transcript class)


def test_bot_transcripts_survive_a_restart_and_open_only_with_their_key(db_url):
    from service.bot.session import Transcript

    live = Transcript("sess1", "salon", "Griffon", limit=10_000)
    live.add("round_start", 1, 0.0, game="kontour")
    live.add("guess", 1, 3.2, label="cat", text="chat")
    with open_store(db_url) as db:
        archive = TranscriptArchive(db, shared_writer(db), max_bytes=10_000)
        assert archive.save(live)
        archive.writer.flush(timeout=patient(10))
        live.add("round_end", 1, 20.0, why="found")  # saved again at the end: replaced
        assert archive.save(live, final=True)
    with open_store(db_url) as db:  # the restarted server (closing the store wrote what was waiting)
        archive = TranscriptArchive(db, shared_writer(db))
        shown = archive.get("sess1", live.key)
        assert shown["events"] == live.events and shown["event_count"] == 3
        assert shown["room"] == "salon" and shown["live"] is False
        assert archive.get("sess1", "wrong key") is None and archive.get("nope", live.key) is None
        assert [s["id"] for s in archive.summaries()] == ["sess1"]
        assert live.key not in json.dumps(db.rows("SELECT * FROM transcripts"))


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_postgres_reconnects_after_losing_its_connection(db_url):
    import psycopg

    with open_store(db_url) as db:
        db.create_game("g", "kontour", {}, hash_token("t"))
        with psycopg.connect(db_url, autocommit=True) as admin:  # the server drops our connection
            admin.execute("SELECT pg_terminate_backend(%s)", (db.conn.info.backend_pid,))
        with pytest.raises(StoreUnavailable):
            db.append_move("g", 0, 0.0, {"kind": "lost"})
        db.append_move("g", 0, 0.0, {"kind": "after"})  # the next operation reconnects
        assert [m.move["kind"] for m in db.load_game("g").moves] == ["after"]


def test_a_failed_commit_is_rolled_back_and_later_writes_go_on(tmp_path):
    """A COMMIT the database refuses (here a deferred foreign key: a move of no game) must not leave
    the connection inside the transaction, or every later write fails until a restart."""
    with open_store(f"sqlite:///{tmp_path / 'g.db'}") as db:
        db.run("PRAGMA defer_foreign_keys = ON")  # foreign keys checked at COMMIT, not per statement
        with pytest.raises(BadRecord, match="FOREIGN KEY"), db.lock, db.write():
            db.run("INSERT INTO moves (game_id, seq, at, move) VALUES ('ghost', 0, 0.0, '{}')")
        assert not db.conn.in_transaction
        db.create_game("g", "kontour", {}, hash_token("t"))  # the next write works
        db.append_move("g", 0, 0.0, {"kind": "x"})
        assert [m.move for m in db.load_game("g").moves] == [{"kind": "x"}]
        assert db.info().counts["moves"] == 1  # the refused move is not there


def test_prune_deletes_in_small_transactions_and_keeps_the_newest(tmp_path):
    """Prune in batches (the lock is released between them): the same result as one big DELETE."""
    now = 100 * DAY
    with open_store(f"sqlite:///{tmp_path / 'g.db'}") as db:
        for i in range(23):
            db.create_game(f"g{i:02d}", "kontour", {}, hash_token("t"), now=now - 40 * DAY)
            db.append_moves(f"g{i:02d}", 0, [(0.0, {"kind": "x"}), (1.0, {"kind": "y"})], now=now - 40 * DAY)
            db.save_transcript(TranscriptRecord(f"t{i:02d}", {}, [], created_at=now - i), now=now - i)
        db.create_game("new", "kontour", {}, hash_token("t"), now=now)
        for _ in range(7):
            db.add_drawing(DrawingRecord("cat", "kontour", strokes()), consent=True, now=now - 400 * DAY)
        statements: list[str] = []
        db.conn.set_trace_callback(statements.append)
        report = db.prune(Retention(games_days=30, transcripts_days=0, transcripts_max=4, drawings_days=365),
                          now=now, batch=5)
        db.conn.set_trace_callback(None)
        assert (report.games, report.moves, report.transcripts, report.drawings) == (23, 46, 19, 7)
        assert [t.id for t in db.list_transcripts()] == ["t00", "t01", "t02", "t03"]
        assert [g.id for g in db.load_unfinished_games()] == ["new"]
        counts = {"games": 1, "moves": 0, "transcripts": 4, "drawings": 0, "games_playing": 1}
        assert db.info().counts == counts
        commits = sum(1 for s in statements if s == "COMMIT")
        assert commits >= 5 + 4 + 2  # 23 games / 5, 19 transcripts / 5, 7 drawings / 5: one transaction each


def test_a_stalled_database_fails_a_game_write_quickly_instead_of_hanging(tmp_path):
    """Another process holds the write lock (e.g. `griffon db vacuum` on the live file): the
    service's write gives up after `GRIFFON_DB_TIMEOUT_MS` with `StoreUnavailable`, and works again
    once the lock is gone."""
    path = tmp_path / "g.db"
    with open_store(StoreSettings(database_url=f"sqlite:///{path}", db_timeout_ms=50)) as db:
        db.create_game("g", "kontour", {}, hash_token("t"))
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreUnavailable, match="locked"):
            db.append_move("g", 0, 0.0, {"kind": "x"})
        with pytest.raises(StoreUnavailable, match="not waiting again"):  # the next ones fail at once
            db.append_move("g", 0, 0.0, {"kind": "x"})
        other.execute("ROLLBACK")
        other.close()
        db.stalled_until = 0.0  # the back-off is over (STALL_BACKOFF_S later)
        db.append_move("g", 0, 0.0, {"kind": "x"})
        with db.lock:  # a thread of this process holds the store (a long prune batch...)
            failed: list[BaseException] = []

            def write() -> None:
                try:
                    db.append_move("g", 1, 0.0, {"kind": "y"})
                except StoreUnavailable as error:
                    failed.append(error)

            writer = threading.Thread(target=write)
            writer.start()
            writer.join(patient(10))
            assert not writer.is_alive() and len(failed) == 1 and "busy" in str(failed[0])
        db.stalled_until = 0.0
        assert len(db.load_game("g").moves) == 1


def test_the_background_writer_keeps_one_snapshot_per_session_and_throttles_it(tmp_path):
    def snapshot(rounds: int, events: int = 3) -> TranscriptRecord:
        return TranscriptRecord("s", {"rounds": rounds}, [{"n": n} for n in range(events)])

    with open_store(f"sqlite:///{tmp_path / 'g.db'}") as db:
        writer = BackgroundWriter(db, min_interval_s=3600.0)
        assert writer.save_transcript(snapshot(0), 10_000)
        writer.flush(timeout=patient(10))  # the session's first snapshot is written at once
        for i in range(1, 301):  # a room sending round ends as fast as it can
            assert writer.save_transcript(snapshot(i), 10_000)
        assert writer.transcripts_written == 1 and db.load_transcript("s").summary == {"rounds": 0}
        assert list(writer.snapshots) == ["s"]  # one waiting per session, replaced each time
        assert writer.snapshots["s"][0].summary == {"rounds": 300}
        assert writer.save_transcript(snapshot(301), 10_000, final=True)  # the session ended
        # written without waiting for the throttle (an hour)
        eventually(lambda: writer.transcripts_written == 2, 5, "the session's last snapshot was not written")
        assert writer.transcripts_written == 2 and db.load_transcript("s").summary == {"rounds": 301}
        writer.save_transcript(TranscriptRecord("other", {}, [{"n": 1}] * 500), 100)  # cut to 100 bytes
        writer.flush(timeout=patient(10))
        assert writer.transcripts_written == 3
        assert len(json.dumps(db.load_transcript("other").events, separators=(",", ":"))) <= 100
        writer.close()
        with pytest.raises(BackgroundClosed):
            writer.flush(timeout=1)
        assert not writer.add_drawing(DrawingRecord("cat", "room", strokes())) and writer.dropped == 1


def test_the_background_writer_queue_of_drawings_is_bounded(tmp_path):
    with open_store(f"sqlite:///{tmp_path / 'g.db'}") as db:
        writer = BackgroundWriter(db, max_pending=3)
        with db.lock:  # the database is busy: the thread waits, the queue fills
            queued = [writer.add_drawing(DrawingRecord("cat", "kontour", strokes())) for _ in range(10)]
        assert queued.count(False) >= 6 and writer.dropped == queued.count(False)
        writer.flush(timeout=patient(10))
        assert db.drawing_counts() == {"cat": queued.count(True)} == {"cat": writer.drawings_written}
        writer.close()


def test_the_move_writer_flush_raises_once_closed_instead_of_waiting_for_ever(db):
    writer = MoveWriter(db)
    writer.close()
    with pytest.raises(WriterClosed):
        writer.flush(timeout=None)


def test_export_leaves_the_rooms_drawings_out_unless_asked(db, tmp_path):
    db.add_drawing(DrawingRecord("cat", "pictomania", strokes()), consent=True)
    db.add_drawing(DrawingRecord("cat", "room", strokes(3)), consent=True)
    db.add_drawing(DrawingRecord("dog", "room", strokes()), consent=True)
    report = export_quickdraw(db, tmp_path / "out")
    assert (report.drawings, report.skipped_room_drawings, report.words) == (1, 2, {"cat": 1})
    assert not (tmp_path / "out" / "full" / "raw" / "dog.ndjson").exists()
    report = export_quickdraw(db, tmp_path / "all", include_rooms=True)
    assert (report.drawings, report.skipped_room_drawings, report.words) == (3, 0, {"cat": 2, "dog": 1})


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_postgres_a_locked_table_fails_a_game_write_at_the_timeout(db_url):
    """PostgreSQL: ``lock_timeout`` / ``statement_timeout`` (`GRIFFON_DB_TIMEOUT_MS`) end a write
    that waits on another session's lock; the connection stays usable afterwards."""
    import psycopg

    with open_store(StoreSettings(database_url=db_url, db_timeout_ms=100)) as db:
        db.create_game("g", "kontour", {}, hash_token("t"))
        with psycopg.connect(db_url) as admin:  # a transaction holding the table (a long maintenance job)
            admin.execute("LOCK TABLE games IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreUnavailable, match="timeout"):
                db.append_move("g", 0, 0.0, {"kind": "x"})
        db.stalled_until = 0.0
        db.append_move("g", 0, 0.0, {"kind": "x"})
        assert len(db.load_game("g").moves) == 1
