"""The Gaussian mechanism: its exact Rényi curve (Mironov 2017, Proposition 7) and its exact
(epsilon, delta) curve (Balle and Wang 2018, Theorem 8).

A mechanism that releases f(D) + N(0, sigma^2 I) with ||f(D) - f(D')||_2 <= sensitivity for
neighbouring D, D' satisfies, for every order alpha > 1 and in both directions,

    D_alpha(N(f(D), sigma^2 I) || N(f(D'), sigma^2 I)) = alpha ||f(D) - f(D')||^2 / (2 sigma^2)
                                                      <= alpha sensitivity^2 / (2 sigma^2),

with equality for a pair at full sensitivity: the declared curve is exact, not only an upper
bound, which is why it serves as the ground truth of the audit-power benchmark. Its exact
privacy profile is the hockey-stick curve of N(0, 1) vs N(mu, 1) at mu = sensitivity / sigma;
it is evaluated by :func:`bounds.conversions.gaussian_delta` (log space), not re-implemented
here. These are textbook results, not from the seed papers; the citation names the original
papers and ``seed`` is left empty.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bounds.conversions import gaussian_delta, gaussian_epsilon
from bounds.declarations import Bound, Citation, Guarantee, Parameter
from bounds.errors import PreconditionError
from bounds.registry import register
from bounds.values import symbols

MIRONOV = "Mironov. Rényi Differential Privacy. IEEE CSF 2017"
BALLE_WANG = (
    "Balle and Wang. Improving the Gaussian Mechanism for Differential Privacy: Analytical "
    "Calibration and Optimal Denoising. ICML 2018"
)

sensitivity, sigma, alpha = symbols("sensitivity sigma alpha")

P_SENSITIVITY = Parameter(
    "sensitivity", "L2 sensitivity of the released statistic over neighbouring datasets", lower=0,
    lower_open=True,
)
P_SIGMA = Parameter("sigma", "standard deviation of the added Gaussian noise (per coordinate)",
                    lower=0, lower_open=True)
P_ALPHA = Parameter("alpha", "Rényi order", lower=1, lower_open=True)

RDP = register(Bound(
    id="gaussian:rdp",
    title="Rényi curve of the Gaussian mechanism, alpha sensitivity^2 / (2 sigma^2) (exact)",
    citation=Citation("gaussian", MIRONOV, "", "Proposition 7", "Table 2, Gaussian mechanism"),
    parameters=(P_SENSITIVITY, P_SIGMA, P_ALPHA),
    expression=alpha * sensitivity**2 / (2 * sigma**2),
    guarantee=Guarantee(
        "renyi_dp",
        "(alpha, value)-RDP of the Gaussian mechanism, in both directions: D_alpha between the "
        "output laws on neighbouring datasets is at most the value, with equality at full "
        "sensitivity",
        renyi_order="alpha",
    ),
    assumptions=(
        "the released statistic has L2 sensitivity at most `sensitivity` over neighbouring "
        "datasets, and N(0, sigma^2 I) noise independent of the data is added to it",
    ),
    monotone={"sensitivity": "increasing", "sigma": "decreasing", "alpha": "increasing"},
    notes=(
        "Exact: D_alpha(N(0, sigma^2) || N(sensitivity, sigma^2)) equals the value, so the curve "
        "is symmetric (two-sided) and no valid Rényi certificate of the mechanism is smaller.",
        "Its exact (epsilon, delta) curve is gaussian_exact_delta / gaussian_exact_epsilon (Balle "
        "and Wang 2018, Theorem 8), tighter than any conversion of the Rényi curve.",
    ),
    example={"sensitivity": 1, "sigma": 1, "alpha": 2},
))


def _mu(*, sensitivity: float, sigma: float) -> float:
    for name, value in (("sensitivity", sensitivity), ("sigma", sigma)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise PreconditionError(
                f"Balle and Wang 2018, Theorem 8 (Gaussian mechanism) requires {name} > 0 and "
                f"finite, got {value!r}"
            )
    return float(sensitivity) / float(sigma)


def gaussian_exact_delta(*, epsilon: float, sensitivity: float, sigma: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism (Balle and Wang 2018, Theorem 8).

    delta = Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu), mu = sensitivity/sigma,
    via :func:`bounds.conversions.gaussian_delta` (log space, float: rounding direction not
    tracked; the relative error is a few ulps).
    """
    return gaussian_delta(epsilon=epsilon, mu=_mu(sensitivity=sensitivity, sigma=sigma))


def gaussian_exact_epsilon(*, delta: float, sensitivity: float, sigma: float) -> float:
    """Smallest epsilon with delta(epsilon) <= ``delta`` for the Gaussian mechanism (Balle and
    Wang 2018, Theorem 8), by bisection in :func:`bounds.conversions.gaussian_epsilon`, which
    returns the upper end of its bracket (the safe side of a certificate)."""
    return gaussian_epsilon(delta=delta, mu=_mu(sensitivity=sensitivity, sigma=sigma))


@dataclass(frozen=True)
class GaussianPairLoss:
    """The exact privacy loss between two Gaussian laws with one covariance: N(m1, S), N(m0, S).

    ``mu`` is the Mahalanobis distance ||S^(-1/2) (m1 - m0)||; ``epsilon`` the least epsilon
    with delta(epsilon) <= ``delta`` (the smallest float not below the exact value);
    ``renyi`` the pairs (alpha, alpha mu^2 / 2), equal in both directions.
    """

    mu: float
    delta: float
    epsilon: float
    renyi: tuple[tuple[float, float], ...]


def gaussian_pair_loss(*, mu: float, delta: float, orders: Sequence[float]) -> GaussianPairLoss:
    """Exact (epsilon, delta) and Rényi curve of N(m1, S) vs N(m0, S) at Mahalanobis distance mu.

    An invertible affine map sends the pair to N(mu e_1, I) vs N(0, I), and neither divergence
    changes under it; the other coordinates are identical in both laws. So delta(epsilon) is
    Balle and Wang 2018, Theorem 8 at mu (both directions), and D_alpha = alpha mu^2 / 2 (Mironov
    2017, Proposition 7). mu = 0 (identical laws) gives epsilon = 0 and a zero curve.
    """
    if isinstance(mu, bool) or not isinstance(mu, int | float) or not (math.isfinite(mu)
                                                                        and mu >= 0):
        raise PreconditionError(f"Balle and Wang 2018, Theorem 8 needs a finite distance mu >= 0, "
                                f"got {mu!r}")
    if not (isinstance(delta, int | float) and 0.0 < float(delta) < 1.0):
        raise PreconditionError(f"Balle and Wang 2018, Theorem 8: delta must be in (0, 1), got "
                                f"{delta!r}")
    pairs = []
    for order in orders:
        alpha = float(order)
        if not (math.isfinite(alpha) and alpha > 1):
            raise PreconditionError(f"Mironov 2017, Proposition 7: Rényi orders must be finite "
                                    f"and > 1, got {order!r}")
        pairs.append((alpha, alpha * float(mu) ** 2 / 2))
    epsilon = 0.0 if mu == 0 else gaussian_epsilon(delta=float(delta), mu=float(mu))
    return GaussianPairLoss(float(mu), float(delta), epsilon, tuple(pairs))


__all__ = ["RDP", "GaussianPairLoss", "gaussian_exact_delta", "gaussian_exact_epsilon",
           "gaussian_pair_loss"]
