"""The teachers' reader (`training.teachers`): the TensorFlow.js layers format on tiny models built
here, the class mapping, the numpy_bitmap render, the answers' cache, and — when ../shared/data is
there — the two real teachers (committed in model/public/) on a few training drawings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from model.bitmap import BitmapSpec, render, render_many
from model.strokes import DrawingError
from model.tfjs import PUBLIC_DIR, class_columns, read_class_names, read_layers_model
from training.data import SHARED_DATA, holds_quickdraw, load_dataset
from training.teachers import (
    TEACHER_NAMES,
    Teacher,
    TeacherError,
    geometric_mean,
    load_teachers,
    read_cache,
    read_our_classes,
    view_of,
    write_cache,
)
from training.teachers.commands import main


# -- tiny layers models ------------------------------------------------------------------------------
def write_layers_model(
    folder: Path, topology: dict, weights: list[tuple[str, np.ndarray]], shards: int = 1
) -> Path:
    """A TensorFlow.js layers folder: ``model.json`` and the weights, in order, cut into ``shards`` files."""
    folder.mkdir(parents=True, exist_ok=True)
    payload = b"".join(np.asarray(value, dtype="<f4").tobytes() for _, value in weights)
    cut = np.linspace(0, len(payload), shards + 1).astype(int)
    paths = []
    for index in range(shards):
        name = f"group1-shard{index + 1}of{shards}.bin"
        (folder / name).write_bytes(payload[cut[index] : cut[index + 1]])
        paths.append(name)
    manifest = [{"paths": paths, "weights": [
        {"name": name, "shape": list(np.shape(value)), "dtype": "float32"} for name, value in weights
    ]}]  # fmt: skip
    description = {
        "format": "layers-model",
        "modelTopology": {"model_config": topology},
        "weightsManifest": manifest,
    }
    (folder / "model.json").write_text(json.dumps(description), encoding="utf-8")
    return folder


def functional(layers: list[dict], output: str) -> dict:
    return {
        "class_name": "Functional",
        "config": {"name": "model", "layers": layers, "input_layers": [["input", 0, 0]],
                   "output_layers": [[output, 0, 0]]},
    }  # fmt: skip


def node(class_name: str, name: str, inputs: list[str], **config: object) -> dict:
    inbound = [[[source, 0, 0, {}] for source in inputs]] if inputs else []
    return {
        "class_name": class_name,
        "name": name,
        "config": {"name": name, **config},
        "inbound_nodes": inbound,
    }


def conv_same_nhwc(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray, stride: int) -> np.ndarray:
    """TensorFlow's ``same`` convolution with loops: ``x`` (n, h, w, in), ``kernel`` (kh, kw, in, out)."""
    n, h, w, _ = x.shape
    kh, kw, _, out = kernel.shape
    oh, ow = -(-h // stride), -(-w // stride)
    pad_h = max((oh - 1) * stride + kh - h, 0)
    pad_w = max((ow - 1) * stride + kw - w, 0)
    padded = np.zeros((n, h + pad_h, w + pad_w, x.shape[3]))
    padded[:, pad_h // 2 : pad_h // 2 + h, pad_w // 2 : pad_w // 2 + w] = x
    result = np.zeros((n, oh, ow, out))
    for i in range(oh):
        for j in range(ow):
            patch = padded[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :]
            result[:, i, j, :] = np.einsum("nabc,abcd->nd", patch, kernel) + bias
    return result


def test_layers_model_matches_a_hand_written_forward(tmp_path: Path) -> None:
    """Conv (stride 2, same padding: TensorFlow pads after), batch norm, ReLU, a residual Add, max
    pooling, channels-last Flatten and a softmax Dense, against the same network in plain numpy."""
    rng = np.random.default_rng(0)
    kernel, bias = rng.normal(size=(3, 3, 2, 3)), rng.normal(size=3)
    gamma, beta = rng.uniform(0.5, 2, size=3), rng.normal(size=3)
    mean, variance = rng.normal(size=3), rng.uniform(0.5, 2, size=3)
    kernel2, bias2 = rng.normal(size=(1, 1, 3, 3)), rng.normal(size=3)
    dense, dense_bias = rng.normal(size=(3, 5)), rng.normal(size=5)
    layers = [
        node("InputLayer", "input", [], batch_input_shape=[None, 6, 6, 2]),
        node("Conv2D", "conv", ["input"], filters=3, kernel_size=[3, 3], strides=[2, 2], padding="same",
             activation="linear", use_bias=True, data_format="channels_last", dilation_rate=[1, 1]),
        node("BatchNormalization", "bn", ["conv"], axis=[3], epsilon=1e-3, center=True, scale=True),
        node("ReLU", "relu", ["bn"]),
        node("Conv2D", "conv2", ["relu"], filters=3, kernel_size=[1, 1], strides=[1, 1], padding="valid",
             activation="relu", use_bias=True),
        node("Add", "add", ["relu", "conv2"]),
        node("MaxPooling2D", "pool", ["add"], pool_size=[2, 2], strides=[2, 2], padding="valid"),
        node("Dropout", "drop", ["pool"], rate=0.5),
        node("Flatten", "flat", ["drop"], data_format="channels_last"),
        node("Dense", "dense", ["flat"], units=5, activation="softmax", use_bias=True),
    ]  # fmt: skip
    weights = [
        ("bn/gamma", gamma), ("bn/beta", beta), ("bn/moving_mean", mean), ("bn/moving_variance", variance),
        ("conv/kernel", kernel), ("conv/bias", bias), ("conv2/kernel", kernel2), ("conv2/bias", bias2),
        ("dense/kernel", dense), ("dense/bias", dense_bias),
    ]  # fmt: skip
    network = read_layers_model(
        write_layers_model(tmp_path / "tiny", functional(layers, "dense"), weights, 3)
    )

    x = rng.uniform(0, 1, size=(4, 6, 6, 2))
    y = conv_same_nhwc(x, kernel, bias, 2)  # (4, 3, 3, 3)
    y = np.maximum((y - mean) / np.sqrt(variance + 1e-3) * gamma + beta, 0)
    y = y + np.maximum(conv_same_nhwc(y, kernel2, bias2, 1), 0)
    y = y[:, :2, :2, :].reshape(4, 1, 2, 1, 2, 3).max(axis=(2, 4))  # 2×2 max pool, valid: 3 → 1
    logits = y.reshape(4, -1) @ dense + dense_bias
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    with torch.inference_mode():
        got = network(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_flatten_reads_channels_last(tmp_path: Path) -> None:
    """A Sequential model: a 1×1 conv making channels (x, 10x), Flatten, an identity Dense: the output
    is the pixels in (row, column, channel) order, as Keras flattens."""
    layers = [
        {"class_name": "Conv2D", "config": {"name": "c", "filters": 2, "kernel_size": [1, 1],
                                            "activation": "linear", "batch_input_shape": [None, 2, 3, 1]}},
        {"class_name": "Flatten", "config": {"name": "f"}},
        {"class_name": "Dense", "config": {"name": "d", "units": 12, "activation": "linear"}},
    ]  # fmt: skip
    weights = [
        ("c/kernel", np.array([1.0, 10.0]).reshape(1, 1, 1, 2)), ("c/bias", np.zeros(2)),
        ("d/kernel", np.eye(12)), ("d/bias", np.zeros(12)),
    ]  # fmt: skip
    topology = {"class_name": "Sequential", "config": {"name": "s", "layers": layers}}
    network = read_layers_model(write_layers_model(tmp_path / "flat", topology, weights))
    x = np.arange(1.0, 7.0).reshape(1, 2, 3)
    with torch.inference_mode():
        got = network(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got[0], np.stack([x, 10 * x], axis=-1).reshape(-1))
    assert not np.allclose(got[0], np.stack([x, 10 * x], axis=1).reshape(-1))  # channels-first would differ


def test_layers_model_errors_are_clear(tmp_path: Path) -> None:
    dense = [{"class_name": "Dense", "config": {"name": "d", "units": 2, "activation": "linear"}}]
    topology = {"class_name": "Sequential", "config": {"name": "s", "layers": dense}}
    folder = write_layers_model(
        tmp_path / "short", topology, [("d/kernel", np.ones((3, 2))), ("d/bias", np.ones(2))]
    )
    shard = folder / "group1-shard1of1.bin"
    shard.write_bytes(shard.read_bytes()[:-4])
    with pytest.raises(TeacherError, match="ends inside weight d/bias"):
        read_layers_model(folder)
    lstm = [{"class_name": "LSTM", "config": {"name": "l", "units": 2}}]
    folder = write_layers_model(
        tmp_path / "lstm", {"class_name": "Sequential", "config": {"layers": lstm}}, []
    )
    with pytest.raises(TeacherError, match="unsupported layer type LSTM"):
        read_layers_model(folder)
    missing = write_layers_model(tmp_path / "missing", topology, [("d/kernel", np.ones((3, 2)))])
    with pytest.raises(TeacherError, match="d/bias is not in the manifest"):
        read_layers_model(missing)
    with pytest.raises(TeacherError, match="cannot read"):
        read_layers_model(tmp_path / "nowhere")
    swapped = [node("InputLayer", "input", []), node("ReLU", "b", ["a"]), node("ReLU", "a", ["input"])]
    with pytest.raises(TeacherError, match="reads layers listed after it: a"):
        read_layers_model(write_layers_model(tmp_path / "order", functional(swapped, "b"), []))
    dangling = [node("InputLayer", "input", []), node("ReLU", "b", ["ghost"])]
    with pytest.raises(TeacherError, match="reads unknown layers: ghost"):
        read_layers_model(write_layers_model(tmp_path / "ghost", functional(dangling, "b"), []))


# -- classes ----------------------------------------------------------------------------------------
def test_class_mapping_by_name_and_its_errors(tmp_path: Path) -> None:
    teacher = ["The_Eiffel_Tower", "cat", "ice_cream", "Hot Dog"]
    ours = ["hot dog", "ice cream", "cat", "The Eiffel Tower"]
    columns = class_columns(teacher, ours)
    assert columns.tolist() == [3, 2, 1, 0]
    answers = np.array([[0.1, 0.2, 0.3, 0.4]])
    assert answers[:, columns].tolist() == [[0.4, 0.3, 0.2, 0.1]]
    with pytest.raises(TeacherError, match="no class for 1 of ours: dragon"):
        class_columns(teacher, ["cat", "dragon"])
    with pytest.raises(TeacherError, match="two classes named 'ice cream'"):
        class_columns(["ice cream", "ice_cream"], ["ice cream"])

    (tmp_path / "comma").mkdir()
    (tmp_path / "comma" / "class_names.txt").write_text("cat, ice_cream,dog\n", encoding="utf-8")
    assert read_class_names(tmp_path / "comma") == ["cat", "ice_cream", "dog"]
    (tmp_path / "lines").mkdir()
    (tmp_path / "lines" / "class_names.txt").write_text("cat\nice_cream\n\n", encoding="utf-8")
    assert read_class_names(tmp_path / "lines") == ["cat", "ice_cream"]
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "class.json").write_text(json.dumps({"1": "dog", "0": "cat"}), encoding="utf-8")
    assert read_class_names(tmp_path / "json") == ["cat", "dog"]
    with pytest.raises(TeacherError, match="no class list"):
        read_class_names(tmp_path)


def test_teacher_missing_a_class_fails_at_load(tmp_path: Path) -> None:
    dense = [{"class_name": "Dense", "config": {"name": "d", "units": 2, "activation": "softmax"}}]
    topology = {"class_name": "Sequential", "config": {"name": "s", "layers": dense}}
    folder = write_layers_model(
        tmp_path / "t", topology, [("d/kernel", np.ones((784, 2))), ("d/bias", np.zeros(2))]
    )
    (folder / "class_names.txt").write_text("circle,square", encoding="utf-8")
    with pytest.raises(TeacherError, match="triangle"):
        Teacher.load(folder, classes=["circle", "square", "triangle"])


# -- the render -------------------------------------------------------------------------------------
def test_render_shape_range_and_line_width() -> None:
    """A horizontal line across the 256 box: 28 × 28 floats in [0, 1], centred, the line 16/304 of the
    image thick (about 1.47 pixels of ink in each column it crosses), the margins empty."""
    line = [np.array([[0.0, 0.0], [255.0, 0.0]])]
    image = render(line)
    assert image.shape == (28, 28) and image.dtype == np.float32
    assert image.min() >= 0.0 and image.max() <= 1.0
    columns = image.sum(axis=0)
    assert columns[10:18] == pytest.approx(np.full(8, 16 * 28 / 304), abs=0.03)
    assert image[:, 0].sum() == 0 and image[:, -1].sum() == 0  # padding of 16 units + half a line
    rows = image.sum(axis=1)
    assert abs(float((rows * np.arange(28)).sum() / rows.sum()) - 13.5) < 0.05  # centred vertically

    square = [np.array([[0.0, 0.0], [255.0, 0.0], [255.0, 255.0], [0.0, 255.0], [0.0, 0.0]])]
    image = render(square)
    assert image[14, 14] == 0 and image[0].sum() == 0
    assert image[2, 14] > 0.95 and image[14, 2] > 0.95  # the edges fill rows and columns 2
    thin = render(square, BitmapSpec(line_width=8.0))
    assert 0.35 < thin.sum() / image.sum() < 0.65
    assert np.abs(render(square, BitmapSpec(supersample=1)) - image).mean() < 0.02


def test_render_many_simplifies_any_drawing_and_refuses_bad_ones() -> None:
    raw = [[[100, 300, 300, 100, 100], [50, 50, 250, 250, 50]]]  # canvas pixels
    simplified = [np.array([[0.0, 0.0], [255.0, 0.0], [255.0, 255.0], [0.0, 255.0], [0.0, 0.0]])]
    images = render_many([raw, simplified])
    assert images.shape == (2, 28, 28)
    np.testing.assert_allclose(images[0], images[1], atol=1e-5)
    smaller = [0.8 * simplified[0]]  # a simplified drawing whose extent is under 255 is not scaled again
    assert render_many([smaller], simplified=True).sum() < 0.9 * render_many([smaller]).sum()
    with pytest.raises(DrawingError):
        render_many([[[[1, 2], [3]]]])
    assert render_many([]).shape == (0, 28, 28)


def test_geometric_mean_is_normalized() -> None:
    first = np.array([[0.5, 0.5, 0.0], [0.9, 0.05, 0.05]])
    second = np.array([[0.5, 0.0, 0.5], [0.1, 0.8, 0.1]])
    mean = geometric_mean([first, second])
    np.testing.assert_allclose(mean.sum(axis=1), 1.0, rtol=1e-6)
    assert mean[0].argmax() == 0  # the only class both allow
    expected = np.sqrt(first[1] * second[1])
    np.testing.assert_allclose(mean[1], expected / expected.sum(), rtol=1e-5)


# -- the cache --------------------------------------------------------------------------------------
def test_cache_round_trip_dense_and_top_k(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    answers = {name: rng.dirichlet(np.full(6, 0.3), size=5).astype(np.float32) for name in TEACHER_NAMES}
    keys = [f"k{i}" for i in range(5)]
    labels, extra = np.arange(5) % 6, np.array([False, False, False, True, True])
    classes = [f"c{i}" for i in range(6)]
    dense = read_cache(write_cache(tmp_path / "dense.npz", keys, labels, extra, answers, classes, {"x": 1}))
    assert dense.meta["x"] == 1 and dense.classes == classes and dense.extra.tolist() == extra.tolist()
    for name in TEACHER_NAMES:
        np.testing.assert_allclose(dense.probabilities[name], answers[name], atol=1e-3)
    assert dense.rows(["k3", "k0"]).tolist() == [3, 0]
    with pytest.raises(KeyError, match="k9"):
        dense.rows(["k9"])
    top = read_cache(write_cache(tmp_path / "top.npz", keys, labels, extra, answers, classes, {}, top_k=2))
    for name in TEACHER_NAMES:
        kept = top.probabilities[name]
        assert ((kept > 0).sum(axis=1) == 2).all()
        np.testing.assert_array_equal(kept.argmax(axis=1), answers[name].argmax(axis=1))
        second = np.sort(answers[name], axis=1)[:, -2]
        np.testing.assert_allclose(np.sort(kept, axis=1)[:, -2], second, atol=1e-3)
    np.testing.assert_allclose(top.committee().sum(axis=1), 1.0, rtol=1e-5)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(TeacherError, match="cannot read"):
        read_cache(tmp_path / "bad.npz")


def flat_teacher(folder: Path, classes: list[str], seed: int) -> Path:
    """A teacher that reads 28 × 28 renders with one softmax Dense layer, its classes in reverse order."""
    rng = np.random.default_rng(seed)
    dense = [
        {"class_name": "Flatten", "config": {"name": "f", "batch_input_shape": [None, 28, 28, 1]}},
        {"class_name": "Dense", "config": {"name": "d", "units": len(classes), "activation": "softmax"}},
    ]
    topology = {"class_name": "Sequential", "config": {"name": "s", "layers": dense}}
    weights = [("d/kernel", rng.normal(size=(784, len(classes)))), ("d/bias", np.zeros(len(classes)))]
    write_layers_model(folder, topology, weights)
    (folder / "class_names.txt").write_text(",".join(name.replace(" ", "_") for name in classes[::-1]))
    return folder


def test_cache_command_stores_every_training_drawing(fixture_data: Path, tmp_path: Path) -> None:
    ours = read_our_classes()
    for seed, name in enumerate(TEACHER_NAMES):
        flat_teacher(tmp_path / "models" / name, ours, seed)
    out = tmp_path / "cache.npz"
    main(["cache", "--data", str(fixture_data), "--models", str(tmp_path / "models"), "--extra", "none",
          "--out", str(out), "--batch-size", "16"])  # fmt: skip
    cache = read_cache(out)
    training = load_dataset(fixture_data, "train")
    assert sorted(cache.key_ids.tolist()) == sorted(r.key_id for r in training)
    assert not cache.extra.any() and cache.meta["drawings"] == len(training)
    rows = cache.rows([r.key_id for r in training])
    assert [ours[label] for label in cache.labels[rows]] == [r.word for r in training]
    teachers = load_teachers(tmp_path / "models")
    for teacher in teachers:
        expected = teacher.probabilities([r.strokes for r in training])
        np.testing.assert_allclose(cache.probabilities[teacher.name][rows], expected, atol=2e-3)
    with pytest.raises(TeacherError, match="no teachers folder"):
        load_teachers(tmp_path / "nowhere")


def test_views_of_a_drawing() -> None:
    ladder = [np.array([[0.0, 30.0 * i], [100.0, 30.0 * i + 1], [200.0, 30.0 * i]]) for i in range(9)]
    assert view_of(ladder, "whole") is ladder
    assert len(view_of(ladder, "half")) == 5
    lines = view_of(ladder, "kontour")
    assert 0 < len(lines) <= 15 and all(len(line) == 2 for line in lines)
    with pytest.raises(ValueError, match="unknown view"):
        view_of(ladder, "mirror")


# -- the real teachers ------------------------------------------------------------------------------
REAL = holds_quickdraw(SHARED_DATA)
WORDS = (
    "apple bicycle butterfly cactus car clock envelope eyeglasses fish house key ladder mushroom pants "
    "scissors snowman star sun tree umbrella"
).split()


@pytest.mark.skipif(not REAL, reason="needs ../shared/data/quickdraw")
def test_real_teachers_read_training_drawings() -> None:
    """Both teachers name most of 60 recognized training drawings of 20 clear categories (they read
    about 70–75 % of all training drawings); the same drawings in black on white they do not."""
    teachers = load_teachers(PUBLIC_DIR)
    records = [r for r in load_dataset(SHARED_DATA, "train", categories=WORDS) if r.recognized]
    chosen = [r for word in WORDS for r in [r for r in records if r.word == word][:3]]
    labels = np.array([teachers[0].classes.index(r.word) for r in chosen])
    images = render_many([r.strokes for r in chosen])
    for teacher in teachers:
        answers = teacher.probabilities([r.strokes for r in chosen])
        assert answers.shape == (60, 345)
        np.testing.assert_allclose(answers.sum(axis=1), 1.0, rtol=1e-4)
        assert (answers.argmax(axis=1) == labels).mean() >= 0.6, teacher.name
        inverted = teacher.image_probabilities(1.0 - images)
        assert (inverted.argmax(axis=1) == labels).mean() <= 0.2, teacher.name


def test_the_cache_takes_the_extra_folder_only_where_it_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`make train` on a fresh clone (no ../shared/): the default `auto` leaves the extra drawings out;
    a folder named on the command line must exist."""
    from training.teachers import commands as teachers

    monkeypatch.setattr(teachers, "EXTRA_DATA", tmp_path / "missing")
    assert teachers.extra_folder("auto") is None and teachers.extra_folder("none") is None
    monkeypatch.setattr(teachers, "EXTRA_DATA", tmp_path)
    assert teachers.extra_folder("auto") == tmp_path
    assert teachers.extra_folder(str(tmp_path / "given")) == tmp_path / "given"
