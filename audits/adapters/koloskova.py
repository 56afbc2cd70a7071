"""Koloskova et al. 2025 (seed 004): three audit adapters for noisy fine-tuning of networks.

* ``koloskova-gradient-clipping``: eq. (3), certified by Theorem A.9 (``koloskova2025:thmA.9``,
  or ``thmA.9/lambda0`` when lambda = 0) through the shared :func:`audits.certify.certify`
  (Rényi -> (epsilon, delta), ``balle2020`` by default as Section 4.1 says is used in practice).
  ``noise = "paper-table"`` runs the sigma the appendix tables use (the zCDP slope set equal to
  the target epsilon, erratum K1) and records the paper's *claimed* epsilon as the certificate,
  with the engine's true certificate at that sigma in the provenance: an audit then tests the
  claim.
* ``koloskova-model-clipping``: eq. (4), Theorem 4.2 with the adaptive accountant
  (``koloskova2025:thm4.2/adaptive``, proved in docs/improved-koloskova2025.md) or the
  paper's recursion (``thm4.2/steps``); least T (default) or smallest sigma, both re-checked
  on the safe side.
* ``output-perturbation``: eq. (1), the exact Gaussian mechanism (``koloskova2025:eq1/analytic``,
  default) or eq. (1) as printed (``koloskova2025:eq1``, epsilon < 1).

Theorem 4.2 and eq. (1) are not Rényi bounds and give a step count or a noise, not an epsilon,
so their certificate is the target (epsilon, delta) itself, issued only after the bound engine
re-checks (in rounded-up arithmetic) that the chosen (T, sigma) reaches delta.

Data: digits 3-vs-8 (embedded) or a class pair of MNIST / CIFAR-10 from a user path. The forget
set is the spec's removal request (a random 10% of the rows in the demos).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from audits import adapter_support as support
from audits.adapter import PreparedAudit
from audits.certify import certify
from audits.fields import SpecError, choice, fail, integer, number
from audits.protocols import Certificate, TrialBatch
from audits.registry import register_adapter
from audits.spec import AuditSpec, CertificateSpec, DatasetSpec, ModelSpec, RequestSpec

__all__ = [
    "GRADIENT_CLIPPING",
    "MODEL_CLIPPING",
    "OUTPUT_PERTURBATION",
    "GradientClippingParams",
    "KoloskovaMechanism",
    "ModelClippingParams",
    "OutputPerturbationParams",
    "prepare_koloskova",
]

PARAMS_STATISTICS_LIMIT = 5000  # parameters handed to the projection attack up to this size
NETWORK_MODELS = ("mlp", "cnn", "head")


@dataclass(frozen=True)
class _Common(support.AlgorithmParams):
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
        support.optional_sigma(self.sigma)
        support.positive(self.C0, "C0", "a positive number (C0)")
        integer(self.learn_steps, f"{p}.learn_steps", minimum=0, what="an integer >= 0")
        support.positive(self.learn_step_size, "learn_step_size")
        integer(self.finetune_steps, f"{p}.finetune_steps", minimum=0, what="an integer >= 0")
        support.positive(self.finetune_step_size, "finetune_step_size")
        support.noise_scale(self.noise_multiplier_scale)
        support.flag(self.report_figures, "report_figures")


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
        support.positive(self.step_size, "step_size")
        number(self.l2, f"{p}.l2", low=0, what="a number >= 0")
        support.positive(self.clip, "clip", "a positive number (C1)")
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
        support.positive(self.step_size, "step_size")
        number(self.l2, f"{p}.l2", low=0, what="a number >= 0")
        support.positive(self.clip, "clip", "a positive number (C2)")
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


_HELP = {
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


# ----------------------------------------------------------------------------------------------
# Data.


def spec_data(spec_json: str) -> support.SpecData:
    """Dataset and forget set (``indices``) of a spec (cached)."""
    return support.spec_data(spec_json)


@functools.lru_cache(maxsize=8)
def _task(spec_json: str, model: str, device: str, dtype: str) -> Any:
    import torch

    from empirical.mechanisms.koloskova2025 import build_task

    return build_task(spec_data(spec_json).dataset, model=model, device=device,
                      dtype=getattr(torch, dtype))


# ----------------------------------------------------------------------------------------------
# Certificates.

COMMON_ASSUMPTIONS = (
    "g_t is the full-batch mean cross-entropy gradient on the retain set: a map of x_t that never "
    "reads the forget set, identical in the unlearned and the certifying run",
    "the certifying run starts from A(D_r), trained like A(D) (same initialisation, same "
    "full-batch steps) without the forget set (Definition 2.1)",
    "fine-tuning after the noisy part is post-processing of x_T",
    "the theorems hold in exact arithmetic; floating-point rounding of the trials is not "
    "accounted for",
)


def _tables_sigma(*, T: int, gamma: float, lam: float, C0: float, C1: float,
                  epsilon: float) -> float:
    """The sigma of the gradient-clipping tables: the zCDP slope of Theorem A.9 set to epsilon
    (erratum K1; koloskova2025:steps reproduces the printed tables with this rule)."""
    from bounds.papers.koloskova2025 import zcdp_slope_at_unit_sigma

    return math.sqrt(zcdp_slope_at_unit_sigma(T=T, gamma=gamma, lam=lam, C0=C0, C1=C1) / epsilon)


def gradient_clipping_certificate(spec: AuditSpec, delta: float) -> tuple[Certificate, float, int]:
    import bounds

    params: GradientClippingParams = spec.algorithm
    cert = spec.certificate
    steps = params.unlearn_steps or max(1, math.ceil(params.C0 / (params.step_size * params.clip)
                                                     - 1e-12))
    lam0 = params.l2 == 0
    bound = bounds.get("koloskova2025:thmA.9/lambda0" if lam0 else "koloskova2025:thmA.9")
    inputs: dict[str, Any] = {"T": steps, "gamma": params.step_size, "C0": params.C0,
                              "C1": params.clip}
    if not lam0:
        inputs["lam"] = params.l2
    assumptions = [
        "unlearning runs eq. (3): x_0 = Pi_C0(x_hat), x_{t+1} = x_t - gamma (Pi_C1(g_t) + lambda "
        f"x_t) + N(0, sigma^2 I), T = {steps}",
        *COMMON_ASSUMPTIONS,
    ]
    if params.noise == "paper-table":
        if cert.target_epsilon is None or params.sigma is not None:
            raise SpecError("spec.algorithm.noise: 'paper-table' derives sigma from "
                            "spec.certificate.target_epsilon; give the target, leave sigma out")
        sigma = _tables_sigma(T=steps, gamma=params.step_size, lam=params.l2, C0=params.C0,
                              C1=params.clip, epsilon=cert.target_epsilon)
        run = certify(bound, inputs=inputs, free={"sigma": sigma}, delta=delta,
                      target_epsilon=None, solve=None, conversion=cert.conversion,
                      assumptions=assumptions)
        true_eps = run.certificate.epsilon
        claimed = dataclasses.replace(
            run.certificate, epsilon=float(cert.target_epsilon), alpha=None,
            provenance={**run.certificate.provenance,
                        "claim": (f"the paper's tables claim ({cert.target_epsilon}, {delta:g}) at "
                                  f"sigma = {sigma:.6g} (zCDP slope of Theorem A.9 = epsilon, "
                                  f"erratum K1); the engine certifies only epsilon = "
                                  f"{true_eps:.6g} at this sigma. The audit tests the claim."),
                        "engine_certified_epsilon": true_eps})
        return claimed, sigma, steps
    solve = None if cert.target_epsilon is None else "sigma"
    if solve is None and params.sigma is None:
        raise SpecError("spec.algorithm.sigma: required when spec.certificate.target_epsilon is "
                        "not given")
    run = certify(bound, inputs=inputs, free={"sigma": params.sigma}, delta=delta,
                  target_epsilon=cert.target_epsilon, solve=solve, conversion=cert.conversion,
                  assumptions=assumptions)
    return run.certificate, float(run.values["sigma"]), steps


def _issued(bound_id: str, *, epsilon: float, delta: float, inputs: Mapping[str, Any],
            calibration: Mapping[str, Any], assumptions: list[str], check: str) -> Certificate:
    import bounds

    # The report's calibration record needs parameter, value and target (None: nothing solved).
    record = ({**calibration, "target_epsilon": epsilon}
              if calibration.get("parameter") is not None else None)
    return Certificate(
        epsilon=epsilon, delta=delta, bound=bound_id, alpha=None, conversion=None,
        calibration=record, inputs={**inputs, "delta": delta},
        provenance={**bounds.get(bound_id).provenance(),
                    "conversion": "none: the theorem gives (epsilon, delta) directly",
                    "check": check, "audit_assumptions": assumptions, "derivation": []})


def model_clipping_certificate(spec: AuditSpec, delta: float) -> tuple[Certificate, float, int]:
    import mpmath

    from bounds.papers.koloskova2025 import (
        least_steps_model_clipping,
        model_clipping_log_delta_certified,
        smallest_sigma_model_clipping,
    )

    params: ModelClippingParams = spec.algorithm
    eps = spec.certificate.target_epsilon
    if eps is None:
        raise SpecError("spec.certificate.target_epsilon: Theorem 4.2 certifies a target "
                        "(epsilon, delta); give the target")
    adaptive = params.accountant == "adaptive"
    bound_id = "koloskova2025:thm4.2/adaptive" if adaptive else "koloskova2025:thm4.2/steps"
    common = {"epsilon": eps, "delta": delta, "C0": params.C0, "C2": params.clip,
              "sigma0": params.sigma0}
    if params.sigma is None:
        if params.unlearn_steps is None:
            raise SpecError("spec.algorithm: give sigma (T is then calibrated) or unlearn_steps "
                            "(sigma is then calibrated)")
        steps = params.unlearn_steps
        sigma = smallest_sigma_model_clipping(T=steps, adaptive=adaptive, **common)
        calibration = {"parameter": "sigma", "value": sigma, "T": steps}
    else:
        sigma = params.sigma
        if params.unlearn_steps is None:
            cal = least_steps_model_clipping(sigma=sigma, adaptive=adaptive, **common)
            steps = cal.steps
            calibration = {"parameter": "T", "value": steps, "neighbour": cal.neighbour,
                           "neighbour_log_delta": cal.neighbour_value}
        else:
            steps = params.unlearn_steps
            calibration = {"parameter": None, "T": steps}
    log_delta = model_clipping_log_delta_certified(sigma=sigma, T=steps, adaptive=adaptive,
                                                   **{k: v for k, v in common.items()
                                                      if k != "delta"})
    if not log_delta <= mpmath.log(mpmath.mpf(repr(delta))):
        raise SpecError(f"spec.algorithm: T = {steps} steps at sigma = {sigma!r} do not reach "
                        f"delta = {delta:g} by {bound_id} (log delta_T <= {float(log_delta):.6g})")
    calibration["certified_log_delta_T"] = float(log_delta)
    assumptions = [
        "unlearning runs eq. (4) in Theorem 4.2's form: x_0 = Pi_C0(x_hat) + N(0, sigma0^2 I), "
        f"x_(t+1) = Pi_C2(x_t - gamma (g_t + lambda x_t)) + N(0, sigma^2 I), T = {steps}",
        *COMMON_ASSUMPTIONS,
    ]
    cert = _issued(bound_id, epsilon=float(eps), delta=delta,
                   inputs={**common, "sigma": sigma, "T": steps}, calibration=calibration,
                   assumptions=assumptions,
                   check=f"log delta_T <= {float(log_delta):.8g} <= log delta (each step rounded "
                         "up in mpmath)")
    return cert, float(sigma), steps


def output_perturbation_certificate(spec: AuditSpec, delta: float) -> tuple[Certificate, float]:
    import mpmath

    import bounds
    from bounds.papers.koloskova2025 import log_theta

    params: OutputPerturbationParams = spec.algorithm
    eps = spec.certificate.target_epsilon
    if eps is None:
        raise SpecError("spec.certificate.target_epsilon: output perturbation certifies a "
                        "target (epsilon, delta); give the target")
    bound_id = "koloskova2025:eq1/analytic" if params.noise == "analytic" else "koloskova2025:eq1"
    if params.sigma is None:
        try:
            value = bounds.get(bound_id).evaluate(precision="interval", epsilon=eps, delta=delta,
                                                   C0=params.C0)
        except Exception as error:  # a violated precondition (eq. 1 needs epsilon < 1)
            raise SpecError(f"spec.certificate: {bound_id} refused the inputs: {error}") from None
        sigma = float(value.certified_upper)
        calibration = {"parameter": "sigma", "value": sigma}
    else:
        sigma = params.sigma
        calibration = {"parameter": None}
    # The exact hockey-stick delta of the Gaussian mechanism of sensitivity 2 C0 (Lemma A.3).
    log_d = log_theta(epsilon=eps, r=2 * params.C0 / sigma, precision="interval", digits=30)
    upper = log_d.b if hasattr(log_d, "b") else log_d
    if not upper <= mpmath.log(mpmath.mpf(repr(delta))):
        raise SpecError(f"spec.algorithm.sigma: {sigma!r} does not reach delta = {delta:g} "
                        f"(exact Gaussian mechanism, sensitivity 2 C0)")
    assumptions = ["release Pi_C0(x_hat) + N(0, sigma^2 I): any two inputs are within 2 C0",
                   *COMMON_ASSUMPTIONS[1:]]
    cert = _issued(bound_id, epsilon=float(eps), delta=delta,
                   inputs={"epsilon": eps, "C0": params.C0, "sigma": sigma},
                   calibration=calibration, assumptions=assumptions,
                   check=f"exact log delta(eps) <= {float(upper):.8g} <= log delta (interval)")
    return cert, sigma


# ----------------------------------------------------------------------------------------------
# Mechanism.


@dataclass(frozen=True)
class KoloskovaMechanism:
    """Unlearned U(A(D), D_r) vs certifying U(A(D_r), D_r) trials as a TrialMechanism.

    Scores: ``loss`` = minus the cross-entropy of each forgotten record; statistics: the final
    parameters (networks up to 5,000 parameters); accuracy on the test split.
    """

    spec_json: str
    config: Any  # empirical.mechanisms.koloskova2025.KoloskovaConfig
    model: str
    forget: tuple[int, ...]
    device: str
    dtype: str

    @property
    def description(self) -> str:
        c = self.config
        return (f"Koloskova et al. 2025 {c.method} on {self.model}: sigma={c.sigma!r}, "
                f"T={c.unlearn_steps}, gamma={c.step_size}, lambda={c.l2}, C0={c.C0}, "
                f"C1={c.C1}, C2={c.C2}, fine-tuning {c.finetune_steps} steps, forget "
                f"{len(self.forget)} rows, noise x{c.noise_multiplier_scale}")

    def fingerprint(self) -> str:
        return repr((dataclasses.astuple(self.config), self.model, self.forget, self.device,
                     self.dtype))

    def run(self, *, seed: int, first_trial: int, n_trials: int, mode: str = "batched") -> Any:
        from empirical.mechanisms.koloskova2025 import run_koloskova

        task = _task(self.spec_json, self.model, self.device, self.dtype)
        return run_koloskova(task, forget=self.forget, config=self.config, n_trials=n_trials,
                             seed=seed, first_trial=first_trial, mode=mode)

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        result = self.run(seed=seed, first_trial=first_trial, n_trials=n_trials)
        small = result.unlearned_params.shape[1] <= PARAMS_STATISTICS_LIMIT
        return TrialBatch(
            support.model_outputs(result.unlearned_forget_losses, result.unlearned_params,
                                  result.unlearned_accuracy, keep_params=small),
            support.model_outputs(result.reference_forget_losses, result.reference_params,
                                  result.reference_accuracy, keep_params=small))


def prepare_koloskova(spec: AuditSpec, *, device: str) -> tuple[Certificate, KoloskovaMechanism]:
    """Certificate and mechanism of a validated spec of one of the three adapters."""
    from empirical.mechanisms.koloskova2025 import KoloskovaConfig

    spec_json = spec.canonical_json()
    data = spec_data(spec_json)
    delta = spec.certificate.resolve_delta(data.dataset.n)
    params = spec.algorithm
    common = {"C0": params.C0, "learn_steps": params.learn_steps,
              "learn_step_size": params.learn_step_size, "finetune_steps": params.finetune_steps,
              "finetune_step_size": params.finetune_step_size,
              "noise_multiplier_scale": params.noise_multiplier_scale}
    if isinstance(params, GradientClippingParams):
        certificate, sigma, steps = gradient_clipping_certificate(spec, delta)
        config = KoloskovaConfig(method="gradient-clipping", sigma=sigma, unlearn_steps=steps,
                                 step_size=params.step_size, l2=params.l2, C1=params.clip,
                                 **common)
    elif isinstance(params, ModelClippingParams):
        certificate, sigma, steps = model_clipping_certificate(spec, delta)
        config = KoloskovaConfig(method="model-clipping", sigma=sigma, unlearn_steps=steps,
                                 step_size=params.step_size, l2=params.l2, C2=params.clip,
                                 sigma0=params.sigma0, **common)
    else:
        certificate, sigma = output_perturbation_certificate(spec, delta)
        config = KoloskovaConfig(method="output-perturbation", sigma=sigma, **common)
    certificate = support.mark_broken(certificate, params.noise_multiplier_scale)
    mechanism = KoloskovaMechanism(spec_json, config, spec.model.name, data.indices, device,
                                   spec.dtype)
    return certificate, mechanism


# ----------------------------------------------------------------------------------------------
# Accuracy against compute budget (the shape of Figure 1 and Table 2).

FIGURE_BUDGETS = (25, 50, 100, 200)
FIGURE_TRIALS = 8


def accuracy_budget_plot(spec: AuditSpec, *, budgets: tuple[int, ...] = FIGURE_BUDGETS,
                         trials: int = FIGURE_TRIALS) -> dict[str, Any]:
    """Mean test accuracy of the spec's method with a total of B gradient steps (T noisy steps +
    B - T fine-tuning) against retraining from scratch with B steps."""
    from empirical.mechanisms.koloskova2025 import run_koloskova, run_retrain_budget

    _, mechanism = prepare_koloskova(spec, device=spec.device if spec.device != "auto" else "cpu")
    task = _task(mechanism.spec_json, mechanism.model, mechanism.device, mechanism.dtype)
    config = mechanism.config
    noisy = config.unlearn_steps if config.method != "output-perturbation" else 0
    method_x, method_y, retrain_y = [], [], []
    for budget in budgets:
        retrain_y.append(run_retrain_budget(task, forget=mechanism.forget, steps=budget,
                                            step_size=config.learn_step_size))
        if budget < noisy:
            continue
        run = run_koloskova(task, forget=mechanism.forget, n_trials=trials, seed=spec.seed,
                            config=dataclasses.replace(config, finetune_steps=budget - noisy))
        method_x.append(budget)
        method_y.append(float(np.mean(run.unlearned_accuracy)))
    return {
        "id": f"{spec.algorithm.name}-accuracy-budget",
        "title": "Accuracy against compute budget (Koloskova et al. Fig. 1 / Table 2 shape)",
        "caption": (f"{config.method} (T = {noisy} noisy steps, sigma = {config.sigma:.4g}, then "
                    f"fine-tuning to the budget; mean of {trials} trials) against retraining "
                    f"from scratch on the retain set with the same number of full-batch "
                    f"gradient steps; model {mechanism.model}."),
        "x_label": "compute budget (gradient steps)", "y_label": "test accuracy",
        "log_x": True, "log_y": False,
        "series": [{"label": config.method, "x": method_x, "y": method_y},
                   {"label": "retrain from scratch", "x": list(budgets), "y": retrain_y}],
    }


# ----------------------------------------------------------------------------------------------
# The adapters.

DEMO_TRIALS = 2000
DEMO_FORGET = 25  # 10% of the 256 digits training rows


def _demo(params: Any, *, trials: int | None, device: str | None, name: str,
          calibrate: str = "sigma") -> AuditSpec:
    return support.demo_audit_spec(
        algorithm=params,
        model=ModelSpec(name="mlp"),
        request=RequestSpec(kind="remove", size=DEMO_FORGET, requests=1, seed=0),
        certificate=CertificateSpec(target_epsilon=1.0, delta=1e-5, calibrate=calibrate,
                                    conversion="balle2020"),
        name=name, trials=trials, default_trials=DEMO_TRIALS, device=device, chunk_size=1000)


class _KoloskovaAdapter(support.AdapterBase):
    models = NETWORK_MODELS
    params_type: type
    parameter_help = _HELP
    demo_params: Any

    def check_spec(self, spec: AuditSpec) -> None:
        if spec.request.kind != "remove" or spec.request.requests != 1:
            raise fail("spec.request", "must be one removal request (kind = 'remove', requests "
                       "= 1): the forget set D_f")
        params, cert = spec.algorithm, spec.certificate
        if cert.target_epsilon is None:
            return
        if cert.calibrate == "sigma" and params.sigma is not None:
            raise fail("spec.algorithm.sigma", "is calibrated from spec.certificate."
                       "target_epsilon: leave it out (or calibrate = 'T' for model clipping)")
        if cert.calibrate == "T" and (params.sigma is None or params.unlearn_steps is not None):
            raise fail("spec.algorithm", "calibrate = 'T' needs sigma given and unlearn_steps "
                       "left out")

    def demo_spec(self, *, trials: int | None = None, device: str | None = None) -> AuditSpec:
        return _demo(self.demo_params, trials=trials, device=device, name=f"demo-{self.name}",
                     calibrate=self.calibratable[-1] if self.demo_params.sigma else "sigma")

    def extra_plots(self, spec: AuditSpec) -> list[dict[str, Any]]:
        return [accuracy_budget_plot(spec)] if spec.algorithm.report_figures else []

    def benchmark_trials(self, *, n_trials: int, device: str, dataset: str = "digits",
                         model: str = "mlp", loop_trials: int | None = None) -> dict[str, Any]:
        """Models per second, batched (vmap over stacked parameters) vs one model per call."""
        return benchmark(self, n_trials=n_trials, device=device, dataset=dataset, model=model,
                         loop_trials=loop_trials)

    def prepare(self, spec: AuditSpec, *, device: str) -> PreparedAudit:
        certificate, mechanism = prepare_koloskova(spec, device=device)
        task = _task(mechanism.spec_json, mechanism.model, device, spec.dtype)
        data = spec_data(mechanism.spec_json)
        return support.prepared_audit(
            spec, certificate=certificate, mechanism=mechanism, device=device, data=data,
            rows_key="forget_rows",
            notes=(f"dataset: {data.dataset.provenance}", f"model: {task.description}",
                   f"mechanism: {mechanism.description}"))


class GradientClippingAdapter(_KoloskovaAdapter):
    description = ("Koloskova et al. 2025 gradient clipping (eq. 3) noisy fine-tuning of a "
                   "network, certified by Theorem A.9")
    params_type = GradientClippingParams
    demo_params = GradientClippingParams(report_figures=True)


class ModelClippingAdapter(_KoloskovaAdapter):
    description = ("Koloskova et al. 2025 model clipping (eq. 4) noisy fine-tuning of a "
                   "network, certified by Theorem 4.2 (adaptive accountant)")
    params_type = ModelClippingParams
    calibratable = ("sigma", "T")
    demo_params = ModelClippingParams(sigma=2.0, report_figures=True)


class OutputPerturbationAdapter(_KoloskovaAdapter):
    description = ("Output perturbation (Koloskova et al. 2025 eq. 1): clipped model + Gaussian "
                   "noise, then fine-tuning; exact Gaussian mechanism")
    params_type = OutputPerturbationParams
    demo_params = OutputPerturbationParams(report_figures=True)


def benchmark(adapter: Any, *, n_trials: int, device: str, dataset: str, model: str,
              loop_trials: int | None) -> dict[str, Any]:
    import torch

    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    spec = adapter.demo_spec(trials=max(2, n_trials), device=device)
    spec = spec.replace(model=ModelSpec(name=model))
    if dataset != "digits":
        spec = spec.replace(dataset=DatasetSpec(name=dataset))
    _, mechanism = prepare_koloskova(spec, device=device)
    # the warm-up trial builds A(D) and A(D_r)
    with support.torch_threads(device):
        timing = support.time_batched_and_loop(mechanism.run, n_trials=n_trials,
                                               loop_trials=loop_trials or 16)
    batched, looped, looped_n = timing.batched, timing.looped, timing.loop_trials
    batched_seconds, loop_seconds = timing.batched_seconds, timing.loop_seconds
    # A(D) and A(D_r) are trained once per call in both modes; the rates count models (two per
    # trial: unlearned and certifying).
    batched_rate = 2 * n_trials / batched_seconds
    loop_rate = 2 * looped_n / loop_seconds
    params = mechanism.config
    bytes_per_model = batched.unlearned_params.shape[1] * batched.unlearned_params.itemsize
    return {
        "model": model, "dataset": spec.dataset.name, "device": device,
        "num_params": int(batched.unlearned_params.shape[1]),
        "torch_threads": 1 if device == "cpu" else torch.get_num_threads(),
        "n_trials": n_trials, "batched_seconds": batched_seconds,
        "batched_models_per_s": batched_rate, "loop_trials_timed": looped_n,
        "loop_seconds": loop_seconds, "loop_models_per_s": loop_rate,
        "speedup": batched_rate / loop_rate,
        "loop_matches_batched": bool(np.array_equal(batched.unlearned_params[:looped_n],
                                                    looped.unlearned_params)),
        "peak_rss_growth_mib_per_model": timing.peak_rss_growth_kib / 1024 / (2 * n_trials),
        "param_bytes_per_model": bytes_per_model,
        "steps_per_model": params.unlearn_steps + params.finetune_steps,
        "note": "per model: T noisy steps + fine-tuning (full-batch retain gradients) and the "
                "evaluation; ru_maxrss growth during the batched call divided by the models",
    }


GRADIENT_CLIPPING = register_adapter(GradientClippingAdapter())
MODEL_CLIPPING = register_adapter(ModelClippingAdapter())
OUTPUT_PERTURBATION = register_adapter(OutputPerturbationAdapter())
