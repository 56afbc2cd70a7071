"""Delete-to-Descent (Neel, Roth, Sharifi-Malvajerdi 2021) on a linear model: the audit adapter.

D2D publishes noisy copies of gradient-descent iterates (seed 000, App. N.3 Algorithms 2-3).
Its theorems give the output-noise standard deviation sigma for a target (epsilon, delta)
directly (seed 000 App. O: Theorem O.1 = ``neel2021:thm9`` with the non-private internal state,
Theorem O.2 = ``neel2021:thm28`` without it), not a Rényi curve, so the certificate is the
target itself once sigma is at least the theorem's value: sigma is the bound engine's rigorous
interval upper end (more noise is the safe side), and every iteration count (learning T, the
least I of eq. (94), the per-request I + log(log(4 d i/delta))/log(1/gamma)) is the ceiling
of the interval upper end of its declared bound. ``audits.certify.certify`` handles Rényi
bounds only, so this adapter assembles the :class:`~audits.protocols.Certificate` itself with
the same provenance fields.

The theorems are stated for add/remove adjacency; a removal is served as a null record (weight
0, n kept), the "replace by a null point" reading. Replacement requests are what seed 000 runs
("for simplicity and fair comparison"), but the theorems do not certify them, so the spec must
say ``adjacency = "paper"`` to run one, and the report says the certificate is not a theorem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from audits.adapters.base import AdapterBase, DemoSettings, MechanismPlan
from audits.adapters.certificates import mark_broken
from audits.adapters.data import SpecData
from audits.adapters.mechanism import SpecMechanism
from audits.adapters.protocol import PreparedAudit
from audits.adapters.worst_case import RecordDomain
from audits.attacks import DEFAULT_ATTACKS, LIKELIHOOD_RATIO
from audits.fields import SpecError, fail
from audits.protocols import Certificate
from audits.registry import register_adapter
from audits.spec import AuditSpec, CertificateSpec, RequestSpec
from bounds.numerics import float_up
from empirical.mechanisms.neel2021_params import D2DParams
from empirical.mechanisms.parameters import config_from

__all__ = ["ADAPTER", "D2DAdapter", "D2DMechanism", "d2d_plan"]

VARIANT_BOUNDS = {"internal-state": "neel2021:thm9", "no-internal-state": "neel2021:thm28"}
# What Theorems O.1/O.2 assume of a record: the certificate reads the data only through n, d
# and this domain, so a planted record of it leaves the certificate as it is.
RECORD_DOMAIN = RecordDomain(
    norm_bound=1.0, assumption="Theorems O.1/O.2 (Neel et al. 2021, Chien et al. 2024, App. O): features "
    "of norm <= 1 (the logistic loss is 1/4-smooth, L = 1/4 + lambda) and a label of the data "
    "(+-1); the clipped gradients have norm <= M whatever the record")


def _upper(bound_id: str, **params: Any) -> Fraction:
    """Rigorous upper end of a declared bound (interval arithmetic, preconditions checked)."""
    import bounds

    evaluation = bounds.get(bound_id).evaluate(precision="interval", **params)
    return Fraction(evaluation.certified_upper)  # a float rounded up: exact as a Fraction


def _ceil_upper(bound_id: str, **params: Any) -> int:
    return max(1, math.ceil(_upper(bound_id, **params)))


@dataclass(frozen=True)
class D2DPlan:
    """The numbers a D2D run uses and the certificate they carry."""

    certificate: Certificate
    step_size: float
    noise_std: float
    learn_iterations: int
    unlearn_iterations: tuple[int, ...]
    internal_state: bool


def d2d_plan(*, variant: str, epsilon: float, delta: float, n: int, d: int, l2: float,
             clip: float, radius: float, requests: int = 1, noise_std: float | None = None,
             unlearn_iterations: int | None = None, learn_iterations: int | None = None,
             extra_assumptions: tuple[str, ...] = ()) -> D2DPlan:
    """sigma, T, I per request and the certificate of D2D at (epsilon, delta) (Theorems O.1/O.2).

    Everything is read off the declared bounds at exact inputs: m = lambda, L = 1/4 + lambda,
    M = clip. A given ``noise_std`` below the theorem's sigma, or a T or I below the least
    admissible, raises :class:`SpecError`.
    """
    import bounds
    from empirical.models.linear import logistic_constants

    bound_id = VARIANT_BOUNDS[variant]
    m, L, _ = logistic_constants(Fraction(l2))
    common = {"epsilon": Fraction(epsilon), "delta": Fraction(delta), "M": Fraction(clip),
              "m": m, "L": L}
    if variant == "internal-state":
        least_i = 1
    else:
        least_i = _ceil_upper("neel2021:thm28/iterations", epsilon=common["epsilon"],
                              delta=common["delta"], m=m, L=L, d=d)
    base_i = least_i if unlearn_iterations is None else int(unlearn_iterations)
    if base_i < least_i:
        raise SpecError(f"spec.algorithm.unlearn_iterations: Theorem O.2 (eq. 94) needs I >= "
                        f"{least_i} at this target, got {base_i}")
    least_t = _ceil_upper("neel2021:thm9/learning-iterations", M=common["M"], m=m, L=L, n=n,
                          I=base_i, R=Fraction(radius))
    T = least_t if learn_iterations is None else int(learn_iterations)
    if T < least_t:
        raise SpecError(f"spec.algorithm.learn_iterations: Theorems O.1/O.2 need T >= {least_t} "
                        f"(T >= I + log(2Rmn/(2M))/log(1/gamma)), got {T}")
    inputs = {**common, "n": n, "I": base_i, "T": T, "R": Fraction(radius)}
    if variant == "no-internal-state":
        inputs["d"] = d
    sigma_upper = _upper(bound_id, **inputs)
    sigma_needed = float_up(sigma_upper)
    sigma = sigma_needed if noise_std is None else float(noise_std)
    if sigma < sigma_needed:
        raise SpecError(f"spec.algorithm.noise_std: {bound_id} needs sigma >= {sigma_needed!r} "
                        f"at (epsilon, delta) = ({epsilon}, {delta}), got {sigma}")
    if variant == "no-internal-state":
        per_request = tuple(
            _ceil_upper("neel2021:thm28/request-iterations", epsilon=common["epsilon"],
                        delta=common["delta"], m=m, L=L, d=d, I=base_i, i=i)
            for i in range(1, requests + 1))
    else:
        per_request = (base_i,) * requests
    step = 2.0 / float(L + m)
    bound = bounds.get(bound_id)
    assumptions = [
        "m = lambda and L = 1/4 + lambda: the clipped logistic loss is convex and 1/4-smooth on "
        "features of norm <= 1, plus lambda/2 ||w||^2",
        "M = clip: every clipped data gradient has norm <= M",
        f"eta = 2/(L + m) = {step!r} (float rounding of the exact value)",
        f"R = {radius}: every step projects onto C_R; learning starts at 0, inside C_R",
        f"T = {T} learning iterations (least admissible {least_t}); I per request "
        f"{list(per_request)}",
        "the noise N(0, sigma^2 I_d) is added once per publication (output perturbation); "
        + ("the server fine-tunes its noiseless parameters (internal state, Theorem O.1)"
           if variant == "internal-state" else
           "the server fine-tunes the published noisy parameters (Theorem O.2)"),
        "retraining is the learning algorithm on the final dataset, published with fresh noise",
        *extra_assumptions,
        "the theorems are stated in exact arithmetic; floating-point rounding is not accounted "
        "for",
    ]
    certificate = Certificate(
        epsilon=float(epsilon), delta=float(delta), bound=bound_id, alpha=None, conversion=None,
        calibration={"parameter": "sigma", "value": sigma_needed, "target_epsilon": epsilon,
                     "rule": "interval upper end of the theorem's sigma, rounded up"},
        inputs={**{k: v if isinstance(v, int) else float(v) for k, v in inputs.items()},
                "sigma": sigma,
                "step_size": step, "iterations_per_request": list(per_request)},
        provenance={**bound.provenance(), "audit_assumptions": assumptions,
                    "guarantee": "(epsilon, delta)-unlearning for sigma >= the theorem's value"},
    )
    return D2DPlan(certificate, step, sigma, T, per_request, variant == "internal-state")


@dataclass(frozen=True)
class D2DMechanism(SpecMechanism):
    """D2D learn -> unlearn and retrain as a :class:`~audits.protocols.TrialMechanism`.

    Scores: ``loss`` = minus the logistic loss of each forgotten record; statistics: the
    published parameters; accuracy on the test split.
    """

    fingerprint_tag = "d2d"
    runner = "empirical.mechanisms.neel2021:run_d2d"
    work_fields: ClassVar[dict[str, int]] = {"learn_iterations": 2, "unlearn_iterations": 1}
    work_unit: ClassVar[str] = "full-batch gradient steps"
    # config is an empirical.mechanisms.neel2021.D2DConfig

    @property
    def description(self) -> str:
        """One line naming the mechanism and its numbers, for the report's notes."""
        c = self.config
        return (f"D2D (Neel et al. 2021; Chien et al. 2024, App. O), internal_state={c.internal_state}: "
                f"sigma={c.noise_std!r}, eta={c.step_size!r}, T={c.learn_iterations}, "
                f"I={c.unlearn_iterations}, lambda={c.l2}, M={c.clip}, R={c.radius}, "
                f"noise x{c.noise_multiplier_scale}")



