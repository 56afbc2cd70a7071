"""The audit runner: spec in, certificate, trials in resumable chunks, analysis, report out.

Entry points:

* :func:`run_audit` (``unlearn audit run``): an :class:`~audits.spec.AuditSpec` in, a report
  out. The certificate comes from the algorithm's adapter (:mod:`audits.registry`) through the
  bound engine, calibrated to the spec's target; the trials run in chunks
  (:mod:`audits.execution`), locally or as Ray tasks, and every finished chunk is stored in
  ``audit.sqlite`` so that a killed audit resumes where it stopped and gives a bit-identical
  report.
* :func:`audit_mechanism`: the same for your own :class:`~audits.protocols.TrialMechanism`.
* :func:`audit_scores`: the analysis and report for precomputed score arrays.

Each builds an :class:`~audits.plan.AuditPlan` (settings checked once, certificate, trial
source, cache key); the trials run (:func:`_run`), and
:func:`audits.report.assemble.build_report` turns plan and trials into the report:
:mod:`audits.analysis` the lower bounds and estimates, :mod:`audits.verdict` the verdict.
"""

from __future__ import annotations

import contextlib
import functools
import json
import linecache
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audits import progress as progress_lines
from audits.adapters.protocol import PreparedAudit
from audits.chunks import printable
from audits.estimators import DEFAULT_ESTIMATORS
from audits.execution import ChunkResults, resolve_device, run_chunks
from audits.loader import adapter_of, load_spec
from audits.options import Backend, ExecutionOptions
from audits.plan import AuditPlan, mechanism_plan, scores_plan, spec_plan
from audits.protocols import Certificate, ModelOutputs, TrialBatch, TrialMechanism
from audits.report.assemble import build_report
from audits.report.schema import SCHEMA_ID, SCHEMA_VERSION
from audits.score_input import score_sides
from audits.seeds import derived_seed
from audits.spec import AuditSettings, AuditSpec
from audits.statistics import DEFAULT_STATISTICS, ScoreOrientation
from audits.store import STORE_NAME, FolderLock, check_folder
from audits.versions import code_version
from empirical.engine.memory import release_freed_memory

__all__ = [
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "AuditResult",
    "ExecutionOptions",
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
    def certified_delta(self) -> float:
        """The delta of the point the (epsilon, delta) tests were compared at: the stated delta,
        or the privacy-profile point the pilot chose for a certificate with a Rényi curve."""
        from audits.report.text import tested_point

        return float(tested_point(self.report)[1])

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
    """The validated copy of ``report`` as the result, written to ``out_dir`` when given.
    ``report`` is consumed: emptied once copied, so that its lists (a score and an accuracy per
    trial) are not held twice while the page is drawn."""
    from audits.report.schema import validate_report
    from audits.report.write import write_validated_report

    # the analysis' freed heap goes back before the report is copied, drawn and written
    release_freed_memory()
    plain = validate_report(report)
    report.clear()
    if out_dir is None:
        return AuditResult(plain, None)
    return AuditResult(plain, write_validated_report(plain, out_dir))


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
    from audits.report.schema import HTML_NAME, JSON_NAME

    if out_dir is None:
        return
    check_folder(out_dir, names=(JSON_NAME, HTML_NAME))  # the toolkit's folder, even to replace
    if replace:
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
                  backend: Backend = Backend.LOCAL) -> PreparedAudit:
    """Certificate and mechanism of a spec, without running anything (with the exact privacy
    loss where the adapter knows the exact output laws, :mod:`audits.exact_loss`)."""
    from audits.exact_loss import attach_exact_law

    spec = load_spec(spec)
    adapter = adapter_of(spec)
    return attach_exact_law(spec, adapter,
                            adapter.prepare(spec, device=resolve_device(spec.device, backend)))


# ----------------------------------------------------------------------------------------------
# Entry points.


_LOCAL = ExecutionOptions()


