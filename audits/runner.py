"""The audit runner: certificate, trials in resumable chunks, lower bounds, verdict, report.

Entry points:

* :func:`run_audit` (``unlearn audit run``): an :class:`~audits.spec.AuditSpec` in, a report
  out. The certificate comes from the bound engine (for PNSGD, Chien et al. 2024 Theorem 3.2,
  calibrated to the spec's target); the trials run in chunks on the trial engine, locally or as
  Ray tasks, and every finished chunk is stored in ``audit.sqlite`` so that a killed audit
  resumes where it stopped and gives a bit-identical report.
* :func:`audit_mechanism`: the same for your own :class:`~audits.protocols.TrialMechanism`.
* :func:`audit_scores`: the analysis and report for precomputed score arrays.

Soundness of the empirical side. Every lower bound is a Clopper-Pearson bound from
:mod:`empirical.statistics` whose threshold choice is covered by its strategy. The audit
reports several (attacks x statistics); their levels are split evenly (Bonferroni), so all of
them, and hence their maximum, hold simultaneously with probability at least ``confidence``.
Data-dependent attack parameters (the projection direction) come from pilot trials that have
their own seed and are never used to certify. Plug-in numbers are reported as estimates.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from audits.protocols import Certificate, ModelOutputs, TrialBatch, TrialMechanism
from audits.spec import (
    ESTIMATORS,
    STATISTICS,
    AuditSpec,
    DatasetSpec,
    PNSGDParams,
    RequestSpec,
    SpecError,
    load_spec,
)
from audits.store import STORE_NAME, ChunkStore

__all__ = [
    "AuditResult",
    "PNSGDMechanism",
    "PreparedAudit",
    "audit_mechanism",
    "audit_scores",
    "code_version",
    "comparable",
    "derived_seed",
    "prepare_audit",
    "register_algorithm_runner",
    "run_audit",
]

SCHEMA_ID = "unlearn-verify/audit-report"
SCHEMA_VERSION = 1
PILOT, MAIN = "pilot", "audit"
# Largest number of points kept per ROC curve in the report (the AUC uses every score), and
# of scores per side kept for the histograms.
_ROC_POINTS = 600
_PLOT_SCORES = 5000
# Score-side files whose code decides the numbers in the chunk store.
_CODE_FILES = ("audits/runner.py", "audits/spec.py", "audits/store.py", "audits/protocols.py")
_CODE_PACKAGES = ("empirical",)


# ----------------------------------------------------------------------------------------------
# Versions and seeds.


def toolkit_version() -> str:
    try:
        return importlib.metadata.version("unlearn-verify")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        return "0.1.0"


@functools.cache
def code_version() -> str:
    """Toolkit version plus a hash of the code that produces trial outputs.

    Hashes the sources of :mod:`empirical` and of the audit runner, spec and store: a change
    there may change stored numbers, so it changes the chunk store's key. The bound engine is
    not hashed; its output (sigma, K) enters the key through the mechanism's fingerprint.
    """
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    files = [root / f for f in _CODE_FILES]
    for package in _CODE_PACKAGES:
        files += sorted((root / package).rglob("*.py"))
    for path in files:
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return f"{toolkit_version()}+src.{digest.hexdigest()[:12]}"


def derived_seed(seed: int, label: str) -> int:
    """A 63-bit seed for one purpose of an audit (BLAKE2b of seed and label)."""
    message = f"{int(seed)}|{label}".encode()
    return int.from_bytes(hashlib.blake2b(message, digest_size=8).digest(), "little") >> 1


# ----------------------------------------------------------------------------------------------
# Progress (tqdm when installed, else one line on stderr; never required).


class _Progress:
    def __init__(self, total: int, *, enabled: bool, label: str) -> None:
        self.total, self.done, self.enabled, self.label = total, 0, enabled, label
        self._bar = None
        self._start = time.perf_counter()
        if enabled and total:
            try:
                from tqdm import tqdm
            except ImportError:
                self._tty = sys.stderr.isatty()
            else:
                self._bar = tqdm(total=total, desc=label, unit="chunk", file=sys.stderr)

    def update(self, what: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(1)
            return
        elapsed = time.perf_counter() - self._start
        line = f"{self.label}: {self.done}/{self.total} chunks ({what}), {elapsed:.0f} s"
        end = "\r" if self._tty and self.done < self.total else "\n"
        print(line, end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


# ----------------------------------------------------------------------------------------------
# Chunks: plan, compute (locally or as Ray tasks), store.


@dataclass(frozen=True)
class _Plan:
    phase: str
    chunk: int
    first_trial: int
    n_trials: int
    seed: int


def _plan(phase: str, n_trials: int, chunk_size: int, seed: int) -> list[_Plan]:
    return [
        _Plan(phase, index, start, min(chunk_size, n_trials - start), seed)
        for index, start in enumerate(range(0, n_trials, chunk_size))
    ]


def _compute_chunk(mechanism: TrialMechanism, plan: _Plan) -> tuple[dict[str, np.ndarray], float]:
    """Run one chunk; returns its flat arrays and the seconds it took."""
    start = time.perf_counter()
    batch = mechanism.run_trials(seed=plan.seed, first_trial=plan.first_trial,
                                 n_trials=plan.n_trials)
    if not isinstance(batch, TrialBatch):
        raise TypeError(f"run_trials must return a TrialBatch, got {type(batch).__name__}")
    if batch.n_trials != plan.n_trials:
        raise ValueError(f"run_trials returned {batch.n_trials} trials, {plan.n_trials} asked")
    arrays = batch.to_arrays()
    arrays["trial_index"] = np.arange(plan.first_trial, plan.first_trial + plan.n_trials)
    return arrays, time.perf_counter() - start


class _MemorySink:
    """The store's interface for audits without an output directory."""

    def __init__(self) -> None:
        self._chunks: dict[tuple[str, int], dict[str, np.ndarray]] = {}

    def finished(self) -> set[tuple[str, int]]:
        return set(self._chunks)

    def put(self, *, phase, chunk, arrays, **_: Any) -> None:
        self._chunks[(phase, chunk)] = dict(arrays)

    def arrays(self, phase: str, chunk: int) -> dict[str, np.ndarray]:
        return self._chunks[(phase, chunk)]