class D2DAdapter(AdapterBase):
    """Delete-to-Descent certified by Theorem O.1 (internal state) or O.2 (none)."""

    description = ("Delete-to-Descent (Neel et al. 2021) on logistic regression, output noise "
                   "from Theorem O.1 (internal state) or O.2 (none), Chien et al. 2024, App. O")
    params_type = D2DParams
    mechanism_type = D2DMechanism
    record_domain = RECORD_DOMAIN
    unit_features = "for L = 1/4 + lambda"
    noise_scale_field = "noise_multiplier_scale"
    scaled_noise = ("the output noise N(0, sigma^2 I) added to every published model (learned, "
                    "unlearned and retrained)")
    # The demo: internal state on digits 3-vs-8, one removal, (epsilon, delta) = (1, 1/n).
    # lambda = 1 gives gamma = 1/9, so the theorems' least T is a handful of steps; clipping at
    # M = 0.05 keeps every per-example gradient at the Lipschitz bound.
    # With the internal state from the point 0 the output laws are exactly Gaussian, so the demo
    # runs their likelihood-ratio test beside the loss and projection attacks.
    demo = DemoSettings(params=D2DParams(), trials=20000, name="d2d-demo",
                        request=RequestSpec(kind="remove", indices=(0,)),
                        certificate=CertificateSpec(target_epsilon=1.0, delta="1/n",
                                                    calibrate="sigma"),
                        attacks=(*DEFAULT_ATTACKS, LIKELIHOOD_RATIO.name))
    # the likelihood-ratio attack where the output laws are exact (see exact_laws)
    extra_attacks = (LIKELIHOOD_RATIO.name,)

    def check_spec(self, spec: AuditSpec) -> None:
        """Cross-field rules: a target is required, sigma is calibrated, one record per update, removals
        unless adjacency = 'paper'."""
        params, cert = spec.algorithm, spec.certificate
        if cert.target_epsilon is None:
            raise fail("spec.certificate.target_epsilon", "is required: D2D's theorems give "
                       "sigma for a target (epsilon, delta)")
        if cert.calibrate != "sigma":
            raise fail("spec.certificate.calibrate", "D2D calibrates sigma only")
        if cert.bound is not None and cert.bound != VARIANT_BOUNDS[params.variant]:
            raise fail("spec.certificate.bound", f"the {params.variant} variant is certified by "
                       f"{VARIANT_BOUNDS[params.variant]}; leave bound out")
        if spec.request.size != 1:
            raise fail("spec.request.size", "D2D's theorems handle one record per update")
        if spec.request.kind == "replace" and params.adjacency != "paper":
            raise fail("spec.request.kind", "D2D's theorems are for add/remove adjacency: use "
                       "'remove', or set spec.algorithm.adjacency = 'paper' to run Chien et al. 2024's "
                       "uncertified replacement reading")


    def exact_laws(self, spec: AuditSpec, prepared: PreparedAudit) -> Any:
        """With the internal state from the point 0: the deterministic descents plus the
        publication noise (:func:`empirical.mechanisms.neel2021.d2d_gaussian_laws`); else None."""
        import torch

        from empirical.mechanisms.common import TrialOptions
        from empirical.mechanisms.neel2021 import d2d_gaussian_laws

        mechanism: D2DMechanism = prepared.mechanism
        data = mechanism.data()
        options = TrialOptions(n_trials=1, seed=0, device=mechanism.device,
                               dtype=getattr(torch, mechanism.dtype), retain_scores=1)
        return d2d_gaussian_laws(data.dataset, data.request, config=mechanism.config,
                                 options=options)

    def plan(self, spec: AuditSpec, data: SpecData) -> MechanismPlan:
        """Certificate (Theorem O.1 or O.2 through :func:`d2d_plan`) and config of a validated spec."""
        from empirical.mechanisms.neel2021 import D2DConfig

        params: D2DParams = spec.algorithm
        extra: tuple[str, ...] = ("a removal is served as a null record (weight 0, n kept)",)
        if spec.request.kind == "replace":
            extra = ("NOT CERTIFIED: replacement adjacency (adjacency = 'paper'); the theorems "
                     "are for add/remove, Chien et al. 2024 apply them to replacement as is",)
        plan = d2d_plan(variant=params.variant, epsilon=spec.certificate.target_epsilon,
                        delta=spec.certificate.resolve_delta(data.dataset.n), n=data.dataset.n,
                        d=data.dataset.dim, l2=params.l2, clip=params.clip, radius=params.radius,
                        requests=spec.request.requests, noise_std=params.noise_std,
                        unlearn_iterations=params.unlearn_iterations,
                        learn_iterations=params.learn_iterations, extra_assumptions=extra)
        config = config_from(
            D2DConfig, params, step_size=plan.step_size, noise_std=plan.noise_std,
            learn_iterations=plan.learn_iterations, unlearn_iterations=plan.unlearn_iterations,
            internal_state=plan.internal_state, init_std=0.0)
        return MechanismPlan(mark_broken(plan.certificate, params.noise_multiplier_scale), config)


ADAPTER = register_adapter(D2DAdapter())
