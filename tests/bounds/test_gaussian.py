"""The Gaussian mechanism (Mironov 2017 Prop. 7; Balle and Wang 2018 Thm 8): independent checks."""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bounds
from bounds.conversions import renyi_to_dp
from bounds.errors import PreconditionError
from bounds.papers.gaussian import gaussian_exact_delta, gaussian_exact_epsilon

RDP = bounds.get("gaussian:rdp")

positive = st.floats(min_value=0.05, max_value=20.0, allow_nan=False)
orders = st.floats(min_value=1.01, max_value=64.0, allow_nan=False)


def renyi_by_quadrature(order: float, shift: float, sd: float) -> mpmath.mpf:
    """D_order(N(shift, sd^2) || N(0, sd^2)) from the defining integral, 50 digits."""
    with mpmath.workdps(50):
        a, m, s = mpmath.mpf(order), mpmath.mpf(shift), mpmath.mpf(sd)

        def log_density(x, mean):
            return -((x - mean) ** 2) / (2 * s**2) - mpmath.log(s * mpmath.sqrt(2 * mpmath.pi))

        def integrand(x):
            return mpmath.exp(a * log_density(x, m) + (1 - a) * log_density(x, 0))

        centre = a * m  # the integrand is a Gaussian bump centred at alpha * shift
        integral = mpmath.quad(integrand, [-mpmath.inf, centre - 10 * s, centre, centre + 10 * s,
                                           mpmath.inf])
        return mpmath.log(integral) / (a - 1)


def delta_by_quadrature(epsilon: float, mu: float) -> mpmath.mpf:
    """E_Q[(dP/dQ - e^eps)_+] for P = N(mu, 1), Q = N(0, 1), integrated at 50 digits."""
    with mpmath.workdps(50):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        # dP/dQ > e^eps exactly when x > eps/mu + mu/2.
        cut = e / m + m / 2

        def integrand(x):
            return mpmath.npdf(x, m, 1) - mpmath.exp(e) * mpmath.npdf(x, 0, 1)

        return mpmath.quad(integrand, [cut, cut + 5, mpmath.inf])


@pytest.mark.parametrize(("sens", "sig", "order"), [(1, 1, 2), (0.5, 2, 10), (3, 0.7, 1.5)])
def test_rdp_matches_the_defining_integral(sens, sig, order):
    value = RDP(sensitivity=sens, sigma=sig, alpha=order)
    assert float(value) == pytest.approx(float(renyi_by_quadrature(order, sens, sig)), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(sens=positive, sig=positive, order=orders)
def test_rdp_closed_form_in_interval_mode_brackets_mpmath(sens, sig, order):
    ev = RDP.evaluate(sensitivity=sens, sigma=sig, alpha=order, precision="interval")
    with mpmath.workdps(60):
        exact = mpmath.mpf(order) * mpmath.mpf(sens) ** 2 / (2 * mpmath.mpf(sig) ** 2)
    assert ev.lower <= exact <= ev.upper


def test_rdp_declaration_is_renyi_and_checks_its_domain():
    assert RDP.guarantee.kind == "renyi_dp" and RDP.guarantee.renyi_order == "alpha"
    assert "Proposition 7" in RDP.citation.label
    with pytest.raises(PreconditionError):
        RDP(sensitivity=1, sigma=1, alpha=1)
    with pytest.raises(PreconditionError):
        RDP(sensitivity=1, sigma=0, alpha=2)


@pytest.mark.parametrize(("epsilon", "mu"), [(0.0, 1.0), (0.5, 1.0), (2.0, 0.5), (4.0, 2.0)])
def test_exact_delta_matches_quadrature(epsilon, mu):
    value = gaussian_exact_delta(epsilon=epsilon, sensitivity=mu, sigma=1.0)
    assert value == pytest.approx(float(delta_by_quadrature(epsilon, mu)), rel=1e-9)
    # Only the ratio sensitivity / sigma matters.
    assert gaussian_exact_delta(epsilon=epsilon, sensitivity=2 * mu, sigma=2.0) == pytest.approx(
        value, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(mu=st.floats(min_value=0.1, max_value=4.0), log10_delta=st.floats(min_value=-10, max_value=-1))
def test_exact_epsilon_is_the_safe_inverse_and_below_every_renyi_conversion(mu, log10_delta):
    delta = 10.0**log10_delta
    eps = gaussian_exact_epsilon(delta=delta, sensitivity=mu, sigma=1.0)
    assert gaussian_exact_delta(epsilon=eps, sensitivity=mu, sigma=1.0) <= delta * (1 + 1e-9)
    if eps > 1e-9:
        assert gaussian_exact_delta(epsilon=eps * (1 - 1e-6), sensitivity=mu, sigma=1.0) > delta
    # The exact profile is the tightest: every converted Rényi point lies at or above it.
    for order in (1.5, 2.0, 5.0, 20.0, 100.0):
        rdp = float(RDP(sensitivity=mu, sigma=1.0, alpha=order))
        for conversion in ("mironov", "balle2020"):
            converted = renyi_to_dp(renyi_epsilon=rdp, alpha=order, delta=delta, conversion=conversion)
            assert converted >= eps - 1e-9


def test_exact_curve_rejects_bad_inputs():
    with pytest.raises(PreconditionError, match="Theorem 8"):
        gaussian_exact_delta(epsilon=1.0, sensitivity=1.0, sigma=-1.0)
    with pytest.raises(PreconditionError):
        gaussian_exact_epsilon(delta=1e-5, sensitivity=math.inf, sigma=1.0)


@pytest.mark.parametrize(("mu", "delta"), [(0.3, 0.1), (1.49, 0.1), (1.35, 0.1), (2.5, 1e-5),
                                           (0.12, 1 / 256)])
def test_gaussian_pair_loss_is_the_least_epsilon_of_the_hockey_stick_integral(mu, delta):
    from bounds.papers.gaussian import gaussian_pair_loss

    loss = gaussian_pair_loss(mu=mu, delta=delta, orders=(1.5, 2.0, 32.0))
    # the defining integral at the returned epsilon meets delta, and a hair below it does not
    assert delta_by_quadrature(loss.epsilon, mu) <= delta * (1 + 1e-12)
    assert delta_by_quadrature(loss.epsilon * (1 - 1e-9), mu) > delta
    for order, value in loss.renyi:
        assert value == pytest.approx(float(renyi_by_quadrature(order, mu, 1.0)), rel=1e-12)
    assert loss.mu == mu and loss.delta == delta


def test_gaussian_pair_loss_of_identical_laws_is_zero_and_bad_inputs_name_the_theorem():
    from bounds.papers.gaussian import gaussian_pair_loss

    zero = gaussian_pair_loss(mu=0.0, delta=1e-5, orders=(2.0,))
    assert zero.epsilon == 0.0 and zero.renyi == ((2.0, 0.0),)
    for bad in ({"mu": -1.0}, {"mu": math.inf}, {"delta": 0.0}, {"orders": (1.0,)}):
        with pytest.raises(PreconditionError, match="Balle and Wang|Mironov"):
            gaussian_pair_loss(**{"mu": 1.0, "delta": 1e-5, "orders": (2.0,), **bad})
