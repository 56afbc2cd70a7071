"""The seam between the generic audit machinery and one algorithm family.

An :class:`AlgorithmAdapter` is everything the runner, the spec loader, the CLI and the bench
need to know about an algorithm (in the spirit of DP-Auditorium's small protocols around one
generic test runner): how its ``[algorithm]`` table is parsed and cross-checked against the
rest of a spec, which models and calibrated parameters it supports, its demo spec, and how a
spec becomes a certificate plus a :class:`~audits.protocols.TrialMechanism`
(:class:`PreparedAudit`). Adapters register themselves in :mod:`audits.registry`; the
certificate goes through the one shared function :func:`audits.certify.certify`.

This module imports only :mod:`audits.protocols`; it never names an algorithm.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from audits.protocols import Certificate, TrialMechanism

if TYPE_CHECKING:  # annotations only
    from audits.spec import AuditSpec

__all__ = ["AlgorithmAdapter", "ParameterDoc", "PreparedAudit", "describe_parameters"]


@dataclass(frozen=True)
class PreparedAudit:
    """What an adapter gives the runner for a spec: the certified side and the trials."""

    certificate: Certificate
    mechanism: TrialMechanism
    device: str
    fingerprint: str  # changes whenever the mechanism's numbers may change (chunk-store key)
    seeds: Mapping[str, Any]
    notes: tuple[str, ...] = ()
    # the report's exact_privacy_loss (audits.exact_loss), None where no exact law is known
    exact_privacy_loss: Mapping[str, Any] | None = None
    # the attacks the audit runs and why (audits.exact_loss.resolve_attacks); None until the
    # runner resolves them from the spec and the exact laws
    attacks: tuple[str, ...] | None = None
    attacks_rule: str = ""


@dataclass(frozen=True)
class ParameterDoc:
    """One hyper-parameter of an algorithm, for ``unlearn audit algorithms``."""

    name: str
    default: Any
    description: str


@runtime_checkable
class AlgorithmAdapter(Protocol):
    """One algorithm family, plugged into the generic audit.

    ``name`` is the spec's ``algorithm.name``; ``description`` one line for listings;
    ``params_type`` the frozen dataclass of hyper-parameters (with ``name`` and ``to_dict()``);
    ``models`` the ``spec.model.name`` values it can train; ``calibratable`` the values of
    ``spec.certificate.calibrate`` it can solve for (the first is the default).

    Hooks with a default in :class:`~audits.adapters.base.AdapterBase`: ``extra_plots`` (line
    plots for the report), ``benchmark_trials`` (``unlearn bench trials``; None for the
    generic batched-vs-loop benchmark of the demo's mechanism), ``bench_bound``,
    ``bench_point``, ``bench_reproduction`` for ``unlearn bench bounds`` (a published table's
    bound, point and reproduction; None: the bound of the demo's certificate at its inputs),
    and ``exact_laws`` (None: the output laws of the mechanism as run are not known exactly).
    ``worst_case_forget`` states what ``[request] forget = "worst-case"`` plants within the
    paper's assumptions (None: the adapter cannot honour it and such a spec is refused);
    ``extra_attacks`` the attacks beyond ``loss`` and ``projection`` its mechanism gives.
    The noise-scale hook of ``unlearn bench tightness``: ``noise_scale_field`` names the
    hyper-parameter that multiplies every noise draw of the mechanism without changing its
    certificate (None: the adapter has none), ``scaled_noise`` says in words which noises that
    is, and ``with_noise_reduced`` returns a spec whose mechanism draws its noise divided by a
    factor while its certificate stays the one certified for the original noise.
    """

    name: str
    description: str
    params_type: type
    models: tuple[str, ...]
    calibratable: tuple[str, ...]
    bench_bound: str | None
    bench_point: Mapping[str, Any]
    bench_reproduction: str | None
    noise_scale_field: str | None
    scaled_noise: str
    worst_case_forget: str | None
    extra_attacks: tuple[str, ...]

    def parse_params(self, data: Mapping[str, Any], path: str) -> Any:
        """The ``[algorithm]`` table (without ``name``) as ``params_type``; SpecError if bad."""
        ...

    def parameters(self) -> tuple[ParameterDoc, ...]:
        """The hyper-parameters with defaults and one-line descriptions."""
        ...

    def check_spec(self, spec: AuditSpec) -> None:
        """Cross-field checks between the algorithm's parameters and the rest of the spec."""
        ...

    def demo_spec(self, *, trials: int | None = None, device: str | None = None) -> AuditSpec:
        """The embedded demo audit of this algorithm (``unlearn audit demo --algorithm``)."""
        ...

    def prepare(self, spec: AuditSpec, *, device: str) -> PreparedAudit:
        """Certificate and mechanism for a validated spec; ``device`` is already resolved."""
        ...

    def extra_plots(self, spec: AuditSpec) -> list[dict[str, Any]]:
        """Line plots (the report's ``plots.extra`` schema) drawn beside the generic figures."""
        ...

    def benchmark_trials(self, *, n_trials: int, device: str, dataset: str | None = None,
                         path: str | None = None, model: str | None = None
                         ) -> dict[str, Any] | None:
        """Batched against per-trial timing of the mechanism, or None for the generic one
        (``path``: the file or folder of a ``dataset`` read from the user's files)."""
        ...

    def with_noise_reduced(self, spec: AuditSpec, *, factor: float) -> AuditSpec:
        """``spec`` with every noise the mechanism draws divided by ``factor`` (>= 1) and the
        certificate left as certified for the undivided noise."""
        ...

    def exact_laws(self, spec: AuditSpec, prepared: PreparedAudit) -> Any:
        """The exact laws of the final parameters after unlearning and after retraining, as an
        :class:`empirical.divergences.gaussian_laws.GaussianLaws`, or None where the mechanism as run is
        not exactly Gaussian with one covariance (:mod:`audits.exact_loss` turns them into
        the report's exact privacy loss and the likelihood-ratio attack)."""
        ...

    def exact_cases(self) -> tuple[Any, ...]:
        """Makers (no-argument callables) of small :class:`audits.exact_truth.ExactCase`
        instances for ``unlearn bench exact``; empty where the adapter offers none."""
        ...


def describe_parameters(params_type: type, descriptions: Mapping[str, str]) -> tuple[ParameterDoc, ...]:
    """ParameterDoc for every field of a hyper-parameter dataclass (defaults read from it)."""
    out = []
    for f in dataclasses.fields(params_type):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        out.append(ParameterDoc(f.name, default, descriptions.get(f.name, "")))
    return tuple(out)
