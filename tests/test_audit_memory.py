"""An audit's resident memory: heavy libraries stay out unless an estimator needs them, and the
lighter code paths give the numbers the heavy ones gave."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from empirical.statistics.roc import roc_curve
from empirical.statistics.thresholds import clopper_pearson_lower, clopper_pearson_upper

ROOT = Path(__file__).resolve().parents[1]


def test_the_audit_path_imports_neither_scipy_stats_scipy_optimize_nor_scikit_learn():
    code = textwrap.dedent("""
        import sys
        import audits.cli, audits.runner, audits.report.assemble, audits.adapters.builtin
        import empirical.divergence, empirical.renyi_audit, empirical.statistics
        from empirical.data import digits_3_vs_8
        from empirical.statistics import clopper_pearson, roc_curve
        digits_3_vs_8()
        clopper_pearson(successes=3, trials=10, confidence=0.95)
        roc_curve([1.0, 2.0], [0.0, 2.0])
        print(sorted(m for m in ("scipy.stats", "sklearn", "scipy.integrate", "scipy.optimize")
                     if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_digits_read_from_the_bundled_file_equal_scikit_learns_loader():
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits

    from empirical.data import _bundled_digits

    features, target = _bundled_digits()
    bunch = load_digits()
    assert features.dtype == bunch.data.dtype and target.dtype == bunch.target.dtype
    assert np.array_equal(features, bunch.data) and np.array_equal(target, bunch.target)


@pytest.mark.parametrize("gamma", [0.4, 0.025, 1e-3, 1e-9, 1e-15])
def test_clopper_pearson_bounds_are_scipy_stats_beta_quantiles_bit_for_bit(gamma):
    n = np.array([1, 2, 7, 20, 101, 1000, 5000, 50000, 50000, 50000, 123457])
    for k in (np.zeros_like(n), n // 3, n - 1, n):
        k = np.minimum(k, n)
        upper = stats.beta.isf(gamma, k + 1.0, np.where(k >= n, 1.0, n - k))
        lower = stats.beta.ppf(gamma, np.where(k <= 0, 1.0, k), n - k + 1.0)
        assert np.array_equal(clopper_pearson_upper(k, n, gamma), np.where(k >= n, 1.0, upper))
        assert np.array_equal(clopper_pearson_lower(k, n, gamma), np.where(k <= 0, 0.0, lower))


def test_auc_from_mid_ranks_is_the_mann_whitney_statistic_of_scipy_ranks():
    rng = np.random.default_rng(7)
    for case in range(60):
        size_p, size_n = rng.integers(1, 400, size=2)
        if case % 2:  # many ties
            positive = rng.integers(0, 9, size_p) / 3.0
            negative = rng.integers(0, 9, size_n) / 3.0
        else:
            positive, negative = rng.normal(0.3, 1, size_p), rng.normal(0, 1, size_n)
        ranks = stats.rankdata(np.concatenate([positive, negative]))
        u_stat = ranks[:size_p].sum() - size_p * (size_p + 1) / 2
        assert roc_curve(positive, negative).auc == float(u_stat / (size_p * size_n))


def test_the_gdp_bound_uses_the_normal_quantiles_of_scipy_stats_bit_for_bit():
    from scipy import special

    q = np.concatenate([[0.0, 1e-300, 1e-12, 0.5, 1 - 1e-12, 1.0],
                        np.random.default_rng(5).random(2000)])
    assert np.array_equal(-special.ndtri(q), stats.norm.isf(q))
    assert np.array_equal(special.ndtri(q), stats.norm.ppf(q))


_PROBE = """
import json, sys
from audits.cli import main
status = main(["audit", "demo", "--trials", "400", "--out", sys.argv[1], "--quiet"])
print(json.dumps({"status": status, "modules": sorted(
    m for m in ("matplotlib", "scipy.optimize", "scipy.linalg", "torch") if m in sys.modules)}))
"""


def test_demo_audit_process_loads_no_plotting_library_nor_scipy_optimize(tmp_path):
    # The process that runs the trials holds torch; its report must not add matplotlib, nor its
    # certificate scipy.optimize (with scipy.linalg and scipy.sparse), to its peak memory.
    done = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path / "demo")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"status": 0, "modules": ["torch"]}
    assert (tmp_path / "demo" / "report.html").stat().st_size > 20_000
