"""examples/socketio-room: a Socket.IO room of our own (Node, socket.io 4.8) with Griffon seated
through clients/js, against a real `griffon serve` with the shipped model. A scripted person draws
three real drawings of the pack as mouse segments; Griffon guesses with the room's spelling, draws
its own turn as segments the room relays, and declines at once a word it cannot draw."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from griffon.launch import REPO, patient, running_server
from tests.bot_clients import node_command

EXAMPLE = REPO / "examples" / "socketio-room"
WORDS_CSV = REPO / "tests" / "data" / "words" / "skribbl_en.csv"


def installed() -> bool:
    """socket.io in the example's node_modules (``npm ci`` there when npm can reach its registry)."""
    if (EXAMPLE / "node_modules" / "socket.io").is_dir():
        return True
    npm = shutil.which("npm")
    if npm is None:
        return False
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=EXAMPLE, capture_output=True,
                          timeout=300)
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(node_command() is None, reason="no Node >= 20 on PATH")
def test_a_socketio_room_plays_a_game_with_griffon_guessing_and_drawing(tmp_path: Path) -> None:
    if not installed():
        pytest.skip("examples/socketio-room: npm could not install socket.io")
    from games.ai.drawing_pack import DrawingPack

    with WORDS_CSV.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    words = [row["word"] for row in rows]
    pack = DrawingPack.load()
    person = {"cat": "cat", "house": "house", "bicycle": "bicycle"}  # the room's word → its category
    turns = [{"drawer": "Ana", "word": "cat"}, {"drawer": "Griffon", "word": "plane"},
             {"drawer": "Ana", "word": "house"}, {"drawer": "Griffon", "word": "dinosaur"},
             {"drawer": "Ana", "word": "bicycle"}]
    for turn in turns:
        if turn["drawer"] == "Ana":
            turn["drawing"] = pack.drawings(person[turn["word"]])[0]
    with running_server({}) as server:
        game = tmp_path / "game.json"
        game.write_text(json.dumps({"griffon": server.ws_url + "/v1/bot", "words": words, "turnS": 10,
                                    "turns": turns}))
        node, *flags = node_command()[:-1]
        done = subprocess.run([node, *flags, "play.mjs", str(game)], cwd=EXAMPLE, capture_output=True,
                              text=True, timeout=patient(180))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    record, seat = result["record"], result["seat"]
    played = record["turns"]
    assert [(t["drawer"], t["word"]) for t in played] == [(t["drawer"], t["word"]) for t in turns]
    assert seat["unknown"] == [row["word"] for row in rows if not row["categories"]]  # ignored, listed
    # Griffon's own turns: a real drawing relayed as segments; a word it cannot draw skipped at once
    plane, dinosaur = played[1], played[3]
    assert plane["why"] == "time" and plane["segments"] > 10
    assert seat["drawn"] == [{"word": "plane", "label": "airplane", "strokes": seat["drawn"][0]["strokes"]}]
    assert dinosaur["why"] == "skipped" and dinosaur["segments"] == 0 and seat["declined"] == ["dinosaur"]
    # the person's turns: Griffon's guesses are words of the room's list, spelt as it spells them
    guesses = [g for t in played if t["drawer"] == "Ana" for g in t["guesses"]]
    assert guesses and all(g["player"] == "Griffon" and g["text"] in words for g in guesses)
    found = [t["word"] for t in played if "Griffon" in t["found"]]
    assert found, played  # three recognised drawings, each replayed as a mouse would: one found at least
    assert record["scores"]["Griffon"] >= 100 * len(found) - 10 * len(found)
