"""Tests for empirical.statistics: exact cases, coverage, null data, NeurIPS 2023 metric."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from empirical import statistics as S
from empirical.statistics.gdp import gaussian_epsilon
from empirical.statistics.thresholds import clopper_pearson_upper

REPS = 200
ALPHA = 0.05
# A correct bound violates with probability <= alpha; more than this many violations in REPS
# repetitions happens with probability < 1e-3 for a correct bound.
MAX_VIOLATIONS = int(stats.binom.ppf(0.999, REPS, ALPHA))


def reference_epsilon_of_mu(*, mu: float, delta: float) -> float:
    """The caller-supplied Gaussian profile inverse, written here from scipy's normal CDF (not
    the library's log-space copy): the root of Phi(mu/2 - e/mu) - e^e Phi(-mu/2 - e/mu) = delta."""
    def excess(e: float) -> float:
        return stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu) - delta

    return 0.0 if excess(0.0) <= 0 else optimize.brentq(excess, 0.0, 60.0, xtol=1e-14)


def true_epsilon(mu: float, delta: float) -> float:
    """epsilon(delta) of N(mu, 1) vs N(0, 1), by root-finding on the exact delta(eps)."""
    if S.gaussian_delta(mu=mu, epsilon=0.0) <= delta:
        return 0.0
    return optimize.brentq(lambda e: S.gaussian_delta(mu=mu, epsilon=e) - delta, 0.0, 200.0)


STRATEGIES = [
    S.BonferroniPareto(),
    S.SampleSplit(selection_fraction=0.5, seed=3),
    S.FixedThreshold(threshold=0.5),
]


# ----------------------------------------------------------------------------------------------
# epsilon from error rates.


def test_epsilon_from_error_rates_hand_values():
    assert S.epsilon_from_error_rates(fpr=0.1, fnr=0.1, delta=0.0) == pytest.approx(math.log(9))
    assert S.epsilon_from_error_rates(fpr=0.1, fnr=0.3, delta=0.05) == pytest.approx(
        math.log(0.65 / 0.1)
    )
    # A useless test (TPR = FPR) implies nothing.
    assert S.epsilon_from_error_rates(fpr=0.4, fnr=0.6, delta=0.0) == 0.0


def test_epsilon_from_error_rates_zero_rates_never_nan():
    grid = np.array([0.0, 1e-9, 0.2, 0.5, 1 - 1e-9, 1.0])
    fpr, fnr = np.meshgrid(grid, grid)
    for delta in (0.0, 1e-5, 0.5):
        eps = S.epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=delta)
        assert not np.any(np.isnan(eps))
        assert np.all(eps >= 0)
    # Perfect test: no finite epsilon; trivial tests: 0.
    assert S.epsilon_from_error_rates(fpr=0.0, fnr=0.0, delta=1e-5) == math.inf
    assert S.epsilon_from_error_rates(fpr=1.0, fnr=0.0, delta=0.0) == 0.0
    assert S.epsilon_from_error_rates(fpr=0.0, fnr=1.0, delta=0.0) == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(fpr=-0.1, fnr=0.1, delta=0.0),
        dict(fpr=0.1, fnr=1.1, delta=0.0),
        dict(fpr=0.1, fnr=0.1, delta=1.0),
        dict(fpr=0.1, fnr=0.1, delta=-1e-3),
        dict(fpr=float("nan"), fnr=0.1, delta=0.0),
    ],
)
def test_epsilon_from_error_rates_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        S.epsilon_from_error_rates(**kwargs)


rate = st.floats(min_value=0.0, max_value=1.0)
small_delta = st.floats(min_value=0.0, max_value=0.5)


@settings(max_examples=200, deadline=None)
@given(fpr=rate, fnr=rate, d1=small_delta, d2=small_delta)
def test_epsilon_from_error_rates_monotone_in_delta_and_symmetric(fpr, fnr, d1, d2):
    lo, hi = sorted((d1, d2))
    e_lo = S.epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=lo)
    e_hi = S.epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=hi)
    assert e_hi <= e_lo
    assert S.epsilon_from_error_rates(fpr=fnr, fnr=fpr, delta=lo) == e_lo


