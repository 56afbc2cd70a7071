"""Answers built on the PNSGD, D2D and Langevin bounds stay sound at the edges of their inputs:
contraction factors near 1 and at 0, unbounded request counts, orders of conversions, literal
variants. The expected numbers come from the bounds' own closed forms or from independent mpmath
recomputation, not from our output.
"""

from __future__ import annotations

import math

import mpmath
import pytest
import sympy as sp

import bounds
from bounds.calibration import calibrate
from bounds.conversions import best_epsilon
from bounds.errors import BoundError, SolverError

# A slow contraction: c = 1 - 1e-9 and the bound crosses epsilon = 1 between s = 3 and 4.
SLOW_CONTRACTION = {"eta": "1e-9", "m": 1, "L": 1, "M": 1, "n": 1000, "b": 1000, "R": 1000, "K": 1,
                    "sigma": 1000}
TABLE3 = {"eta": "1/L", "m": "0.011264", "L": "0.261264", "M": 1, "n": 11264, "b": 128, "R": 100}
C_ZERO = {"alpha": 2, "sigma": 1, "eta": "1/L", "m": "0.241021", "L": "0.241021", "M": 1,
          "n": 2000, "b": 4, "K": 1, "R": 100}
# m = L = 0.17: float(1/0.17) * 0.17 rounds to 1 + 2^-52, so the float c is a hair below 0.
C_ZERO_BELOW = {**C_ZERO, "m": "0.17", "L": "0.17"}


# --------------------------------------------------------------------------------------------
# Item 1: "no finite maximum" must be proved or refused
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bound_id", ["chien2024:thm3.11+cor3.7",
                                      "chien2024:thm3.11+cor3.7/optimal-shift"])
def test_requests_are_bounded_when_the_limit_exceeds_the_target(bound_id):
    result = calibrate(bound_id, solve="requests", epsilon=1, delta=1e-5, **SLOW_CONTRACTION)
    assert result.value == 3
    assert result.certified_epsilon <= 1
    # s = 4 exceeds the target: certified *lower* end of its interval value at the best order.
    at_four = best_epsilon(bound_id, delta=1e-5, **SLOW_CONTRACTION, s=4)
    assert at_four.epsilon_float > 1


def test_no_finite_maximum_is_proved_on_the_exact_limit():
    # c^{Kn/b} = c^440 here: exact powers would have ~5000 digits (Python's int-to-str limit).
    result = calibrate("chien2024:thm3.11+cor3.7", solve="requests", epsilon=1, delta=1e-5,
                       **TABLE3, K=5, sigma="0.5")
    assert result.value is None
    assert any("exact limit" in note and "interval" in note for note in result.notes)
    # Independent check: the limit of Z^(s) is min(Z_B/(1 - c^{Kn/b}), 2R); at the reported order
    # the converted bound at s = 10^12 stays below the target.
    far = best_epsilon("chien2024:thm3.11+cor3.7", delta=1e-5, **TABLE3, K=5, sigma="0.5",
                       s=10**12)
    assert far.epsilon <= 1


def test_limit_is_refused_outside_the_proved_shape():
    from bounds.calibration import limit_at_infinity  # new in the fix

    s, x = sp.symbols("s x", real=True)
    assert limit_at_infinity(s / (1 + s), s, {}) is None  # s outside an exponent
    assert limit_at_infinity(sp.Rational(3, 2) ** s, s, {}) is None  # base above 1
    assert limit_at_infinity(x ** (s**2), s, {x: sp.Rational(1, 2)}) is None  # not linear
    assert limit_at_infinity(1 - x ** (2 * s), s, {x: sp.Rational(1, 2)}) == 1
    assert limit_at_infinity(1 - x ** (2 * s), s, {x: sp.S.One}) == 0


# --------------------------------------------------------------------------------------------
# Item 2: a Rényi input valid at one order is used at that order only
# --------------------------------------------------------------------------------------------

LU = {"sigma": "0.05", "eta": "1/L", "m": "0.011264", "L": "0.261264", "K": 1,
      "C_LSI": "2*sigma**2/m", "eps0": "0.011195"}


def test_constant_eps0_cannot_be_converted_at_an_optimised_order():
    with pytest.raises(BoundError, match="valid at one order"):
        best_epsilon("chien2024lu:thm3.2", delta=1e-5, **LU)
    with pytest.raises(BoundError, match="valid at one order"):
        calibrate("chien2024lu:thm3.2", solve="K", epsilon=1, delta=1e-5,
                  **{k: v for k, v in LU.items() if k != "K"})


