"""What every algorithm adapter needs and none should write again.

The adapters under :mod:`audits.adapters` differ in their theorem, their mechanism and their
cross-field rules; the rest is the same plumbing, collected here once:

* :class:`AlgorithmParams`: ``from_dict``/``to_dict`` of a frozen hyper-parameter dataclass,
  and the field checks most of them share (:func:`optional_sigma`, :func:`positive`,
  :func:`noise_scale`, :func:`counts`, :func:`flag`);
* :func:`spec_data`: the dataset, requests and largest feature norm of a spec, cached on the
  fields they depend on (a mechanism re-reads them in every chunk);
* certificate plumbing: :func:`delta_label`, :func:`broken_note` / :func:`mark_broken` for a
  deliberately broken mechanism, :func:`check_sigma_calibration` (the usual "calibrated or
  given" rules), :func:`require_unit_features`, and the directed float roundings
  :func:`float_at_most` / :func:`float_at_least` that keep a step size or a noise on the safe
  side of its exact value;
* mechanism plumbing: :func:`trial_batch` (losses, parameters and accuracy of both sides),
  :func:`torch_threads` (one intra-op thread on a shared CPU), :func:`time_batched_and_loop`;
* :func:`demo_audit_spec` (the audit settings every demo shares) and :func:`prepared_audit`.

Generic by rule: this module names no algorithm (``tests/test_layout.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from audits.adapter import ParameterDoc, PreparedAudit, describe_parameters
from audits.datasets import build_requests, load_dataset
from audits.fields import SpecError, fail, from_fields, number, plain, positive_int
from audits.protocols import Certificate, ModelOutputs, TrialBatch
from audits.spec import AuditSpec, CertificateSpec, DatasetSpec, ModelSpec, RequestSpec

__all__ = [
    "AdapterBase",
    "AlgorithmParams",
    "BatchLoopTiming",
    "SpecData",
    "SpecMechanism",
    "broken_note",
    "check_sigma_calibration",
    "counts",
    "delta_label",
    "demo_audit_spec",
    "flag",
    "float_at_least",
    "float_at_most",
    "mark_broken",
    "model_outputs",
    "noise_scale",
    "optional_sigma",
    "positive",
    "prepared_audit",
    "require_unit_features",
    "run_request_trials",
    "spec_data",
    "time_batched_and_loop",
    "torch_threads",
    "trial_batch",
]

PARAMS_PATH = "spec.algorithm"


# ----------------------------------------------------------------------------------------------
# Hyper-parameters.


class AlgorithmParams:
    """Mixin of an adapter's frozen hyper-parameter dataclass: spec table in, spec table out.

    The subclass sets ``name: ClassVar[str]`` (the spec's ``algorithm.name``) and validates
    its fields in ``__post_init__``.
    """

    name: ClassVar[str]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = PARAMS_PATH) -> Any:
        return from_fields(cls, data, path)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **{f.name: plain(getattr(self, f.name))
                                      for f in dataclasses.fields(self)}}  # type: ignore[arg-type]


class AdapterBase:
    """The adapter members that only read ``params_type`` and ``parameter_help``.

    ``name`` defaults to ``params_type.name``; ``models`` to a linear model trained with the
    logistic loss, and ``calibratable`` to the noise alone (override either in the subclass).
    """

    name: str
    params_type: type
    parameter_help: ClassVar[Mapping[str, str]] = {}
    models: tuple[str, ...] = ("logistic-regression",)
    calibratable: tuple[str, ...] = ("sigma",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "params_type" in cls.__dict__ and "name" not in cls.__dict__:
            cls.name = cls.params_type.name

    def parse_params(self, data: Mapping[str, Any], path: str) -> Any:
        return from_fields(self.params_type, data, path)

    def parameters(self) -> tuple[ParameterDoc, ...]:
        return describe_parameters(self.params_type, self.parameter_help)


def positive(value: Any, field: str, what: str = "a positive number") -> float:
    """``spec.algorithm.<field>`` must be a finite number > 0."""
    return number(value, f"{PARAMS_PATH}.{field}", low=0, open_low=True, what=what)


def optional_sigma(value: Any, field: str = "sigma") -> None:
    """A noise level that may be left out (then it is calibrated from the target)."""
    if value is not None:
        positive(value, field, "a positive number (or left out to calibrate it)")


def noise_scale(value: Any) -> None:
    """``noise_multiplier_scale``: >= 0; below 1 breaks the mechanism on purpose."""
    number(value, f"{PARAMS_PATH}.noise_multiplier_scale", low=0, what="a number >= 0")


def flag(value: Any, field: str) -> None:
    if not isinstance(value, bool):
        raise fail(f"{PARAMS_PATH}.{field}", f"must be true or false, got {value!r}")


def counts(params: Any, field: str, *, empty: str) -> None:
    """One positive integer, or a non-empty list of them (one per request), or None.

    A list is stored as a tuple on the frozen ``params`` (so the spec hashes and compares).
    """
    value = getattr(params, field)
    path = f"{PARAMS_PATH}.{field}"
    if isinstance(value, list | tuple):
        if not value:
            raise fail(path, empty)
        object.__setattr__(params, field, tuple(
            positive_int(k, f"{path}[{i}]") for i, k in enumerate(value)))
    elif value is not None:
        positive_int(value, path)


# ----------------------------------------------------------------------------------------------
# Data and requests of a spec.


@dataclass(frozen=True)
class SpecData:
    """The dataset and the requests of a spec, as the mechanism and the certificate see them.

    ``batch_size`` is b when the adapter asked for the tail to be dropped to a multiple of b
    (else None); ``max_norm`` the largest feature norm among the records and the replacements.
    """

    dataset: Any  # empirical.data.Dataset
    requests: tuple[Any, ...]  # empirical.data.UnlearningRequest, one per request
    indices: tuple[int, ...]
    max_norm: float
    batch_size: int | None = None

    @property
    def request(self) -> Any:
        """The one request, or the :class:`~empirical.data.RequestSequence` of several."""
        from empirical.data import RequestSequence

        return self.requests[0] if len(self.requests) == 1 else RequestSequence(self.requests)


def spec_data(spec_json: str, *, batch_size_field: str | None = None,
              keep_a_record: bool = False) -> SpecData:
    """Dataset and requests of a canonical spec JSON (cached on the fields they depend on).

    ``batch_size_field`` names the algorithm's field holding b (an integer or ``"full"``): the
    tail is dropped to a multiple of b, as a mini-batch algorithm that partitions the records
    needs; ``keep_a_record`` refuses requests that would remove every training record.
    """
    spec = AuditSpec.from_dict(json.loads(spec_json))
    batch_size = None if batch_size_field is None else getattr(spec.algorithm, batch_size_field)
    key = json.dumps([spec.dataset.to_dict(), spec.request.to_dict(), batch_size, keep_a_record],
                     sort_keys=True)
    return _spec_data_cached(key)


@functools.lru_cache(maxsize=8)
def _spec_data_cached(key: str) -> SpecData:
    from empirical.data import drop_to_multiple

    dataset_fields, request_fields, batch_size, keep_a_record = json.loads(key)
    dataset = load_dataset(DatasetSpec(**dataset_fields))
    request_spec = RequestSpec(**request_fields)
    batch = None
    if batch_size == "full":
        batch = dataset.n
    elif batch_size is not None:
        batch = int(batch_size)
        if batch > dataset.n:
            raise SpecError(f"spec.algorithm.batch_size: {batch} exceeds the {dataset.n} "
                            "training records")
        dataset = drop_to_multiple(dataset, batch)
    if keep_a_record and request_spec.total_records >= dataset.n:
        raise SpecError(f"spec.request: {request_spec.total_records} removals leave no training "
                        f"point of the {dataset.n}")
    indices, requests = build_requests(request_spec, dataset)
    norms = [np.linalg.norm(dataset.features, axis=1).max()]
    norms += [np.linalg.norm(r.replacement_features, axis=1).max() for r in requests
              if r.replacement_features is not None]
    return SpecData(dataset, tuple(requests), tuple(int(i) for i in indices), float(max(norms)),
                    batch)


def require_unit_features(data: SpecData, why: str) -> None:
    """The smoothness/Lipschitz constants assume every feature vector has norm <= 1."""
    if data.max_norm > 1.0 + 1e-12:
        raise SpecError(f"spec.dataset: features must have norm <= 1 {why}, found "
                        f"{data.max_norm}")


# ----------------------------------------------------------------------------------------------
# Certificate plumbing.


def delta_label(certificate: CertificateSpec) -> str:
    """How the report names the certificate's delta: ``"1/n"`` or ``"given"``."""
    return "1/n" if certificate.delta == "1/n" else "given"


def broken_note(scale: float, what: str = "noise") -> dict[str, str]:
    """Provenance entry of a deliberately broken mechanism (empty for the real one)."""
    if scale == 1.0:
        return {}
    return {"deliberately_broken": (
        f"noise_multiplier_scale = {scale}: the mechanism draws {scale} times the {what} this "
        "certificate assumes (a test of the audit itself)")}


def mark_broken(certificate: Certificate, scale: float, what: str = "noise") -> Certificate:
    """``certificate`` with :func:`broken_note` added to its provenance."""
    note = broken_note(scale, what)
    if not note:
        return certificate
    return dataclasses.replace(certificate, provenance={**certificate.provenance, **note})


def check_sigma_calibration(spec: AuditSpec, *, sigma_field: str = "sigma",
                            steps: tuple[str, str] | None = None) -> None:
    """The usual rules between a noise level, a step count and the certificate's target.

    Without a target the noise must be given; with one, the calibrated parameter must be left
    out. ``steps`` = (calibrate name, field name), e.g. ("K", "unlearn_epochs"): calibrating
    the step count needs the noise given and the count left out.
    """
    params, cert = spec.algorithm, spec.certificate
    path = f"{PARAMS_PATH}.{sigma_field}"
    sigma = getattr(params, sigma_field)
    if cert.target_epsilon is None:
        if sigma is None:
            raise fail(path, "is required when spec.certificate.target_epsilon is not given "
                       "(nothing to calibrate it from)")
        return
    if cert.calibrate == sigma_field and sigma is not None:
        raise fail(path, "is calibrated from spec.certificate.target_epsilon: leave it out, or "
                   "leave out the target")
    if steps is not None and cert.calibrate == steps[0]:
        name, field = steps
        if sigma is None:
            raise fail(path, f"is required when {name} is calibrated (spec.certificate."
                       f"calibrate = {name!r})")
        if getattr(params, field) is not None:
            raise fail(f"{PARAMS_PATH}.{field}", f"is calibrated (spec.certificate.calibrate "
                       f"= {name!r}): leave it out")


def float_at_most(value: Fraction) -> float:
    """The largest float not above ``value`` (a step size that must not exceed its bound)."""
    x = float(value)
    while Fraction(x) > value:
        x = math.nextafter(x, -math.inf)
    return x


def float_at_least(value: Fraction) -> float:
    """The smallest float not below ``value`` (a noise that must reach its bound)."""
    x = float(value)
    while Fraction(x) < value:
        x = math.nextafter(x, math.inf)
    return x


# ----------------------------------------------------------------------------------------------
# Mechanism plumbing.


@dataclass(frozen=True)
class SpecMechanism:
    """The fields of a :class:`~audits.protocols.TrialMechanism` that runs an empirical
    mechanism on a spec's data: the canonical spec JSON (its data are re-read, cached, in each
    chunk), the mechanism's config dataclass, the device and the torch dtype name.

    The fingerprint keys the chunk store: it changes whenever the numbers may change.
    ``fingerprint_tag`` (a class attribute) prefixes it where a subclass set one.
    """

    fingerprint_tag: ClassVar[str | None] = None

    spec_json: str
    config: Any
    device: str
    dtype: str

    def fingerprint(self) -> str:
        parts = (dataclasses.astuple(self.config), self.device, self.dtype)
        return repr(parts if self.fingerprint_tag is None else (self.fingerprint_tag, *parts))


def model_outputs(losses: Any, params: Any, accuracy: Any, *, keep_params: bool = True
                  ) -> ModelOutputs:
    """One side of a trial batch: score ``loss`` = minus each forgotten record's loss (higher
    means "looks like a member"), statistic ``params`` (unless too large), test accuracy."""
    return ModelOutputs(scores={"loss": -losses},
                        statistics={"params": params} if keep_params else {},
                        accuracy=accuracy)


def trial_batch(result: Any) -> TrialBatch:
    """A mechanism result with ``unlearned``/``retrained`` samples (``forget_losses``,
    ``params``, ``test_accuracy``) as a :class:`~audits.protocols.TrialBatch`."""
    def side(samples: Any) -> ModelOutputs:
        return model_outputs(samples.forget_losses, samples.params, samples.test_accuracy)

    return TrialBatch(side(result.unlearned), side(result.retrained))


def run_request_trials(run: Callable[..., Any], mechanism: Any, data: SpecData, *, seed: int,
                       first_trial: int, n_trials: int, model: Any = None, mode: str = "batched",
                       **extra: Any) -> TrialBatch:
    """Trials of an empirical mechanism with the shared signature ``run(dataset, request, *,
    config, options, ...)`` (:class:`~empirical.mechanisms.common.TrialOptions`), on the spec's
    data, as a :class:`~audits.protocols.TrialBatch`. ``mechanism`` supplies ``config``,
    ``device`` and ``dtype`` (a torch dtype name); ``extra`` go to ``run`` as they are."""
    import torch

    from empirical.mechanisms.common import TrialOptions

    # retain_scores=0 trips an empty reshape in empirical.models (reported)
    options = TrialOptions(n_trials=n_trials, seed=seed, model=model, device=mechanism.device,
                           dtype=getattr(torch, mechanism.dtype), mode=mode,
                           first_trial=first_trial, retain_scores=1)
    result = run(data.dataset, data.request, config=mechanism.config, options=options, **extra)
    return trial_batch(result)


@contextlib.contextmanager
def torch_threads(device: str, threads: int = 1) -> Iterator[None]:
    """Run with ``threads`` intra-op torch threads on CPU (restored afterwards).

    Batched trials are many small tensor operations: on a shared machine several intra-op
    threads spin-wait at every barrier, so one thread is often many times faster.
    """
    import torch

    previous = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@dataclass(frozen=True)
class BatchLoopTiming:
    """The same trials run batched and one at a time (the first ``loop_trials`` of them)."""

    batched: Any
    looped: Any
    batched_seconds: float
    loop_seconds: float
    n_trials: int
    loop_trials: int
    peak_rss_growth_kib: int  # ru_maxrss growth during the batched call

    @property
    def batched_rate(self) -> float:
        return self.n_trials / self.batched_seconds

    @property
    def loop_rate(self) -> float:
        return self.loop_trials / self.loop_seconds

    def rates(self) -> dict[str, Any]:
        """The benchmark fields every ``benchmark_trials`` reports (trials per second)."""
        return {"n_trials": self.n_trials, "batched_seconds": self.batched_seconds,
                "batched_trials_per_s": self.batched_rate, "loop_trials_timed": self.loop_trials,
                "loop_seconds": self.loop_seconds, "loop_trials_per_s": self.loop_rate,
                "speedup": self.batched_rate / self.loop_rate}


def time_batched_and_loop(run: Callable[..., Any], *, n_trials: int, loop_trials: int,
                          warmup_trials: int = 1) -> BatchLoopTiming:
    """Time ``run(seed=0, first_trial=0, n_trials=N, mode=...)`` batched over ``n_trials`` and
    in ``mode="loop"`` over the first ``loop_trials`` (after a warm-up that fills caches)."""
    import resource

    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    run(seed=0, first_trial=0, n_trials=warmup_trials)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    batched = run(seed=0, first_trial=0, n_trials=n_trials)
    batched_seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    looped_n = min(n_trials, loop_trials)
    start = time.perf_counter()
    looped = run(seed=0, first_trial=0, n_trials=looped_n, mode="loop")
    loop_seconds = time.perf_counter() - start
    return BatchLoopTiming(batched, looped, batched_seconds, loop_seconds, n_trials, looped_n,
                           max(0, peak - before))


# ----------------------------------------------------------------------------------------------
# Demo spec and prepared audit.

DEMO_ATTACKS = ("loss", "projection")
DEMO_STATISTICS = ("bonferroni-pareto", "sample-split")
DEMO_ESTIMATORS = ("plugin-epsilon", "auc", "tpr-at-fpr", "gaussian-kl")
FLIP_FIRST_RECORD = RequestSpec(kind="replace", replacement="flip", indices=(0,))


def demo_audit_spec(*, algorithm: Any, name: str, trials: int | None, default_trials: int,
                    device: str | None, request: RequestSpec | None = None,
                    certificate: CertificateSpec | None = None,
                    dataset: DatasetSpec | None = None, model: ModelSpec | None = None,
                    chunk_size: int = 2500) -> AuditSpec:
    """A demo audit: the algorithm's own parts plus the settings every demo shares (both
    attacks, both statistics, all estimators, 95% joint confidence, seed 0, one pilot trial
    per ten). Unless given: digits 3-vs-8; the request flips the label of record 0 (for a
    clipped linear model the replacement whose gradient differs most, 2M); the certificate
    calibrates sigma to (epsilon, delta) = (1, 1/n) with Mironov's conversion
    (:class:`~audits.spec.CertificateSpec`'s defaults)."""
    n = default_trials if trials is None else trials
    extra = {} if model is None else {"model": model}
    return AuditSpec(
        algorithm=algorithm,
        dataset=DatasetSpec(name="digits") if dataset is None else dataset,
        request=FLIP_FIRST_RECORD if request is None else request,
        certificate=CertificateSpec() if certificate is None else certificate,
        trials=n,
        # a non-integer N is left for the spec's own check to name
        pilot_trials=max(2, n // 10) if isinstance(n, int) and not isinstance(n, bool) else n,
        attacks=DEMO_ATTACKS,
        statistics=DEMO_STATISTICS,
        estimators=DEMO_ESTIMATORS,
        confidence=0.95,
        seed=0,
        device="cpu" if device is None else device,
        chunk_size=chunk_size,
        name=name,
        **extra,
    )


def prepared_audit(spec: AuditSpec, *, certificate: Certificate, mechanism: Any, device: str,
                   data: SpecData, notes: Sequence[str] | None = None,
                   extra_notes: Sequence[str] = (),
                   rows_key: str = "request_indices") -> PreparedAudit:
    """The :class:`PreparedAudit` of a mechanism with ``description`` and ``fingerprint()``:
    seeds name the requested rows and the request seed; notes the data and the mechanism."""
    if notes is None:
        notes = (f"dataset: {data.dataset.provenance}", f"mechanism: {mechanism.description}")
    return PreparedAudit(
        certificate=certificate,
        mechanism=mechanism,
        device=device,
        fingerprint=mechanism.fingerprint(),
        seeds={rows_key: list(data.indices), "request_seed": spec.request.seed},
        notes=(*notes, *extra_notes),
    )
