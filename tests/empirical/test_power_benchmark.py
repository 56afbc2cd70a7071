"""Smoke test of the power benchmark's plain-dict output (the study itself is not a test)."""

from __future__ import annotations

import json

import pytest

from empirical.benchmarks.power import detection_power, epsilon_bound_power, estimator_coverage


def test_benchmark_rows_are_plain_and_consistent():
    eps_rows = epsilon_bound_power(mus=(1.0,), deltas=(1e-3,), n=2000, runs=3)
    det_rows = detection_power(factors=(2.0,), n=2000, runs=1)
    cov_rows = estimator_coverage(dims=(2,), n=300, orders=(2.0,), covariances=("shared-isotropic",),
                                  runs=3)
    json.dumps([eps_rows, det_rows, cov_rows])  # JSON-ready
    row = eps_rows[0]
    assert 0 < row["limit"] < row["exact"]
    assert row["pilot"]["coverage_failure_rate"] <= 1 / 3
    assert row["pilot"]["mean"] == pytest.approx(row["pilot"]["mean_over_exact"] * row["exact"])
    assert det_rows[0]["renyi_rate"] == 1.0  # sigma halved at 2000 per side: D_2 = 4 vs 1 certified
    assert {r["estimator"] for r in cov_rows} == {"renyi_2", "kl", "hockey_stick_0.5"}
    assert all(0 <= r["coverage"] <= 1 and r["infinite_rate"] == 0 for r in cov_rows)


def test_coverage_table_reports_out_of_range_cells_instead_of_infinite_values():
    """Order 5 in 10-D at n = 1000 is outside the full-covariance Renyi estimate's valid range
    (tau = 4.16 sqrt(82 / 1000) = 1.19 > 1/2): the row says so and holds no rates; order 2
    (tau = 0.42) is run."""
    rows = estimator_coverage(dims=(10,), n=1000, orders=(2.0, 5.0), covariances=("full",), runs=1,
                              runs_hockey_full=0, n_bootstrap=20)
    json.dumps(rows)
    by_name = {r["estimator"]: r for r in rows}
    refused = by_name["renyi_5"]
    assert refused["coverage"] is None and refused["infinite_rate"] is None
    assert refused["out_of_range"].startswith("out of range: tau = 1.19")
    assert by_name["renyi_2"]["runs"] == 1 and by_name["renyi_2"]["infinite_rate"] == 0.0
    assert "out_of_range" not in by_name["renyi_2"]


def test_power_benchmark_run_counts_are_checked():
    from empirical.benchmarks.power import power_benchmark

    with pytest.raises(ValueError, match="detection_runs must be a positive integer"):
        power_benchmark(detection_runs=0)
    with pytest.raises(ValueError, match="parts must be a non-empty selection"):
        power_benchmark(parts=("epsilon", "speed"))


def test_power_benchmark_parts_run_alone_with_their_own_draws():
    from empirical.benchmarks.power import power_benchmark

    alone = power_benchmark(quick=True, parts=("epsilon",), epsilon_runs=1)
    assert alone["parts"] == ["epsilon"] and alone["detection"] == alone["estimator_coverage"] == []
    assert alone["runs"]["epsilon"] == 1 and len(alone["epsilon_bounds"]) == 6
    # The same draws as inside the whole benchmark: the part's seed does not depend on the others.
    direct = epsilon_bound_power(runs=1, seed=0)
    assert [r["pilot"]["mean"] for r in alone["epsilon_bounds"]] == [r["pilot"]["mean"] for r in direct]


def test_power_summary_sets_the_default_statistic_beside_jax_privacy():
    from audits.cli.bench import power_summary
    from empirical.benchmarks.power import power_benchmark

    res = power_benchmark(quick=True, parts=("epsilon", "peer"), epsilon_runs=1, peer_runs=1)
    json.dumps(res)
    assert len(res["peer_comparison"]) == 40
    row = res["epsilon_bounds"][0]
    assert row["default"]["runs"] == row["peer"]["runs"] == 1
    text = power_summary(res)
    assert "default/limit" in text and "peer/limit" in text and "default/peer" in text
    assert "cases with default >= peer:" in text


def test_power_summary_prints_only_the_tables_of_the_parts_that_ran():
    from audits.cli.bench import power_summary
    from empirical.benchmarks.power import power_benchmark

    text = power_summary(power_benchmark(quick=True, parts=("epsilon",), epsilon_runs=1))
    assert "(epsilon, delta) lower bounds" in text
    assert "violation-detection rate" not in text and "interval coverage" not in text