@settings(max_examples=200, deadline=None)
@given(fpr=rate, fnr=rate, bump=st.floats(min_value=0.0, max_value=1.0))
def test_epsilon_from_error_rates_non_increasing_in_rates(fpr, fnr, bump):
    larger = min(1.0, fpr + bump)
    assert S.epsilon_from_error_rates(fpr=larger, fnr=fnr, delta=1e-5) <= (
        S.epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=1e-5)
    )


# ----------------------------------------------------------------------------------------------
# Clopper-Pearson.


def test_clopper_pearson_known_values():
    ci = S.clopper_pearson(successes=3, trials=10, confidence=0.95)
    # Standard table values for 3/10.
    assert ci.lower == pytest.approx(0.0667395, abs=1e-6)
    assert ci.upper == pytest.approx(0.6524529, abs=1e-6)
    assert ci.kind == "confidence interval"
    # Zero successes, one-sided: 1 - alpha^(1/n) exactly.
    up = S.clopper_pearson(successes=0, trials=50, confidence=0.95, sided="upper")
    assert up.upper == pytest.approx(1 - 0.05 ** (1 / 50), rel=1e-10)
    assert up.lower == 0.0
    low = S.clopper_pearson(successes=50, trials=50, confidence=0.95, sided="lower")
    assert low.lower == pytest.approx(0.05 ** (1 / 50), rel=1e-10)
    assert low.upper == 1.0


def test_clopper_pearson_rejects_bad_input():
    with pytest.raises(ValueError, match="exceeds"):
        S.clopper_pearson(successes=5, trials=4)
    with pytest.raises(ValueError, match="sided"):
        S.clopper_pearson(successes=1, trials=4, sided="both")
    with pytest.raises(ValueError, match="confidence"):
        S.clopper_pearson(successes=1, trials=4, confidence=1.0)
    with pytest.raises(ValueError, match="integer"):
        S.clopper_pearson(successes=1.5, trials=4)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=2000),
    frac=st.floats(min_value=0.0, max_value=1.0),
    c1=st.floats(min_value=0.5, max_value=0.999),
    c2=st.floats(min_value=0.5, max_value=0.999),
)
def test_clopper_pearson_contains_plugin_and_nests(n, frac, c1, c2):
    k = int(round(frac * n))
    lo_c, hi_c = sorted((c1, c2))
    narrow = S.clopper_pearson(successes=k, trials=n, confidence=lo_c)
    wide = S.clopper_pearson(successes=k, trials=n, confidence=hi_c)
    assert narrow.lower <= k / n <= narrow.upper
    assert wide.lower <= narrow.lower + 1e-12 and narrow.upper <= wide.upper + 1e-12
    one_sided = S.clopper_pearson(successes=k, trials=n, confidence=lo_c, sided="upper")
    assert one_sided.upper <= narrow.upper + 1e-12


def test_clopper_pearson_one_sided_coverage():
    rng = np.random.default_rng(0)
    p, n = 0.07, 60
    k = rng.binomial(n, p, size=4000)
    uppers = clopper_pearson_upper(k, n, 0.05)
    assert np.mean(uppers < p) <= 0.05


# ----------------------------------------------------------------------------------------------
# epsilon lower bounds: coverage, null data, power.


def test_fixed_threshold_matches_counts_entry_point():
    rng = np.random.default_rng(1)
    pos, neg = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 250)
    via_scores = S.epsilon_lower_bound(
        pos, neg, delta=1e-3, alpha=0.1, strategy=S.FixedThreshold(threshold=0.7)
    )
    via_counts = S.epsilon_lower_bound_from_counts(
        false_positives=int(np.sum(neg >= 0.7)),
        n_negative=250,
        false_negatives=int(np.sum(pos < 0.7)),
        n_positive=300,
        delta=1e-3,
        alpha=0.1,
    )
    assert via_scores.epsilon == pytest.approx(via_counts.epsilon, rel=1e-12)
    assert via_scores.kind == via_counts.kind == "lower bound"
    assert via_scores.confidence == pytest.approx(0.9)


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_epsilon_lower_bound_coverage_gaussian_shift(strategy):
    mu, delta, n = 1.0, 0.1, 300
    truth = true_epsilon(mu, delta)
    rng = np.random.default_rng(10)
    pos = rng.normal(mu, 1.0, (REPS, n))
    neg = rng.normal(0.0, 1.0, (REPS, n))
    bounds = np.array(
        [
            S.epsilon_lower_bound(pos[r], neg[r], delta=delta, alpha=ALPHA, strategy=strategy)
            .epsilon
            for r in range(REPS)
        ]
    )
    assert np.sum(bounds > truth) <= MAX_VIOLATIONS
    assert np.mean(bounds) > 0.1 * truth  # not vacuous


