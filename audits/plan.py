"""The plan of an audit: what every entry point of :mod:`audits.runner` settles before a trial runs.

An :class:`AuditPlan` holds the checked settings (:class:`~audits.spec.AuditSettings`), the
certificate, the trial source (a :class:`~audits.protocols.TrialMechanism`, or none for
precomputed scores), the key of the audit (the chunk store's and the report's ``spec_hash``),
the settings as the report records them, and what the report says about seeds, device and
notes. One builder per entry point: :func:`spec_plan` (``unlearn audit run``),
:func:`mechanism_plan` (your own mechanism) and :func:`scores_plan` (precomputed scores). The
trials then run (:func:`audits.execution.run_chunks`) and
:func:`audits.report.assemble.build_report` turns the plan and the trials into the report.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from audits.attacks import projects_statistics
from audits.protocols import Certificate, TrialBatch, TrialMechanism
from audits.spec import AuditSettings, AuditSpec
from audits.versions import code_version

if TYPE_CHECKING:
    from audits.adapters.protocol import PreparedAudit

__all__ = ["AuditPlan", "mechanism_plan", "scores_plan", "spec_plan"]

# How per-trial randomness derives from the seed, as the report of a spec-driven audit says.
_PER_TRIAL_SEEDS = ("torch generators seeded with BLAKE2b(seed | trial | stream) "
                    "(empirical.engine.trials.trial_seed)")


@dataclass(frozen=True, kw_only=True)
class AuditPlan:
    """One audit, settled: see the module docstring.

    ``spec`` is what the report records as the audit's spec, ``spec_json`` what the chunk store
    keys on next to ``cache_key``; ``stored`` whether chunks are stored in the output folder
    (and read back on a rerun); ``project`` whether main chunks store their statistics
    projected on the pilot's direction; ``exact_privacy_loss`` the mechanism's exact loss where
    its output laws are known (:mod:`audits.exact_loss`); ``attacks_rule`` what chose the
    attacks (the report's ``empirical.attacks_rule``). ``seeds`` and ``notes`` go to the
    report after the seeds and notes of the trials themselves; ``started`` is the
    ``time.perf_counter()`` the report's wall time counts from.
    """

    settings: AuditSettings
    certificate: Certificate
    mechanism: TrialMechanism | None
    cache_key: str
    spec: Mapping[str, Any]
    spec_json: str
    stored: bool
    project: bool
    device: str
    seeds: Mapping[str, Any]
    started: float
    notes: tuple[str, ...] = ()
    extra_plots: tuple[Mapping[str, Any], ...] = ()
    exact_privacy_loss: Mapping[str, Any] | None = None
    attacks_rule: str = ""


def spec_plan(spec: AuditSpec, prepared: PreparedAudit, *, started: float,
              extra_plots: tuple[Mapping[str, Any], ...] = ()) -> AuditPlan:
    """The plan of a spec-driven audit, from the adapter's prepared certificate and mechanism:
    it runs the attacks resolved when the audit was prepared
    (:func:`audits.exact_loss.resolve_attacks`), and is keyed by the spec (as written: attacks
    left to the default stay ``null`` there), the code version, the mechanism's fingerprint
    and those attacks."""
    if prepared.attacks is None:
        raise ValueError("the prepared audit's attacks are not resolved: prepare it with "
                         "audits.runner.prepare_audit")
    attacks = tuple(prepared.attacks)
    key = hashlib.sha256(
        f"{spec.digest(code_version())}|{prepared.fingerprint}|{json.dumps(attacks)}".encode()
    ).hexdigest()
    return AuditPlan(
        settings=spec.settings_with(attacks), certificate=prepared.certificate,
        mechanism=prepared.mechanism, cache_key=key, spec=spec.to_dict(),
        spec_json=spec.canonical_json(), stored=True, project=projects_statistics(attacks),
        device=prepared.device, seeds={**prepared.seeds, "per_trial": _PER_TRIAL_SEEDS},
        started=started, notes=tuple(prepared.notes), extra_plots=tuple(extra_plots),
        exact_privacy_loss=prepared.exact_privacy_loss, attacks_rule=prepared.attacks_rule)


def mechanism_plan(mechanism: TrialMechanism, *, certificate: Certificate,
                   settings: AuditSettings, cache_key: str | None,
                   started: float) -> AuditPlan:
    """The plan of an audit of your own mechanism: keyed by the settings, the mechanism's
    description, the code version and your ``cache_key``; chunks are stored only with one."""
    if not isinstance(mechanism, TrialMechanism):
        raise ValueError("mechanism must have a run_trials(seed=, first_trial=, n_trials=) method")
    _check_certificate(certificate)
    recorded = settings.to_dict()
    recorded["mechanism"] = str(getattr(mechanism, "description", type(mechanism).__name__))
    recorded_json = json.dumps(recorded, sort_keys=True)
    key = hashlib.sha256(f"{recorded_json}|{code_version()}|{cache_key}".encode()).hexdigest()
    return AuditPlan(
        settings=settings, certificate=certificate, mechanism=mechanism, cache_key=key,
        spec=recorded, spec_json=recorded_json, stored=cache_key is not None,
        project=projects_statistics(settings.attacks),
        device=str(getattr(mechanism, "device", "cpu")), seeds={}, started=started,
        attacks_rule=("every score the mechanism's trials give, and the projection attack "
                      "where there are pilot trials" if settings.attacks is None
                      else "named by the caller"))


def scores_plan(batch: TrialBatch, *, certificate: Certificate, settings: AuditSettings,
                started: float) -> AuditPlan:
    """The plan of an audit of precomputed scores: keyed by the settings and the scores."""
    _check_certificate(certificate)
    recorded = settings.to_dict()
    digest = hashlib.sha256(json.dumps(recorded, sort_keys=True).encode())
    for key, array in sorted(batch.to_arrays().items()):
        digest.update(key.encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return AuditPlan(
        settings=settings, certificate=certificate, mechanism=None, cache_key=digest.hexdigest(),
        spec=recorded, spec_json=json.dumps(recorded, sort_keys=True), stored=False,
        project=False, device="precomputed", seeds={}, started=started,
        attacks_rule="every score given")


def _check_certificate(certificate: Any) -> None:
    if not isinstance(certificate, Certificate):
        raise ValueError("certificate must be an audits.protocols.Certificate")