class _StoreSink:
    def __init__(self, store: ChunkStore) -> None:
        self.store = store

    def finished(self) -> set[tuple[str, int]]:
        return self.store.finished()

    def put(self, *, phase, chunk, first_trial, n_trials, seed, arrays, seconds, worker) -> None:
        self.store.put(phase=phase, chunk=chunk, first_trial=first_trial, n_trials=n_trials,
                       seed=seed, arrays=arrays, seconds=seconds, worker=worker)

    def arrays(self, phase: str, chunk: int) -> dict[str, np.ndarray]:
        return dict(self.store.get(phase, chunk).arrays)


def _store_result(sink, plan: _Plan, arrays, seconds: float, worker: str) -> None:
    sink.put(phase=plan.phase, chunk=plan.chunk, first_trial=plan.first_trial,
             n_trials=plan.n_trials, seed=plan.seed, arrays=arrays, seconds=seconds,
             worker=worker)


def _run_local(mechanism, plans: list[_Plan], sink, progress: _Progress) -> None:
    for plan in plans:
        arrays, seconds = _compute_chunk(mechanism, plan)
        _store_result(sink, plan, arrays, seconds, f"local pid {os.getpid()}")
        progress.update(f"{plan.phase} {plan.chunk}")


def _ray_chunk(mechanism, plan: _Plan):
    """Body of a Ray task (module-level so that workers import it by name)."""
    import socket

    arrays, seconds = _compute_chunk(mechanism, plan)
    return arrays, seconds, f"ray {socket.gethostname()} pid {os.getpid()}"


def _run_ray(mechanism, plans: list[_Plan], sink, progress: _Progress, *,
             address: str | None) -> str:
    try:
        import ray
    except ImportError:
        raise ValueError("the Ray backend needs ray: pip install 'unlearn-verify[distributed]'") \
            from None
    started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        started = True
    try:
        resources = ray.cluster_resources()
        wants_gpu = str(getattr(mechanism, "device", "cpu")).startswith("cuda")
        num_gpus = 1 if wants_gpu and resources.get("GPU", 0) >= 1 else 0
        if wants_gpu and not num_gpus:
            raise ValueError("the mechanism runs on CUDA but the Ray cluster has no GPU")
        task = ray.remote(num_cpus=1, num_gpus=num_gpus, max_retries=2)(_ray_chunk)
        shared = ray.put(mechanism)
        in_flight_limit = max(2, 2 * int(resources.get("CPU", 1)))
        queue = list(plans)
        pending: dict[Any, _Plan] = {}
        while queue or pending:
            while queue and len(pending) < in_flight_limit:
                plan = queue.pop(0)
                pending[task.remote(shared, plan)] = plan
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                plan = pending.pop(ref)
                arrays, seconds, worker = ray.get(ref)
                _store_result(sink, plan, arrays, seconds, worker)
                progress.update(f"{plan.phase} {plan.chunk}")
        gpus = f", {int(resources.get('GPU', 0))} GPU" if resources.get("GPU") else ""
        return f"ray cluster ({int(resources.get('CPU', 0))} CPU{gpus})"
    finally:
        if started:
            ray.shutdown()


def _execute(mechanism, plans: list[_Plan], sink, *, backend: str, progress: bool,
             label: str, ray_address: str | None) -> tuple[int, str | None]:
    """Compute every plan not yet in ``sink``; returns (chunks resumed, Ray description)."""
    done = sink.finished()
    todo = [p for p in plans if (p.phase, p.chunk) not in done]
    bar = _Progress(len(todo), enabled=progress, label=label)
    cluster = None
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
    try:
        if todo and backend == "local":
            _run_local(mechanism, todo, sink, bar)
        elif todo:
            cluster = _run_ray(mechanism, todo, sink, bar, address=ray_address)
    finally:
        bar.close()
    return len(plans) - len(todo), cluster


def _collect(sink, plans: list[_Plan], phase: str) -> TrialBatch | None:
    parts = []
    for plan in plans:
        if plan.phase != phase:
            continue
        arrays = sink.arrays(plan.phase, plan.chunk)
        expected = np.arange(plan.first_trial, plan.first_trial + plan.n_trials)
        if not np.array_equal(arrays.get("trial_index"), expected):
            raise ValueError(f"stored chunk {phase}/{plan.chunk} holds other trials than planned")
        parts.append(TrialBatch.from_arrays(arrays))
    return TrialBatch.concatenate(parts) if parts else None


# ----------------------------------------------------------------------------------------------
# Analysis: attack scores, lower bounds, estimates, plots.


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


@dataclass(frozen=True)
class _AttackScores:
    name: str
    unlearned: np.ndarray  # [n] aggregated score
    retrained: np.ndarray
    per_example: tuple[np.ndarray, np.ndarray] | None  # [n, E] when E > 1
    details: Mapping[str, Any]


def _projection_direction(pilot: TrialBatch, statistic: str) -> np.ndarray:
    u = pilot.unlearned.statistics[statistic]
    r = pilot.retrained.statistics[statistic]
    return u.mean(axis=0) - r.mean(axis=0)


def _attack_scores(main: TrialBatch, pilot: TrialBatch | None,
                   attacks: Sequence[str] | None) -> list[_AttackScores]:
    """Turn a batch into 1-D scores per attack (unlearned = positive class)."""
    score_names = list(main.unlearned.scores)
    stat_names = list(main.unlearned.statistics)
    if attacks is None:
        attacks = score_names + (["projection"] if stat_names and pilot is not None else [])
    out: list[_AttackScores] = []
    for attack in attacks:
        if attack in main.unlearned.scores:
            u, r = main.unlearned.scores[attack], main.retrained.scores[attack]
            per_example = None
            details: dict[str, Any] = {"score": "as returned by the mechanism"}
            if u.ndim == 2:
                if u.shape[1] > 1:
                    per_example = (u, r)
                details = {"score": f"mean over {u.shape[1]} forgotten record(s)"}
                u, r = u.mean(axis=1), r.mean(axis=1)
            out.append(_AttackScores(attack, u, r, per_example, details))
        elif attack == "projection":
            if not stat_names:
                raise ValueError("the projection attack needs statistics from the mechanism")
            if pilot is None:
                raise ValueError("the projection attack needs pilot trials (pilot_trials > 0)")
            for stat in stat_names:
                direction = _projection_direction(pilot, stat)
                norm = float(np.linalg.norm(direction))
                unit = direction / norm if norm > 0 else direction
                name = "projection" if len(stat_names) == 1 else f"projection[{stat}]"
                out.append(_AttackScores(
                    name,
                    main.unlearned.statistics[stat] @ unit,
                    main.retrained.statistics[stat] @ unit,
                    None,
                    {"statistic": stat, "direction": "mean(unlearned) - mean(retrained) over "
                     f"{pilot.n_trials} pilot trials (independent seed)",
                     "direction_norm": norm},
                ))
        else:
            raise ValueError(f"attack {attack!r} is not produced by the mechanism; it gives "
                             f"scores {score_names} and statistics {stat_names}")
    return out


