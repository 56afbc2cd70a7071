"""What every algorithm adapter inherits: :class:`AdapterBase` (parsing and describing the
hyper-parameters, the demo audit from :class:`DemoSettings`, the optional hooks' defaults),
the settings every demo shares (:func:`demo_audit_spec`) and :func:`prepared_audit`.

The rest of the kit lives beside it, one concern per module: :mod:`~audits.adapters.params`
(hyper-parameter checks), :mod:`~audits.adapters.data` (a spec's dataset and requests),
:mod:`~audits.adapters.certificates` (certificate plumbing) and :mod:`~audits.adapters.mechanism`
(trial mechanisms, torch threads, timing). Generic by rule: no module of the kit names an
algorithm (``tests/test_layout.py``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from audits.adapters.data import SpecData
from audits.adapters.protocol import ParameterDoc, PreparedAudit, describe_parameters
from audits.attacks import DEFAULT_ATTACKS
from audits.estimators import DEMO_ESTIMATORS
from audits.fields import from_fields
from audits.protocols import Certificate
from audits.spec import AuditSpec, CertificateSpec, DatasetSpec, ModelSpec, RequestSpec
from audits.statistics import DEFAULT_STATISTICS

__all__ = [
    "AdapterBase",
    "DEMO_ESTIMATORS",
    "DemoSettings",
    "FLIP_FIRST_RECORD",
    "demo_audit_spec",
    "prepared_audit",
]

@dataclass(frozen=True)
class DemoSettings:
    """An algorithm's embedded demo audit, as data: its parameters, its trial count and the parts
    of the spec it sets (the rest comes from :func:`demo_audit_spec`'s shared settings)."""

    params: Any
    trials: int
    name: str
    request: Any = None  # RequestSpec; None: flip the label of record 0
    certificate: Any = None  # CertificateSpec; None: calibrate sigma to (1, 1/n)
    dataset: Any = None  # DatasetSpec; None: digits 3-vs-8
    model: Any = None  # ModelSpec; None: the spec's default model
    chunk_size: int = 2500


class AdapterBase:
    """Every member of :class:`~audits.adapters.protocol.AlgorithmAdapter` that an adapter
    does not need to write: parsing and describing ``params_type``, the demo spec built from
    ``demo`` (a :class:`DemoSettings`), and the optional hooks' defaults (no extra plots, the
    generic trials benchmark, no bound benchmark, no exact output laws).

    ``name`` defaults to ``params_type.name``; ``models`` to a linear model trained with the
    logistic loss, and ``calibratable`` to the noise alone (override either in the subclass).
    ``noise_scale_field`` (None here: no noise-scale hook) names the hyper-parameter that
    multiplies every noise draw without changing the certificate; ``scaled_noise`` says which
    noises that is.
    """

    name: str
    params_type: type
    demo: ClassVar[DemoSettings]
    parameter_help: ClassVar[Mapping[str, str]] = {}
    models: tuple[str, ...] = ("logistic-regression",)
    calibratable: tuple[str, ...] = ("sigma",)
    bench_bound: str | None = None
    bench_point: ClassVar[Mapping[str, Any]] = {}
    bench_reproduction: str | None = None
    noise_scale_field: str | None = None
    scaled_noise: str = ""
    worst_case_forget: str | None = None
    extra_attacks: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "params_type" in cls.__dict__ and "name" not in cls.__dict__:
            cls.name = cls.params_type.name

    def parse_params(self, data: Mapping[str, Any], path: str) -> Any:
        """The ``[algorithm]`` table (without ``name``) as ``params_type``; SpecError if bad."""
        return from_fields(self.params_type, data, path)

    def parameters(self) -> tuple[ParameterDoc, ...]:
        """The hyper-parameters with their defaults and ``parameter_help``."""
        return describe_parameters(self.params_type, self.parameter_help)

    def demo_spec(self, *, trials: int | None = None, device: str | None = None) -> AuditSpec:
        """The embedded demo audit (``demo``), with ``trials`` N and ``device`` if given."""
        demo = self.demo
        return demo_audit_spec(
            algorithm=demo.params, name=demo.name, trials=trials, default_trials=demo.trials,
            device=device, request=demo.request, certificate=demo.certificate,
            dataset=demo.dataset, model=demo.model, chunk_size=demo.chunk_size)

    def extra_plots(self, spec: AuditSpec) -> list[dict[str, Any]]:
        """Line plots the report draws for this spec beside the generic figures (none here)."""
        return []

    def benchmark_trials(self, *, n_trials: int, device: str, dataset: str | None = None,
                         path: str | None = None, model: str | None = None
                         ) -> dict[str, Any] | None:
        """``unlearn bench trials``: None here, for the generic batched-vs-loop benchmark of the
        demo spec's mechanism."""
        return None

    def with_noise_reduced(self, spec: AuditSpec, *, factor: float) -> AuditSpec:
        """``spec`` whose mechanism draws every noise divided by ``factor`` (>= 1): the
        ``noise_scale_field`` hyper-parameter divided by ``factor``. That field leaves the
        certificate as certified for the undivided noise, so factor > 1 is a mechanism that
        leaks more than its certificate allows."""
        field = self.noise_scale_field
        if field is None:
            raise ValueError(f"the {self.name} adapter names no noise-scale parameter "
                             "(noise_scale_field), so its noise cannot be reduced")
        if (isinstance(factor, bool) or not isinstance(factor, int | float)
                or not math.isfinite(factor) or factor < 1):
            raise ValueError(f"a noise-scale reduction factor must be a finite number >= 1, got "
                             f"{factor!r}")
        params = spec.algorithm
        if not hasattr(params, field):
            raise ValueError(f"the {self.name} adapter names {field!r} as its noise scale, but its "
                             "hyper-parameters have no such field")
        reduced = dataclasses.replace(params, **{field: getattr(params, field) / factor})
        return dataclasses.replace(spec, algorithm=reduced)

    def exact_laws(self, spec: AuditSpec, prepared: PreparedAudit) -> Any:
        """The exact Gaussian output laws of the mechanism as run (none known here: None)."""
        return None


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
        attacks=DEFAULT_ATTACKS,
        statistics=DEFAULT_STATISTICS,
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
