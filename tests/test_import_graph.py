"""No import circles: the module graph of bounds/, empirical/ and audits/ is acyclic.

The graph is built from the source with :mod:`ast`, counting every import statement wherever it
appears: at module level, inside functions, and under ``if TYPE_CHECKING:`` (a type-only import
still ties the two modules' meanings together, so it counts). An edge goes to the module named by
the statement; for ``from pkg import name`` it goes to ``pkg.name`` when that is a module, else to
``pkg``. The floors' discipline (bounds/ and empirical/ never import each other nor audits/)
is tested in ``tests/test_layout.py``.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("bounds", "empirical", "audits")


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """Dotted module name of a source file under ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(packages: tuple[str, ...] = PACKAGES,
                 root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    """Module -> the project modules it imports, from every import statement in its source."""
    files = {module_name(p, root): p for package in packages
             for p in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                for alias in node.names:
                    candidate = f"{module}.{alias.name}"
                    targets.append(candidate if candidate in files else module)
            for target in targets:
                if target in files and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]], within: str | None = None) -> list[str] | None:
    """A cycle of the directed graph (first node = last), through a module of package ``within``
    when given, or ``None``."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = finished
    stack: list[str] = []

    def inside(module: str) -> bool:
        return within is None or module == within or module.startswith(within + ".")

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                if any(inside(m) for m in cycle):
                    return cycle
            elif nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.mark.parametrize("package", ["bounds", "empirical", "audits"])
def test_no_import_circles(package: str) -> None:
    cycle = find_cycle(import_graph(), package)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_bound_declarations_do_not_discover_papers() -> None:
    graph = import_graph()
    engine_side = {m for m in graph if m.startswith("bounds.") and not m.startswith("bounds.papers")}
    for module in sorted(engine_side):
        assert not any(t.startswith("bounds.papers") for t in graph[module]), module
    assert "bounds.papers" in graph["bounds"], "discovery happens in bounds/__init__.py"


@pytest.mark.parametrize(
    ("graph", "has_cycle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
        ({"a": {"a2"}, "a2": set(), "b": {"b"}}, True),
    ],
)
def test_cycle_finder_can_fail(graph: dict[str, set[str]], has_cycle: bool) -> None:
    assert (find_cycle(graph) is not None) is has_cycle


def test_cycle_finder_reports_the_circle_through_the_package_asked() -> None:
    graph = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "b.x": set()}
    assert find_cycle(graph, "a") == ["a.x", "a.y", "a.z", "a.x"]
    assert find_cycle(graph, "b") is None


def test_graph_sees_function_level_and_type_only_imports(tmp_path: pathlib.Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "papers").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text("def load():\n    import pkg.papers  # noqa\n")
    (pkg / "papers" / "__init__.py").write_text("from pkg.papers import one\n")
    (pkg / "papers" / "one.py").write_text("from pkg.engine import load\n")
    (pkg / "spec.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.registry import R\n")
    (pkg / "registry.py").write_text("from pkg import spec\n")
    graph = import_graph(("pkg",), tmp_path)
    assert graph["pkg.engine"] == {"pkg.papers"}
    assert graph["pkg.spec"] == {"pkg.registry"}
    assert find_cycle(graph) is not None
    assert find_cycle({k: v for k, v in graph.items() if k != "pkg.spec"}) is not None


def test_graph_sees_the_real_imports() -> None:
    graph = import_graph()
    assert "audits.spec" in graph["audits.runner"]
    assert "bounds.declarations" in graph["bounds.registry"]
    assert "empirical.statistics.thresholds" in graph["empirical.statistics.gdp"]
