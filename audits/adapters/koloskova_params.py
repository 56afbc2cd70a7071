"""Hyper-parameters of the Koloskova et al. 2025 adapters (:mod:`audits.adapters.koloskova`):
the fields the three methods share and each method's own, checked on construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audits.adapters.params import AlgorithmParams, flag, noise_scale, optional_sigma, positive
from audits.fields import choice, fail, integer, number

__all__ = ["HELP", "NETWORK_MODELS", "GradientClippingParams", "ModelClippingParams",
           "OutputPerturbationParams"]

NETWORK_MODELS = ("mlp", "cnn", "head")


@dataclass(frozen=True)
class _Common(AlgorithmParams):
    """Fields shared by the three methods (Theorems 4.1, 4.2 and eq. 1 names)."""

    sigma: float | None = None
    C0: float = 2.0
    learn_steps: int = 300
    learn_step_size: float = 0.5
    finetune_steps: int = 20
    finetune_step_size: float = 0.5
    noise_multiplier_scale: float = 1.0
    report_figures: bool = False

    def _check_common(self) -> None:
        p = "spec.algorithm"
        optional_sigma(self.sigma)
        positive(self.C0, "C0", "a positive number (C0)")
        integer(self.learn_steps, f"{p}.learn_steps", minimum=0, what="an integer >= 0")
        positive(self.learn_step_size, "learn_step_size")
        integer(self.finetune_steps, f"{p}.finetune_steps", minimum=0, what="an integer >= 0")
        positive(self.finetune_step_size, "finetune_step_size")
        noise_scale(self.noise_multiplier_scale)
        flag(self.report_figures, "report_figures")


@dataclass(frozen=True)
class GradientClippingParams(_Common):
    """Gradient clipping, eq. (3): gamma = ``step_size``, lambda = ``l2``, C1 = ``clip``,
    T = ``unlearn_steps`` (None: T* = ceil(C0 / (gamma C1)), eq. 12's choice).
    ``noise``: ``"correct"`` (sigma calibrated by Theorem A.9 + conversion) or
    ``"paper-table"`` (the tables' sigma, which sets the zCDP slope to epsilon: erratum K1)."""

    name: ClassVar[str] = "koloskova-gradient-clipping"

    step_size: float = 0.05
    l2: float = 0.0
    clip: float = 1.0
    unlearn_steps: int | None = None
    noise: str = "correct"

    def __post_init__(self) -> None:
        self._check_common()
        p = "spec.algorithm"
        positive(self.step_size, "step_size")
        number(self.l2, f"{p}.l2", low=0, what="a number >= 0")
        positive(self.clip, "clip", "a positive number (C1)")
        if self.unlearn_steps is not None:
            integer(self.unlearn_steps, f"{p}.unlearn_steps", minimum=1, what="an integer >= 1")
        choice(self.noise, f"{p}.noise", ("correct", "paper-table"))
        if self.l2 * self.step_size >= 1:
            raise fail(f"{p}.l2", "gamma * lambda must be < 1 (Theorem A.9)")


@dataclass(frozen=True)
class ModelClippingParams(_Common):
    """Model clipping, eq. (4): gamma = ``step_size``, lambda = ``l2``, C2 = ``clip``,
    sigma0 = ``sigma0``; T = ``unlearn_steps`` (None: the least T of the accountant).
    ``accountant``: ``"adaptive"`` (koloskova2025:thm4.2/adaptive) or ``"thm4.2"``."""

    name: ClassVar[str] = "koloskova-model-clipping"

    step_size: float = 0.05
    l2: float = 0.0
    clip: float = 2.0
    sigma0: float = 0.0
    unlearn_steps: int | None = None
    accountant: str = "adaptive"

    def __post_init__(self) -> None:
        self._check_common()
        p = "spec.algorithm"
        positive(self.step_size, "step_size")
        number(self.l2, f"{p}.l2", low=0, what="a number >= 0")
        positive(self.clip, "clip", "a positive number (C2)")
        number(self.sigma0, f"{p}.sigma0", low=0, what="a number >= 0")
        if self.unlearn_steps is not None:
            integer(self.unlearn_steps, f"{p}.unlearn_steps", minimum=1, what="an integer >= 1")
        choice(self.accountant, f"{p}.accountant", ("adaptive", "thm4.2"))


@dataclass(frozen=True)
class OutputPerturbationParams(_Common):
    """Output perturbation, eq. (1): Pi_C0(A(D)) + N(0, sigma^2 I), then fine-tuning.
    ``noise``: ``"analytic"`` (exact Gaussian mechanism) or ``"eq1"`` (as printed, eps < 1)."""

    name: ClassVar[str] = "output-perturbation"

    noise: str = "analytic"

    def __post_init__(self) -> None:
        self._check_common()
        choice(self.noise, "spec.algorithm.noise", ("analytic", "eq1"))


# One line per field for ``unlearn audit algorithms`` (the three methods share the table).
HELP = {
    "sigma": "per-step noise std (output noise for output perturbation); left out: calibrated",
    "C0": "radius of the initial model clipping Pi_C0",
    "learn_steps": "full-batch gradient steps of A(D) and A(D_r) from the shared initialisation",
    "learn_step_size": "step size of that training (and of retraining from scratch)",
    "finetune_steps": "noiseless gradient steps after the noisy part (post-processing)",
    "finetune_step_size": "step size of fine-tuning",
    "noise_multiplier_scale": "< 1 breaks the mechanism on purpose (tests of the audit)",
    "report_figures": "draw accuracy against compute budget vs retraining in the report",
    "step_size": "gamma, the unlearning step size",
    "l2": "lambda, the regularisation of the unlearning steps",
    "clip": "C1 (gradient clipping) or C2 (model clipping)",
    "unlearn_steps": "T noisy steps; left out: T* (gradient clipping) or calibrated (model clipping)",
    "noise": "'correct' / 'paper-table' (gradient clipping); 'analytic' / 'eq1' (output pert.)",
    "sigma0": "initial noise of model clipping (0 as in the experiments)",
    "accountant": "'adaptive' (tighter, proved) or 'thm4.2' (the paper's recursion)",
}
