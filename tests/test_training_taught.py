"""Distillation from the teachers' cached answers (`training.taught`, `--teacher-cache`, `--stroke-mix`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from model import Guesser
from model.sequence import load_member, member_training
from tests.conftest import FIXTURE_WORDS, shape, write_fixture_folder
from training.model_card import _member_recipe
from training.prepare import SPLIT_CODES, prepare_cached
from training.sequence_loop import predict
from training.settings import parse_config
from training.taught import ink_length, mix_strokes, soften, with_cached_targets
from training.teachers import TeacherError, write_cache
from training.train import check_config, main, train


def test_soften_keeps_the_order_and_flattens_with_the_temperature() -> None:
    probs = np.array([[0.7, 0.2, 0.1, 0.0], [0.1, 0.1, 0.3, 0.5]], dtype=np.float32)
    same = soften(probs, 1.0)
    np.testing.assert_allclose(same, probs, atol=1e-6)  # τ = 1: the answers themselves (a zero stays ~0)
    warm = soften(probs, 4.0)
    np.testing.assert_allclose(warm.sum(axis=1), 1.0, rtol=1e-6)
    assert (np.argsort(-warm, axis=1)[:, :3] == np.argsort(-probs, axis=1)[:, :3]).all()
    assert warm[0, 0] < probs[0, 0] and warm[0, 3] > same[0, 3]  # flatter: the first loses, the zero gains


def test_mix_strokes_keeps_most_of_its_own_drawing_and_weighs_by_ink() -> None:
    own = [np.array([[0.0, 10.0 * i], [100.0, 10.0 * i]]) for i in range(6)]  # six strokes of length 100
    partner = [np.array([[0.0, 0.0], [0.0, 50.0]]) for _ in range(4)]  # four strokes of length 50
    for seed in range(20):
        mixed, lam = mix_strokes(own, partner, np.random.default_rng(seed))
        mine = sum(1 for stroke in mixed if stroke[1, 0] == 100.0)
        theirs = len(mixed) - mine
        assert 3 <= mine <= 6 and 1 <= theirs <= 2
        assert lam == pytest.approx(100 * mine / (100 * mine + 50 * theirs))
    assert ink_length([np.array([[5.0, 5.0]])]) == 1.0  # a dot still counts


def renamed_extra_folder(root: Path) -> Path:
    """A second fixture folder whose drawings have key ids of their own (``extra-…``)."""
    write_fixture_folder(root, per_word=5, seed=7)
    for path in (root / "full" / "raw").glob("*.ndjson"):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line]
        for item in lines:
            item["key_id"] = f"extra-{item['key_id']}"
        path.write_text("\n".join(json.dumps(item) for item in lines) + "\n")
    return root


def square_cache(data_root: Path, tmp_path: Path, extra: Path | None, drop: int = 0) -> Path:
    """A cache in which both teachers say « square » of every training drawing (and extra drawing)."""
    data = prepare_cached(data_root, tmp_path / "cache" / "all")
    train_keys = [str(k) for k, s in zip(data.key_ids, data.splits, strict=True) if s != SPLIT_CODES["val"]]
    train_keys = train_keys[drop:]
    extra_keys = [f"extra-{word}-{i:04d}" for word in FIXTURE_WORDS for i in range(5)] if extra else []
    keys = train_keys + extra_keys
    said = np.zeros((len(keys), len(FIXTURE_WORDS)), dtype=np.float32)
    said[:, FIXTURE_WORDS.index("square")] = 1.0
    flags = np.array([False] * len(train_keys) + [True] * len(extra_keys))
    meta = {"extra": str(extra) if extra else None}
    teachers = {"doodlenet": said, "quickdraw-resnet": said}
    path = tmp_path / "answers.npz"
    return write_cache(path, keys, np.zeros(len(keys)), flags, teachers, FIXTURE_WORDS, meta)


def test_cached_targets_cover_the_training_drawings_and_add_the_extra_ones(
    fixture_data: Path, tmp_path: Path
) -> None:
    extra = renamed_extra_folder(tmp_path / "extra")
    cache = square_cache(fixture_data, tmp_path, extra)
    data = prepare_cached(fixture_data, tmp_path / "cache" / "all")
    taught, targets, has_target = with_cached_targets(data, cache, 2.0)
    added = taught.indices("extra")
    assert len(added) == 20 and len(taught) == len(data) + 20
    assert all(str(key).startswith("extra-") for key in taught.key_ids[added])
    assert has_target[taught.indices("train")].all() and not has_target[taught.indices("val")].any()
    assert (targets[has_target].argmax(axis=1) == FIXTURE_WORDS.index("square")).all()
    np.testing.assert_allclose(targets[has_target].sum(axis=1), 1.0, rtol=1e-5)
    subset = prepare_cached(fixture_data, tmp_path / "cache" / "subset", ["circle", "square"])
    _, narrow, _ = with_cached_targets(subset, cache, 2.0)
    assert narrow.shape[1] == 2


def test_a_cache_from_other_data_is_refused(fixture_data: Path, tmp_path: Path) -> None:
    data = prepare_cached(fixture_data, tmp_path / "cache" / "all")
    with pytest.raises(TeacherError, match="not in the teachers' cache"):
        with_cached_targets(data, square_cache(fixture_data, tmp_path, None, drop=3), 2.0)
    with pytest.raises(TeacherError, match="not a folder here"):
        with_cached_targets(data, square_cache(fixture_data, tmp_path, tmp_path / "gone"), 2.0)


def test_a_student_of_the_cache_says_what_the_teachers_say(fixture_data: Path, tmp_path: Path) -> None:
    """With the whole weight on the cached answers, the labels are ignored: teachers that say
    « square » of every drawing make a student that says « square », mixed views included."""
    cache = square_cache(fixture_data, tmp_path, renamed_extra_folder(tmp_path / "extra"))
    config = parse_config([
        "--preset", "tiny", "--data", str(fixture_data), "--categories", "", "--out", str(tmp_path / "s"),
        "--cache", str(tmp_path / "cache"), "--epochs", "3", "--per-class", "24",
        "--teacher-cache", str(cache), "--distill-weight", "1", "--stroke-mix", "0.5",
    ])  # fmt: skip
    metrics = train(config)
    assert metrics["train_drawings"] > metrics["held_out_drawings"] and metrics["full_top1"] < 0.45
    guesser = Guesser.load(tmp_path / "s" / "model.pt")
    rng = np.random.default_rng(5)
    said = {guesser.guess(shape(word, rng), top_k=1)[0].label for word in FIXTURE_WORDS * 3}
    assert said == {"square"}
    card = (tmp_path / "s" / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "DoodleNet" in card and "quickdraw-prediction-model" in card and card.count("MIT licence") >= 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--stroke-mix", "0.3"], "needs --teacher-cache"),
        (["--teacher-cache", "x.npz", "--teacher", "a.pt"], "replaces --teacher"),
        (["--teacher-cache", "x.npz", "--stroke-mix", "1.5"], "probability"),
    ],
)
def test_settings_that_cannot_train_are_refused(flags: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_config(parse_config(["--preset", "tiny", *flags]))


def train_sequence(argv: list[str]) -> dict:
    """`griffon train --network sequence …`."""
    return main(["--network", "sequence", *argv])


def test_a_member_of_the_cache_says_what_the_teachers_say(fixture_data: Path, tmp_path: Path) -> None:
    """A stroke-sequence member learns the cached answers too (``--teacher-cache`` with ``network:
    sequence``): with the whole weight on teachers that say « square » of every drawing, it says
    « square » of the training drawings, and its record and an attached pair's card say how it learnt."""
    cache = square_cache(fixture_data, tmp_path, renamed_extra_folder(tmp_path / "extra"))
    train_sequence([
        "--data", str(fixture_data), "--cache", str(tmp_path / "cache"), "--epochs", "4", "--workers", "0",
        "--teacher-cache", str(cache), "--distill-weight", "1", "--distill-temperature", "1",
        "--out", str(tmp_path / "member"),
    ])  # fmt: skip
    data = prepare_cached(fixture_data, tmp_path / "cache" / "all")
    network = load_member(tmp_path / "member" / "sequence.pt", data.classes)
    train_part = data.indices("train")
    said = np.argmax(predict(network, [data.strokes(int(i)) for i in train_part]), axis=1)
    assert (said == data.classes.index("square")).mean() > 0.9  # the cache's answer, not the labels
    record = member_training(tmp_path / "member" / "sequence.pt")
    assert record["teacher_cache"] == str(cache) and record["distill_weight"] == 1.0
    assert json.loads((tmp_path / "member" / "metrics.json").read_text())["teacher_cache"] == str(cache)
    assert "answers cached in" in _member_recipe(record) and "MIT licence" in _member_recipe(record)
    with pytest.raises(SystemExit, match="replaces --teacher"):
        train_sequence(["--data", str(fixture_data), "--teacher-cache", str(cache), "--sequence-teacher",
                        str(tmp_path / "member" / "sequence.pt"), "--out", str(tmp_path / "never")])
    assert not (tmp_path / "never").exists()
