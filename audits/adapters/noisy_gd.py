"""Noisy-GD deletion (Chourasia & Shah 2023, Algorithm 2 and Definition 5.1): the audit adapter.

Owns what the generic audit needs about Noisy-GD: the cross-field checks of its
``[algorithm]`` parameters (declared in :mod:`empirical.mechanisms.chourasia2023_params`),
the data and request of a spec (full batch, one record per request), the certificate
(Theorem 5.1 at the mechanism's sigma, ``chourasia2023:thm5.1/deletion-renyi``:
(q, 4 q L^2/(lam sigma^2 n^2) e^(-K_Abar/(4 kappa)))-data-deletion at every order q,
converted to (epsilon, delta) at the best q), the trial mechanism
(:func:`empirical.mechanisms.chourasia2023.run_noisy_gd`) and the demo spec.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from audits.adapters.base import AdapterBase, DemoSettings, MechanismPlan
from audits.adapters.certificates import broken_note, check_sigma_calibration, delta_label
from audits.adapters.data import SpecData, require_unit_features
from audits.adapters.mechanism import SpecMechanism, time_batched_and_loop, torch_threads
from audits.adapters.protocol import PreparedAudit
from audits.adapters.worst_case import RecordDomain, rule_text
from audits.attacks import LIKELIHOOD_RATIO
from audits.certify import certify
from audits.fields import SpecError, choice, fail
from audits.registry import register_adapter
from audits.spec import AuditSpec, DatasetSpec, ModelSpec
from bounds.numerics import float_down
from empirical.mechanisms.chourasia2023_params import NoisyGDParams
from empirical.mechanisms.parameters import config_from

__all__ = ["ADAPTER", "NoisyGDAdapter", "NoisyGDMechanism"]

BOUND = "chourasia2023:thm5.1/deletion-renyi"
ADAPTIVE_BOUND = "chourasia2023:thm4.3+thm5.1/adaptive-deletion-renyi"


def model_smoothness(model: str) -> Fraction:
    """Smoothness of the per-example loss on unit-norm features (before the l2 term): the
    logistic loss has Hessian sigmoid'(.) x x^T with norm <= 1/4 (the one constant,
    :data:`empirical.models.linear.LOGISTIC_SMOOTHNESS`); the linear loss has none."""
    from empirical.models.linear import LOGISTIC_SMOOTHNESS

    return {"logistic-regression": LOGISTIC_SMOOTHNESS, "linear": Fraction(0)}[model]


# ----------------------------------------------------------------------------------------------
# Data and request of a spec.




# ----------------------------------------------------------------------------------------------
# Certificate.


def theorem51_step_size(*, lam: float, beta: Fraction) -> float:
    """eta = 1/(2(lam + beta)) of Theorem 5.1, rounded down to a float (never above it)."""
    return float_down(1 / (2 * (Fraction(lam) + beta)))


def noisy_gd_certificate(spec: AuditSpec, data: SpecData) -> tuple[Any, float, int, float]:
    """Certificate and the (sigma, K_Abar, beta) the mechanism runs with (Theorem 5.1)."""
    import bounds

    params: NoisyGDParams = spec.algorithm
    cert_spec = spec.certificate
    model_beta = model_smoothness(spec.model.name)
    if spec.model.name == "logistic-regression":
        require_unit_features(data, "for the logistic loss to be 1/4-smooth")
    beta = model_beta if params.beta is None else Fraction(params.beta)
    if beta <= 0:
        raise SpecError("spec.algorithm.beta: the linear loss is beta-smooth for every beta > 0; "
                        "Theorem 5.1 needs one: give beta")
    if beta < model_beta:
        raise SpecError(f"spec.algorithm.beta: {float(beta)} is below the smoothness "
                        f"{float(model_beta)} of the {spec.model.name} loss (Theorem 5.1)")
    n = data.dataset.n
    delta = cert_spec.resolve_delta(n)
    p = params.adaptive_requests
    r = spec.request.size
    expected = ADAPTIVE_BOUND if p else BOUND
    bound = bounds.get(cert_spec.bound or expected)
    if bound.id != expected:
        raise SpecError(f"spec.certificate.bound: this Noisy-GD audit is certified by {expected}; "
                        "leave bound out")
    eta = theorem51_step_size(lam=params.l2, beta=beta)
    inputs: dict[str, Any] = {"L": params.clip, "lam": params.l2, "beta": float(beta), "n": n}
    if p:
        inputs["p"] = p
    assumptions = [
        f"L = clip = {params.clip}: per-example gradients are clipped to norm L (Remark 5.3, "
        "whose Appendix F.1 is not in the seed), so replacing one record moves the full-batch "
        "gradient by at most 2L/n",
        f"beta = {float(beta)}: the {spec.model.name} loss is convex and beta-smooth after "
        f"clipping (max feature norm {data.max_norm:.6g}); lam = {params.l2} > 0",
        f"eta = {eta!r} = 1/(2(lam + beta)) rounded down, and rho = N(0, sigma^2/(lam (1 - eta "
        "lam/2)) I_d): Theorem 5.1's step and initialisation",
        (f"one request editing r = {r} record(s); a removal is a null record (zero loss), which "
         "keeps the loss convex, smooth and Lipschitz"),
        ("the reference is Definition 4.1's per-record map pi(D_0 o <ind, y>) for the request's "
         "first record: Noisy-GD for K_A steps from a fresh rho on D_0 with only that record "
         "replaced, then the request's K_Abar deletion steps on the edited database (the curator "
         "run from data that never held the record, the other edits fixed in advance); the "
         "guarantee of eq. (9) is per record, which is why r is absent from Theorem 5.1, and the "
         "theorem only asserts that some pi exists") if not p else
        (f"p = {p} adaptive requests before the target's, each followed by K_Abar steps; the "
         "requester replaces a record that is not a target by the direction of the model it "
         "saw. The reference is Definition 4.1's pi_i^Q, which sees D_0 with the target "
         "replaced and knows Q: curator and requester interact from that database (the "
         "requester answering the reference's own releases). The proof of Theorem 4.3 (eq. "
         "56) uses another pi; by the same argument this one meets epsilon_dd + p epsilon_dp: "
         "the p releases the requester saw are (q, epsilon_dp)-Rényi DP in the target record, "
         "and conditioned on those releases (hence on the requests they determine) the rest is "
         "the non-adaptive deletion, within epsilon_dd (adaptive composition of Rényi DP)"),
        "the audit tests both directions; Theorem 5.1 is stated for R_q(deleted || pi), and "
        "its ingredients (Rényi DP of learning, contraction of the deletion steps on one "
        "database) are symmetric in the two databases",
        "Theorem 5.1 is a statement only: its proof (Appendix G) is not in the seed",
        "the theorem is stated in exact arithmetic; floating-point rounding of the trial "
        "engine is not accounted for",
    ]
    solve = None if cert_spec.target_epsilon is None else cert_spec.calibrate
    steps = params.unlearn_steps
    run = certify(
        bound, inputs=inputs,
        free={"sigma": params.sigma,
              "K_Abar": None if solve == "K_Abar" else (1 if steps is None else steps)},
        delta=delta, target_epsilon=cert_spec.target_epsilon, solve=solve,
        conversion=cert_spec.conversion, cast=int if solve == "K_Abar" else float,
        assumptions=assumptions,
        derivation=[f"Theorem 5.1 at sigma: epsilon_dp(q) = 4 q L^2/(lam sigma^2 n^2), eq. (16) "
                    "at equality epsilon_dd(q) = epsilon_dp(q) exp(-K_Abar/(4 kappa)), "
                    f"kappa = (lam + beta)/lam; n = {n}"]
        + ([f"Theorem 4.3: epsilon_dd(q) + p epsilon_dp(q) with p = {p} releases seen by the "
            "requester"] if p else []),
        delta_label=delta_label(cert_spec),
        extra_provenance=broken_note(params.noise_multiplier_scale))
    return run.certificate, float(run.values["sigma"]), int(run.values["K_Abar"]), eta


# ----------------------------------------------------------------------------------------------
# Mechanism.


@dataclass(frozen=True)
class NoisyGDMechanism(SpecMechanism):
    """Noisy-GD learn -> delete and the reference run as a
    :class:`~audits.protocols.TrialMechanism`.

    Scores: ``loss`` = minus the loss of the replaced record (original record); statistics:
    ``params`` = the final parameters; accuracy on the test split. ``config`` is an
    empirical.mechanisms.chourasia2023.NoisyGDConfig.
    """

    model: str
    runner = "empirical.mechanisms.chourasia2023:run_noisy_gd"
    # One intra-op thread measured ~30x less CPU time for 1000 demo trials on two shared cores
    # than several spin-waiting ones.
    one_torch_thread = True
    work_fields: ClassVar[dict[str, int]] = {"learn_steps": 2, "unlearn_steps": 1}
    work_unit: ClassVar[str] = "gradient steps"
    adaptive_requests: int = 0

    @property
    def description(self) -> str:
        """One line naming the mechanism and its numbers, for the report's notes."""
        c = self.config
        return (f"Noisy-GD (Chourasia & Shah 2023, Algorithm 2 / Definition 5.1) on {self.model}: "
                f"sigma={c.sigma!r}, eta={c.step_size!r}, K_A={c.learn_steps}, "
                f"K_Abar={c.unlearn_steps}, lambda={c.l2}, L={c.clip}, "
                f"adaptive requests={self.adaptive_requests}, noise x{c.noise_multiplier_scale}")

    def fingerprint(self) -> str:
        """Key of the chunk store (config, model, device, dtype, adaptive requests)."""
        return repr((dataclasses.astuple(self.config), self.model, self.device, self.dtype,
                     self.adaptive_requests, *self.planted_key()))

    def runner_arguments(self, data: Any) -> dict[str, Any]:
        """The loss (the linear model's, or None: logistic), the adaptive requester (it
        overwrites the last records that no request targets) and the reference record."""
        from empirical.mechanisms.chourasia2023 import LinearLoss, PublishedDirectionRequester

        requester = None
        if self.adaptive_requests:
            free = [i for i in range(data.dataset.n - 1, -1, -1) if i not in data.indices]
            requester = PublishedDirectionRequester(tuple(free[:self.adaptive_requests]))
        return {"model": LinearLoss(data.dataset.dim) if self.model == "linear" else None,
                "requester": requester, "adaptive_requests": self.adaptive_requests,
                "reference_record": self.reference_record(data)}

    def reference_record(self, data: Any) -> int | None:
        """Definition 4.1's per-record reference (the request's first record) for r > 1; at
        r = 1 it is the retrained curator (None)."""
        return 0 if not self.adaptive_requests and len(data.indices) > 1 else None


