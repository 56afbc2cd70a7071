"""Analysis of an audit's trials: attack scores, lower bounds, estimates, plots, verdict.

Soundness. Every lower bound is a Clopper-Pearson bound from :mod:`empirical.statistics` whose
threshold choice is covered by its strategy. The audit reports several (attacks x statistics);
their levels are split evenly (Bonferroni), so all of them, and hence their maximum, hold
simultaneously with probability at least ``confidence``. Data-dependent attack parameters (the
projection direction) come from pilot trials with their own seed, never used to certify.
Plug-in numbers are reported as estimates. :func:`build_report` assembles the report data
(schema in :mod:`audits.report_schema`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from audits.execution import code_version, toolkit_version
from audits.protocols import Certificate, TrialBatch
from audits.report_schema import KIND_ESTIMATE, KIND_LOWER_BOUND, SCHEMA_ID, SCHEMA_VERSION
from audits.seeds import derived_seed
from audits.spec import ESTIMATORS, STATISTICS

__all__ = ["build_report"]

# Largest number of points kept per ROC curve in the report (the AUC uses every score), and
# of scores per side kept for the histograms.
_ROC_POINTS = 600
_PLOT_SCORES = 5000



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
                "kind": KIND_LOWER_BOUND,
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
                        "kind": KIND_ESTIMATE, "interval": interval, "method": method})
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


def build_report(*, spec_dict: Mapping[str, Any], spec_hash: str, certificate: Certificate,
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


