"""The stroke-sequence member at inference (`model.sequence`): its features, padding, exact ONNX form,
and a two-view model (raster network + member in one checkpoint) through `Guesser`."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from model import CheckpointError, Guesser, simplify_drawing, validate_drawing
from model.checkpoint import sequence_training
from model.sequence import (
    FEATURES,
    StrokeSequenceNet,
    featurize,
    load_member,
    member_onnx_bytes,
    pad_sequences,
    save_member,
)
from tests.conftest import FIXTURE_WORDS, shape
from training.sequence_loop import attach_member


def probabilities(network: StrokeSequenceNet, sequences: list[np.ndarray]) -> np.ndarray:
    """The PyTorch network's probabilities for featurized drawings, padded together."""
    x, lengths = pad_sequences(sequences)
    with torch.inference_mode():
        return torch.softmax(network.eval()(x, lengths), dim=1).numpy()


def packed_logits(network: StrokeSequenceNet, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The reference: the network's logits with its bidirectional GRU run on packed sequences."""
    h, mask = network.encode(x, lengths)
    packed = pack_padded_sequence(h, lengths, batch_first=True, enforce_sorted=False)
    out, _ = pad_packed_sequence(network.gru(packed)[0], batch_first=True, total_length=x.shape[1])
    return network.classify(out, mask, lengths)


def test_the_network_gives_packed_sequences_answers_and_gradients_on_padded_batches() -> None:
    torch.manual_seed(0)
    network = StrokeSequenceNet(6, width=16, hidden=12)
    x, lengths = torch.randn(5, 40, FEATURES), torch.tensor([40, 1, 17, 33, 2])
    labels = torch.tensor([0, 5, 2, 2, 1])
    gradients = []
    for run in (network, lambda x, lengths: packed_logits(network, x, lengths)):
        network.zero_grad()
        torch.manual_seed(1)  # the same dropout mask in both runs
        torch.nn.functional.cross_entropy(run(x, lengths), labels).backward()
        gradients.append({name: p.grad.clone() for name, p in network.named_parameters()})
    ours, reference = gradients
    assert all(torch.allclose(ours[name], reference[name], atol=1e-6) for name in ours)
    assert ours["gru.weight_hh_l0_reverse"].abs().sum() > 0  # the backward direction learns too
    network.eval()
    assert torch.allclose(network(x, lengths), packed_logits(network, x, lengths), atol=1e-5)


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


def test_the_onnx_member_gives_the_packed_network_s_answers_on_a_padded_batch() -> None:
    torch.manual_seed(0)
    network = StrokeSequenceNet(5).eval()
    rng = np.random.default_rng(0)
    drawings = [[rng.uniform(0, 255, (n, 2)), rng.uniform(0, 255, (3, 2))] for n in (2, 9, 30, 4)]
    x, lengths = pad_sequences([featurize(d) for d in drawings])
    with torch.inference_mode():
        expected = torch.softmax(packed_logits(network, x, lengths), dim=1).numpy()
    session = ort.InferenceSession(member_onnx_bytes([network]), providers=["CPUExecutionProvider"])
    got = session.run(None, {"sequences": x.numpy(), "lengths": lengths.numpy()})[0]
    assert got.shape == (4, 5)
    assert np.allclose(got, expected, atol=1e-5)
    assert not np.allclose(expected[0], expected[1], atol=1e-3)  # the drawings do get different answers
    alone = featurize(drawings[2])
    one = session.run(None, {"sequences": alone[None], "lengths": np.array([len(alone)])})[0]
    assert np.allclose(one[0], expected[2], atol=1e-5)  # batch 1, unpadded: the live path


# -- a two-view model: the raster network and a member, one checkpoint ---------------------------
@pytest.fixture(scope="module")
def two_view(two_view_checkpoint: Path) -> tuple[Path, StrokeSequenceNet]:
    """The two-view checkpoint and its member."""
    return two_view_checkpoint, load_member(two_view_checkpoint.parent / "sequence.pt")


def fixture_drawings(count: int) -> list:
    rng = np.random.default_rng(3)
    return [shape(FIXTURE_WORDS[i % len(FIXTURE_WORDS)], rng) for i in range(count)]


def test_a_two_view_model_pools_the_raster_network_and_the_member_by_their_geometric_mean(
    tiny_checkpoint: Path, two_view: tuple[Path, StrokeSequenceNet]
) -> None:
    path, member = two_view
    raster = Guesser.load(tiny_checkpoint, backend="torch")
    both = Guesser.load(path, backend="torch")
    assert both.member is not None and raster.member is None
    drawings = fixture_drawings(6)
    simplified = [simplify_drawing(validate_drawing(d)) for d in drawings]
    geometric = np.sqrt(
        raster.probabilities_from_images(np.stack([raster.prepare(d) for d in drawings]))
        * probabilities(member, [featurize(s) for s in simplified])
    )
    expected = geometric / geometric.sum(axis=1, keepdims=True)
    got = both.probabilities_from_views([both.prepare_views(d) for d in drawings])
    assert np.allclose(got, expected, atol=1e-5)
    assert not np.allclose(got, raster.probabilities_from_views([raster.prepare_views(d) for d in drawings]))
    assert [g.label for g in both.guess(drawings[0], top_k=2)] == [
        both.labels[i] for i in np.argsort(-expected[0], kind="stable")[:2]
    ]
    with pytest.raises(ValueError, match="pen's path"):
        both.probabilities_from_images(np.stack([both.prepare(d) for d in drawings]))


def test_a_two_view_model_on_onnx_runtime_batched_and_live_gives_the_same_answers(
    two_view: tuple[Path, StrokeSequenceNet],
) -> None:
    path, _ = two_view
    reference = Guesser.load(path, backend="torch")
    served = Guesser.load(path, backend="onnx")
    assert served.member is not None and served.member.backend == "onnx"
    drawings = fixture_drawings(40)  # more than one chunk: the pipelined path
    one_by_one = [reference.probabilities_from_views([reference.prepare_views(d)])[0] for d in drawings]
    by_torch = np.stack(one_by_one)
    by_onnx = served.probabilities_from_views([served.prepare_views(d) for d in drawings])
    assert np.abs(by_onnx - by_torch).max() < 1e-4
    pipelined = served.guess_batch(drawings, top_k=1)
    assert [g[0].label for g in pipelined] == [served.labels[i] for i in by_onnx.argmax(1)]
    drawing = drawings[5]
    session = served.session(top_k=3)
    for stroke in drawing:
        live = session.add_stroke(stroke)
    assert live == served.guess(drawing, top_k=3)
    staged = served.session(top_k=3)
    views = staged.stage(drawing[0])
    assert views is not None and views.sequence is not None and views.sequence.shape[1] == FEATURES


def test_a_two_view_model_answers_many_threads_at_once_as_it_answers_one(
    two_view: tuple[Path, StrokeSequenceNet],
) -> None:
    """The member runs on the guesser's own thread beside the raster network: callers on many
    threads at once (the service's batcher, live sessions, guess_batch's pipeline) still get each
    their own drawings' answers."""
    path, _ = two_view
    served = Guesser.load(path, backend="onnx")
    drawings = fixture_drawings(24)
    views = [served.prepare_views(d) for d in drawings]
    alone = [served.probabilities_from_views([v])[0] for v in views]
    with ThreadPoolExecutor(6) as pool:
        at_once = list(pool.map(lambda v: served.probabilities_from_views([v])[0], views * 4))
    for got, expected in zip(at_once, alone * 4, strict=True):
        assert np.allclose(got, expected, atol=1e-6)
    assert len({int(p.argmax()) for p in alone}) > 1  # different drawings, different answers


def test_a_two_view_checkpoint_missing_or_mismatching_its_member_is_refused(
    two_view: tuple[Path, StrokeSequenceNet], tmp_path: Path
) -> None:
    path, _ = two_view
    payload = torch.load(path, weights_only=True)
    broken = dict(payload, sequence_members=None)
    torch.save(broken, tmp_path / "missing.pt")
    with pytest.raises(CheckpointError, match="without its stroke-sequence member"):
        Guesser.load(tmp_path / "missing.pt")
    wrong = dict(payload, sequence_members=[{"head.1.weight": torch.zeros(3, 3)}])
    torch.save(wrong, tmp_path / "wrong.pt")
    with pytest.raises(CheckpointError, match="do not fit"):
        Guesser.load(tmp_path / "wrong.pt")
    other = StrokeSequenceNet(2)
    save_member(other, ["a", "b"], tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="classes differ"):
        attach_member(path, tmp_path / "other.pt", tmp_path / "never.pt")


def test_the_member_is_exported_once_and_falls_back_to_pytorch_only_under_auto(
    two_view: tuple[Path, StrokeSequenceNet], monkeypatch: pytest.MonkeyPatch
) -> None:
    import model.sequence as sequence_module

    path, _ = two_view
    Guesser.load(path, backend="onnx")  # exported (or already) once in this process
    calls = []
    real = sequence_module.member_onnx_bytes
    monkeypatch.setattr(sequence_module, "member_onnx_bytes", lambda nets: calls.append(1) or real(nets))
    assert Guesser.load(path, backend="onnx").member.backend == "onnx" and calls == []  # cached

    def broken(networks: list[StrokeSequenceNet]) -> bytes:
        raise RuntimeError("exporter unavailable")

    monkeypatch.setattr(sequence_module, "member_onnx_bytes", broken)
    monkeypatch.setattr(sequence_module, "_EXPORTED", {})
    assert Guesser.load(path, backend="auto").member.backend == "torch"  # still answers
    with pytest.raises(CheckpointError, match="cannot run on ONNX Runtime: exporter unavailable"):
        Guesser.load(path, backend="onnx")


# -- a committee: several members averaged into one sequence view ---------------------------------
def test_a_committee_of_members_of_any_size_is_averaged_into_one_sequence_view_on_both_back_ends(
    tiny_checkpoint: Path, two_view: tuple[Path, StrokeSequenceNet], tmp_path: Path
) -> None:
    path, first = two_view
    classes = Guesser.load(path, backend="torch").labels
    torch.manual_seed(7)
    second = StrokeSequenceNet(len(classes), width=16, hidden=24).eval()  # sizes read from the weights
    save_member(second, classes, tmp_path / "second.pt")
    committee = attach_member(tiny_checkpoint, [path.parent / "sequence.pt", tmp_path / "second.pt"],
                              tmp_path / "committee.pt")
    raster = Guesser.load(tiny_checkpoint, backend="torch")
    drawings = fixture_drawings(9)
    sequences = [featurize(simplify_drawing(validate_drawing(d))) for d in drawings]
    view = (probabilities(first, sequences) + probabilities(second, sequences)) / 2
    by_raster = raster.probabilities_from_images(np.stack([raster.prepare(d) for d in drawings]))
    geometric = np.sqrt(by_raster * view)  # the two views' normalised geometric mean (the default pool)
    expected = geometric / geometric.sum(axis=1, keepdims=True)
    by_torch = Guesser.load(committee, backend="torch")
    served = Guesser.load(committee, backend="onnx")
    assert served.member is not None and served.member.backend == "onnx" and len(served.member.networks) == 2
    for guesser in (by_torch, served):
        got = guesser.probabilities_from_views([guesser.prepare_views(d) for d in drawings])
        assert np.allclose(got, expected, atol=1e-5)
    one_member = Guesser.load(path, backend="torch")
    alone = one_member.probabilities_from_views([one_member.prepare_views(d) for d in drawings])
    assert not np.allclose(alone, expected, atol=1e-4)  # the second member does change the answers


def test_a_checkpoint_written_before_committees_still_loads(
    two_view: tuple[Path, StrokeSequenceNet], tmp_path: Path
) -> None:
    path, _ = two_view
    payload = torch.load(path, weights_only=True)
    legacy = {k: v for k, v in payload.items() if k not in ("sequence_members", "sequence_training")}
    legacy["sequence_member"], legacy["sequence_training"] = payload["sequence_members"][0], {"epochs": 2}
    torch.save(legacy, tmp_path / "legacy.pt")
    old, new = Guesser.load(tmp_path / "legacy.pt", backend="torch"), Guesser.load(path, backend="torch")
    drawings = fixture_drawings(4)
    got = old.probabilities_from_views([old.prepare_views(d) for d in drawings])
    assert np.allclose(got, new.probabilities_from_views([new.prepare_views(d) for d in drawings]), atol=1e-6)
    assert sequence_training(torch.load(tmp_path / "legacy.pt", weights_only=True)) == [{"epochs": 2}]


def test_a_file_written_before_view_pools_averages_its_views_and_an_unknown_pool_is_refused(
    tiny_checkpoint: Path, two_view: tuple[Path, StrokeSequenceNet], tmp_path: Path
) -> None:
    path, member = two_view
    payload = torch.load(path, weights_only=True)
    assert payload["view_pool"] == "log"  # attach's default
    before_pools = {k: v for k, v in payload.items() if k != "view_pool"}
    torch.save(before_pools, tmp_path / "before.pt")
    torch.save(dict(payload, view_pool="median"), tmp_path / "unknown.pt")
    drawings = fixture_drawings(6)
    pooled = Guesser.load(path, backend="torch")
    averaged = Guesser.load(tmp_path / "before.pt", backend="torch")
    assert (pooled.view_pool, averaged.view_pool) == ("log", "mean")
    raster = np.stack([pooled.prepare(d) for d in drawings])
    by_raster = Guesser.load(tiny_checkpoint, backend="torch").probabilities_from_images(raster)
    by_member = probabilities(member, [featurize(simplify_drawing(validate_drawing(d))) for d in drawings])
    got = averaged.probabilities_from_views([averaged.prepare_views(d) for d in drawings])
    assert np.allclose(got, (by_raster + by_member) / 2, atol=1e-6)
    pooled_answers = pooled.probabilities_from_views([pooled.prepare_views(d) for d in drawings])
    assert not np.allclose(pooled_answers, got, atol=1e-3)  # the pool does change the answers
    with pytest.raises(CheckpointError, match="unknown view pool 'median'"):
        Guesser.load(tmp_path / "unknown.pt")