# ----------------------------------------------------------------------------------------------
# The adapter.

RECORD_ASSUMPTION = ("Theorem 5.1 (Chourasia & Shah 2023): gradients clipped to norm L (Remark "
                    "5.3) whatever the record; for the logistic model features of norm <= 1 (the "
                    "loss is 1/4-smooth) and a label of the data (+-1); for the linear loss, "
                    "which is smooth for every beta, features within the data's largest norm")


def record_domain(model: str, data: SpecData) -> RecordDomain:
    """The records Theorem 5.1 covers on ``model``: the certificate reads the data only through
    n and this domain, so a planted record of it leaves the certificate as it is. The linear
    loss needs no feature bound (clipping gives the Lipschitz constant; it is smooth for every
    beta), so its records stay within the data's own largest norm."""
    bound = 1.0 if model == "logistic-regression" else float(data.max_norm)
    return RecordDomain(norm_bound=bound, assumption=RECORD_ASSUMPTION)


class NoisyGDAdapter(AdapterBase):
    """Noisy-GD deletion (Chourasia & Shah 2023, Definition 5.1) certified by Theorem 5.1."""

    description = ("Noisy-GD deletion (Chourasia & Shah 2023, Alg. 2 / Def. 5.1), certified by "
                   "Theorem 5.1 (statement only; proof not in the seed)")
    params_type = NoisyGDParams
    mechanism_type = NoisyGDMechanism
    noise_scale_field = "noise_multiplier_scale"
    scaled_noise = ("the step noise N(0, 2 eta sigma^2 I) of learning, deletion and retraining, and "
                    "the start rho when it is derived from sigma")
    # The demo: digits 3-vs-8 logistic regression, calibrated to (epsilon, delta) = (1, 1/n).
    # Clipping at L = 0.05 is active on every record and the flip replacement reverses the record's
    # gradient, so the two databases' gradients differ by the full 2L/n the theorem allows; one
    # deletion step (K_Abar = 1) keeps the deletion visible.
    demo = DemoSettings(params=NoisyGDParams(unlearn_steps=1, learn_steps=12, l2=1.0, clip=0.05),
                                trials=10000, name="demo-noisy-gd",
                                model=ModelSpec(name="logistic-regression"))
    models = ("logistic-regression", "linear")
    # the likelihood-ratio attack where the output laws are exact (see exact_laws)
    extra_attacks = (LIKELIHOOD_RATIO.name,)
    calibratable = ("sigma", "K_Abar")
    bench_bound = BOUND
    bench_point: ClassVar[dict[str, Any]] = {
        "q": 10.0, "sigma": 0.01, "L": 1.0, "lam": 1.0, "beta": 0.25, "n": 1000, "K_Abar": 1,
    }
    bench_reproduction = "chourasia2023:footnote5"
    worst_case_forget = rule_text(RECORD_ASSUMPTION)

    def check_spec(self, spec: AuditSpec) -> None:
        """Cross-field rules: one request (r >= 1 records; r = 1 with an adaptive requester), and
        the usual sigma / K_Abar calibration rules."""
        request = spec.request
        if request.requests != 1:
            raise fail("spec.request", "Noisy-GD is audited on one request (of r >= 1 records): "
                       "the reference of Definition 4.1 is built for that request")
        if request.size != 1 and spec.algorithm.adaptive_requests:
            raise fail("spec.request", "an adaptive requester is audited with one record per "
                       "request (r = 1): the per-record reference of a larger request under "
                       "adaptive requests is not built")
        check_sigma_calibration(spec, steps=("K_Abar", "unlearn_steps"))
        if spec.certificate.target_epsilon is None:
            return
        choice(spec.model.name, "spec.model.name", self.models)


    def benchmark_trials(self, *, n_trials: int, device: str, dataset: str = "digits",
                         path: str | None = None, loop_trials: int = 64) -> dict[str, Any]:
        """``unlearn bench trials --algorithm noisy-gd``: the demo mechanism batched over
        ``n_trials`` against the same trials one at a time (the first ``loop_trials`` of them,
        whose numbers must be identical), timed side by side."""

        import torch

        from empirical.benchmarks.trials import CPU_BENCH_THREADS

        if n_trials < 1:
            raise ValueError(f"n_trials must be >= 1, got {n_trials}")
        spec = self.demo_spec(trials=max(4, n_trials), device=device)  # a spec holds >= 4 trials
        spec = spec.replace(dataset=DatasetSpec(name=dataset, path=path))
        mechanism = self.prepare(spec, device=device).mechanism
        with torch_threads(device, CPU_BENCH_THREADS):  # as the PNSGD benchmark
            timing = time_batched_and_loop(mechanism.run_trials, n_trials=n_trials,
                                                   loop_trials=loop_trials)
            threads = torch.get_num_threads()
        identical = all(
            np.array_equal(getattr(timing.batched, side).statistics["params"][:timing.loop_trials],
                           getattr(timing.looped, side).statistics["params"])
            for side in ("unlearned", "retrained"))
        return {"device": device, "dataset": dataset, "torch_threads": threads,
                "mechanism": mechanism.description, **timing.rates(),
                "loop_matches_batched": identical}

    def exact_laws(self, spec: AuditSpec, prepared: PreparedAudit) -> Any:
        """On the linear loss without an adaptive requester: the closed-form linear-Gaussian
        laws (:func:`empirical.mechanisms.chourasia2023.noisy_gd_gaussian_laws`); else None
        (the logistic loss makes the steps nonlinear; the requester reads the releases)."""
        from empirical.mechanisms.chourasia2023 import noisy_gd_gaussian_laws

        mechanism: NoisyGDMechanism = prepared.mechanism
        if mechanism.model != "linear" or mechanism.adaptive_requests:
            return None
        data = mechanism.data()
        return noisy_gd_gaussian_laws(data.dataset, data.request, config=mechanism.config,
                                      reference_record=mechanism.reference_record(data))

    def plan(self, spec: AuditSpec, data: SpecData) -> MechanismPlan:
        """Certificate (Theorem 5.1, or 4.3 + 5.1 for an adaptive requester) and config of a
        validated spec."""
        from empirical.mechanisms.chourasia2023 import NoisyGDConfig

        certificate, sigma, steps, eta = noisy_gd_certificate(spec, data)
        params: NoisyGDParams = spec.algorithm
        config = config_from(NoisyGDConfig, params, step_size=eta, sigma=sigma,
                             unlearn_steps=steps)
        return MechanismPlan(certificate, config, {"model": spec.model.name,
                                                   "adaptive_requests": params.adaptive_requests})

    def domain_for(self, spec: AuditSpec, data: SpecData) -> RecordDomain:
        """The records Theorem 5.1 covers on the spec's model (:func:`record_domain`)."""
        return record_domain(spec.model.name, data)


ADAPTER = register_adapter(NoisyGDAdapter())
