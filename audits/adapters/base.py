"""What every algorithm adapter inherits: :class:`AdapterBase` (parsing and describing the
hyper-parameters, the demo audit from :class:`DemoSettings`, the optional hooks' defaults),
the settings every demo shares (:func:`demo_audit_spec`) and :func:`prepared_audit`.

An algorithm's hyper-parameters are declared once, with their help and checks, in the field
metadata of a dataclass (:mod:`empirical.mechanisms.parameters`); the adapter reads them. The
rest of the kit lives beside this module, one concern per module: :mod:`~audits.adapters.data`
(a spec's dataset and requests),
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

from audits.adapters.data import SpecData, require_unit_features
from audits.adapters.protocol import ParameterDoc, PreparedAudit, describe_parameters
from audits.adapters.worst_case import RecordDomain, plant_worst_case, rule_text
from audits.attacks import DEFAULT_ATTACKS
from audits.estimators import DEMO_ESTIMATORS
from audits.fields import fail, from_fields
from audits.protocols import Certificate
from audits.spec import AuditSpec, CertificateSpec, DatasetSpec, ModelSpec, RequestSpec
from audits.statistics import DEFAULT_STATISTICS
from empirical.mechanisms.parameters import ParameterError, parameter_help

__all__ = [
    "AdapterBase",
    "DEMO_ESTIMATORS",
    "DemoSettings",
    "FLIP_FIRST_RECORD",
    "MechanismPlan",
    "demo_audit_spec",
    "prepared_audit",
]

@dataclass(frozen=True)
class DemoSettings:
    """An algorithm's embedded demo audit, as data: its parameters, its trial count and the parts
    of the spec it sets (the rest comes from :func:`demo_audit_spec`'s shared settings).
    ``attacks`` names the demo's attacks (e.g. the likelihood-ratio attack beside the generic
    ones where the adapter knows the exact output laws); None leaves them to the spec's default
    rule (:func:`audits.exact_loss.resolve_attacks`)."""

    params: Any
    trials: int
    name: str
    request: Any = None  # RequestSpec; None: flip the label of record 0
    certificate: Any = None  # CertificateSpec; None: calibrate sigma to (1, 1/n)
    dataset: Any = None  # DatasetSpec; None: digits 3-vs-8
    model: Any = None  # ModelSpec; None: the spec's default model
    chunk_size: int = 2500
    attacks: tuple[str, ...] | None = DEFAULT_ATTACKS


@dataclass(frozen=True)
class MechanismPlan:
    """What :meth:`AdapterBase.plan` gives the shared :meth:`AdapterBase.prepare`: the
    certificate, the mechanism's config (the numbers it runs with) and any further fields of
    the adapter's ``mechanism_type`` beyond ``(spec_json, config, device, dtype)``."""

    certificate: Certificate
    config: Any
    mechanism_fields: Mapping[str, Any] = dataclasses.field(default_factory=dict)