def _strategy(name: str, seed: int):
    from empirical import statistics as st

    if name == "bonferroni-pareto":
        return st.BonferroniPareto()
    if name == "sample-split":
        return st.SampleSplit(selection_fraction=0.5, seed=derived_seed(seed, "sample-split"))
    raise ValueError(f"unknown statistic {name!r}; known: {', '.join(STATISTICS)}")


def _lower_bounds(attacks: list[_AttackScores], *, statistics: Sequence[str], delta: float,
                  confidence: float, seed: int) -> tuple[list[dict], float]:
    """Every (attack, statistic) lower bound at level (1 - confidence) / family size."""
    from empirical import statistics as st

    family = len(attacks) * len(statistics)
    alpha_each = (1.0 - confidence) / family
    entries = []
    for attack in attacks:
        for name in statistics:
            strategy = _strategy(name, seed)
            lb = st.epsilon_lower_bound(attack.unlearned, attack.retrained, delta=delta,
                                        alpha=alpha_each, strategy=strategy)
            entries.append({
                "attack": attack.name,
                "statistic": name,
                "method": f"{lb.method}; level split over {family} bound(s) (Bonferroni)",
                "epsilon": float(lb.epsilon),
                "kind": "lower bound",
                "confidence": confidence,
                "details": {
                    "delta": delta,
                    "strategy": lb.strategy,
                    "threshold": lb.threshold,
                    "positive_above": lb.positive_above,
                    "false_positives": lb.false_positives,
                    "false_negatives": lb.false_negatives,
                    "n_positive (unlearned)": lb.n_positive,
                    "n_negative (retrained)": lb.n_negative,
                    "fpr_upper": lb.fpr_upper,
                    "fnr_upper": lb.fnr_upper,
                    "rules_considered": lb.n_rules_considered,
                    "family_size": family,
                    "alpha_each": alpha_each,
                    "confidence_each": 1.0 - alpha_each,
                    **attack.details,
                },
            })
    ceilings = [
        st.max_certifiable_epsilon(n_positive=attacks[0].unlearned.size,
                                   n_negative=attacks[0].retrained.size, delta=delta,
                                   alpha=alpha_each, strategy=_strategy(name, seed)).epsilon
        for name in statistics
    ] if attacks else [0.0]
    return entries, float(max(ceilings))


def _estimates(attacks: list[_AttackScores], *, estimators: Sequence[str], delta: float,
               seed: int, notes: list[str]) -> list[dict]:
    from empirical import divergence as dv
    from empirical import statistics as st

    out = []
    for attack in attacks:
        u, r = attack.unlearned, attack.retrained
        for name in estimators:
            try:
                if name == "plugin-epsilon":
                    est = st.epsilon_estimate(u, r, delta=delta)
                    value, interval, method = est.epsilon, None, est.method
                    label = f"plug-in epsilon at delta {delta:.3g}"
                elif name == "auc":
                    roc = st.roc_curve(u, r)
                    value, interval, method, label = roc.auc, None, roc.method, "AUC"
                elif name == "tpr-at-fpr":
                    tpr = st.tpr_at_fpr(u, r, fpr=0.01)
                    value, interval, method = tpr.tpr, None, tpr.method
                    label = "TPR at FPR 0.01"
                elif name == "gaussian-kl":
                    kl = dv.gaussian_kl_divergence(u, r, n_bootstrap=200,
                                                   seed=derived_seed(seed, "bootstrap"))
                    value, method = kl.value, kl.method
                    interval = None if kl.interval is None else [_finite(kl.interval[0]),
                                                                 _finite(kl.interval[1])]
                    label = "KL(unlearned || retrained) of the attack score, Gaussian fit"
                else:
                    raise ValueError(f"unknown estimator {name!r}; known: {', '.join(ESTIMATORS)}")
            except ValueError as error:
                notes.append(f"estimator {name} skipped for attack {attack.name}: {error}")
                continue
            out.append({"name": label, "attack": attack.name, "value": _finite(float(value)),
                        "kind": "estimate", "interval": interval, "method": method})
    return out


def _thin_roc(fpr: np.ndarray, tpr: np.ndarray) -> tuple[list[float], list[float]]:
    if fpr.size <= _ROC_POINTS:
        return fpr.tolist(), tpr.tolist()
    # Geometric spacing keeps the low-FPR end, which the log-log plot shows.
    index = np.unique(np.concatenate([
        [0, fpr.size - 1],
        np.round(np.geomspace(1, fpr.size - 1, _ROC_POINTS - 2)).astype(int),
    ]))
    return fpr[index].tolist(), tpr[index].tolist()


