"""`griffon eval` end to end with small real checkpoints: reports written, compare mode, error paths.

The checkpoints are untrained (seeded random weights, written by ``model.checkpoint``): the CLI's
wiring does not need a good model, and training one would cost these tests minutes on a busy machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import typer
from typer.testing import CliRunner

from griffon.launch import patient
from model.checkpoint import save_checkpoint
from model.network import create_model
from model.raster import RasterSpec
from tests.conftest import FIXTURE_WORDS, REPO
from tests.test_eval_core import write_eval_folder
from training.cli import register

SECTIONS = ("headline", "strokes-curve", "confusions", "calibration", "categories", "latency", "data")
QUICK = ["--split", "all", "--workers", "0", "--latency-samples", "5", "--batch-size", "32"]


def write_checkpoint(path: Path, seed: int, channels: tuple[str, ...]) -> Path:
    """An untrained 'plain' CNN over the fixture words, as a real checkpoint file."""
    torch.manual_seed(seed)
    kwargs = {"widths": [4, 8], "dropout": 0.0}
    network = create_model("plain", in_channels=len(channels), num_classes=len(FIXTURE_WORDS), **kwargs)
    spec = RasterSpec(size=32, channels=channels)
    save_checkpoint(path, architecture="plain", architecture_kwargs=kwargs, classes=list(FIXTURE_WORDS),
                    spec=spec, state_dict=network.state_dict(), training={"command": "test"})  # fmt: skip
    return path


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("ckpt") / "a.pt", 1, ("ink",))


@pytest.fixture(scope="module")
def other_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("ckpt") / "b.pt", 2, ("ink", "order"))


@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def run(cli: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["eval", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_eval_writes_both_reports(
    cli: typer.Typer, tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    code, output = run(cli, "--model", str(tiny_checkpoint), "--data", str(fixture_data), "--out",
                       str(tmp_path), *QUICK)  # fmt: skip
    assert code == 0, output
    assert "top-1" in output and "wrote" in output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["schema"] == "griffon-eval-report/1"
    assert report["data"]["evaluated"] == 96 and report["data"]["categories"] == 4
    model = report["models"][0]
    assert model["path"] == str(tiny_checkpoint) and len(model["file_sha256"]) == 64
    head = model["metrics"]["headline"]
    assert 0.0 <= head["top1"] <= head["top3"] <= 1.0
    assert head["map3"] >= head["top1"]
    assert len(model["metrics"]["strokes_curve"]) == 10
    assert sum(c["count"] for c in model["metrics"]["per_category"].values()) == 96
    page = (tmp_path / "report.html").read_text()
    for section in SECTIONS:
        assert f'id="{section}"' in page
    assert page.count('<img class="plot" alt=') >= 4 and '<img class="plot" alt="strokes curve"' in page
    assert 'src="data:image/png;base64,' in page
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")


def test_eval_compare_mode(
    cli: typer.Typer, tiny_checkpoint: Path, other_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    code, output = run(cli, "--model", str(tiny_checkpoint), "--compare", str(other_checkpoint),
                       "--data", str(fixture_data), "--out", str(tmp_path), *QUICK)  # fmt: skip
    assert code == 0, output
    report = json.loads((tmp_path / "report.json").read_text())
    assert [m["name"] for m in report["models"]] == ["a", "b"]
    assert report["models"][1]["raster"]["channels"] == ["ink", "order"]  # each model its own rasters
    comparison = report["comparison"]
    heads = [m["metrics"]["headline"] for m in report["models"]]
    assert comparison["headline"]["top1"]["delta"] == pytest.approx(heads[1]["top1"] - heads[0]["top1"])
    agree = comparison["agreement"]
    assert sum(agree[k] for k in ("both_right", "only_a_right", "only_b_right", "both_wrong")) == 96
    assert agree["only_b_right"] - agree["only_a_right"] == round(96 * (heads[1]["top1"] - heads[0]["top1"]))
    page = (tmp_path / "report.html").read_text()
    assert 'id="agreement"' in page and "difference" in page and 'alt="categories that changed most"' in page


def test_compare_with_itself_has_no_difference(
    cli: typer.Typer, tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    code, output = run(cli, "--model", str(tiny_checkpoint), "--compare", str(tiny_checkpoint),
                       "--data", str(fixture_data), "--out", str(tmp_path), "--limit", "20",
                       *QUICK)  # fmt: skip
    assert code == 0, output
    report = json.loads((tmp_path / "report.json").read_text())
    assert [m["name"] for m in report["models"]] == ["A: a", "B: a"]
    assert report["comparison"]["headline"]["top1"]["delta"] == 0.0
    assert report["comparison"]["agreement"]["mcnemar_p"] is None


def test_unknown_categories(cli: typer.Typer, tiny_checkpoint: Path, tmp_path: Path) -> None:
    data = write_eval_folder(tmp_path / "data")  # circle, square and ladder: the model lacks ladder
    args = ["--model", str(tiny_checkpoint), "--data", str(data), "--out", str(tmp_path / "out"), *QUICK]
    code, output = run(cli, *args)
    assert code == 1
    assert "error: the data has 1 categories the model does not know: 'ladder'" in output
    assert "--skip-unknown" in output and not (tmp_path / "out" / "report.json").exists()
    code, output = run(cli, *args, "--skip-unknown")
    assert code == 0, output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["data"]["skipped_unknown"] == {"ladder": 6}


def test_bad_inputs(cli: typer.Typer, tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    code, output = run(cli, "--model", str(tmp_path / "none.pt"), "--data", str(fixture_data), "--out", out)
    assert code == 1 and "error: no checkpoint at" in output
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    code, output = run(cli, "--model", str(tmp_path / "junk.pt"), "--data", str(fixture_data), "--out", out)
    assert code == 1 and "error: cannot read checkpoint" in output
    code, output = run(cli, "--model", str(tiny_checkpoint), "--data", str(tmp_path / "nope"), "--out", out)
    assert code == 1 and "error: data folder does not exist" in output
    code, output = run(cli, "--model", str(tiny_checkpoint), "--data", str(fixture_data), "--split", "test",
                       "--out", out)  # fmt: skip
    assert code == 1 and "error: unknown split 'test'" in output
    code, output = run(cli, "--model", str(tiny_checkpoint), "--data", str(fixture_data), "--out", out,
                       "--batch-size", "0")  # fmt: skip
    assert code == 1 and "batch size" in output


def test_error_exit_without_traceback(fixture_data: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "griffon.cli", "eval", "--model", str(tmp_path / "missing.pt"),
               "--data", str(fixture_data), "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=patient(120))
    assert done.returncode == 1
    assert "error: no checkpoint at" in done.stderr and "Traceback" not in done.stderr
