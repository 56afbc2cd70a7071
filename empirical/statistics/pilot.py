"""(epsilon, delta) lower bounds from attack scores, with a pilot-chosen threshold.

The bound. For a fixed test "say positive when s * score >= t" (orientation s = +1 or -1), the
false-positive rate FPR on negatives and the false-negative rate FNR on positives obey, under any
(epsilon, delta) guarantee in both directions, FPR + e^eps FNR >= 1 - delta and
FNR + e^eps FPR >= 1 - delta (Kairouz, Oh, Viswanath 2015, Theorem 2.1). Upper Clopper-Pearson
bounds on both rates at level alpha/2 each (Clopper and Pearson 1934) plugged into that region
give an epsilon below the true one with probability >= 1 - alpha (Nasr et al. 2021, Sec. 3).

Why a pilot. Searching the threshold on the same counts costs a multiple-testing correction;
a held-out half costs half the trials. Here a small random pilot (a few percent of each side,
drawn by one seeded permutation of the trials, so paired trials stay together, never by the
scores) chooses the orientation and the threshold,
and every remaining trial goes into one Clopper-Pearson step: the test is independent of the
counts it is evaluated on, so no correction is needed. The pilot predicts the rates from normal
fits to its scores (tail rates of order 1/N are invisible in a pilot's raw counts); a poor fit
only costs power, never validity.

The limit. :func:`single_threshold_limit` is the best such bound one could get knowing the
truth: the threshold chosen on the exact rates and Clopper-Pearson evaluated at the expected
counts N * rate (a typical value, not a bound). It is the yardstick of audit power (the
"single-threshold limit"); :mod:`empirical.benchmarks.power` measures ratios against it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from empirical.statistics.checks import (
    as_scores,
    check_probability,
    epsilon_from_error_rates,
    split_order,
)
from empirical.statistics.thresholds import (
    EpsilonLowerBound,
    clopper_pearson_upper,
    epsilon_lower_bound_from_counts,
)

__all__ = [
    "PilotEpsilonLowerBound",
    "pilot_epsilon_lower_bound",
    "pilot_threshold_prediction",
    "single_threshold_limit",
]

_GRID = 801  # candidate thresholds scanned on the pilot's normal fits


@dataclass(frozen=True, kw_only=True)
class PilotEpsilonLowerBound(EpsilonLowerBound):
    """epsilon lower bound at ``delta`` from one rule chosen on a pilot (the test's fields:
    :class:`~empirical.statistics.ThresholdTestBound`); counts are those of the tested
    (non-pilot) trials, ``n_pilot_*`` the pilot's sizes.
    """

    n_pilot_positive: int
    n_pilot_negative: int
    strategy: str = "pilot-threshold"
    n_rules_considered: int = 1
    method: str = (
        "pilot-chosen threshold (normal fits of the pilot scores), Clopper-Pearson upper bounds "
        "on FPR and FNR of the remaining trials at alpha/2 each, Kairouz et al. 2015 region"
    )


def _as_scores(scores, name: str) -> np.ndarray:
    array = as_scores(scores, name)
    if array.size < 4:
        raise ValueError(f"{name} needs at least 4 scores (pilot and tested parts), got {array.size}")
    return array


def _check_open_unit(value: float, name: str) -> float:
    return check_probability(value, name, open_low=True, open_high=True)


def _best_rule(
    tail_positive: Callable[[np.ndarray], np.ndarray],
    tail_negative: Callable[[np.ndarray], np.ndarray],
    grid: np.ndarray,
    *,
    n_positive: int,
    n_negative: int,
    delta: float,
    alpha: float,
    direction: str = "both",
) -> tuple[float, float]:
    """(threshold, predicted epsilon) maximising the Clopper-Pearson bound at expected counts.

    ``tail_*`` give P(score >= t) under each world; rule "score >= t" has
    FPR = tail_negative(t), FNR = 1 - tail_positive(t).
    """
    fpr = np.clip(tail_negative(grid), 0.0, 1.0)
    fnr = np.clip(1.0 - tail_positive(grid), 0.0, 1.0)
    fpr_hi = clopper_pearson_upper(fpr * n_negative, n_negative, alpha / 2)
    fnr_hi = clopper_pearson_upper(fnr * n_positive, n_positive, alpha / 2)
    eps = np.asarray(epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta,
                                              direction=direction))
    i = int(np.argmax(eps))
    return float(grid[i]), float(eps[i])


def _normal_tail(mean: float, sd: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda t: special.ndtr((mean - t) / sd)


def _grid(*arrays: np.ndarray) -> np.ndarray:
    pooled = np.concatenate(arrays)
    centre, spread = float(np.mean(pooled)), float(np.std(pooled)) or 1.0
    lo = min(float(pooled.min()), centre - 12 * spread)
    hi = max(float(pooled.max()), centre + 12 * spread)
    return np.linspace(lo, hi, _GRID)


def _plan(pilot_pos: np.ndarray, pilot_neg: np.ndarray, *, n_positive: int, n_negative: int,
          delta: float, alpha: float, both_orientations: bool,
          direction: str) -> tuple[float, float, bool]:
    """(threshold, predicted epsilon, positive above) of the rule chosen on the pilot's normal
    fits for ``n_positive`` / ``n_negative`` tested scores."""
    best: tuple[float, float, bool] | None = None
    for sign in ((1.0, -1.0) if both_orientations else (1.0,)):
        pos_fit = (sign * float(pilot_pos.mean()), float(pilot_pos.std(ddof=1)) or 1e-12)
        neg_fit = (sign * float(pilot_neg.mean()), float(pilot_neg.std(ddof=1)) or 1e-12)
        grid = _grid(sign * pilot_pos, sign * pilot_neg)
        threshold, predicted = _best_rule(
            _normal_tail(*pos_fit), _normal_tail(*neg_fit), grid,
            n_positive=n_positive, n_negative=n_negative, delta=delta, alpha=alpha,
            direction=direction,
        )
        if best is None or predicted > best[1]:
            best = (sign * threshold, predicted, sign > 0)
    assert best is not None
    return best


def pilot_threshold_prediction(pilot_positive, pilot_negative, *, n_positive: int,
                               n_negative: int, delta: float, alpha: float,
                               both_orientations: bool = True, direction: str = "both") -> float:
    """The epsilon the pilot-threshold statistic predicts from the pilot's normal fits alone
    for ``n_positive`` / ``n_negative`` tested scores at level ``alpha``. A forecast, not a
    bound; it reads only the pilot."""
    positive = _as_scores(pilot_positive, "pilot_positive")
    negative = _as_scores(pilot_negative, "pilot_negative")
    if min(positive.size, negative.size) < 2:
        raise ValueError("a prediction needs at least 2 pilot scores per side")
    return _plan(positive, negative, n_positive=n_positive, n_negative=n_negative,
                 delta=_check_open_unit(delta, "delta"), alpha=_check_open_unit(alpha, "alpha"),
                 both_orientations=both_orientations, direction=direction)[1]


def pilot_epsilon_lower_bound(
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
) -> PilotEpsilonLowerBound:
    """epsilon lower bound at ``delta`` from one pilot-chosen threshold (module docstring).

    With probability >= 1 - alpha the result is at or below the epsilon of every (epsilon,
    delta) guarantee (both directions) the two score laws satisfy, whatever those laws are:
    the pilot is a seeded random subset, so the chosen rule is independent of the tested
    counts, and one Clopper-Pearson step per rate at alpha/2 (Nasr et al. 2021, Sec. 3).
    Both orientations are compared on the pilot; only the chosen one is tested.
    ``both_orientations=False`` considers only "score >= t" (higher = positive), for callers that
    state the score's direction in advance. ``direction`` ("both" or "forward") names the
    inequalities of the guarantee tested (:func:`empirical.statistics.epsilon_from_error_rates`).
    ``rows``, when given, is the split instead of one drawn from ``seed``: a permutation of the
    row indices drawn independently of the scores, whose first ``pilot_fraction`` of each side
    is the pilot (:func:`~empirical.statistics.checks.split_order`).
    """
    positive = _as_scores(scores_positive, "scores_positive")
    negative = _as_scores(scores_negative, "scores_negative")
    delta = _check_open_unit(delta, "delta")
    alpha = _check_open_unit(alpha, "alpha")
    pilot_fraction = _check_open_unit(pilot_fraction, "pilot_fraction")
    order_pos, order_neg = split_order(rows, positive.size, negative.size, seed=seed)
    positive, negative = positive[order_pos], negative[order_neg]
    k_pos = int(round(pilot_fraction * positive.size))
    k_neg = int(round(pilot_fraction * negative.size))
    if min(k_pos, k_neg) < 2 or k_pos > positive.size - 2 or k_neg > negative.size - 2:
        raise ValueError("pilot_fraction leaves fewer than 2 pilot or 2 tested scores on a side")
    pilot_pos, test_pos = positive[:k_pos], positive[k_pos:]
    pilot_neg, test_neg = negative[:k_neg], negative[k_neg:]

    threshold, _, above = _plan(pilot_pos, pilot_neg, n_positive=test_pos.size,
                                n_negative=test_neg.size, delta=delta, alpha=alpha,
                                both_orientations=both_orientations, direction=direction)
    if above:
        false_negatives = int(np.sum(test_pos < threshold))
        false_positives = int(np.sum(test_neg >= threshold))
    else:
        false_negatives = int(np.sum(test_pos > threshold))
        false_positives = int(np.sum(test_neg <= threshold))
    # The threshold was fixed on the pilot only, so the tested counts give a valid bound.
    fixed = epsilon_lower_bound_from_counts(
        false_positives=false_positives, n_negative=test_neg.size,
        false_negatives=false_negatives, n_positive=test_pos.size, delta=delta, alpha=alpha,
        direction=direction)
    return PilotEpsilonLowerBound(
        epsilon=float(fixed.epsilon),
        delta=delta,
        confidence=fixed.confidence,
        threshold=threshold,
        positive_above=above,
        fpr_upper=fixed.fpr_upper,
        fnr_upper=fixed.fnr_upper,
        false_positives=false_positives,
        false_negatives=false_negatives,
        n_positive=test_pos.size,
        n_negative=test_neg.size,
        n_pilot_positive=k_pos,
        n_pilot_negative=k_neg,
    )


def single_threshold_limit(*, mu: float, delta: float, n: int, alpha: float = 0.05) -> float:
    """Best single-threshold Clopper-Pearson epsilon for N(mu, 1) vs N(0, 1) knowing the truth.

    The threshold maximises the bound at the expected counts n * FPR and n * FNR (Clopper-
    Pearson at alpha/2 per rate, n trials per side, Kairouz et al. 2015 region). A yardstick
    (typical value of the best fixed test), not a bound.
    """
    if not (math.isfinite(mu) and mu > 0):
        raise ValueError(f"mu must be positive and finite, got {mu!r}")
    grid = np.linspace(-12.0, mu + 12.0, 20001)
    _, value = _best_rule(
        _normal_tail(mu, 1.0), _normal_tail(0.0, 1.0), grid,
        n_positive=n, n_negative=n, delta=_check_open_unit(delta, "delta"),
        alpha=_check_open_unit(alpha, "alpha"),
    )
    return value