def _plots(attacks: list[_AttackScores], *, delta: float, notes: list[str]) -> dict:
    from empirical import statistics as st

    scores, roc = {}, {}
    per_example = None
    if attacks and attacks[0].unlearned.size > _PLOT_SCORES:
        notes.append(f"plots.scores holds the scores of the first {_PLOT_SCORES} trials (a "
                     "random sample: trials are independent); bounds and estimates use all "
                     f"{attacks[0].unlearned.size}")
    for attack in attacks:
        scores[attack.name] = {"unlearned": attack.unlearned[:_PLOT_SCORES].tolist(),
                               "retrained": attack.retrained[:_PLOT_SCORES].tolist()}
        curve = st.roc_curve(attack.unlearned, attack.retrained)
        fpr, tpr = _thin_roc(curve.fpr, curve.tpr)
        roc[attack.name] = {"fpr": fpr, "tpr": tpr, "auc": curve.auc}
        if attack.per_example is not None and per_example is None:
            u, r = attack.per_example
            values = []
            for j in range(u.shape[1]):
                est = st.epsilon_estimate(u[:, j], r[:, j], delta=delta).epsilon
                values.append(est if math.isfinite(est) else None)
            if any(v is None for v in values):
                notes.append("per-example plug-in epsilon is infinite (perfect separation) for "
                             "some records; they are left out of the per-example plot")
            kept = [v for v in values if v is not None]
            if kept:
                per_example = {"values": kept, "label": f"plug-in epsilon estimate per forgotten "
                               f"record, attack {attack.name} (estimates, not bounds)"}
    return {"scores": scores, "roc": roc, "per_example_epsilon": per_example}


def _utility(batch: TrialBatch) -> dict | None:
    u, r = batch.unlearned.accuracy, batch.retrained.accuracy
    if u is None or r is None or not (np.all(np.isfinite(u)) and np.all(np.isfinite(r))):
        return None

    def summary(x: np.ndarray) -> dict:
        return {"mean": float(x.mean()), "std": float(x.std())}

    return {"unlearned_accuracy": summary(u), "retrained_accuracy": summary(r),
            "accuracies": {"unlearned": u.tolist(), "retrained": r.tolist()}}


def _verdict(certificate: Certificate, lower_bounds: list[dict], ceiling: float,
             confidence: float) -> dict:
    certified = certificate.epsilon
    best = max(lower_bounds, key=lambda e: e["epsilon"]) if lower_bounds else None
    max_lb = best["epsilon"] if best else 0.0
    violations = [e for e in lower_bounds if e["epsilon"] > certified]
    if certified > 0:
        tightness = max_lb / certified
    else:
        tightness = math.inf if max_lb > 0 else 0.0
    miss = f"{1 - confidence:.3g}"
    if violations:
        status = "VIOLATION"
        explanation = (
            f"{len(violations)} of {len(lower_bounds)} empirical lower bound(s) exceed the "
            f"certified epsilon {certified:.6g} (delta {certificate.delta:.3g}, "
            f"{certificate.bound}); the largest, epsilon >= {max_lb:.6g} from attack "
            f"{best['attack']} ({best['statistic']}), holds together with the others with "
            f"probability {confidence:g}. Unless an event of probability {miss} occurred, the "
            "unlearned models leak more than the certificate allows: the implementation departs "
            "from the theorem's assumptions (noise, steps, batches, clipping, projection) or "
            "the theorem or its constants are wrong."
        )
    else:
        status = "CONSISTENT"
        if best is None:
            explanation = "No attack produced a lower bound; nothing contradicts the certificate."
        else:
            explanation = (
                f"No empirical lower bound exceeds the certified epsilon {certified:.6g} "
                f"(delta {certificate.delta:.3g}, {certificate.bound}). The largest, epsilon >= "
                f"{max_lb:.6g} from attack {best['attack']} ({best['statistic']}, "
                f"{confidence:g} confidence), is {tightness:.3g} of the certificate."
            )
        if ceiling <= certified:
            explanation += (
                f" These trials can show at most epsilon {ceiling:.4g}, which does not exceed "
                "the certificate, so this audit could not have detected a violation; run more "
                "trials for a test with power."
            )
        else:
            explanation += (" This is absence of evidence against the certificate, not a proof "
                            "of it.")
    return {"status": status, "certified_epsilon": _finite(certified), "max_lower_bound": max_lb,
            "best_lower_bound": best, "tightness": _finite(tightness),
            "explanation": explanation, "violations": violations}


def _build_report(*, spec_dict: Mapping[str, Any], spec_hash: str, certificate: Certificate,
                  main: TrialBatch, pilot: TrialBatch | None, attacks: Sequence[str] | None,
                  statistics: Sequence[str], estimators: Sequence[str], confidence: float,
                  seed: int, seeds: Mapping[str, Any], device: str, wall_seconds: float,
                  chunks: int, chunks_resumed: int, notes: Sequence[str] = ()) -> dict:
    notes = list(notes)
    delta = certificate.delta
    if not 0 < delta < 1:
        raise ValueError(f"the lower bounds need a certificate delta in (0, 1), got {delta}")
    scored = _attack_scores(main, pilot, attacks)
    lower_bounds, ceiling = _lower_bounds(scored, statistics=statistics, delta=delta,
                                          confidence=confidence, seed=seed)
    estimates = _estimates(scored, estimators=estimators, delta=delta, seed=seed, notes=notes)
    plots = _plots(scored, delta=delta, notes=notes)
    verdict = _verdict(certificate, lower_bounds, ceiling, confidence)
    report = {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "code_version": code_version(),
        "toolkit_version": toolkit_version(),
        "spec": dict(spec_dict),
        "spec_hash": spec_hash,
        "certificate": certificate.to_dict(),
        "empirical": {
            "n_trials": main.n_trials,
            "pilot_trials": 0 if pilot is None else pilot.n_trials,
            "confidence": confidence,
            "device": device,
            "lower_bounds": lower_bounds,
            "estimates": estimates,
            "max_certifiable_epsilon": _finite(ceiling),
        },
        "verdict": verdict,
        "utility": _utility(main),
        "plots": plots,
        "seeds": {"seed": int(seed), **seeds},
        "timing": {"wall_seconds": float(wall_seconds), "chunks": int(chunks),
                   "chunks_resumed": int(chunks_resumed)},
        "notes": notes,
    }
    return report


# ----------------------------------------------------------------------------------------------
# Results.


@dataclass(frozen=True)
class AuditResult:
    """A finished audit: the report dict and, when written, its files."""

    report: dict[str, Any]
    paths: Any = None  # audits.report.ReportPaths when an output directory was given

    @property
    def status(self) -> str:
        return self.report["verdict"]["status"]

    @property
    def certified_epsilon(self) -> float:
        return float(self.report["certificate"]["epsilon"])

    @property
    def max_lower_bound(self) -> float:
        return float(self.report["verdict"]["max_lower_bound"])

    @property
    def tightness(self) -> float:
        value = self.report["verdict"]["tightness"]
        return math.inf if value == "inf" else float(value)

    def summary(self) -> str:
        from audits.report import summary_text

        return summary_text(self.report)


