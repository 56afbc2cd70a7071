"""``unlearn bench laws`` and ``unlearn bench leaks``: the peer suite beside its truth-chosen
ceiling and the leak suite's verdict counts, as commands a user can rerun."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audits.cli import main
from audits.leak_suite import leak_certificates, leak_suite, select_leaks
from audits.runner import audit_scores
from empirical.benchmarks.leaks import truth_chosen_power
from empirical.benchmarks.score_laws import truth_chosen_bound


def test_bench_laws_json_gives_both_bounds_and_the_exact_ceiling(capsys):
    assert main(["bench", "laws", "--json", "--quiet", "--laws", "binomial", "--trials", "300",
                 "--deltas", "1e-3", "--runs", "2", "--seed", "5"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert (row["law"], row["n_per_side"], row["delta"], row["runs"]) == ("binomial", 300, 1e-3, 2)
    ceiling = truth_chosen_bound("binomial", n=300, delta=1e-3)
    assert row["truth_chosen"]["epsilon_mean"] == pytest.approx(ceiling.epsilon_mean)
    assert row["default_over_truth_chosen"] == pytest.approx(row["default"]
                                                             / ceiling.epsilon_mean)
    if row["peer"] is not None:
        assert row["ratio"] == pytest.approx(row["default"] / row["peer"])


def test_leak_suite_counts_the_audits_it_runs():
    (row,) = leak_suite(sizes=(300,), runs=2, seed=11, leaks=["rare leak p=0.05"])
    (leak,) = select_leaks(["rare leak p=0.05"])
    plain, curve = leak_certificates()
    for statement, certificate in ((row.plain, plain), (row.curve, curve)):
        statuses = []
        for run in range(2):
            unlearned, retrained = leak.draw(np.random.default_rng([11, 300, run]), 300)
            statuses.append(audit_scores(unlearned={"x": unlearned}, retrained={"x": retrained},
                                         certificate=certificate, seed=run,
                                         estimators=[]).status)
        assert statement == {status: statuses.count(status)
                             for status in ("VIOLATION", "CONSISTENT", "INCONCLUSIVE")}
    truth, where = truth_chosen_power(leak, n=300, epsilon=plain.epsilon, delta=plain.delta)
    assert (row.truth_chosen, row.truth_chosen_set) == (truth, where)
    assert 0 <= row.curve_at_profile_point <= row.runs


def test_bench_leaks_gives_no_truth_chosen_rate_where_there_is_no_privacy(capsys):
    assert main(["bench", "leaks", "--json", "--quiet", "--leaks", "interleaved", "--trials",
                 "200", "--runs", "1"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert row["leak"] == "interleaved" and row["truth_chosen"] is None
    assert sum(row["plain"].values()) == sum(row["curve"].values()) == 1


def test_the_stated_pair_and_the_curve_certify_the_same_point():
    plain, curve = leak_certificates()
    assert (plain.epsilon, plain.delta) == (curve.epsilon, curve.delta)
    assert curve.renyi_curve and not plain.renyi_curve


@pytest.mark.parametrize("argv", [
    ["bench", "laws", "--laws", "gaussian,cauchy"],
    ["bench", "laws", "--trials", "1"],
    ["bench", "laws", "--trials", "2000000"],
    ["bench", "laws", "--deltas", "0"],
    ["bench", "laws", "--deltas", "nan"],
    ["bench", "leaks", "--leaks", "scale,shift"],
    ["bench", "leaks", "--trials", "1e3"],
])
def test_bench_suites_refuse_bad_options_in_one_line_before_any_draw(argv, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
