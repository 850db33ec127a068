"""The evaluation core with fake models whose metrics can be worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from model.raster import RasterSpec, rasterize
from model.strokes import simplify_drawing, validate_drawing
from tests.conftest import shape
from training.augment import first_fraction, kontour_style
from training.eval_data import load_eval_data
from training.eval_models import as_model
from training.eval_predict import prepare_chunk
from training.eval_settings import EvalError, EvalSettings
from training.evaluate import evaluate, write_report

SPEC = RasterSpec(size=32, line_width=1.6, margin=2.0, channels=("ink",))
WORDS = ["circle", "square", "ladder"]  # the fake models' class order
PER_WORD = 6
RUNGS = 10
FAST = EvalSettings(workers=0, latency_samples=4, batch_size=5)  # batches cut across categories


def ladder(rng: np.random.Generator) -> list:
    """Ten horizontal rungs, top to bottom, one stroke each (simplified format)."""
    strokes = []
    for i in range(RUNGS):
        x0, y = float(rng.uniform(0, 40)), 20.0 * i + float(rng.uniform(-3, 3))
        strokes.append([[x0, x0 + float(rng.uniform(120, 200))], [y, y]])
    return strokes


def write_eval_folder(root: Path, extra_lines: tuple[str, ...] = ()) -> Path:
    """circle and square (raw, one stroke) and ladder (simplified, ten strokes), six drawings each."""
    rng = np.random.default_rng(7)
    for folder in ("raw", "simplified"):
        (root / "full" / folder).mkdir(parents=True, exist_ok=True)
    for word in WORDS:
        lines = []
        for i in range(PER_WORD):
            drawing = ladder(rng) if word == "ladder" else shape(word, rng)
            item = {"word": word, "key_id": f"{word}-{i}", "countrycode": "FR", "recognized": True}
            lines.append(json.dumps({**item, "drawing": drawing}))
        folder = "simplified" if word == "ladder" else "raw"
        if word == "square":
            lines += list(extra_lines)
        (root / "full" / folder / f"{word}.ndjson").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_eval_folder(tmp_path_factory.mktemp("evalfolder"))


def image_key(image: np.ndarray) -> bytes:
    return np.round(np.asarray(image) * 255).astype(np.uint8).tobytes()


class ConstantModel:
    """Always the same probabilities: circle 0.5, square 0.3, ladder 0.2."""

    labels = WORDS
    spec = SPEC
    name = "constant"

    def probabilities_from_images(self, images: np.ndarray) -> np.ndarray:
        return np.tile([0.5, 0.3, 0.2], (len(images), 1))


class HalfSeer:
    """Right (probability 0.8) once it sees at least half a drawing's strokes, else says 'circle'
    (or 'square' for a circle). It recognises rasters it was shown; any other image → constant."""

    labels = WORDS
    spec = SPEC
    name = "half-seer"

    def __init__(self, data_root: Path) -> None:
        self.table: dict[bytes, int] = {}
        data = load_eval_data(data_root, "all")
        for word, raw in zip(data.words, data.strokes, strict=True):
            strokes = simplify_drawing(validate_drawing(raw))
            for seen in range(1, len(strokes) + 1):
                right = 2 * seen >= len(strokes)
                wrong = "square" if word == "circle" else "circle"
                answer = WORDS.index(word if right else wrong)
                self.table.setdefault(image_key(rasterize(strokes[:seen], SPEC)), answer)

    def probabilities_from_images(self, images: np.ndarray) -> np.ndarray:
        out = np.tile([0.5, 0.3, 0.2], (len(images), 1))
        for row, image in zip(out, images, strict=True):
            answer = self.table.get(image_key(image))
            if answer is not None:
                row[:] = 0.1
                row[answer] = 0.8
        return out


def test_constant_model_metrics_by_hand(folder: Path) -> None:
    result = evaluate([ConstantModel()], load_eval_data(folder, "all"), FAST, progress=False)
    metrics = result.report["models"][0]["metrics"]
    head = metrics["headline"]
    assert head["drawings"] == 18
    assert head["top1"] == pytest.approx(1 / 3)  # only circles are right
    assert head["top3"] == pytest.approx(1.0)
    assert head["map3"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert head["kontour_top1"] == pytest.approx(1 / 3)
    assert head["table42_top1"] == pytest.approx(1 / 3)  # 3 classes: the table holds them all
    assert head["table42_expected"] == pytest.approx(1 / 3)
    assert head["ece"] == pytest.approx(0.5 - 1 / 3)  # every guess at 0.5, right a third of the time
    assert head["mean_true_probability"] == pytest.approx((0.5 + 0.3 + 0.2) / 3)
    assert [p["top1"] for p in metrics["strokes_curve"]] == pytest.approx([1 / 3] * 10)
    assert {w: c["top1"] for w, c in metrics["per_category"].items()} == {
        "circle": 1.0,
        "ladder": 0.0,
        "square": 0.0,
    }
    pairs = [(p["true"], p["predicted"], p["count"], p["share_of_true"]) for p in metrics["confused_pairs"]]
    assert pairs == [("square", "circle", 6, 1.0), ("ladder", "circle", 6, 1.0)]  # ties: class order
    assert metrics["confused_pairs"][0]["examples"] == ["square-0", "square-1", "square-2", "square-3"]
    filled = [b for b in metrics["calibration"]["bins"] if b["count"]]
    assert [(b["low"], b["count"], b["accuracy"]) for b in filled] == [(0.5, 18, pytest.approx(1 / 3))]
    assert set(result.examples) == {f"{w}-{i}" for w in ("square", "ladder") for i in range(4)}


def test_strokes_curve_follows_the_strokes_drawn(folder: Path) -> None:
    result = evaluate([HalfSeer(folder)], load_eval_data(folder, "all"), FAST, progress=False)
    curve = result.report["models"][0]["metrics"]["strokes_curve"]
    # ladders (a third of the drawings) are right from ceil(10 f) ≥ 5 rungs, i.e. f ≥ 0.5;
    # one-stroke circles and squares are whole at every fraction
    expected = [2 / 3] * 4 + [1.0] * 6
    assert [p["fraction"] for p in curve] == pytest.approx([0.1 * i for i in range(1, 11)])
    assert [p["top1"] for p in curve] == pytest.approx(expected)
    head = result.report["models"][0]["metrics"]["headline"]
    assert head["top1"] == 1.0 and head["half_top1"] == 1.0
    assert head["ece"] == pytest.approx(0.2)  # all at 0.8, all right


def test_compare_two_models(folder: Path, tmp_path: Path) -> None:
    models = [ConstantModel(), HalfSeer(folder)]
    result = evaluate(models, load_eval_data(folder, "all"), FAST, progress=False)
    comparison = result.report["comparison"]
    assert comparison["headline"]["top1"]["delta"] == pytest.approx(1 - 1 / 3)
    assert comparison["headline"]["ece"]["delta"] == pytest.approx(0.2 - (0.5 - 1 / 3))
    agree = comparison["agreement"]
    assert (agree["both_right"], agree["only_a_right"], agree["only_b_right"], agree["both_wrong"]) == (
        6,
        0,
        12,
        0,
    )
    assert agree["mcnemar_p"] == pytest.approx(math.erfc(math.sqrt(121 / 12 / 2)))
    changed = [(c["category"], c["delta"]) for c in comparison["categories_changed_most"]]
    assert changed == [("ladder", 1.0), ("square", 1.0), ("circle", 0.0)]
    assert comparison["strokes_curve"][0]["delta_top1"] == pytest.approx(2 / 3 - 1 / 3)
    paths = write_report(result, tmp_path)
    page = paths["html"].read_text()
    assert "constant" in page and "half-seer" in page and 'id="agreement"' in page
    assert 'class="up"' in page  # B better on top-1: highlighted
    assert json.loads(paths["json"].read_text())["comparison"]["agreement"]["only_b_right"] == 12


def test_plain_function_predictor(folder: Path) -> None:
    calls: list[int] = []

    def predict(images: np.ndarray) -> np.ndarray:
        calls.append(len(images))
        assert images.dtype == np.float32 and images.shape[1:] == (1, 32, 32)
        assert 0.0 <= images.min() and images.max() <= 1.0
        return np.tile([0.2, 0.7, 0.1], (len(images), 1))

    model = as_model(predict, labels=WORDS, spec=SPEC, name="fn")
    result = evaluate([model], load_eval_data(folder, "all"), FAST, progress=False)
    assert result.report["models"][0]["metrics"]["headline"]["top1"] == pytest.approx(1 / 3)
    assert max(calls) <= FAST.batch_size
    with pytest.raises(EvalError, match="labels and a raster spec"):
        as_model(predict)


def test_workers_give_the_same_report(folder: Path) -> None:
    data = load_eval_data(folder, "all")
    one = evaluate([HalfSeer(folder)], data, FAST, progress=False).report
    settings = EvalSettings(workers=2, latency_samples=0, batch_size=4)
    two = evaluate([HalfSeer(folder)], data, settings, progress=False).report
    for key in ("headline", "strokes_curve", "per_category", "confused_pairs", "calibration"):
        assert one["models"][0]["metrics"][key] == two["models"][0]["metrics"][key]
    assert two["models"][0]["metrics"]["latency"]["throughput"]["workers"] == 2


def test_prepare_chunk_rasters_each_distinct_prefix_once(folder: Path) -> None:
    data = load_eval_data(folder, "all")
    raw = data.strokes[data.words.index("ladder")]
    fractions = (0.1, 0.3, 0.35, 1.0)
    chunk = prepare_chunk([raw, [[[1], [1]]]], [SPEC], fractions, 15)
    assert chunk.valid.tolist() == [True, False]  # a single point is not a drawing
    strokes = simplify_drawing(validate_drawing(raw))
    assert len(strokes) == RUNGS
    # 1, 3, 4 and 10 rungs: ceil(0.35 × 10) = 4
    assert chunk.prefixes[0].shape == (4, 1, 32, 32) and chunk.prefix_of.tolist() == [[0, 1, 2, 3]]
    for j, fraction in enumerate(fractions):
        expected = rasterize(first_fraction(strokes, fraction), SPEC)
        got = chunk.prefixes[0][chunk.prefix_of[0, j]]
        assert np.array_equal(got, np.round(expected * 255).astype(np.uint8))
    kontour = rasterize(kontour_style(strokes, 15), SPEC)
    assert np.array_equal(chunk.kontour[0][0], np.round(kontour * 255).astype(np.uint8))
    one_stroke = prepare_chunk([data.strokes[0]], [SPEC], (0.1, 0.5, 1.0), 15)
    assert one_stroke.prefixes[0].shape[0] == 1 and one_stroke.prefix_of.tolist() == [[0, 0, 0]]


def test_corrupt_and_rejected_records_are_counted(tmp_path: Path) -> None:
    bad = (
        "this is not json",
        json.dumps({"word": "square", "key_id": "sq-empty", "drawing": []}),
        json.dumps({"word": "square", "key_id": "sq-dot", "drawing": [[[3], [4]]]}),
    )
    root = write_eval_folder(tmp_path / "data", extra_lines=bad)
    result = evaluate([ConstantModel()], load_eval_data(root, "all"), FAST, progress=False)
    data = result.report["data"]
    assert data["corrupt_records"] == 2 and data["rejected_drawings"] == 1
    assert data["evaluated"] == 18 and data["available_in_split"] == 19
    (problem,) = data["files_with_problems"]
    assert problem["path"] == "full/raw/square.ndjson"
    assert (problem["records"], problem["corrupt"], problem["rejected"], problem["evaluated"]) == (7, 2, 1, 6)
    paths = write_report(result, tmp_path / "out")
    page = paths["html"].read_text()
    assert "2 corrupt records skipped" in page and "full/raw/square.ndjson" in page


def test_unknown_categories_error_or_skip(folder: Path) -> None:
    class TwoWords(ConstantModel):
        labels = ["circle", "square"]

        def probabilities_from_images(self, images: np.ndarray) -> np.ndarray:
            return np.tile([0.6, 0.4], (len(images), 1))

    data = load_eval_data(folder, "all")
    with pytest.raises(EvalError, match="1 categories the model does not know: 'ladder'.*--skip-unknown"):
        evaluate([TwoWords()], data, FAST, progress=False)
    result = evaluate([TwoWords()], data, FAST, progress=False, skip_unknown=True)
    assert result.report["data"]["skipped_unknown"] == {"ladder": 6}
    assert result.report["models"][0]["metrics"]["headline"]["drawings"] == 12


def test_model_output_mismatch_is_a_clear_error(folder: Path) -> None:
    def wrong(images: np.ndarray) -> np.ndarray:
        return np.ones((len(images), 5)) / 5

    model = as_model(wrong, labels=WORDS, spec=SPEC, name="wrong")
    with pytest.raises(EvalError, match=r"shape \(5, 5\), expected \(5, 3\)"):
        evaluate([model], load_eval_data(folder, "all"), FAST, progress=False)


def test_limit_is_a_seeded_sample(folder: Path) -> None:
    data = load_eval_data(folder, "all")
    settings = EvalSettings(workers=0, latency_samples=0, limit=7, seed=3)
    first = evaluate([ConstantModel()], data, settings, progress=False).report
    again = evaluate([ConstantModel()], data, settings, progress=False).report
    assert first["data"]["evaluated"] == 7
    assert first["data"]["per_category"] == again["data"]["per_category"]
    with pytest.raises(EvalError, match="--limit"):
        EvalSettings(limit=0)


def test_split_and_missing_folder_errors(folder: Path, tmp_path: Path) -> None:
    from training.data import DataError

    val = load_eval_data(folder, "val")
    assert len(val) == 9  # at least three per category (six each: the three lowest hashes)
    with pytest.raises(DataError, match="unknown split"):
        load_eval_data(folder, "test")
    with pytest.raises(DataError, match="does not exist"):
        load_eval_data(tmp_path / "nowhere", "all")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no Quick, Draw! files"):
        load_eval_data(tmp_path / "empty", "all")


def test_latency_and_report_keys(folder: Path, tmp_path: Path) -> None:
    result = evaluate([ConstantModel()], load_eval_data(folder, "all"), FAST, progress=False)
    report = json.loads(write_report(result, tmp_path)["json"].read_text())
    assert report["schema"] == "griffon-eval-report/1"
    assert set(report) == {"schema", "created", "settings", "environment", "data", "models", "comparison"}
    assert report["environment"]["cpus"] >= 1 and report["environment"]["torch_threads"] >= 1
    model = report["models"][0]
    assert len(model["fingerprint"]) == 64 and model["classes"] == 3
    latency = model["metrics"]["latency"]
    assert latency["batch1_total_ms"]["samples"] == 4 and len(latency["histogram_ms"]) == 4
    assert latency["batch1_total_ms"]["p50"] <= latency["batch1_total_ms"]["p99"]
    assert latency["throughput"]["inference_images_per_s"] > 0
