"""Langevin unlearning (Chien, Wang, Li 2024) on a linear model: the audit adapter.

Learning and unlearning are projected noisy full-batch gradient descent
(:mod:`empirical.mechanisms.chien2024lu`). Certificates (seed 000 Appendix P):

* one request of S records: ``chien2024lu:eq98`` (Theorem P.1 with Theorem P.2's group-S level
  and C_LSI = 2 sigma^2/m) through the shared :func:`audits.certify.certify` (calibrates sigma or
  K, best Rényi order, interval upper end);
* a sequence: the DERIVED chain ``chien2024lu:thm3.2+thm3.3/sequence-step`` (weak triangle
  inequality, order doubling per request); the iterations per request are the greedy least
  ones of :func:`bounds.papers.chien2024lu.lu_sequential_iterations` unless given, and the last
  request is certified by :func:`~bounds.papers.chien2024lu.lu_sequence_certificate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from audits.adapters.base import AdapterBase, DemoSettings, MechanismPlan
from audits.adapters.certificates import delta_label, mark_broken
from audits.adapters.data import SpecData
from audits.adapters.mechanism import SpecMechanism
from audits.adapters.worst_case import RecordDomain
from audits.certify import certify
from audits.fields import SpecError, fail
from audits.protocols import Certificate
from audits.registry import register_adapter
from audits.spec import AuditSpec
from bounds.numerics import float_down
from empirical.mechanisms.chien2024lu_params import LangevinParams
from empirical.mechanisms.parameters import config_from

__all__ = ["ADAPTER", "LangevinAdapter", "LangevinMechanism", "langevin_certificate"]


def langevin_certificate(*, n: int, size: int, requests: int, l2: float, clip: float,
                         delta: float, target_epsilon: float | None, calibrate: str,
                         sigma: float | None, iterations: int | tuple[int, ...] | None,
                         conversion: str = "mironov", learn_iterations: int = 12,
                         delta_label: str = "given") -> tuple[Certificate, float, tuple[int, ...]]:
    """Certificate, sigma and K per request of LU (eq. 98, or the derived sequence chain)."""
    import bounds
    from bounds.papers.chien2024lu import lu_sequence_certificate, lu_sequential_iterations
    from empirical.models.linear import logistic_constants

    m, L, max_step = logistic_constants(Fraction(l2))
    eta = float_down(max_step)
    M = Fraction(clip)
    contraction = (1 - float(m) * eta) ** learn_iterations
    assumptions = [
        "m = lambda and L = 1/4 + lambda: clipped logistic loss on features of norm <= 1 plus "
        "lambda/2 ||w||^2; M = clip bounds every clipped data gradient",
        f"eta = {eta!r} <= 1/L (checked exactly); noise sqrt(2 eta sigma^2) N(0, I) in every step",
        "learning starts from N(0, (2 sigma^2/m) I), the LSI start of Theorem P.2",
        f"Theorem P.1 starts unlearning from the limit law nu_D; the mechanism runs T = "
        f"{learn_iterations} steps (noiseless contraction (1 - eta m)^T = {contraction:.3g}); "
        "this approximation is not accounted for",
        "retraining runs T steps on the final dataset from a fresh LSI start",
        "the theorems are stated in exact arithmetic; floating-point rounding is not accounted for",
    ]
    if requests == 1:
        bound = bounds.get("chien2024lu:eq98")
        solve = None if target_epsilon is None else calibrate
        k_given = iterations[0] if isinstance(iterations, tuple) else iterations
        run = certify(bound, inputs={"eta": eta, "m": m, "L": L, "M": M, "n": n, "S": size},
                      free={"sigma": sigma, "K": None if solve == "K" else (k_given or 1)},
                      delta=delta, target_epsilon=target_epsilon, solve=solve,
                      conversion=conversion, cast=int if solve == "K" else float,
                      assumptions=assumptions, delta_label=delta_label)
        return run.certificate, float(run.values["sigma"]), (int(run.values["K"]),)
    if sigma is None:
        raise SpecError("spec.algorithm.sigma: give sigma for a sequence of requests (the "
                        "iterations per request are calibrated)")
    if iterations is None:
        if target_epsilon is None:
            raise SpecError("spec.algorithm.unlearn_iterations: give them, or a target epsilon")
        plan = lu_sequential_iterations(requests=requests, epsilon=target_epsilon, delta=delta,
                                        sigma=Fraction(sigma), eta=Fraction(eta), m=m, L=L, M=M,
                                        n=n, S=size, conversion=conversion)
        epochs, alpha = plan["iterations"], plan["alphas"][-1]
    else:
        epochs = iterations if isinstance(iterations, tuple) else (iterations,) * requests
        from bounds.papers.chien2024lu import lu_best_alpha

        _, alpha = lu_best_alpha(epochs=list(epochs), delta=delta, sigma=sigma, eta=eta,
                                  m=float(m), M=float(M), n=n, S=size)
    conv = lu_sequence_certificate(alpha=alpha, epochs=list(epochs), delta=delta,
                                   sigma=Fraction(sigma), eta=Fraction(eta), m=m, L=L, M=M, n=n,
                                   S=size, conversion=conversion)
    if target_epsilon is not None and conv.epsilon > target_epsilon:
        raise SpecError(f"spec.certificate: the sequence certificate {conv.epsilon} exceeds "
                        f"the target {target_epsilon}")
    step = bounds.get("chien2024lu:thm3.2+thm3.3/sequence-step")
    certificate = Certificate(
        epsilon=conv.epsilon, delta=delta, bound=step.id, alpha=conv.alpha,
        conversion=conversion, calibration=None,
        inputs={"eta": eta, "m": float(m), "L": float(L), "M": float(M), "n": n, "S": size,
                "sigma": sigma, "iterations_per_request": list(epochs), "delta": delta},
        provenance={**step.provenance(), "audit_assumptions": assumptions,
                    "derivation": ["DERIVED sequential accounting (weak triangle inequality, "
                                   f"order doubling over {requests} requests); certificate of "
                                   "the last request"], "delta": delta_label},
    )
    return certificate, float(sigma), tuple(epochs)


@dataclass(frozen=True)
class LangevinMechanism(SpecMechanism):
    """LU learn -> unlearn and retrain as a :class:`~audits.protocols.TrialMechanism`."""

    fingerprint_tag = "langevin"
    runner = "empirical.mechanisms.chien2024lu:run_langevin"
    work_fields: ClassVar[dict[str, int]] = {"learn_iterations": 2, "unlearn_iterations": 1}
    work_unit: ClassVar[str] = "full-batch gradient steps"
    # config is an empirical.mechanisms.chien2024lu.LangevinConfig

    @property
    def description(self) -> str:
        """One line naming the mechanism and its numbers, for the report's notes."""
        c = self.config
        return (f"Langevin unlearning (PNGD, Chien et al. 2024, App. P): sigma={c.sigma!r}, "
                f"eta={c.step_size!r}, T={c.learn_iterations}, K={c.unlearn_iterations}, "
                f"lambda={c.l2}, M={c.clip}, R={c.radius}, noise x{c.noise_multiplier_scale}")


