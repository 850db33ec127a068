"""Temperature scaling (training/calibrate.py): fitted on a band the model held out, or matched to a
calibrated reference model (a distilled student) without touching the validation split; written to a
new checkpoint, never over an input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from model import CheckpointError, Guesser
from tests.conftest import FIXTURE_WORDS, shape
from training.calibrate import fit_temperature, main, match_temperature, write_with_temperature


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
    # the same weights: the match must give 0.45 back
    write_with_temperature(tiny_checkpoint, reference, 0.45, "by hand")
    cache = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache")]
    main(["--model", str(student), "--match", str(reference), *cache])
    said = json.loads(capsys.readouterr().out)
    assert said["temperature"] == pytest.approx(0.45, abs=0.011)
    calibrated = tmp_path / "calibrated.pt"  # the default: beside the checkpoint it is for
    assert said["written_to"] == str(calibrated)
    assert Guesser.load(calibrated).temperature == pytest.approx(said["temperature"])
    assert student.read_bytes() == tiny_checkpoint.read_bytes()  # the input is left as it was
    source = torch.load(calibrated, weights_only=True)["metrics"]["temperature_source"]
    assert source.startswith("matched on the dev band")
    with pytest.raises(CheckpointError, match="held out 'val', not 'dev'"):
        main(["--model", str(student), "--split", "dev", *cache])


def test_a_two_view_model_is_matched_through_the_temperature_of_its_average(
    two_view_checkpoint: Path, tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pair, reference = two_view_checkpoint, tmp_path / "reference.pt"
    # a sharp reference: the pair (an average) must sharpen
    write_with_temperature(tiny_checkpoint, reference, 0.3, "by hand")
    before = Guesser.load(pair, backend="torch")
    cache = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache")]
    main(["--model", str(pair), "--match", str(reference), *cache, "--out", str(tmp_path / "two-view.pt")])
    said = json.loads(capsys.readouterr().out)
    after = Guesser.load(tmp_path / "two-view.pt", backend="torch")
    assert after.pair_temperature == pytest.approx(said["temperature"]) and after.pair_temperature < 1.0
    assert after.temperature == before.temperature  # the raster network's own temperature is kept
    assert Guesser.load(pair, backend="torch").pair_temperature == before.pair_temperature  # input kept
    payload = torch.load(tmp_path / "two-view.pt", weights_only=True)
    assert payload["metrics"]["pair_temperature_source"].startswith("matched on the dev band")
    target = Guesser.load(reference, backend="torch")
    rng = np.random.default_rng(2)
    drawings = [shape(word, rng) for word in FIXTURE_WORDS * 3]
    wanted = target.probabilities_from_views([target.prepare_views(d) for d in drawings])

    def cross_entropy(guesser: Guesser) -> float:
        got = guesser.probabilities_from_views([guesser.prepare_views(d) for d in drawings])
        return float(-(wanted * np.log(np.maximum(got, 1e-12))).sum(1).mean())

    assert cross_entropy(after) < cross_entropy(before)


def test_calibration_refuses_to_write_over_its_inputs(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    model, reference = tmp_path / "run" / "model.pt", tmp_path / "reference.pt"
    model.parent.mkdir()
    model.write_bytes(tiny_checkpoint.read_bytes())
    write_with_temperature(tiny_checkpoint, reference, 0.5, "by hand")
    before = {path: path.read_bytes() for path in (model, reference)}
    cache = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache")]
    for out in (model, reference, tmp_path / "run" / ".." / "run" / "model.pt"):
        with pytest.raises(CheckpointError, match="would write over its input"):
            main(["--model", str(model), "--match", str(reference), *cache, "--out", str(out)])
    applied = tmp_path / "run" / "calibrated.pt"  # --apply-to names the input whose default --out this is
    with pytest.raises(CheckpointError, match="would write over its input"):
        main(["--model", str(model), "--apply-to", str(applied), "--split", "val", *cache])
    with pytest.raises(CheckpointError, match="would write over its input"):
        write_with_temperature(model, model, 0.7, "by hand")
    assert {path: path.read_bytes() for path in (model, reference)} == before
    assert not applied.exists()


def test_match_takes_a_student_that_held_dev_out_and_refuses_one_that_does_not_say(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = tmp_path / "reference.pt"
    write_with_temperature(tiny_checkpoint, reference, 0.45, "by hand")
    cache = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache")]
    payload = torch.load(tiny_checkpoint, weights_only=True)
    for holdout, name in (("dev", "held-dev.pt"), (None, "unsaid.pt")):
        payload["training"] = {**payload["training"], "holdout": holdout}
        torch.save(payload, tmp_path / name)
    main(["--model", str(tmp_path / "held-dev.pt"), "--match", str(reference), *cache,
          "--out", str(tmp_path / "dev-calibrated.pt")])
    assert json.loads(capsys.readouterr().out)["temperature"] == pytest.approx(0.45, abs=0.011)
    with pytest.raises(CheckpointError, match="does not say it held the validation split out"):
        main(["--model", str(tmp_path / "unsaid.pt"), "--match", str(reference), *cache,
              "--out", str(tmp_path / "unsaid-calibrated.pt")])


def test_trained_on_fits_on_the_dev_band_the_model_trained_on_and_never_on_val(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache")]
    out = tmp_path / "fitted.pt"
    main(["--model", str(tiny_checkpoint), "--split", "dev", "--trained-on", *cache, "--out", str(out)])
    said = json.loads(capsys.readouterr().out)
    assert Guesser.load(out).temperature == pytest.approx(said["temperature"])
    source = torch.load(out, weights_only=True)["metrics"]["temperature_source"]
    assert source.endswith("which trained on it")
    for refused in (["--split", "val", "--trained-on"], ["--trained-on", "--match", str(tiny_checkpoint)]):
        with pytest.raises(CheckpointError, match="dev band only"):
            main(["--model", str(tiny_checkpoint), *refused, *cache, "--out", str(tmp_path / "no.pt")])
