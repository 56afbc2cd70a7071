"""The hyper-parameters of the three Koloskova et al. 2025 methods (seed 004: gradient clipping
eq. 3, model clipping eq. 4, output perturbation eq. 1) as an audit spec states them, declared
once (:mod:`empirical.mechanisms.parameters`): the fields the three share and each method's
own. The mechanism's config (:class:`empirical.mechanisms.koloskova2025.UnlearnConfig`) is
filled from them and the audit reads their help and checks. Kept free of torch so that listing
algorithms stays light."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from empirical.mechanisms.parameters import (
    AlgorithmParameters,
    ParameterError,
    at_least,
    flag,
    noise_scale,
    number,
    one_of,
    parameter,
    positive,
)

__all__ = ["NETWORK_MODELS", "GradientClippingParams", "ModelClippingParams",
           "OutputPerturbationParams"]

NETWORK_MODELS = ("mlp", "cnn", "head")

_STEP_SIZE = "gamma, the unlearning step size"
_L2 = "lambda, the regularisation of the unlearning steps"
_CLIP = "C1 (gradient clipping) or C2 (model clipping)"
_UNLEARN_STEPS = "T noisy steps; left out: T* (gradient clipping) or calibrated (model clipping)"
_NOISE = "'correct' / 'paper-table' (gradient clipping); 'analytic' / 'eq1' (output pert.)"


@dataclass(frozen=True)
class _Common(AlgorithmParameters):
    """Fields shared by the three methods (Theorems 4.1, 4.2 and eq. 1 names)."""

    sigma: float | None = parameter(
        None, help="per-step noise std (output noise for output perturbation); left out: "
                   "calibrated",
        check=positive("a positive number (or left out to calibrate it)", optional=True))
    C0: float = parameter(2.0, help="radius of the initial model clipping Pi_C0",
                          check=positive("a positive number (C0)"))
    learn_steps: int = parameter(
        300, help="full-batch gradient steps of A(D) and A(D_r) from the shared initialisation",
        check=at_least(0, "an integer >= 0"))
    learn_step_size: float = parameter(
        0.5, help="step size of that training (and of retraining from scratch)",
        check=positive())
    finetune_steps: int = parameter(
        20, help="noiseless gradient steps after the noisy part (post-processing)",
        check=at_least(0, "an integer >= 0"))
    finetune_step_size: float = parameter(0.5, help="step size of fine-tuning", check=positive())
    noise_multiplier_scale: float = noise_scale()
    report_figures: bool = parameter(
        False, help="draw accuracy against compute budget vs retraining in the report",
        check=flag())


@dataclass(frozen=True)
class GradientClippingParams(_Common):
    """Gradient clipping, eq. (3): gamma = ``step_size``, lambda = ``l2``, C1 = ``clip``,
    T = ``unlearn_steps`` (None: T* = ceil(C0 / (gamma C1)), eq. 12's choice).
    ``noise``: ``"correct"`` (sigma calibrated by Theorem A.9 + conversion) or
    ``"paper-table"`` (the tables' sigma, which sets the zCDP slope to epsilon: erratum K1)."""

    name: ClassVar[str] = "koloskova-gradient-clipping"

    step_size: float = parameter(0.05, help=_STEP_SIZE, check=positive())
    l2: float = parameter(0.0, help=_L2, check=number(what="a number >= 0", low=0))
    clip: float = parameter(1.0, help=_CLIP, check=positive("a positive number (C1)"))
    unlearn_steps: int | None = parameter(None, help=_UNLEARN_STEPS,
                                          check=at_least(1, "an integer >= 1", optional=True))
    noise: str = parameter("correct", help=_NOISE, check=one_of("correct", "paper-table"))

    def check_fields(self) -> None:
        """Theorem A.9 needs gamma * lambda < 1."""
        if self.l2 * self.step_size >= 1:
            raise ParameterError("l2", "gamma * lambda must be < 1 (Theorem A.9)")


@dataclass(frozen=True)
class ModelClippingParams(_Common):
    """Model clipping, eq. (4): gamma = ``step_size``, lambda = ``l2``, C2 = ``clip``,
    sigma0 = ``sigma0``; T = ``unlearn_steps`` (None: the least T of the accountant).
    ``accountant``: ``"adaptive"`` (koloskova2025:thm4.2/adaptive) or ``"thm4.2"``."""

    name: ClassVar[str] = "koloskova-model-clipping"

    step_size: float = parameter(0.05, help=_STEP_SIZE, check=positive())
    l2: float = parameter(0.0, help=_L2, check=number(what="a number >= 0", low=0))
    clip: float = parameter(2.0, help=_CLIP, check=positive("a positive number (C2)"))
    sigma0: float = parameter(0.0, help="initial noise of model clipping (0 as in the "
                                        "experiments)",
                              check=number(what="a number >= 0", low=0))
    unlearn_steps: int | None = parameter(None, help=_UNLEARN_STEPS,
                                          check=at_least(1, "an integer >= 1", optional=True))
    accountant: str = parameter(
        "adaptive", help="'adaptive' (tighter, proved) or 'thm4.2' (the paper's recursion)",
        check=one_of("adaptive", "thm4.2"))


@dataclass(frozen=True)
class OutputPerturbationParams(_Common):
    """Output perturbation, eq. (1): Pi_C0(A(D)) + N(0, sigma^2 I), then fine-tuning.
    ``noise``: ``"analytic"`` (exact Gaussian mechanism) or ``"eq1"`` (as printed, eps < 1)."""

    name: ClassVar[str] = "output-perturbation"

    noise: str = parameter("analytic", help=_NOISE, check=one_of("analytic", "eq1"))
