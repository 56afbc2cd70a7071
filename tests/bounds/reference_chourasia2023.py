"""Independent high-precision re-derivation of every ``chourasia2023:*`` bound (seed 001).

Written from the paper's text, separately from ``bounds/papers/chourasia2023.py`` and without
importing ``bounds``: where the paper derives a closed form, the value here is recomputed the
long way (Theorem 4.1 by minimising over delta numerically, Theorem 4.5 by inverting Theorem 4.1
with bisection, eq. (18) from the Rényi divergence of two Gaussians). Every function takes plain
numbers (ints, fractions or decimal strings) and returns an ``mpmath.mpf`` computed at
:data:`DIGITS` significant digits.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath

DIGITS = 60
Mp = mpmath.mpf


def _mp(x: Any) -> mpmath.mpf:
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    if isinstance(x, str) and x.startswith("exp("):
        return mpmath.exp(mpmath.mpf(x[4:-1]))
    if isinstance(x, str) and "/" in x:
        num, den = x.split("/")
        return mpmath.mpf(num) / mpmath.mpf(den)
    return mpmath.mpf(x)


def _work(fn: Callable[..., mpmath.mpf]) -> Callable[..., mpmath.mpf]:
    def wrapped(**kw: Any) -> mpmath.mpf:
        with mpmath.workdps(DIGITS):
            return +fn(**{k: _mp(v) for k, v in kw.items()})

    wrapped.__name__ = fn.__name__
    return wrapped


# -- Theorem 4.1 -------------------------------------------------------------------------------


def advantage_at_delta(eps: mpmath.mpf, q: mpmath.mpf, dl: mpmath.mpf) -> mpmath.mpf:
    """Sum of the two one-sided conversions of Remark 2.1 at a given delta (eqs. 36-37)."""
    return mpmath.exp(eps + mpmath.log(1 / dl) / (q - 1)) - 1 + 2 * dl


def renyi_branch(eps: mpmath.mpf, q: mpmath.mpf) -> mpmath.mpf:
    """min over delta > 0 of advantage_at_delta, by Newton on the derivative (log-space)."""
    # d/d(delta): -(1/(q-1)) e^eps delta^(-q/(q-1)) + 2 = 0; solve in t = log(delta).
    def derivative(t: mpmath.mpf) -> mpmath.mpf:
        return -mpmath.exp(eps - t * q / (q - 1)) / (q - 1) + 2

    guess = ((q - 1) / q) * (eps - mpmath.log(2 * (q - 1)))
    t = mpmath.findroot(derivative, guess, tol=mpmath.mpf(10) ** (-DIGITS + 5))
    return advantage_at_delta(eps, q, mpmath.exp(t))


@_work
def thm41(*, epsilon: mpmath.mpf, q: mpmath.mpf) -> mpmath.mpf:
    return min(mpmath.sqrt(2 * epsilon), renyi_branch(epsilon, q))


@_work
def thm41_q_infinity(*, epsilon: mpmath.mpf) -> mpmath.mpf:
    # delta -> 0 in e^(eps + log(1/delta)/(q-1)) - 1 + 2 delta once q = infinity.
    return min(mpmath.sqrt(2 * epsilon), mpmath.expm1(epsilon))


# -- Theorem 4.3 -------------------------------------------------------------------------------


@_work
def thm43(*, q: mpmath.mpf, epsilon_dd: mpmath.mpf, epsilon_dp: mpmath.mpf,
          p: mpmath.mpf) -> mpmath.mpf:
    return epsilon_dd + p * epsilon_dp


# -- Theorem 4.5: the contrapositive of Theorem 4.1 at advantage delta^2 -----------------------


def _largest_eps_below(f: Callable[[mpmath.mpf], mpmath.mpf], target: mpmath.mpf) -> mpmath.mpf:
    """sup{eps >= 0 : f(eps) < target} for an increasing f (0 when none), by bisection on
    log(eps) so that tiny answers keep their relative precision."""
    if f(mpmath.mpf(0)) >= target:
        return mpmath.mpf(0)
    lo, hi = mpmath.mpf(-3000), mpmath.mpf(0)  # log(eps)
    while f(mpmath.exp(hi)) < target:
        hi += 1
    for _ in range(12 * DIGITS):
        mid = (lo + hi) / 2
        if f(mpmath.exp(mid)) < target:
            lo = mid
        else:
            hi = mid
    return mpmath.exp(lo)


@_work
def thm45(*, delta: mpmath.mpf, q: mpmath.mpf) -> mpmath.mpf:
    # Theorem 4.1 is violated (so no certificate) iff delta^2 > min{sqrt(2 eps), F(eps)}.
    target = delta**2
    pinsker = _largest_eps_below(lambda e: mpmath.sqrt(2 * e), target)
    # 0 when the Rényi branch excludes no epsilon >= 0: the closed form is then <= 0 and the
    # maximum is the Pinsker threshold.
    renyi = _largest_eps_below(lambda e: renyi_branch(e, q), target)
    return max(pinsker, renyi)


@_work
def thm45_as_printed(*, delta: mpmath.mpf, q: mpmath.mpf) -> mpmath.mpf:
    """Eqs. (11)/(40) as extracted, denominator q^(2^(1/q)), typed from the text."""
    printed = mpmath.log(q - 1) + q / (q - 1) * mpmath.log((1 + delta**2) / q ** (2 ** (1 / q)))
    return max(delta**4 / 2, printed)


# -- Theorem 5.1 -------------------------------------------------------------------------------


def _kappa(lam: mpmath.mpf, beta: mpmath.mpf) -> mpmath.mpf:
    return (lam + beta) / lam


@_work
def thm51_sigma(*, q: Mp, L: Mp, lam: Mp, epsilon_dp: Mp, n: Mp) -> Mp:
    variance = 4 * q * L**2 / (lam * epsilon_dp * n**2)
    return mpmath.sqrt(variance)


@_work
def thm51_eta(*, lam: Mp, beta: Mp) -> Mp:
    return 1 / (2 * (lam + beta))


@_work
def thm51_rho_scale(*, q: Mp, L: Mp, lam: Mp, beta: Mp, epsilon_dp: Mp, n: Mp) -> Mp:
    # rho is the fixed point v of v -> (1 - eta lam)^2 v + 2 eta sigma^2 (a Noisy-GD step on the
    # regulariser alone); the paper's closed form sigma^2/(lam (1 - eta lam/2)) is that point.
    eta = 1 / (2 * (lam + beta))
    variance = 4 * q * L**2 / (lam * epsilon_dp * n**2)
    fixed_point = 2 * eta * variance / (1 - (1 - eta * lam) ** 2)
    return mpmath.sqrt(fixed_point)


@_work
def thm51_deletion_iterations(*, lam: Mp, beta: Mp, epsilon_dp: Mp, epsilon_dd: Mp) -> Mp:
    return 4 * _kappa(lam, beta) * mpmath.log(epsilon_dp / epsilon_dd)


@_work
def thm51_deletion_epsilon(*, lam: Mp, beta: Mp, epsilon_dp: Mp, K_Abar: Mp) -> Mp:
    # Least epsilon_dd with K_Abar >= 4 kappa log(epsilon_dp/epsilon_dd): bisection on eq. (16).
    kappa = _kappa(lam, beta)
    lo, hi = mpmath.log(epsilon_dp) - 10 * (K_Abar + 1), mpmath.log(epsilon_dp)  # log(eps_dd)
    for _ in range(12 * DIGITS):
        mid = (lo + hi) / 2
        if K_Abar >= 4 * kappa * (mpmath.log(epsilon_dp) - mid):
            hi = mid
        else:
            lo = mid
    return mpmath.exp(hi)


@_work
def thm51_deletion_renyi(*, q: Mp, sigma: Mp, L: Mp, lam: Mp, beta: Mp, n: Mp, K_Abar: Mp) -> Mp:
    # invert sigma^2 = 4 q L^2/(lam eps_dp n^2) for eps_dp, then take the least eps_dd that
    # eq. (16) allows (the bisection of thm51_deletion_epsilon)
    epsilon_dp = 4 * q * L**2 / (lam * sigma**2 * n**2)
    return thm51_deletion_epsilon(lam=lam, beta=beta, epsilon_dp=epsilon_dp, K_Abar=K_Abar)


@_work
def thm43_thm51_adaptive(*, q: Mp, sigma: Mp, L: Mp, lam: Mp, beta: Mp, n: Mp, K_Abar: Mp,
                         p: Mp) -> Mp:
    # Theorem 4.3's epsilon_dd + p epsilon_dp with both budgets read off Theorem 5.1 at sigma
    epsilon_dp = 4 * q * L**2 / (lam * sigma**2 * n**2)
    epsilon_dd = thm51_deletion_epsilon(lam=lam, beta=beta, epsilon_dp=epsilon_dp, K_Abar=K_Abar)
    return thm43(q=q, epsilon_dd=epsilon_dd, epsilon_dp=epsilon_dp, p=p)


@_work
def thm51_learning_iterations(*, lam: Mp, beta: Mp, q: Mp, epsilon_dp: Mp, n: Mp, d: Mp) -> Mp:
    return 4 * _kappa(lam, beta) * mpmath.log(epsilon_dp * n**2 / (4 * q * d))


@_work
def thm51_utility_iterations(*, lam: Mp, beta: Mp, q: Mp, epsilon_dp: Mp, d: Mp, r: Mp) -> Mp:
    kappa = _kappa(lam, beta)
    return 4 * kappa * mpmath.log(max(5 * kappa, 8 * epsilon_dp * r**2 / (q * d)))


@_work
def thm51_unlearning_iterations(*, lam: Mp, beta: Mp, q: Mp, epsilon_dp: Mp, epsilon_dd: Mp, d: Mp,
                                r: Mp) -> Mp:
    kappa = _kappa(lam, beta)
    deletion = 4 * kappa * mpmath.log(epsilon_dp / epsilon_dd)
    utility = 4 * kappa * mpmath.log(max(5 * kappa, 8 * epsilon_dp * r**2 / (q * d)))
    return max(deletion, utility)


@_work
def thm51_savings(*, lam: Mp, beta: Mp, q: Mp, epsilon_dp: Mp, epsilon_dd: Mp, n: Mp, d: Mp, r: Mp) -> Mp:
    # Written as one logarithm of a ratio (a different route from K_A - K_Abar).
    kappa = _kappa(lam, beta)
    need = max(epsilon_dp / epsilon_dd, 5 * kappa, 8 * epsilon_dp * r**2 / (q * d))
    return 4 * kappa * n * mpmath.log(epsilon_dp * n**2 / (4 * q * d) / need)


@_work
def thm51_savings_order(*, q: Mp, epsilon_dd: Mp, n: Mp, d: Mp, r: Mp) -> Mp:
    return n * mpmath.log(min(n / r, n * mpmath.sqrt(epsilon_dd / (q * d))))


@_work
def table1_noisy_gd(*, epsilon: Mp, n: Mp, d: Mp) -> Mp:
    return n * mpmath.log(min(n, epsilon * n / mpmath.sqrt(d)))


# -- Theorem 5.2 -------------------------------------------------------------------------------


def gaussian_renyi(order: mpmath.mpf, shift: mpmath.mpf, variance: mpmath.mpf) -> mpmath.mpf:
    """R_q(N(shift, variance) || N(0, variance)) by quadrature of E_q (Definition 2.2)."""
    s = mpmath.sqrt(variance)

    def integrand(x: mpmath.mpf) -> mpmath.mpf:
        log_p = -((x - shift) ** 2) / (2 * variance)
        log_pp = -(x**2) / (2 * variance)
        return mpmath.exp(order * log_p + (1 - order) * log_pp) / (s * mpmath.sqrt(2 * mpmath.pi))

    centre = order * shift
    span = 40 * s
    moment = mpmath.quad(integrand, [centre - span, centre, centre + span])
    return mpmath.log(moment) / (order - 1)


@_work
def thm52_rdp(*, q: Mp, L: Mp, n: Mp, eta: Mp, K_A: Mp, K_Abar: Mp, sigma: Mp) -> Mp:
    # One step: mean shift 2 eta L/n (replacement), noise variance 2 eta sigma^2; scale out eta
    # so that the quadrature sees O(1) numbers (the divergence depends on shift^2/variance only).
    shift = 2 * eta * L / n
    variance = 2 * eta * sigma**2
    unit = mpmath.sqrt(variance)
    per_step = gaussian_renyi(q, shift / unit, mpmath.mpf(1))
    return max(K_A, K_Abar) * per_step


@_work
def thm52_sigma(*, q: Mp, L: Mp, epsilon_dp: Mp, n: Mp, eta: Mp, K_A: Mp, K_Abar: Mp) -> Mp:
    return mpmath.sqrt(q * L**2 / (epsilon_dp * n**2) * eta * max(K_A, K_Abar))


@_work
def thm52_eta(*, lam: Mp, beta: Mp, epsilon_dd: Mp, d: Mp, q: Mp, B: Mp) -> Mp:
    return lam * epsilon_dd / (64 * d * q * B * (beta + lam) ** 2)


@_work
def thm52_learning_iterations(*, lam: Mp, beta: Mp, epsilon_dd: Mp, d: Mp, q: Mp, B: Mp, eta: Mp) -> Mp:
    return 2 * B / (lam * eta) * mpmath.log(q * mpmath.log(B) / epsilon_dd)


def _saved(lam: Mp, epsilon_dd: Mp, B: Mp, eta: Mp, n: Mp, r: Mp) -> Mp:
    # log(B)/(2(eps + r log(B)/n)) written as n log(B)/(2(n eps + r log B)).
    return 2 * B / (lam * eta) * mpmath.log(n * mpmath.log(B) / (2 * (n * epsilon_dd
                                                                     + r * mpmath.log(B))))


@_work
def thm52_unlearning_iterations(*, lam: Mp, beta: Mp, epsilon_dd: Mp, d: Mp, q: Mp, B: Mp, eta: Mp,
                                n: Mp, r: Mp, K_A: Mp) -> Mp:
    return K_A - _saved(lam, epsilon_dd, B, eta, n, r)


@_work
def thm52_savings(*, lam: Mp, beta: Mp, epsilon_dd: Mp, d: Mp, q: Mp, B: Mp, eta: Mp, n: Mp, r: Mp) -> Mp:
    return n * _saved(lam, epsilon_dd, B, eta, n, r)


REFERENCE: dict[str, Callable[..., mpmath.mpf]] = {
    "chourasia2023:thm4.1": thm41,
    "chourasia2023:thm4.1/q-infinity": thm41_q_infinity,
    "chourasia2023:thm4.3": thm43,
    "chourasia2023:thm4.5": thm45,
    "chourasia2023:thm4.5/as-printed": thm45_as_printed,
    "chourasia2023:thm5.1/sigma": thm51_sigma,
    "chourasia2023:thm5.1/eta": thm51_eta,
    "chourasia2023:thm5.1/rho-scale": thm51_rho_scale,
    "chourasia2023:thm5.1/deletion-iterations": thm51_deletion_iterations,
    "chourasia2023:thm5.1/deletion-epsilon": thm51_deletion_epsilon,
    "chourasia2023:thm5.1/deletion-renyi": thm51_deletion_renyi,
    "chourasia2023:thm4.3+thm5.1/adaptive-deletion-renyi": thm43_thm51_adaptive,
    "chourasia2023:thm5.1/learning-iterations": thm51_learning_iterations,
    "chourasia2023:thm5.1/utility-iterations": thm51_utility_iterations,
    "chourasia2023:thm5.1/unlearning-iterations": thm51_unlearning_iterations,
    "chourasia2023:thm5.1/savings": thm51_savings,
    "chourasia2023:thm5.1/savings-order": thm51_savings_order,
    "chourasia2023:table1/noisy-gd": table1_noisy_gd,
    "chourasia2023:thm5.2/rdp": thm52_rdp,
    "chourasia2023:thm5.2/sigma": thm52_sigma,
    "chourasia2023:thm5.2/eta": thm52_eta,
    "chourasia2023:thm5.2/learning-iterations": thm52_learning_iterations,
    "chourasia2023:thm5.2/unlearning-iterations": thm52_unlearning_iterations,
    "chourasia2023:thm5.2/savings": thm52_savings,
}
