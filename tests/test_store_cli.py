"""`griffon db …` and `griffon data export`, run in-process on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import store.cli
import training.cli
from store import LATEST_VERSION, DrawingRecord, TranscriptRecord, hash_token, open_store
from training.data import load_dataset

runner = CliRunner()
app = typer.Typer()  # the root CLI's way: each package registers its commands (data first, then db)
training.cli.register(app)
store.cli.register(app)


@pytest.fixture
def filled(tmp_path, monkeypatch) -> str:
    """A database with a game, a transcript and two drawings; the URL is the default one."""
    monkeypatch.setenv("GRIFFON_DB_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("GRIFFON_DB_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'data' / 'griffon.db'}"
    with open_store(url) as db:
        db.create_game("g", "kontour", {"seed": 1}, hash_token("t"), now=0.0)
        db.append_move("g", 0, 0.0, {"kind": "draw_card"}, now=0.0)
        db.save_transcript(TranscriptRecord("s", {}, [{"kind": "hello"}]), now=0.0)
        stroke = [[[0, 10], [0, 10], [0, 50]]]
        db.add_drawing(DrawingRecord("cat", "kontour", stroke, {"style": "lines"}), consent=True)
        db.add_drawing(DrawingRecord("dog", "pictomania", stroke, {"style": "free"}), consent=True)
    return url


def test_db_info_says_where_how_big_and_what_is_inside(filled, tmp_path):
    done = runner.invoke(app, ["db", "info"])
    assert done.exit_code == 0, done.output
    assert str(tmp_path / "data" / "griffon.db") in done.output
    assert f"schema     version {LATEST_VERSION}" in done.output
    assert "1 (1 in progress), 1 moves" in done.output
    assert "drawings   2 in 2 categories" in done.output
    data = json.loads(runner.invoke(app, ["db", "info", "--json", "--url", filled]).output)
    assert data["counts"]["drawings"] == 2 and data["drawings_per_word"] == {"cat": 1, "dog": 1}
    assert data["size_bytes"] > 0 and data["backend"] == "sqlite"


def test_db_prune_and_vacuum_apply_retention(filled):
    done = runner.invoke(app, ["db", "prune", "--games-days", "1", "--transcripts-days", "1"])
    assert done.exit_code == 0, done.output
    assert "deleted 1 games (1 moves), 1 transcripts, 0 drawings" in done.output
    done = runner.invoke(app, ["db", "vacuum"])
    assert done.exit_code == 0 and "→" in done.output
    with open_store(filled) as db:
        counts = db.info().counts
    assert counts == {"games": 0, "moves": 0, "transcripts": 0, "drawings": 2, "games_playing": 0}


@pytest.mark.parametrize("command", [["db", "export"], ["data", "export"]])
def test_export_commands_write_what_training_reads(filled, tmp_path, command):
    out = tmp_path / "played"
    done = runner.invoke(app, [*command, "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert "2 drawings in 2 categories" in done.output
    assert sorted(r.word for r in load_dataset(out)) == ["cat", "dog"]


def test_a_corrupt_database_is_a_clear_cli_error(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 500)
    done = runner.invoke(app, ["db", "info", "--url", f"sqlite:///{bad}"])
    assert done.exit_code == 1
    assert "not a usable SQLite database" in done.output and str(bad) in done.output
    assert bad.read_bytes() == b"this is not a database" * 500


def test_export_refuses_to_write_into_the_dataset(filled, tmp_path):
    dataset = tmp_path / "qd"
    (dataset / "full" / "raw").mkdir(parents=True)
    done = runner.invoke(app, ["db", "export", "--out", str(dataset), "--mix", str(dataset)])
    assert done.exit_code == 1 and "not into the dataset" in done.output
    assert not Path(dataset / "full" / "raw" / "cat.ndjson").exists()
