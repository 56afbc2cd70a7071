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
set is the spec's removal request (a random 10% of the rows in the demos); with ``[request]
forget = "worst-case"`` its rows hold the planted record of
:data:`~audits.adapters.koloskova_mechanism.WORST_CASE_RULE` (the theorems allow any start
within C0, so the record pushing the two clipped starts furthest apart), and the
``stated-direction`` attack projects the final parameters on that start difference.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from audits.adapters.base import AdapterBase, DemoSettings, prepared_audit
from audits.adapters.certificates import mark_broken
from audits.adapters.koloskova_mechanism import (
    WORST_CASE_RULE,
    KoloskovaMechanism,
    benchmark,
    worst_case_record,
)
from audits.adapters.protocol import PreparedAudit
from audits.attacks import LIKELIHOOD_RATIO, STATED_DIRECTION
from audits.certify import certify
from audits.fields import SpecError, fail
from audits.protocols import Certificate
from audits.registry import register_adapter
from audits.spec import AuditSpec, CertificateSpec, ModelSpec, RequestSpec
from empirical.mechanisms.koloskova2025_params import (
    NETWORK_MODELS,
    GradientClippingParams,
    ModelClippingParams,
    OutputPerturbationParams,
)
from empirical.mechanisms.parameters import config_from

__all__ = [
    "GRADIENT_CLIPPING",
    "MODEL_CLIPPING",
    "OUTPUT_PERTURBATION",
    "GradientClippingParams",
    "ModelClippingParams",
    "OutputPerturbationParams",
    "prepare_koloskova",
]

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
    """Certificate, sigma and T of eq. (3) by Theorem A.9 (or the tables' noise, erratum K1)."""
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
    """Certificate, sigma and T of eq. (4) by Theorem 4.2 (adaptive accountant or the paper's recursion)."""
    from bounds.hockey_stick import log_upper_end
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
    if not log_delta <= log_upper_end(delta):
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
    """Certificate and sigma of eq. (1): the exact Gaussian mechanism or eq. (1) as printed."""
    import bounds
    from bounds.hockey_stick import log_gaussian_delta, log_upper_end
    from bounds.numerics import interval_endpoints

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
        except bounds.BoundError as error:  # a violated precondition (eq. 1 needs epsilon < 1)
            raise SpecError(f"spec.certificate: {bound_id} refused the inputs: {error}") from None
        sigma = float(value.certified_upper)
        calibration = {"parameter": "sigma", "value": sigma}
    else:
        sigma = params.sigma
        calibration = {"parameter": None}
    # The exact hockey-stick delta of the Gaussian mechanism of sensitivity 2 C0 (Lemma A.3).
    # From the exact inputs: r = 2 C0/sigma is never formed in floating point.
    log_d = log_gaussian_delta(epsilon=eps, sensitivity=2 * Fraction(params.C0), sigma=sigma,
                               digits=30)
    upper = interval_endpoints(log_d)[1]
    if not upper <= log_upper_end(delta):
        raise SpecError(f"spec.algorithm.sigma: {sigma!r} does not reach delta = {delta:g} "
                        f"(exact Gaussian mechanism, sensitivity 2 C0)")
    assumptions = ["release Pi_C0(x_hat) + N(0, sigma^2 I): any two inputs are within 2 C0",
                   *COMMON_ASSUMPTIONS[1:]]
    cert = _issued(bound_id, epsilon=float(eps), delta=delta,
                   inputs={"epsilon": eps, "C0": params.C0, "sigma": sigma},
                   calibration=calibration, assumptions=assumptions,
                   check=f"exact log delta(eps) <= {float(upper):.8g} <= log delta (interval)")
    return cert, sigma


def prepare_koloskova(spec: AuditSpec, *, device: str) -> tuple[Certificate, KoloskovaMechanism]:
    """Certificate and mechanism of a validated spec of one of the three adapters."""
    from empirical.mechanisms.koloskova2025 import KoloskovaConfig

    spec_json = spec.canonical_json()
    data = KoloskovaMechanism.load_data(spec_json, model=spec.model.name, device=device,
                                        dtype=spec.dtype)
    delta = spec.certificate.resolve_delta(data.dataset.n)
    params = spec.algorithm
    # the config takes every field the parameters declare by its name (config_from), and these
    if isinstance(params, GradientClippingParams):
        certificate, sigma, steps = gradient_clipping_certificate(spec, delta)
        config = config_from(KoloskovaConfig, params, method="gradient-clipping", sigma=sigma,
                             unlearn_steps=steps, C1=params.clip)
    elif isinstance(params, ModelClippingParams):
        certificate, sigma, steps = model_clipping_certificate(spec, delta)
        config = config_from(KoloskovaConfig, params, method="model-clipping", sigma=sigma,
                             unlearn_steps=steps, C2=params.clip)
    else:
        certificate, sigma = output_perturbation_certificate(spec, delta)
        config = config_from(KoloskovaConfig, params, method="output-perturbation", sigma=sigma)
    certificate = mark_broken(certificate, params.noise_multiplier_scale)
    mechanism = KoloskovaMechanism(spec_json=spec_json, config=config, device=device,
                                   dtype=spec.dtype, model=spec.model.name, forget=data.indices)
    return certificate, mechanism


# ----------------------------------------------------------------------------------------------
# The adapters.

# The demos: an MLP on digits 3-vs-8 forgets 25 rows (10% of the 256 training rows), certified
# (epsilon, delta) = (1, 1e-5) through Balle et al.'s conversion; 2000 trials.


