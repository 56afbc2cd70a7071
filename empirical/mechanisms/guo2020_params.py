"""The hyper-parameters of Guo, Goldstein, Hannun, van der Maaten 2020 certified removal
(Algorithms 1 and 2) as an audit spec states them, declared once
(:mod:`empirical.mechanisms.parameters`): the mechanism's config
(:class:`empirical.mechanisms.guo2020.GuoConfig`) is filled from them and the audit reads their
help and checks. Kept free of torch so that listing algorithms stays light."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from empirical.mechanisms.parameters import (
    AlgorithmParameters,
    at_least,
    flag,
    noise_scale,
    number,
    one_of,
    parameter,
    positive,
)

__all__ = ["GuoParams"]


@dataclass(frozen=True)
class GuoParams(AlgorithmParameters):
    """Hyper-parameters of Guo et al.'s Algorithms 1 and 2 (paper's symbols).

    ``lam`` is lambda; ``sigma`` the standard deviation of each coordinate of b (None:
    calibrated from the certificate's target); ``gamma`` ``"paper"`` (1/4, as Section 3.2) or
    ``"tight"`` (1/(6 sqrt 3)) in Corollary 2; ``removals`` is the number of removal batches
    the budget eps' is sized for (None: spec.request.requests) and ``residual_per_removal``
    the residual allowance per batch, so eps' = removals * residual_per_removal; ``tolerance``
    is Algorithm 1's tolerance on ||grad L_b|| / (1 + ||b||). The number m of points per batch
    is spec.request.size. ``noise_multiplier_scale`` multiplies every b drawn without changing
    sigma or the budget: a deliberately broken mechanism for testing audits.
    ``report_figures`` adds the paper's Figure 1 and 2 shapes to the report (about a minute
    on two CPU cores; they do not change the audit's numbers).
    """

    name: ClassVar[str] = "guo2020-newton"

    lam: float = parameter(
        0.01, help="lambda: objective sum l + (lambda n/2)||w||^2 + b.w",
        check=positive("a positive number (lambda; strong convexity needs lambda > 0)"))
    sigma: float | None = parameter(
        None, help="standard deviation of each coordinate of b; left out: calibrated",
        check=positive("a positive number (or left out to calibrate it)", optional=True))
    gamma: str = parameter(
        "paper", help="'paper' (gamma = 1/4) or 'tight' (1/(6 sqrt 3)) in Corollary 2",
        check=one_of("paper", "tight"))
    removals: int | None = parameter(
        None, help="removal batches the budget eps' covers (default: spec.request.requests)",
        check=at_least(1, "a positive integer", optional=True))
    residual_per_removal: float = parameter(
        0.01, help="eps' per batch; eps' = removals * residual_per_removal",
        check=positive("a positive number (eps' per removal batch)"))
    tolerance: float = parameter(
        1e-10, help="Algorithm 1's tolerance on ||grad L_b|| / (1 + ||b||)",
        check=number(what="a number in (0, 1e-3]", low=0, high=1e-3, open_low=True))
    noise_multiplier_scale: float = noise_scale()
    report_figures: bool = parameter(
        True, help="add Figure 1 and 2 shapes (removals vs lambda, sigma; residuals) to the report",
        check=flag())
