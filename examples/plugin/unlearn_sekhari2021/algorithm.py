"""Sekhari et al. 2021, Algorithm 2 as an audit: the mechanism (batched trials on the shared
empirical machinery) and the adapter ``sekhari2021-newton`` (entry point
``unlearn_verify.algorithms``).

The model is L2-regularised logistic regression, f(w, (x, y)) = log(1 + exp(-y w.x)) +
(lambda/2) ||w||^2 on features of norm <= 1: lambda-strongly convex; L = 2 (||grad f|| <= ||x|| +
lambda ||w|| on the ball ||w|| <= 1/lambda, which holds every minimiser); M = 1/10 >= 1/(6 sqrt 3),
the largest |d^3/dt^3 log(1 + e^-t)|. Learning and retraining minimise the empirical loss by
Newton's method to rounding; unlearning is one Newton step with the retained Hessian, and each
published model gets N(0, sigma^2 I).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from audits.adapters.base import AdapterBase, DemoSettings, MechanismPlan
from audits.adapters.certificates import delta_label, mark_broken
from audits.adapters.mechanism import SpecMechanism
from audits.adapters.worst_case import RecordDomain
from audits.attacks import DEFAULT_ATTACKS, LIKELIHOOD_RATIO
from audits.certify import certify
from audits.fields import fail
from audits.spec import CertificateSpec, RequestSpec
from empirical.mechanisms.parameters import (
    AlgorithmParameters,
    config_from,
    noise_scale,
    parameter,
    positive,
)
from unlearn_sekhari2021.bound import RENYI

L_LOGISTIC, M_LOGISTIC = 2, Fraction(1, 10)
NEWTON_STEPS = 60  # from w = 0, Newton's method on this loss reaches rounding in about ten


@dataclass(frozen=True)
class SekhariConfig:
    """The mechanism's numbers: lambda, the output noise sigma, and a factor on that noise."""

    lam: float
    sigma: float
    noise_multiplier_scale: float = 1.0


def _minimise(model: Any, version: Any, lam: float, start: Any = None, steps: int = NEWTON_STEPS):
    """Newton's method on (1/sum weights) sum_i w_i l_i(w) + (lam/2)||w||^2 ([1, d] rows)."""
    import torch

    x, y, weight = version.features[None], version.labels[None], version.weights[None]
    count, eye = version.weights.sum(), torch.eye(model.dim, dtype=x.dtype, device=x.device)
    w = torch.zeros((1, model.dim), dtype=x.dtype, device=x.device) if start is None else start
    for _ in range(steps):
        gradient = model.data_gradient_sum(w, x, y, weight, clip=None) / count + lam * w
        if start is None and float(gradient.abs().max()) <= 1e-13:  # a minimiser, to rounding
            return w
        hessian = model.data_hessian_sum(w, x, y, weight)[0] / count + lam * eye
        w = w - torch.linalg.solve(hessian, gradient[0])[None]
        if start is not None:  # unlearning: exactly one step (Algorithm 2)
            return w
    raise ValueError(f"Newton's method did not reach the minimiser in {steps} steps (lam={lam})")


def newton_removal(dataset: Any, request: Any, *, config: SekhariConfig, options: Any):
    """(setup, w_bar, w_hat') of one removal: the Newton-step model and the retrained one."""
    from empirical.mechanisms.common import prepare_mechanism

    setup = prepare_mechanism(dataset, request, options)
    full, retained = setup.versions[0], setup.versions[-1]
    w_hat = _minimise(setup.model, full, config.lam)
    # One Newton step on the retained loss from w_hat, with the retained Hessian at w_hat: the
    # paper's (1/(n-m)) H^-1 sum_U grad f(w_hat, z) as grad F(w_hat) = 0 makes them equal.
    w_bar = _minimise(setup.model, retained, config.lam, start=w_hat)
    return setup, w_bar, _minimise(setup.model, retained, config.lam)


