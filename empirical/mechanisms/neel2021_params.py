"""The hyper-parameters of Delete-to-Descent (Neel, Roth, Sharifi-Malvajerdi 2021; seed 000
App. N.3 and O) as an audit spec states them, declared once
(:mod:`empirical.mechanisms.parameters`): the mechanism's config
(:class:`empirical.mechanisms.neel2021.D2DConfig`) is filled from them and the audit reads
their help and checks. Kept free of torch so that listing algorithms stays light."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from empirical.mechanisms.parameters import (
    AlgorithmParameters,
    at_least,
    noise_scale,
    one_of,
    parameter,
    positive,
)

__all__ = ["D2DParams"]


@dataclass(frozen=True)
class D2DParams(AlgorithmParameters):
    """Hyper-parameters of D2D (seed 000 App. N.3 Algorithms 2-3, Theorems O.1/O.2).

    ``variant``: ``"internal-state"`` (Theorem O.1: fine-tune the clean parameters) or
    ``"no-internal-state"`` (Theorem O.2: fine-tune the published noisy ones). ``noise_std``
    None: sigma from the theorem at the certificate's target. ``unlearn_iterations`` is I (None:
    1 with internal state, the least I of eq. (94) without). ``learn_iterations`` None: the least
    T the theorems require. ``l2`` is lambda = m, ``clip`` is M, ``radius`` R (projection and
    the theorems' parameter set). The step size is 2/(L + m) with L = 1/4 + lambda (not a
    parameter: the theorems fix it). ``adjacency``: ``"theorem"`` (removals only) or
    ``"paper"`` (replacements too, as seed 000 runs them; not certified).
    """

    name: ClassVar[str] = "d2d"

    variant: str = parameter(
        "internal-state",
        help="'internal-state' (Theorem O.1) or 'no-internal-state' (Theorem O.2)",
        check=one_of("internal-state", "no-internal-state"))
    noise_std: float | None = parameter(
        None, help="output noise sigma; left out: the theorem's sigma at the target",
        check=positive("a positive number (or left out to take the theorem's sigma)",
                       optional=True))
    unlearn_iterations: int | None = parameter(
        None, help="I, fine-tuning steps per request; left out: 1 or eq. (94)'s least I",
        check=at_least(1, "a positive integer", optional=True))
    learn_iterations: int | None = parameter(
        None, help="T, learning steps; left out: the least T the theorems require",
        check=at_least(0, "a non-negative integer", optional=True))
    l2: float = parameter(1.0, help="lambda = m, the strong convexity of the regularised loss",
                          check=positive("a positive number (lambda = m; the theorems need "
                                         "m > 0)"))
    clip: float = parameter(0.05,
                            help="M, per-example gradient clipping norm (the Lipschitz constant)",
                            check=positive("a positive number (M)"))
    radius: float = parameter(
        100.0, help="R, every step projects onto the ball C_R (diameter 2R in the theorems)",
        check=positive("a positive number (R)"))
    adjacency: str = parameter(
        "theorem",
        help="'theorem' (removals) or 'paper' (replacements as Chien et al. 2024 run them)",
        check=one_of("theorem", "paper"))
    noise_multiplier_scale: float = noise_scale()