def test_eps0_is_converted_at_its_own_order():
    conv = best_epsilon("chien2024lu:thm3.2", delta=1e-5, **LU, alpha=10)
    assert conv.alpha == 10
    # exp(-2 sigma^2 eta K/(alpha C_LSI)) eps0 + log(1/delta)/(alpha - 1), by hand in mpmath
    with mpmath.workdps(40):
        sigma, m, L = mpmath.mpf("0.05"), mpmath.mpf("0.011264"), mpmath.mpf("0.261264")
        eta, c_lsi = 1 / L, 2 * sigma**2 / m
        exact = mpmath.exp(-2 * sigma**2 * eta / (10 * c_lsi)) * mpmath.mpf("0.011195") \
            + mpmath.log(10**5) / 9
    assert conv.epsilon >= exact
    assert conv.epsilon <= exact * (1 + 1e-12)
    assert conv.epsilon > 1.2  # far above the 0.0112 an unconstrained order optimiser reaches


# --------------------------------------------------------------------------------------------
# Item 3: Theorem 3.2 is not monotone in T
# --------------------------------------------------------------------------------------------

NON_MONOTONE = {"eta": "1/L", "m": "0.011264", "L": "0.261264", "M": 1, "n": 100, "b": 100,
                "R": "0.1", "K": 1, "sigma": 1}


def test_theorem_32_rises_with_T_and_claims_no_T_monotonicity():
    thm = bounds.get("chien2024:thm3.2")
    eps = [best_epsilon(thm, delta=1e-5, **NON_MONOTONE, T=t).epsilon for t in (1, 3, 20)]
    assert eps[1] > eps[0] and eps[1] > eps[2]
    assert "T" not in thm.monotone
    with pytest.raises(BoundError, match="not known to be monotone in T.*thm3.2/capped"):
        calibrate(thm, solve="T", epsilon=1.2, delta=1e-5, **NON_MONOTONE)


def test_capped_theorem_32_answer_holds_for_every_larger_T():
    capped = bounds.get("chien2024:thm3.2/capped")
    result = calibrate(capped, solve="T", epsilon=0.95, delta=1e-5, **NON_MONOTONE)
    assert result.value is not None
    later = [best_epsilon(capped, delta=1e-5, **NON_MONOTONE, T=t).epsilon
             for t in range(result.value, result.value + 40)]
    assert max(later) <= 0.95
    assert all(a >= b for a, b in zip(later, later[1:], strict=False))
    # never above the printed theorem
    for t in (1, 3, 20):
        printed = bounds.get("chien2024:thm3.2").evaluate(alpha=5, T=t, **NON_MONOTONE).value
        assert capped.evaluate(alpha=5, T=t, **NON_MONOTONE).value <= printed


# --------------------------------------------------------------------------------------------
# Item 4: literal variants and out-of-condition values are never labelled certified
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bound_id", ["chien2024:alg5/as-printed", "chien2024:alg7"])
def test_literal_variants_are_not_certificates(bound_id):
    bound = bounds.get(bound_id)
    params = {k: v for k, v in bound.example.items() if k != "alpha"}
    conv = best_epsilon(bound, delta=1e-5, **params)
    assert conv.certified is False and conv.to_dict()["certified"] is False
    assert any("literal" in note for note in conv.notes)
    cal = calibrate(bound, solve="K", epsilon=5, delta=1e-5,
                    **{k: v for k, v in params.items() if k != "K"})
    assert cal.certified is False and cal.to_dict()["certified"] is False


def test_corollary_310_certifies_only_from_T_at_least_Rb_over_eta_M():
    base = {"sigma": 1, "eta": 1, "L": 1, "M": 1, "n": 12800, "b": 128, "K": 10, "R": 5}
    assert best_epsilon("chien2024:cor3.10", delta=1e-5, **base, T=100).certified is False
    assert best_epsilon("chien2024:cor3.10", delta=1e-5, **base, T=640).certified is True
    cal = calibrate("chien2024:cor3.10", solve="sigma", epsilon=1, delta=1e-5,
                    **{k: v for k, v in base.items() if k != "sigma"}, T=100)
    assert cal.certified is False
    assert best_epsilon("chien2024:cor3.7", delta=1e-5, **TABLE3, sigma="0.05", K=1).certified


