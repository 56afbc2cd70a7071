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
        import audits.cli, audits.runner, audits.report.assemble, audits.registry
        audits.registry.adapters()
        import empirical.divergences.estimators, empirical.divergences.renyi_tests, empirical.statistics
        from empirical.data.datasets import digits_3_vs_8
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

    from empirical.data.datasets import _bundled_digits

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


def _score_samples(sizes):
    """Positive and negative scores of the given sizes: continuous, tied, and signed zeros."""
    rng = np.random.default_rng(sum(sizes))
    return [
        (rng.normal(0.2, 1, sizes[0]), rng.normal(0, 1, sizes[1])),
        (rng.integers(-4, 5, sizes[0]) / 3.0, rng.integers(-4, 5, sizes[1]) / 3.0),  # ties
        (rng.choice([0.0, -0.0, 1.0], sizes[0]), rng.choice([-0.0, 0.0, 2.0], sizes[1])),
    ]


def _roc_with_np_unique(positive, negative):
    """The ROC curve written the plain way (np.unique thresholds, concatenations, copies)."""
    pos, neg = np.sort(positive), np.sort(negative)
    thresholds = np.unique(np.concatenate([pos, neg]))[::-1]
    tp = pos.size - np.searchsorted(pos, thresholds, side="left")
    fp = neg.size - np.searchsorted(neg, thresholds, side="left")
    pooled = np.sort(np.concatenate([positive, negative]))
    ranks = 0.5 * (np.searchsorted(pooled, positive, side="left")
                   + np.searchsorted(pooled, positive, side="right") + 1)
    u_stat = ranks.sum() - pos.size * (pos.size + 1) / 2
    return (np.concatenate([[0.0], fp / neg.size]), np.concatenate([[0.0], tp / pos.size]),
            np.concatenate([[np.inf], thresholds]), float(u_stat / (pos.size * neg.size)))


@pytest.mark.parametrize("sizes", [(1, 1), (2, 3), (997, 1000), (20000, 30000)])
def test_roc_curve_in_place_equals_the_plain_formulation_bit_for_bit(sizes):
    for positive, negative in _score_samples(sizes):
        curve = roc_curve(positive, negative)
        fpr, tpr, thresholds, auc = _roc_with_np_unique(positive, negative)
        for got, want in ((curve.fpr, fpr), (curve.tpr, tpr), (curve.thresholds, thresholds)):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        assert curve.auc == auc


def _pareto_rules_with_np_unique(positive, negative):
    """The undominated rules written the plain way (np.unique thresholds, fresh counts)."""
    pos, neg = np.sort(positive), np.sort(negative)
    thresholds = np.unique(np.concatenate([pos, neg]))
    fn = np.searchsorted(pos, thresholds, side="left")
    fp = neg.size - np.searchsorted(neg, thresholds, side="left")
    keep = np.ones(thresholds.size, dtype=bool)
    keep[1:] &= fp[1:] < fp[:-1]
    keep[:-1] &= fn[1:] > fn[:-1]
    return thresholds[keep], fp[keep], fn[keep]


@pytest.mark.parametrize("sizes", [(1, 1), (2, 3), (997, 1000), (20000, 30000)])
def test_pareto_rules_in_place_equal_the_plain_formulation_bit_for_bit(sizes):
    from empirical.statistics.thresholds import _oriented, _pareto_rules

    for positive, negative in _score_samples(sizes):
        for sign in (1.0, -1.0):
            oriented = _oriented(positive, sign), _oriented(negative, sign)
            assert all(o.tobytes() == (sign * x).tobytes()
                       for o, x in zip(oriented, (positive, negative), strict=True))
            rules = _pareto_rules(*oriented)
            want = _pareto_rules_with_np_unique(sign * positive, sign * negative)
            got = (rules.thresholds, rules.false_positives, rules.false_negatives)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
            assert (rules.n_positive, rules.n_negative) == (positive.size, negative.size)


def test_a_padded_elementwise_result_holds_only_its_own_elements():
    import torch

    from empirical.engine.elementwise import elementwise_per_trial

    values = torch.linspace(-3, 3, 270 * 5, dtype=torch.float64).reshape(270, 5)
    result = elementwise_per_trial(torch.sigmoid, values)
    assert result.untyped_storage().nbytes() == result.numel() * result.element_size()
    for row in (0, 137, 269):  # each row's bits are those of the row computed alone
        assert torch.equal(result[row], elementwise_per_trial(torch.sigmoid, values[row:row + 1])[0])


def test_report_json_written_in_pieces_is_the_text_json_dumps_gives():
    from audits.report.schema import json_pieces

    report = {"b": [0.1, 1e-300, -0.0, 3], "a": {"ü": "é", "list": [], "none": None,
                                                 "nested": [{"z": 1.5, "y": True}]}}
    text = json.dumps(report, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False)
    assert "".join(json_pieces(report)) == text + "\n"


