"""Every public function and method of bounds/, empirical/ and audits/ says what it does in a docstring.

Public: no part of its dotted path (module, class, name) starts with an underscore; functions
nested in functions are not API. Dunder methods are covered by their class's docstring.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("bounds", "empirical", "audits")


def undocumented(path: pathlib.Path) -> list[str]:
    """Dotted names of the public functions and methods in ``path`` without a docstring."""
    tree = ast.parse(path.read_text(), filename=str(path))
    missing: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                if not child.name.startswith("_") and ast.get_docstring(child) is None:
                    missing.append(f"{prefix}{child.name}")
            elif isinstance(child, ast.If | ast.Try):  # definitions under a guard
                visit(child, prefix)

    visit(tree, "")
    return missing


def test_the_checker_finds_a_missing_docstring(tmp_path: pathlib.Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('def f():\n    return 1\n\n\ndef g():\n    """G."""\n\n\nclass C:\n'
                      '    def m(self):\n        pass\n\n    def _p(self):\n        pass\n\n\n'
                      'class _H:\n    def m(self):\n        pass\n')
    assert undocumented(source) == ["f", "C.m"]


@pytest.mark.parametrize("package", PACKAGES)
def test_public_functions_and_methods_have_docstrings(package: str) -> None:
    missing = []
    for path in sorted((ROOT / package).rglob("*.py")):
        relative = path.relative_to(ROOT)
        if any(part.startswith("_") and part != "__init__.py" for part in relative.parts):
            continue
        missing += [f"{relative}: {name}" for name in undocumented(path)]
    assert not missing, "no docstring:\n" + "\n".join(missing)
