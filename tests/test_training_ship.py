"""`griffon model ship`: the tiny checkpoints shipped into a temporary folder, with their model card,
int8 copy and class list, checked; a tampered checkpoint or a failed check changes nothing there."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import torch
import typer
from typer.testing import CliRunner

from model import Guesser
from model.checkpoint import CheckpointError
from model.guesser import DEFAULT_WEIGHTS
from tests.test_training_teachers import flat_teacher
from training import ship as shipping
from training.cli import register
from training.teachers import TEACHER_NAMES


@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def ship(cli: typer.Typer, source: Path, dest: Path, data: Path, cache: Path, *more: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["model", "ship", str(source), "--dest", str(dest), "--data", str(data), "--cache", str(cache),
              *more]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_a_two_view_checkpoint_is_shipped_with_its_card_int8_copy_and_classes(
    cli: typer.Typer, two_view_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "weights"
    labels = Guesser.load(two_view_checkpoint, backend="torch").labels
    for seed, name in enumerate(TEACHER_NAMES):  # two stand-in teachers that know the model's classes
        flat_teacher(tmp_path / "teachers" / name, labels, seed)
    code, output = ship(cli, two_view_checkpoint, dest, fixture_data, tmp_path / "cache",
                        "--teachers", str(tmp_path / "teachers"))
    assert code == 0, output
    assert sorted(digests(dest)) == [
        "MODEL_CARD.md", "categories.txt", "griffon-default.float.onnx", "griffon-default.int8.onnx",
        "griffon-default.members.onnx", "griffon-default.pt", "griffon-default.serving.json",
    ]  # fmt: skip
    shipped = dest / "griffon-default.pt"
    assert shipped.read_bytes() == two_view_checkpoint.read_bytes()  # a copy, byte for byte
    served = Guesser.load(shipped)  # as the service loads it: from the bundle made of these weights
    assert served.backend == "onnx-int8" and served.member is not None and served.network is None
    assert (dest / "categories.txt").read_text().splitlines() == served.labels
    card = (dest / "MODEL_CARD.md").read_text()
    assert f"Guesses which of {len(served.labels)} Quick, Draw! categories" in card
    assert "**Architecture.** `resnet`" in card and "A **two-view model**" in card
    assert "`griffon model attach`" in card and "`griffon train --preset tiny" in card
    assert f"shipped {two_view_checkpoint} → {shipped}" in output
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() in output
    assert "int8 copy: top-1 as the float reference on" in output and "served back-end onnx-int8" in output
    assert not list(dest.glob(".ship-*"))  # the staging folder is gone
    rows = {line.split(" | ")[0].strip("| "): line.strip("| ").split(" | ")[1:]
            for line in card.splitlines() if line.startswith("| ") and line.count(" | ") == 6}
    whole, raster = rows["this model"], rows["its raster network alone"]
    assert {"teacher: doodlenet", "teacher: quickdraw-resnet", "the teachers' geometric mean"} <= set(rows)
    metrics = torch.load(shipped, weights_only=True)["metrics"]
    assert whole[0] == f"{100 * metrics['full_top1']:.1f}"  # the card's first table, read again
    gain = [line for line in card.splitlines() if "over the raster network alone, in points" in line][0]
    assert abs(float(gain.split(": ")[1].split(" top-1")[0]) - (float(whole[0]) - float(raster[0]))) <= 0.11
    assert "The teachers' geometric mean, against this model, in points:" in card
    confidence = r"a mean top-1 confidence of (0\.\d\d|1\.00) for ([\d.]+) % right \(([a-z-]+)"
    calibrated = re.search(confidence, card)
    assert calibrated is not None and calibrated[2] == whole[0]  # whole drawings, as in the table
    gap = float(calibrated[1]) - float(whole[0]) / 100
    kind = "under-confident" if gap < -0.02 else "over-confident" if gap > 0.02 else "about"
    assert calibrated[3] == kind


def test_a_run_folder_ships_its_most_finished_checkpoint(tiny_checkpoint: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "model.pt").write_bytes(tiny_checkpoint.read_bytes())
    assert shipping.resolve(run) == run / "model.pt"
    (run / "calibrated.pt").write_bytes(tiny_checkpoint.read_bytes())
    assert shipping.resolve(run) == run / "calibrated.pt"
    (run / "two-view.pt").write_bytes(tiny_checkpoint.read_bytes())
    assert shipping.resolve(run) == run / "two-view.pt"
    assert shipping.resolve(run / "model.pt") == run / "model.pt"  # a file is itself
    (tmp_path / "empty").mkdir()
    with pytest.raises(shipping.ShipError, match="holds none of two-view.pt, calibrated.pt, model.pt"):
        shipping.resolve(tmp_path / "empty")


def test_a_tampered_checkpoint_or_a_failed_check_leaves_the_shipped_files_as_they_were(
    cli: typer.Typer, tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dest, cache = tmp_path / "weights", tmp_path / "cache"
    code, output = ship(cli, tiny_checkpoint, dest, fixture_data, cache)
    assert code == 0, output
    assert "raster only" in output and Guesser.load(dest / "griffon-default.pt").backend == "onnx-int8"
    shipped = digests(dest)
    assert "griffon-default.serving.json" in shipped and "griffon-default.members.onnx" not in shipped
    before = digests(dest)
    payload = torch.load(tiny_checkpoint, weights_only=True)
    payload["classes"] = payload["classes"][::-1]  # the answers would name the wrong categories
    tampered = tmp_path / "tampered.pt"
    torch.save(payload, tampered)
    code, output = ship(cli, tampered, dest, fixture_data, cache)
    assert code == 1 and "error:" in output and "fingerprint mismatch" in output
    assert digests(dest) == before
    code, output = ship(cli, tmp_path / "missing.pt", dest, fixture_data, cache)
    assert code == 1 and f"error: no checkpoint at {tmp_path / 'missing.pt'}" in output
    monkeypatch.setattr(shipping, "MIN_INT8_AGREEMENT", 1.01)  # no int8 copy can pass: the check refuses
    code, output = ship(cli, tiny_checkpoint, dest, fixture_data, cache)
    assert code == 1 and "the int8 copy of" in output and "not shipped" in output
    assert digests(dest) == before and not list(dest.glob(".ship-*"))


def test_only_ship_writes_into_model_weights(tmp_path: Path) -> None:
    """The int8 export and the model card refuse the shipped folder: `griffon model ship` is its one door."""
    from training.export import main as export_main
    from training.model_card import main as card_main

    shipped = DEFAULT_WEIGHTS
    before = {path.name: path.stat().st_mtime_ns for path in shipped.parent.iterdir()}
    with pytest.raises(CheckpointError, match="griffon model ship"):
        export_main(["--checkpoint", str(shipped)])
    with pytest.raises(CheckpointError, match="griffon model ship"):
        export_main(["--checkpoint", str(tmp_path / "x.pt"), "--out", str(shipped.parent / "x.int8.onnx")])
    with pytest.raises(CheckpointError, match="griffon model ship"):
        card_main(["--model", str(shipped), "--store"])
    assert {path.name: path.stat().st_mtime_ns for path in shipped.parent.iterdir()} == before
