"""Rényi -> (epsilon, delta) conversions, the Gaussian hockey-stick curve and the optimisation
over the Rényi order, checked against the Gaussian mechanism whose exact curve is known."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bounds
from bounds import declarations
from bounds.conversions import (
    CONVERSIONS,
    best_epsilon,
    dp_epsilon_float,
    gaussian_delta,
    gaussian_delta_mp,
    gaussian_epsilon,
    gaussian_epsilon_lower,
    renyi_difference,
    renyi_to_dp,
)
from bounds.errors import BoundError, PreconditionError
from bounds.values import symbols

SOME = settings(deadline=None, max_examples=30, suppress_health_check=list(HealthCheck))
FEW = settings(deadline=None, max_examples=8, suppress_health_check=list(HealthCheck))

alphas = st.floats(1.0001, 1e4)
deltas = st.floats(1e-12, 0.5)
renyi_levels = st.floats(0.0, 100.0)
noises = st.floats(0.3, 20.0)  # Gaussian mechanism noise s (sensitivity 1): mu = 1/s


def _gaussian_rdp_bound() -> declarations.Bound:
    """The Gaussian mechanism with sensitivity 1 and noise s: (alpha, alpha/(2 s^2))-RDP."""
    alpha, s = symbols("alpha s")
    return declarations.Bound(
        id="test:gaussian",
        title="Gaussian mechanism",
        citation=declarations.Citation("test", "Mironov 2017, Proposition 7", "none", "Prop. 7"),
        parameters=(declarations.Parameter("alpha", "order", lower=1, lower_open=True),
                    declarations.Parameter("s", "noise", lower=0, lower_open=True)),
        expression=alpha / (2 * s**2),
        guarantee=declarations.Guarantee("renyi_dp", "RDP", renyi_order="alpha"),
    )


GAUSSIAN = _gaussian_rdp_bound()


# --------------------------------------------------------------------------------------------
# The two conversions
# --------------------------------------------------------------------------------------------


@SOME
@given(renyi_levels, alphas, deltas)
def test_balle_is_never_larger_than_mironov(rdp, alpha, delta):
    mironov = renyi_to_dp(renyi_epsilon=rdp, alpha=alpha, delta=delta, conversion="mironov")
    balle = renyi_to_dp(renyi_epsilon=rdp, alpha=alpha, delta=delta, conversion="balle2020")
    assert balle <= mironov + 1e-12 * abs(mironov)


def test_conversion_formulas_by_hand():
    # mironov: eps + log(1/delta)/(alpha - 1)
    # balle: eps + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1)
    assert renyi_to_dp(renyi_epsilon=0.5, alpha=11.0, delta=1e-5) == pytest.approx(
        0.5 + math.log(1e5) / 10, rel=1e-15, abs=0)
    balle = 0.5 + math.log(10 / 11) - (math.log(1e-5) + math.log(11)) / 10
    assert renyi_to_dp(renyi_epsilon=0.5, alpha=11.0, delta=1e-5, conversion="balle2020") == (
        pytest.approx(balle, rel=1e-15, abs=0))


def test_conversions_vectorise_and_match_scalars():
    grid = np.linspace(1.5, 50, 7)
    for conversion in CONVERSIONS:
        vector = renyi_to_dp(renyi_epsilon=grid / 10, alpha=grid, delta=1e-6, conversion=conversion)
        for a, v in zip(grid, vector, strict=True):
            scalar = renyi_to_dp(renyi_epsilon=a / 10, alpha=float(a), delta=1e-6,
                                 conversion=conversion)
            assert v == pytest.approx(scalar, rel=1e-14, abs=0)


def test_conversion_arguments_are_checked():
    for delta in (0, 1, -1e-3, 2.0):
        with pytest.raises(PreconditionError, match="0 < delta < 1"):
            renyi_to_dp(renyi_epsilon=1.0, alpha=2.0, delta=delta)
    with pytest.raises(BoundError, match="unknown conversion"):
        renyi_to_dp(renyi_epsilon=1.0, alpha=2.0, delta=1e-5, conversion="rdp")


def test_renyi_difference_takes_the_worse_direction():
    assert renyi_difference(0.3, 0.7) == 0.7
    np.testing.assert_array_equal(renyi_difference(np.array([1.0, 3.0]), np.array([2.0, 1.0])),
                                  [2.0, 3.0])


def _exact_gaussian_epsilon(delta: float, mu: float) -> mpmath.mpf:
    """Least epsilon (negative allowed) with delta(epsilon) <= delta, by bisection on the
    hockey-stick curve at 40 digits. Balle's conversion can give epsilon < 0 for large delta,
    which is still a valid statement P(S) <= e^eps Q(S) + delta, so it is compared with this."""
    with mpmath.workdps(40):
        lo, hi = mpmath.mpf(-60), mpmath.mpf(400)
        for _ in range(120):
            mid = (lo + hi) / 2
            if _delta_mp(mid, mu) > delta:
                lo = mid
            else:
                hi = mid
        return lo


@SOME
@given(noises, deltas, st.sampled_from(CONVERSIONS))
def test_conversions_are_valid_on_the_gaussian_mechanism(noise, delta, conversion):
    """The Gaussian mechanism has Rényi alpha/(2 s^2) at every order, and its exact epsilon(delta)
    is the hockey-stick inverse: every converted epsilon must be above it."""
    mu = 1 / noise
    exact = _exact_gaussian_epsilon(delta, mu)
    assert float(exact) <= gaussian_epsilon(delta=delta, mu=mu) + 1e-9
    grid = 1 + np.logspace(-3, 5, 2000)
    converted = renyi_to_dp(renyi_epsilon=grid / (2 * noise**2), alpha=grid, delta=delta,
                            conversion=conversion)
    assert converted.min() >= exact - 1e-9 * abs(exact)
    certified = best_epsilon(GAUSSIAN, delta=delta, conversion=conversion, s=noise)
    assert certified.epsilon >= exact
    assert certified.epsilon <= converted.min() + 1e-9 * max(1.0, abs(converted.min()))


def test_balle_conversion_is_clamped_at_zero_for_large_delta():
    # Issue 9, item 5: for delta = 1/2 and s = 2 Balle et al.'s formula gives about -0.45. The
    # privacy profile is non-increasing, so (0, delta) holds, and 0 is what the exact curve and
    # dp_accounting report; a negative epsilon is never returned.
    raw = 1.5 / 8 + math.log1p(-1 / 1.5) - (math.log(0.5) + math.log(1.5)) / 0.5
    assert raw < 0
    value = renyi_to_dp(renyi_epsilon=1.5 / 8, alpha=1.5, delta=0.5, conversion="balle2020")
    assert value == 0.0
    arr = renyi_to_dp(renyi_epsilon=np.array([1.5 / 8]), alpha=np.array([1.5]), delta=0.5,
                      conversion="balle2020")
    assert arr[0] == 0.0
    with mpmath.workdps(30):
        iv = renyi_to_dp(renyi_epsilon=mpmath.iv.mpf(1.5 / 8), alpha=mpmath.iv.mpf(1.5), delta=0.5,
                         conversion="balle2020")
    assert iv.a == 0 and iv.b == 0


def test_negative_epsilon_of_issue_9_is_clamped():
    conv = best_epsilon("chien2024:cor3.7", delta=0.3, conversion="balle2020", sigma=10, eta="1/L",
                        m="0.011264", L="0.261264", M=1, n=11264, b=128, R=100, K=5)
    assert conv.epsilon == 0.0
    assert any("clamped at 0" in note for note in conv.notes)


# --------------------------------------------------------------------------------------------
# The exact Gaussian curve
# --------------------------------------------------------------------------------------------


def _delta_mp(epsilon: float, mu: float) -> mpmath.mpf:
    """Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), at 60 digits."""
    with mpmath.workdps(60):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


def _delta_by_integration(epsilon: float, mu: float) -> mpmath.mpf:
    """sup_S P(S) - e^eps Q(S) = integral of (p - e^eps q)_+, p = N(mu, 1), q = N(0, 1): the
    integrand is positive right of x* = eps/mu + mu/2 (likelihood ratio e^{mu x - mu^2/2})."""
    with mpmath.workdps(40):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        cut = e / m + m / 2
        return mpmath.quad(lambda x: mpmath.npdf(x, m, 1) - mpmath.exp(e) * mpmath.npdf(x, 0, 1),
                           [cut, cut + 10, mpmath.inf])


@pytest.mark.parametrize(("epsilon", "mu"), [(0.0, 1.0), (0.5, 1.0), (1.0, 0.3), (3.0, 2.0),
                                             (10.0, 5.0)])
def test_gaussian_delta_matches_the_hockey_stick_integral(epsilon, mu):
    integral = _delta_by_integration(epsilon, mu)
    value = gaussian_delta(epsilon=epsilon, mu=mu)
    assert value == pytest.approx(float(integral), rel=1e-10, abs=0)


@pytest.mark.parametrize(("epsilon", "mu"), [(0.0, 1.0), (0.5, 1.0), (1.0, 0.3), (3.0, 2.0),
                                             (10.0, 5.0), (1.0, 0.228)])
def test_gaussian_delta_mp_matches_the_hockey_stick_integral(epsilon, mu):
    # The quadrature (40 digits) integrates the densities; the implementation uses normal CDFs.
    integral = _delta_by_integration(epsilon, mu)
    value = gaussian_delta_mp(epsilon=epsilon, mu=mu)
    assert abs(value - integral) <= mpmath.mpf("1e-30") * integral
    # the float twin agrees to float accuracy
    assert gaussian_delta(epsilon=epsilon, mu=mu) == pytest.approx(float(value), rel=1e-10, abs=0)


def test_gaussian_delta_mp_is_tiny_far_out_and_checks_its_domain():
    # delta(800) at mu = 0.01 is at most Phi(-x) <= exp(-x^2/2), x = eps/mu - mu/2 (Chernoff)
    far = gaussian_delta_mp(epsilon=800.0, mu=0.01)
    x = mpmath.mpf(800) / mpmath.mpf(0.01) - mpmath.mpf(0.01) / 2
    assert 0 < far <= mpmath.exp(-x**2 / 2)
    with pytest.raises(PreconditionError, match="Theorem 8"):
        gaussian_delta_mp(epsilon=1.0, mu=0.0)
    with pytest.raises(PreconditionError, match="epsilon >= 0"):
        gaussian_delta_mp(epsilon=-1.0, mu=1.0)


@SOME
@given(st.floats(0.0, 50.0), st.floats(0.01, 30.0))
def test_gaussian_delta_matches_mpmath(epsilon, mu):
    reference = _delta_mp(epsilon, mu)
    if reference < mpmath.mpf("1e-300"):
        assert gaussian_delta(epsilon=epsilon, mu=mu) < 1e-290
        return
    value = gaussian_delta(epsilon=epsilon, mu=mu)
    assert abs(value - reference) <= 1e-8 * reference, (value, reference)


@SOME
@given(st.floats(1e-12, 0.5), st.floats(0.05, 20.0))
def test_gaussian_epsilon_inverts_gaussian_delta(delta, mu):
    eps = gaussian_epsilon(delta=delta, mu=mu)
    assert eps >= 0
    # Checked against an independent 50-digit evaluation of the exact curve (the float curve
    # itself can be ~1e-16 off, so it is not the referee).
    assert _mp_gaussian_delta(eps, mu) <= delta
    if eps > 0:  # the least such epsilon, up to float resolution
        below = eps * (1 - 1e-9)
        assert _mp_gaussian_delta(below, mu) > delta


@pytest.mark.parametrize(("delta", "mu"), [(1e-5, 1.0), (1e-3, 1.5), (1e-10, 0.3), (0.2, 4.0),
                                           (1e-12, 20.0), (0.5, 0.01)])
def test_gaussian_epsilon_lower_is_never_above_the_exact_answer(delta, mu):
    low = gaussian_epsilon_lower(delta=delta, mu=mu)
    high = gaussian_epsilon(delta=delta, mu=mu)
    assert 0.0 <= low <= high
    if high > 0:
        # an independent 50-digit evaluation: delta(low) > delta puts low below the exact epsilon
        assert _mp_gaussian_delta(low, mu) > delta
        assert high - low <= 1e-12 * high
    else:
        assert low == 0.0 and _mp_gaussian_delta(0.0, mu) <= delta


def _mp_gaussian_delta(epsilon: float, mu: float) -> mpmath.mpf:
    with mpmath.workdps(50):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        return +(mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m))


@pytest.mark.parametrize(("delta", "mu"), [(1e-5, 1.0), (1e-10, 0.3), (1e-300, 5.0), (1e-12, 20.0),
                                           (0.49255054991636205, 9.53125), (1e-6, 0.05)])
def test_gaussian_epsilon_is_never_below_the_exact_answer(delta, mu):
    # Issue 9, item 6: the float-only bisection answered up to 6e-12 below the exact epsilon.
    eps = gaussian_epsilon(delta=delta, mu=mu)
    assert _mp_gaussian_delta(eps, mu) <= delta


def test_gaussian_curve_arguments_are_checked():
    with pytest.raises(PreconditionError, match="mu > 0"):
        gaussian_delta(epsilon=1.0, mu=0.0)
    with pytest.raises(PreconditionError, match="epsilon >= 0"):
        gaussian_delta(epsilon=-1.0, mu=1.0)
    with pytest.raises(PreconditionError, match="mu > 0"):
        gaussian_delta(epsilon=1.0, mu=math.nan)


# --------------------------------------------------------------------------------------------
# Optimisation over alpha and certification
# --------------------------------------------------------------------------------------------


@SOME
@given(noises, deltas)
def test_optimal_order_of_the_gaussian_mechanism(noise, delta):
    """Mironov: eps(alpha) = alpha/(2 s^2) + log(1/delta)/(alpha - 1) is minimised at
    alpha* = 1 + s sqrt(2 log(1/delta)), with value 1/(2 s^2) + sqrt(2 log(1/delta))/s."""
    log_inv = math.log(1 / delta)
    alpha_star = 1 + noise * math.sqrt(2 * log_inv)
    eps_star = 1 / (2 * noise**2) + math.sqrt(2 * log_inv) / noise
    eps, alpha = dp_epsilon_float(GAUSSIAN, delta=delta, conversion="mironov", params={"s": noise})
    assert eps == pytest.approx(eps_star, rel=1e-10, abs=0)
    assert alpha == pytest.approx(alpha_star, rel=1e-3, abs=0)


CHIEN_RENYI = [b.id for b in bounds.list_bounds("chien2024")
               if b.guarantee.renyi_order is not None and b.paper == "chien2024"]


@pytest.mark.parametrize("bound_id", CHIEN_RENYI)
@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_optimised_order_is_at_least_as_good_as_a_dense_grid(bound_id, conversion):
    bound = bounds.get(bound_id)
    order = bound.guarantee.renyi_order
    others = {k: v for k, v in bound.example.items() if k != order}
    delta = 1e-5
    result = best_epsilon(bound, delta=delta, conversion=conversion, **others)
    values = bound.resolve({**others, order: 2})
    args = [float(values[n]) if n != order else None for n in bound.parameter_names]
    grid = 1 + np.logspace(-4, 7, 20001)
    args[bound.parameter_names.index(order)] = grid
    with np.errstate(all="ignore"):
        rdp = np.asarray(bound.float_function(*args), dtype=float)
    converted = renyi_to_dp(renyi_epsilon=rdp, alpha=grid, delta=delta, conversion=conversion)
    best_grid = np.nanmin(np.where(np.isfinite(converted), converted, np.nan))
    assert result.epsilon_float <= best_grid * (1 + 1e-9)
    assert result.epsilon_float >= best_grid * (1 - 1e-4)  # the grid is within 1e-4 of optimal
    assert abs(result.epsilon - result.epsilon_float) <= 1e-12 * abs(result.epsilon_float) + 1e-15


def _converted_exact(bound, params, alpha, delta, conversion) -> mpmath.mpf:
    with mpmath.workdps(60):
        order = {bound.guarantee.renyi_order: alpha}
        rdp = bound.evaluate(precision="mp", digits=60, **params, **order).value
        a, d = mpmath.mpf(alpha), mpmath.mpf(delta)
        if conversion == "mironov":
            return rdp + mpmath.log(1 / d) / (a - 1)
        return rdp + mpmath.log((a - 1) / a) - (mpmath.log(d) + mpmath.log(a)) / (a - 1)


@pytest.mark.parametrize("bound_id",
                         ["chien2024:cor3.7", "chien2024:cor3.8", "chien2024:thm3.11+cor3.7"])
@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_certified_epsilon_is_at_least_the_float_and_the_exact_one(bound_id, conversion):
    bound = bounds.get(bound_id)
    others = {k: v for k, v in bound.example.items() if k != "alpha"}

    @FEW
    @given(st.sampled_from(("0.01", "0.05", "0.2", "1")), st.floats(1e-10, 0.1))
    def check(sigma, delta):
        params = {**others, "sigma": sigma}
        # Global precision raised to the interval's: at the default 53 bits the certificate is
        # rounded to nearest (xfail below).
        with mpmath.workdps(60):
            result = best_epsilon(bound, delta=delta, conversion=conversion, **params)
            exact = _converted_exact(bound, params, result.alpha, delta, conversion)
            assert result.epsilon >= exact
        # The float value carries an absolute rounding error of a few ulps of the conversion's
        # terms (log(1/delta)/(alpha - 1) ~ 1 cancels against log(1 - 1/alpha) in Balle's form),
        # so it may exceed the exact value by that much; never by more.
        assert result.epsilon >= result.epsilon_float - 1e-15 * (1 + math.log(1 / delta))
        with mpmath.workdps(60):
            rdp = bound.evaluate(precision="mp", digits=60, **params, alpha=result.alpha).value
            assert result.renyi_epsilon >= rdp
        assert result.to_dict()["certified"] is True

    check()


def test_certified_epsilon_is_at_least_the_exact_value_at_default_precision():
    with mpmath.workprec(53):  # mpmath's default precision
        gaussian = best_epsilon(GAUSSIAN, delta=1e-8, conversion="mironov", s="5")
    with mpmath.workdps(60):
        alpha = mpmath.mpf(gaussian.alpha)
        exact = alpha / 50 + mpmath.log(10**8) / (alpha - 1)
        assert gaussian.epsilon >= exact  # 1.233941703508117 here
    bound = bounds.get("chien2024:thm3.2")
    others = {k: v for k, v in bound.example.items() if k != "alpha"}
    with mpmath.workprec(53):
        result = best_epsilon(bound, delta=1 / 11264, conversion="mironov", **others)
    exact = _converted_exact(bound, others, result.alpha, 1 / 11264, "mironov")
    with mpmath.workdps(60):
        assert result.epsilon >= exact


def test_best_epsilon_arguments_are_checked():
    cor = bounds.get("chien2024:cor3.7")
    others = {k: v for k, v in cor.example.items() if k != "alpha"}
    fixed = best_epsilon(cor, delta=1e-5, **cor.example)  # a given order is used, not optimised
    assert fixed.alpha == float(cor.example["alpha"])
    assert fixed.epsilon >= best_epsilon(cor, delta=1e-5, **others).epsilon * (1 - 1e-9)
    with pytest.raises(BoundError, match="not a Rényi bound"):
        best_epsilon("chien2024:lem3.3", delta=1e-5, **bounds.get("chien2024:lem3.3").example)
    with pytest.raises(BoundError, match="unknown conversion"):
        best_epsilon(cor, delta=1e-5, conversion="rdp", **others)
    with pytest.raises(PreconditionError):
        best_epsilon(cor, delta=0.0, **others)
    with pytest.raises(PreconditionError, match="step size"):
        best_epsilon(cor, delta=1e-5, **{**others, "eta": "2/L"})


def test_alpha_range_is_respected():
    cor = bounds.get("chien2024:cor3.7")
    others = {k: v for k, v in cor.example.items() if k != "alpha"}
    free = best_epsilon(cor, delta=1e-5, **others)
    boxed = best_epsilon(cor, delta=1e-5, alpha_min=2.0, alpha_max=3.0, **others)
    assert 2.0 <= boxed.alpha <= 3.0 + 1e-9
    assert boxed.epsilon >= free.epsilon
