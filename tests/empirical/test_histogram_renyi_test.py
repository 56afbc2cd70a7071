"""Rényi-native audit: the dual bound against brute force, coverage on Gaussian truths, power."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats

from empirical.divergences import renyi_histogram, renyi_reach, renyi_tests


def renyi(p: np.ndarray, q: np.ndarray, order: float) -> float:
    """D_order(p || q) of two finite distributions, written out independently."""
    total = 0.0
    for pi, qi in zip(p, q, strict=True):
        if pi > 0:
            total += pi**order * qi ** (1 - order) if qi > 0 else math.inf
    return math.log(total) / (order - 1)


def binned_gaussian(mu: float, edges: np.ndarray) -> np.ndarray:
    cdf = special.ndtr(np.concatenate([[-np.inf], edges, [np.inf]]) - mu)
    return np.diff(cdf)


def primal_minimum(box_p, box_q, order: float, rng: np.random.Generator, starts: int = 8) -> float:
    """min D_order over the boxes and simplices by multi-start SLSQP (an upper estimate of the
    true minimum: any feasible point is >= the minimum)."""
    b = len(box_p[0])
    lower = np.concatenate([box_p[0], box_q[0]])
    upper = np.concatenate([box_p[1], box_q[1]])
    best = math.inf

    def objective(x):
        return renyi(np.maximum(x[:b], 0), np.maximum(x[b:], 1e-300), order)

    for _ in range(starts):
        x0 = rng.uniform(lower, upper)
        result = optimize.minimize(
            objective, x0, method="SLSQP", bounds=list(zip(lower, upper, strict=True)),
            constraints=[{"type": "eq", "fun": lambda x: x[:b].sum() - 1},
                         {"type": "eq", "fun": lambda x: x[b:].sum() - 1}],
            options={"ftol": 1e-12, "maxiter": 500},
        )
        x = result.x
        if abs(x[:b].sum() - 1) < 1e-8 and abs(x[b:].sum() - 1) < 1e-8 and np.all(x >= lower - 1e-12):
            best = min(best, objective(x))
    return best


# ----------------------------------------------------------------------------------------------
# The dual bound.


def test_point_boxes_give_the_exact_divergence():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    q = np.array([0.25, 0.25, 0.3, 0.2])
    for order in (1.1, 2.0, 7.0):
        bound = renyi_histogram.histogram_renyi_lower_bound((p, p), (q, q), order=order)
        assert bound == pytest.approx(renyi(p, q, order), rel=1e-6)
        assert bound <= renyi(p, q, order)


def test_two_bins_against_a_grid():
    """Two bins: p = (s, 1 - s), q = (t, 1 - t); the box constraints become intervals for s, t,
    so the true minimum is at most the minimum over a fine grid of feasible points."""
    box_p = (np.array([0.55, 0.2]), np.array([0.8, 0.45]))
    box_q = (np.array([0.2, 0.5]), np.array([0.5, 0.8]))
    s, t = np.meshgrid(np.linspace(max(0.55, 1 - 0.45), min(0.8, 1 - 0.2), 801),
                       np.linspace(max(0.2, 1 - 0.8), min(0.5, 1 - 0.5), 801))
    for order in (1.5, 3.0, 10.0):
        # D_order of (s, 1 - s) || (t, 1 - t), vectorised over the grid.
        values = np.log(s**order * t ** (1 - order) + (1 - s) ** order * (1 - t) ** (1 - order))
        grid_min = float(np.min(values)) / (order - 1)
        bound = renyi_histogram.histogram_renyi_lower_bound(box_p, box_q, order=order)
        assert bound <= grid_min + 1e-12
        assert bound >= grid_min - 1e-4  # and tight: the grid spacing is the only gap


@settings(max_examples=15, deadline=None)
@given(bins=st.integers(min_value=2, max_value=6), n=st.integers(min_value=30, max_value=400),
       seed=st.integers(min_value=0, max_value=10**6),
       order=st.sampled_from([1.05, 1.5, 2.0, 4.0, 12.0]))
def test_dual_bound_never_exceeds_the_primal_minimum(bins, n, seed, order):
    rng = np.random.default_rng(seed)
    counts_p = rng.multinomial(n, rng.dirichlet(np.ones(bins)))
    counts_q = rng.multinomial(n, rng.dirichlet(np.ones(bins)))
    box_p = renyi_histogram.simultaneous_boxes(counts_p, gamma=0.01)
    box_q = renyi_histogram.simultaneous_boxes(counts_q, gamma=0.01)
    bound = renyi_histogram.histogram_renyi_lower_bound(box_p, box_q, order=order)
    primal = primal_minimum(box_p, box_q, order, rng)
    assert bound <= primal + 1e-7 * max(1.0, primal)
    # Not vacuous: strong duality holds for this convex program, so the gap is small.
    assert bound >= primal - 1e-3 * max(1.0, primal)


# ----------------------------------------------------------------------------------------------
# Validity on Gaussian truths.


@settings(max_examples=3, deadline=None)
@given(mu=st.floats(min_value=0.0, max_value=2.5), n=st.integers(min_value=200, max_value=1500),
       seed=st.integers(min_value=0, max_value=10**6))
def test_curve_covers_the_binned_truth(mu, n, seed):
    """Each curve holds with probability >= 95%: over 10 repetitions at most 3 may fail
    (binomial(10, 0.05) exceeds 3 with probability 0.1%); the bins are fixed in advance."""
    edges = np.array([-1.5, -0.5, 0.5, 1.5, 2.5])
    orders = (1.1, 8.0)
    p_true, q_true = binned_gaussian(mu, edges), binned_gaussian(0.0, edges)
    # A divergence is >= 0; at mu ~ 0 the sum's rounding can put the float value a few ulps
    # below, where the bound's exact 0 would count as a miss.
    truth_f = [max(0.0, renyi(p_true, q_true, a)) for a in orders]
    truth_b = [max(0.0, renyi(q_true, p_true, a)) for a in orders]
    rng = np.random.default_rng(seed)
    failures = 0
    for _ in range(10):
        curve = renyi_histogram.renyi_lower_bound_curve(rng.normal(mu, 1, n), rng.normal(0, 1, n),
                                                        edges=edges, orders=orders, beta=0.05)
        failures += any(lb > t for lb, t in zip(curve.forward + curve.backward, truth_f + truth_b,
                                                strict=True))
    assert failures <= 3


def test_exact_gaussian_mechanism_is_not_flagged():
    """Certified alpha mu^2/2 with the true mu: a violation is a false alarm (level 5%)."""
    mu = 1.0
    alarms = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        result = renyi_tests.renyi_audit(rng.normal(mu, 1, 3000), rng.normal(0, 1, 3000),
                               certified=lambda a: a * mu**2 / 2, orders=(1.05, 2.0, 8.0), seed=seed)
        alarms += result.violation
        for lb, a in zip(result.curve.forward, result.curve.orders, strict=True):
            assert lb <= a * mu**2 / 2 or result.violation
    assert alarms <= int(stats.binom.ppf(0.999, 8, 0.05))


@pytest.mark.slow
def test_exact_gaussian_mechanism_false_alarm_rate_at_10000():
    runs, alarms = 200, 0
    for seed in range(runs):
        rng = np.random.default_rng([99, seed])
        alarms += renyi_tests.renyi_audit(rng.normal(1, 1, 10_000), rng.normal(0, 1, 10_000),
                                certified=lambda a: a / 2, seed=seed).violation
    assert alarms <= int(stats.binom.ppf(0.999, runs, 0.05))


def test_detects_a_noise_shortfall():
    """sigma_true = sigma_cert / 1.5 at 10,000 per side (the benchmark measures the rates)."""
    rng = np.random.default_rng(5)
    result = renyi_tests.renyi_audit(rng.normal(1.5, 1, 10_000), rng.normal(0, 1, 10_000),
                           certified=lambda a: a / 2, orders=(1.05, 1.5, 4.0))
    assert result.violation and result.violating_orders
    assert result.curve.kind == "lower bound" and result.curve.confidence == pytest.approx(0.95)
    # The plug-in values are estimates and may exceed the bounds; the bounds sit below them.
    assert all(lb <= est for lb, est in zip(result.curve.forward, result.curve.estimate_forward,
                                            strict=True))


def test_one_sided_certificate_tests_one_direction():
    rng = np.random.default_rng(6)
    # P much wider than Q: D(Q || P) is moderate, D(P || Q) is large.
    p, q = rng.normal(0, 3, 10_000), rng.normal(0, 1, 10_000)
    cap = 0.5
    one = renyi_tests.renyi_audit(q, p, certified=lambda a: cap, two_sided=False, orders=(1.5, 4.0))
    both = renyi_tests.renyi_audit(q, p, certified=lambda a: cap, two_sided=True, orders=(1.5, 4.0))
    assert both.violation
    assert len(one.violating_orders) <= len(both.violating_orders)


def test_pilot_edges_ignore_the_tested_scores():
    rng = np.random.default_rng(7)
    pilot_p, pilot_q = rng.normal(1, 1, 300), rng.normal(0, 1, 300)
    edges = renyi_histogram.pilot_bin_edges(pilot_p, pilot_q)
    assert np.all(np.diff(edges) > 0)
    assert np.array_equal(edges, renyi_histogram.pilot_bin_edges(pilot_p, pilot_q))
    a = rng.normal(size=5000)
    b = rng.normal(size=5000)
    r1 = renyi_tests.renyi_audit(a, b, certified=lambda x: 1.0, seed=3, orders=(2.0,))
    r2 = renyi_tests.renyi_audit(a, b, certified=lambda x: 1.0, seed=3, orders=(2.0,))
    assert r1.curve == r2.curve
    assert r1.n_pilot_p == r2.n_pilot_p == 1000  # the default pilot is 20% of the trials


def test_validation():
    x = np.zeros(10)
    with pytest.raises(ValueError, match="order"):
        renyi_histogram.histogram_renyi_lower_bound((x, x), (x, x), order=1.0)
    with pytest.raises(ValueError, match="increasing"):
        renyi_histogram.renyi_lower_bound_curve(np.ones(10), np.ones(10), edges=[1.0, 0.0])
    with pytest.raises(ValueError, match="beta"):
        renyi_histogram.renyi_lower_bound_curve(np.ones(10), np.ones(10), edges=[0.0], beta=1.0)
    with pytest.raises(ValueError, match="NaN"):
        renyi_tests.renyi_audit(np.array([np.nan, 1, 2]), np.ones(10), certified=lambda a: 1.0)
    with pytest.raises(ValueError, match="pilot_fraction"):
        renyi_tests.renyi_audit(np.ones(10), np.ones(10), certified=lambda a: 1.0, pilot_fraction=1.5)


def test_pilot_split_keeps_paired_trials_together():
    """Identical paired samples (trial i gives the same score in both worlds): one permutation
    sends row i of both sides to the same part, so the tested counts coincide exactly; separate
    permutations would test different rows and let pilot rows of one side into the other's."""
    scores = np.random.default_rng(3).normal(size=500)
    result = renyi_tests.renyi_audit(scores, scores.copy(), certified=lambda a: 10.0, seed=5)
    assert result.curve.counts_p == result.curve.counts_q
    assert result.n_pilot_p == result.n_pilot_q == 100