def run_sekhari(dataset: Any, request: Any, *, config: SekhariConfig, options: Any) -> Any:
    """Trials of Algorithm 2: w_bar + N(0, s^2 I) against w_hat' + N(0, s^2 I), s = sigma x
    scale; trial i's noise depends only on (seed, i), so batched and looped runs agree."""
    from empirical.mechanisms.common import TrialResult, evaluate, result_fields

    setup, w_bar, w_retrained = newton_removal(dataset, request, config=config, options=options)
    std, dim = config.sigma * config.noise_multiplier_scale, setup.model.dim

    def pipeline(random: Any) -> dict[str, Any]:
        unlearned = w_bar + random.normal("noise/unlearn", (dim,)) * std
        retrained = w_retrained + random.normal("noise/retrain", (dim,)) * std
        return {**evaluate(setup.model, "unlearned", unlearned, setup.sets),
                **evaluate(setup.model, "retrained", retrained, setup.sets)}

    outputs = setup.run(pipeline, bytes_per_trial=64 * (dim + dataset.n))
    return TrialResult(**result_fields(setup, outputs))


@dataclass(frozen=True)
class SekhariParams(AlgorithmParameters):
    """Algorithm 2's hyper-parameters, declared once (help and checks in the field metadata)."""

    name: ClassVar[str] = "sekhari2021-newton"
    lam: float = parameter(0.1, help="lambda: loss mean log(1 + e^-yw.x) + (lambda/2)||w||^2",
                           check=positive("a positive number (lambda, the strong convexity)"))
    sigma: float | None = parameter(None, help="output noise per coordinate; left out: "
                                    "calibrated", check=positive(optional=True))
    noise_multiplier_scale: float = noise_scale()


@dataclass(frozen=True)
class SekhariMechanism(SpecMechanism):
    """Algorithm 2's trials on a spec's data (scores: minus the forgotten records' losses)."""

    fingerprint_tag = "sekhari2021"
    runner = "unlearn_sekhari2021.algorithm:run_sekhari"

    @property
    def description(self) -> str:
        """One line for the report's notes."""
        c = self.config
        return (f"Sekhari et al. 2021 Algorithm 2 (one Newton step, output noise): lambda={c.lam!r}"
                f", sigma={c.sigma!r}, noise x{c.noise_multiplier_scale}")


class SekhariAdapter(AdapterBase):
    """Algorithm 2 certified by gamma and the Gaussian mechanism's Rényi curve."""

    description = ("Sekhari et al. 2021 (plug-in): one Newton step with the retained Hessian + "
                   "Gaussian noise, on logistic regression")
    params_type = SekhariParams
    mechanism_type = SekhariMechanism
    unit_features = "for L = 2 and M = 1/10"
    # gamma holds for any record of norm <= 1 with a label +-1: a planted worst case keeps it
    record_domain = RecordDomain(norm_bound=1.0, assumption="gamma (Sekhari et al. 2021, "
                                 "Algorithm 2): features of norm <= 1 and a label of the data")
    # the output laws are exact Gaussians (exact_laws): the demo runs the likelihood-ratio test
    demo = DemoSettings(params=SekhariParams(), trials=20000, name="sekhari2021-demo",
                        request=RequestSpec(kind="remove", indices=(0,)),
                        certificate=CertificateSpec(target_epsilon=1.0, delta="1/n"),
                        attacks=(*DEFAULT_ATTACKS, LIKELIHOOD_RATIO.name))
    noise_scale_field = "noise_multiplier_scale"
    scaled_noise = "the output noise N(0, sigma^2 I) of the unlearned and the retrained model"
    extra_attacks = (LIKELIHOOD_RATIO.name,)

    def exact_cases(self) -> tuple[Any, ...]:
        """The one small instance ``unlearn bench exact`` runs (:func:`exact_case`)."""
        return (exact_case,)

    def check_spec(self, spec: Any) -> None:
        """One removal request, sigma given or calibrated (not both), double precision."""
        if spec.request.kind != "remove" or spec.request.requests != 1:
            raise fail("spec.request", "must be one removal request (kind = 'remove')")
        if (spec.certificate.target_epsilon is None) == (spec.algorithm.sigma is None):
            raise fail("spec.algorithm.sigma", "give sigma or spec.certificate.target_epsilon")
        if spec.certificate.bound not in (None, RENYI.id):
            raise fail("spec.certificate.bound", f"must be {RENYI.id!r}")
        if spec.dtype != "float64":
            raise fail("spec.dtype", "must be 'float64' (Newton's method to rounding)")

    def plan(self, spec: Any, data: Any) -> MechanismPlan:
        """The certificate (sigma calibrated or given) and the mechanism's numbers."""
        params, cert, n = spec.algorithm, spec.certificate, data.dataset.n
        run = certify(RENYI, inputs={"L": L_LOGISTIC, "M": M_LOGISTIC, "lam": Fraction(params.lam),
                                     "m": spec.request.size, "n": n},
                      free={"sigma": params.sigma}, delta=cert.resolve_delta(n),
                      target_epsilon=cert.target_epsilon,
                      solve=None if cert.target_epsilon is None else "sigma",
                      conversion=cert.conversion, delta_label=delta_label(cert),
                      assumptions=[__doc__.split("\n\n")[1].replace("\n", " ")])
        config = config_from(SekhariConfig, params, sigma=float(run.values["sigma"]))
        return MechanismPlan(mark_broken(run.certificate, params.noise_multiplier_scale), config)

    def exact_laws(self, spec: Any, prepared: Any) -> Any:
        """N(w_bar, s^2 I) and N(w_hat', s^2 I): only the output noise is random."""
        import torch

        from empirical.divergences.gaussian_laws import GaussianLaws
        from empirical.mechanisms.common import TrialOptions

        mechanism, data = prepared.mechanism, prepared.mechanism.data()
        config = mechanism.config
        std = config.sigma * config.noise_multiplier_scale
        if std <= 0:
            return None
        options = TrialOptions(n_trials=1, seed=0, device=mechanism.device,
                               dtype=getattr(torch, mechanism.dtype), retain_scores=1)
        _, w_bar, w_retrained = newton_removal(data.dataset, data.request, config=config,
                                               options=options)
        return GaussianLaws(unlearned_mean=w_bar[0].cpu().numpy().astype(np.float64),
                            retrained_mean=w_retrained[0].cpu().numpy().astype(np.float64),
                            variance=std**2, method="deterministic Newton models plus N(0, s^2 I)",
                            assumptions=("the noise is added in exact arithmetic",))


