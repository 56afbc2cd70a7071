"""The directed Rényi test: the Hölder (variational) bound, the betting regions of each world,
their coverage on multinomial draws, and the bound over the product of the two regions against
a brute-force minimiser."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from empirical.divergences import renyi_directed, renyi_tests


def _renyi_mp(p, q, order) -> float:
    with mpmath.workdps(50):
        total = mpmath.fsum(mpmath.mpf(float(a)) ** order * mpmath.mpf(float(b)) ** (1 - order)
                            for a, b in zip(p, q, strict=True) if a > 0)
        return float(mpmath.log(total) / (order - 1))


def _simplex(draw, k):
    w = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=k, max_size=k)))
    return w / w.sum()


@settings(max_examples=60, deadline=None)
@given(data=st.data(), k=st.integers(2, 6), order=st.sampled_from([1.02, 1.5, 2.0, 4.0, 16.0]))
def test_holder_bound_never_exceeds_the_divergence_and_is_attained_at_the_log_ratio(data, k, order):
    p, q = _simplex(data.draw, k), _simplex(data.draw, k)
    g = np.array(data.draw(st.lists(st.floats(-5, 5), min_size=k, max_size=k)))
    exact = _renyi_mp(p, q, order)
    bound = order / (order - 1) * math.log(p @ np.exp((order - 1) * g)) - math.log(q @ np.exp(order * g))
    assert bound <= exact + 1e-9 * (1 + abs(exact))
    g_star = np.log(p / q)
    attained = (order / (order - 1) * math.log(p @ np.exp((order - 1) * g_star))
                - math.log(q @ np.exp(order * g_star)))
    assert attained == pytest.approx(exact, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("probabilities", [(0.97, 0.02, 0.01), (0.2, 0.3, 0.5), (0.001, 0.999)])
def test_betting_lower_bound_covers_the_mean_on_multinomial_draws(probabilities):
    """The coverage the proof promises: P(E X < L) <= beta, counted over 2000 multinomial draws
    of 300 values (skewed and rare-value laws included); a miss rate above beta by more than
    four binomial standard errors fails."""
    rng = np.random.default_rng(7)
    probabilities = np.array(probabilities)
    values = np.linspace(0.0, 1.0, probabilities.size) ** 3
    mean = float(probabilities @ values)
    beta, draws = 0.1, 2000
    lam = math.sqrt(2 * math.log(1 / beta) / (300 * max(float(probabilities @ values**2) - mean**2,
                                                         1e-4)))
    misses = sum(renyi_directed.betting_lower_mean(values, rng.multinomial(300, probabilities), beta=beta,
                                      lam=lam) > mean for _ in range(draws))
    assert misses / draws <= beta + 4 * math.sqrt(beta * (1 - beta) / draws)
    # An upper bound (the bound on -X) covers too.
    misses_up = sum(-renyi_directed.betting_lower_mean(-values, rng.multinomial(300, probabilities),
                                                    beta=beta, lam=lam) < mean for _ in range(draws))
    assert misses_up / draws <= beta + 4 * math.sqrt(beta * (1 - beta) / draws)


def test_betting_lower_bound_is_below_the_sample_mean_and_tightens_with_more_draws():
    values = np.array([0.0, 0.5, 1.0])
    small = renyi_directed.betting_lower_mean(values, np.array([30, 40, 30]), beta=0.05, lam=2.0)
    large = renyi_directed.betting_lower_mean(values, np.array([3000, 4000, 3000]), beta=0.05, lam=0.2)
    assert 0.0 < small < large < 0.5


def test_joint_regions_cover_the_divergence_on_multinomial_draws():
    """The directed bound of a tight pair of binned laws (the bins' D_alpha is the truth) stays
    at or below D_alpha in all but at most a beta fraction of multinomial draws."""
    rng = np.random.default_rng(11)
    p = np.array([0.05, 0.1, 0.15, 0.2, 0.5])
    q = np.array([0.3, 0.25, 0.2, 0.15, 0.1])
    edges = tuple(float(e) for e in range(1, p.size))
    g = tuple(float(v) for v in np.log(p / q) - np.log(p / q).max())
    beta, draws, n = 0.2, 400, 2000
    for order in (1.1, 2.0):
        truth = _renyi_mp(p, q, order)
        choice = renyi_directed.DirectedChoice("forward", order, edges, g, lam_first=5.0, lam_second=5.0,
                                  predicted_margin=0.0)
        bounds = [renyi_directed.directed_lower_bound(choice, rng.multinomial(n, p), rng.multinomial(n, q),
                                         beta=beta) for _ in range(draws)]
        misses = sum(b > truth for b in bounds)
        assert misses / draws <= beta + 4 * math.sqrt(beta * (1 - beta) / draws)
        assert np.median(bounds) > 0.3 * truth  # and the bound is informative


def _region_minimum(x, y, lower, upper, order, rng) -> float:
    """Brute force: min D_order(p || q) over {p : <p, x> >= lower} x {q : <q, y> <= upper} on
    the simplex (random feasible starts, SLSQP; the smallest value found)."""
    k = x.size

    def objective(z):
        p, q = np.abs(z[:k]) + 1e-15, np.abs(z[k:]) + 1e-15
        p, q = p / p.sum(), q / q.sum()
        return _renyi_mp(p, q, order)

    cons = [{"type": "ineq", "fun": lambda z: (np.abs(z[:k]) / np.abs(z[:k]).sum()) @ x - lower},
            {"type": "ineq", "fun": lambda z: upper - (np.abs(z[k:]) / np.abs(z[k:]).sum()) @ y}]
    best = math.inf
    for _ in range(12):
        z0 = rng.dirichlet(np.ones(k), size=2).ravel()
        res = optimize.minimize(objective, z0, constraints=cons, method="SLSQP",
                                options={"maxiter": 300})
        z = res.x
        p, q = np.abs(z[:k]) / np.abs(z[:k]).sum(), np.abs(z[k:]) / np.abs(z[k:]).sum()
        if p @ x >= lower - 1e-9 and q @ y <= upper + 1e-9:
            best = min(best, _renyi_mp(p, q, order))
    return best


@pytest.mark.parametrize("order", [1.5, 3.0])
def test_bound_over_the_product_of_regions_is_below_its_brute_force_minimum(order):
    """order/(order-1) log L - log U never exceeds the smallest D_order a brute-force optimiser
    finds in the product of the two half-space regions, and comes close to it."""
    rng = np.random.default_rng(3)
    g = np.array([0.0, -0.7, -1.5])
    x, y = np.exp((order - 1) * g), np.exp(order * g)
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    lower, upper = 0.9 * float(p @ x), 1.1 * float(q @ y)
    bound = order / (order - 1) * math.log(lower) - math.log(upper)
    minimum = _region_minimum(x, y, lower, upper, order, rng)
    assert bound <= minimum + 1e-7
    assert bound > minimum - 0.5 * abs(minimum) - 0.2  # the dual is not vacuous here


def test_directed_test_false_alarms_on_a_tight_two_point_null_stay_within_the_level():
    """Randomized response at eps = 1 (scores 0/1, ties): the certified curve is the exact
    Bernoulli divergence, so every rejection is a false alarm; at level 0.2 over 60 audits
    the rate stays within four binomial standard errors of 0.2."""
    p = math.e / (1 + math.e)

    def curve(a):
        return math.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)

    alarms, runs = 0, 60
    for seed in range(runs):
        rng = np.random.default_rng([5, seed])
        u = (rng.random(1000) < p).astype(float)
        r = (rng.random(1000) < 1 - p).astype(float)
        alarms += renyi_tests.renyi_audit(u, r, certified=curve, beta=0.2, seed=seed).violation
    assert alarms / runs <= 0.2 + 4 * math.sqrt(0.2 * 0.8 / runs)


def test_directed_test_catches_a_gaussian_noise_shortfall_of_fifteen_percent():
    """N(1.15, 1) against N(0, 1) with the certified curve alpha / 2, 10^4 scores per side,
    level 0.04 (the Rényi share of the default audit): caught on at least 7 of 10 fixed seeds
    (the box test caught none of them)."""
    hits = 0
    for seed in range(10):
        rng = np.random.default_rng([15, seed])
        hits += renyi_tests.renyi_audit(rng.normal(1.15, 1.0, 10_000), rng.normal(0.0, 1.0, 10_000),
                              certified=lambda a: a / 2, beta=0.04, seed=seed).violation
    assert hits >= 7


def test_a_bound_at_one_order_is_reported_at_every_larger_order_only():
    rng = np.random.default_rng(2)
    result = renyi_tests.renyi_audit(rng.normal(1.5, 1.0, 4000), rng.normal(0.0, 1.0, 4000),
                           certified=lambda a: a / 2, seed=1)
    chosen = result.choice.order
    bounds = result.curve.forward if result.choice.direction == "forward" else result.curve.backward
    assert all((b > 0) == (a >= chosen) for a, b in zip(result.curve.orders, bounds, strict=True))
    assert result.violation and stats is not None
