"""The stroke-sequence member experiment (`training.sequence`) on the generated fixture folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from model import Guesser
from training.prepare import prepare_cached
from training.sequence import (
    FEATURES,
    StrokeSequenceNet,
    collate,
    compare,
    featurize,
    predict,
    train_member,
)


def test_featurize_reads_the_pen_path_in_order() -> None:
    first = np.array([[10.0, 10.0], [110.0, 10.0], [110.0, 60.0]])
    second = np.array([[10.0, 60.0], [60.0, 60.0]])
    seq = featurize([first, second])
    assert seq.shape == (5, FEATURES) and seq.dtype == np.float32
    assert np.allclose(seq[:, :2].min(axis=0), [-0.5, -0.25])  # centred, the longer side spans 1
    assert np.allclose(seq[:, :2].max(axis=0), [0.5, 0.25])
    assert seq[:, 4].tolist() == [1, 0, 0, 1, 0]  # stroke starts
    assert seq[:, 5].tolist() == [0, 0, 1, 0, 1]  # stroke ends
    assert seq[:, 6].tolist() == [0, 0, 0, 1, 1]  # stroke rank
    assert np.allclose(seq[1, 2:4], [4.0, 0.0])  # the step from the previous point (× 4)
    long = featurize([np.column_stack([np.arange(500.0), np.zeros(500)])], max_steps=40)
    assert long.shape == (40, FEATURES) and long[0, 4] == 1 and long[-1, 5] == 1


def test_padding_does_not_change_a_drawing_s_answer() -> None:
    torch.manual_seed(0)
    network = StrokeSequenceNet(4).eval()
    short = featurize([np.array([[0.0, 0.0], [50.0, 50.0], [90.0, 10.0]])])
    long = featurize([np.column_stack([np.linspace(0, 200, 30), np.sin(np.arange(30.0)) * 40])])
    alone = predict(network, [[np.array([[0.0, 0.0], [50.0, 50.0], [90.0, 10.0]])]])
    x, lengths, _ = collate([(short, 0), (long, 1)])
    with torch.inference_mode():
        padded = torch.softmax(network(x, lengths), dim=1).numpy()
    assert np.allclose(alone[0], padded[0], atol=1e-5)


def test_a_short_run_learns_the_fixture_shapes_and_is_compared(
    fixture_data: Path, tiny_checkpoint: Path, tmp_path: Path
) -> None:
    data = prepare_cached(fixture_data, tmp_path / "cache", None)
    network, log = train_member(data, minutes=0, epochs=6, per_class=24, batch_size=32, workers=0)
    assert len(log) == 6 and log[-1]["loss"] < log[0]["loss"]
    train = data.indices("train")
    probs = predict(network, [data.strokes(int(i)) for i in train])
    assert (np.argmax(probs, axis=1) == data.labels[train]).mean() > 0.6  # four classes: chance is 0.25
    results = compare(network, Guesser.load(tiny_checkpoint), data, "val")
    for name in ("sequence", "raster", "average"):
        assert 0.0 <= results[name]["full_top1"] <= 1.0 and results[name]["count"] == len(data.indices("val"))
    paired = results["paired"]
    assert paired["only_average"] >= 0 and paired["only_raster"] >= 0
