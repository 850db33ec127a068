"""AI-vs-AI games through the real engines, with a fake recognizer that matches the shipped line
drawings (the only fake here: the model is tested in test_ai_model_*.py when weights exist)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from games.ai import AIKit, ShippedLineDrawings, load_level
from games.ai.drawer import MIN_LINE, fit_canvas
from games.ai.lines import to_kontour_lines
from games.simulator import PERSON, SimulationError, simulate_kontour, simulate_pictomania
from model.strokes import straight_lines

KIT = AIKit(ShippedLineDrawings(), straight_lines)


def _centered(lines: list) -> list:
    """Segments moved to the middle of the 255 canvas, as the AI drawer places its drawings."""
    xs = [x for s in lines for x in s[0]]
    ys = [y for s in lines for y in s[1]]
    dx, dy = (255 - max(xs) - min(xs)) / 2, (255 - max(ys) - min(ys)) / 2
    return [[[x + dx for x in s[0]], [y + dy for y in s[1]]] for s in lines]


class TemplateSource:
    """Recognises a drawing by how many of its segments lie on each shipped drawing's segments:
    the more of a template is drawn, the more probable its word (rises stroke by stroke)."""

    def __init__(self) -> None:
        shipped = ShippedLineDrawings()
        self.templates = {}
        for key in shipped.keys():
            lines = to_kontour_lines(fit_canvas(shipped.drawings(key)[0]), 15, straight_lines)
            lines = [s for s in lines if math.dist((s[0][0], s[1][0]), (s[0][1], s[1][1])) >= MIN_LINE]
            self.templates[key] = [(s[0][0], s[1][0], s[0][1], s[1][1]) for s in _centered(lines)]

    @staticmethod
    def _on(segment: tuple, template: list[tuple]) -> bool:
        x0, y0, x1, y1 = segment
        for a0, b0, a1, b1 in template:
            if (math.dist((x0, y0), (a0, b0)) < 4 and math.dist((x1, y1), (a1, b1)) < 4) or (
                math.dist((x0, y0), (a1, b1)) < 4 and math.dist((x1, y1), (a0, b0)) < 4
            ):
                return True
        return False

    def probabilities(self, drawing: Any, candidates: Sequence[str] | None = None) -> dict:
        keys = list(candidates) if candidates is not None else sorted(self.templates)
        segments = []
        for stroke in drawing:
            xs, ys = stroke[0], stroke[1]
            segments += [(xs[i], ys[i], xs[i + 1], ys[i + 1]) for i in range(len(xs) - 1)]
        scores = {}
        for key in keys:
            template = self.templates.get(key, [])
            hits = sum(self._on(s, template) for s in segments)
            scores[key] = math.exp(6.0 * hits / max(1, len(template)) + 0.3 * hits)
        total = sum(scores.values())
        return {k: v / total for k, v in scores.items()}


@pytest.fixture(scope="module")
def source() -> TemplateSource:
    return TemplateSource()


def test_kontour_simulation_plays_whole_games(source: TemplateSource) -> None:
    report = simulate_kontour(source, KIT, load_level("normal"), games=1, seed=1)
    summary = report.summary()
    assert summary["turns"] >= 5
    assert summary["find_rate"] > 0.5
    assert 0 < summary["time_to_find_mean_s"] < 30
    assert all(t.strokes <= 15 for t in report.turns)
    game = report.scores[0]
    assert report.winners[0] and max(game.values()) == game[report.winners[0][0]]
    # the engine's scoreboard matches the turns: each finder 1, the drawer 1 (blue) or 2 (orange)
    expected = sum(
        len(t.finders) + (2 if t.color == "orange" else 1)
        for t in report.turns
        if t.found and not t.tiebreak
    )
    assert sum(game.values()) == expected


def test_kontour_simulation_is_deterministic(source: TemplateSource) -> None:
    level = load_level("hard")
    a = simulate_kontour(source, KIT, level, games=1, seed=5).to_dict()
    b = simulate_kontour(source, KIT, level, games=1, seed=5).to_dict()
    assert a == b


def test_pictomania_simulation_plays_five_rounds(source: TemplateSource) -> None:
    report = simulate_pictomania(source, KIT, load_level("normal"), games=1,
                                 seed=2, players=4)
    summary = report.summary()
    assert summary["rounds"] == 5
    assert summary["guess_rate"] > 0.5
    assert summary["accuracy"] > 0.7
    assert sum(r["score"][p] for r in report.rounds for p in r["score"]) == sum(
        report.totals[0].values()
    )
    again = simulate_pictomania(source, KIT, load_level("normal"), games=1,
                                seed=2, players=4)
    assert again.to_dict() == report.to_dict()


def test_bad_arguments_raise(source: TemplateSource) -> None:
    with pytest.raises(SimulationError):
        simulate_kontour(source, KIT, load_level("easy"), players=1)


def test_a_scripted_person_draws_a_line_every_so_often_and_only_their_turns_are_measured(
    source: TemplateSource,
) -> None:
    """The AI guessers against a person who draws a line every 1.2 s: every reported turn is the
    person's, its lines came at that pace (a word found after k lines was found between the k-th
    line, at 1.2 k s, and the next one), the person never guesses, and a slower person is found
    later."""
    level = load_level("normal")
    report = simulate_kontour(source, KIT, level, games=3, seed=3, person_line_s=1.2)
    assert report.summary()["person_line_s"] == 1.2 and len(report.turns) >= 3
    assert all(t.drawer == PERSON and PERSON not in t.finders for t in report.turns)
    found = [t for t in report.turns if t.found_after_choice_s is not None]
    assert found
    for t in found:
        assert 1.2 * t.lines_at_find - 1e-6 <= t.found_after_choice_s
        assert t.lines_at_find == t.strokes or t.found_after_choice_s < 1.2 * (t.lines_at_find + 1)
    slow = simulate_kontour(source, KIT, level, games=3, seed=3, person_line_s=2.5)
    assert slow.summary()["time_to_find_after_choice_median_s"] > report.summary()[
        "time_to_find_after_choice_median_s"
    ]
    for bad in (0.0, -1.0, 31.0):
        with pytest.raises(SimulationError, match="person's line"):
            simulate_kontour(source, KIT, level, games=1, seed=3, person_line_s=bad)


def test_cli_reports_bad_level_and_missing_weights(tmp_path) -> None:
    from typer.testing import CliRunner

    from griffon.cli import app

    runner = CliRunner()
    bad_level = runner.invoke(app, ["simulate", "kontour", "--level", "expert"])
    assert bad_level.exit_code == 2
    assert "unknown AI level 'expert'" in bad_level.output
    missing = runner.invoke(
        app, ["simulate", "pictomania", "--weights", str(tmp_path / "none.pt")]
    )
    assert missing.exit_code == 2
    assert "cannot load the recognizer" in missing.output
    person = runner.invoke(app, ["simulate", "pictomania", "--person-line-s", "1.2"])
    assert person.exit_code == 2 and "Kontour only" in person.output


class Unreadable(TemplateSource):
    """Refuses drawings of one stroke, as the model refuses a first dot (a `ValueError`)."""

    def probabilities(self, drawing: Any, candidates: Sequence[str] | None = None) -> dict:
        if len(drawing) < 2:
            raise ValueError("the drawing has no extent (all points are the same)")
        return super().probabilities(drawing, candidates)


def test_unreadable_partial_drawings_are_skipped_not_fatal() -> None:
    report = simulate_pictomania(Unreadable(), KIT, load_level("hard"), seed=4)
    assert report.summary()["rounds"] == 5
    assert report.summary()["guess_rate"] > 0.5
