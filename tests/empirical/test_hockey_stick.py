"""The hockey-stick lower-bound tester: covers the truth at its level, is zero on null data,
has power in both directions and checks its inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from empirical.divergences.hockey_stick import hockey_stick_lower_bound
from empirical.statistics import gaussian_delta

REPS = 200
BETA = 0.05
MAX_VIOLATIONS = int(stats.binom.ppf(0.999, REPS, BETA))


def hockey_stick_1d(mp: float, sp: float, mq: float, sq: float, eps: float) -> float:
    """sup_S P(S) - e^eps Q(S) for P = N(mp, sp^2), Q = N(mq, sq^2), by quadrature of the
    positive part of p - e^eps q (independent of the estimators' closed form)."""
    def excess(x: float) -> float:
        return max(0.0, stats.norm.pdf(x, mp, sp) - math.exp(eps) * stats.norm.pdf(x, mq, sq))

    lo, hi = min(mp - 12 * sp, mq - 12 * sq), max(mp + 12 * sp, mq + 12 * sq)
    return integrate.quad(excess, lo, hi, limit=500, epsabs=1e-13, epsrel=1e-10)[0]


def test_hockey_stick_tester_coverage_gaussian_shift():
    mu, eps, n = 1.0, 0.5, 400
    truth = gaussian_delta(mu=mu, epsilon=eps)  # both directions are equal for a shift
    rng = np.random.default_rng(10)
    p = rng.normal(mu, 1.0, (REPS, n))
    q = rng.normal(0.0, 1.0, (REPS, n))
    bounds = np.array(
        [
            hockey_stick_lower_bound(p[r], q[r], epsilon=eps, beta=BETA, seed=r).delta
            for r in range(REPS)
        ]
    )
    assert np.sum(bounds > truth) <= MAX_VIOLATIONS
    assert np.mean(bounds) > 0.2 * truth  # not vacuous


def test_hockey_stick_tester_is_zero_on_null_data():
    rng = np.random.default_rng(11)
    n = 300
    p = rng.normal(0.0, 1.0, (REPS, n, 2))
    q = rng.normal(0.0, 1.0, (REPS, n, 2))
    bounds = np.array(
        [hockey_stick_lower_bound(p[r], q[r], epsilon=0.0, seed=r).delta for r in range(REPS)]
    )
    assert np.sum(bounds > 0) <= MAX_VIOLATIONS


def test_hockey_stick_tester_power_and_direction():
    rng = np.random.default_rng(12)
    n = 20000
    # Unequal variances: the two directions differ.
    p, q = rng.normal(0.5, 2.0, n), rng.normal(0.0, 1.0, n)
    eps = 0.3
    result = hockey_stick_lower_bound(p, q, epsilon=eps)
    truth_pq = hockey_stick_1d(0.5, 2.0, 0.0, 1.0, eps)
    truth_qp = hockey_stick_1d(0.0, 1.0, 0.5, 2.0, eps)
    assert 0.8 * truth_pq < result.delta_p_q <= truth_pq
    assert 0.8 * truth_qp < result.delta_q_p <= truth_qp
    assert result.delta == max(result.delta_p_q, result.delta_q_p)
    assert result.kind == "lower bound" and result.confidence == pytest.approx(0.95)


def test_hockey_stick_tester_validation():
    rng = np.random.default_rng(13)
    p, q = rng.normal(size=100), rng.normal(size=100)
    with pytest.raises(ValueError, match="beta"):
        hockey_stick_lower_bound(p, q, epsilon=0.5, beta=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        hockey_stick_lower_bound(p, q, epsilon=-1.0)
    with pytest.raises(ValueError, match="training part"):
        hockey_stick_lower_bound(p[:3], q[:3], epsilon=0.5)
    with pytest.raises(ValueError, match="NaN"):
        hockey_stick_lower_bound(np.append(p, np.nan), q, epsilon=0.5)
