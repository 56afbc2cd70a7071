"""Pilot-threshold (epsilon, delta) lower bound: validity on Gaussian truths, power, the limit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats

from empirical.statistics.pilot import pilot_epsilon_lower_bound, single_threshold_limit


def exact_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon(delta) of N(mu, 1) vs N(0, 1) (Balle and Wang 2018, Thm 8), solved here
    independently of the package: Phi(mu/2 - e/mu) - e^e Phi(-mu/2 - e/mu) = delta."""
    def excess(e: float) -> float:
        return special.ndtr(mu / 2 - e / mu) - math.exp(e) * special.ndtr(-mu / 2 - e / mu) - delta

    if excess(0.0) <= 0:
        return 0.0
    return optimize.brentq(excess, 0.0, 50.0 + 10 * mu * mu, xtol=1e-13)


@pytest.mark.parametrize(("delta", "low", "high"), [(1e-5, 0.43, 0.52), (1 / 256, 0.64, 0.78)])
def test_limit_matches_the_ratios_stated_in_the_issue(delta, low, high):
    """Issue 11: the single-threshold limit at N = 10,000 is 0.45-0.50 of the exact epsilon at
    delta = 1e-5 and 0.66-0.76 at delta = 1/256, for mu in {0.5, 1, 2}."""
    for mu in (0.5, 1.0, 2.0):
        ratio = single_threshold_limit(mu=mu, delta=delta, n=10_000) / exact_epsilon(mu, delta)
        assert low <= ratio <= high


@settings(max_examples=5, deadline=None)
@given(mu=st.floats(min_value=0.0, max_value=3.0), n=st.integers(min_value=300, max_value=3000),
       log10_delta=st.floats(min_value=-6, max_value=-1), seed=st.integers(0, 10**6))
def test_lower_bound_covers_the_exact_epsilon(mu, n, log10_delta, seed):
    """Valid at 95%: over 20 draws at most 4 may exceed the truth (probability < 0.3%)."""
    delta = 10.0**log10_delta
    truth = exact_epsilon(mu, delta) if mu > 0 else 0.0
    rng = np.random.default_rng(seed)
    over = 0
    for run in range(20):
        bound = pilot_epsilon_lower_bound(rng.normal(mu, 1, n), rng.normal(0, 1, n), delta=delta,
                                          seed=run)
        assert bound.kind == "lower bound" and bound.epsilon >= 0
        over += bound.epsilon > truth + 1e-12
    assert over <= int(stats.binom.ppf(0.997, 20, 0.05))


def test_reaches_most_of_the_limit_at_10000():
    """The benchmark measures 200 runs; here 10 runs at mu = 1 must average 0.85 of the limit."""
    mu, delta = 1.0, 1e-5
    values = []
    for run in range(10):
        rng = np.random.default_rng([3, run])
        values.append(pilot_epsilon_lower_bound(rng.normal(mu, 1, 10_000), rng.normal(0, 1, 10_000),
                                                delta=delta, seed=run).epsilon)
    assert np.mean(values) >= 0.85 * single_threshold_limit(mu=mu, delta=delta, n=10_000)


def test_orientation_is_chosen_on_the_pilot():
    rng = np.random.default_rng(4)
    # Positives score lower than negatives: the rule must be "score <= t".
    bound = pilot_epsilon_lower_bound(rng.normal(-1.5, 1, 5000), rng.normal(0, 1, 5000), delta=1e-3)
    assert bound.positive_above is False and bound.epsilon > 0.5
    assert bound.n_pilot_positive == 250 and bound.n_positive == 4750


def test_validation():
    x = np.zeros(100)
    with pytest.raises(ValueError, match="delta"):
        pilot_epsilon_lower_bound(x, x, delta=0.0)
    with pytest.raises(ValueError, match="pilot"):
        pilot_epsilon_lower_bound(x, x, delta=1e-3, pilot_fraction=0.001)
    with pytest.raises(ValueError, match="NaN"):
        pilot_epsilon_lower_bound(np.append(x, np.nan), x, delta=1e-3)
    with pytest.raises(ValueError, match="mu"):
        single_threshold_limit(mu=0.0, delta=1e-3, n=100)


def test_pilot_split_keeps_paired_trials_together():
    """Identical paired samples: with one permutation the tested rows of both sides are the
    same trials, so a rule's false positives and false negatives add up to the tested count."""
    scores = np.random.default_rng(4).normal(size=400)
    result = pilot_epsilon_lower_bound(scores, scores.copy(), delta=1e-5, seed=9)
    assert result.n_positive == result.n_negative
    assert result.false_positives + result.false_negatives == result.n_positive