def reported(run: Callable[..., AuditResult]) -> Callable[..., AuditResult]:
    """Progress lines (phases, stored chunks reused, a heartbeat) on stderr when the
    ``options`` ask for them (:attr:`ExecutionOptions.progress`)."""
    @functools.wraps(run)
    def wrapper(*args: Any, **kwargs: Any) -> AuditResult:
        options = kwargs.get("options") or _LOCAL
        with progress_lines.reporting("audit", enabled=options.progress):
            return run(*args, **kwargs)
    return wrapper


@reported
def run_audit(
    spec: AuditSpec | Mapping[str, Any] | str | Path,
    *,
    out_dir: str | Path | None = None,
    options: ExecutionOptions | None = None,
    extra_figures: bool = True,
) -> AuditResult:
    """Run a spec-driven audit; with ``out_dir``, store chunks there and write the report.

    ``options`` (:class:`~audits.options.ExecutionOptions`, default: locally, quietly) say how
    it runs. An ``out_dir`` holding another spec's audit is refused unless ``options.replace``;
    stored chunks failing their checksum are refused unless ``options.resume`` (they are then
    recomputed and the report says so). One audit at a time writes a folder: another one
    running there is refused, and so are symbolic links among the folder's files; nothing is
    written before these checks pass. The store keeps what the report needs (main trials'
    statistics only as their projection scores); ``options.keep_statistics`` stores the
    statistics of every trial too; ``options.device`` replaces the spec's device.

    Rerunning with the same spec and ``out_dir`` resumes: finished chunks are read back, not
    recomputed, and the report is identical (apart from its creation time and timing).
    ``options.backend`` "ray" sends chunks to Ray (``options.ray_address`` or a local
    instance). ``extra_figures`` False leaves out the algorithm's own figures (its adapter's
    ``extra_plots``), which cost time and change no number of the verdict.
    """
    start = time.perf_counter()
    options = options or _LOCAL
    spec = load_spec(spec)
    if options.device is not None:
        spec = load_spec(spec.replace(device=options.device))
    replace = options.replace

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
    plan = spec_plan(spec, prepare_audit(spec, backend=options.backend), started=start,
                     extra_plots=tuple(adapter_of(spec).extra_plots(spec)) if extra_figures
                     else ())
    _release_preparation_memory()
    with _writer(out_dir, check=refusals):
        # where chunks ran does not change the numbers, so it stays out of the report
        chunks = _run(plan, out_dir=out_dir, options=options)
        return _finish(build_report(plan, chunks), out_dir)


def _release_preparation_memory() -> None:
    """Before the trials: hand back what preparing the audit left behind. Importing torch reads
    whole source files into :mod:`linecache` (its operator registrations record their callers'
    source lines), about 2 MB of text no audit shows; the certificate's computation frees heap
    that glibc keeps. Both would otherwise stay resident under every later phase's peak.

    Only the lines read from files are dropped (linecache reads them again when a traceback
    needs them); sources registered without a file, such as notebook cells or sympy's lambdified
    functions, cannot be read again and stay."""
    for name, entry in list(linecache.cache.items()):
        if len(entry) == 4 and entry[1] is not None:  # (size, mtime, lines, path) of a file
            linecache.cache.pop(name, None)
    release_freed_memory()


