"""The stroke-sequence members (`training.sequence_loop`, trained through `griffon train` with `network:
sequence`) on the generated fixture folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import typer
from typer.testing import CliRunner

from model import CheckpointError, Guesser
from model.checkpoint import read_checkpoint, save_checkpoint
from model.sequence import StrokeSequenceNet, featurize, load_member, member_training, save_member
from tests.conftest import FIXTURE_WORDS, shape
from training.cli import register
from training.distill import teacher_targets
from training.model_card import refresh
from training.prepare import prepare_cached
from training.sequence_loop import Distillation, collate, compare, predict, train_member
from training.settings import parse_config
from training.train import check_config, main, train


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
    for name in ("sequence", "raster", "pooled"):
        assert 0.0 <= results[name]["full_top1"] <= 1.0 and results[name]["count"] == len(data.indices("val"))
    paired = results["paired"]
    assert paired["only_pooled"] >= 0 and paired["only_raster"] >= 0


def train_sequence(argv: list[str]) -> dict:
    """`griffon train --network sequence …`: the one training entry point, for a member."""
    return main(["--network", "sequence", *argv])


def attach(argv: list[str]) -> str:
    """`griffon model attach …` through the `griffon` command line; its output (``error: …`` and
    exit status 1 on a checkpoint it cannot use)."""
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["model", "attach", *argv])
    if result.exit_code:
        raise SystemExit(result.output)
    return result.output


def square_member(path: Path) -> Path:
    """A member that says « square » whatever it reads (output layer: bias only)."""
    network = StrokeSequenceNet(len(FIXTURE_WORDS))
    head = network.head[-1]
    with torch.no_grad():
        head.weight.zero_()
        head.bias.fill_(-4.0)
        head.bias[FIXTURE_WORDS.index("square")] = 4.0
    save_member(network, FIXTURE_WORDS, path)
    return path


def test_a_sequence_teacher_counts_as_one_vote(tiny_checkpoint: Path, tmp_path: Path) -> None:
    member = load_member(square_member(tmp_path / "square.pt"), FIXTURE_WORDS)
    rng = np.random.default_rng(0)
    raws = [shape(word, rng) for word in FIXTURE_WORDS]
    x, lengths, _ = collate([(featurize([np.array(raw[0][:2], dtype=float).T]), 0) for raw in raws])
    raster = Guesser.load(tiny_checkpoint)
    images = torch.from_numpy(np.stack([raster.prepare(raw) for raw in raws]))
    alone = teacher_targets([], images, 2.0, [member], (x, lengths))
    logits = torch.full((len(FIXTURE_WORDS),), -4.0)
    logits[FIXTURE_WORDS.index("square")] = 4.0
    expected = torch.softmax(logits / 2.0, dim=0).expand(len(raws), -1)
    assert torch.allclose(alone, expected, atol=1e-5)
    both = teacher_targets([raster], images, 2.0, [member], (x, lengths))
    assert torch.allclose(both, (teacher_targets([raster], images, 2.0) + alone) / 2, atol=1e-5)
    with pytest.raises(ValueError, match="sequences"):
        teacher_targets([raster], images, 2.0, [member], None)
    assert torch.equal(teacher_targets([], None, 2.0, [member], (x, lengths)), alone)  # no images needed
    with pytest.raises(ValueError, match="images"):
        teacher_targets([raster], None, 2.0, [member], (x, lengths))


def test_a_sequence_member_teaches_a_raster_student(fixture_data: Path, tmp_path: Path) -> None:
    member = square_member(tmp_path / "square.pt")
    out = tmp_path / "student"
    config = parse_config(
        [
            "--preset", "tiny", "--data", str(fixture_data), "--categories", "", "--out", str(out),
            "--cache", str(tmp_path / "cache"), "--epochs", "4", "--per-class", "24",
            "--sequence-teacher", str(member), "--distill-weight", "1.0", "--distill-temperature", "1.0",
        ]
    )  # fmt: skip
    train(config)
    payload = torch.load(out / "model.pt", weights_only=True)
    assert payload["training"]["sequence_teacher"] == [str(member)]
    assert "1 of them read stroke sequences" in (out / "MODEL_CARD.md").read_text()
    student = Guesser.load(out / "model.pt")
    rng = np.random.default_rng(1)
    said = [student.guess(shape(word, rng), top_k=1)[0].label for word in FIXTURE_WORDS for _ in range(3)]
    assert said.count("square") >= 10  # taught only by a member that always says « square »


def square_raster(tiny_checkpoint: Path, path: Path) -> Path:
    """The tiny raster model with its last layer made to say « square » whatever it sees."""
    payload = read_checkpoint(tiny_checkpoint)
    state = dict(payload["state_dict"])
    weight = next(key for key in reversed(state) if key.endswith(".weight"))
    bias = weight.removesuffix("weight") + "bias"
    state[weight] = torch.zeros_like(state[weight])
    state[bias] = torch.full_like(state[bias], -4.0)
    state[bias][payload["classes"].index("square")] = 4.0
    save_checkpoint(
        path, architecture=payload["architecture"]["name"],
        architecture_kwargs=payload["architecture"]["kwargs"], classes=payload["classes"],
        spec=payload["raster_spec"], state_dict=state,
    )
    return path


def test_raster_teachers_teach_a_member(fixture_data: Path, tiny_checkpoint: Path, tmp_path: Path) -> None:
    data = prepare_cached(fixture_data, tmp_path / "cache", None)
    teacher = Guesser.load(square_raster(tiny_checkpoint, tmp_path / "square.pt"), backend="torch")
    taught = Distillation((teacher,), weight=1.0, temperature=1.0)
    network, log = train_member(data, minutes=0, epochs=4, per_class=24, batch_size=32, workers=0,
                                distillation=taught)  # fmt: skip
    assert len(log) == 4
    train = data.indices("train")
    said = np.argmax(predict(network, [data.strokes(int(i)) for i in train]), axis=1)
    assert (said == data.classes.index("square")).mean() > 0.9  # taught only by « square », not the labels
    with pytest.raises(ValueError, match="weight"):
        Distillation((teacher,), weight=1.5)
    with pytest.raises(ValueError, match="teachers"):
        Distillation((), weight=0.5)


def test_a_bad_distillation_setting_is_refused_on_the_command_line(
    fixture_data: Path, tiny_checkpoint: Path, tmp_path: Path
) -> None:
    common = ["--data", str(fixture_data), "--cache", str(tmp_path / "cache"), "--epochs", "1",
              "--teacher", str(tiny_checkpoint), "--out", str(tmp_path / "never")]  # fmt: skip
    with pytest.raises(SystemExit, match="distill-weight"):
        train_sequence([*common, "--distill-weight", "2"])
    with pytest.raises(SystemExit, match="distill-temperature"):
        train_sequence([*common, "--distill-temperature", "0"])
    assert not (tmp_path / "never").exists()


def test_the_command_line_trains_a_taught_member(
    fixture_data: Path, tiny_checkpoint: Path, tmp_path: Path
) -> None:
    import json

    train_sequence(["--data", str(fixture_data), "--cache", str(tmp_path / "cache"), "--epochs", "1",
                    "--workers", "0", "--teacher", str(tiny_checkpoint), "--teacher-backend", "torch",
                    "--out", str(tmp_path / "kd")])  # fmt: skip
    assert json.loads((tmp_path / "kd" / "metrics.json").read_text())["teachers"] == [str(tiny_checkpoint)]
    assert load_member(tmp_path / "kd" / "sequence.pt", FIXTURE_WORDS) is not None
    record = member_training(tmp_path / "kd" / "sequence.pt")
    assert record["teachers"] == [str(tiny_checkpoint)] and record["distill_weight"] == 0.7
    assert record["epochs"] == 1 and record["seed"] == 0
    # attached, the pair keeps how its member was trained, and its model card tells it
    attach(["--model", str(tiny_checkpoint), "--member", str(tmp_path / "kd" / "sequence.pt"),
            "--out", str(tmp_path / "pair" / "model.pt")])  # fmt: skip
    payload = torch.load(tmp_path / "pair" / "model.pt", weights_only=True)
    assert payload["sequence_training"] == [record]
    refresh(tmp_path / "pair" / "model.pt", fixture_data, cache=tmp_path / "cache" / "all")
    card = (tmp_path / "pair" / "MODEL_CARD.md").read_text()
    assert f"1 epoch (seed 0), taught by 1 model(s) (`{tiny_checkpoint}`): weight 0.7" in card


def test_another_member_teaches_a_member_on_the_command_line(fixture_data: Path, tmp_path: Path) -> None:
    import json

    teacher = square_member(tmp_path / "square.pt")
    train_sequence(["--data", str(fixture_data), "--cache", str(tmp_path / "cache"), "--epochs", "4",
                    "--workers", "0", "--sequence-teacher", str(teacher), "--distill-weight", "1.0",
                    "--distill-temperature", "1.0", "--out", str(tmp_path / "taught")])  # fmt: skip
    record = json.loads((tmp_path / "taught" / "metrics.json").read_text())
    assert record["sequence_teachers"] == [str(teacher)] and record["teachers"] == []
    data = prepare_cached(fixture_data, tmp_path / "cache", None)
    network = load_member(tmp_path / "taught" / "sequence.pt", data.classes)
    train = data.indices("train")
    said = np.argmax(predict(network, [data.strokes(int(i)) for i in train]), axis=1)
    assert (said == data.classes.index("square")).mean() > 0.9  # taught only by « square », not the labels


def test_bad_sequence_teachers_are_refused(tiny_checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a stroke-sequence member"):
        load_member(tiny_checkpoint)  # a raster checkpoint
    member = square_member(tmp_path / "square.pt")
    with pytest.raises(CheckpointError, match="classes differ"):
        load_member(member, ["cat", "dog", "car", "sun"])
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_member(garbage)
    with pytest.raises(ValueError, match="mixup"):
        check_config(parse_config(["--sequence-teacher", str(member), "--mixup", "0.2"]))


def test_attach_on_the_command_line_writes_a_two_view_model_or_says_why_not(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    classes = Guesser.load(tiny_checkpoint, backend="torch").labels
    save_member(StrokeSequenceNet(len(classes)), classes, tmp_path / "member.pt")
    said = attach(["--model", str(tiny_checkpoint), "--member", str(tmp_path / "member.pt"),
                   "--out", str(tmp_path / "pair.pt")])  # fmt: skip
    assert f"wrote {tmp_path / 'pair.pt'}" in said
    assert Guesser.load(tmp_path / "pair.pt").view_pool == "log"
    attach(["--model", str(tiny_checkpoint), "--member", str(tmp_path / "member.pt"),
            "--out", str(tmp_path / "averaged.pt"), "--pool", "mean"])  # fmt: skip
    assert Guesser.load(tmp_path / "averaged.pt").view_pool == "mean"
    with pytest.raises(SystemExit):
        attach(["--model", str(tiny_checkpoint), "--member", str(tmp_path / "member.pt"),
                "--out", str(tmp_path / "never.pt"), "--pool", "max"])  # fmt: skip
    torch.manual_seed(5)
    small = StrokeSequenceNet(len(classes), width=16, hidden=16)
    recipe = {"epochs": 3, "seed": 5, "width": 16, "hidden": 16, "augment": {"partial_p": 0.5}}
    save_member(small, classes, tmp_path / "second.pt", recipe)
    attach(["--model", str(tiny_checkpoint), "--member", str(tmp_path / "member.pt"),
            str(tmp_path / "second.pt"), "--out", str(tmp_path / "committee" / "model.pt")])  # fmt: skip
    committee = Guesser.load(tmp_path / "committee" / "model.pt", backend="torch")
    assert committee.member is not None and len(committee.member.networks) == 2
    records = torch.load(tmp_path / "committee" / "model.pt", weights_only=True)["sequence_training"]
    assert records == [{}, recipe]
    refresh(tmp_path / "committee" / "model.pt", fixture_data, cache=tmp_path / "cache" / "all")
    card = (tmp_path / "committee" / "MODEL_CARD.md").read_text()
    assert "the average of 2 members" in card
    assert "its answers are the normalised geometric mean of this network's" in card
    assert "member 2, 3 epochs (seed 5), width 16, hidden 16, augmentation changed (partial_p 0.5)" in card
    save_member(StrokeSequenceNet(3), ["a", "b", "c"], tmp_path / "other.pt")
    with pytest.raises(SystemExit, match="classes differ"):
        attach(["--model", str(tiny_checkpoint), "--member", str(tmp_path / "other.pt"),
                "--out", str(tmp_path / "never.pt")])  # fmt: skip
    assert not (tmp_path / "never.pt").exists()


def test_the_command_line_trains_a_member_of_another_size_and_refuses_absurd_sizes(
    fixture_data: Path, tmp_path: Path
) -> None:
    train_sequence(["--data", str(fixture_data), "--cache", str(tmp_path / "cache"), "--epochs", "1",
                    "--workers", "0", "--width", "16", "--hidden", "24",
                    "--out", str(tmp_path / "small")])  # fmt: skip
    network = load_member(tmp_path / "small" / "sequence.pt", FIXTURE_WORDS)
    assert network.gru.hidden_size == 24 and network.conv[1][0].out_channels == 16
    record = member_training(tmp_path / "small" / "sequence.pt")
    assert record["width"] == 16 and record["hidden"] == 24
    with pytest.raises(SystemExit, match="--width and --hidden"):
        train_sequence(["--data", str(fixture_data), "--width", "4", "--out", str(tmp_path / "never")])
    assert not (tmp_path / "never").exists()


def test_augmentation_overrides_reach_the_member_views_and_are_recorded(
    fixture_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from training.augment import AugmentConfig
    from training.sequence_loop import AugmentedSequences

    data = prepare_cached(fixture_data, tmp_path / "cache" / "all", None)
    order = np.arange(6)
    still = AugmentConfig(rotate_degrees=0, scale_range=0, shear=0, mirror_p=0, dropout_p=0, jitter_p=0,
                          partial_p=0, kontour_p=0)  # fmt: skip
    plain = AugmentedSequences(data, order, seed=0, epoch=0, augmentation=still)
    moved = AugmentedSequences(data, order, seed=0, epoch=0)
    for position, index in enumerate(order):
        assert np.array_equal(plain[position][0], featurize(data.strokes(int(index))))
    assert any(not np.array_equal(plain[i][0], moved[i][0]) for i in range(len(order)))
    train_sequence(["--data", str(fixture_data), "--cache", str(tmp_path / "cache"), "--epochs", "1",
                    "--workers", "0", "--augment", '{"partial_p": 0.5}',
                    "--out", str(tmp_path / "partial")])  # fmt: skip
    assert member_training(tmp_path / "partial" / "sequence.pt")["augment"] == {"partial_p": 0.5}
    with pytest.raises(SystemExit):
        train_sequence(["--data", str(fixture_data), "--augment", '{"wobble": 1}',
                        "--out", str(tmp_path / "never")])  # fmt: skip
    said = capsys.readouterr().err
    assert "error: augment:" in said and "wobble" in said
    assert not (tmp_path / "never").exists()