class AdapterBase:
    """Every member of :class:`~audits.adapters.protocol.AlgorithmAdapter` that an adapter
    does not need to write: parsing and describing ``params_type`` (help and checks read from
    its field metadata), the demo spec built from ``demo`` (a :class:`DemoSettings`), the
    preparation of an audit from :meth:`plan`, and the optional hooks' defaults (no extra
    plots, the generic trials benchmark, no bound benchmark, no exact output laws).

    ``name`` is the algorithm's one name, declared once with its parameters
    (``params_type.name``): the spec's ``algorithm.name``, the name ``--algorithm`` takes and the
    one every listing prints. ``models`` defaults to a linear model
    trained with the logistic loss, and ``calibratable`` to the noise alone (override either in
    the subclass). ``noise_scale_field`` (None here: no noise-scale hook) names the
    hyper-parameter that multiplies every noise draw without changing the certificate;
    ``scaled_noise`` says which noises that is.

    :meth:`prepare` reads the spec's data through ``mechanism_type`` (a
    :class:`~audits.adapters.mechanism.SpecMechanism`), asks :meth:`plan` for the certificate
    and the config, builds the mechanism, plants the worst-case record of ``record_domain``
    (:meth:`domain_for`) when the spec asks for one, and checks ``unit_features`` (the reason
    the certificate needs features of norm <= 1; None: no such check) before and after.
    ``worst_case_forget`` defaults to the statement of ``record_domain``.
    """

    name: ClassVar[str]
    params_type: type
    demo: ClassVar[DemoSettings]
    mechanism_type: ClassVar[type | None] = None
    record_domain: ClassVar[RecordDomain | None] = None
    unit_features: ClassVar[str | None] = None
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
        if "params_type" in cls.__dict__:
            declared = getattr(cls.params_type, "name", None)
            if not isinstance(declared, str) or not declared:
                raise TypeError(f"{cls.params_type.__name__} declares no name: the algorithm's "
                                "one name is the name of its parameters' declaration")
            if "name" in cls.__dict__ and cls.name != declared:
                raise TypeError(f"{cls.__name__} is named {cls.name!r} but runs {declared!r}: "
                                "an algorithm has one name (leave the adapter's out)")
            cls.name = declared
        domain = cls.__dict__.get("record_domain")
        if domain is not None and "worst_case_forget" not in cls.__dict__:
            cls.worst_case_forget = rule_text(domain.assumption)

    def parse_params(self, data: Mapping[str, Any], path: str) -> Any:
        """The ``[algorithm]`` table (without ``name``) as ``params_type``; SpecError naming
        the field if bad."""
        try:
            return from_fields(self.params_type, data, path)
        except ParameterError as error:
            raise fail(f"{path}.{error.field}", error.problem) from None

    def parameters(self) -> tuple[ParameterDoc, ...]:
        """The hyper-parameters with their defaults and their declared help."""
        return describe_parameters(self.params_type, parameter_help(self.params_type))

    def plan(self, spec: AuditSpec, data: SpecData) -> MechanismPlan:
        """The certificate and the mechanism's config for a validated spec and its data (the
        adapter's own part of :meth:`prepare`)."""
        raise NotImplementedError(f"the {self.name} adapter defines neither plan nor prepare")

    def domain_for(self, spec: AuditSpec, data: SpecData) -> RecordDomain | None:
        """The records the certificate covers, where a worst-case record is planted
        (``record_domain`` here)."""
        return self.record_domain

    def prepared_notes(self, spec: AuditSpec, data: SpecData) -> tuple[str, ...]:
        """Notes of the prepared audit beside the data, mechanism and planting notes (none)."""
        return ()

    def prepare(self, spec: AuditSpec, *, device: str) -> PreparedAudit:
        """Certificate and mechanism of a validated spec: :meth:`plan` on the spec's data, the
        mechanism built from it, the worst-case record planted when the spec asks for it."""
        mechanism_type = self.mechanism_type
        if mechanism_type is None:
            raise NotImplementedError(f"the {self.name} adapter names no mechanism_type")
        spec_json = spec.canonical_json()
        data = mechanism_type.load_data(spec_json)
        if self.unit_features is not None:
            require_unit_features(data, self.unit_features)
        plan = self.plan(spec, data)
        mechanism = mechanism_type(spec_json=spec_json, config=plan.config, device=device,
                                   dtype=spec.dtype, **plan.mechanism_fields)
        notes: tuple[str, ...] = ()
        if spec.request.forget == "worst-case":
            domain = self.domain_for(spec, data)
            if domain is None:
                raise fail("spec.request.forget", f"the {self.name} adapter states no "
                           "worst-case record")
            mechanism, data, notes = plant_worst_case(spec, mechanism, data, domain=domain,
                                                      noise_field=str(self.noise_scale_field))
        if self.unit_features is not None:
            require_unit_features(data, self.unit_features)
        return prepared_audit(spec, certificate=plan.certificate, mechanism=mechanism,
                              device=device, data=data,
                              extra_notes=(*self.prepared_notes(spec, data), *notes))

    def demo_spec(self, *, trials: int | None = None, device: str | None = None) -> AuditSpec:
        """The embedded demo audit (``demo``), with ``trials`` N and ``device`` if given."""
        demo = self.demo
        return demo_audit_spec(
            algorithm=demo.params, name=demo.name, trials=trials, default_trials=demo.trials,
            device=device, request=demo.request, certificate=demo.certificate,
            dataset=demo.dataset, model=demo.model, chunk_size=demo.chunk_size,
            attacks=demo.attacks)

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

    def exact_cases(self) -> tuple[Any, ...]:
        """Makers of the small exact instances ``unlearn bench exact`` runs (none here)."""
        return ()


FLIP_FIRST_RECORD = RequestSpec(kind="replace", replacement="flip", indices=(0,))


def demo_audit_spec(*, algorithm: Any, name: str, trials: int | None, default_trials: int,
                    device: str | None, request: RequestSpec | None = None,
                    certificate: CertificateSpec | None = None,
                    dataset: DatasetSpec | None = None, model: ModelSpec | None = None,
                    chunk_size: int = 2500,
                    attacks: tuple[str, ...] | None = DEFAULT_ATTACKS) -> AuditSpec:
    """A demo audit: the algorithm's own parts plus the settings every demo shares (the loss
    and projection attacks unless ``attacks`` names others, None leaving them to the default
    rule; both statistics, all estimators, 95% joint confidence, seed 0, one pilot trial per
    ten). Unless given: digits 3-vs-8; the request flips the label of record 0 (for a
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
        attacks=attacks,
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
