"""The Kontour line tool's geometry, both halves: the page's snapping (service/static/snap.js, run in
Node) and the rules' merging of a line into an earlier one (games/geometry.py). A ladder's close
rungs stay parallel rungs (never a zigzag pulled onto the previous rung's ends), a line drawn 4
units beside another is a line of its own, and a true continuation still joins and merges."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from games.geometry import Segment, find_extension
from games.kontour import KontourConfig

SNAP = Path(__file__).parent.parent / "service" / "static" / "snap.js"
NODE = shutil.which("node")
RAIL_L, RAIL_R = [[50.0, 40.0], [50.0, 230.0]], [[150.0, 40.0], [150.0, 230.0]]
RUNG = [[50.0, 100.0], [150.0, 100.0]]


def line_to(tmp_path: Path, lines: list, start: list[float], end: list[float]) -> list[list[float]]:
    """snap.js's `lineTo(lines, start, end)`, run in Node."""
    module = tmp_path / "snap.mjs"
    module.write_text(SNAP.read_text(encoding="utf-8"), encoding="utf-8")
    call = f"lineTo({json.dumps(lines)}, {json.dumps(start)}, {json.dumps(end)})"
    script = f"import {{ lineTo }} from {json.dumps(module.as_uri())};\nconsole.log(JSON.stringify({call}));"
    assert NODE is not None
    done = subprocess.run([NODE, "--input-type=module", "-e", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


needs_node = pytest.mark.skipif(NODE is None, reason="no node on PATH")


@needs_node
def test_a_ladders_next_rung_stays_a_rung_beside_the_previous_one(tmp_path: Path) -> None:
    # Pressed 7 units under the rung's left end, released 12 under its right end: the left end is
    # within the end snap of the rung's, but snapping it there would make a zigzag.
    a, b = line_to(tmp_path, [RAIL_L, RAIL_R, RUNG], [50.0, 107.0], [150.0, 112.0])
    assert a != RUNG[0] and b != RUNG[1]
    assert a[1] == b[1] == 107.0  # straightened, horizontal, where the press was
    assert (a[0], b[0]) == (50.0, 150.0)


@needs_node
def test_a_line_four_units_beside_another_keeps_its_place(tmp_path: Path) -> None:
    a, b = line_to(tmp_path, [RUNG], [52.0, 104.0], [148.0, 104.0])
    assert (a, b) == ([52.0, 104.0], [148.0, 104.0])


@needs_node
def test_a_continuation_and_a_corner_still_join_the_earlier_end(tmp_path: Path) -> None:
    a, b = line_to(tmp_path, [RUNG], [154.0, 103.0], [220.0, 101.0])  # on along the rung's line
    assert a == RUNG[1] and b == [220.0, 100.0]
    a, b = line_to(tmp_path, [RUNG], [147.0, 96.0], [149.0, 30.0])  # up from the rung's end
    assert a == RUNG[1] and b == [150.0, 30.0]


@needs_node
def test_a_line_beside_a_floor_keeps_off_the_corner_it_shares_with_a_wall(tmp_path: Path) -> None:
    wall, floor = [[50.0, 110.0], [50.0, 230.0]], [[50.0, 230.0], [200.0, 230.0]]
    a, b = line_to(tmp_path, [wall, floor], [52.0, 236.0], [198.0, 236.0])
    assert (a, b) == ([52.0, 236.0], [198.0, 236.0])  # the wall's end is the floor's: left alone


@needs_node
def test_a_press_on_an_end_with_both_ends_near_the_same_line_is_not_that_line_again(tmp_path: Path) -> None:
    a, b = line_to(tmp_path, [RUNG], [51.0, 106.0], [149.0, 106.0])
    assert (a, b) != (RUNG[0], RUNG[1]) and a[1] == b[1] == 106.0


def segment(x0: float, y0: float, x1: float, y1: float) -> Segment:
    return Segment(x0=x0, y0=y0, x1=x1, y1=y1)


def test_the_rules_keep_a_line_laid_four_units_over_another() -> None:
    tol = KontourConfig.load().geometry
    floor = segment(50, 100, 150, 100)
    assert find_extension([floor], segment(55, 104, 145, 104), tol) is None  # beside it: its own line
    assert find_extension([floor], segment(60, 101, 140, 101), tol) == 0  # traced over it: the same
    assert find_extension([floor], segment(150, 104, 200, 104), tol) == 0  # continued: a prolongement
    assert find_extension([floor], segment(50, 100, 50, 30), tol) is None  # a corner


def test_without_the_overlap_limit_the_rules_merge_as_before() -> None:
    """Games stored before `merge_overlap_px` (their config lacks it) replay as they were played."""
    tol = KontourConfig.load().geometry.replace(merge_overlap_px=None)
    assert find_extension([segment(50, 100, 150, 100)], segment(55, 104, 145, 104), tol) == 0
