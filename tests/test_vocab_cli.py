"""`griffon match` and `griffon vocab`, run through typer's CliRunner on a local app."""

from __future__ import annotations

import csv
import io
import json

import pytest
import typer
from typer.testing import CliRunner

from vocab.cli import register


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def _run(app: typer.Typer, *args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_match_prints_verdict_and_reason(app: typer.Typer) -> None:
    out = _run(app, "match", "médecin", "Docteur")
    assert out.startswith("accepted: synonym")
    out = _run(app, "match", "bateau", "gâteau")
    assert out.startswith("rejected: rejected_different_word")


def test_match_json(app: typer.Typer) -> None:
    data = json.loads(_run(app, "match", "horse", "chevaux", "--json"))
    assert data["accepted"] is True and data["reason"] == "inflection"
    assert data["category"] == "horse" and data["normalized_guess"] == "chevaux"


def test_match_with_table(app: typer.Typer) -> None:
    out = _run(app, "match", "bateau", "ateau", "--table", "gâteau, râteau")
    assert out.startswith("rejected: rejected_closer_to_table (vs gâteau)")


def test_match_says_how_to_read_an_ambiguous_answer(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["match", "crayon", "le crayon"])
    assert result.exit_code == 2
    assert "both the category key 'crayon'" in result.output and "answer_kind" in result.output
    assert _run(app, "match", "crayon", "le crayon", "--as", "word").startswith("accepted: exact")
    assert _run(app, "match", "crayon", "crayon de couleur", "--as", "key").startswith("accepted: exact")
    result = CliRunner().invoke(app, ["match", "chat", "chat", "--as", "key"])
    assert result.exit_code == 2 and "unknown category key 'chat'" in result.output


def test_vocab_words_formats(app: typer.Typer) -> None:
    table = _run(app, "vocab")
    assert "le chat" in table and "les tongs" in table
    rows = list(csv.DictReader(io.StringIO(_run(app, "vocab", "words", "--format", "csv"))))
    assert len(rows) == 345 and {r["category"] for r in rows} >= {"cat", "The Eiffel Tower"}
    assert {r["category"]: r["everyday"] for r in rows}["television"] == "TV"
    words = json.loads(_run(app, "vocab", "words", "--format", "json"))
    assert len(words) == 345 and {w["difficulty"] for w in words} == {1, 2, 3, 4}


def test_vocab_decks_export(app: typer.Typer) -> None:
    kontour = json.loads(_run(app, "vocab", "kontour", "--format", "json"))
    assert len(kontour) >= 80 and set(kontour[0]) == {
        "id",
        "top_blue",
        "top_orange",
        "bottom_blue",
        "bottom_orange",
    }
    picto = list(csv.DictReader(io.StringIO(_run(app, "vocab", "pictomania", "--format", "csv"))))
    assert len(picto) >= 60 and all(r["7"] for r in picto)


def test_vocab_rejects_unknown_choice(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["vocab", "dominoes"])
    assert result.exit_code != 0
