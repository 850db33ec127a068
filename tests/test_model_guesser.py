"""Training end to end (tiny), checkpoints, ``Guesser`` and live sessions, DDP on two CPU processes."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from griffon.launch import patient
from model import CheckpointError, DrawingError, Guess, Guesser
from model.network import REGISTRY, create_model
from tests.conftest import FIXTURE_WORDS, REPO, shape
from training.train import weight_average


def test_every_registered_architecture_runs_forward_and_backward() -> None:
    small = {"widths": (8, 16), "dropout": 0.1}
    kwargs = {  # the public models read 28 × 28 and name their classes; a committee names its members
        "public": {"source": "doodlenet", "classes": ["cat", "dog", "car", "bus", "sun", "key", "eye"]},
        "committee": {"members": [{"name": "plain", "kwargs": small}, {"name": "resnet", "kwargs": small}]},
    }
    for name in REGISTRY:
        network = create_model(name, in_channels=1, num_classes=7, **kwargs.get(name, small))
        logits = network(torch.rand(2, 1, 28, 28))
        assert logits.shape == (2, 7)
        logits.sum().backward()
        assert all(p.grad is not None for p in network.parameters())
    with pytest.raises(ValueError, match="unknown architecture"):
        create_model("transformer")


def test_tiny_training_writes_a_self_describing_checkpoint(tiny_checkpoint: Path) -> None:
    payload = torch.load(tiny_checkpoint, weights_only=True)
    assert payload["classes"] == list(FIXTURE_WORDS)
    assert payload["architecture"]["name"] == "resnet"
    assert payload["input_contract"]["raster"]["size"] == 32
    assert payload["training"]["epochs"] == 12 and "augment" in payload["training"]
    assert 0.0 <= payload["metrics"]["full_top1"] <= 1.0
    card = (tiny_checkpoint.parent / "MODEL_CARD.md").read_text()
    assert "CC BY 4.0" in card and "Kontour" in card
    last = json.loads((tiny_checkpoint.parent / "train_log.json").read_text())[-1]
    assert payload["training"]["ema"] == 0.9  # the averaged weights were shipped, the raw ones logged
    assert 0.0 <= last["raw_full_top1"] <= 1.0 and last["full_top1"] == payload["metrics"]["full_top1"]


def test_weight_average_is_an_exponential_moving_average() -> None:
    network = torch.nn.Linear(2, 1)
    averaged = weight_average(network, 0.75)
    assert averaged is not None and weight_average(network, 0.0) is None
    with torch.no_grad():
        network.weight.fill_(4.0)
    averaged.update_parameters(network)  # the first update copies
    with torch.no_grad():
        network.weight.fill_(8.0)
    averaged.update_parameters(network)
    assert torch.allclose(averaged.module.weight, torch.full((1, 2), 0.75 * 4.0 + 0.25 * 8.0))
    with pytest.raises(ValueError, match="ema must be in"):
        weight_average(network, 1.5)


def test_tiny_model_learns_the_fixture_shapes(tiny_checkpoint: Path) -> None:
    guesser = Guesser.load(tiny_checkpoint)
    rng = np.random.default_rng(123)
    hits = sum(guesser.guess(shape(word, rng), top_k=1)[0].label == word for word in FIXTURE_WORDS * 5)
    assert hits >= 14  # of 20, chance is 5


def test_guess_contract(tiny_checkpoint: Path) -> None:
    guesser = Guesser.load(tiny_checkpoint)
    drawing = shape("square", np.random.default_rng(5))
    guesses = guesser.guess(drawing, top_k=3)
    assert len(guesses) == 3 and all(isinstance(g, Guess) for g in guesses)
    assert [g.prob for g in guesses] == sorted((g.prob for g in guesses), reverse=True)
    every = guesser.probabilities(drawing)
    assert set(every) == set(FIXTURE_WORDS) and sum(every.values()) == pytest.approx(1.0, abs=1e-5)
    restricted = guesser.guess(drawing, top_k=5, candidates=["circle", "line"])
    assert {g.label for g in restricted} == {"circle", "line"}
    assert sum(g.prob for g in restricted) == pytest.approx(1.0, abs=1e-5)
    ratio = every["circle"] / every["line"]
    assert restricted[0].prob / restricted[1].prob == pytest.approx(max(ratio, 1 / ratio), rel=1e-3)
    # 0–255 coordinates give the same answer as canvas pixels
    scaled = [[[x / 3 for x in s[0]], [y / 3 for y in s[1]]] for s in drawing]
    assert guesser.guess(scaled, top_k=1)[0].label == guesses[0].label
    with pytest.raises(ValueError, match="unknown candidate"):
        guesser.guess(drawing, candidates=["dragon"])
    with pytest.raises(DrawingError):
        guesser.guess([[[float("nan"), 1], [1, 2]]])
    batch = guesser.guess_batch([drawing, shape("circle", np.random.default_rng(1))], top_k=2)
    single = guesser.guess(drawing, top_k=2)
    assert len(batch) == 2 and [g.label for g in batch[0]] == [g.label for g in single]
    assert batch[0][0].prob == pytest.approx(single[0].prob, abs=1e-5)


def test_live_session_reuses_work(tiny_checkpoint: Path) -> None:
    guesser = Guesser.load(tiny_checkpoint)
    drawing = shape("triangle", np.random.default_rng(9))
    xs, ys, ts = drawing[0]
    strokes = [[xs[i : i + 2], ys[i : i + 2], ts[i : i + 2]] for i in range(len(xs) - 1)]
    session = guesser.session(top_k=4)
    assert session.guesses() == []
    history = [session.add_stroke(stroke) for stroke in strokes]
    assert session.inferences == len(strokes)
    whole = guesser.probabilities(strokes)
    live = session.probabilities()
    assert max(abs(whole[k] - live[k]) for k in whole) < 1e-4
    assert session.undo() == history[-2]
    assert session.inferences == len(strokes)  # undo costs no inference
    session.clear()
    assert session.guesses() == [] and session.stroke_count == 0
    with pytest.raises(DrawingError):
        session.add_stroke([[1, 2], [float("inf"), 3]])
    assert session.add_stroke([[5], [5]])  # a lone dot is accepted and gives (uniform) guesses


def test_load_rejects_tampered_or_mismatched_checkpoints(tiny_checkpoint: Path, tmp_path: Path) -> None:
    payload = torch.load(tiny_checkpoint, weights_only=True)
    payload["classes"] = list(reversed(payload["classes"]))
    tampered = tmp_path / "tampered.pt"
    torch.save(payload, tampered)
    with pytest.raises(CheckpointError, match="fingerprint"):
        Guesser.load(tampered)
    with pytest.raises(CheckpointError, match="class list does not match"):
        Guesser.load(tiny_checkpoint, expected_classes=["cat", "dog"])
    with pytest.raises(CheckpointError, match="no checkpoint"):
        Guesser.load(tmp_path / "missing.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot read"):
        Guesser.load(junk)


def test_train_help_lists_every_setting() -> None:
    from dataclasses import fields

    from training.augment import AugmentConfig
    from training.settings import PRESETS_DIR, SequenceConfig, TrainConfig

    command = [sys.executable, "-m", "training.train", "--help"]
    out = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=True).stdout
    listed = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", out))
    recorded = {"command"}  # what parse_config records of the run, not a setting
    names = {item.name for config in (TrainConfig, SequenceConfig) for item in fields(config)} - recorded
    settings = {f"--{name.replace('_', '-')}" for name in names}
    assert len(fields(TrainConfig)) - len(recorded) > 30 and len(fields(SequenceConfig)) - len(recorded) > 20
    # every setting of both networks has its flag, and nothing else
    assert settings | {"--preset", "--network", "--help"} == listed
    keys = " ".join(out.split())  # argparse wraps long help lines
    for item in fields(AugmentConfig):  # the --augment JSON keys, with their defaults
        assert f"{item.name}={item.default}" in keys
    assert all(path.stem in keys for path in PRESETS_DIR.glob("*.yaml"))  # the presets are named


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_ddp_training_with_two_cpu_processes(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    """Two processes train one model, distilled from an int8 teacher whose copy rank 0 makes first."""
    from model.runtime import int8_path

    teacher = tmp_path / "teacher.pt"
    teacher.write_bytes(tiny_checkpoint.read_bytes())
    torchrun = Path(sys.executable).parent / "torchrun"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [
        str(torchrun), "--nproc_per_node=2", f"--master_port={free_port()}", "-m", "training.train",
        "--preset", "tiny",
        "--data", str(fixture_data), "--categories", "", "--out", str(tmp_path / "ddp"),
        "--cache", str(tmp_path / "cache"), "--epochs", "2",
        "--teacher", str(teacher), "--teacher-backend", "onnx-int8",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=patient(240))
    assert result.returncode == 0, result.stderr[-2000:]
    metrics = json.loads((tmp_path / "ddp" / "metrics.json").read_text())
    assert metrics["epochs_run"] == 2
    student = Guesser.load(tmp_path / "ddp" / "model.pt")
    assert student.labels == list(FIXTURE_WORDS)
    assert student.metadata["training"]["teacher_backend"] == "onnx-int8"
    assert Guesser.load(teacher, backend="onnx-int8").backend == "onnx-int8"  # made, and fresh
    assert int8_path(teacher).is_file()