def test_epsilon_lower_bound_coverage_tight_two_point_design():
    """Scores in {0, 1}: the threshold 1 is the optimal test, so the bound is nearly tight."""
    p1, q1, n, delta = 0.6, 0.3, 200, 0.0
    truth = S.epsilon_from_error_rates(fpr=q1, fnr=1 - p1, delta=delta)
    rng = np.random.default_rng(11)
    pos = (rng.random((REPS, n)) < p1).astype(float)
    neg = (rng.random((REPS, n)) < q1).astype(float)
    fixed = S.FixedThreshold(threshold=1.0)
    bounds = np.array(
        [
            S.epsilon_lower_bound(pos[r], neg[r], delta=delta, alpha=ALPHA, strategy=fixed).epsilon
            for r in range(REPS)
        ]
    )
    pareto = np.array(
        [S.epsilon_lower_bound(pos[r], neg[r], delta=delta).epsilon for r in range(REPS)]
    )
    plug_in = np.array(
        [S.epsilon_estimate(pos[r], neg[r], delta=delta).epsilon for r in range(REPS)]
    )
    assert np.sum(bounds > truth) <= MAX_VIOLATIONS
    assert np.sum(pareto > truth) <= MAX_VIOLATIONS
    # The coverage check has teeth: the plug-in number overshoots the truth about half the time.
    assert np.mean(plug_in > truth) > 0.3
    assert np.mean(bounds) > 0.3 * truth


@pytest.mark.parametrize("two_sided", [False, True])
@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_bounds_are_zero_on_null_data(strategy, two_sided):
    rng = np.random.default_rng(12)
    n = 200
    pos = rng.normal(0.0, 1.0, (REPS, n))
    neg = rng.normal(0.0, 1.0, (REPS, n))
    eps = np.array(
        [
            S.epsilon_lower_bound(
                pos[r], neg[r], delta=1e-5, strategy=strategy, two_sided_threshold=two_sided
            ).epsilon
            for r in range(REPS)
        ]
    )
    mu = np.array(
        [
            S.gdp_mu_lower_bound(
                pos[r], neg[r], strategy=strategy, two_sided_threshold=two_sided
            ).mu
            for r in range(REPS)
        ]
    )
    assert np.sum(eps > 0) <= MAX_VIOLATIONS
    assert np.sum(mu > 0) <= MAX_VIOLATIONS


def test_gdp_bounds_coverage_gaussian_shift():
    mu, delta, n = 1.5, 1e-3, 300
    truth_eps = true_epsilon(mu, delta)
    rng = np.random.default_rng(13)
    pos = rng.normal(mu, 1.0, (REPS, n))
    neg = rng.normal(0.0, 1.0, (REPS, n))
    mus, epss = [], []
    for r in range(REPS):
        bound = S.gdp_mu_lower_bound(pos[r], neg[r], alpha=ALPHA)
        mus.append(bound.mu)
        epss.append(S.epsilon_from_gdp(bound, delta=delta, mechanism_is_gaussian=True,
                                       epsilon_of_mu=reference_epsilon_of_mu).epsilon)
    mus, epss = np.array(mus), np.array(epss)
    assert np.sum(mus > mu) <= MAX_VIOLATIONS
    assert np.sum(epss > truth_eps) <= MAX_VIOLATIONS
    assert np.mean(mus) > 0.5 * mu


def test_bounds_approach_truth_with_many_trials():
    mu, delta, n = 2.0, 0.1, 5000
    rng = np.random.default_rng(14)
    pos, neg = rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)
    truth = true_epsilon(mu, delta)
    eps = S.epsilon_lower_bound(pos, neg, delta=delta).epsilon
    assert 0.6 * truth < eps <= truth
    gdp = S.gdp_mu_lower_bound(pos, neg)
    assert 0.8 * mu < gdp.mu <= mu


