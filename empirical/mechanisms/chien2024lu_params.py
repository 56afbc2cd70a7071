"""The hyper-parameters of Langevin unlearning (Chien, Wang, Li 2024; seed 000 App. P) as an
audit spec states them, declared once (:mod:`empirical.mechanisms.parameters`): the mechanism's
config (:class:`empirical.mechanisms.chien2024lu.LangevinConfig`) is filled from them and the
audit reads their help and checks. Kept free of torch so that listing algorithms stays light."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from empirical.mechanisms.parameters import (
    AlgorithmParameters,
    at_least,
    counts,
    noise_scale,
    parameter,
    positive,
)

__all__ = ["LangevinParams"]


@dataclass(frozen=True)
class LangevinParams(AlgorithmParameters):
    """Hyper-parameters of Langevin unlearning (seed 000 App. P, Theorems P.1/P.2).

    ``sigma`` None: calibrated. ``unlearn_iterations`` K (one, or one per request; None: 1, or
    calibrated, or for a sequence the least per request). ``learn_iterations`` T; the step size
    is 1/L (the largest float not above it), L = 1/4 + lambda. ``l2`` is lambda = m, ``clip`` M,
    ``radius`` R. Learning starts from N(0, (2 sigma^2/m) I) (Theorem P.2's LSI start).
    """

    name: ClassVar[str] = "langevin"

    sigma: float | None = parameter(
        None, help="noise level (per-step variance 2 eta sigma^2); left out: calibrated",
        check=positive("a positive number (or left out to calibrate it)", optional=True))
    unlearn_iterations: int | tuple[int, ...] | None = parameter(
        None, help="K per request; left out: 1, calibrated, or least per request",
        check=counts(empty="must list at least one K"))
    learn_iterations: int = parameter(
        12, help="T, PNGD learning steps (approximates the limit law Theorem P.1 starts from)",
        check=at_least(0, "a non-negative integer"))
    l2: float = parameter(1.0, help="lambda = m, the strong convexity of the regularised loss",
                          check=positive("a positive number (lambda = m)"))
    clip: float = parameter(0.05, help="M, per-example gradient clipping norm",
                            check=positive("a positive number (M)"))
    radius: float = parameter(100.0, help="R, every step projects onto the ball C_R",
                              check=positive("a positive number (R)"))
    noise_multiplier_scale: float = noise_scale()