def _run(plan: AuditPlan, *, out_dir: str | Path | None,
         options: ExecutionOptions) -> ChunkResults:
    """The plan's trials, in chunks (stored in ``out_dir`` when the plan stores them)."""
    settings = plan.settings
    return run_chunks(
        plan.mechanism, trials=settings.trials, pilot_trials=settings.pilot_trials,
        chunk_size=settings.chunk_size, seed=settings.seed,
        out_dir=out_dir if plan.stored else None, audit_key=plan.cache_key,
        spec_json=plan.spec_json, options=options, label=f"audit {printable(settings.name, 60)}",
        project=plan.project)


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
    statistics: Sequence[str] = DEFAULT_STATISTICS,
    estimators: Sequence[str] = DEFAULT_ESTIMATORS,
    chunk_size: int = 250,
    out_dir: str | Path | None = None,
    cache_key: str | None = None,
    options: ExecutionOptions | None = None,
    name: str = "custom mechanism",
    direction: ScoreOrientation = ScoreOrientation.BOTH,
) -> AuditResult:
    """Audit your own :class:`~audits.protocols.TrialMechanism` against a certificate.

    ``attacks`` None uses every score the mechanism returns, plus the projection attack on its
    statistics when ``pilot_trials`` > 0. Chunks are stored in ``out_dir`` (and reused on a
    rerun) only when you give a ``cache_key`` that changes whenever your mechanism does; without
    one, nothing is cached and a rerun recomputes everything. ``direction``: "both" (default)
    tests each score orientation with the Bonferroni correction; "greater" (higher score =
    unlearned) or "less" when the score's orientation is known in advance. ``options`` as in
    :func:`run_audit` (``device`` aside: your mechanism holds its own); an ``out_dir`` holding
    another audit's report or chunks is refused unless ``options.replace``.
    """
    start = time.perf_counter()
    options = options or _LOCAL
    settings = AuditSettings(name=name, trials=trials, pilot_trials=pilot_trials,
                             confidence=confidence, seed=seed, attacks=attacks,
                             statistics=statistics, estimators=estimators,
                             chunk_size=chunk_size, direction=direction)
    plan = mechanism_plan(mechanism, certificate=certificate, settings=settings,
                          cache_key=cache_key, started=start)

    def refusals() -> None:
        _refuse_foreign_report(out_dir, replace=options.replace, field="spec_hash",
                               value=plan.cache_key)

    refusals()
    with _writer(out_dir, check=refusals):
        chunks = _run(plan, out_dir=out_dir, options=options)
        return _finish(build_report(plan, chunks), out_dir)


def audit_scores(
    *,
    unlearned: Mapping[str, Any],
    retrained: Mapping[str, Any],
    certificate: Certificate,
    confidence: float = 0.95,
    statistics: Sequence[str] = DEFAULT_STATISTICS,
    estimators: Sequence[str] = DEFAULT_ESTIMATORS,
    unlearned_accuracy: Any = None,
    retrained_accuracy: Any = None,
    seed: int = 0,
    out_dir: str | Path | None = None,
    name: str = "precomputed scores",
    direction: ScoreOrientation = ScoreOrientation.BOTH,
    replace: bool = False,
) -> AuditResult:
    """Audit precomputed attack scores: ``{attack: [n] or [n, E] scores}`` per side, or one
    array or list per side (:func:`audits.score_input.score_sides`: numbers or booleans, the
    same number of trials on both sides, else refused in one line).

    Scores must come from models independent of any choice made with them (a threshold is
    covered by the statistic; an attack tuned on these very scores is not). ``direction`` as in
    :func:`audit_mechanism`; with a Rényi certificate the histogram test of the whole curve runs
    too (it does not depend on the score's orientation). An ``out_dir`` holding the report of
    other scores or settings is refused unless ``replace``.
    """
    start = time.perf_counter()
    unlearned, retrained = score_sides(unlearned, retrained)
    batch = TrialBatch(ModelOutputs(scores=unlearned, accuracy=unlearned_accuracy),
                       ModelOutputs(scores=retrained, accuracy=retrained_accuracy))
    settings = AuditSettings(name=name, trials=batch.n_trials, pilot_trials=0,
                             confidence=confidence, seed=seed, attacks=None,
                             statistics=statistics, estimators=estimators,
                             chunk_size=max(1, batch.n_trials), direction=direction)
    plan = scores_plan(batch, certificate=certificate, settings=settings, started=start)

    def refusals() -> None:
        _refuse_foreign_report(out_dir, replace=replace, field="spec_hash", value=plan.cache_key)

    refusals()
    report = build_report(plan, ChunkResults.given(batch))
    with _writer(out_dir, check=refusals):
        return _finish(report, out_dir)