def _renyi_mp(p, q, order) -> float:
    with mpmath.workdps(60):
        total = mpmath.fsum(mpmath.mpf(a) ** order * mpmath.mpf(b) ** (1 - order)
                            for a, b in zip(p, q, strict=True) if a > 0)
        return float(mpmath.log(total) / (order - 1))


@pytest.mark.parametrize("order", [1000.0, 5000.0, 1e5])
def test_large_orders_are_computed_in_log_space(order):
    """p^alpha q^(1-alpha) overflows at these orders; the estimate and the dual bound work with
    logarithms instead of dropping to 0."""
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.2, 0.3, 0.5])
    assert renyi_histogram.renyi_from_probabilities(p, q, order) == pytest.approx(_renyi_mp(p, q, order),
                                                                      rel=1e-12)
    # Perfectly separated counts: D_alpha is non-decreasing in alpha, and so is the bound.
    at_32 = renyi_reach.max_renyi_lower_bound(n_p=900, n_q=900, orders=[32.0])[0]
    large = renyi_reach.max_renyi_lower_bound(n_p=900, n_q=900, orders=[order])[0]
    assert at_32 > 1.0 and large >= at_32 * (1 - 1e-6)
    # Against a box whose minimum is known: the boxes pin p and q to the points above (width
    # 1e-12), so the bound is the exact divergence up to the rounding shrink.
    box_p = (p - 1e-12, p + 1e-12)
    box_q = (q - 1e-12, q + 1e-12)
    bound = renyi_histogram.histogram_renyi_lower_bound(box_p, box_q, order=order)
    exact = _renyi_mp(p, q, order)
    assert exact * (1 - 1e-6) <= bound + 1e-9 and bound <= exact + 1e-9
