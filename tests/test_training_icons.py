"""Outline icons as extra training drawings (`training.icons`, `PreparedData.with_extra`, `--icons`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from model.strokes import validate_drawing
from tests.conftest import FIXTURE_WORDS
from training.icons import IconError, icon_drawings, icon_svg, read_mapping, svg_strokes
from training.prepare import SPLIT_CODES, prepare
from training.train import parse_config, train

CATEGORIES = Path(__file__).resolve().parents[1] / "model" / "weights" / "categories.txt"

SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" stroke="currentColor" fill="none">
  <path stroke="none" d="M0 0h24v24H0z" fill="none"/>
  <path d="M2 2 L22 2 M2 12 L22 22" />
  <circle cx="12" cy="12" r="6" />
</svg>"""


def test_svg_outlines_become_strokes_in_dataset_coordinates() -> None:
    strokes = svg_strokes(SVG)
    assert len(strokes) == 3  # two sub-paths of the path, the circle; the invisible frame is skipped
    scale = 255 / 24
    assert strokes[0][0] == pytest.approx([2 * scale, 22 * scale])  # x of the first line
    assert strokes[0][1] == pytest.approx([2 * scale, 2 * scale])  # its y
    assert strokes[1][0] == pytest.approx([2 * scale, 22 * scale])
    assert strokes[1][1] == pytest.approx([12 * scale, 22 * scale])
    xs, ys = (np.asarray(a) for a in strokes[2])
    radius = np.hypot(xs - 12 * scale, ys - 12 * scale)
    assert radius == pytest.approx(np.full(len(xs), 6 * scale), rel=1e-3)  # on the circle
    assert len(xs) > 8 and (xs[0], ys[0]) == pytest.approx((xs[-1], ys[-1]))  # sampled and closed
    with pytest.raises(IconError):
        svg_strokes('<svg xmlns="http://www.w3.org/2000/svg"><path stroke="none" d="M0 0h24"/></svg>')


def test_the_mapping_names_real_categories_and_installed_icons() -> None:
    """Every mapped icon exists in its installed set and converts to a drawing our validator takes;
    no icon stands for two categories."""
    categories = set(CATEGORIES.read_text(encoding="utf-8").split("\n")) - {""}
    sets, table = read_mapping()
    assert set(table) <= categories and len(table) >= 150
    seen: dict[str, str] = {}
    for category, icons in table.items():
        assert icons, category
        for icon in icons:
            assert icon not in seen, f"{icon} stands for {seen.get(icon)} and {category}"
            seen[icon] = category
            set_name, name = icon.split("/", 1)
            validate_drawing(svg_strokes(icon_svg(sets[set_name], name)))
    assert {"lucide", "tabler"} <= {icon.split("/")[0] for icon in seen}
    assert "mouse" not in table  # both sets' « mouse » is a computer mouse: not listed on purpose


def test_unknown_sets_and_icons_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(IconError, match="unknown icon set"):
        icon_drawings(["cat"], ["noun-project"])
    sets, _ = read_mapping()
    with pytest.raises(IconError, match="no icon"):
        icon_svg(sets["lucide"], "no-such-icon")
    bad = tmp_path / "icons.yaml"
    bad.write_text("sets: {}\ncategories:\n  cat: [lucide/cat]\n", encoding="utf-8")
    with pytest.raises(IconError, match="names no icon set"):
        read_mapping(bad)


def test_extra_drawings_only_ever_train(fixture_data: Path, tmp_path: Path) -> None:
    data = prepare(fixture_data, tmp_path / "prepared")
    drawings, labels = icon_drawings(data.classes, ["lucide", "tabler"])
    assert drawings and {data.classes[label] for label in labels} <= set(FIXTURE_WORDS)
    more = data.with_extra(drawings, labels)
    extra = more.indices("extra")
    assert len(more) == len(data) + len(drawings) and extra.tolist() == list(range(len(data), len(more)))
    assert set(extra) <= set(more.indices("train"))
    for split in ("val", "dev"):
        assert np.array_equal(more.indices(split), data.indices(split))
    assert more.labels[extra].tolist() == labels
    for index in range(len(data)):  # the dataset's own drawings are untouched
        pairs = zip(more.strokes(index), data.strokes(index), strict=True)
        assert all(np.array_equal(a, b) for a, b in pairs)
    assert len(more.strokes(int(extra[0]))) >= 1 and more.meta["extra_drawings"] == len(drawings)
    assert int((more.splits == SPLIT_CODES["extra"]).sum()) == len(drawings)


def test_training_with_icons_adds_them_to_the_training_pool(fixture_data: Path, tmp_path: Path) -> None:
    common = [
        "--preset", "tiny", "--data", str(fixture_data), "--categories", "", "--epochs", "1",
        "--cache", str(tmp_path / "cache"),
    ]  # fmt: skip
    plain = train(parse_config([*common, "--out", str(tmp_path / "plain")]))
    with_icons = train(parse_config([*common, "--out", str(tmp_path / "icons"), "--icons", "lucide,tabler"]))
    _, table = read_mapping()
    mapped = sum(len(table.get(word, [])) for word in FIXTURE_WORDS)
    assert mapped > 0
    assert with_icons["train_drawings"] == plain["train_drawings"] + mapped
    assert with_icons["held_out_drawings"] == plain["held_out_drawings"]
    assert "outline icons of lucide,tabler" in (tmp_path / "icons" / "MODEL_CARD.md").read_text()
    assert "outline icons" not in (tmp_path / "plain" / "MODEL_CARD.md").read_text()
