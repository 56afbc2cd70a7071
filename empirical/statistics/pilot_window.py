"""(epsilon, delta) lower bound from a few pilot-placed thresholds, both score orientations and
both inequalities of the (epsilon, delta) region in one simultaneous confidence event.

The statistic. A seeded random pilot (a few percent of the trials, one permutation of the rows
for both worlds, never chosen by the scores) is fitted by one normal law per world. On those
fits, for each score orientation ("score >= t says positive" and "score <= t says positive")
and each inequality the certificate states -- forward, P(S) <= e^eps Q(S) + delta, whose
binding rate is the false-positive rate FPR = Q(S); reverse, Q(S') <= e^eps P(S') + delta on the
complement S', whose binding rate is the false-negative rate FNR = P(S') -- the pilot predicts
the threshold that maximises the Clopper-Pearson bound at the expected counts. The orientation
with the larger prediction is kept (or the one stated in advance). For each inequality of it,
three rules are fixed: the predicted optimum and the thresholds where the fitted binding rate is
half and twice as large (the fits' tails are uncertain; the window absorbs a factor-two error).
The predicted optimum of the inequality with the larger prediction is the *lead*: it gets
:data:`LEAD_SHARE` of the level, the other rules split the rest (:func:`rule_levels`).
Each rule is then evaluated on the remaining trials: Clopper-Pearson upper bounds on its FPR
and FNR (Clopper and Pearson 1934) plugged into the (epsilon, delta) region (Kairouz, Oh,
Viswanath 2015, Theorem 2.1; :func:`~empirical.statistics.epsilon_from_error_rates`), and the
largest value is returned.

Validity (with probability >= 1 - alpha the result is at or below the epsilon of every
(epsilon, delta) guarantee, in the stated direction, that the two score laws satisfy, whatever
the laws are, ties and point masses included, and whatever the dependence between the two
worlds' trials of one row):

1. The rules (orientation, thresholds) and their levels are functions of the pilot rows only.
   Rows are independent, so given the pilot, each world's tested scores are i.i.d. draws of its
   law, independent of the rules.
2. For a fixed rule, FP = #{tested negatives in S} is Binomial(n_neg, FPR) and
   FN = #{tested positives outside S} is Binomial(n_pos, FNR): each is one world's sample
   alone, so no independence between the worlds is used. The one-sided Clopper-Pearson upper
   bound at level gamma is below the true rate with probability at most gamma.
3. The family has R rules (R = 6 with both inequalities, 3 with the forward one only) and 2R
   such events. Rule r gets weight w_r (``LEAD_SHARE`` for the lead, the rest split evenly;
   1/R each where the pilot predicts nothing), a function of the pilot; its binding rate gets
   level ``SHARE * alpha * w_r``, its other rate ``(1 - SHARE) * alpha * w_r``: the levels sum
   to alpha whatever the pilot, so by the union bound every rate of
   every rule is below its upper bound simultaneously with probability >= 1 - alpha. This one
   event covers both orientations (only one was kept, by the pilot) and both inequalities (each
   rule's two upper bounds feed both).
4. On that event, for any (epsilon, delta) guarantee of the laws and any rule, the region's
   inequalities hold at the true rates and ``epsilon_from_error_rates`` is non-increasing in
   both rates, so each rule's value, and hence their maximum, is at most epsilon.

The pilot only costs power, never validity: a poor normal fit (heavy tails, point masses)
places the rules badly. When the pilot's scores have ties (a discrete score), each rule's
threshold moves up to the least value the pilot saw at or above it (the same rule on those
values; the largest value when none is), still a function of the pilot only. With
fewer than :data:`MIN_PILOT_TRIALS` trials on a side a pilot cannot predict anything, and the
bound is instead Bonferroni over every Pareto threshold of both orientations
(:class:`~empirical.statistics.BonferroniPareto`; its own simultaneous event, module docstring
of :mod:`empirical.statistics`), still at the full level alpha.

Why this is the default. One simultaneous event at level alpha covers what would otherwise be
separate tests per orientation, and a handful of rules costs far less than a union over every
count: on Gaussian scores at N = 10^4 per side it reaches about 0.98 of the single-threshold
limit (:func:`~empirical.statistics.pilot.single_threshold_limit`), ``unlearn bench power``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from empirical.statistics.checks import (
    as_scores,
    check_alpha,
    check_delta,
    check_direction,
    check_probability,
    epsilon_from_error_rates,
    split_order,
)
from empirical.statistics.thresholds import (
    BonferroniPareto,
    EpsilonLowerBound,
    clopper_pearson_upper,
    select_rule,
)

__all__ = [
    "MIN_PILOT_TRIALS",
    "PilotWindowEpsilonLowerBound",
    "LEAD_SHARE",
    "SHARE",
    "WINDOW",
    "blind_thresholds",
    "rule_levels",
    "pilot_window_epsilon_lower_bound",
    "pilot_window_prediction",
]

# Fewest trials per side for which a pilot is drawn; below, Bonferroni over every threshold.
MIN_PILOT_TRIALS = 100
# Part of a rule's level given to its binding (small) rate: its bound moves most with the level.
SHARE = 0.7
# The rules of one inequality: the fitted binding rate times these factors around the optimum.
WINDOW = (0.5, 1.0, 2.0)
# Share of the level given to the rule the pilot forecasts best (the lead: its inequality's
# forecast optimum); the other rules split the rest evenly. The weights are a function of the
# pilot, so the union bound over the rules still spends exactly alpha.
LEAD_SHARE = 1.0 / 3.0
# Binding rate, read off the pooled pilot, of the middle rule of an inequality the pilot forecasts
# nothing for (the others at the window's factors of it): where a leak the pilot missed by
# chance shows with many counts, not at the edge of a flat forecast's grid.
BLIND_RATE = 0.25
_GRID = 2001  # candidate thresholds scanned on the pilot's normal fits
_TINY = 1e-300  # smallest fitted rate a threshold is placed at (the normal quantile stays finite)


@dataclass(frozen=True, kw_only=True)
class PilotWindowEpsilonLowerBound(EpsilonLowerBound):
    """epsilon lower bound at ``delta`` from the best of a few pilot-placed rules (the test's
    fields: :class:`~empirical.statistics.ThresholdTestBound`, for the best rule; counts are
    those of the tested, non-pilot trials); ``n_pilot_*`` the pilot's sizes (0: no pilot, the
    Bonferroni-over-every-threshold fallback); ``n_rules_considered`` the family size R."""

    n_pilot_positive: int
    n_pilot_negative: int
    strategy: str = "pilot-window"
    method: str = (
        "rules placed on a seeded pilot (normal fits; each inequality's predicted optimum and "
        "half and twice its binding rate), Clopper-Pearson upper bounds on FPR and FNR of the "
        "remaining trials, one union bound at alpha over every rule (a third of it to the best "
        "predicted rule), Kairouz et al. 2015 region"
    )


@dataclass(frozen=True)
class _Fit:
    mean: float
    sd: float


def _fit(scores: np.ndarray) -> _Fit:
    sd = float(np.std(scores, ddof=1))
    scale = max(1.0, float(np.max(np.abs(scores))))
    return _Fit(float(np.mean(scores)), sd if sd > 1e-12 * scale else 1e-12 * scale)


def _predict(pos: _Fit, neg: _Fit, *, n_positive: int, n_negative: int, delta: float,
             gamma_small: float, gamma_large: float, reverse: bool) -> tuple[float, float]:
    """(threshold, predicted epsilon) of the rule "score >= t" best for one inequality on the
    fits, Clopper-Pearson at the expected counts and at the levels the test will use."""
    lo = min(pos.mean - 12 * pos.sd, neg.mean - 12 * neg.sd)
    hi = max(pos.mean + 12 * pos.sd, neg.mean + 12 * neg.sd)
    grid = np.linspace(lo, hi, _GRID)
    fpr = special.ndtr((neg.mean - grid) / neg.sd)
    fnr = special.ndtr((grid - pos.mean) / pos.sd)
    g_fpr, g_fnr = (gamma_large, gamma_small) if reverse else (gamma_small, gamma_large)
    fpr_hi = clopper_pearson_upper(fpr * n_negative, n_negative, g_fpr)
    fnr_hi = clopper_pearson_upper(fnr * n_positive, n_positive, g_fnr)
    small, large = (fnr_hi, fpr_hi) if reverse else (fpr_hi, fnr_hi)
    with np.errstate(divide="ignore"):
        eps = np.where(1.0 - delta - large > 0,
                       np.log(np.maximum(1.0 - delta - large, _TINY)) - np.log(small), 0.0)
    i = int(np.argmax(eps))
    return float(grid[i]), max(0.0, float(eps[i]))


def blind_thresholds(pooled: np.ndarray, *, reverse: bool) -> list[float]:
    """The rules of an inequality the pilot forecasts no epsilon for: the thresholds where the
    pooled pilot's upper rate (forward; its lower rate for the reverse inequality, whose binding
    rate lies below the threshold) is :data:`BLIND_RATE` times each factor of :data:`WINDOW`."""
    return [float(np.quantile(pooled, BLIND_RATE * factor if reverse else
                              1.0 - BLIND_RATE * factor)) for factor in WINDOW]


def _window(threshold: float, pos: _Fit, neg: _Fit, *, reverse: bool) -> list[float]:
    """The rules of one inequality: the optimum and the thresholds where the fitted binding
    rate (FPR, or FNR for the reverse inequality) is each factor of :data:`WINDOW` times its
    value there."""
    if reverse:
        rate = float(special.ndtr((threshold - pos.mean) / pos.sd))
    else:
        rate = float(special.ndtr((neg.mean - threshold) / neg.sd))
    out = []
    for factor in WINDOW:
        if factor == 1.0:
            out.append(threshold)
            continue
        target = min(max(rate * factor, _TINY), 0.5)
        z = float(special.ndtri(target))
        out.append(pos.mean + pos.sd * z if reverse else neg.mean - neg.sd * z)
    return out


def _levels(alpha: float, direction: str) -> tuple[int, float, float]:
    """(number of rules R, level of a rule's binding rate, level of its other rate) at equal
    weights: the levels the pilot's forecasts are made at."""
    n_rules = len(WINDOW) * (2 if direction == "both" else 1)
    return n_rules, SHARE * alpha / n_rules, (1.0 - SHARE) * alpha / n_rules


def rule_levels(alpha: float, reverse: np.ndarray, lead: int | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(level of each rule's FPR bound, level of its FNR bound): rule ``lead`` (None: no lead)
    gets :data:`LEAD_SHARE` of ``alpha``, the others split the rest evenly, and each rule's
    share goes :data:`SHARE` to its binding rate (the FPR forward, the FNR for a ``reverse``
    rule). The levels sum to ``alpha``."""
    n = reverse.size
    weights = np.full(n, 1.0 / n)
    if lead is not None and n > 1:
        weights = np.full(n, (1.0 - LEAD_SHARE) / (n - 1))
        weights[lead] = LEAD_SHARE
    binding, other = SHARE * alpha * weights, (1.0 - SHARE) * alpha * weights
    return np.where(reverse, other, binding), np.where(reverse, binding, other)


def _plan(pilot_pos: np.ndarray, pilot_neg: np.ndarray, *, n_positive: int, n_negative: int,
          delta: float, alpha: float, both_orientations: bool,
          direction: str) -> tuple[float, float, list[tuple[float, bool]], int | None]:
    """(orientation sign, predicted epsilon, rules (threshold, reverse), lead) chosen on the
    pilot's normal fits for ``n_positive`` / ``n_negative`` tested scores (module docstring);
    the lead is the index of the best inequality's forecast optimum (None where nothing is
    forecast)."""
    _, gamma_small, gamma_large = _levels(alpha, direction)
    inequalities = (False, True) if direction == "both" else (False,)
    best_plan: tuple[float, float, list[tuple[float, bool]], int | None] | None = None
    for sign in ((1.0, -1.0) if both_orientations else (1.0,)):
        pos_fit, neg_fit = _fit(sign * pilot_pos), _fit(sign * pilot_neg)
        predicted, rules, lead = 0.0, [], None
        for reverse in inequalities:
            threshold, value = _predict(pos_fit, neg_fit, n_positive=n_positive,
                                        n_negative=n_negative, delta=delta,
                                        gamma_small=gamma_small, gamma_large=gamma_large,
                                        reverse=reverse)
            if value > predicted:
                predicted, lead = value, len(rules) + WINDOW.index(1.0)
            window = (_window(threshold, pos_fit, neg_fit, reverse=reverse) if value > 0 else
                      blind_thresholds(sign * np.concatenate([pilot_pos, pilot_neg]),
                                       reverse=reverse))
            rules += [(t, reverse) for t in window]
        if best_plan is None or predicted > best_plan[1]:  # ties: the forward orientation
            best_plan = (sign, predicted, rules, lead)
    assert best_plan is not None
    return best_plan


def pilot_window_prediction(pilot_positive, pilot_negative, *, n_positive: int,
                            n_negative: int, delta: float, alpha: float,
                            both_orientations: bool = True, direction: str = "both") -> float:
    """The epsilon the statistic predicts, from the pilot's normal fits alone, for
    ``n_positive`` / ``n_negative`` tested scores at level ``alpha`` (Clopper-Pearson at the
    expected counts of its best rule). A forecast, not a bound; it reads only the pilot."""
    positive = as_scores(pilot_positive, "pilot_positive")
    negative = as_scores(pilot_negative, "pilot_negative")
    if min(positive.size, negative.size) < 2:
        raise ValueError("a prediction needs at least 2 pilot scores per side")
    return _plan(positive, negative, n_positive=n_positive, n_negative=n_negative,
                 delta=check_delta(delta), alpha=check_alpha(alpha),
                 both_orientations=both_orientations, direction=check_direction(direction))[1]


def checked_inputs(scores_positive, scores_negative, *, delta: float, alpha: float,
                   direction: str, pilot_fraction: float, seed: int):
    """(positive, negative, delta, alpha, direction, pilot_fraction) checked, for the pilot
    statistics; ValueError naming the bad input."""
    positive = as_scores(scores_positive, "scores_positive")
    negative = as_scores(scores_negative, "scores_negative")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    return (positive, negative, check_delta(delta), check_alpha(alpha),
            check_direction(direction),
            check_probability(pilot_fraction, "pilot_fraction", open_low=True, open_high=True))


def pilot_split(positive: np.ndarray, negative: np.ndarray, *, pilot_fraction: float, rows,
                seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pilot positives, tested positives, pilot negatives, tested negatives): each side in the
    order of ``rows`` (:func:`~empirical.statistics.checks.split_order`), its first
    ``pilot_fraction`` (at least 2) the pilot."""
    order_pos, order_neg = split_order(rows, positive.size, negative.size, seed=seed)
    positive, negative = positive[order_pos], negative[order_neg]
    del order_pos, order_neg  # each as large as its side's scores
    k_pos = max(2, int(round(pilot_fraction * positive.size)))
    k_neg = max(2, int(round(pilot_fraction * negative.size)))
    if k_pos > positive.size - 2 or k_neg > negative.size - 2:
        raise ValueError("pilot_fraction leaves fewer than 2 tested scores on a side")
    return positive[:k_pos], positive[k_pos:], negative[:k_neg], negative[k_neg:]


def pilot_window_epsilon_lower_bound(
    scores_positive,
    scores_negative,
    *,
    delta: float,
    alpha: float = 0.05,
    pilot_fraction: float = 0.05,
    seed: int = 0,
    both_orientations: bool = True,
    direction: str = "both",
    rows=None,
) -> PilotWindowEpsilonLowerBound:
    """epsilon lower bound at ``delta`` from a few pilot-placed rules (module docstring).

    With probability >= 1 - alpha the result is at or below the epsilon of every (epsilon,
    delta) guarantee in ``direction`` ("both": both inequalities; "forward": only
    P(S) <= e^eps Q(S) + delta, P the positives' law) that the two score laws satisfy.
    ``both_orientations=False`` considers only "score >= t says positive" (an orientation
    stated in advance). ``pilot_fraction`` of each side (at least 2) is the pilot when both
    sides have at least :data:`MIN_PILOT_TRIALS` scores. ``rows``, when given, is the split
    instead of one drawn from ``seed``: a permutation of the row indices drawn independently of
    the scores (:func:`~empirical.statistics.checks.split_order`), whose first
    ``pilot_fraction`` of each side is the pilot.
    """
    positive, negative, delta, alpha, direction, pilot_fraction = checked_inputs(
        scores_positive, scores_negative, delta=delta, alpha=alpha, direction=direction,
        pilot_fraction=pilot_fraction, seed=seed)
    if min(positive.size, negative.size) < MIN_PILOT_TRIALS:
        return _without_pilot(positive, negative, delta=delta, alpha=alpha,
                              both_orientations=both_orientations, direction=direction)
    pilot_pos, test_pos, pilot_neg, test_neg = pilot_split(
        positive, negative, pilot_fraction=pilot_fraction, rows=rows, seed=seed)
    k_pos, k_neg = pilot_pos.size, pilot_neg.size

    n_rules = _levels(alpha, direction)[0]
    sign, _, rules, lead = _plan(pilot_pos, pilot_neg, n_positive=test_pos.size,
                                 n_negative=test_neg.size, delta=delta, alpha=alpha,
                                 both_orientations=both_orientations, direction=direction)
    pooled = np.unique(sign * np.concatenate([pilot_pos, pilot_neg]))
    if pooled.size < pilot_pos.size + pilot_neg.size:
        # Tied pilot scores (a discrete score): a normal fit may put a threshold past every
        # value the score takes. On the values the pilot saw, "score >= t" is "score >= v" for
        # the least such v >= t, so each rule moves up to it (down to the largest value when
        # none is as large).
        index = np.minimum(np.searchsorted(pooled, [t for t, _ in rules], side="left"),
                           pooled.size - 1)
        rules = [(float(pooled[i]), r) for i, (_, r) in zip(index, rules, strict=True)]

    # oriented copies sorted in place (np.sort of a product would copy it once more)
    pos_sorted, neg_sorted = sign * test_pos, sign * test_neg
    pos_sorted.sort()
    neg_sorted.sort()
    thresholds = np.array([t for t, _ in rules])
    reverse = np.array([r for _, r in rules])
    # Rule "oriented score >= t": FP counts tested negatives at or above t, FN positives below.
    false_positives = neg_sorted.size - np.searchsorted(neg_sorted, thresholds, side="left")
    false_negatives = np.searchsorted(pos_sorted, thresholds, side="left")
    fpr_level, fnr_level = rule_levels(alpha, reverse, lead)
    fpr_hi = clopper_pearson_upper(false_positives, neg_sorted.size, fpr_level)
    fnr_hi = clopper_pearson_upper(false_negatives, pos_sorted.size, fnr_level)
    values = np.asarray(epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta,
                                                 direction=direction))
    i = int(np.argmax(values))
    return PilotWindowEpsilonLowerBound(
        epsilon=float(values[i]),
        delta=delta,
        confidence=1.0 - alpha,
        threshold=float(sign * thresholds[i]),
        positive_above=sign > 0,
        fpr_upper=float(fpr_hi[i]),
        fnr_upper=float(fnr_hi[i]),
        false_positives=int(false_positives[i]),
        false_negatives=int(false_negatives[i]),
        n_positive=int(pos_sorted.size),
        n_negative=int(neg_sorted.size),
        n_rules_considered=n_rules,
        n_pilot_positive=k_pos,
        n_pilot_negative=k_neg,
    )


def _without_pilot(positive: np.ndarray, negative: np.ndarray, *, delta: float, alpha: float,
                   both_orientations: bool, direction: str) -> PilotWindowEpsilonLowerBound:
    """Too few trials for a pilot: Bonferroni over every Pareto threshold of the allowed
    orientations, at level alpha in all (one simultaneous event)."""

    def functional(fpr_hi, fnr_hi):
        return np.asarray(epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta,
                                                   direction=direction))

    choice = select_rule(positive, negative, alpha=alpha, strategy=BonferroniPareto(),
                         two_sided_threshold=both_orientations, functional=functional)
    record = choice.test_record("pilot-window")
    return PilotWindowEpsilonLowerBound(
        epsilon=choice.value, delta=delta, confidence=1.0 - alpha, **record,
        n_pilot_positive=0, n_pilot_negative=0,
        method=(f"fewer than {MIN_PILOT_TRIALS} trials on a side: no pilot; Clopper-Pearson "
                "bounds at every Pareto threshold of the allowed orientations, one union bound "
                "at alpha over every count (Bonferroni-Pareto), Kairouz et al. 2015 region"))