def test_report_accuracies_are_the_values_with_one_float_object_per_distinct_value():
    from audits.analysis import _shared_floats

    values = np.random.default_rng(3).integers(0, 100, 20000) / 99.0
    values[:3] = [0.0, -0.0, 1.0]
    shared = _shared_floats(values)
    assert repr(shared) == repr(values.tolist())
    assert len({id(v) for v in shared}) == len(np.unique(values.view(np.int64)))


class _CountedMechanism:
    """Scores and a 3-column statistic that depend only on (seed, trial); records call sizes."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def run_trials(self, *, seed, first_trial, n_trials):
        from audits.protocols import ModelOutputs, TrialBatch

        self.calls.append(n_trials)
        trials = np.arange(first_trial, first_trial + n_trials)

        def side(offset):
            rows = np.stack([np.sin(trials * (k + 1) + offset + seed) / 3 for k in range(3)], 1)
            return ModelOutputs(scores={"loss": rows[:, 0]}, statistics={"params": rows},
                                accuracy=(trials % 7) / 7)

        return TrialBatch(side(0.0), side(0.5))


def test_a_chunk_computed_in_parts_stores_what_one_call_would_store():
    from audits import chunks as ex

    mechanism = _CountedMechanism()
    plan = ex.ChunkPlan(ex.MAIN, 3, 7000, 2 * ex.PART_TRIALS + 17, 5)
    whole = mechanism.run_trials(seed=5, first_trial=7000, n_trials=plan.n_trials).to_arrays()
    unit = np.array([0.6, -0.8, 0.0])
    for keep in (ex.Keep(None, False), ex.Keep({"params": unit}, False),
                 ex.Keep({"params": unit}, True)):
        mechanism.calls.clear()
        arrays, _ = ex.compute_chunk(mechanism, plan, keep)
        assert mechanism.calls == [ex.PART_TRIALS, ex.PART_TRIALS, 17]
        expected = ex.joined([ex.light(dict(whole), keep)])
        assert sorted(arrays) == sorted([*expected, "trial_index"])
        for key, array in expected.items():
            assert array.dtype == arrays[key].dtype and array.tobytes() == arrays[key].tobytes()
    mechanism.calls.clear()
    ex.compute_chunk(mechanism, plan)  # nothing reduced: one call, as stored
    assert mechanism.calls == [plan.n_trials]


def test_report_copy_keeps_plain_floats_converts_numpy_ones_and_names_a_bad_element():
    from audits.report.schema import _to_plain

    values = [0.5, np.float64(0.25), 3, True, None, "x", [np.int64(2), {"k": np.float32(1.5)}]]
    plain = _to_plain({"a": values, "b": np.array([1.0, 2.0])}, "")
    assert plain == {"a": [0.5, 0.25, 3, True, None, "x", [2, {"k": 1.5}]], "b": [1.0, 2.0]}
    assert plain["a"][0] is values[0] and plain["a"] is not values
    assert [type(v) for v in plain["a"][:2]] == [float, float] and type(plain["a"][6][0]) is int
    with pytest.raises(ValueError, match=r"a\[2\]"):
        _to_plain({"a": [0.5, 1.0, float("nan")]}, "")
    with pytest.raises(ValueError, match=r"a\[1\]"):
        _to_plain({"a": (0.5, np.float64("inf"))}, "")


def test_report_number_lists_keep_their_floats_and_still_name_an_out_of_range_element():
    from audits.report.schema import _numbers

    values = [0.25, 1, 0.0, 1.0, 0.5]
    checked = _numbers(values, "utility.accuracies.unlearned", low=0, high=1)
    assert checked == [0.25, 1.0, 0.0, 1.0, 0.5] and type(checked[1]) is float
    assert checked[0] is values[0] and checked is not values
    with pytest.raises(ValueError, match=r"unlearned\[2\]"):
        _numbers([0.5, 0.75, 1.5], "utility.accuracies.unlearned", low=0, high=1)
    with pytest.raises(ValueError, match=r"s\[1\]"):
        _numbers([0.5, "0.7"], "s")
    with pytest.raises(ValueError, match=r"s\[0\]"):
        _numbers([True], "s")


def test_before_the_trials_file_lines_are_dropped_and_sources_without_a_file_kept():
    import linecache

    from audits.runner import _release_preparation_memory

    linecache.getlines(json.__file__)
    assert json.__file__ in linecache.cache
    cell = "<notebook-cell-1>"
    linecache.cache[cell] = (6, None, ["x = 1\n"], cell)
    try:
        _release_preparation_memory()
        assert json.__file__ not in linecache.cache
        assert linecache.getline(cell, 1) == "x = 1\n"
        assert linecache.getline(json.__file__, 1) == Path(json.__file__).read_text().splitlines(
            keepends=True)[0]
    finally:
        linecache.cache.pop(cell, None)
