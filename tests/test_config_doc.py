"""docs/CONFIG.md is the table `griffon.config` generates from the settings classes, and every
``GRIFFON_*`` variable named in the code, the tests or the docs is in it (no setting hides); a
renamed variable's former name is named only where it is read and where that is tested."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from griffon import config
from store.settings import RETIRED

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"GRIFFON_[A-Z0-9_]*")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".js", ".html", ".sh"}


def scanned_files() -> list[Path]:
    """The repository's code, tests, benchmarks, examples and docs (not docs/CONFIG.md itself)."""
    folders = [p for p in ROOT.iterdir() if (p / "__init__.py").is_file()]
    folders += [ROOT / "docs", ROOT / "examples"]
    files = [p for folder in folders for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    files += [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    return sorted(p for p in files if p.is_file() and p != config.CONFIG_MD)


def named_variables() -> dict[str, set[str]]:
    """``GRIFFON_*`` name → the files naming it (ending in ``_``: a prefix, as in ``GRIFFON_PLAY_*``)."""
    found: dict[str, set[str]] = {}
    for path in scanned_files():
        for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    return found


def test_config_md_is_what_the_code_generates() -> None:
    expected = config.render()
    actual = config.CONFIG_MD.read_text(encoding="utf-8") if config.CONFIG_MD.is_file() else ""
    assert actual == expected, f"docs/CONFIG.md is out of date: run `{config.COMMAND}`"


# Where a former name may still be written: the classes that read it, the tests of that reading.
FORMER_NAMES_IN = {"store/settings.py", "service/settings.py", "tests/test_service_api.py",
                   "tests/test_service_restart.py", "tests/test_config_doc.py"}


def test_every_griffon_variable_named_anywhere_is_in_the_table() -> None:
    former = config.former_names()
    table = {v.name for v in config.variables()} | set(former) | RETIRED
    named = named_variables()
    assert len(named) > 40 and "GRIFFON_DB_URL" in named  # the scan reads the code and the docs
    missing = [
        f"{name} ({', '.join(sorted(where))})"
        for name, where in sorted(named.items())
        if not (any(t.startswith(name) for t in table) if name.endswith("_") else name in table)
    ]
    assert not missing, (
        "named but not in the table: add each to a settings class or to griffon.config.LOOSE, "
        f"then run `{config.COMMAND}`:\n" + "\n".join(missing)
    )
    stale = [f"{name} → {former[name]} ({', '.join(sorted(named[name] - FORMER_NAMES_IN))})"
             for name in sorted(set(former) & set(named)) if named[name] - FORMER_NAMES_IN]
    assert not stale, "former names still written: use the new one\n" + "\n".join(stale)
    retired = [f"{name} ({', '.join(sorted(named[name]))})" for name in sorted(RETIRED & set(named))
               if named[name] - {"store/settings.py", "tests/test_service_api.py", "docs/CONFIG.md"}]
    assert not retired, "retired variables still written: remove them\n" + "\n".join(retired)


def test_every_settings_class_is_in_the_table() -> None:
    """A class deriving from ``EnvSettings`` (or pydantic-settings' ``BaseSettings``) reads variables:
    `griffon.config.SETTINGS` must list it."""
    readers = set()
    for package in ("games", "griffon", "model", "service", "store", "training", "vocab"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(base, ast.Name) and base.id in ("EnvSettings", "BaseSettings")
                    for base in node.bases
                ):
                    readers.add(node.name)
    listed = {cls.__name__ for root, _ in config.SETTINGS for cls, _, _ in config.fields_of(root)}  # + parts
    assert readers == listed | {"EnvSettings"}


def test_every_row_has_a_group_a_default_and_a_description() -> None:
    rows = config.variables()
    assert {v.group for v in rows} == set(config.GROUPS)
    for v in rows:
        assert v.name.startswith("GRIFFON_") and v.default and v.accepted and len(v.description) > 15, v
    by_name = {v.name: v for v in rows}
    assert by_name["GRIFFON_MODEL_MAX_BATCH"].accepted == "integer from 1 to 512"
    assert by_name["GRIFFON_HEADER_TIMEOUT_S"].accepted == "number > 0, ≤ 300"
    assert by_name["GRIFFON_DB_CHECK"].accepted == "`quick`, `full` or `off`"
    assert by_name["GRIFFON_BOT_ACCEPT_DRAWINGS"].default == "`false`"
    assert config.former_names()["GRIFFON_DATABASE_URL"] == "GRIFFON_DB_URL"
    tuned = {v.name: v for v in config.tuning_fields()}
    assert tuned["kontour_timer_s"].default.startswith("rules: ")  # games/data/kontour.yaml
    assert tuned["bot.tick_s"].accepted == "number > 0, ≤ 1" and not set(tuned) & set(by_name)


def test_a_part_without_a_group_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    groups = {k: v for k, v in config.PART_GROUPS.items() if k != "model"}
    monkeypatch.setattr(config, "PART_GROUPS", groups)
    with pytest.raises(LookupError, match=r"Settings\.model has no group: add it to griffon\.config\.PART"):
        config.variables()


def test_check_fails_on_a_stale_file_and_names_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "docs" / "CONFIG.md"
    target.parent.mkdir()
    monkeypatch.setattr(config, "REPO", tmp_path)
    monkeypatch.setattr(config, "CONFIG_MD", target)
    target.write_text("# Configuration\n", encoding="utf-8")
    assert config.main(["--check"]) == 1
    assert config.COMMAND in capsys.readouterr().err
    assert config.main(["--write"]) == 0
    assert config.main(["--check"]) == 0
    assert "`GRIFFON_DB_URL`" in target.read_text(encoding="utf-8")


def test_the_operators_table_stays_short_and_the_internals_are_apart() -> None:
    operators = config.operator_variables()
    assert 30 < len(operators) <= config.MAX_OPERATOR_VARIABLES, len(operators)
    assert len(config.variables()) <= config.MAX_VARIABLES, len(config.variables())
    names = {v.name for v in operators}
    assert "GRIFFON_DB_URL" in names and "GRIFFON_PLAY_MAX_GAMES" in names  # operators' knobs
    assert not names & config.INTERNAL and "GRIFFON_TEST_SLOWNESS" not in names
    text = config.render()
    internals = text[text.index("## " + config.INTERNALS.title):]
    assert "`capacity.pictomania_table_cost` | Capacity |" in internals  # a measured cost: a tuning field
    assert "`GRIFFON_MAX_SESSIONS` → `GRIFFON_PLAY_MAX_GAMES`" in internals  # a former name
    assert "`GRIFFON_TEST_SLOWNESS` | Tests and development |" in internals