# What eq. (98) assumes of a record: the certificate reads the data only through n and this
# domain, so a planted record of it leaves the certificate as it is.
RECORD_DOMAIN = RecordDomain(
    norm_bound=1.0, assumption="eq. (98) (Chien, Wang, Li 2024, Langevin unlearning): features "
    "of norm <= 1 (the logistic loss is 1/4-smooth, L = 1/4 + lambda) and a label of the data "
    "(+-1); the clipped gradients have norm <= M whatever the record")


class LangevinAdapter(AdapterBase):
    """Langevin unlearning certified by eq. (98) (one request) or the derived sequence chain."""

    description = ("Langevin unlearning (Chien, Wang, Li 2024) on logistic regression, "
                   "certified by Chien et al. 2024, eq. (98); sequences by a derived chain")
    params_type = LangevinParams
    mechanism_type = LangevinMechanism
    record_domain = RECORD_DOMAIN
    unit_features = "for L = 1/4 + lambda"
    noise_scale_field = "noise_multiplier_scale"
    scaled_noise = ("the step noise N(0, 2 eta sigma^2 I) of learning, unlearning and retraining, and"
                    " the N(0, (2 sigma^2/m) I) start")
    # The demo: digits 3-vs-8, one flip replacement, sigma calibrated to (1, 1/n) at K = 1.
    demo = DemoSettings(params=LangevinParams(), trials=20000, name="langevin-demo")
    calibratable = ("sigma", "K")

    def check_spec(self, spec: AuditSpec) -> None:
        """Cross-field rules between sigma, K per request, the target and the bound (picked here)."""
        params, cert = spec.algorithm, spec.certificate
        p = "spec.algorithm"
        its = params.unlearn_iterations
        if isinstance(its, tuple) and len(its) != spec.request.requests:
            raise fail(f"{p}.unlearn_iterations", f"lists {len(its)} values for "
                       f"{spec.request.requests} requests")
        if cert.bound is not None:
            raise fail("spec.certificate.bound", "Langevin unlearning picks its bound (eq. 98 "
                       "or the derived sequence chain); leave bound out")
        if cert.target_epsilon is None and params.sigma is None:
            raise fail(f"{p}.sigma", "is required without spec.certificate.target_epsilon")
        if cert.target_epsilon is not None and cert.calibrate == "sigma" \
                and params.sigma is not None and spec.request.requests == 1:
            raise fail(f"{p}.sigma", "is calibrated from the target: leave it out")
        if cert.calibrate == "K" and params.sigma is None:
            raise fail(f"{p}.sigma", "is required when K is calibrated")


    def plan(self, spec: AuditSpec, data: SpecData) -> MechanismPlan:
        """Certificate (eq. (98) or the derived sequence chain) and config of a validated spec."""
        from empirical.mechanisms.chien2024lu import LangevinConfig

        params: LangevinParams = spec.algorithm
        cert_spec = spec.certificate
        certificate, sigma, epochs = langevin_certificate(
            n=data.dataset.n, size=spec.request.size, requests=spec.request.requests,
            l2=params.l2, clip=params.clip, delta=cert_spec.resolve_delta(data.dataset.n),
            target_epsilon=cert_spec.target_epsilon, calibrate=cert_spec.calibrate,
            sigma=params.sigma, iterations=params.unlearn_iterations,
            conversion=cert_spec.conversion, learn_iterations=params.learn_iterations,
            delta_label=delta_label(cert_spec))
        config = config_from(LangevinConfig, params, step_size=float(certificate.inputs["eta"]),
                             sigma=sigma, unlearn_iterations=epochs)
        return MechanismPlan(mark_broken(certificate, params.noise_multiplier_scale), config)


ADAPTER = register_adapter(LangevinAdapter())
