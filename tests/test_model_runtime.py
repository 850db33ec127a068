"""Inference back-ends: the shipped int8 ONNX copy, the float ONNX export, the torch reference, and
how a missing, stale or corrupt int8 file is handled."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from model import CheckpointError, DrawingError, Guesser
from model.guesser import CHUNK, DEFAULT_WEIGHTS, NEAR_TIE, Views, near_ties
from model.runtime import BACKEND_ENV, int8_path
from tests.conftest import FIXTURE_WORDS, REPO, shape


@pytest.fixture(scope="module")
def shipped_backends() -> dict[str, Guesser]:
    return {name: Guesser.load(backend=name) for name in ("torch", "onnx", "onnx-int8")}


def drawings(count: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [shape(FIXTURE_WORDS[i % len(FIXTURE_WORDS)], rng) for i in range(count)]


def test_shipped_weights_run_on_the_int8_copy_made_from_them() -> None:
    assert int8_path(DEFAULT_WEIGHTS).is_file()
    assert Guesser.load().backend == "onnx-int8"


def test_back_ends_agree_with_the_float_reference(shipped_backends: dict[str, Guesser]) -> None:
    views = [shipped_backends["torch"].prepare_views(d) for d in drawings(48)]
    probs = {name: g.probabilities_from_views(views) for name, g in shipped_backends.items()}
    assert all(p.shape == (48, 345) for p in probs.values())
    assert np.allclose(probs["onnx"].sum(axis=1), 1.0, atol=1e-5)
    assert np.abs(probs["onnx"] - probs["torch"]).max() < 1e-4  # the same float networks
    int8_top1 = probs["onnx-int8"].argmax(1)
    assert (int8_top1 == probs["torch"].argmax(1)).mean() >= 0.9
    assert np.abs(probs["onnx-int8"] - probs["torch"]).sum(axis=1).mean() < 0.3


def test_near_ties_are_the_rows_whose_two_best_classes_are_close() -> None:
    gap = np.exp(NEAR_TIE)
    probs = np.array(
        [[0.5, 0.5 / gap * 1.01, 0.0], [0.6, 0.6 / gap * 0.99, 0.0], [0.2, 0.1, 0.7], [1.0, 0.0, 0.0]]
    )
    assert near_ties(probs).tolist() == [True, False, False, False]
    assert near_ties(probs, gap=np.inf).all() and not near_ties(probs, gap=0.0).any()


def test_int8_near_ties_are_answered_by_the_float_network(shipped_backends: dict[str, Guesser]) -> None:
    reference, served = shipped_backends["torch"], shipped_backends["onnx-int8"]
    # rasters blended from one drawing into another: the answer changes on the way, through near ties
    ends = [reference.prepare_views(d) for d in drawings(8, seed=3)]
    views = [
        Views((a * x.image + (1 - a) * y.image).astype(np.float32), x.sequence)
        for x, y in itertools.pairwise(ends)
        for a in np.linspace(0, 1, 25)
    ]
    wanted = reference.probabilities_from_views(views)
    cases = drawings(2 * CHUNK + 5, seed=3)
    try:
        served.near_tie = 0.0  # no re-check: the int8 network alone
        rounded = served.probabilities_from_views(views)
        served.near_tie = np.inf  # every answer re-checked: the float reference's, on every path
        assert np.allclose(served.probabilities_from_views(views), wanted, atol=1e-5)
        batched = served.guess_batch(cases, top_k=2)  # chunks pipelined on the network's thread
        alone = reference.guess_batch(cases, top_k=2)
        assert [[g.label for g in row] for row in batched] == [[g.label for g in row] for row in alone]
        assert [g.prob for row in batched for g in row] == pytest.approx(
            [g.prob for row in alone for g in row], abs=1e-5
        )
    finally:
        served.near_tie = NEAR_TIE
    close = near_ties(rounded)
    assert close.any() and not close.all()
    got = served.probabilities_from_views(views)
    assert np.allclose(got[close], wanted[close], atol=1e-5)  # the near ties: the float answer
    assert np.array_equal(got[~close], rounded[~close])  # the rest: the int8 answer, untouched
    assert (got.argmax(1) != wanted.argmax(1)).sum() <= (rounded.argmax(1) != wanted.argmax(1)).sum()


def test_live_session_stage_and_commit_on_the_int8_path(shipped_backends: dict[str, Guesser]) -> None:
    guesser = shipped_backends["onnx-int8"]
    stroke = drawings(1)[0][0]
    batched = guesser.session(top_k=3)
    views = batched.stage(stroke)
    spec = guesser.spec
    assert views is not None and (views.sequence is not None) == (guesser.member is not None)
    assert views.image.shape == (len(spec.channels), spec.size, spec.size)
    staged = batched.commit(guesser.probabilities_from_views([views, views])[0])
    for other in (guesser.session(top_k=3).add_stroke(stroke), guesser.guess([stroke], top_k=3)):
        assert [g.label for g in staged] == [g.label for g in other]
        assert [g.prob for g in staged] == pytest.approx([g.prob for g in other], abs=1e-5)


def copy_checkpoint(source: Path, folder: Path) -> Path:
    target = folder / "model.pt"
    shutil.copy(source, target)
    return target


def test_an_int8_file_of_another_checkpoint_is_never_used(tiny_checkpoint: Path, tmp_path: Path) -> None:
    checkpoint = copy_checkpoint(tiny_checkpoint, tmp_path)
    shutil.copy(int8_path(DEFAULT_WEIGHTS), int8_path(checkpoint))  # stale: made from the shipped weights
    assert Guesser.load(checkpoint).backend == "onnx"  # auto: float export at load instead
    with pytest.raises(CheckpointError, match="another checkpoint.*python -m training.export"):
        Guesser.load(checkpoint, backend="onnx-int8")


def test_a_corrupt_or_missing_int8_file(tiny_checkpoint: Path, tmp_path: Path) -> None:
    checkpoint = copy_checkpoint(tiny_checkpoint, tmp_path)
    with pytest.raises(CheckpointError, match="does not exist"):
        Guesser.load(checkpoint, backend="onnx-int8")
    int8_path(checkpoint).write_bytes(b"not an onnx model")
    assert Guesser.load(checkpoint).backend == "onnx"
    with pytest.raises(CheckpointError, match="cannot read"):
        Guesser.load(checkpoint, backend="onnx-int8")


def test_backend_names_and_the_environment_default(
    tiny_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(CheckpointError, match="unknown back-end 'gpu'"):
        Guesser.load(tiny_checkpoint, backend="gpu")
    monkeypatch.setenv(BACKEND_ENV, "torch")
    assert Guesser.load(tiny_checkpoint).backend == "torch"
    monkeypatch.setenv(BACKEND_ENV, "fast")
    with pytest.raises(CheckpointError, match=BACKEND_ENV):
        Guesser.load(tiny_checkpoint)


def test_export_command_makes_a_matching_int8_copy(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    checkpoint = copy_checkpoint(tiny_checkpoint, tmp_path)
    command = [sys.executable, "-m", "training.export", "--checkpoint", str(checkpoint)]
    command += ["--data", str(fixture_data), "--drawings", "48"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=True, env=env)
    assert "calibrated on 48 training-split drawings" in out.stdout
    quantized = Guesser.load(checkpoint)
    assert quantized.backend == "onnx-int8"
    reference = Guesser.load(checkpoint, backend="torch")
    sample = drawings(40, seed=5)
    agree = [quantized.guess(d, top_k=1)[0].label == reference.guess(d, top_k=1)[0].label for d in sample]
    assert np.mean(agree) >= 0.9
    images = np.stack([reference.prepare(d) for d in sample])
    quantized.near_tie = np.inf  # a raster-only model's answers re-checked in float: the reference's
    wanted = reference.probabilities_from_images(images)
    assert np.allclose(quantized.probabilities_from_images(images), wanted, atol=1e-5)
    quantized.near_tie = 0.0  # none re-checked: int8 rounding shows
    assert not np.allclose(quantized.probabilities_from_images(images), wanted, atol=1e-5)
    payload = torch.load(checkpoint, weights_only=True)
    payload["temperature"] = 2.0  # recalibrated: the same weights, the copy stays valid
    torch.save(payload, checkpoint)
    assert Guesser.load(checkpoint).backend == "onnx-int8"
    first = next(iter(payload["state_dict"]))
    payload["state_dict"][first] = payload["state_dict"][first] + 0.01  # new weights: the copy is stale
    torch.save(payload, checkpoint)
    assert Guesser.load(checkpoint).backend == "onnx"


def test_batches_longer_than_a_chunk_keep_their_order(shipped_backends: dict[str, Guesser]) -> None:
    guesser = shipped_backends["onnx-int8"]
    sample = drawings(CHUNK * 2 + 3, seed=9)
    batched = guesser.guess_batch(sample, top_k=2)
    assert len(batched) == len(sample)
    alone = [guesser.guess(d, top_k=2) for d in sample]
    assert [[g.label for g in row] for row in batched] == [[g.label for g in row] for row in alone]
    # the member's GRU sums in another order in a batch: the same answers to float rounding
    probs = [g.prob for row in alone for g in row]
    assert [g.prob for row in batched for g in row] == pytest.approx(probs, abs=1e-5)
    with pytest.raises(DrawingError):
        guesser.guess_batch(sample[: CHUNK + 1] + [[[[1], [1]]]] + sample[:CHUNK])


def test_mirrored_test_time_augmentation_on_onnx_matches_torch(tiny_checkpoint: Path) -> None:
    sample = np.stack([Guesser.load(tiny_checkpoint, backend="torch").prepare(d) for d in drawings(6)])
    plain, mirrored = (
        {
            b: Guesser.load(tiny_checkpoint, backend=b, flip_tta=f).probabilities_from_images(sample)
            for b in ("torch", "onnx")
        }
        for f in (False, True)
    )
    assert np.abs(mirrored["onnx"] - mirrored["torch"]).max() < 1e-4
    assert np.abs(mirrored["onnx"] - plain["onnx"]).max() > 1e-3  # the mirror changed something


def test_without_onnx_runtime_auto_falls_back_to_torch(
    tiny_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    assert Guesser.load(tiny_checkpoint).backend == "torch"
    with pytest.raises(CheckpointError, match="needs onnxruntime"):
        Guesser.load(tiny_checkpoint, backend="onnx")
