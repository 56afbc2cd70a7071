"""The hyper-parameters of PNSGD (Chien et al. 2024, Algorithm 1) as an audit spec states them,
declared once (:mod:`empirical.mechanisms.parameters`): the mechanism's config
(:class:`empirical.mechanisms.chien2024.PNSGDConfig`) is filled from them and the audit reads
their help and checks. Kept free of torch so that listing algorithms stays light."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from empirical.mechanisms.parameters import (
    AlgorithmParameters,
    ParameterError,
    at_least,
    counts,
    noise_scale,
    one_of,
    parameter,
    positive,
)

__all__ = ["PNSGDParams"]


@dataclass(frozen=True)
class PNSGDParams(AlgorithmParameters):
    """Hyper-parameters of PNSGD (Chien et al. 2024, Algorithm 1) on a linear model.

    ``sigma`` None: calibrated from the certificate's target. ``unlearn_epochs`` (K) is one
    integer, or one per request of a sequence; None means 1, or calibrated when
    ``certificate.calibrate = "K"``. ``batch_size`` is b or ``"full"`` (b = n).
    ``step_size`` is eta, a number <= 1/L or ``"1/L"`` (the largest float not above 1/L).
    ``l2`` is lambda = m, ``clip`` is M, ``radius`` is R. The learning initialisation is the
    point 0 (``init = "zero"``), which lies in C_R as Theorem 3.2 requires.
    ``noise_multiplier_scale`` multiplies every noise draw without changing the certified
    sigma: a deliberately broken mechanism for testing audits (1 = the real algorithm).
    """

    name: ClassVar[str] = "pnsgd"

    sigma: float | None = parameter(
        None, help="noise hyper-parameter (per-step variance 2 eta sigma^2); left out: calibrated",
        check=positive("a positive number (or left out to calibrate it)", optional=True))
    unlearn_epochs: int | tuple[int, ...] | None = parameter(
        None, help="K, unlearning epochs (one per request of a sequence); default 1",
        check=counts(empty="must list at least one K"))
    learn_epochs: int = parameter(
        12, help="T, burn-in epochs of learning and of retraining",
        check=at_least(0, "a non-negative integer"))
    batch_size: int | str = parameter(
        "full", help="b, an integer (the tail is dropped to a multiple of b) or 'full'",
        check=at_least(1, "a positive integer", words=("full",)))
    step_size: float | str = parameter(
        "1/L", help="eta <= 1/L with L = 1/4 + l2, or '1/L'",
        check=positive("a positive number or '1/L'", words=("1/L",)))
    l2: float = parameter(
        1.0, help="lambda = m, the strong convexity of the regularised loss",
        check=positive("a positive number (lambda; the theorem needs m = lambda > 0)"))
    clip: float = parameter(0.05, help="M, per-example gradient clipping norm",
                            check=positive("a positive number (M)"))
    radius: float = parameter(100.0, help="R, every step projects onto the ball C_R",
                              check=positive("a positive number (R)"))
    partition: str = parameter(
        "per_trial", help="'per_trial' (fresh mini-batch partition per trial) or 'fixed'",
        check=one_of("per_trial", "fixed"))
    init: str = parameter("zero", help="'zero': learning starts at 0, inside C_R")
    noise_multiplier_scale: float = noise_scale()

    def check_fields(self) -> None:
        """Theorem 3.2 needs the learning initialisation supported on C_R."""
        if self.init != "zero":
            raise ParameterError("init", "must be 'zero': Theorem 3.2 needs the learning "
                                 f"initialisation supported on C_R, got {self.init!r}")