def test_two_sided_threshold_finds_reversed_attack():
    rng = np.random.default_rng(15)
    pos, neg = rng.normal(-2.0, 1.0, 500), rng.normal(0.0, 1.0, 500)
    one = S.epsilon_lower_bound(pos, neg, delta=0.01)
    two = S.epsilon_lower_bound(pos, neg, delta=0.01, two_sided_threshold=True)
    assert two.epsilon > 1.0 and two.positive_above is False
    assert one.epsilon < two.epsilon
    # The reported rule reproduces the reported counts.
    assert two.false_positives == int(np.sum(neg <= two.threshold))
    assert two.false_negatives == int(np.sum(pos > two.threshold))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=10_000),
    d1=st.floats(min_value=0.0, max_value=0.3),
    d2=st.floats(min_value=0.0, max_value=0.3),
)
def test_epsilon_lower_bound_monotone_in_delta(seed, d1, d2):
    rng = np.random.default_rng(seed)
    pos, neg = rng.normal(1.0, 1.0, 80), rng.normal(0.0, 1.0, 70)
    lo, hi = sorted((d1, d2))
    # SampleSplit may pick a different rule for each delta, so only these two are monotone.
    for strategy in (S.BonferroniPareto(), S.FixedThreshold(threshold=0.5)):
        e_lo = S.epsilon_lower_bound(pos, neg, delta=lo, strategy=strategy).epsilon
        e_hi = S.epsilon_lower_bound(pos, neg, delta=hi, strategy=strategy).epsilon
        assert e_hi <= e_lo + 1e-12


def test_lower_bound_below_estimate_on_same_data():
    rng = np.random.default_rng(16)
    pos, neg = rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 400)
    bound = S.epsilon_lower_bound(pos, neg, delta=0.05)
    est = S.epsilon_estimate(pos, neg, delta=0.05)
    assert bound.kind == "lower bound" and est.kind == "estimate"
    assert bound.epsilon <= est.epsilon


def test_epsilon_lower_bound_rejects_bad_input():
    good = np.arange(10.0)
    with pytest.raises(ValueError, match="alpha"):
        S.epsilon_lower_bound(good, good, delta=0.0, alpha=0.0)
    with pytest.raises(ValueError, match="delta"):
        S.epsilon_lower_bound(good, good, delta=1.5)
    with pytest.raises(ValueError, match="NaN"):
        S.epsilon_lower_bound([0.0, np.nan], good, delta=0.0)
    with pytest.raises(ValueError, match="empty"):
        S.epsilon_lower_bound([], good, delta=0.0)
    with pytest.raises(ValueError, match="one-dimensional"):
        S.epsilon_lower_bound(np.ones((2, 2)), good, delta=0.0)
    with pytest.raises(ValueError, match="strategy"):
        S.epsilon_lower_bound(good, good, delta=0.0, strategy="bonferroni")
    with pytest.raises(ValueError, match="SampleSplit"):
        S.epsilon_lower_bound([1.0], good, delta=0.0, strategy=S.SampleSplit())
    with pytest.raises(ValueError, match="selection_fraction"):
        S.SampleSplit(selection_fraction=1.0)
    with pytest.raises(ValueError, match="threshold"):
        S.FixedThreshold(threshold=float("inf"))


# ----------------------------------------------------------------------------------------------
# Ceiling.


@pytest.mark.parametrize(
    ("n", "expected"), [(16, 1.35), (64, 2.83), (512, 4.93), (1000, 5.60), (5000, 7.21)]
)
def test_max_certifiable_epsilon_table(n, expected):
    # Perfect separation, alpha = 0.05, delta = 1e-5, one pre-registered threshold.
    ceiling = S.max_certifiable_epsilon(n_positive=n, n_negative=n, delta=1e-5, alpha=0.05)
    assert ceiling.epsilon == pytest.approx(expected, abs=0.01)
    assert ceiling.kind == "ceiling"


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_max_certifiable_epsilon_is_attained_by_separated_scores(strategy):
    n_pos, n_neg = 120, 90
    pos, neg = np.linspace(5.0, 6.0, n_pos), np.linspace(-1.0, 0.0, n_neg)
    bound = S.epsilon_lower_bound(pos, neg, delta=1e-4, strategy=strategy)
    ceiling = S.max_certifiable_epsilon(
        n_positive=n_pos, n_negative=n_neg, delta=1e-4, strategy=strategy
    )
    assert bound.epsilon == pytest.approx(ceiling.epsilon, rel=1e-12)
    loose = S.max_certifiable_epsilon(n_positive=n_pos, n_negative=n_neg, delta=1e-4)
    assert ceiling.epsilon <= loose.epsilon + 1e-12


