"""The plug-in estimators an audit can report, each declared once.

Estimators are numbers without coverage (biased, no confidence level): the report shows them
labelled as estimates and the verdict never reads them. Spec parsing and analysis find them by
name through :func:`estimator`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from audits.seeds import derived_seed

__all__ = ["DEFAULT_ESTIMATORS", "DEMO_ESTIMATORS", "SPEC_ESTIMATORS", "Estimate", "Estimator",
           "estimator", "estimator_summaries", "register_estimator"]


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """One estimator's value on one attack's scores: ``label`` (what the number is),
    ``interval`` a bootstrap interval where the estimator gives one, ``method`` how."""

    label: str
    value: float
    interval: tuple[float, float] | None
    method: str


@dataclass(frozen=True, kw_only=True)
class Estimator:
    """``estimate(unlearned, retrained, *, delta, seed, direction)`` -> :class:`Estimate`;
    ValueError when it does not apply to these scores (the analysis notes it and goes on)."""

    name: str
    summary: str
    estimate: Callable[..., Estimate]


_REGISTRY: dict[str, Estimator] = {}


def register_estimator(declaration: Estimator) -> Estimator:
    """Add an estimator to the registry (a name is declared once)."""
    if declaration.name in _REGISTRY:
        raise ValueError(f"estimator {declaration.name!r} is already declared")
    _REGISTRY[declaration.name] = declaration
    return declaration


def estimator(name: str) -> Estimator:
    """The declaration of ``name``; ValueError naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown estimator {name!r}; known: {', '.join(_REGISTRY)}") from None


def estimator_summaries() -> dict[str, str]:
    """name -> one-line summary, for spec validation and help texts."""
    return {name: e.summary for name, e in _REGISTRY.items()}


def _plugin_epsilon(u: np.ndarray, r: np.ndarray, *, delta: float, seed: int,
                    direction: str) -> Estimate:
    from empirical import statistics as st

    est = st.epsilon_estimate(u, r, delta=delta, direction=direction)
    return Estimate(label=f"plug-in epsilon at delta {delta:.3g}", value=est.epsilon,
                    interval=None, method=est.method)


def _auc(u: np.ndarray, r: np.ndarray, *, delta: float, seed: int, direction: str) -> Estimate:
    from empirical import statistics as st

    roc = st.roc_curve(u, r)
    return Estimate(label="AUC", value=roc.auc, interval=None, method=roc.method)


def _tpr_at_fpr(u: np.ndarray, r: np.ndarray, *, delta: float, seed: int,
                direction: str) -> Estimate:
    from empirical import statistics as st

    tpr = st.tpr_at_fpr(u, r, fpr=0.01)
    return Estimate(label="TPR at FPR 0.01", value=tpr.tpr, interval=None, method=tpr.method)


def _gaussian_kl(u: np.ndarray, r: np.ndarray, *, delta: float, seed: int,
                 direction: str) -> Estimate:
    from empirical.divergences import estimators as dv

    kl = dv.gaussian_kl_divergence(u, r, n_bootstrap=200, seed=derived_seed(seed, "bootstrap"))
    return Estimate(label="KL(unlearned || retrained) of the attack score, Gaussian fit",
                    value=kl.value,
                    interval=None if kl.interval is None else (kl.interval[0], kl.interval[1]),
                    method=kl.method)


PLUGIN_EPSILON = register_estimator(Estimator(
    name="plugin-epsilon", summary="plug-in epsilon at the certificate's delta",
    estimate=_plugin_epsilon))
AUC = register_estimator(Estimator(
    name="auc", summary="area under the attack's ROC curve", estimate=_auc))
TPR_AT_FPR = register_estimator(Estimator(
    name="tpr-at-fpr", summary="true-positive rate at 1% false-positive rate",
    estimate=_tpr_at_fpr))
GAUSSIAN_KL = register_estimator(Estimator(
    name="gaussian-kl", summary="KL divergence between Gaussians fitted to the attack scores",
    estimate=_gaussian_kl))

# What an audit of scores reports by default, what a spec does, and what a demo does.
DEFAULT_ESTIMATORS: tuple[str, ...] = (PLUGIN_EPSILON.name, AUC.name)
SPEC_ESTIMATORS: tuple[str, ...] = (*DEFAULT_ESTIMATORS, GAUSSIAN_KL.name)
DEMO_ESTIMATORS: tuple[str, ...] = (*DEFAULT_ESTIMATORS, TPR_AT_FPR.name, GAUSSIAN_KL.name)
