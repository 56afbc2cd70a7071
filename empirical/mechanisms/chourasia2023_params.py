"""The hyper-parameters of Noisy-GD deletion (Chourasia & Shah 2023, Algorithm 2 and
Definition 5.1) as an audit spec states them, declared once
(:mod:`empirical.mechanisms.parameters`): the mechanism's config
(:class:`empirical.mechanisms.chourasia2023.NoisyGDConfig`) is filled from them and the audit
reads their help and checks. Kept free of torch so that listing algorithms stays light."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from empirical.mechanisms.parameters import (
    AlgorithmParameters,
    at_least,
    noise_scale,
    parameter,
    positive,
)

__all__ = ["NoisyGDParams"]


@dataclass(frozen=True)
class NoisyGDParams(AlgorithmParameters):
    """Hyper-parameters of Noisy-GD deletion (Chourasia & Shah 2023, Definition 5.1).

    ``sigma`` is Algorithm 2's sigma (each step adds sqrt(2 eta) sigma N(0, I_d); sigma^2 is the
    "noise variance" of Theorem 5.1); None: calibrated from the certificate's target.
    ``unlearn_steps`` K_Abar (None: calibrated when ``certificate.calibrate = "K_Abar"``, else
    1); ``learn_steps`` K_A. ``l2`` is lam, ``clip`` L (Remark 5.3: per-example gradients are
    clipped to norm L, which stands in for L-Lipschitzness), ``beta`` the smoothness constant
    (None: the model's, 1/4 for logistic regression on unit-norm features).
    ``adaptive_requests`` p > 0 puts a p-adaptive requester before the spec's request: it sees
    each model the curator publishes and writes its direction into a record (re-encoding what
    the release learned, Theorem 3.1's pattern); the certificate is then Theorem 4.3 on
    Theorem 5.1's budgets, epsilon_dd + p epsilon_dp. The step size is
    Theorem 5.1's eta = 1/(2(lam + beta)) and the initialisation its rho; neither is a knob.
    ``noise_multiplier_scale`` multiplies every noise draw without changing the certified
    sigma: a deliberately broken mechanism for testing audits (1 = the real algorithm).
    """

    name: ClassVar[str] = "noisy-gd"

    sigma: float | None = parameter(
        None,
        help="Algorithm 2's sigma (per-step noise sqrt(2 eta) sigma N(0, I)); left out: calibrated",
        check=positive("a positive number (or left out to calibrate it)", optional=True))
    unlearn_steps: int | None = parameter(
        None, help="K_Abar, Noisy-GD steps of the deletion; default 1 (or calibrated)",
        check=at_least(0, "a non-negative integer (K_Abar)", optional=True))
    learn_steps: int = parameter(12, help="K_A, Noisy-GD steps of learning from rho",
                                 check=at_least(0, "a non-negative integer (K_A)"))
    l2: float = parameter(1.0, help="lam of the regulariser lam/2 ||theta||^2",
                          check=positive("a positive number (lam; Theorem 5.1 needs lam > 0)"))
    clip: float = parameter(0.05, help="L, per-example gradient clipping norm (Remark 5.3)",
                            check=positive("a positive number (L)"))
    beta: float | None = parameter(
        None, help="smoothness constant; default the model's (1/4 for logistic regression)",
        check=positive("a positive number (Theorem 5.1 needs beta > 0)", optional=True))
    adaptive_requests: int = parameter(
        0, help="p: requests of an adaptive requester (re-encodes each release) before the "
                "target's; certified by Theorem 4.3",
        check=at_least(0, "a non-negative integer (p)"))
    noise_multiplier_scale: float = noise_scale()
