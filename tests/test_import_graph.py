"""The modules of ``bounds/`` form an import graph without cycles (issue 8).

The graph is built from the source with :mod:`ast`, counting every import statement wherever it
appears (module level, inside functions, under ``TYPE_CHECKING``), so a function-level import
that closes a circle is caught as well. An edge goes to the module named by the statement; for
``from pkg import name`` it goes to ``pkg.name`` when that is a module, else to ``pkg``.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "bounds"


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(package: str = PACKAGE, root: pathlib.Path = ROOT) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
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


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the directed graph as a list of nodes (first = last), or ``None``."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = finished
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
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


def test_bounds_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_engine_does_not_discover_papers() -> None:
    graph = import_graph()
    engine_side = {m for m in graph if not m.startswith("bounds.papers") and m != "bounds"}
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


def test_graph_sees_function_level_imports(tmp_path: pathlib.Path) -> None:
    # The old engine imported bounds.papers inside a function: such an edge must close a cycle.
    pkg = tmp_path / "pkg"
    (pkg / "papers").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text("def load():\n    import pkg.papers  # noqa\n")
    (pkg / "papers" / "__init__.py").write_text("from pkg.papers import one\n")
    (pkg / "papers" / "one.py").write_text("from pkg.engine import load\n")
    graph = import_graph("pkg", tmp_path)
    assert graph["pkg.engine"] == {"pkg.papers"}
    assert find_cycle(graph) is not None
