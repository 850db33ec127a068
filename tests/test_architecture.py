"""Dependencies between Griffon's packages point one way (docs/ARCHITECTURE.md).

Every ``import`` of every module of every package is read with `ast` (top-level and inside
functions alike: a lazy import is still a dependency) and checked against the allowed directions:

- ``griffon`` (the command line, the composition root) → every package;
- ``service`` → ``games``, ``vocab``, ``model`` (and ``store``, the service's storage);
- ``games`` → ``vocab`` only: the recognizer and the dataset are injected (probabilities, drawings,
  the straight-line cutter), never imported;
- ``training`` → ``model``, ``vocab``, ``games`` (the offline tooling; nothing imports it back);
- ``model``, ``vocab``, ``store`` → nothing of ours.

``bench/`` and ``examples/`` sit on top; neither imports ``tests`` (a benchmark keeps its own
helpers). No product module loads another package by a string (``importlib.import_module``), so
every dependency is an ``import`` this test reads.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"bench", "examples", "games", "griffon", "model", "service", "store", "tests", "training", "vocab"}
ALLOWED: dict[str, set[str]] = {
    "griffon": {"service", "games", "vocab", "model", "store", "training"},
    "service": {"games", "vocab", "model", "store"},
    "games": {"vocab"},
    # training is the offline tooling layer: it builds what model/ loads (checkpoints, the int8 copy),
    # measures in game conditions with the real decks (vocab), and writes the AI's drawing pack in the
    # format games.ai.pack reads (games). Nothing imports training back.
    "training": {"model", "vocab", "games"},
    "model": set(),
    "vocab": set(),
    "store": set(),
    "bench": OURS - {"bench", "examples", "tests"},  # real servers start through griffon.launch
    "examples": OURS - {"bench", "examples", "tests", "griffon"},
}
def imports_of(path: Path) -> set[str]:
    """The first-party top-level packages a module imports (absolute imports; relative imports
    stay inside the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {name.split(".")[0] for name in names} & OURS
    return found


def edges() -> list[tuple[str, str, str]]:
    """(package, module path, imported package) for every first-party import across packages."""
    out = []
    for package in sorted(ALLOWED):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            out += [(package, rel, dep) for dep in sorted(imports_of(path)) if dep != package]
    return out


def loads_by_string(path: Path, own: str) -> list[str]:
    """The ``importlib.import_module`` / ``__import__`` calls of a module of package ``own`` whose
    target is not a module of that package (by the string's literal start)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name not in ("import_module", "__import__"):
            continue
        target = node.args[0]
        if isinstance(target, ast.JoinedStr):
            target = target.values[0] if target.values else target
        text = target.value if isinstance(target, ast.Constant) and isinstance(target.value, str) else ""
        if text.split(".")[0] != own:
            found.append(f"{path.name}:{node.lineno} loads {text or 'a computed name'!r}")
    return found


def test_no_package_is_loaded_by_a_string() -> None:
    product = [(p, package) for package in sorted(ALLOWED.keys() - {"bench", "examples"})
               for p in sorted((ROOT / package).rglob("*.py"))]
    assert len(product) > 50
    offenders = [line for path, package in product for line in loads_by_string(path, package)]
    assert not offenders, "import the module instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import importlib\nimportlib.import_module('service.play')", ["loads 'service.play'"]),
        ("import importlib\nimportlib.import_module(f'vocab.{x}')", []),
        ("__import__('httpx')", ["loads 'httpx'"]),
    ],
)
def test_loads_by_string_are_found(tmp_path: Path, source: str, expected: list[str]) -> None:
    module = tmp_path / "m.py"
    module.write_text(source, encoding="utf-8")
    found = loads_by_string(module, "vocab")
    assert [line.split(" ", 1)[1] for line in found] == expected


def test_every_package_is_checked() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert packages <= set(ALLOWED), f"add the new package(s) to ALLOWED: {packages - set(ALLOWED)}"
    assert {"games", "model", "service", "training", "vocab"} <= packages


def test_dependencies_point_one_way() -> None:
    leaks = [
        f"{rel} imports {dep} ({package} may import only {sorted(ALLOWED[package]) or 'nothing of ours'})"
        for package, rel, dep in edges()
        if dep not in ALLOWED[package]
    ]
    assert not leaks, "\n".join(leaks)


def test_the_ai_players_import_neither_the_model_nor_training() -> None:
    ai = sorted((ROOT / "games" / "ai").glob("*.py"))
    assert len(ai) >= 6
    for path in ai:
        assert not imports_of(path) & {"model", "training", "service"}, path.name


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import model.strokes", {"model"}),
        ("def f():\n    from training.data import load_dataset", {"training"}),
        ("from . import sibling", set()),
        ("import numpy, vocab as v", {"vocab"}),
        ("from games.ai import driver", {"games"}),
    ],
)
def test_imports_are_found_wherever_they_are(tmp_path: Path, source: str, expected: set[str]) -> None:
    module = tmp_path / "m.py"
    module.write_text(source, encoding="utf-8")
    assert imports_of(module) == expected
