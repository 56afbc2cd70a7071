"""The audit runner: spec in, certificate, trials in resumable chunks, analysis, report out.

Entry points:

* :func:`run_audit` (``unlearn audit run``): an :class:`~audits.spec.AuditSpec` in, a report
  out. The certificate comes from the algorithm's adapter (:mod:`audits.registry`) through the
  bound engine, calibrated to the spec's target; the trials run in chunks
  (:mod:`audits.execution`), locally or as Ray tasks, and every finished chunk is stored in
  ``audit.sqlite`` so that a killed audit resumes where it stopped and gives a bit-identical
  report; :mod:`audits.analysis` turns them into lower bounds, estimates and the verdict.
* :func:`audit_mechanism`: the same for your own :class:`~audits.protocols.TrialMechanism`.
* :func:`audit_scores`: the analysis and report for precomputed score arrays.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audits import progress as progress_lines
from audits.adapters.protocol import PreparedAudit
from audits.analysis import build_report
from audits.execution import code_version, printable, resolve_device, run_chunks
from audits.protocols import Certificate, ModelOutputs, TrialBatch, TrialMechanism
from audits.report.schema import SCHEMA_ID, SCHEMA_VERSION
from audits.seeds import derived_seed
from audits.spec import (
    ESTIMATORS,
    MAX_SEED,
    STATISTICS,
    AuditSpec,
    check_confidence,
    load_spec,
)
from audits.store import STORE_NAME, FolderLock, check_folder

__all__ = [
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "AuditResult",
    "PreparedAudit",
    "audit_mechanism",
    "audit_scores",
    "code_version",
    "comparable",
    "derived_seed",
    "prepare_audit",
    "run_audit",
]


# ----------------------------------------------------------------------------------------------
# Results.


@dataclass(frozen=True)
class AuditResult:
    """A finished audit: the report dict and, when written, its files."""

    report: dict[str, Any]
    paths: Any = None  # audits.report.schema.ReportPaths when an output directory was given

    @property
    def status(self) -> str:
        """The verdict: CONSISTENT, VIOLATION or INCONCLUSIVE."""
        return self.report["verdict"]["status"]

    @property
    def certified_epsilon(self) -> float:
        """The certificate's epsilon."""
        return float(self.report["certificate"]["epsilon"])

    @property
    def max_lower_bound(self) -> float:
        """The largest empirical lower bound on epsilon."""
        return float(self.report["verdict"]["max_lower_bound"])

    @property
    def tightness(self) -> float:
        """Largest lower bound over the certified epsilon (inf for a zero certificate)."""
        value = self.report["verdict"]["tightness"]
        return math.inf if value == "inf" else float(value)

    def summary(self) -> str:
        """The terminal summary of the report."""
        from audits.report.text import summary_text

        return summary_text(self.report)