def exact_case() -> Any:
    """``unlearn bench exact``: four records in one dimension (lambda = 1, record 0 removed),
    w_bar and w_hat' by scalar Newton steps in float64; the laws are N(w_bar, sigma^2) and
    N(w_hat', sigma^2) on a grid."""
    from audits.exact_truth import ExactCase, renyi_certificate
    from empirical.exact_laws.grid import Grid, gaussian_law

    x, y, lam, sigma, delta = np.array([1.0, -0.5, 0.8, 0.3]), np.array([1, -1, -1, 1.0]), 1.0, 0.1, 1e-3

    def step(w: float, keep: slice) -> float:  # Newton on mean log(1 + e^-ywx) + lam w^2 / 2
        s = 1 / (1 + np.exp(y[keep] * x[keep] * w))
        grad = np.mean(-y[keep] * x[keep] * s) + lam * w
        return w - grad / (np.mean(x[keep] ** 2 * s * (1 - s)) + lam)

    w_hat, w_ret = 0.0, 0.0
    for _ in range(NEWTON_STEPS):
        w_hat, w_ret = step(w_hat, slice(None)), step(w_ret, slice(1, None))
    w_bar = step(w_hat, slice(1, None))
    lo, hi = min(w_bar, w_ret) - 14 * sigma, max(w_bar, w_ret) + 14 * sigma
    inputs = {"L": L_LOGISTIC, "M": M_LOGISTIC, "lam": lam, "m": 1, "n": 4, "sigma": sigma}
    return ExactCase(
        "sekhari2021-newton", {"x": x.tolist(), "y": y.tolist(), "forget": 0, "lambda": lam,
                               "sigma": sigma}, lambda size: tuple(
            gaussian_law(Grid(lo, hi, size, False), mean=m, variance=sigma**2)
            for m in (w_bar, w_ret)), 801, delta,
        (renyi_certificate(RENYI.id, inputs=inputs, delta=delta),), label="one removal of four")


ADAPTER = SekhariAdapter()
__all__ = ["ADAPTER", "SekhariAdapter", "SekhariConfig", "SekhariMechanism", "SekhariParams",
           "newton_removal", "run_sekhari"]