# ----------------------------------------------------------------------------------------------
# Gaussian DP.


@pytest.mark.parametrize(("mu", "eps"), [(0.5, 0.0), (1.0, 0.5), (2.0, 1.0), (3.0, 4.0)])
def test_gaussian_delta_matches_numerical_integral(mu, eps):
    def integrand(x):
        return max(0.0, stats.norm.pdf(x, mu, 1) - math.exp(eps) * stats.norm.pdf(x, 0, 1))

    numeric, _ = integrate.quad(integrand, -12, 12 + mu, limit=200, points=[eps / mu + mu / 2])
    assert S.gaussian_delta(mu=mu, epsilon=eps) == pytest.approx(numeric, abs=1e-9)


def test_gaussian_delta_edge_cases_and_inversion():
    assert S.gaussian_delta(mu=0.0, epsilon=1.0) == 0.0
    assert S.gaussian_delta(mu=2.0, epsilon=60.0) >= 0.0
    eps = gaussian_epsilon(mu=2.0, delta=1e-5)
    assert S.gaussian_delta(mu=2.0, epsilon=eps) == pytest.approx(1e-5, rel=1e-8)
    with pytest.raises(ValueError):
        S.gaussian_delta(mu=-1.0, epsilon=0.0)


def test_epsilon_from_gdp_requires_gaussian_declaration():
    rng = np.random.default_rng(17)
    bound = S.gdp_mu_lower_bound(rng.normal(1, 1, 200), rng.normal(0, 1, 200))
    profile = reference_epsilon_of_mu
    with pytest.raises(ValueError, match="Gaussian"):
        S.epsilon_from_gdp(bound, delta=1e-5, epsilon_of_mu=profile)
    with pytest.raises(ValueError, match="Gaussian"):
        S.epsilon_from_gdp(bound, delta=1e-5, mechanism_is_gaussian="yes", epsilon_of_mu=profile)
    result = S.epsilon_from_gdp(bound, delta=1e-5, mechanism_is_gaussian=True, epsilon_of_mu=profile)
    assert result.kind == "lower bound" and result.epsilon > 0
    assert result.epsilon == profile(mu=bound.mu, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        S.epsilon_from_gdp(bound, delta=0.0, mechanism_is_gaussian=True, epsilon_of_mu=profile)
    with pytest.raises(ValueError, match="epsilon_of_mu"):
        S.epsilon_from_gdp(bound, delta=1e-5, mechanism_is_gaussian=True, epsilon_of_mu=None)
    with pytest.raises(ValueError, match="finite"):
        S.epsilon_from_gdp(bound, delta=1e-5, mechanism_is_gaussian=True,
                           epsilon_of_mu=lambda *, mu, delta: -1.0)


def test_epsilon_from_gdp_at_mu_zero_is_zero_without_calling_the_profile():
    null = S.gdp_mu_lower_bound(np.zeros(50), np.zeros(50))
    assert null.mu == 0.0

    def refuse(*, mu, delta):
        raise AssertionError("the profile is not defined at mu = 0")

    assert S.epsilon_from_gdp(null, delta=1e-5, mechanism_is_gaussian=True,
                              epsilon_of_mu=refuse).epsilon == 0.0


def test_reference_profile_agrees_with_the_test_bed_copy():
    # the test-bed inverse kept on the empirical floor and the scipy-CDF root agree
    for mu, delta in ((0.5, 1e-2), (1.5, 1e-3), (3.0, 1e-5)):
        assert gaussian_epsilon(mu=mu, delta=delta) == pytest.approx(
            reference_epsilon_of_mu(mu=mu, delta=delta), rel=1e-8)


# ----------------------------------------------------------------------------------------------
# ROC.


def test_roc_auc_matches_pairwise_count_with_ties():
    rng = np.random.default_rng(18)
    pos = np.round(rng.normal(0.5, 1.0, 70), 1)
    neg = np.round(rng.normal(0.0, 1.0, 60), 1)
    diff = pos[:, None] - neg[None, :]
    expected = np.mean(diff > 0) + 0.5 * np.mean(diff == 0)
    roc = S.roc_curve(pos, neg)
    assert roc.auc == pytest.approx(expected, abs=1e-12)
    assert np.trapezoid(roc.tpr, roc.fpr) == pytest.approx(expected, abs=1e-12)
    assert roc.fpr[0] == roc.tpr[0] == 0.0 and roc.fpr[-1] == roc.tpr[-1] == 1.0
    assert np.all(np.diff(roc.fpr) >= 0) and np.all(np.diff(roc.tpr) >= 0)


def test_tpr_at_fpr_hand_example():
    pos = np.array([0.9, 0.8, 0.7, 0.2])
    neg = np.array([0.85, 0.3, 0.1, 0.05])
    at_zero = S.tpr_at_fpr(pos, neg, fpr=0.0)
    assert at_zero.tpr == 0.25 and at_zero.threshold == 0.9
    at_quarter = S.tpr_at_fpr(pos, neg, fpr=0.25)
    assert at_quarter.tpr == 0.75 and at_quarter.achieved_fpr == 0.25


# ----------------------------------------------------------------------------------------------
# NeurIPS 2023 metric.

LOG3 = math.log(0.75 - 1e-5) - math.log(0.25)


def neurips_hand_matrices():
    """Four models, five forget examples; the expected epsilons are derived by hand."""
    unlearned = np.array(
        [
            [1.0, 3.0, 4.0, 5.0],  # best rule: single threshold, FPR = FNR = 1/4
            [0.0, 0.1, 0.2, 0.3],  # best rule: the interval [0.1, 0.3], FPR = FNR = 1/4
            [1.0, 1.0, 1.0, 1.0],  # peaky (range ratio 0 < 0.01): capped at 50
            [0.0, 1.0, 2.0, 3.0],  # identical to retrained: epsilon 0
            [10.0, 10.5, 11.0, 11.5],  # perfectly separated: +inf, capped at 50
        ]
    ).T
    retrained = np.array(
        [
            [0.0, 2.0, 2.5, 6.0],
            [-3.0, 0.15, 3.0, 3.1],
            [0.0, 1.0, 2.0, 3.0],
            [0.0, 1.0, 2.0, 3.0],
            [0.0, 0.5, 1.0, 1.5],
        ]
    ).T
    return unlearned, retrained


def test_neurips_metric_hand_computed_cases():
    unlearned, retrained = neurips_hand_matrices()
    result = S.neurips2023_forget_quality(unlearned, retrained)
    np.testing.assert_allclose(
        result.per_example_epsilon, [LOG3, LOG3, 50.0, 0.0, 50.0], rtol=0, atol=1e-6
    )
    # 4 models: bins of width 0.5 up to ceil(log 3) = 2; log 3 is in [1, 1.5) -> 1/4.
    np.testing.assert_array_equal(result.per_example_points, [0.25, 0.25, 0.0, 1.0, 0.0])
    assert result.forget_quality == pytest.approx(0.3)
    assert result.kind == "estimate"
    final = S.neurips2023_final_score(
        result,
        unlearned_retain_accuracy=[0.9, 0.9, 0.9, 0.9],
        retrained_retain_accuracy=1.0,
        unlearned_test_accuracy=np.array([0.7, 0.9]),
        retrained_test_accuracy=0.8,
    )
    assert final.score == pytest.approx(0.3 * 0.9 * 1.0)
    assert final.kind == "estimate"


def test_neurips_metric_uses_double_threshold_rule():
    # Single thresholds alone reach only FPR 1/4, FNR 1/2 on example 1: log(2 (1 - 2 delta)).
    unlearned, retrained = neurips_hand_matrices()
    single_best = math.log(1 - 1e-5 - 0.5) - math.log(0.25)
    result = S.neurips2023_forget_quality(unlearned[:, 1:2], retrained[:, 1:2])
    assert result.per_example_epsilon[0] > single_best + 0.3


def test_neurips_metric_orientation_is_symmetric():
    unlearned, retrained = neurips_hand_matrices()
    a = S.neurips2023_forget_quality(unlearned, retrained)
    b = S.neurips2023_forget_quality(retrained, unlearned)
    np.testing.assert_allclose(a.per_example_epsilon, b.per_example_epsilon)


def test_neurips_bin_points():
    # 512 models: 14 bins over [0, 7).
    eps = np.array([0.0, 0.49, 0.5, 1.2, 6.49, 6.5, 6.99, 7.0, 50.0, np.inf])
    points = S.neurips2023_bin_points(epsilon=eps, n_models=512)
    expected = [1.0, 1.0, 0.5, 0.25, 2.0**-12, 2.0**-13, 2.0**-13, 0.0, 0.0, 0.0]
    np.testing.assert_array_equal(points, expected)
    # Two models: log(1) = 0, no bins at all.
    assert S.neurips2023_bin_points(epsilon=[0.0], n_models=2)[0] == 0.0


def test_neurips_metric_rejects_bad_input():
    unlearned, retrained = neurips_hand_matrices()
    with pytest.raises(ValueError, match="same shape"):
        S.neurips2023_forget_quality(unlearned[:3], retrained)
    with pytest.raises(ValueError, match="n_models, n_examples"):
        S.neurips2023_forget_quality(unlearned[:, 0], retrained[:, 0])
    with pytest.raises(ValueError, match="NaN"):
        S.neurips2023_forget_quality(unlearned * np.nan, retrained)
    with pytest.raises(ValueError, match="accuracies"):
        S.neurips2023_final_score(
            0.5,
            unlearned_retain_accuracy=1.2,
            retrained_retain_accuracy=1.0,
            unlearned_test_accuracy=1.0,
            retrained_test_accuracy=1.0,
        )


def test_forward_epsilon_uses_only_the_stated_inequality():
    # Bernoulli worlds P = Bernoulli(a), Q = Bernoulli(b); the rule "score = 0" has
    # P(S) = 1 - a and Q(S) = 1 - b: forward eps = log((1 - a - delta)/(1 - b)) exactly, while
    # the reverse inequality on the complement would claim log((b - delta)/a).
    a, b, delta = 0.001, 0.1, 1e-5
    forward = S.epsilon_from_error_rates(fpr=1 - b, fnr=a, delta=delta, direction="forward")
    assert forward == pytest.approx(math.log((1 - a - delta) / (1 - b)), rel=1e-12)
    both = S.epsilon_from_error_rates(fpr=1 - b, fnr=a, delta=delta)
    assert both == pytest.approx(math.log((b - delta) / a), rel=1e-12)
    with pytest.raises(ValueError, match="direction"):
        S.epsilon_from_error_rates(fpr=0.1, fnr=0.1, delta=0.0, direction="backward")


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 0.5))
@settings(max_examples=200, deadline=None)
def test_forward_epsilon_is_never_above_the_two_sided_one(fpr, fnr, delta):
    forward = S.epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=delta, direction="forward")
    assert 0 <= forward <= S.epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=delta)
    swapped = S.epsilon_from_error_rates(fpr=fnr, fnr=fpr, delta=delta, direction="forward")
    assert max(forward, swapped) == S.epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=delta)


