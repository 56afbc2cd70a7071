"""The audit runner: certificate, trials in resumable chunks, lower bounds, verdict, report.

Entry points:

* :func:`run_audit` (``unlearn audit run``): an :class:`~audits.spec.AuditSpec` in, a report
  out. The certificate comes from the algorithm's adapter (:mod:`audits.registry`) through the
  bound engine, calibrated to the spec's target; the trials run in chunks on the trial engine, locally or as
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
from pathlib import Path
from typing import Any

import numpy as np

from audits.adapter import PreparedAudit
from audits.protocols import Certificate, ModelOutputs, TrialBatch, TrialMechanism
from audits.seeds import derived_seed
from audits.spec import ESTIMATORS, STATISTICS, AuditSpec, SpecError, load_spec
from audits.store import STORE_NAME, ChunkStore

__all__ = [
    "AuditResult",
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
_CODE_FILES = ("audits/runner.py", "audits/spec.py", "audits/store.py", "audits/protocols.py",
               "audits/datasets.py", "audits/seeds.py")
_CODE_PACKAGES = ("empirical", "audits/adapters")


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


def register_algorithm_runner(name: str, prepare: Callable[..., PreparedAudit]) -> None:
    """Removed: register an :class:`~audits.adapter.AlgorithmAdapter` instead."""
    raise TypeError(f"register_algorithm_runner({name!r}, ...) is gone: implement "
                    "audits.adapter.AlgorithmAdapter and call audits.registry.register_adapter")


def prepare_audit(spec: AuditSpec | Mapping[str, Any] | str | Path, *,
                  backend: str = "local") -> PreparedAudit:
    """Certificate and mechanism of a spec, without running anything."""
    spec = load_spec(spec)
    return spec.adapter.prepare(spec, device=_resolve_device(spec.device, backend))


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
