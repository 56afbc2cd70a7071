"""PNSGD (Chien et al. 2024, Algorithm 1) on a linear model: the audit adapter.

Owns everything the generic audit needs about PNSGD: the cross-field checks of its
``[algorithm]`` parameters (declared in :mod:`empirical.mechanisms.chien2024_params`), the
data and requests of a spec (the tail dropped to a multiple of b, flip or random
replacements), the certificate (Theorem 3.2
for one request or a batch request via Corollary J.1; for a sequence, the registered
``chien2024:thm3.2+thm3.11/sequence`` with its start distance from Theorem 3.11's recursion,
or a sound tightening of either that ``[certificate] bound`` names: :data:`SOUND_BOUNDS`, the
time-shift forms, with the algorithm's noise variance in ``/exact-noise``), the trial mechanism
(:func:`empirical.mechanisms.chien2024.run_pnsgd`) and the demo spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from audits.adapters.base import AdapterBase, DemoSettings, MechanismPlan
from audits.adapters.certificates import broken_note, check_sigma_calibration, delta_label
from audits.adapters.data import SpecData, require_unit_features
from audits.adapters.mechanism import SpecMechanism
from audits.adapters.worst_case import RecordDomain
from audits.certify import certify
from audits.fields import SpecError, fail
from audits.protocols import Certificate
from audits.registry import register_adapter
from audits.spec import AuditSpec
from bounds.numerics import float_down
from empirical.mechanisms.chien2024_params import PNSGDParams
from empirical.mechanisms.parameters import config_from

__all__ = ["ADAPTER", "PNSGDAdapter", "PNSGDMechanism"]

SINGLE_BOUND = "chien2024:thm3.2"
SEQUENCE_BOUND = "chien2024:thm3.2+thm3.11/sequence"
# The sound certificates a spec may name (``[certificate] bound``), the paper's first: Theorem 3.2
# and the toolkit's proved tightenings of it (docs/improved.md), for one request and for the last
# of a sequence. The time-shift forms are the tightest, /exact-noise with the algorithm's own noise
# variance. Literal printed forms (chien2024:alg5/as-printed) certify nothing and are refused.
SOUND_BOUNDS = {
    "single": (SINGLE_BOUND, "chien2024:thm3.2/capped", "chien2024:thm3.2/optimal-shift",
               "chien2024:thm3.2/time-shift", "chien2024:thm3.2/time-shift/exact-noise"),
    "sequence": (SEQUENCE_BOUND, "chien2024:thm3.2+thm3.11/sequence/time-shift",
                 "chien2024:thm3.2+thm3.11/sequence/time-shift/exact-noise"),
}
# What Theorem 3.2 (and 3.11) assume of a record: the certificate reads the data only through n,
# b and this domain, so a planted record of it leaves the certificate as it is.
RECORD_DOMAIN = RecordDomain(
    norm_bound=1.0, assumption="Theorem 3.2 (Chien et al. 2024): features of norm <= 1 (so the "
    "logistic loss is 1/4-smooth, L = 1/4 + lambda) and a label of the data (+-1); the clipped "
    "gradients have norm <= M whatever the record")


# ----------------------------------------------------------------------------------------------
# Certificate.


def pnsgd_certificate(spec: AuditSpec, data: SpecData) -> tuple[Certificate, float, Any]:
    """Certificate and the (sigma, K) the mechanism runs with: Theorem 3.2 or its sequence form,
    or the sound tightening the spec names (:data:`SOUND_BOUNDS`)."""
    import bounds
    from bounds.papers.chien2024 import sequence_start_distance
    from empirical.models.linear import logistic_constants

    params: PNSGDParams = spec.algorithm
    cert_spec = spec.certificate
    n, b = data.dataset.n, data.batch_size
    require_unit_features(data, "for L = 1/4 + lambda")
    lam, L, max_step = logistic_constants(Fraction(params.l2))
    if params.step_size == "1/L":
        eta = float_down(max_step)
    else:
        eta = float(params.step_size)
        if Fraction(eta) > max_step:
            raise SpecError(f"spec.algorithm.step_size: must be at most 1/L = "
                            f"{float(max_step):.6g} (L = 1/4 + l2; Theorem 3.2 needs eta <= 1/L), "
                            f"got {eta}")
    delta = cert_spec.resolve_delta(n)
    requests = spec.request.requests
    size = spec.request.size
    epochs = params.unlearn_epochs
    epoch_list = (list(epochs) if isinstance(epochs, tuple)
                  else [1 if epochs is None else int(epochs)] * requests)
    inputs: dict[str, Any] = {"eta": eta, "m": lam, "L": L, "M": params.clip * size, "n": n,
                              "b": b, "T": params.learn_epochs, "R": params.radius}
    derivation: list[str] = []
    kind = "sequence" if requests > 1 else "single"
    bound = bounds.get(cert_spec.bound or SOUND_BOUNDS[kind][0])
    if bound.id not in SOUND_BOUNDS[kind]:
        what = "a sequence of requests" if requests > 1 else "one request"
        raise SpecError(f"spec.certificate.bound: {bound.id} does not soundly certify PNSGD for "
                        f"{what}; choose one of {', '.join(SOUND_BOUNDS[kind])} (default "
                        f"{SOUND_BOUNDS[kind][0]})")
    if cert_spec.bound is not None:
        derivation.append(f"certificate named by the spec: {bound.id} ({bound.title}; the "
                          f"default is {SOUND_BOUNDS[kind][0]})")
    if requests > 1:
        inputs["M"] = params.clip
        inputs["Z"] = sequence_start_distance(eta=eta, m=lam, M=params.clip, n=n, b=b,
                                              T=params.learn_epochs, R=params.radius,
                                              sizes=[size] * requests, epochs=epoch_list)
        derivation.append(
            f"{requests} sequential requests of {size} record(s): certificate of the last "
            f"request, K = {epoch_list[-1]}; Z = {float(inputs['Z']):.6g} bounds the "
            f"W_infinity distance at its start (epochs per request {epoch_list})")
        if "Kprev" in bound.parameter_names:
            inputs["Kprev"] = sum(epoch_list[:-1])
    else:
        if size > 1:
            derivation.append(
                f"batch request of S = {size} records: Corollary J.1's distance S * 2 eta M / b "
                "in Theorem 3.2, i.e. M replaced by S * M")
    assumptions = [
        "m = lambda and L = 1/4 + lambda: the clipped logistic gradient is phi(w.x) x with phi "
        "non-decreasing and slope <= 1/4 when ||x|| <= 1 (checked: max feature norm "
        f"{data.max_norm:.6g}), so each per-example loss is convex and 1/4-smooth, plus the "
        "lambda/2 ||w||^2 term",
        "M = clip: every clipped data gradient has norm <= M, so two records' gradients differ "
        "by at most 2M (Remark 3.6); a removal is served as a null record (difference <= M)",
        f"eta = {eta!r} <= 1/L (checked exactly)",
        f"R = {params.radius}: every step projects onto C_R (the mechanism's radius)",
        "the learning initialisation is the point 0, which lies in C_R (init = 'zero')",
        "the mini-batch partition B is reused for learning and unlearning within a trial; with "
        f"partition = {params.partition!r} the law of the models is a mixture over B of laws "
        "each covered by the theorem, and (epsilon, delta) guarantees survive mixtures",
        "retraining runs T epochs of the same algorithm on the final dataset from the same "
        "initialisation",
        "the theorem is stated in exact arithmetic; floating-point rounding of the trial engine "
        "is not accounted for",
    ]
    solve = None if cert_spec.target_epsilon is None else cert_spec.calibrate
    run = certify(
        bound, inputs=inputs,
        free={"sigma": params.sigma, "K": None if solve == "K" else epoch_list[-1]},
        delta=delta, target_epsilon=cert_spec.target_epsilon, solve=solve,
        conversion=cert_spec.conversion, cast=int if solve == "K" else float,
        assumptions=assumptions, derivation=derivation,
        delta_label=delta_label(cert_spec),
        extra_provenance=broken_note(params.noise_multiplier_scale))
    sigma = float(run.values["sigma"])
    if solve == "K":
        epoch_list = [int(run.values["K"])]
    k_value: Any = tuple(epoch_list) if requests > 1 else epoch_list[-1]
    return run.certificate, sigma, k_value


# ----------------------------------------------------------------------------------------------
# Mechanism.


@dataclass(frozen=True)
class PNSGDMechanism(SpecMechanism):
    """PNSGD learn -> unlearn and retrain as a :class:`~audits.protocols.TrialMechanism`
    (``config``: an :class:`empirical.mechanisms.chien2024.PNSGDConfig`).

    Scores: ``loss`` = minus the logistic loss of each forgotten record (original record);
    statistics: ``params`` = the final parameters; accuracy on the test split.
    """

    runner = "empirical.mechanisms.chien2024:run_pnsgd"
    data_options: ClassVar[dict[str, Any]] = {"batch_size_field": "batch_size"}
    work_fields: ClassVar[dict[str, int]] = {"learn_epochs": 2, "unlearn_epochs": 1}
    work_unit: ClassVar[str] = "epochs over the data"

    @property
    def description(self) -> str:
        """One line naming the mechanism and its numbers, for the report's notes."""
        c = self.config
        return (f"PNSGD (Chien et al. 2024, Algorithm 1): sigma={c.sigma!r}, eta={c.step_size!r}, "
                f"b={c.batch_size}, T={c.learn_epochs}, K={c.unlearn_epochs}, lambda={c.l2}, "
                f"M={c.clip}, R={c.radius}, noise x{c.noise_multiplier_scale}")


