"""One rule for the Quick, Draw! folder: --data, else $GRIFFON_DATA, else ./data/quickdraw, else the
shared folder; downloads land where training and evaluation look."""

from __future__ import annotations

from pathlib import Path

import pytest

from griffon.launch import patient
from tests.conftest import write_fixture_folder
from training import data


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current folder with no data, no $GRIFFON_DATA, and a fake shared folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(data.DATA_ENV, raising=False)
    shared = tmp_path / "shared" / "data" / "quickdraw"
    monkeypatch.setattr(data, "SHARED_DATA", shared)
    return shared


def test_the_rule_in_order(elsewhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(data.DataNotFound, match="--data DIR or set GRIFFON_DATA"):
        data.default_data_root()
    assert data.download_root() == tmp_path / "data" / "quickdraw"  # nothing yet: downloads go here
    write_fixture_folder(elsewhere)
    assert data.default_data_root() == elsewhere
    (tmp_path / "data" / "quickdraw").mkdir(parents=True)  # an empty folder does not count
    assert data.default_data_root() == elsewhere
    local = write_fixture_folder(tmp_path / "data" / "quickdraw")
    assert data.default_data_root() == local == data.download_root()
    monkeypatch.setenv(data.DATA_ENV, str(tmp_path / "configured"))
    assert data.default_data_root() == tmp_path / "configured" == data.download_root()
    assert data.default_data_root("given") == Path("given") == data.download_root("given")


@pytest.mark.parametrize(
    "command",
    [
        ["training.train", "--preset", "tiny"],
        ["training.train", "--preset", "sequence-tiny"],
        ["training.export", "--checkpoint", "MISSING.pt"],
        ["training.model_card", "--model", "MISSING.pt"],
        ["training.calibrate", "--model", "MISSING.pt"],
    ],
)
def test_each_training_command_ends_a_user_s_mistake_with_one_error_line(
    command: list[str], tmp_path: Path
) -> None:
    """The steps of `make train` (`griffon train`, `griffon model calibrate` run these modules' main)
    and the shipping steps: an empty data folder or a missing checkpoint ends them with ``error: …``
    and status 1, not a traceback."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = [sys.executable, "-m", *[str(root / a) if a.endswith(".pt") else a for a in command]]
    result = subprocess.run(
        [*argv, "--data", str(empty)], cwd=root, capture_output=True, text=True, timeout=patient(120),
        check=False,
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and ("no Quick, Draw! files" in last or "no checkpoint" in last)
