"""Gaussian differential privacy: mu lower bounds, and the Gaussian privacy profile as a test bed.

The certified side of the toolkit owns the Gaussian privacy profile
(``bounds.conversions.gaussian_delta`` / ``gaussian_epsilon``, with rigorous rounding and
Balle and Wang's theorem cited). The empirical floor may not import it, so a function here that
turns a mu lower bound into an epsilon lower bound, :func:`epsilon_from_gdp`, takes the profile
from its caller (``epsilon_of_mu``; the audit layer passes the bounds' solver). The one copy of
the profile kept on this floor, :func:`gaussian_delta` and its inverse :func:`gaussian_epsilon`,
is the ground truth of Gaussian test beds (the power benchmark's mechanisms, the divergence
estimators' fitted Gaussians) and is never used to state a bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from empirical.statistics.checks import (
    as_scores,
    check_alpha,
    check_probability,
)
from empirical.statistics.thresholds import (
    TEST_RECORD_FIELDS,
    BonferroniPareto,
    EpsilonLowerBound,
    ThresholdStrategy,
    ThresholdTestBound,
    check_strategy,
    select_rule,
)

# ----------------------------------------------------------------------------------------------
# The Gaussian privacy profile as a test bed (the certified one lives in bounds.conversions).

EpsilonOfMu = Callable[..., float]  # epsilon_of_mu(*, mu, delta) -> epsilon


def gaussian_delta(*, mu: float, epsilon: float) -> float:
    """Exact hockey-stick divergence E_Q[(dP/dQ - e^eps)_+] for P = N(mu, 1), Q = N(0, 1).

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Balle and Wang 2018, Thm 8;
    Dong, Roth, Su 2019, Cor 2.13); it is the privacy profile of every mu-GDP mechanism whose
    trade-off curve is exactly Gaussian. Evaluated in log space so large eps does not overflow.
    The empirical floor's one copy, kept as the ground truth of Gaussian test beds and for
    fitted-Gaussian estimates (mu = 0 allowed); float, rounding direction not tracked. Bounds
    use ``bounds.conversions.gaussian_delta`` (passed in by the audit layer).
    """
    mu = float(mu)
    epsilon = float(epsilon)
    if not (math.isfinite(mu) and mu >= 0):
        raise ValueError(f"mu must be finite and non-negative, got {mu!r}")
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and non-negative, got {epsilon!r}")
    if mu == 0.0:
        return 0.0
    log_a = special.log_ndtr(-epsilon / mu + mu / 2)
    log_b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if log_b >= log_a:
        return 0.0
    return float(math.exp(log_a) * -math.expm1(log_b - log_a))


def gaussian_epsilon(*, mu: float, delta: float) -> float:
    """Smallest eps with gaussian_delta(mu, eps) <= delta (0 < delta < 1), to ~1e-12 either way.

    The test-bed inverse (no rounding direction): a lower bound takes its profile from the
    caller (:func:`epsilon_from_gdp`).
    """
    if mu <= 0.0 or gaussian_delta(mu=mu, epsilon=0.0) <= delta:
        return 0.0
    # delta(eps) <= Phi(-eps/mu + mu/2) < delta at this bracket end.
    upper = mu * (mu / 2 - float(special.ndtri(delta))) + 1.0  # Phi^-1(1 - delta)
    log_delta = math.log(delta)

    def excess(eps: float) -> float:
        value = gaussian_delta(mu=mu, epsilon=eps)
        return (math.log(value) if value > 0 else -np.inf) - log_delta

    from scipy import optimize  # here: its import is heavy (~23 MB) and few audits need it

    return float(optimize.brentq(excess, 0.0, upper, xtol=1e-12, rtol=1e-12))


@dataclass(frozen=True, kw_only=True)
class GdpMuLowerBound(ThresholdTestBound):
    """Lower bound on the Gaussian-DP parameter mu (the test's fields: :class:`ThresholdTestBound`).

    Valid for any pair of distributions: if they are mu*-GDP then mu* >= ``mu``.
    """

    mu: float
    method: str = "Clopper-Pearson FPR/FNR into mu >= Phi^-1(1 - FPR) - Phi^-1(FNR)"


def gdp_mu_lower_bound(
    scores_positive,
    scores_negative,
    *,
    alpha: float = 0.05,
    strategy: ThresholdStrategy | None = None,
    two_sided_threshold: bool = False,
) -> GdpMuLowerBound:
    """Gaussian-DP mu lower bound (Nasr et al. 2023; Dong, Roth, Su 2019, Eq. 6).

    mu-GDP means FNR >= Phi(Phi^-1(1 - FPR) - mu) for every test, so
    mu >= Phi^-1(1 - FPR) - Phi^-1(FNR), non-increasing in both rates; Clopper-Pearson upper
    bounds on the rates and the same strategies as :func:`epsilon_lower_bound` apply. Clamped
    at 0, so null data give 0 (cf. the sign bug fixed in jax_privacy PR #270).
    """
    alpha = check_alpha(alpha)
    strategy = check_strategy(BonferroniPareto() if strategy is None else strategy)
    positive = as_scores(scores_positive, "scores_positive")
    negative = as_scores(scores_negative, "scores_negative")

    def functional(fpr_hi, fnr_hi):
        # Phi^-1(1 - FPR) - Phi^-1(FNR), with ndtri as scipy.stats.norm's isf and ppf use it
        return np.maximum(0.0, -special.ndtri(fpr_hi) - special.ndtri(fnr_hi))

    choice = select_rule(
        positive,
        negative,
        alpha=alpha,
        strategy=strategy,
        two_sided_threshold=two_sided_threshold,
        functional=functional,
    )
    return GdpMuLowerBound(mu=choice.value, confidence=1.0 - alpha,
                           **choice.test_record(strategy.name))


def epsilon_from_gdp(
    bound: GdpMuLowerBound,
    *,
    delta: float,
    epsilon_of_mu: EpsilonOfMu,
    mechanism_is_gaussian: bool = False,
) -> EpsilonLowerBound:
    """epsilon lower bound from a mu lower bound, for mechanisms declared Gaussian.

    If the audited mechanism's trade-off curve is exactly Gaussian (Gaussian noise added to a
    deterministic quantity, e.g. noisy-Newton or Langevin unlearning at a fixed point), its
    privacy profile is the Gaussian one at its true mu (Balle and Wang 2018, Theorem 8);
    delta(eps) grows with mu, so the eps solving delta_mu_lower(eps) = delta is a valid lower
    bound. For any other mechanism it is an extrapolation, so this function refuses unless the
    caller sets ``mechanism_is_gaussian=True``.

    ``epsilon_of_mu(*, mu, delta)`` is that inverse for mu > 0, supplied by the caller because
    the certified profile lives in ``bounds`` (the audit layer passes
    ``bounds.conversions.gaussian_epsilon_lower``, which never exceeds the exact value). It is
    not called at mu = 0: identical laws give epsilon = 0 at every delta.
    """
    if mechanism_is_gaussian is not True:
        raise ValueError(
            "epsilon_from_gdp converts mu to epsilon through the Gaussian trade-off curve, which "
            "is a lower bound only for Gaussian mechanisms; pass mechanism_is_gaussian=True if "
            "the audited mechanism is one, otherwise report the mu bound itself"
        )
    if not isinstance(bound, GdpMuLowerBound):
        raise ValueError(f"bound must be a GdpMuLowerBound, got {type(bound).__name__}")
    if not callable(epsilon_of_mu):
        raise ValueError("epsilon_of_mu must be a callable epsilon_of_mu(*, mu, delta), e.g. "
                         "bounds.conversions.gaussian_epsilon_lower passed in by the caller")
    delta = check_probability(delta, "delta", open_low=True, open_high=True)
    epsilon = 0.0 if bound.mu <= 0.0 else float(epsilon_of_mu(mu=bound.mu, delta=delta))
    if not (math.isfinite(epsilon) and epsilon >= 0.0):
        raise ValueError(f"epsilon_of_mu returned {epsilon!r} at mu = {bound.mu!r}; expected a "
                         "finite epsilon >= 0")
    return EpsilonLowerBound(
        epsilon=epsilon,
        delta=delta,
        confidence=bound.confidence,
        **{name: getattr(bound, name) for name in TEST_RECORD_FIELDS},
        method="GDP mu lower bound through the Gaussian privacy profile (Gaussian mechanism)",
    )