# ----------------------------------------------------------------------------------------------
# The adapter.

class PNSGDAdapter(AdapterBase):
    """PNSGD (Chien et al. 2024, Algorithm 1) certified by Theorem 3.2 (and 3.11 for sequences)."""

    description = ("PNSGD (Chien et al. 2024, Alg. 1) on logistic regression, certified by "
                   "Theorem 3.2 (Theorem 3.11 for sequences)")
    params_type = PNSGDParams
    mechanism_type = PNSGDMechanism
    record_domain = RECORD_DOMAIN
    unit_features = "for L = 1/4 + lambda"
    noise_scale_field = "noise_multiplier_scale"
    scaled_noise = "the step noise N(0, 2 eta sigma^2 I) of learning, unlearning and retraining"
    # The demo: digits 3-vs-8 logistic regression, calibrated to (epsilon, delta) = (1, 1/n). Full
    # batch, lambda = 1 (contraction c = 0.2 per step) and clipping at M = 0.05 (active on every
    # record) keep the mechanism close to the worst case Theorem 3.2 is proved for, and the flip
    # replacement makes the two datasets' gradients differ by exactly 2M, so the audit's lower
    # bound can approach the certificate. N = 50000 trials and one pilot trial per ten set the
    # power: under a minute to a few minutes on two CPU cores.
    demo = DemoSettings(
        params=PNSGDParams(batch_size="full", learn_epochs=12, l2=1.0, clip=0.05, radius=100.0),
        trials=50000, name="demo")
    calibratable = ("sigma", "K")
    # ``unlearn bench bounds``: Theorem 3.2 at Table 3's MNIST setting, and Table 3 itself.
    bench_bound = "chien2024:thm3.2"
    bench_point: ClassVar[dict[str, Any]] = {
        "alpha": 10.0, "sigma": 0.05, "eta": 3.8, "m": 0.011264, "L": 0.261264, "M": 1.0,
        "n": 11264, "b": 128, "T": 20, "K": 1, "R": 100.0,
    }
    bench_reproduction = "chien2024:table3"

    def check_spec(self, spec: AuditSpec) -> None:
        """Cross-field rules between K per request, sigma, the target and the calibrated parameter."""
        epochs = spec.algorithm.unlearn_epochs
        if isinstance(epochs, tuple) and len(epochs) != spec.request.requests:
            raise fail("spec.algorithm.unlearn_epochs", f"lists {len(epochs)} values of K for "
                       f"{spec.request.requests} requests (spec.request.requests)")
        check_sigma_calibration(spec, steps=("K", "unlearn_epochs"))
        if (spec.certificate.target_epsilon is not None and spec.certificate.calibrate == "K"
                and spec.request.requests > 1):
            raise fail("spec.certificate.calibrate", "K calibration is not supported for "
                       "a sequence of requests; give unlearn_epochs and calibrate sigma")


    def benchmark_trials(self, *, n_trials: int, device: str, dataset: str = "digits",
                         path: str | None = None) -> dict[str, Any]:
        """``unlearn bench trials``: batched against looped PNSGD (empirical.benchmarks.trials)."""
        from empirical.benchmarks.trials import trials_benchmark

        return trials_benchmark(n_trials=n_trials, device=device, dataset=dataset, path=path)

    def plan(self, spec: AuditSpec, data: SpecData) -> MechanismPlan:
        """Certificate (Theorem 3.2, or 3.2 + 3.11 for a sequence) and config of a validated spec."""
        from empirical.mechanisms.chien2024 import PNSGDConfig

        certificate, sigma, epochs = pnsgd_certificate(spec, data)
        config = config_from(PNSGDConfig, spec.algorithm, sigma=sigma, unlearn_epochs=epochs,
                             step_size=float(certificate.inputs["eta"]),
                             batch_size=data.batch_size, init_std=0.0)
        return MechanismPlan(certificate, config)


ADAPTER = register_adapter(PNSGDAdapter(), default=True)
