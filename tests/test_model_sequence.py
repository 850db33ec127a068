"""The stroke-sequence member at inference (`model.sequence`): its features, padding, exact ONNX form."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from model.sequence import FEATURES, StrokeSequenceNet, export_member_onnx, featurize, pad_sequences


def probabilities(network: StrokeSequenceNet, sequences: list[np.ndarray]) -> np.ndarray:
    """The packed PyTorch network's probabilities for featurized drawings, padded together."""
    x, lengths = pad_sequences(sequences)
    with torch.inference_mode():
        return torch.softmax(network.eval()(x, lengths), dim=1).numpy()


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
    alone = probabilities(network, [short])
    padded = probabilities(network, [short, long])
    assert np.allclose(alone[0], padded[0], atol=1e-5)
    assert not np.allclose(padded[0], padded[1], atol=1e-3)


def test_the_onnx_member_gives_the_packed_network_s_answers_on_a_padded_batch(tmp_path: Path) -> None:
    torch.manual_seed(0)
    network = StrokeSequenceNet(5).eval()
    rng = np.random.default_rng(0)
    drawings = [[rng.uniform(0, 255, (n, 2)), rng.uniform(0, 255, (3, 2))] for n in (2, 9, 30, 4)]
    expected = probabilities(network, [featurize(d) for d in drawings])
    path = export_member_onnx(network, tmp_path / "member.onnx")
    x, lengths = pad_sequences([featurize(d) for d in drawings])
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {"sequences": x.numpy(), "lengths": lengths.numpy()})[0]
    assert got.shape == (4, 5)
    assert np.allclose(got, expected, atol=1e-5)
    assert not np.allclose(expected[0], expected[1], atol=1e-3)  # the drawings do get different answers
    alone = featurize(drawings[2])
    one = session.run(None, {"sequences": alone[None], "lengths": np.array([len(alone)])})[0]
    assert np.allclose(one[0], expected[2], atol=1e-5)  # batch 1, unpadded: the live path