# --------------------------------------------------------------------------------------------
# Item 6: float mode of the D2D bounds
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", ["1e-9", "1e-6", "1e-3"])
@pytest.mark.parametrize("delta", ["1e-300", "1e-5"])
def test_d2d_float_values_have_full_relative_accuracy(epsilon, delta):
    for bound_id in ("neel2021:thm9", "neel2021:thm28/iterations"):
        bound = bounds.get(bound_id)
        params = {**bound.example, "epsilon": epsilon, "delta": delta}
        ev = bound.evaluate(**params)
        # independent: sigma of Theorem 9 / I of eq. (94) by hand in mpmath
        with mpmath.workdps(60):
            e, d = mpmath.mpf(epsilon), mpmath.mpf(delta)
            m, L = mpmath.mpf("0.011264"), mpmath.mpf("0.261264")
            gamma = (L - m) / (L + m)
            if bound_id == "neel2021:thm9":
                n, i = 11264, params["I"]
                gap = mpmath.sqrt(mpmath.log(1 / d) + e) - mpmath.sqrt(mpmath.log(1 / d))
                exact = 4 * mpmath.sqrt(2) * gamma**i / (m * n * (1 - gamma**i) * gap)
            else:
                gap = mpmath.sqrt(2 * mpmath.log(2 / d) + e) - mpmath.sqrt(2 * mpmath.log(2 / d))
                exact = mpmath.log(mpmath.sqrt(2 * 784) / (1 - gamma) / gap) / mpmath.log(1 / gamma)
        assert abs(ev.value - exact) <= 1e-13 * exact, (bound_id, ev.value, exact)
        assert any("IEEE-754" in note for note in ev.notes)  # the float note flags rounding


# --------------------------------------------------------------------------------------------
# Crashes where an answer or a clear error is due
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("point", [C_ZERO, C_ZERO_BELOW])
@pytest.mark.parametrize("precision", ["float", "mp", "interval"])
@pytest.mark.parametrize("bound_id", ["chien2024:cor3.7", "chien2024:cor3.7/tight",
                                      "chien2024:thm3.11+cor3.7/optimal-shift", "chien2024:cor3.8"])
def test_contraction_factor_zero_evaluates(bound_id, precision, point):
    params = {**point, **({"s": 3} if "thm3.11" in bound_id else {})}
    ev = bounds.get(bound_id).evaluate(precision=precision, **params)
    # c = 0: every c^{2Kn/b} factor vanishes, so the exact value is 0
    assert float(ev.value) == 0.0 or (precision == "interval" and float(ev.upper) < 1e-40)


@pytest.mark.parametrize("lipschitz", ["0.241021", "0.17"])
def test_corollary_j1_at_contraction_zero_is_finite(lipschitz):
    value = bounds.get("chien2024:corJ.1").evaluate(
        eta="1/L", m=lipschitz, L=lipschitz, M=1, n=2000, b=4, T=20, R=100, S=5).value
    # c = 0: every factor c^k vanishes and Z = min(2 eta M S/b, 2R) = 2.5/L
    assert math.isclose(value, 2.5 / float(lipschitz), rel_tol=1e-12)


def test_alg5_without_a_feasible_sigma_says_so():
    with pytest.raises(SolverError, match="no value of sigma"):
        calibrate("chien2024:alg5/as-printed", solve="sigma", epsilon=1, delta=1e-5,
                  **TABLE3, K=1, T=1)


@pytest.mark.parametrize(("alpha_min", "alpha_max", "message"), [
    (10, 2, "must exceed alpha_min"),
    (0.5, 1e8, "alpha_min must be >= 1"),
    (float("nan"), 1e8, "finite"),
    (1, 1, "must exceed"),
])
def test_alpha_range_is_validated(alpha_min, alpha_max, message):
    params = {**TABLE3, "sigma": "0.05", "K": 1}
    with pytest.raises(BoundError, match=message):
        best_epsilon("chien2024:cor3.7", delta=1e-5, alpha_min=alpha_min, alpha_max=alpha_max,
                     **params)
    with pytest.raises(BoundError, match=message):
        calibrate("chien2024:cor3.7", solve="K", epsilon=1, delta=1e-5, alpha_min=alpha_min,
                  alpha_max=alpha_max, **{k: v for k, v in params.items() if k != "K"})


def test_corollary_38_interval_is_tight_relative_to_tiny_values():
    params = {**C_ZERO, "m": "0.2"}
    ev = bounds.get("chien2024:cor3.8").evaluate(precision="interval", **params)
    assert ev.lower > 0
    assert (ev.upper - ev.lower) <= 1e-40 * ev.upper
