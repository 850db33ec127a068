"""Temperature scaling (training/calibrate.py): fitted on a band the model held out, or matched to a
calibrated reference model (a distilled student) without touching the validation split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from model import CheckpointError, Guesser
from training.calibrate import fit_temperature, main, match_temperature, set_temperature


def test_fit_and_match_find_the_temperature_that_made_the_data() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = 4 * torch.randn(4000, 6, generator=generator)
    labels = torch.multinomial(torch.softmax(logits / 0.7, 1), 1, generator=generator).squeeze(1)
    assert fit_temperature(logits, labels) == pytest.approx(0.7, abs=0.06)
    assert match_temperature(logits, torch.softmax(logits / 1.6, 1)) == pytest.approx(1.6, abs=0.011)


def test_match_copies_a_reference_temperature_and_fit_refuses_a_band_the_model_trained_on(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    student, reference = tmp_path / "student.pt", tmp_path / "reference.pt"
    student.write_bytes(tiny_checkpoint.read_bytes())
    reference.write_bytes(tiny_checkpoint.read_bytes())
    set_temperature(reference, 0.45, "by hand")  # the same weights: the match must give 0.45 back
    cache = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache")]
    main(["--model", str(student), "--match", str(reference), *cache])
    said = json.loads(capsys.readouterr().out)
    assert said["temperature"] == pytest.approx(0.45, abs=0.011)
    assert Guesser.load(student).temperature == pytest.approx(said["temperature"])
    source = torch.load(student, weights_only=True)["metrics"]["temperature_source"]
    assert source.startswith("matched on the dev band")
    with pytest.raises(CheckpointError, match="held out 'val', not 'dev'"):
        main(["--model", str(student), "--split", "dev", *cache])


def test_a_two_view_model_is_not_calibrated_as_one_softmax(
    two_view_checkpoint: Path, tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    cache = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache")]
    with pytest.raises(CheckpointError, match="calibrate its raster network, then attach"):
        main(["--model", str(two_view_checkpoint), "--match", str(tiny_checkpoint), *cache])
