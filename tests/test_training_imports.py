"""The training package's modules import one another without a cycle.

Every ``import`` of every module of ``training/`` is read with `ast` (top-level and inside functions
alike: a lazy import is still a dependency, and a cycle through one still ties two modules together),
and the graph of the package's internal imports must have no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def internal_imports(path: Path, package: str, modules: set[str]) -> set[str]:
    """The modules of ``package`` (by name) that the module at ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # ``from training import data`` imports the module training.data
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [f"{package}.{node.module}"] if node.module else [
                f"{package}.{alias.name}" for alias in node.names
            ]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == package and len(parts) > 1 and parts[1] in modules:
                found.add(parts[1])
    return found


def import_graph(folder: Path) -> dict[str, set[str]]:
    """Module name → the package's modules it imports, for every module directly in ``folder``."""
    modules = {path.stem for path in folder.glob("*.py")}
    return {
        path.stem: internal_imports(path, folder.name, modules) - {path.stem}
        for path in sorted(folder.glob("*.py"))
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, …, a]``, or ``None`` (depth-first search)."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_training_package_imports_without_a_cycle() -> None:
    graph = import_graph(ROOT / "training")
    assert {"train", "sequence_loop", "model_card", "settings", "ship"} <= set(graph)
    assert "settings" in graph["model_card"] and "model_card" in graph["train"]  # the edges are read
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


@pytest.mark.parametrize(
    "sources, cycle",
    [
        ({"a": "from pkg.b import x", "b": "def f():\n    from pkg import a"}, ["a", "b", "a"]),
        ({"a": "import pkg.b", "b": "from .c import y", "c": "from . import a"}, ["a", "b", "c", "a"]),
        ({"a": "from pkg.b import x", "b": "import numpy", "c": "from pkg import a, b"}, None),
    ],
)
def test_a_cycle_is_found_through_any_form_of_import(
    tmp_path: Path, sources: dict[str, str], cycle: list[str] | None
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    for name, source in sources.items():
        (package / f"{name}.py").write_text(source, encoding="utf-8")
    assert find_cycle(import_graph(package)) == cycle
