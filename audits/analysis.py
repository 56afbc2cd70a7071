"""Analysis of an audit's trials: attack scores, lower bounds, Rényi tests, estimates, plots.

Soundness. Every (epsilon, delta) lower bound is a Clopper-Pearson bound from
:mod:`empirical.statistics` (or :mod:`empirical.statistics.pilot` for the pilot threshold) whose
threshold choice is covered by its strategy; with a Rényi certificate, each attack's histogram
Rényi test (:mod:`empirical.divergences.renyi_tests`, data-processing inequality) checks the
whole certified curve. The audit runs a family of tests (attacks x statistics x score
orientations, plus the Rényi tests); their levels are split by a weighted Bonferroni rule
(:mod:`audits.allocation`), so all of them hold simultaneously with probability at least
``confidence``. Each test is also run on the two worlds' scores pulled apart at the same level
(the reference violation, :func:`_pulled_apart`), which is what :mod:`audits.verdict` needs to
tell CONSISTENT from INCONCLUSIVE. A certificate is tested only in the direction it states
(:attr:`~audits.protocols.Certificate.privacy_direction`). Data-dependent attack parameters (the
projection direction) come from pilot trials with their own seed, never used to certify. Plug-in
numbers are reported as estimates. :func:`analyse` runs all of it for an
:class:`~audits.plan.AuditPlan` and its trials; :mod:`audits.report.assemble` builds the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from audits import progress
from audits.allocation import (
    RENYI_MIN_TRIALS,
    RENYI_PILOT_FRACTION,
    Allocation,
    allocation,
    pilot_allocation,
    trial_rows,
)
from audits.attacks import pilot_attacks
from audits.estimators import estimator
from audits.protocols import Certificate, TrialBatch, project_rows, projection_unit
from audits.results import AttackScores, EstimateResult, LowerBoundResult, RenyiTestResult
from audits.statistics import EpsilonStatistic, ScoreOrientation, statistic
from empirical.engine.memory import release_freed_memory
from empirical.statistics.checks import PrivacyDirection

if TYPE_CHECKING:
    from audits.execution import ChunkResults
    from audits.plan import AuditPlan

__all__ = ["Analysis", "analyse", "design_refutes", "one_lower_bound"]

# Largest number of points kept per ROC curve in the report (the AUC uses every score), and
# of scores per side kept for the histograms.
_ROC_POINTS = 600
_PLOT_SCORES = 5000


def _attack_scores(main: TrialBatch, pilot: TrialBatch | None,
                   attacks: Sequence[str] | None,
                   projections: Mapping[str, tuple[np.ndarray, np.ndarray, float]] | None = None
                   ) -> list[AttackScores]:
    """Turn a batch into 1-D scores per attack (unlearned = positive class).

    ``projections``: statistics already projected on the pilot's direction, chunk by chunk
    (stat -> (unlearned, retrained, direction norm)); statistics not listed there are projected
    here, with the same direction and row-by-row product, so both give the same scores."""
    projections = dict(projections or {})
    score_names = list(main.unlearned.scores)
    stat_names = list(projections) + [s for s in main.unlearned.statistics if s not in projections]
    if attacks is None:
        attacks = score_names + (list(pilot_attacks()) if stat_names and pilot is not None else [])
    out: list[AttackScores] = []
    for name in attacks:
        if name in main.unlearned.scores:
            u, r = main.unlearned.scores[name], main.retrained.scores[name]
            per_example = None
            details: dict[str, Any] = {"score": "as returned by the mechanism"}
            if u.ndim == 2:
                if u.shape[1] > 1:
                    per_example = (u, r)
                details = {"score": f"mean over {u.shape[1]} forgotten record(s)"}
                u, r = u.mean(axis=1), r.mean(axis=1)
            out.append(AttackScores(name, u, r, per_example, details))
        elif name in pilot_attacks():
            if not stat_names:
                raise ValueError(f"the {name} attack needs statistics from the mechanism")
            if pilot is None:
                raise ValueError(f"the {name} attack needs pilot trials (pilot_trials > 0)")
            for stat in stat_names:
                if stat in projections:
                    u, r, norm = projections[stat]
                else:
                    unit, norm = projection_unit(pilot, stat)
                    u = project_rows(main.unlearned.statistics[stat], unit)
                    r = project_rows(main.retrained.statistics[stat], unit)
                out.append(AttackScores(
                    name if len(stat_names) == 1 else f"{name}[{stat}]", u, r, None,
                    {"statistic": stat, "direction": "mean(unlearned) - mean(retrained) over "
                     f"{pilot.n_trials} pilot trials (independent seed)",
                     "direction_norm": norm},
                ))
        else:
            raise ValueError(f"attack {name!r} is not produced by the mechanism; it gives "
                             f"scores {score_names} and statistics {stat_names}")
    return out


def reference_levels(reference: AttackScores, certificate: Certificate, *,
                      statistics: Sequence[str], direction: str, miss: float, rows: np.ndarray,
                      n_eps: int, n_renyi: int, n_attacks: int
                      ) -> tuple[float, float, float, float]:
    """(level of each (epsilon, delta) test, of each Rényi test, and the certified epsilon and
    delta the (epsilon, delta) tests are run against) the design gives the reference attack: its
    allocation pilot's own choice when it is the only attack; with other attacks, whose pilots
    may call a kind promising that the reference's rules out, the smallest level of each kind
    over those possibilities (never more than the design gives)."""
    chosen = pilot_allocation([reference], certificate, statistics=statistics,
                              direction=direction, miss=miss, rows=rows, n_eps=n_eps,
                              n_renyi=n_renyi)
    point = (chosen.tested_epsilon, chosen.tested_delta)
    if n_attacks == 1 or not chosen.ruled_out:
        return chosen.alpha_eps, chosen.alpha_renyi, *point
    options = [allocation(n_eps=n_eps, n_renyi=n_renyi, miss=miss, ruled_out=kept)
               for kept in ((), *((kind,) for kind in chosen.ruled_out), chosen.ruled_out)]
    return min(a for a, _ in options), min(b for _, b in options), *point


def design_refutes(attack: AttackScores, certificate: Certificate, *,
                   statistics: Sequence[str], direction: str, miss: float, rows: np.ndarray,
                   seed: int, n_eps: int, n_renyi: int, n_attacks: int,
                   with_renyi: bool = True) -> bool:
    """Whether a design -- these statistics and score direction, the error budget ``miss``
    over ``n_eps`` (epsilon, delta) and ``n_renyi`` Rényi tests of ``n_attacks`` attacks, at the
    levels and the certified point :func:`reference_levels` gives one attack -- refutes the
    certificate on ``attack``'s scores (``rows``: the shared row order; ``with_renyi=False``
    leaves the Rényi test out). The verdict's planning (:func:`audits.verdict.trials_needed`)
    and its simulated detectable violations (:mod:`audits.detectable`) both ask this of
    synthetic scores."""
    n = attack.unlearned.size
    n_renyi = n_renyi if n >= RENYI_MIN_TRIALS else 0
    alpha_eps, alpha_renyi, certified, delta = reference_levels(
        attack, certificate, statistics=statistics, direction=direction, miss=miss, rows=rows,
        n_eps=n_eps, n_renyi=n_renyi, n_attacks=n_attacks)
    privacy_direction = certificate.privacy_direction
    for name in statistics:
        declared = statistic(name)
        if declared.ceiling(n=n, delta=delta, alpha=alpha_eps, seed=seed,
                            direction=privacy_direction) <= certified:
            continue  # not even zero errors would refute: skip the run
        for orientation in declared.orientations(direction):
            try:
                bound = one_lower_bound(attack, declared=declared, orientation=orientation,
                                        delta=delta, alpha_each=alpha_eps,
                                        seed=seed, privacy_direction=privacy_direction,
                                        rows=rows)
            except ValueError:
                continue
            if bound.epsilon > certified:
                return True
    if with_renyi and n_renyi and certificate.renyi_curve:
        from empirical.divergences.renyi_tests import renyi_audit

        curve = dict(certificate.effective_curve())
        return renyi_audit(attack.unlearned, attack.retrained, certified=curve.__getitem__,
                           two_sided=certificate.renyi_direction == PrivacyDirection.BOTH,
                           orders=list(curve),
                           beta=alpha_renyi, pilot_fraction=RENYI_PILOT_FRACTION,
                           rows=rows).violation
    return False


def _test_family(attacks: list[AttackScores], *, statistics: Sequence[str], direction: str,
                 renyi: bool) -> tuple[int, int]:
    """(number of (epsilon, delta) tests, number of Rényi tests) the audit runs."""
    per_attack = sum(len(statistic(name).orientations(direction)) for name in statistics)
    n_renyi = sum(1 for a in attacks if renyi and min(a.unlearned.size, a.retrained.size)
                  >= RENYI_MIN_TRIALS)
    return len(attacks) * per_attack, n_renyi


def one_lower_bound(attack: AttackScores, *, declared: EpsilonStatistic,
                    orientation: ScoreOrientation, delta: float, alpha_each: float, seed: int,
                    privacy_direction: PrivacyDirection, rows: np.ndarray | None = None):
    """One test of the family: statistic ``declared`` on ``attack`` in one score orientation.
    ``rows``: the shared row order (:func:`trial_rows`) whose first 5% is the pilot of the
    pilot statistics; None draws one from ``seed`` (the same for every attack)."""
    u, r = attack.unlearned, attack.retrained
    if rows is None and declared.uses_allocation_pilot:
        rows = trial_rows(seed, max(u.size, r.size))
    return declared.lower_bound(u, r, orientation=orientation, delta=delta, alpha=alpha_each,
                                seed=seed, privacy_direction=privacy_direction, rows=rows)


def _pulled_apart(unlearned: np.ndarray, retrained: np.ndarray, *,
                  above: bool) -> tuple[np.ndarray, np.ndarray]:
    """The two worlds' scores moved apart: every unlearned score shifted past every retrained
    one (above or below), each world keeping its own scores up to the shift. Scores already
    apart that way are returned unchanged, so the tests give on them what they gave on the
    data. This is the reference violation of the verdict: what a mechanism with no privacy at
    all through this attack looks like to the design as run."""
    u, r = unlearned, retrained
    overlap = float(r.max() - u.min()) if above else float(u.max() - r.min())
    if overlap < 0:
        return u, r
    # Past the overlap by more than both spreads (so that a pilot's normal fits put their
    # threshold in the gap) and by a margin that survives rounding at the scores' magnitude.
    spread = float(np.ptp(u)) + float(np.ptp(r))
    magnitude = max(float(np.max(np.abs(u))), float(np.max(np.abs(r))))
    gap = overlap + spread + max(overlap, spread, 1.0, 1e-6 * magnitude)
    moved = u + gap if above else u - gap
    apart = moved.min() > r.max() if above else moved.max() < r.min()
    if not (np.all(np.isfinite(moved)) and apart):
        raise ValueError("the scores are too large to be pulled apart in floating point")
    return moved, r


def _above(attack: AttackScores, orientation: ScoreOrientation) -> bool:
    """The side the reference violation moves the attack's unlearned scores to: the stated
    score orientation, else the side their mean lies on. One reference per attack, shared by all
    its tests, so that scores already apart are their own reference for every test."""
    if orientation != ScoreOrientation.BOTH:
        return orientation == ScoreOrientation.GREATER
    return float(attack.unlearned.mean()) >= float(attack.retrained.mean())


def _lower_bounds(attacks: list[AttackScores], *, statistics: Sequence[str], delta: float,
                  confidence: float, seed: int, direction: str, alpha_each: float,
                  family: int, privacy_direction: str, rule: str,
                  notes: list[str]) -> tuple[list[LowerBoundResult], float]:
    """Every (attack, statistic, orientation) lower bound at level ``alpha_each``, and the
    largest of their reaches (each test run on the scores pulled apart, :func:`_pulled_apart`)."""
    entries = []
    reach = 0.0
    for attack in attacks:
        u, r = _pulled_apart(attack.unlearned, attack.retrained, above=_above(attack, direction))
        apart = AttackScores(attack.name, u, r, None, attack.details)
        for name in statistics:
            declared = statistic(name)
            for orientation in declared.orientations(direction):
                try:
                    lb = one_lower_bound(attack, declared=declared, orientation=orientation,
                                         delta=delta, alpha_each=alpha_each, seed=seed,
                                         privacy_direction=privacy_direction)
                except ValueError as error:
                    notes.append(f"statistic {name} not run for attack {attack.name}: {error}")
                    continue
                try:
                    test_reach = float(one_lower_bound(
                        apart, declared=declared, orientation=orientation, delta=delta,
                        alpha_each=alpha_each, seed=seed,
                        privacy_direction=privacy_direction).epsilon)
                except ValueError as error:  # e.g. scores too large to shift: no reach claimed
                    notes.append(f"reach of statistic {name} for attack {attack.name} not "
                                 f"computed ({error}); it counts as unable to refute")
                    test_reach = 0.0
                reach = max(reach, test_reach)
                flipped = orientation == ScoreOrientation.LESS
                above = not lb.positive_above if flipped else lb.positive_above
                threshold = -lb.threshold if flipped else lb.threshold
                entries.append(LowerBoundResult(
                    attack=attack.name,
                    statistic=name,
                    method=f"{lb.method}; level {alpha_each:.3g}, one of {family} test(s) "
                           f"({_SPLIT_WORDS[rule]})",
                    epsilon=float(lb.epsilon),
                    confidence=1.0 - alpha_each,
                    reach=test_reach,
                    delta=delta,
                    privacy_direction=privacy_direction,
                    strategy=getattr(lb, "strategy", name),
                    positive_above=above,
                    # An orientation the statistic chose (on its pilot) is reported as chosen.
                    orientation_chosen_by_statistic=orientation == ScoreOrientation.BOTH,
                    threshold=threshold,
                    false_positives=lb.false_positives,
                    false_negatives=lb.false_negatives,
                    n_positive=lb.n_positive,
                    n_negative=lb.n_negative,
                    fpr_upper=lb.fpr_upper,
                    fnr_upper=lb.fnr_upper,
                    rules_considered=getattr(lb, "n_rules_considered", 1),
                    family_size=family,
                    alpha_each=alpha_each,
                    overall_confidence=confidence,
                    attack_details=attack.details,
                ))
    return entries, reach


_SPLIT_WORDS = {"fixed": "weighted Bonferroni, weights fixed in advance",
                "pilot": "weighted Bonferroni, weights chosen on the 5% allocation pilot"}


def _renyi_tests(attacks: list[AttackScores], certificate: Certificate, *, alpha_each: float,
                 seed: int, family: int, confidence: float, direction: str,
                 rule: str) -> list[RenyiTestResult]:
    """The directed Rényi test of each attack against the certified curve (empirical.divergences.renyi_tests).

    Its bins, order, direction and stakes come from the first 20% of the shared row order
    (:func:`trial_rows`; discarded afterwards), so they are independent of the counts tested;
    each test holds at level ``alpha_each`` (the Rényi tests' level of the allocation).
    """
    from empirical.divergences.renyi_tests import renyi_audit

    curve = certificate.effective_curve()
    orders = [a for a, _ in curve]
    certified = dict(curve)
    two_sided = certificate.renyi_direction == PrivacyDirection.BOTH
    out = []
    for attack in attacks:
        n_u, n_r = attack.unlearned.size, attack.retrained.size
        if min(n_u, n_r) < RENYI_MIN_TRIALS:
            continue
        settings = dict(certified=certified.__getitem__, two_sided=two_sided, orders=orders,
                        beta=alpha_each, pilot_fraction=RENYI_PILOT_FRACTION,
                        rows=trial_rows(seed, max(n_u, n_r)))
        result = renyi_audit(attack.unlearned, attack.retrained, **settings)
        c = result.curve
        # The same test (same split, bin rule and level) on the scores pulled apart.
        try:
            apart = renyi_audit(*_pulled_apart(attack.unlearned, attack.retrained,
                                               above=_above(attack, direction)), **settings)
            ceiling = [max(f, b) if two_sided else f
                       for f, b in zip(apart.curve.forward, apart.curve.backward, strict=True)]
            could = apart.violation
        except ValueError:  # scores too large to shift: no reach claimed
            ceiling, could = [0.0] * len(c.orders), False
        out.append(RenyiTestResult(
            attack=attack.name,
            method=f"{c.method}; pilot: a seeded random {RENYI_PILOT_FRACTION:.0%} of the "
                   f"trials (discarded); level {alpha_each:.3g}, one of {family} test(s) "
                   f"({_SPLIT_WORDS[rule]})",
            confidence=c.confidence,
            alpha_each=alpha_each,
            overall_confidence=confidence,
            direction=PrivacyDirection.BOTH if two_sided else PrivacyDirection.FORWARD,
            orders=tuple(c.orders),
            certified=tuple(certified[a] for a in c.orders),
            certified_as_stated=tuple(certificate.renyi_epsilon(a) for a in c.orders),
            lower_forward=tuple(c.forward),
            lower_backward=tuple(c.backward),
            estimate_forward=tuple(c.estimate_forward),
            estimate_backward=tuple(c.estimate_backward),
            ceiling=tuple(ceiling),
            could_refute=could,
            violating_orders=tuple(result.violating_orders),
            violation=result.violation,
            edges=tuple(c.edges),
            counts_unlearned=tuple(c.counts_p),
            counts_retrained=tuple(c.counts_q),
            n_pilot=(result.n_pilot_p, result.n_pilot_q),
        ))
    return out


def _estimates(attacks: list[AttackScores], *, estimators: Sequence[str], delta: float,
               seed: int, notes: list[str], privacy_direction: str) -> list[EstimateResult]:
    """Each estimator on each attack; what one computed on the way (an ROC curve holds three
    arrays of the trials' size) is freed before the next runs."""
    out = []
    for attack in attacks:
        for name in estimators:
            try:
                est = estimator(name).estimate(attack.unlearned, attack.retrained, delta=delta,
                                               seed=seed, direction=privacy_direction)
            except ValueError as error:
                notes.append(f"estimator {name} skipped for attack {attack.name}: {error}")
                continue
            out.append(EstimateResult(name=est.label, attack=attack.name,
                                      value=float(est.value), interval=est.interval,
                                      method=est.method))
            release_freed_memory()
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


def _plots(attacks: list[AttackScores], *, delta: float, notes: list[str],
           privacy_direction: str) -> dict:
    from empirical import statistics as st

    scores, roc = {}, {}
    per_example = None
    if attacks and attacks[0].unlearned.size > _PLOT_SCORES:
        notes.append(f"plots.scores holds the scores of the first {_PLOT_SCORES} trials (a "
                     "random sample: trials are independent); bounds and estimates use all "
                     f"{attacks[0].unlearned.size}")
    for attack in attacks:
        # the curve (three arrays of the trials' size) first, and freed before the score lists
        # and the next attack's curve are built
        curve = st.roc_curve(attack.unlearned, attack.retrained)
        fpr, tpr = _thin_roc(curve.fpr, curve.tpr)
        roc[attack.name] = {"fpr": fpr, "tpr": tpr, "auc": curve.auc}
        del curve
        scores[attack.name] = {"unlearned": attack.unlearned[:_PLOT_SCORES].tolist(),
                               "retrained": attack.retrained[:_PLOT_SCORES].tolist()}
        if attack.per_example is not None and per_example is None:
            u, r = attack.per_example
            values = []
            for j in range(u.shape[1]):
                est = st.epsilon_estimate(u[:, j], r[:, j], delta=delta,
                                          direction=privacy_direction).epsilon
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
            "accuracies": {"unlearned": _shared_floats(u), "retrained": _shared_floats(r)}}


def _shared_floats(values: np.ndarray) -> list[float]:
    """``values.tolist()`` with one float object per distinct bit pattern: a test accuracy
    takes a few hundred values over tens of thousands of trials, so the report's list holds
    references to those few instead of a new float per trial (a third of the memory)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    distinct, which = np.unique(bits, return_inverse=True)
    objects = np.empty(distinct.size, dtype=object)
    objects[:] = distinct.view(np.float64).tolist()
    # gathered as an object array: a list of the indices would hold an int object per trial
    return objects[which].tolist()


@dataclass(frozen=True)
class Analysis:
    """What the trials of an audit show: every test of the family (lower bounds and Rényi
    tests, each with its reach on the scores pulled apart), estimates, utility and plots.

    ``n_eps_tests`` is the number of (epsilon, delta) tests of the family; ``family`` of all
    tests (Rényi tests included); each (epsilon, delta) test runs at level ``alpha_each``, each
    Rényi test at ``alpha_renyi`` (``allocation``: :func:`pilot_allocation`). ``notes`` are the plan's and the
    chunks' notes followed by what the analysis skipped or thinned.
    """

    attacks: list[AttackScores]
    n_trials: int
    pilot_trials: int
    renyi_certificate: bool
    n_eps_tests: int
    family: int
    alpha_each: float
    alpha_renyi: float
    allocation: Allocation
    lower_bounds: list[LowerBoundResult]
    reach: float
    renyi: list[RenyiTestResult]
    estimates: list[EstimateResult]
    plots: dict
    utility: dict | None
    notes: list[str]


def analyse(plan: AuditPlan, chunks: ChunkResults) -> Analysis:
    """Lower bounds, Rényi tests, estimates, utility and plots of ``chunks``' trials under the
    plan's certificate and settings (the weighted Bonferroni split of
    :func:`pilot_allocation`)."""
    progress.phase("analysing the scores (lower bounds, estimates, Rényi tests)")
    settings, certificate = plan.settings, plan.certificate
    statistics, direction = settings.statistics, settings.direction
    confidence, seed = settings.confidence, settings.seed
    notes = [*plan.notes, *chunks.notes]
    delta = certificate.delta
    if not 0 < delta < 1:
        raise ValueError(f"the lower bounds need a certificate delta in (0, 1), got {delta}")
    main = chunks.main
    scored = _attack_scores(main, chunks.pilot, settings.attacks, chunks.projections)
    privacy_direction = certificate.privacy_direction
    use_renyi = certificate.renyi_curve is not None
    n_eps, n_renyi = _test_family(scored, statistics=statistics, direction=direction,
                                  renyi=use_renyi)
    if use_renyi and not n_renyi and scored:
        notes.append(f"the Rényi test needs at least {RENYI_MIN_TRIALS} trials per side; only "
                     "the (epsilon, delta) bounds were run")
    family = max(1, n_eps + n_renyi)
    chosen = pilot_allocation(scored, certificate, statistics=statistics, direction=direction,
                              miss=1.0 - confidence,
                              rows=trial_rows(seed, main.n_trials), n_eps=n_eps,
                              n_renyi=n_renyi)
    alpha_each, alpha_renyi = chosen.alpha_eps, chosen.alpha_renyi
    # Each step's temporaries (arrays of the trials' size) are freed when it ends; glibc keeps
    # the freed pages inside its heap unless told, so they go back after each step instead of
    # piling up under the report's peak.
    release_freed_memory()
    # The (epsilon, delta) tests run at the point of the certificate the allocation pilot chose.
    lower_bounds, reach = _lower_bounds(scored, statistics=statistics, delta=chosen.tested_delta,
                                        confidence=confidence, seed=seed, direction=direction,
                                        alpha_each=alpha_each, family=family,
                                        privacy_direction=privacy_direction, rule=chosen.rule,
                                        notes=notes)
    release_freed_memory()
    renyi = _renyi_tests(scored, certificate, alpha_each=alpha_renyi, seed=seed, family=family,
                         confidence=confidence, direction=direction,
                         rule=chosen.rule) if use_renyi else []
    release_freed_memory()
    estimates = _estimates(scored, estimators=settings.estimators, delta=delta, seed=seed,
                           notes=notes, privacy_direction=privacy_direction)
    plots = _plots(scored, delta=delta, notes=notes, privacy_direction=privacy_direction)
    release_freed_memory()
    if plan.extra_plots:  # an adapter's own line plots (AlgorithmAdapter.extra_plots)
        plots["extra"] = [dict(plot) for plot in plan.extra_plots]
    utility = _utility(main)
    release_freed_memory()
    return Analysis(
        attacks=scored, n_trials=main.n_trials,
        pilot_trials=0 if chunks.pilot is None else chunks.pilot.n_trials,
        renyi_certificate=use_renyi, n_eps_tests=n_eps, family=family, alpha_each=alpha_each,
        alpha_renyi=alpha_renyi, allocation=chosen,
        lower_bounds=lower_bounds, reach=reach, renyi=renyi, estimates=estimates, plots=plots,
        utility=utility, notes=notes)
