"""The AI players with the real shipped recognizer (skipped, with the reason, without weights)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from games.ai import ShippedLineDrawings
from games.ai.drawer import fit_canvas
from games.ai.lines import to_kontour_lines
from model.strokes import straight_lines

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "model" / "weights"
HAS_WEIGHTS = WEIGHTS_DIR.is_dir() and any(WEIGHTS_DIR.glob("*.pt"))
pytestmark = pytest.mark.skipif(
    not HAS_WEIGHTS, reason=f"no shipped weights file in {WEIGHTS_DIR} (train the model first)"
)
TOP_K = 3  # "recognised": among the first words an AI guesser would say


@pytest.fixture(scope="module")
def guesser():
    from model import Guesser

    return Guesser.load()


def table_candidates(labels: list[str]) -> list[str]:
    """The Kontour table's candidates: every word of the deck, plus the shipped drawings' words."""
    words = set(ShippedLineDrawings().keys())
    try:
        import vocab

        words |= {w for card in vocab.kontour_deck() for w in card.words}
    except ImportError:
        words |= set(labels)
    return sorted(words & set(labels))


def test_every_shipped_line_drawing_is_recognised_by_the_shipped_model(guesser) -> None:
    shipped = ShippedLineDrawings()
    candidates = table_candidates(guesser.labels)
    missed = {}
    for key in sorted(shipped.keys()):
        assert key in guesser.labels, f"{key} is not a label of the shipped model"
        drawing = to_kontour_lines(fit_canvas(shipped.drawings(key)[0]), 15, straight_lines)
        ranked = [g.label for g in guesser.guess(drawing, top_k=TOP_K, candidates=candidates)]
        if key not in ranked:
            missed[key] = ranked
    assert not missed, f"not in the top {TOP_K} of {len(candidates)} candidates: {missed}"


@pytest.mark.slow
@pytest.mark.parametrize("game", ["kontour", "pictomania"])
def test_one_full_simulated_game_with_the_real_model(game: str) -> None:
    from griffon.cli import app

    result = CliRunner().invoke(app, ["simulate", game, "-n", "1", "--seed", "3", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    summary = report["summary"]
    if game == "kontour":
        assert summary["turns"] >= 3
        assert summary["find_rate"] > 0.1
        assert sum(report["scores"][0].values()) > 0
    else:
        assert summary["rounds"] == 5
        assert summary["guess_rate"] > 0.2
        assert summary["accuracy"] > 0.3