def test_sample_split_keeps_paired_trials_together():
    scores = np.random.default_rng(5).normal(size=300)
    result = S.epsilon_lower_bound(scores, scores.copy(), delta=1e-5,
                                   strategy=S.SampleSplit(seed=3))
    assert result.false_positives + result.false_negatives == result.n_positive


def test_every_threshold_test_bound_reports_its_rule_and_counts() -> None:
    from empirical.statistics.pilot import pilot_epsilon_lower_bound

    rng = np.random.default_rng(7)
    positive, negative = rng.normal(2.0, 1.0, 400), rng.normal(0.0, 1.0, 400)
    results = [
        S.epsilon_lower_bound(positive, negative, delta=1e-3),
        S.gdp_mu_lower_bound(positive, negative),
        pilot_epsilon_lower_bound(positive, negative, delta=1e-3, alpha=0.05, seed=1),
    ]
    for result in results:
        assert isinstance(result, S.ThresholdTestBound)
        assert result.kind == S.KIND_LOWER_BOUND
        assert 0.0 <= result.fpr_upper <= 1.0 and 0.0 <= result.fnr_upper <= 1.0
    full = results[0]
    assert full.false_negatives == int(np.sum(positive < full.threshold))
    assert full.false_positives == int(np.sum(negative >= full.threshold))
    assert results[2].n_positive + results[2].n_pilot_positive == positive.size


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-3, 3) | st.floats(-1e6, 1e6, allow_nan=False), min_size=1,
                max_size=60))
def test_midranks_are_scipys_average_ranks(values):
    from empirical.statistics.checks import midranks

    x = np.asarray(values, dtype=float)
    np.testing.assert_array_equal(midranks(x), stats.rankdata(x, method="average"))
