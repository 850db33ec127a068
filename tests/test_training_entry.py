"""`griffon train` is the one training entry point: every network from a YAML preset (its `--help`
is checked in tests/test_model_guesser.py), and the stroke-sequence member trained through it exactly
as its own loop trains it; attaching members writes a new file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from model import CheckpointError, Guesser
from model.sequence import StrokeSequenceNet, load_member, member_training, save_member
from tests.conftest import FIXTURE_WORDS
from training.prepare import prepare_cached
from training.sequence_loop import attach_member, train_member
from training.settings import SequenceConfig, TrainConfig, parse_config
from training.train import main, native_cpu_bf16, use_bf16


def test_the_network_picks_the_settings_and_foreign_settings_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert isinstance(parse_config([]), TrainConfig)
    assert isinstance(parse_config(["--preset", "sequence-tiny"]), SequenceConfig)
    with pytest.raises(SystemExit):
        parse_config(["--preset", "sequence-tiny", "--widths", "8,16"])
    assert "the sequence network has no setting 'widths' (a setting of the raster network)" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        parse_config(["--network", "raster", "--preset", "sequence-tiny"])  # the preset's width, hidden
    assert "the raster network has no setting 'width'" in capsys.readouterr().err


def test_the_members_presets_keep_the_recipe() -> None:
    """The stroke-sequence members' presets keep the recipe: the loop's defaults; the untaught member
    50 epochs of labels, seed 1; the taught one 40 epochs, seed 0, weight 0.3 on the public teachers'
    cache at temperature 2; both on one thread with fixed epochs."""
    defaults = SequenceConfig()
    assert (defaults.epochs, defaults.max_minutes, defaults.threads, defaults.teacher_backend) == (
        200, 40.0, 2, "onnx-int8"
    )
    assert (defaults.lr, defaults.per_class, defaults.batch_size, defaults.width, defaults.hidden) == (
        3e-3, 32, 128, 128, 128
    )
    untaught = parse_config(["--preset", "sequence-untaught"])
    taught = parse_config(["--preset", "sequence-taught"])
    for config in (untaught, taught):
        assert (config.max_minutes, config.workers, config.threads, config.augment) == (0.0, 1, 1, {})
    assert (untaught.epochs, untaught.seed, untaught.teacher, untaught.teacher_cache) == (50, 1, [], "")
    assert (taught.epochs, taught.seed, taught.teacher) == (40, 0, [])
    assert taught.teacher_cache == parse_config(["--preset", "public-resnet"]).teacher_cache
    assert (taught.distill_weight, taught.distill_temperature) == (0.3, 2.0)


def test_a_sequence_preset_trains_through_the_one_entry_point_as_the_loop_itself_does(
    fixture_data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "member"
    flags = ["--preset", "sequence-tiny", "--data", str(fixture_data), "--categories", "",
             "--cache", str(tmp_path / "cache"), "--out", str(out), "--seed", "3"]  # fmt: skip
    main(flags)
    trained = load_member(out / "sequence.pt", list(FIXTURE_WORDS))
    record = member_training(out / "sequence.pt")
    assert record["epochs"] == 2 and record["seed"] == 3
    assert record["command"].startswith("griffon train --preset sequence-tiny")
    assert record["per_class"] == 8 and record["width"] == 16  # what differs from the defaults is recorded
    # the same settings given to the loop directly: the very same weights
    data = prepare_cached(fixture_data, tmp_path / "cache" / "all", None)
    torch.set_num_threads(1)
    direct, _ = train_member(data, minutes=0, epochs=2, seed=3, per_class=8, batch_size=16, workers=0,
                             width=16, hidden=16)  # fmt: skip
    for name, tensor in direct.state_dict().items():
        assert torch.equal(tensor, trained.state_dict()[name]), name


def test_attach_refuses_to_write_over_its_inputs(tiny_checkpoint: Path, tmp_path: Path) -> None:
    classes = Guesser.load(tiny_checkpoint, backend="torch").labels
    member = tmp_path / "member.pt"
    save_member(StrokeSequenceNet(len(classes), width=16, hidden=16), classes, member)
    model = tmp_path / "model.pt"
    model.write_bytes(tiny_checkpoint.read_bytes())
    before = {path: path.read_bytes() for path in (model, member)}
    for out in (model, member, tmp_path / "." / "model.pt"):
        with pytest.raises(CheckpointError, match="attach would write over its input"):
            attach_member(model, member, out)
    assert {path: path.read_bytes() for path in (model, member)} == before
    assert Guesser.load(attach_member(model, member, tmp_path / "two-view.pt")).member is not None


def test_bf16_autocast_is_chosen_only_where_the_cpu_computes_bf16_natively() -> None:
    """On plain AVX-512 oneDNN emulates bf16 and trains slower than fp32: `auto` keeps fp32 there."""
    plain = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512bw avx512vl avx512_vnni\n"
    assert not native_cpu_bf16(plain)
    assert native_cpu_bf16(plain.replace("avx512_vnni", "avx512_vnni avx512_bf16"))
    assert native_cpu_bf16(plain.replace("avx512_vnni", "amx_tile amx_bf16"))
    assert not native_cpu_bf16("")  # no flags line (another OS): fp32
    cpu = torch.device("cpu")
    assert use_bf16("on", cpu) and not use_bf16("off", cpu)
    assert use_bf16("auto", cpu) == native_cpu_bf16()
