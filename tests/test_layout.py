"""The two floors of the house: bounds/ and empirical/ never import each other nor audits/."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "bounds": {"empirical", "audits", "torch"},
    "empirical": {"bounds", "audits"},
}


def imported_modules(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_floors_do_not_import_each_other(package: str) -> None:
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = imported_modules(path) & FORBIDDEN[package]
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not offenders, "\n".join(offenders)


def test_importing_bounds_does_not_load_torch() -> None:
    code = "import sys, bounds; bounds.list_bounds(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_layout_exists() -> None:
    for part in ("pyproject.toml", "README.md", "docs", "tests", "bounds/declarations.py",
                 "bounds/conversions.py", "bounds/calibration.py", "bounds/papers",
                 "empirical/mechanisms", "audits/cli.py", ".ci/run"):
        assert (ROOT / part).exists(), part


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    quick_start = [line for line in readme.splitlines() if line.startswith("pip install")]
    assert len(quick_start) == 2, "README's quick start must have exactly two one-line commands"
    test_command = quick_start[1].split("&&")[-1].strip()
    assert test_command in ci.splitlines(), f"CI must run {test_command!r}"


# ----------------------------------------------------------------------------------------------
# No import circles (issue 8): the module graph of bounds/, empirical/ and audits/, built with
# ast from every import statement (function-level ones included, ``if TYPE_CHECKING:`` blocks
# left out because they never run), must be acyclic.

PACKAGES = ("bounds", "empirical", "audits")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: pathlib.Path, modules: set[str]) -> set[str]:
    """Project modules that ``path`` imports (resolving ``from pkg import module``)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    found.add(f"{target}.{alias.name}")
                elif target in modules:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): _imports(p, modules) for p in paths}


def find_cycle(graph: dict[str, set[str]], within: str) -> list[str] | None:
    """A cycle through a module of package ``within`` (depth-first search), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                if any(m == within or m.startswith(within + ".") for m in cycle):
                    return cycle
            elif nxt not in state:
                found = dfs(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = dfs(start)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}, "a") == [
        "a.x", "a.y", "a.z", "a.x"]
    assert find_cycle({"a.x": {"a.y"}, "a.y": set()}, "a") is None
    graph = import_graph()
    assert "audits.spec" in graph["audits.runner"]  # the graph sees real imports


@pytest.mark.parametrize("package", ["bounds", "empirical", "audits"])
def test_no_import_circles(package: str) -> None:
    cycle = find_cycle(import_graph(), package)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


# ----------------------------------------------------------------------------------------------
# The generic audit modules name no algorithm: everything algorithm-specific lives in an adapter
# (audits/adapters/), a bound module (bounds/papers/) or a mechanism (empirical/mechanisms/).

ALGORITHM_NAMES = re.compile(r"\b(pnsgd|chien|guo|koloskova|chourasia|langevin|d2d|noisy-gd)",
                             re.IGNORECASE)


def test_generic_audit_modules_name_no_algorithm() -> None:
    offenders = []
    for path in sorted((ROOT / "audits").rglob("*.py")):
        if "adapters" in path.relative_to(ROOT / "audits").parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = ALGORITHM_NAMES.search(line)
            if match:
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)}")
    assert not offenders, "\n".join(offenders)


def test_pnsgd_is_registered_through_its_adapter() -> None:
    from audits.registry import adapters, default_adapter

    assert "pnsgd" in adapters()
    assert default_adapter().name == "pnsgd"
