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
                 "empirical/mechanisms", "audits/cli/__init__.py", ".ci/run"):
        assert (ROOT / part).exists(), part


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    quick_start = [line for line in readme.splitlines() if line.startswith("pip install")]
    assert len(quick_start) == 2, "README's quick start must have exactly two one-line commands"
    test_command = quick_start[1].split("&&")[-1].strip()
    assert test_command in ci.splitlines(), f"CI must run {test_command!r}"


# ----------------------------------------------------------------------------------------------
# The generic audit modules name no algorithm: everything algorithm-specific lives in an adapter
# (audits/adapters/), a reproduction (audits/reproductions/), a bound module (bounds/papers/) or
# a mechanism (empirical/mechanisms/).

ALGORITHM_NAMES = re.compile(r"\b(pnsgd|chien|guo|koloskova|chourasia|langevin|d2d|noisy-gd)",
                             re.IGNORECASE)


# In the two plug-in packages, the kit is generic; the per-algorithm and per-paper modules (or
# packages, whose every file names its paper) and the lists of built-ins (builtin.py) name what
# they plug in.
GENERIC_IN_PLUG_INS = {"__init__.py", "protocol.py", "base.py", "registry.py"}


def test_generic_audit_modules_name_no_algorithm() -> None:
    offenders = []
    for path in sorted((ROOT / "audits").rglob("*.py")):
        parts = path.relative_to(ROOT / "audits").parts
        kit = len(parts) == 2 and path.name in GENERIC_IN_PLUG_INS
        if parts[0] in ("adapters", "reproductions") and not kit:
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


def test_the_default_hypothesis_profiles_do_no_more_work_than_ci() -> None:
    from hypothesis import settings

    ci = settings.get_profile("ci")
    for name in ("dev", "ci"):
        profile = settings.get_profile(name)
        assert profile.max_examples <= ci.max_examples, name
        assert profile.deadline is None, name  # slow machines must not fail on timing
