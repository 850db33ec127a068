"""Temperature scaling (training/calibrate.py): fitted on a band the model held out, or matched to a
calibrated reference model (a distilled student) without touching the validation split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from model import CheckpointError, Guesser
from tests.conftest import FIXTURE_WORDS, shape
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


def test_a_two_view_model_is_matched_through_the_temperature_of_its_average(
    two_view_checkpoint: Path, tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pair, reference = tmp_path / "pair.pt", tmp_path / "reference.pt"
    pair.write_bytes(two_view_checkpoint.read_bytes())
    reference.write_bytes(tiny_checkpoint.read_bytes())
    set_temperature(reference, 0.3, "by hand")  # a sharp reference: the pair (an average) must sharpen
    before = Guesser.load(pair, backend="torch")
    cache = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache")]
    main(["--model", str(pair), "--match", str(reference), *cache])
    said = json.loads(capsys.readouterr().out)
    after = Guesser.load(pair, backend="torch")
    assert after.pair_temperature == pytest.approx(said["temperature"]) and after.pair_temperature < 1.0
    assert after.temperature == before.temperature  # the raster network's own temperature is kept
    payload = torch.load(pair, weights_only=True)
    assert payload["metrics"]["pair_temperature_source"].startswith("matched on the dev band")
    target = Guesser.load(reference, backend="torch")
    rng = np.random.default_rng(2)
    drawings = [shape(word, rng) for word in FIXTURE_WORDS * 3]
    wanted = target.probabilities_from_views([target.prepare_views(d) for d in drawings])

    def cross_entropy(guesser: Guesser) -> float:
        got = guesser.probabilities_from_views([guesser.prepare_views(d) for d in drawings])
        return float(-(wanted * np.log(np.maximum(got, 1e-12))).sum(1).mean())

    assert cross_entropy(after) < cross_entropy(before)
