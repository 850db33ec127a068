"""Outline icons as extra training drawings (an experiment of recognizer v2; off by default).

Two permissively licensed outline icon sets ship as PyPI packages: Lucide (``lucide``, icons under
the ISC licence) and Tabler Icons (``tabler_icons``, MIT). Both draw with 2-unit strokes on a 24-unit
grid, like a pen drawing. Each SVG element becomes one or more Quick, Draw! strokes (``[[x...],
[y...]]``, in the icon's order), sampled along its outline; training then simplifies, augments and
rasterizes them like any drawing. Which icon stands for which category is written by hand in
``training/icons.yaml`` (an icon is listed only where it shows what a person drawing the word draws:
Lucide's ``mouse`` is a computer mouse, so it is not a Quick, Draw! ``mouse``).
"""

from __future__ import annotations

import importlib.resources
import io
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

MAPPING_FILE = Path(__file__).resolve().parent / "icons.yaml"
CURVE_POINTS = 17  # points sampled along each curve or arc segment (the pipeline then resamples at 1 px)
SCALE = 255 / 24  # icon units -> the dataset's 0-255 range


class IconError(ValueError):
    """An icon set that is not installed, an unknown icon, or an icon without strokes."""


@dataclass(frozen=True)
class IconSet:
    """Where one icon set's SVG files live (a zip inside its PyPI package) and its licence."""

    name: str
    package: str
    archive: str
    licence: str
    url: str


def read_mapping(path: Path = MAPPING_FILE) -> tuple[dict[str, IconSet], dict[str, list[str]]]:
    """The icon sets and the hand-written ``category -> ["set/icon", ...]`` table."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    sets = {name: IconSet(name=name, **fields) for name, fields in document["sets"].items()}
    table = {category: list(icons) for category, icons in document["categories"].items()}
    for category, icons in table.items():
        for icon in icons:
            if icon.split("/", 1)[0] not in sets:
                raise IconError(f"{category}: {icon!r} names no icon set of {path.name}")
    return sets, table


@lru_cache(maxsize=8)
def _archive_names(package: str, archive: str) -> frozenset[str]:
    with zipfile.ZipFile(_archive_path(package, archive)) as zipped:
        return frozenset(name.removesuffix(".svg") for name in zipped.namelist() if name.endswith(".svg"))


def _archive_path(package: str, archive: str) -> Path:
    try:
        return Path(str(importlib.resources.files(package) / archive))
    except ModuleNotFoundError as error:
        raise IconError(
            f"the icon set package {package!r} is not installed: pip install -e '.[dev]'"
        ) from error


def icon_svg(icon_set: IconSet, name: str) -> str:
    """The SVG text of one icon."""
    if name not in _archive_names(icon_set.package, icon_set.archive):
        raise IconError(f"no icon {name!r} in {icon_set.name}")
    with zipfile.ZipFile(_archive_path(icon_set.package, icon_set.archive)) as zipped:
        return zipped.read(f"{name}.svg").decode("utf-8")


def svg_strokes(svg_text: str) -> list[list[list[float]]]:
    """The visible outlines of an SVG icon as Quick, Draw! strokes in 0-255 coordinates.

    Every shape (path, circle, rectangle, line, polyline...) is split into its sub-paths; each
    sub-path is one stroke (its corners, and :data:`CURVE_POINTS` along each curve). Invisible
    helpers (``stroke="none"``, like Tabler's 24 × 24 frame) are skipped."""
    from svgelements import SVG, Close, Line, Move, Shape  # optional: training only
    from svgelements import Path as SvgPath

    strokes: list[list[list[float]]] = []
    for element in SVG.parse(io.StringIO(svg_text)).elements():
        if not isinstance(element, Shape) or element.values.get("stroke") == "none":
            continue
        for sub in SvgPath(element).as_subpaths():
            points: list[tuple[float, float]] = []
            for segment in sub:
                if isinstance(segment, Move):
                    points.append((segment.end.x, segment.end.y))
                elif isinstance(segment, Line | Close):
                    if segment.start is not None and not points:
                        points.append((segment.start.x, segment.start.y))
                    if segment.end is not None:
                        points.append((segment.end.x, segment.end.y))
                else:  # curves and arcs: sampled along their own parameter
                    if not points:
                        points.append((segment.start.x, segment.start.y))
                    points.extend((p[0], p[1]) for p in segment.npoint(np.linspace(0, 1, CURVE_POINTS)[1:]))
            if len(points) >= 2:
                array = np.asarray(points, dtype=np.float64) * SCALE
                strokes.append([array[:, 0].round(2).tolist(), array[:, 1].round(2).tolist()])
    if not strokes:
        raise IconError("the icon has no visible stroke")
    return strokes


def icon_drawings(
    classes: list[str], sets: list[str], path: Path = MAPPING_FILE
) -> tuple[list[list[list[list[float]]]], list[int]]:
    """Every mapped icon of the chosen ``sets`` for ``classes``: (strokes per icon, class index)."""
    icon_sets, table = read_mapping(path)
    unknown = sorted(set(sets) - set(icon_sets))
    if unknown:
        raise IconError(f"unknown icon set(s) {unknown}; known: {sorted(icon_sets)}")
    index_of = {name: i for i, name in enumerate(classes)}
    drawings, labels = [], []
    for category, icons in table.items():
        if category not in index_of:
            continue
        for icon in icons:
            set_name, name = icon.split("/", 1)
            if set_name in sets:
                drawings.append(svg_strokes(icon_svg(icon_sets[set_name], name)))
                labels.append(index_of[category])
    return drawings, labels
