"""The DERIVED sequential accounting of Langevin unlearning (chien2024lu:thm3.2+thm3.3/sequence-step).

Ground truths written independently of the declaration: the recursion unrolled by hand in mpmath
at 60 digits from the statements of Theorems P.1 (contraction exp(-2 sigma^2 eta K/(alpha C_LSI))
with C_LSI = 2 sigma^2/m), P.2 (group-S level 4 alpha S^2 M^2/(m sigma^2 n^2)) and the weak
triangle inequality of seed 000 eq. (12) ((alpha - 1/2)/(alpha - 1) times the two levels at
order 2 alpha); one request must reduce to eq. (98).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bounds
from bounds.errors import PreconditionError
from bounds.papers.chien2024lu import (
    lu_sequence_certificate,
    lu_sequence_level_float,
    lu_sequential_iterations,
)

STEP = "chien2024lu:thm3.2+thm3.3/sequence-step"
SETTING = {"sigma": Fraction(3, 100), "m": Fraction(1), "L": Fraction(5, 4), "eta": Fraction(4, 5),
           "M": Fraction(1, 20), "n": 256, "S": 10}


def _mp(x) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def _hand(alpha, epochs, *, sigma, m, L, eta, M, n, S):
    """E_s(alpha) by the statements, at 60 digits: the order doubles at each earlier request."""
    with mpmath.workdps(60):
        sigma, m, eta, M, alpha = map(_mp, (sigma, m, eta, M, alpha))
        c_lsi = 2 * sigma**2 / m

        def level0(order):  # Theorem P.2, T -> infinity
            return 4 * order * S**2 * M**2 / (m * sigma**2 * n**2)

        def contraction(order, k):  # Theorem P.1
            return mpmath.exp(-(1 / order) * 2 * sigma**2 * eta * k / c_lsi)

        def level(j, order):  # bound on d_order(rho_j, nu_{D_j}), j = 1..s
            if j == 1:
                return contraction(order, epochs[0]) * level0(order)
            start = (order - mpmath.mpf(1) / 2) / (order - 1) * (
                level(j - 1, 2 * order) + level0(2 * order))
            return contraction(order, epochs[j - 1]) * start

        return level(len(epochs), alpha)


def test_one_request_is_eq98():
    for alpha, k in ((2, 1), (Fraction(7, 2), 5), (40, 3)):
        conv = lu_sequence_certificate(alpha=alpha, epochs=[k], delta=1 / 256, **SETTING)
        direct = bounds.get("chien2024lu:eq98").evaluate(precision="mp", digits=60, alpha=alpha,
                                                         K=k, **SETTING).value
        hand = _hand(alpha, [k], **SETTING)
        assert abs(direct - hand) <= mpmath.mpf(10) ** -40 * hand
        expected = hand + mpmath.log(256) / (_mp(alpha) - 1)
        assert conv.epsilon >= float(expected) and conv.epsilon <= float(expected) * (1 + 1e-12)


@pytest.mark.parametrize("epochs", [(1, 8), (3, 1, 4), (2, 2, 2, 2, 2)])
def test_chain_matches_the_hand_recursion(epochs):
    alpha = Fraction(9, 2)
    conv = lu_sequence_certificate(alpha=alpha, epochs=list(epochs), delta=1 / 256,
                                   **SETTING)
    hand = _hand(alpha, list(epochs), **SETTING) + mpmath.log(256) / (_mp(alpha) - 1)
    # Certified (never below the exact value) and tight (feeding upper ends loses little).
    assert conv.epsilon >= float(hand)
    assert conv.epsilon <= float(hand) * (1 + 1e-9)
    floats = {k: float(v) for k, v in SETTING.items() if k != "L"}
    level = lu_sequence_level_float(alpha=float(alpha), epochs=list(epochs), **floats)
    assert float(level) == pytest.approx(float(_hand(alpha, list(epochs), **SETTING)), rel=1e-12)


def test_order_doubles_at_each_request():
    # With K = 0 after the first request nothing contracts, and the s-th level contains the
    # first request's level at order 2^{s-1} alpha: compare with the hand recursion's pieces.
    floats = {k: float(v) for k, v in SETTING.items() if k != "L"}
    first_only = lu_sequence_level_float(alpha=64.0, epochs=[5], **floats)
    chained = lu_sequence_level_float(alpha=8.0, epochs=[5, 0, 0, 0], **floats)
    weights = 1.0
    for order in (8.0, 16.0, 32.0):
        weights *= (order - 0.5) / (order - 1)
    assert chained > weights * first_only
    # More requests never help (E grows with s at fixed K), more iterations always do.
    assert lu_sequence_level_float(alpha=8.0, epochs=[5, 5, 5], **floats) > \
        lu_sequence_level_float(alpha=8.0, epochs=[5, 5], **floats)
    assert lu_sequence_level_float(alpha=8.0, epochs=[5, 6], **floats) < \
        lu_sequence_level_float(alpha=8.0, epochs=[5, 5], **floats)


def test_preconditions_name_the_theorem():
    with pytest.raises(PreconditionError, match="sequence-step.*1/L"):
        bounds.get(STEP).evaluate(alpha=2, K=1, E=0, **{**SETTING, "eta": Fraction(1)})
    with pytest.raises(PreconditionError, match="S <= n|group"):
        bounds.get(STEP).evaluate(alpha=2, K=1, E=0, **{**SETTING, "S": 300})


def test_greedy_iterations_are_least_and_certified():
    delta = 1 / 256
    result = lu_sequential_iterations(requests=4, epsilon=1.0, delta=delta, **SETTING)
    epochs = list(result["iterations"])
    assert result["derived"] and result["total"] == sum(epochs)
    floats = {k: float(v) for k, v in SETTING.items() if k != "L"}
    for j in range(len(epochs)):
        assert result["epsilons"][j] <= 1.0
        # One iteration fewer at request j misses the target at every order (hand recursion).
        if epochs[j] > 1:
            fewer = [*epochs[:j], epochs[j] - 1]
            grid = [1 + 10 ** (e / 50) for e in range(-150, 200)]
            best = min(float(lu_sequence_level_float(alpha=a, epochs=fewer, **floats))
                       + float(mpmath.log(256)) / (a - 1) for a in grid)
            assert best > 1.0 - 1e-3


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4), st.integers(1, 30), st.floats(1.1, 50.0))
def test_interval_chain_encloses_the_hand_value(s, k, alpha):
    epochs = [k + j for j in range(s)]
    conv = lu_sequence_certificate(alpha=alpha, epochs=epochs, delta=1 / 256, **SETTING)
    hand = _hand(alpha, epochs, **SETTING) + mpmath.log(256) / (_mp(alpha) - 1)
    assert conv.epsilon >= float(hand) * (1 - 1e-15)
