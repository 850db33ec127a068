"""Distillation, mixup and joint class × rotation labels in `training.train`, on the tiny preset."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from model import CheckpointError, Guesser
from tests.conftest import FIXTURE_WORDS, shape
from training.distill import distillation_loss, load_teachers, teacher_targets
from training.settings import PRESETS_DIR, parse_config
from training.train import ROTATIONS, mix, train, turn, upright


def tiny_run(data: Path, out: Path, *extra: str) -> dict:
    config = parse_config(
        [
            "--preset", "tiny", "--data", str(data), "--categories", "", "--out", str(out),
            "--cache", str(out.parent / "cache"), "--epochs", "6", "--per-class", "24", *extra,
        ]
    )  # fmt: skip
    return train(config)


def square_teacher(source: Path, path: Path) -> Path:
    """A real checkpoint that says « square » whatever it is shown (output layer: bias only)."""
    payload = torch.load(source, weights_only=True)
    state = payload["state_dict"]
    weight = next(k for k in state if k.startswith("head.") and k.endswith(".weight"))
    bias = weight[: -len("weight")] + "bias"
    state[weight] = torch.zeros_like(state[weight])
    state[bias] = torch.full_like(state[bias], -4.0)
    state[bias][FIXTURE_WORDS.index("square")] = 4.0
    torch.save(payload, path)
    return path


def test_distillation_loss_and_targets(tiny_checkpoint: Path) -> None:
    targets = torch.tensor([[0.7, 0.2, 0.1]])
    same = torch.log(targets) * 2.0  # softmax(logits / 2) == targets
    assert float(distillation_loss(same, targets, 2.0)) == pytest.approx(0.0, abs=1e-6)
    assert float(distillation_loss(torch.tensor([[0.0, 5.0, 0.0]]), targets, 2.0)) > 0.5
    teacher = Guesser.load(tiny_checkpoint, backend="torch")  # its network
    images = torch.rand(3, len(teacher.spec.channels), teacher.spec.size, teacher.spec.size)
    with torch.inference_mode():
        logits = teacher.network(images)
    expected = torch.softmax(logits / 3.0, dim=1)  # the teacher's own temperature cancels out
    teacher.temperature = 0.5
    got = teacher_targets([teacher, teacher], images, 3.0)
    assert torch.allclose(got, expected, atol=1e-4)


def test_mixup_mixes_pairs() -> None:
    images = torch.arange(4.0).reshape(4, 1, 1, 1)
    mixed, perm, lam = mix(images, 0.4, np.random.default_rng(0))
    assert 0.0 <= lam <= 1.0 and sorted(perm.tolist()) == [0, 1, 2, 3]
    assert torch.allclose(mixed, lam * images + (1 - lam) * images[perm])


def test_student_learns_what_the_teacher_says(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    """With the whole weight on the teacher, the labels are ignored: a teacher that always says
    « square » makes a student that always says « square »."""
    teacher = square_teacher(tiny_checkpoint, tmp_path / "square.pt")
    flags = ["--teacher", str(teacher), "--distill-weight", "1", "--epochs", "3"]
    student = tiny_run(fixture_data, tmp_path / "student", *flags)
    assert student["full_top1"] < 0.45  # right on the squares only (a quarter of the shapes)
    guesser = Guesser.load(tmp_path / "student" / "model.pt")
    assert guesser.metadata["training"]["teacher"] == [str(teacher)]
    rng = np.random.default_rng(5)
    said = {guesser.guess(shape(word, rng), top_k=1)[0].label for word in FIXTURE_WORDS * 3}
    assert said == {"square"}  # circles, triangles and lines too: the labels were never used
    log = json.loads((tmp_path / "student" / "train_log.json").read_text())
    assert len(log) == 3


def test_int8_teachers_are_made_when_missing_and_agree_with_the_float_ones(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    """``--teacher-backend onnx-int8``: each teacher's int8 copy is exported beside it on first use
    (and again once its weights change), and its softened answers stay close to the float ones."""
    from model.runtime import int8_path

    teacher = tmp_path / "teacher.pt"
    teacher.write_bytes(tiny_checkpoint.read_bytes())
    reference = Guesser.load(teacher, backend="torch")
    classes, spec = reference.labels, reference.spec
    assert not int8_path(teacher).exists()
    [fast] = load_teachers([str(teacher)], classes, spec, "onnx-int8", str(fixture_data))
    assert fast.backend == "onnx-int8" and int8_path(teacher).is_file()
    rng = np.random.default_rng(3)
    images = torch.from_numpy(np.stack([reference.prepare(shape(w, rng)) for w in FIXTURE_WORDS * 4]))
    exact, quantized = teacher_targets([reference], images, 2.0), teacher_targets([fast], images, 2.0)
    assert (exact.argmax(1) == quantized.argmax(1)).float().mean() >= 0.9
    assert float((exact - quantized).abs().max()) < 0.1
    square_teacher(tiny_checkpoint, teacher)  # new weights: the old int8 copy is stale, made again
    [fast] = load_teachers([str(teacher)], classes, spec, "onnx-int8", str(fixture_data))
    said = teacher_targets([fast], images, 2.0).argmax(1)
    assert set(said.tolist()) == {classes.index("square")}
    with pytest.raises(ValueError, match="teacher_backend must be one of"):
        tiny_run(fixture_data, tmp_path / "run", "--teacher-backend", "gpu")


def test_a_mismatched_teacher_is_refused(fixture_data: Path, tmp_path: Path) -> None:
    from model import DEFAULT_WEIGHTS

    with pytest.raises(CheckpointError, match="class list does not match"):
        tiny_run(fixture_data, tmp_path / "run", "--teacher", str(DEFAULT_WEIGHTS))
    with pytest.raises(ValueError, match="distill weight must be in"):
        tiny_run(fixture_data, tmp_path / "run", "--distill-weight", "1.5")


def test_turns_and_their_joint_labels() -> None:
    images = torch.arange(2 * 9.0).reshape(2, 1, 3, 3).repeat(4, 1, 1, 1)
    labels = torch.tensor([0, 1] * 4)
    turned, joint = turn(images, labels, np.random.default_rng(3))
    for image, before, label, target in zip(turned, images, labels, joint, strict=True):
        k = int(target) % ROTATIONS
        assert int(target) // ROTATIONS == int(label)
        assert torch.equal(image, torch.rot90(before, k, dims=(1, 2)))
    assert len({int(t) % ROTATIONS for t in joint}) > 1


def test_upright_keeps_the_upright_rows() -> None:
    network = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(9, 3 * ROTATIONS))
    kept = upright(network, ROTATIONS)
    assert upright(network, 1) is network and network[1].out_features == 3 * ROTATIONS
    x = torch.rand(5, 1, 3, 3)
    assert torch.allclose(kept(x), network(x)[:, ::ROTATIONS], atol=1e-6)  # other matmul kernels


def test_rotation_labels_ship_an_ordinary_model(fixture_data: Path, tmp_path: Path) -> None:
    tiny_run(fixture_data, tmp_path / "turns", "--rotation-labels", "true", "--epochs", "2")
    guesser = Guesser.load(tmp_path / "turns" / "model.pt")
    assert guesser.labels == list(FIXTURE_WORDS)
    assert guesser.guess(shape("circle", np.random.default_rng(0)), top_k=4)[0].label in FIXTURE_WORDS
    with pytest.raises(ValueError, match="rotation labels"):
        tiny_run(fixture_data, tmp_path / "both", "--rotation-labels", "true", "--teacher", "x.pt")


def test_init_starts_from_a_checkpoint_and_refuses_another_architecture(
    tiny_checkpoint: Path, fixture_data: Path, tmp_path: Path
) -> None:
    """``--init``: the run starts from the checkpoint's weights (with a learning rate of almost 0
    they stay those weights); a checkpoint of another width is refused before any training."""
    almost_still = ["--epochs", "1", "--lr", "1e-12", "--ema", "0"]
    tiny_run(fixture_data, tmp_path / "same", "--init", str(tiny_checkpoint), *almost_still)
    start = torch.load(tiny_checkpoint, weights_only=True)["state_dict"]
    after = torch.load(tmp_path / "same" / "model.pt", weights_only=True)["state_dict"]
    convs = [k for k in start if k.endswith(".weight") and start[k].dim() == 4]
    assert convs and all(torch.allclose(after[k].float(), start[k].float(), atol=1e-3) for k in convs)
    with pytest.raises(CheckpointError, match="architecture differs"):
        tiny_run(fixture_data, tmp_path / "wide", "--init", str(tiny_checkpoint), "--widths", "8,24")


def makefile_rules() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The Makefile's rules: each target's prerequisites and recipe lines, with the variables that
    name files under runs/ expanded, ``$@`` replaced and continuation lines joined."""
    text = (PRESETS_DIR.parents[1] / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    paths = {name: value.strip() for name, value in re.findall(r"^([A-Z_]+) := (runs/.*)$", text, re.M)}

    def expand(line: str) -> str:
        return " ".join(re.sub(r"\$\((\w+)\)", lambda m: paths.get(m[1], m[0]), line).split())

    prerequisites: dict[str, list[str]] = {}
    recipes: dict[str, list[str]] = {}
    target = ""
    for line in text.splitlines():
        rule = re.match(r"^([^\s#.:=][^:=]*):(?!=)(.*)$", line)
        if line.startswith("\t") and target:
            recipes[target].append(expand(line).replace("$@", target))
        elif rule:
            target = expand(rule[1])
            # an order-only prerequisite (after `|`) counts too: it orders the steps
            prerequisites[target], recipes[target] = [w for w in expand(rule[2]).split() if w != "|"], []
        else:
            target = ""
    return prerequisites, recipes


def test_every_preset_reads_and_make_train_is_one_chain_from_data_to_the_shipped_model() -> None:
    """Every preset is valid settings; `make train` builds one file with make's own scheduling, then
    ships it. Each step of that chain declares as prerequisites what its network learns from (so
    `make -j2` never runs a step beside its inputs), writes the file its preset names, fine-tunes a
    public model from its own weights toward its own untouched answers, and pools both fine-tuned
    models with the untouched ResNet into a new file, which is shipped."""
    presets = {path.stem: parse_config(["--preset", path.stem]) for path in PRESETS_DIR.glob("*.yaml")}
    prerequisites, recipes = makefile_rules()
    final = "runs/committee/model.pt"
    ship = f"$(MODEL) ship $(DATA_FLAG) --teachers $(TEACHERS_DIR) {final}"  # the card measures the teachers
    assert recipes["train"] == [f"$(MAKE) -j2 {final}", ship]

    def needed(target: str) -> set[str]:
        direct = set(prerequisites.get(target, []))
        return direct.union(*(needed(item) for item in direct))

    chain = needed(final) | {final}
    presets_of = {target: re.findall(r"--preset ([\w-]+)", " ".join(recipes[target])) for target in chain}
    trained = {target: name for target, names in presets_of.items() for name in names}
    assert sorted(trained.values()) == ["public-doodlenet", "public-resnet"]
    for target, name in trained.items():
        config = presets[name]
        assert target == f"{config.out}/model.pt"
        inputs = [config.init, *config.teacher, *config.sequence_teacher, config.teacher_cache]
        assert {path for path in inputs if path} <= needed(target), (name, inputs)
        # a public model, from its own weights, toward its own untouched answers, validation held out
        assert config.architecture == "public" and config.style == "bitmap" and not config.init
        assert config.cache_teachers == config.public and config.holdout == "val"
    cache = presets["public-resnet"].teacher_cache  # the public models' answers, cached once
    assert any("teachers cache" in line and f"--out {cache}" in line for line in recipes[cache])
    derived = [target for target in chain if target not in trained and target != cache]
    for target in derived:
        [line] = recipes[target]
        words = line.split()
        assert words[0] == "$(MODEL)" and words[1] in ("calibrate", "committee"), line
        assert words[words.index("--out") + 1] == target  # always a new file
        reads = ("--model", "--match", "--apply-to")
        inputs = [words[i + 1] for i, flag in enumerate(words) if flag in reads]
        if words[1] == "committee":
            pooled = words[2 : words.index("--out")]
            assert sorted(w for w in pooled if not w.startswith("public:")) == sorted(trained)
            assert "public:quickdraw-resnet" in pooled  # the untouched model holds what it knew
            inputs += [w for w in pooled if not w.startswith("public:")]
        assert target not in inputs and set(inputs) <= needed(target), (target, inputs)
    assert sorted(recipes[target][0].split()[1] for target in derived) == ["committee"]
