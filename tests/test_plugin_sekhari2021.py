"""The example plug-in (examples/plugin/, Sekhari et al. 2021), installed with pip into a
temporary folder, audited from the command line: discovered through its entry points alone."""

from __future__ import annotations

import ast
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from tests.plugin_env import ROOT, install, run_unlearn

PLUGIN = ROOT / "examples" / "plugin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """``pip install --no-deps --no-build-isolation --target SITE`` of a copy of the plug-in
    (offline; the copy keeps build files out of the checkout)."""
    tmp = tmp_path_factory.mktemp("plugin")
    shutil.copytree(PLUGIN, tmp / "src", ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                       "__pycache__"))
    install(tmp / "src", tmp / "site")
    return tmp


def unlearn(installed: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = run_unlearn(args, paths=[installed / "site"], cwd=installed)
    assert out.returncode == 0 and "note:" not in out.stderr, out.stderr
    return out


def test_the_installed_plugin_is_listed_with_its_bounds(installed: pathlib.Path) -> None:
    algorithms = unlearn(installed, "audit", "algorithms").stdout
    assert "sekhari2021-newton: Sekhari et al. 2021 (plug-in)" in algorithms
    assert algorithms.index("pnsgd") < algorithms.index("sekhari2021-newton")  # built-ins first
    ids = [row["id"] for row in json.loads(
        unlearn(installed, "bounds", "list", "--paper", "sekhari2021", "--json").stdout)["bounds"]]
    assert ids == ["sekhari2021:alg2/gamma", "sekhari2021:alg2/renyi", "sekhari2021:alg2/sigma"]
    value = json.loads(unlearn(installed, "bounds", "eval", "sekhari2021:alg2/gamma", "L=2",
                               "M=1/10", "lam=1/10", "m=1", "n=280", "--json").stdout)
    assert float(value["value"]) == pytest.approx(2 * 0.1 * 4 / (0.1**3 * 280**2), rel=1e-15)


def test_the_installed_plugin_is_audited_from_the_command_line(installed: pathlib.Path) -> None:
    out = unlearn(installed, "audit", "demo", "--algorithm", "sekhari2021-newton", "--trials",
                  "400", "--out", str(installed / "demo"), "--json", "--quiet")
    report = json.loads(out.stdout)
    assert report["status"] == "CONSISTENT", report
    assert report["bound"] == "sekhari2021:alg2/renyi" and report["certified_epsilon"] <= 1
    assert report["exact_epsilon"] is not None  # the exact Gaussian laws reached the report


def test_a_spec_naming_the_plugin_runs(installed: pathlib.Path) -> None:
    spec = installed / "spec.toml"
    spec.write_text('trials = 400\npilot_trials = 40\n[algorithm]\nname = "sekhari2021-newton"\n'
                    'lam = 0.2\n[request]\nkind = "remove"\nindices = [3]\n')
    report = json.loads(unlearn(installed, "audit", "run", str(spec), "--out",
                                str(installed / "run"), "--json", "--quiet").stdout)
    assert report["status"] == "CONSISTENT" and report["bound"] == "sekhari2021:alg2/renyi"


def test_bench_bounds_and_bench_exact_serve_the_plugin(installed: pathlib.Path) -> None:
    timed = unlearn(installed, "bench", "bounds", "--algorithm", "sekhari2021-newton").stdout
    assert "sekhari2021:alg2/renyi" in timed and "evals/s" in timed
    rows = json.loads(unlearn(installed, "bench", "exact", "--algorithm", "sekhari2021-newton",
                              "--json", "--quiet").stdout)["rows"]
    assert [(r["algorithm"], r["bound"]) for r in rows] == [("sekhari2021-newton",
                                                             "sekhari2021:alg2/renyi")]
    assert not rows[0]["violations"] and rows[0]["exact_epsilon"] <= rows[0]["certified_epsilon"]


def toolkit_imports(source: str) -> set[str]:
    """``module.name`` of every ``from audits|bounds|empirical... import name`` in ``source``."""
    return {f"{node.module}.{alias.name}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.module
            and node.module.split(".")[0] in ("audits", "bounds", "empirical")
            for alias in node.names}


def test_every_toolkit_name_the_plugin_imports_is_named_in_the_guide() -> None:
    guide = (ROOT / "docs" / "adding-an-algorithm.md").read_text()
    shown = set().union(*(toolkit_imports(block) for block in
                          re.findall(r"```python[^\n]*\n(.*?)```", guide, re.DOTALL)
                          if "..." not in block))
    missing = sorted(name for path in PLUGIN.rglob("*.py")
                     for name in toolkit_imports(path.read_text())
                     if name not in shown and f"`{name}`" not in guide)
    assert not missing, "docs/adding-an-algorithm.md does not name " + ", ".join(missing)


@pytest.mark.slow
def test_the_plugins_own_tests_pass_when_installed(installed: pathlib.Path) -> None:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(installed / "src" / "test_sekhari2021.py")],
                         capture_output=True, text=True, cwd=installed, timeout=600,
                         env=run_env(installed))
    assert out.returncode == 0, out.stdout[-3000:]


def run_env(installed: pathlib.Path) -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(installed / "site")])}