def _demo(params: Any, *, name: str, calibrate: str = "sigma") -> DemoSettings:
    return DemoSettings(
        params=params, trials=2000, name=name, model=ModelSpec(name="mlp"),
        request=RequestSpec(kind="remove", size=25, requests=1, seed=0),
        certificate=CertificateSpec(target_epsilon=1.0, delta=1e-5, calibrate=calibrate,
                                    conversion="balle2020"),
        chunk_size=1000)


class _KoloskovaAdapter(AdapterBase):
    models = NETWORK_MODELS
    noise_scale_field = "noise_multiplier_scale"
    params_type: type
    worst_case_forget = WORST_CASE_RULE
    extra_attacks = (STATED_DIRECTION.name,)

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

    def extra_plots(self, spec: AuditSpec) -> list[dict[str, Any]]:
        """The accuracy-against-budget figure, when the spec asks for report figures."""
        if not spec.algorithm.report_figures:
            return []
        from audits.reproductions.koloskova2025 import accuracy_budget_plot

        _, mechanism = prepare_koloskova(spec, device=spec.device if spec.device != "auto" else "cpu")
        return [accuracy_budget_plot(mechanism.task(), config=mechanism.config, forget=mechanism.forget,
                                     model=mechanism.model, seed=spec.seed,
                                     name=spec.algorithm.name)]

    def benchmark_trials(self, *, n_trials: int, device: str, dataset: str = "digits",
                         path: str | None = None, model: str = "mlp",
                         loop_trials: int | None = None) -> dict[str, Any]:
        """Models per second, batched (stacked parameter sets) vs one model per call."""
        return benchmark(self, n_trials=n_trials, device=device, dataset=dataset, path=path,
                         model=model, loop_trials=loop_trials)

    def exact_laws(self, spec: AuditSpec, prepared: PreparedAudit) -> Any:
        """Output perturbation without fine-tuning: the clipped deterministic A(D), A(D_r) plus
        the noise (:func:`empirical.mechanisms.koloskova2025.output_perturbation_laws`); the
        noisy fine-tuning methods pass the noise through a network (None)."""
        from empirical.mechanisms.koloskova2025 import output_perturbation_laws

        mechanism: KoloskovaMechanism = prepared.mechanism
        return output_perturbation_laws(mechanism.task(), forget=mechanism.forget,
                                        config=mechanism.config)

    def prepare(self, spec: AuditSpec, *, device: str) -> PreparedAudit:
        certificate, mechanism = prepare_koloskova(spec, device=device)
        task = mechanism.task()
        data = mechanism.data()
        extra: tuple[str, ...] = ()
        if spec.request.forget == "worst-case":
            record = worst_case_record(mechanism.spec_json, mechanism.model, mechanism.device,
                                       mechanism.dtype)
            tried = ", ".join(f"row {r} class {c}: {d:.4g}" for r, c, d in record.candidates)
            extra = (f"worst-case forget set: {WORST_CASE_RULE}. Chosen: row {record.row}'s "
                     f"features with label {record.label:+g} in all {len(data.indices)} forget "
                     f"rows; start distance {record.start_distance:.6g} of the assumed bound "
                     f"2 C0 = {record.bound:g} (start distances of the {record.screened} "
                     f"screened records: {tried})",)
        return prepared_audit(
            spec, certificate=certificate, mechanism=mechanism, device=device, data=data,
            rows_key="forget_rows",
            notes=(f"dataset: {data.dataset.provenance}", f"model: {task.description}",
                   f"mechanism: {mechanism.description}", *extra))


class GradientClippingAdapter(_KoloskovaAdapter):
    """Koloskova et al. 2025 eq. (3), gradient clipping, certified by Theorem A.9."""
    description = ("Koloskova et al. 2025 gradient clipping (eq. 3) noisy fine-tuning of a "
                   "network, certified by Theorem A.9")
    params_type = GradientClippingParams
    scaled_noise = "the step noise N(0, sigma^2 I) of eq. (3)"
    demo = _demo(GradientClippingParams(report_figures=True),
                 name="demo-koloskova-gradient-clipping")


class ModelClippingAdapter(_KoloskovaAdapter):
    """Koloskova et al. 2025 eq. (4), model clipping, certified by Theorem 4.2."""
    description = ("Koloskova et al. 2025 model clipping (eq. 4) noisy fine-tuning of a "
                   "network, certified by Theorem 4.2 (adaptive accountant)")
    params_type = ModelClippingParams
    scaled_noise = "the start noise N(0, sigma0^2 I) and the step noise N(0, sigma^2 I) of eq. (4)"
    calibratable = ("sigma", "T")
    demo = _demo(ModelClippingParams(sigma=2.0, report_figures=True),
                 name="demo-koloskova-model-clipping", calibrate="T")


class OutputPerturbationAdapter(_KoloskovaAdapter):
    """Koloskova et al. 2025 eq. (1), output perturbation: the exact Gaussian mechanism."""
    description = ("Output perturbation (Koloskova et al. 2025 eq. 1): clipped model + Gaussian "
                   "noise, then fine-tuning; exact Gaussian mechanism")
    params_type = OutputPerturbationParams
    scaled_noise = "the output noise N(0, sigma^2 I) of eq. (1)"
    # the likelihood-ratio attack where the released laws are exact (no fine-tuning)
    extra_attacks = (STATED_DIRECTION.name, LIKELIHOOD_RATIO.name)
    demo = _demo(OutputPerturbationParams(report_figures=True), name="demo-output-perturbation")


GRADIENT_CLIPPING = register_adapter(GradientClippingAdapter())
MODEL_CLIPPING = register_adapter(ModelClippingAdapter())
OUTPUT_PERTURBATION = register_adapter(OutputPerturbationAdapter())