def comparable(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report without what may differ between identical runs (creation time, timing)."""
    out = json.loads(json.dumps(report))
    out.pop("created", None)
    out.pop("timing", None)
    return out


def _finish(report: dict, out_dir: str | Path | None) -> AuditResult:
    from audits.report import validate_report, write_report

    if out_dir is None:
        return AuditResult(validate_report(report), None)
    paths = write_report(report, out_dir)
    return AuditResult(validate_report(report), paths)


# ----------------------------------------------------------------------------------------------
# PNSGD (Chien et al. 2024): data, certificate, mechanism.


@dataclass(frozen=True)
class _PNSGDData:
    dataset: Any  # empirical.data.Dataset, tail dropped to a multiple of b
    request: Any  # UnlearningRequest or RequestSequence
    batch_size: int
    indices: tuple[int, ...]
    max_norm: float


def _pnsgd_data(spec_json: str) -> _PNSGDData:
    """Dataset and request of a spec (cached on the fields they depend on)."""
    spec = AuditSpec.from_dict(json.loads(spec_json))
    key = json.dumps([spec.dataset.to_dict(), spec.request.to_dict(),
                      spec.algorithm.batch_size], sort_keys=True)
    return _pnsgd_data_cached(key)


@functools.lru_cache(maxsize=8)
def _pnsgd_data_cached(key: str) -> _PNSGDData:
    from empirical.data import (
        RequestSequence,
        UnlearningRequest,
        drop_to_multiple,
        load_dataset,
        removal_request,
        replacement_request,
    )

    dataset_fields, request_fields, batch_size = json.loads(key)
    dataset_spec = DatasetSpec(**dataset_fields)
    request_spec = RequestSpec(**request_fields)
    options = dataset_spec.loader_options()
    path = options.pop("path", None)
    try:
        dataset = load_dataset(dataset_spec.name, path=path, **options)
    except (OSError, ValueError) as error:
        raise SpecError(f"spec.dataset: cannot load {dataset_spec.name!r}: {error}") from None
    if batch_size == "full":
        batch = dataset.n
    else:
        batch = int(batch_size)
        if batch > dataset.n:
            raise SpecError(f"spec.algorithm.batch_size: {batch} exceeds the {dataset.n} "
                            "training records")
        dataset = drop_to_multiple(dataset, batch)
    n = dataset.n
    if request_spec.indices is None:
        if request_spec.total_records > n:
            raise SpecError(f"spec.request: {request_spec.total_records} records requested, "
                            f"the dataset has {n}")
        rng = np.random.default_rng(request_spec.seed)
        indices = tuple(int(i) for i in rng.choice(n, request_spec.total_records, replace=False))
    else:
        indices = request_spec.indices
        bad = [i for i in indices if i >= n]
        if bad:
            raise SpecError(f"spec.request.indices: row {bad[0]} is out of range for the {n} "
                            "training records")
    requests = []
    for position in range(request_spec.requests):
        rows = list(indices[position * request_spec.size:(position + 1) * request_spec.size])
        if request_spec.kind == "remove":
            requests.append(removal_request(rows))
        elif request_spec.replacement == "flip":
            requests.append(UnlearningRequest(tuple(rows), -dataset.features[rows],
                                              dataset.labels[rows]))
        else:
            requests.append(replacement_request(
                dataset, rows, seed=derived_seed(request_spec.seed, f"replacement/{position}")))
    request = requests[0] if len(requests) == 1 else RequestSequence(tuple(requests))
    norms = [np.linalg.norm(dataset.features, axis=1).max()]
    norms += [np.linalg.norm(r.replacement_features, axis=1).max() for r in requests
              if r.replacement_features is not None]
    return _PNSGDData(dataset, request, batch, indices, float(max(norms)))


def _largest_float_at_most(value: Fraction) -> float:
    x = float(value)
    while Fraction(x) > value:
        x = math.nextafter(x, -math.inf)
    return x


@functools.cache
def _sequence_bound():
    """Theorem 3.2's argument for the last of a sequence of requests (composed here).

    Same expression as ``chien2024:thm3.2`` with its initial distance Z_B replaced by a free
    W_infinity bound Z at the start of the last request, computed by
    :func:`_sequence_distance` from Lemma 3.4 (burn-in), Lemma 3.3 with T -> infinity (the
    distance between stationary laws, as in Theorem 3.11) and contraction by c per step.
    """
    from bounds.engine import Bound, Citation, Parameter
    from bounds.papers import chien2024 as paper

    z = paper.symbols("Z")[0]
    expression = paper.weak_triangle(
        paper.alpha,
        paper.pabi(2 * paper.alpha, 2 * paper.R, paper.T * paper.P),
        paper.pabi(2 * paper.alpha, z, paper.K * paper.P),
    )
    return Bound(
        id="audits:pnsgd-sequence",
        title="PNSGD, last request of a sequence, finite burn-in: Theorem 3.2's argument with "
              "Theorem 3.11's distance recursion",
        citation=Citation("chien2024", paper.REFERENCE, paper.SEED,
                          "Theorem 3.2 with Theorem 3.11 and Lemmas 3.3-3.4",
                          "composed in audits/runner.py (_sequence_bound)"),
        parameters=(*paper.COMMON_PARAMS, paper.P_T, paper.P_K, paper.P_R,
                    Parameter("Z", "W_infinity bound between the law at the start of the last "
                              "request and the stationary law of the final dataset", lower=0)),
        expression=expression,
        guarantee=paper.RENYI_RU,
        preconditions=paper.COMMON_PRE,
        assumptions=paper.THM32.assumptions + (
            "Z is computed by interval arithmetic from Lemma 3.4 (burn-in from a law on C_R), "
            "Lemma 3.3 with T -> infinity per request (S records: S times the distance) and "
            "the contraction c^{K n/b} of each request's K epochs, capped at 2R",
        ),
        variant="improved",
        monotone={"sigma": "decreasing"},
    )


def _sequence_distance(*, eta: float, m: Fraction, M: float, n: int, b: int, T: int,
                       R: float, sizes: Sequence[int], epochs: Sequence[int]):
    """Upper end (mpf) of Z at the start of the last request (see :func:`_sequence_bound`)."""

    from bounds.engine import exact_interval, interval_endpoints, interval_min, iv_precision

    with iv_precision(40):
        per_epoch = n // b
        c = 1 - exact_interval(eta) * exact_interval(m)
        two_r = 2 * exact_interval(R)
        step = (2 * exact_interval(eta) * exact_interval(M)
                / (exact_interval(b) * (1 - c**per_epoch)))
        z = two_r * c ** (T * per_epoch)
        for position, size in enumerate(sizes):
            if position:
                z = c ** (epochs[position - 1] * per_epoch) * z
            z = interval_min(z + interval_min(size * step, two_r), two_r)
        return interval_endpoints(z)[1]


def _pnsgd_certificate(spec: AuditSpec, data: _PNSGDData) -> tuple[Certificate, float, Any]:
    """Certificate and the (sigma, K) the mechanism runs with."""
    from bounds.calibration import calibrate
    from bounds.conversions import CONVERSION_CITATIONS, best_epsilon
    from bounds.engine import BoundError

    params: PNSGDParams = spec.algorithm
    cert_spec = spec.certificate
    n, b = data.dataset.n, data.batch_size
    if data.max_norm > 1.0 + 1e-12:
        raise SpecError(f"spec.dataset: features must have norm <= 1 for L = 1/4 + lambda, "
                        f"found {data.max_norm}")
    lam = Fraction(params.l2)
    L = Fraction(1, 4) + lam
    if params.step_size == "1/L":
        eta = _largest_float_at_most(1 / L)
    else:
        eta = float(params.step_size)
        if Fraction(eta) > 1 / L:
            raise SpecError(f"spec.algorithm.step_size: must be at most 1/L = {float(1 / L):.6g} "
                            f"(L = 1/4 + l2; Theorem 3.2 needs eta <= 1/L), got {eta}")
    delta = cert_spec.resolve_delta(n)
    requests = spec.request.requests
    size = spec.request.size
    epochs = params.unlearn_epochs
    epoch_list = (list(epochs) if isinstance(epochs, tuple)
                  else [1 if epochs is None else int(epochs)] * requests)
    inputs: dict[str, Any] = {"eta": eta, "m": lam, "L": L, "M": params.clip * size, "n": n,
                              "b": b, "T": params.learn_epochs, "R": params.radius}
    derivation: list[str] = []
    if requests > 1:
        if cert_spec.bound is not None:
            raise SpecError("spec.certificate.bound: a sequence of requests is certified by the "
                            "audit's composition of Theorems 3.2 and 3.11; leave bound out")
        bound = _sequence_bound()
        inputs["M"] = params.clip
        inputs["Z"] = _sequence_distance(eta=eta, m=lam, M=params.clip, n=n, b=b,
                                         T=params.learn_epochs, R=params.radius,
                                         sizes=[size] * requests, epochs=epoch_list)
        derivation.append(
            f"{requests} sequential requests of {size} record(s): certificate of the last "
            f"request, K = {epoch_list[-1]}; Z = {float(inputs['Z']):.6g} bounds the "
            f"W_infinity distance at its start (epochs per request {epoch_list})")
    else:
        import bounds

        bound = bounds.get(cert_spec.bound or "chien2024:thm3.2")
        if set(bound.parameter_names) != {"alpha", "sigma", "eta", "m", "L", "M", "n", "b", "T",
                                          "K", "R"}:
            raise SpecError(f"spec.certificate.bound: {bound.id} does not take Theorem 3.2's "
                            "parameters (alpha sigma eta m L M n b T K R)")
        if size > 1:
            derivation.append(
                f"batch request of S = {size} records: Corollary J.1's distance S * 2 eta M / b "
                "in Theorem 3.2, i.e. M replaced by S * M")
    calibration = None
    sigma = params.sigma
    try:
        if cert_spec.target_epsilon is not None and cert_spec.calibrate == "sigma":
            cal = calibrate(bound, solve="sigma", epsilon=cert_spec.target_epsilon, delta=delta,
                            conversion=cert_spec.conversion, K=epoch_list[-1], **inputs)
            sigma = float(cal.value)
        elif cert_spec.target_epsilon is not None:
            cal = calibrate(bound, solve="K", epsilon=cert_spec.target_epsilon, delta=delta,
                            conversion=cert_spec.conversion, sigma=sigma, **inputs)
            if cal.value is None:
                raise SpecError(f"spec.certificate: K cannot be calibrated: {'; '.join(cal.notes)}")
            epoch_list = [int(cal.value)]
        else:
            cal = None
        if cal is not None:
            calibration = {"parameter": cal.parameter, "value": cal.value,
                           "target_epsilon": cal.target_epsilon, "neighbour": cal.neighbour,
                           "neighbour_epsilon": cal.neighbour_epsilon,
                           "certified_epsilon_at_value": cal.certified_epsilon}
        # The final certificate is evaluated at the exact numbers the mechanism runs with.
        conv = best_epsilon(bound, delta=delta, conversion=cert_spec.conversion, sigma=sigma,
                            K=epoch_list[-1], **inputs)
    except BoundError as error:
        raise SpecError(f"spec.certificate: the bound engine refused the inputs: {error}") \
            from None
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
    provenance = {
        **conv.provenance,
        "conversion": CONVERSION_CITATIONS[cert_spec.conversion],
        "audit_assumptions": assumptions,
        "derivation": derivation,
        "delta": "1/n" if cert_spec.delta == "1/n" else "given",
    }
    if params.noise_multiplier_scale != 1.0:
        provenance["deliberately_broken"] = (
            f"noise_multiplier_scale = {params.noise_multiplier_scale}: the mechanism draws "
            f"{params.noise_multiplier_scale} times the noise this certificate assumes (a test of "
            "the audit itself)")
    certificate = Certificate(
        epsilon=conv.epsilon, delta=delta, bound=bound.id, alpha=conv.alpha,
        conversion=cert_spec.conversion, calibration=calibration,
        inputs={**inputs, "sigma": sigma, "K": epoch_list[-1], "delta": delta},
        provenance=provenance,
    )
    if cert_spec.target_epsilon is not None and conv.epsilon > cert_spec.target_epsilon:
        raise SpecError(f"spec.certificate: the calibrated certificate {conv.epsilon} exceeds "
                        f"the target {cert_spec.target_epsilon}")  # pragma: no cover
    k_value: Any = tuple(epoch_list) if requests > 1 else epoch_list[0]
    return certificate, float(sigma), k_value


@dataclass(frozen=True)
class PNSGDMechanism:
    """PNSGD learn -> unlearn and retrain as a :class:`~audits.protocols.TrialMechanism`.

    Scores: ``loss`` = minus the logistic loss of each forgotten record (original record);
    statistics: ``params`` = the final parameters; accuracy on the test split.
    """

    spec_json: str
    config: Any  # empirical.mechanisms.chien2024.PNSGDConfig
    device: str
    dtype: str

    @property
    def description(self) -> str:
        c = self.config
        return (f"PNSGD (Chien et al. 2024, Algorithm 1): sigma={c.sigma!r}, eta={c.step_size!r}, "
                f"b={c.batch_size}, T={c.learn_epochs}, K={c.unlearn_epochs}, lambda={c.l2}, "
                f"M={c.clip}, R={c.radius}, noise x{c.noise_multiplier_scale}")

    def fingerprint(self) -> str:
        return repr((dataclasses.astuple(self.config), self.device, self.dtype))

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        import torch

        from empirical.mechanisms.chien2024 import run_pnsgd

        data = _pnsgd_data(self.spec_json)
        result = run_pnsgd(data.dataset, data.request, config=self.config, n_trials=n_trials,
                           seed=seed, device=self.device, dtype=getattr(torch, self.dtype),
                           # retain_scores=0 trips an empty-reshape in empirical.models (reported)
                           first_trial=first_trial, retain_scores=1)

        def side(samples) -> ModelOutputs:
            return ModelOutputs(scores={"loss": -samples.forget_losses},
                                statistics={"params": samples.params},
                                accuracy=samples.test_accuracy)

        return TrialBatch(side(result.unlearned), side(result.retrained))


@dataclass(frozen=True)
class PreparedAudit:
    """What an algorithm plug-in gives the runner for a spec."""

    certificate: Certificate
    mechanism: TrialMechanism
    device: str
    fingerprint: str
    seeds: Mapping[str, Any]
    notes: tuple[str, ...] = ()


def _resolve_device(device: str, backend: str) -> str:
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if backend == "ray":
            try:
                import ray

                if ray.is_initialized() and ray.cluster_resources().get("GPU", 0) >= 1:
                    return "cuda"
            except ImportError:
                pass
        return "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available() and backend != "ray":
        raise SpecError(f"spec.device: {device!r} requested but torch sees no CUDA device")
    return device


def _prepare_pnsgd(spec: AuditSpec, *, backend: str) -> PreparedAudit:
    from empirical.mechanisms.chien2024 import PNSGDConfig

    spec_json = spec.canonical_json()
    data = _pnsgd_data(spec_json)
    certificate, sigma, epochs = _pnsgd_certificate(spec, data)
    params: PNSGDParams = spec.algorithm
    config = PNSGDConfig(
        step_size=float(certificate.inputs["eta"]),
        sigma=sigma,
        batch_size=data.batch_size,
        learn_epochs=params.learn_epochs,
        unlearn_epochs=epochs,
        l2=params.l2,
        clip=params.clip,
        radius=params.radius,
        init_std=0.0,
        partition=params.partition,
        noise_multiplier_scale=params.noise_multiplier_scale,
    )
    device = _resolve_device(spec.device, backend)
    mechanism = PNSGDMechanism(spec_json, config, device, spec.dtype)
    return PreparedAudit(
        certificate=certificate,
        mechanism=mechanism,
        device=device,
        fingerprint=mechanism.fingerprint(),
        seeds={"request_indices": list(data.indices), "request_seed": spec.request.seed},
        notes=(f"dataset: {data.dataset.provenance}", f"mechanism: {mechanism.description}"),
    )


_ALGORITHM_RUNNERS: dict[str, Callable[..., PreparedAudit]] = {"pnsgd": _prepare_pnsgd}


def register_algorithm_runner(name: str, prepare: Callable[..., PreparedAudit]) -> None:
    """Plug in an algorithm: ``prepare(spec, *, backend) -> PreparedAudit``.

    Register its hyper-parameter class with :func:`audits.spec.register_algorithm` too.
    """
    _ALGORITHM_RUNNERS[name] = prepare


def prepare_audit(spec: AuditSpec | Mapping[str, Any] | str | Path, *,
                  backend: str = "local") -> PreparedAudit:
    """Certificate and mechanism of a spec, without running anything."""
    spec = load_spec(spec)
    name = spec.algorithm.name
    if name not in _ALGORITHM_RUNNERS:
        raise SpecError(f"spec.algorithm.name: no runner registered for {name!r}")
    return _ALGORITHM_RUNNERS[name](spec, backend=backend)


# ----------------------------------------------------------------------------------------------
# Entry points.


def _run_chunks(mechanism: TrialMechanism, *, trials: int, pilot_trials: int, chunk_size: int,
                seed: int, out_dir: str | Path | None, audit_key: str, spec_json: str,
                backend: str, progress: bool, label: str, ray_address: str | None):
    pilot_seed = derived_seed(seed, "pilot")
    plans = _plan(PILOT, pilot_trials, chunk_size, pilot_seed) if pilot_trials else []
    plans += _plan(MAIN, trials, chunk_size, seed)
    store = None
    if out_dir is not None:
        store = ChunkStore(Path(out_dir) / STORE_NAME, audit_key=audit_key, spec_json=spec_json,
                           code_version=code_version())
        sink: Any = _StoreSink(store)
    else:
        sink = _MemorySink()
    try:
        resumed, cluster = _execute(mechanism, plans, sink, backend=backend, progress=progress,
                                    label=label, ray_address=ray_address)
        pilot = _collect(sink, plans, PILOT) if pilot_trials else None
        main = _collect(sink, plans, MAIN)
    finally:
        if store is not None:
            store.close()
    return main, pilot, len(plans), resumed, pilot_seed, cluster


def run_audit(
    spec: AuditSpec | Mapping[str, Any] | str | Path,
    *,
    out_dir: str | Path | None = None,
    backend: str = "local",
    progress: bool = False,
    ray_address: str | None = None,
) -> AuditResult:
    """Run a spec-driven audit; with ``out_dir``, store chunks there and write the report.

    Rerunning with the same spec and ``out_dir`` resumes: finished chunks are read back, not
    recomputed, and the report is identical (apart from its creation time and timing).
    ``backend="ray"`` sends chunks to Ray (``ray_address`` or a local instance).
    """
    start = time.perf_counter()
    spec = load_spec(spec)
    prepared = prepare_audit(spec, backend=backend)
    spec_json = spec.canonical_json()
    audit_key = hashlib.sha256(
        f"{spec.digest(code_version())}|{prepared.fingerprint}".encode()).hexdigest()
    main, pilot, chunks, resumed, pilot_seed, cluster = _run_chunks(
        prepared.mechanism, trials=spec.trials, pilot_trials=spec.pilot_trials,
        chunk_size=spec.chunk_size, seed=spec.seed, out_dir=out_dir, audit_key=audit_key,
        spec_json=spec_json, backend=backend, progress=progress, label=f"audit {spec.name}",
        ray_address=ray_address)
    del cluster  # where chunks ran does not change the numbers, so it stays out of the report
    report = _build_report(
        spec_dict=spec.to_dict(), spec_hash=audit_key, certificate=prepared.certificate,
        main=main, pilot=pilot, attacks=spec.attacks, statistics=spec.statistics,
        estimators=spec.estimators, confidence=spec.confidence, seed=spec.seed,
        seeds={"pilot_seed": pilot_seed, **prepared.seeds,
               "per_trial": "torch generators seeded with BLAKE2b(seed | trial | stream) "
                            "(empirical.trials.trial_seed)"},
        device=prepared.device, wall_seconds=time.perf_counter() - start, chunks=chunks,
        chunks_resumed=resumed, notes=prepared.notes)
    return _finish(report, out_dir)


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
) -> AuditResult:
    """Audit your own :class:`~audits.protocols.TrialMechanism` against a certificate.

    ``attacks`` None uses every score the mechanism returns, plus the projection attack on its
    statistics when ``pilot_trials`` > 0. Chunks are stored in ``out_dir`` (and reused on a
    rerun) only when you give a ``cache_key`` that changes whenever your mechanism does; without
    one, nothing is cached and a rerun recomputes everything.
    """
    start = time.perf_counter()
    if not isinstance(mechanism, TrialMechanism):
        raise ValueError("mechanism must have a run_trials(seed=, first_trial=, n_trials=) method")
    if not isinstance(certificate, Certificate):
        raise ValueError("certificate must be an audits.protocols.Certificate")
    settings = _custom_settings(trials=trials, pilot_trials=pilot_trials, confidence=confidence,
                                seed=seed, attacks=attacks, statistics=statistics,
                                estimators=estimators, chunk_size=chunk_size, name=name)
    settings["mechanism"] = str(getattr(mechanism, "description", type(mechanism).__name__))
    settings_json = json.dumps(settings, sort_keys=True)
    audit_key = hashlib.sha256(
        f"{settings_json}|{code_version()}|{cache_key}".encode()).hexdigest()
    store_dir = out_dir if cache_key is not None else None
    main, pilot, chunks, resumed, pilot_seed, _ = _run_chunks(
        mechanism, trials=trials, pilot_trials=pilot_trials, chunk_size=chunk_size, seed=seed,
        out_dir=store_dir, audit_key=audit_key, spec_json=settings_json, backend=backend,
        progress=progress, label=f"audit {name}", ray_address=ray_address)
    report = _build_report(
        spec_dict=settings, spec_hash=audit_key, certificate=certificate, main=main,
        pilot=pilot, attacks=attacks, statistics=settings["statistics"],
        estimators=settings["estimators"], confidence=confidence, seed=seed,
        seeds={"pilot_seed": pilot_seed}, device=str(getattr(mechanism, "device", "cpu")),
        wall_seconds=time.perf_counter() - start, chunks=chunks, chunks_resumed=resumed)
    return _finish(report, out_dir)


def _custom_settings(*, trials, pilot_trials, confidence, seed, attacks, statistics,
                     estimators, chunk_size, name) -> dict[str, Any]:
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 2:
        raise ValueError(f"trials must be an integer >= 2, got {trials!r}")
    if isinstance(pilot_trials, bool) or not isinstance(pilot_trials, int) or pilot_trials < 0:
        raise ValueError(f"pilot_trials must be a non-negative integer, got {pilot_trials!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    _check_confidence(confidence)
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
            "estimators": estimators, "chunk_size": chunk_size}


def _check_confidence(confidence: float) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) \
            or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")


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
) -> AuditResult:
    """Audit precomputed attack scores: ``{attack: [n] or [n, E] array}`` per side.

    Scores must come from models independent of any choice made with them (a threshold is
    covered by the statistic; an attack tuned on these very scores is not).
    """
    start = time.perf_counter()
    batch = TrialBatch(ModelOutputs(scores=unlearned, accuracy=unlearned_accuracy),
                       ModelOutputs(scores=retrained, accuracy=retrained_accuracy))
    if not isinstance(certificate, Certificate):
        raise ValueError("certificate must be an audits.protocols.Certificate")
    settings = _custom_settings(trials=batch.n_trials, pilot_trials=0, confidence=confidence,
                                seed=seed, attacks=None, statistics=statistics,
                                estimators=estimators, chunk_size=max(1, batch.n_trials),
                                name=name)
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for key, array in sorted(batch.to_arrays().items()):
        digest.update(key.encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    report = _build_report(
        spec_dict=settings, spec_hash=digest.hexdigest(), certificate=certificate, main=batch,
        pilot=None, attacks=None, statistics=statistics, estimators=estimators,
        confidence=confidence, seed=seed, seeds={}, device="precomputed",
        wall_seconds=time.perf_counter() - start, chunks=0, chunks_resumed=0)
    return _finish(report, out_dir)
