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
    # format games.ai.drawing_pack reads (games). Nothing imports training back.
    "training": {"model", "vocab", "games"},
    "model": set(),
    "vocab": set(),
    "store": set(),
    "bench": OURS - {"bench", "examples", "tests"},  # real servers start through griffon.launch
    "examples": OURS - {"bench", "examples", "tests", "griffon"},
}
# Floors inside a package, lowest first: a module imports only from its own floor or a lower one.
# (floors, the floor of a module no floor names)
FLOORS: dict[str, tuple[tuple[tuple[str, ...], ...], int]] = {
    "service": ((
        (),  # the core: every module of service/ the other floors do not name
        ("service.play", "service.bot", "service.api", "service.demo"),  # the features and routers
        ("service.app",),  # the assembly
    ), 0),
    "store": ((
        ("store.errors", "store.tokens", "store.records"),  # what is stored, and what goes wrong
        ("store.sql", "store.schema"),  # the shared SQL plumbing and the migrations
        ("store.games", "store.transcripts", "store.drawings", "store.bot_keys", "store.lobbies",
         "store.bot_rooms", "store.background"),  # the aggregates (and the writer the transcripts use)
        ("store.database",),  # the store: the aggregates mixed
        (),  # the backends, the writers, the settings, the commands, the package: every other module
    ), 4),
}

# File names several packages give a module of theirs, always imported with their package
# (``store.cli``, ``service.settings``); every other name is one module's only.
SHARED_NAMES = {
    "cli.py": "a package's commands, `register(app)`, gathered by griffon/cli.py",
    "settings.py": "a package's own settings",
    "errors.py": "a package's own errors",
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


def module_names() -> dict[str, Path]:
    """Every first-party module by its dotted name (a package by its own name), tests included."""
    found = {}
    for package in sorted(OURS):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def module_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The first-party modules ``name`` (at ``path``) imports: ``from a import b`` names the module
    ``a.b`` when there is one, else ``a``; relative imports are resolved; an import of a name no
    module has resolves to the nearest enclosing module."""

    def nearest(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {nearest(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                inner = f"{module}.{alias.name}"
                found.add(inner if inner in known else nearest(module))
    return {target for target in found if target is not None and target != name}


def import_graph() -> dict[str, set[str]]:
    """Module -> the first-party modules it imports, for every module of every package."""
    modules = module_names()
    known = set(modules)
    return {name: module_imports(name, path, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing itself),
    each as one import cycle through them: Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    components.append(_one_cycle(sorted(component), graph))
    return components


def _one_cycle(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A cycle through the first module of a strongly connected component, by a breadth-first
    search back to it inside the component (the shortest such cycle)."""
    start, members = component[0], set(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return component  # unreachable for a strongly connected component


def floor_of(module: str) -> int:
    """A module of a package with `FLOORS` by its floor (-1: a package without floors)."""
    package = module.split(".")[0]
    if package not in FLOORS:
        return -1
    floors, unnamed = FLOORS[package]
    for level, prefixes in enumerate(floors):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return level
    return unnamed


def test_no_module_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 200 and "service.play.manager" in graph
    found = cycles(graph)
    assert not found, "import cycles (break each by moving the shared piece below both):\n" + "\n".join(
        " -> ".join(cycle) for cycle in found)


def test_floors_point_down() -> None:
    graph = import_graph()
    named = {prefix for floors, _ in FLOORS.values() for floor in floors for prefix in floor}
    assert named <= set(graph), f"FLOORS names no module: {sorted(named - set(graph))}"
    up = [f"{module} imports {target}"
          for module, targets in sorted(graph.items()) for target in sorted(targets)
          if module.split(".")[0] == target.split(".")[0] and floor_of(target) > floor_of(module)]
    assert not up, "a lower floor imports a higher one:\n" + "\n".join(up)


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b", "a"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}, [["a", "b", "c", "a"]]),
        ({"a": {"a"}}, [["a", "a"]]),
        ({"x": {"y"}, "y": {"x"}, "p": {"q"}, "q": {"p", "x"}}, [["x", "y", "x"], ["p", "q", "p"]]),
    ],
)
def test_cycles_are_found_and_named(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert sorted(cycles(graph)) == sorted(expected)


def test_module_imports_resolve_modules_names_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.sub import thing\n", encoding="utf-8")
    module = package / "mod.py"
    module.write_text("from typing import TYPE_CHECKING\nfrom . import sub\nfrom .other import name\n"
                      "if TYPE_CHECKING:\n    import pkg.deep.leaf\n", encoding="utf-8")
    known = {"pkg", "pkg.mod", "pkg.sub", "pkg.other", "pkg.deep"}
    assert module_imports("pkg.mod", module, known) == {"pkg.sub", "pkg.other", "pkg.deep"}
    assert module_imports("pkg", package / "__init__.py", known) == {"pkg.sub"}


def shared_module_names(root: Path, packages: set[str]) -> dict[str, list[str]]:
    """File names (``__init__.py``, ``__main__.py`` and `SHARED_NAMES` aside) of more than one module of
    ``packages`` under ``root`` -> their paths."""
    paths: dict[str, list[str]] = {}
    for package in sorted(packages):
        for path in sorted((root / package).rglob("*.py")):
            if path.name not in ("__init__.py", "__main__.py") and path.name not in SHARED_NAMES:
                paths.setdefault(path.name, []).append(path.relative_to(root).as_posix())
    return {name: found for name, found in paths.items() if len(found) > 1}


def test_no_two_modules_share_a_name() -> None:
    """A module's name says what it is: two modules of the product, its benchmarks and examples
    never share a file name (tests aside)."""
    shared = shared_module_names(ROOT, OURS - {"tests"})
    assert not shared, "modules sharing a name (rename one to say what it is):\n" + "\n".join(
        f"{name}: {', '.join(paths)}" for name, paths in sorted(shared.items()))


def test_modules_sharing_a_name_are_found(tmp_path: Path) -> None:
    for path in ("a/words.py", "b/c/words.py", "a/cli.py", "b/cli.py", "a/__init__.py", "b/__init__.py",
                 "b/other.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("", encoding="utf-8")
    assert shared_module_names(tmp_path, {"a", "b"}) == {"words.py": ["a/words.py", "b/c/words.py"]}


TABLE_NAMES = frozenset({"session", "table"})  # what the play wing calls a `GameSession` it holds


def late_table_assignments(source: str) -> list[str]:
    """``session.x = …`` / ``table.x = …`` statements: a table's state set from outside it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [f"{t.value.id}.{t.attr} (line {node.lineno})" for t in targets
                      if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                      and t.value.id in TABLE_NAMES]
    return found


def test_a_table_is_changed_through_its_own_methods() -> None:
    """A table gets its collaborators at construction and changes its own state (`hand_over`,
    `followed_by`…): no module of the play wing, the replicas or the app assigns onto one."""
    paths = [*(ROOT / "service" / "play").glob("*.py"), ROOT / "service" / "replicas.py",
             ROOT / "service" / "app.py"]
    late = {str(p.relative_to(ROOT)): found for p in paths if p.name != "table.py"
            if (found := late_table_assignments(p.read_text(encoding="utf-8")))}
    assert not late, late


def test_late_table_assignments_are_found() -> None:
    assert late_table_assignments("session.moved = True\nx.y = 1\ntable.seq += 1\n") == [
        "session.moved (line 1)", "table.seq (line 3)"
    ]
