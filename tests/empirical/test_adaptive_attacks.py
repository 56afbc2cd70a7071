"""Section 3 of Chourasia & Shah 2023: the simulations against exact enumeration and closed forms."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate

from empirical.attacks import adaptive as attacks

# --------------------------------------------------------------------------------------------
# Theorem 3.1
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 5, 7, 9, 11])
@pytest.mark.parametrize("side", ["above", "below"])
def test_exact_median_probability_matches_full_enumeration(n, side):
    for i in range(2, n + 2):
        assert attacks.median_success_enumerated(n=n, i=i, side=side) == \
            attacks.median_success_exact(n=n, i=i), (n, i, side)


def test_exact_probability_by_hand():
    # n = 5, i = 3: two re-encoded slots out of 5, failure iff both among the 3 safe ones.
    assert attacks.median_success_exact(n=5, i=3) == 1 - Fraction(3, 10)
    # i = 2: one slot; failure iff it is one of the (n+1)/2 safe ones.
    assert attacks.median_success_exact(n=7, i=2) == Fraction(3, 7)


@pytest.mark.parametrize("n", [5, 7, 9, 11, 21, 101])
def test_exact_probability_dominates_the_paper_bounds(n):
    for i in range(4, min(n + 1, 40) + 1):
        exact = attacks.median_success_exact(n=n, i=i)
        bounds = attacks.median_success_paper_bound(n=n, i=i)
        assert exact >= bounds["combinatorial"] >= bounds["geometric"], (n, i)


def test_paper_bound_table_values():
    # catalogue rows, recomputed: n = 11, i = 4 and 5
    assert float(attacks.median_success_exact(n=11, i=4)) == pytest.approx(0.878787878, abs=1e-9)
    assert float(attacks.median_success_paper_bound(n=11, i=4)["combinatorial"]) == \
        pytest.approx(7 / 11)
    assert float(attacks.median_success_exact(n=11, i=5)) == pytest.approx(0.954545454, abs=1e-9)


@pytest.mark.parametrize(("n", "i", "side"), [(11, 4, "above"), (21, 4, "below"), (101, 5, "above"),
                                              (9, 2, "below")])
def test_simulation_agrees_with_the_exact_probability(n, i, side):
    result = attacks.median_attack(n=n, i=i, trials=3000, seed=13, side=side, confidence=0.999)
    low, high = result["success_interval"]
    assert low <= result["success_exact"] <= high
    assert result["unlearning_exact"]  # the release always equals retraining: (0,0)-unlearning
    assert result["kind"] == "estimate"
    if i > 3:
        assert high >= result["paper_bounds"]["combinatorial"]


def test_median_attack_is_reproducible_and_batched_equals_loop():
    a = attacks.median_attack(n=9, i=4, trials=40, seed=5)
    b = attacks.median_attack(n=9, i=4, trials=40, seed=5, mode="loop")
    c = attacks.median_attack(n=9, i=4, trials=40, seed=6)
    assert np.array_equal(a["identified"], b["identified"])
    assert not np.array_equal(a["identified"], c["identified"])


def test_median_setting_is_checked():
    with pytest.raises(ValueError, match="odd"):
        attacks.median_success_exact(n=10, i=3)
    with pytest.raises(ValueError, match="i - 1 requests"):
        attacks.median_attack(n=5, i=7, trials=1, seed=0)


# --------------------------------------------------------------------------------------------
# Theorem 3.2
# --------------------------------------------------------------------------------------------


def test_each_release_is_epsilon_zero_close():
    # Laplace(1/eps) shifted by at most 1: the density ratio never exceeds e^eps.
    eps = 0.7
    x = np.linspace(-20, 20, 40001)
    for shift in (1.0, 0.5, 1 / 7):
        log_ratio = eps * (np.abs(x) - np.abs(x - shift))
        assert np.max(np.abs(log_ratio)) <= eps * shift + 1e-12 <= eps + 1e-12


@pytest.mark.parametrize(("eps", "shift"), [(1.0, 1.0), (0.5, 0.25), (3.0, 1 / 3)])
def test_laplace_kl_closed_form_against_quadrature(eps, shift):
    def integrand(x: float) -> float:
        p = eps / 2 * math.exp(-eps * abs(x - shift))
        return p * eps * (abs(x) - abs(x - shift))

    numeric, _ = integrate.quad(integrand, -50, 50, points=[0.0, shift], limit=200)
    total = attacks.secret_state_kl(epsilon=eps, first=1, releases=1) if shift == 1.0 else None
    closed = eps * shift + math.exp(-eps * shift) - 1
    assert numeric == pytest.approx(closed, rel=1e-8)
    if total is not None:
        assert total == pytest.approx(closed, rel=1e-12)


def test_total_kl_is_finite_while_the_max_divergence_grows():
    eps = 1.0
    kls = [attacks.secret_state_kl(epsilon=eps, first=1, releases=k) for k in (10, 1000, 10**5)]
    limit = attacks.secret_state_kl(epsilon=eps, first=1, releases=None)
    assert kls[0] < kls[1] < kls[2] <= limit <= eps**2 * math.pi**2 / 12
    maxdiv = [attacks.secret_state_max_divergence(epsilon=eps, first=1, releases=k)
              for k in (10, 1000, 10**5)]
    assert maxdiv[2] > maxdiv[1] + 4 > maxdiv[0] + 8  # ~ log(k)
    assert attacks.secret_state_success_ceiling(epsilon=eps, first=1, releases=None) < 0.8


def test_secret_state_attack_saturates_below_one():
    result = attacks.secret_state_attack(epsilon=1.0, first=1, checkpoints=(1, 10, 200),
                                         trials=3000, seed=3, confidence=0.999)
    rows = result["rows"]
    # one release: exact success 1/2 + (1 - e^(-eps/2))/2 (TV of a unit Laplace shift)
    exact_one = 0.5 + (1 - math.exp(-0.5)) / 2
    assert rows[0]["success_interval"][0] <= exact_one <= rows[0]["success_interval"][1]
    for row in rows:
        assert row["success_interval"][0] <= row["success_ceiling"]
        assert row["success_ceiling"] <= result["success_ceiling_all_releases"] < 0.8
    assert rows[-1]["max_divergence"] > 5  # what the paper sums: unbounded in the releases
    assert result["kind"] == "estimate"


def test_later_deletion_leaks_less():
    early = attacks.secret_state_success_ceiling(epsilon=1.0, first=1, releases=None)
    late = attacks.secret_state_success_ceiling(epsilon=1.0, first=10, releases=None)
    assert late < early


def test_secret_state_attack_batched_equals_loop():
    a = attacks.secret_state_attack(epsilon=2.0, first=2, checkpoints=(3, 5), trials=12, seed=9,
                                    block=2)
    b = attacks.secret_state_attack(epsilon=2.0, first=2, checkpoints=(3, 5), trials=12, seed=9,
                                    mode="loop", block=4)
    assert [r["success_estimate"] for r in a["rows"]] == [r["success_estimate"] for r in b["rows"]]


# --------------------------------------------------------------------------------------------
# The {-2, -1, 1, 2} sum example
# --------------------------------------------------------------------------------------------


def test_sum_example_satisfies_both_definitions_and_leaks():
    result = attacks.sum_example()
    assert result["guo_certified_removal_0_0"] and result["sekhari_unlearning_0_0"]
    assert result["outcomes"]["D"]["released"] == 2
    assert result["outcomes"]["D_prime"]["released"] == -2
    assert result["success_probability"] == 1.0
    assert result["requests_delete"] == {"D": 2, "D_prime": 2}  # r = 2, not a 1-requester


def test_optimal_success_is_exact_and_saturates_below_one():
    """Against independent values: one release in closed form at 60 digits, two releases by
    integrating max(p0, p1)/2 over the plane (the Bayes success with a uniform prior)."""
    import mpmath

    with mpmath.workdps(60):
        one = 1 - mpmath.exp(-mpmath.mpf(1) / 2) / 2  # 1/2 + TV/2, TV = 1 - e^(-eps mu/2)
    assert abs(attacks.secret_state_optimal_success(epsilon=1.0, first=1, releases=1)
               - float(one)) < 1e-7

    def laplace(x, shift):
        return 0.5 * math.exp(-abs(x - shift))

    def half_max(y, x):
        return 0.5 * max(laplace(x, 0) * laplace(y, 0), laplace(x, 1) * laplace(y, 0.5))

    pieces = (-40, 0, 0.5, 1, 40)
    two = sum(integrate.dblquad(half_max, xa, xb, ya, yb, epsabs=1e-11)[0]
              for xa, xb in zip(pieces, pieces[1:], strict=False)
              for ya, yb in zip(pieces, pieces[1:], strict=False))
    assert abs(attacks.secret_state_optimal_success(epsilon=1.0, first=1, releases=2) - two) < 1e-6
    values = [attacks.secret_state_optimal_success(epsilon=1.0, first=1, releases=k)
              for k in (1, 10, 100)]
    assert [round(v, 4) for v in values] == [0.6967, 0.7204, 0.7257]
    ceiling = attacks.secret_state_success_ceiling(epsilon=1.0, first=1, releases=None)
    assert values[-1] < math.exp(1) / (1 + math.exp(1)) < ceiling  # Pinsker's 0.787 is a bound