def comparable(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report without what may differ between identical runs (creation time, timing)."""
    out = json.loads(json.dumps(report))
    out.pop("created", None)
    out.pop("timing", None)
    return out


def _finish(report: dict, out_dir: str | Path | None) -> AuditResult:
    from audits.report.schema import validate_report
    from audits.report.write import write_report

    if out_dir is None:
        return AuditResult(validate_report(report), None)
    paths = write_report(report, out_dir)
    return AuditResult(validate_report(report), paths)


@contextlib.contextmanager
def _writer(out_dir: str | Path | None, *, check: Callable[[], None]) -> Iterator[None]:
    """Hold ``out_dir`` for one audit: its files must not be symbolic links, no other audit may
    write it meanwhile (:class:`~audits.store.FolderLock`), and ``check`` (refusals that read
    the folder) runs again under the lock."""
    from audits.report.schema import HTML_NAME, JSON_NAME

    if out_dir is None:
        yield
        return
    with FolderLock(out_dir):
        check_folder(out_dir, names=(JSON_NAME, HTML_NAME))
        check()
        yield


def _refuse_foreign_report(out_dir: str | Path | None, *, replace: bool, field: str,
                           value: Any) -> None:
    """Before any work: refuse an ``out_dir`` whose report.json belongs to another audit, unless
    ``replace``. ``field``/``value`` identify this audit in the report: ``"spec"`` for spec-driven
    audits (a rerun of the same spec under new code is the same audit), ``"spec_hash"`` for
    audits of a mechanism or of precomputed scores (the hash covers the scores themselves).
    """
    from audits.report.schema import JSON_NAME

    if out_dir is None or replace:
        return
    existing = Path(out_dir) / JSON_NAME
    if not existing.exists():
        return
    try:
        previous = json.loads(existing.read_text(encoding="utf-8"))
        # compare as JSON reads back (tuples become lists)
        same = isinstance(previous, dict) and previous.get(field) == json.loads(json.dumps(value))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        same = False
    if not same:
        raise ValueError(f"{existing} holds the report of another audit; choose another folder "
                         "or pass replace=True (--replace) to overwrite it")


def prepare_audit(spec: AuditSpec | Mapping[str, Any] | str | Path, *,
                  backend: str = "local") -> PreparedAudit:
    """Certificate and mechanism of a spec, without running anything."""
    spec = load_spec(spec)
    return spec.adapter.prepare(spec, device=resolve_device(spec.device, backend))


# ----------------------------------------------------------------------------------------------
# Entry points.


def reported(run: Callable[..., AuditResult]) -> Callable[..., AuditResult]:
    """Progress lines (phases, stored chunks reused, a heartbeat) on stderr with ``progress=True``."""
    @functools.wraps(run)
    def wrapper(*args: Any, **kwargs: Any) -> AuditResult:
        with progress_lines.reporting("audit", enabled=bool(kwargs.get("progress"))):
            return run(*args, **kwargs)
    return wrapper


@reported
def run_audit(
    spec: AuditSpec | Mapping[str, Any] | str | Path,
    *,
    out_dir: str | Path | None = None,
    backend: str = "local",
    progress: bool = False,
    ray_address: str | None = None,
    replace: bool = False,
    resume: bool = False,
    keep_statistics: bool = False,
) -> AuditResult:
    """Run a spec-driven audit; with ``out_dir``, store chunks there and write the report.

    An ``out_dir`` holding another spec's audit is refused unless ``replace``; stored chunks
    failing their checksum are refused unless ``resume`` (they are then recomputed and the
    report says so). One audit at a time writes a folder: another one running there is
    refused, and so are symbolic links among the folder's files; nothing is written before
    these checks pass. The store keeps what the report needs (main trials' statistics only as
    their projection scores); ``keep_statistics`` stores the statistics of every trial too.

    Rerunning with the same spec and ``out_dir`` resumes: finished chunks are read back, not
    recomputed, and the report is identical (apart from its creation time and timing).
    ``backend="ray"`` sends chunks to Ray (``ray_address`` or a local instance).
    """
    start = time.perf_counter()
    spec = load_spec(spec)

    def refusals() -> None:
        from audits.report.schema import HTML_NAME, JSON_NAME

        if out_dir is None:
            return
        check_folder(out_dir, names=(JSON_NAME, HTML_NAME))
        if not (Path(out_dir) / STORE_NAME).exists():
            # with a store, the store itself refuses another spec (and says which); without
            # one, a report.json left by another kind of audit must not be overwritten either
            _refuse_foreign_report(out_dir, replace=replace, field="spec", value=spec.to_dict())

    refusals()  # before the certificate is computed: a refused folder costs nothing
    progress_lines.phase("preparing the audit (data, model, certificate)")
    prepared = prepare_audit(spec, backend=backend)
    spec_json = spec.canonical_json()
    audit_key = hashlib.sha256(
        f"{spec.digest(code_version())}|{prepared.fingerprint}".encode()).hexdigest()
    store_notes: list[str] = []
    with _writer(out_dir, check=refusals):
        results = run_chunks(
            prepared.mechanism, trials=spec.trials, pilot_trials=spec.pilot_trials,
            chunk_size=spec.chunk_size, seed=spec.seed, out_dir=out_dir, audit_key=audit_key,
            spec_json=spec_json, backend=backend, progress=progress,
            label=f"audit {printable(spec.name, 60)}", ray_address=ray_address,
            replace=replace, resume=resume, notes=store_notes,
            project="projection" in spec.attacks, keep_statistics=keep_statistics)
        # where chunks ran does not change the numbers, so it stays out of the report
        report = build_report(
            spec_dict=spec.to_dict(), spec_hash=audit_key, certificate=prepared.certificate,
            main=results.main, pilot=results.pilot, attacks=spec.attacks,
            statistics=spec.statistics, estimators=spec.estimators,
            confidence=spec.confidence, seed=spec.seed,
            seeds={"pilot_seed": results.pilot_seed, **prepared.seeds,
                   "per_trial": "torch generators seeded with BLAKE2b(seed | trial | stream) "
                                "(empirical.trials.trial_seed)"},
            device=prepared.device, wall_seconds=time.perf_counter() - start,
            chunks=results.chunks, chunks_resumed=results.resumed,
            notes=[*prepared.notes, *store_notes], extra_plots=spec.adapter.extra_plots(spec),
            projections=results.projections)
        return _finish(report, out_dir)




@reported
def audit_mechanism(
    mechanism: TrialMechanism,
    *,
    certificate: Certificate,
    trials: int,
    pilot_trials: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    attacks: Sequence[str] | None = None,
    statistics: Sequence[str] = ("bonferroni-pareto",),
    estimators: Sequence[str] = ("plugin-epsilon", "auc"),
    chunk_size: int = 250,
    out_dir: str | Path | None = None,
    cache_key: str | None = None,
    backend: str = "local",
    progress: bool = False,
    ray_address: str | None = None,
    name: str = "custom mechanism",
    direction: str = "both",
    replace: bool = False,
) -> AuditResult:
    """Audit your own :class:`~audits.protocols.TrialMechanism` against a certificate.

    ``attacks`` None uses every score the mechanism returns, plus the projection attack on its
    statistics when ``pilot_trials`` > 0. Chunks are stored in ``out_dir`` (and reused on a
    rerun) only when you give a ``cache_key`` that changes whenever your mechanism does; without
    one, nothing is cached and a rerun recomputes everything. ``direction``: "both" (default)
    tests each score orientation with the Bonferroni correction; "greater" (higher score =
    unlearned) or "less" when the score's orientation is known in advance. An ``out_dir`` holding
    another audit's report or chunks is refused unless ``replace``.
    """
    start = time.perf_counter()
    if not isinstance(mechanism, TrialMechanism):
        raise ValueError("mechanism must have a run_trials(seed=, first_trial=, n_trials=) method")
    if not isinstance(certificate, Certificate):
        raise ValueError("certificate must be an audits.protocols.Certificate")
    settings = _custom_settings(trials=trials, pilot_trials=pilot_trials, confidence=confidence,
                                seed=seed, attacks=attacks, statistics=statistics,
                                estimators=estimators, chunk_size=chunk_size, name=name,
                                direction=direction)
    settings["mechanism"] = str(getattr(mechanism, "description", type(mechanism).__name__))
    settings_json = json.dumps(settings, sort_keys=True)
    audit_key = hashlib.sha256(
        f"{settings_json}|{code_version()}|{cache_key}".encode()).hexdigest()
    def refusals() -> None:
        _refuse_foreign_report(out_dir, replace=replace, field="spec_hash", value=audit_key)

    refusals()
    store_dir = out_dir if cache_key is not None else None
    with _writer(out_dir, check=refusals):
        results = run_chunks(
            mechanism, trials=trials, pilot_trials=pilot_trials, chunk_size=chunk_size,
            seed=seed, out_dir=store_dir, audit_key=audit_key, spec_json=settings_json,
            backend=backend, progress=progress, label=f"audit {printable(name, 60)}",
            ray_address=ray_address, replace=replace,
            project=attacks is None or "projection" in attacks)
        report = build_report(
            spec_dict=settings, spec_hash=audit_key, certificate=certificate, main=results.main,
            pilot=results.pilot, attacks=attacks, statistics=settings["statistics"],
            estimators=settings["estimators"], confidence=confidence, seed=seed,
            seeds={"pilot_seed": results.pilot_seed},
            device=str(getattr(mechanism, "device", "cpu")),
            wall_seconds=time.perf_counter() - start, chunks=results.chunks,
            chunks_resumed=results.resumed, direction=direction,
            projections=results.projections)
        return _finish(report, out_dir)


def _custom_settings(*, trials, pilot_trials, confidence, seed, attacks, statistics,
                     estimators, chunk_size, name, direction="both") -> dict[str, Any]:
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 2:
        raise ValueError(f"trials must be an integer >= 2, got {trials!r}")
    if isinstance(pilot_trials, bool) or not isinstance(pilot_trials, int) or pilot_trials < 0:
        raise ValueError(f"pilot_trials must be a non-negative integer, got {pilot_trials!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer in [0, 2**63 - 1], got {seed!r}")
    _check_confidence(confidence)
    if direction not in ("both", "greater", "less"):
        raise ValueError(f"direction must be 'both', 'greater' or 'less', got {direction!r}")
    statistics = list(statistics)
    estimators = list(estimators)
    for item in statistics:
        if item not in STATISTICS:
            raise ValueError(f"unknown statistic {item!r}; known: {', '.join(STATISTICS)}")
    if not statistics:
        raise ValueError("give at least one statistic")
    for item in estimators:
        if item not in ESTIMATORS:
            raise ValueError(f"unknown estimator {item!r}; known: {', '.join(ESTIMATORS)}")
    return {"name": name, "trials": trials, "pilot_trials": pilot_trials,
            "confidence": confidence, "seed": seed,
            "attacks": None if attacks is None else list(attacks), "statistics": statistics,
            "estimators": estimators, "chunk_size": chunk_size, "direction": direction}


def _check_confidence(confidence: float) -> None:
    check_confidence(confidence, "confidence")


def audit_scores(
    *,
    unlearned: Mapping[str, Any],
    retrained: Mapping[str, Any],
    certificate: Certificate,
    confidence: float = 0.95,
    statistics: Sequence[str] = ("bonferroni-pareto",),
    estimators: Sequence[str] = ("plugin-epsilon", "auc"),
    unlearned_accuracy: Any = None,
    retrained_accuracy: Any = None,
    seed: int = 0,
    out_dir: str | Path | None = None,
    name: str = "precomputed scores",
    direction: str = "both",
    replace: bool = False,
) -> AuditResult:
    """Audit precomputed attack scores: ``{attack: [n] or [n, E] array}`` per side.

    Scores must come from models independent of any choice made with them (a threshold is
    covered by the statistic; an attack tuned on these very scores is not). ``direction`` as in
    :func:`audit_mechanism`; with a Rényi certificate the histogram test of the whole curve runs
    too (it does not depend on the score's orientation). An ``out_dir`` holding the report of
    other scores or settings is refused unless ``replace``.
    """
    start = time.perf_counter()
    batch = TrialBatch(ModelOutputs(scores=unlearned, accuracy=unlearned_accuracy),
                       ModelOutputs(scores=retrained, accuracy=retrained_accuracy))
    if not isinstance(certificate, Certificate):
        raise ValueError("certificate must be an audits.protocols.Certificate")
    settings = _custom_settings(trials=batch.n_trials, pilot_trials=0, confidence=confidence,
                                seed=seed, attacks=None, statistics=statistics,
                                estimators=estimators, chunk_size=max(1, batch.n_trials),
                                name=name, direction=direction)
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for key, array in sorted(batch.to_arrays().items()):
        digest.update(key.encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    def refusals() -> None:
        _refuse_foreign_report(out_dir, replace=replace, field="spec_hash",
                               value=digest.hexdigest())

    refusals()
    report = build_report(
        spec_dict=settings, spec_hash=digest.hexdigest(), certificate=certificate, main=batch,
        pilot=None, attacks=None, statistics=statistics, estimators=estimators,
        confidence=confidence, seed=seed, seeds={}, device="precomputed",
        wall_seconds=time.perf_counter() - start, chunks=0, chunks_resumed=0,
        direction=direction)
    with _writer(out_dir, check=refusals):
        return _finish(report, out_dir)
