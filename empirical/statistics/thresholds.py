"""Clopper-Pearson intervals, threshold strategies and epsilon lower bounds, estimates and ceilings."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import special

from empirical.statistics.checks import (
    KIND_CEILING,
    KIND_ESTIMATE,
    KIND_INTERVAL,
    KIND_LOWER_BOUND,
    as_scores,
    check_alpha,
    check_count,
    check_delta,
    check_direction,
    check_probability,
    epsilon_from_error_rates,
    paired_permutations,
)

# ----------------------------------------------------------------------------------------------
# Clopper-Pearson.


def clopper_pearson_upper(k, n, gamma) -> np.ndarray:
    """One-sided upper Clopper-Pearson bound at level gamma (P[p > bound] <= gamma)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    full = k >= n
    # The complementary inverse keeps precision for tiny gamma where 1 - gamma would round to
    # 1. It is what scipy.stats.beta.isf evaluates (Boost's ibetac_inv), without importing
    # scipy.stats (tens of MB an audit would hold to the end).
    bound = special.betainccinv(k + 1.0, np.where(full, 1.0, n - k), gamma)
    return np.where(full, 1.0, bound)


def clopper_pearson_lower(k, n, gamma) -> np.ndarray:
    """One-sided lower Clopper-Pearson bound at level gamma (P[p < bound] <= gamma)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    empty = k <= 0
    # Boost's ibeta_inv, as scipy.stats.beta.ppf evaluates it.
    bound = special.betaincinv(np.where(empty, 1.0, k), n - k + 1.0, gamma)
    return np.where(empty, 0.0, bound)


@dataclass(frozen=True)
class ProportionInterval:
    """Clopper-Pearson interval for a binomial proportion."""

    lower: float
    upper: float
    estimate: float
    successes: int
    trials: int
    confidence: float
    sided: str
    method: str = "Clopper-Pearson exact binomial"
    kind: str = KIND_INTERVAL


def clopper_pearson(
    *,
    successes: int,
    trials: int,
    confidence: float = 0.95,
    sided: Literal["two-sided", "upper", "lower"] = "two-sided",
) -> ProportionInterval:
    """Exact binomial interval (Clopper and Pearson 1934).

    ``sided="upper"`` gives a one-sided upper bound (``lower`` is 0), ``"lower"`` a one-sided
    lower bound (``upper`` is 1), ``"two-sided"`` splits ``1 - confidence`` between the tails.
    """
    trials = check_count(trials, "trials", minimum=1)
    successes = check_count(successes, "successes")
    if successes > trials:
        raise ValueError(f"successes ({successes}) exceeds trials ({trials})")
    confidence = check_probability(confidence, "confidence", open_low=True, open_high=True)
    miss = 1.0 - confidence
    if sided == "two-sided":
        lower = float(clopper_pearson_lower(successes, trials, miss / 2))
        upper = float(clopper_pearson_upper(successes, trials, miss / 2))
    elif sided == "upper":
        lower, upper = 0.0, float(clopper_pearson_upper(successes, trials, miss))
    elif sided == "lower":
        lower, upper = float(clopper_pearson_lower(successes, trials, miss)), 1.0
    else:
        raise ValueError(f"sided must be 'two-sided', 'upper' or 'lower', got {sided!r}")
    return ProportionInterval(
        lower=lower,
        upper=upper,
        estimate=successes / trials,
        successes=successes,
        trials=trials,
        confidence=confidence,
        sided=sided,
    )


# ----------------------------------------------------------------------------------------------
# Threshold-selection strategies.


@dataclass(frozen=True)
class BonferroniPareto:
    """Maximise over the Pareto frontier of thresholds, all certified simultaneously.

    Clopper-Pearson levels are alpha / (2 n_negative) per FPR count and alpha / (2 n_positive)
    per FNR count, which makes every threshold valid at once (see the module docstring).
    """

    name = "bonferroni-pareto"


@dataclass(frozen=True)
class SampleSplit:
    """Choose the threshold on a random part of each sample, certify it on the rest (one
    permutation of the trials for both samples, so paired trials stay on the same side).

    ``selection_fraction`` of each sample (rounded) picks the rule; the held-out part, which
    the choice never saw, certifies it at the full level alpha. The chosen rule may depend on
    delta, so unlike the other strategies the bound need not be monotone in delta.
    """

    selection_fraction: float = 0.5
    seed: int = 0
    name = "sample-split"

    def __post_init__(self) -> None:
        check_probability(
            self.selection_fraction, "selection_fraction", open_low=True, open_high=True
        )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")


@dataclass(frozen=True)
class FixedThreshold:
    """A threshold fixed before the scores were seen (pre-registered), certified at alpha."""

    threshold: float
    name = "fixed-threshold"

    def __post_init__(self) -> None:
        if not math.isfinite(float(self.threshold)):
            raise ValueError(f"threshold must be finite, got {self.threshold!r}")


ThresholdStrategy = BonferroniPareto | SampleSplit | FixedThreshold


# ----------------------------------------------------------------------------------------------
# Threshold sweeps.


@dataclass(frozen=True)
class _Rules:
    """Candidate rules ``score >= threshold`` (in oriented units) with their error counts."""

    thresholds: np.ndarray
    false_positives: np.ndarray
    false_negatives: np.ndarray
    n_positive: int
    n_negative: int


def _pareto_rules(positive: np.ndarray, negative: np.ndarray) -> _Rules:
    """All undominated rules ``score >= t`` with t at a pooled score value."""
    pos = np.sort(positive)
    neg = np.sort(negative)
    # np.unique of the pooled scores (the same sort and mask), with the pooled copy freed before
    # the counts are formed and the counts formed in place: an audit's 10^5 scores then never
    # need more than five arrays of their size at once.
    pooled = np.concatenate([pos, neg])
    pooled.sort()
    distinct = np.empty(pooled.size, dtype=bool)
    distinct[0] = True
    np.not_equal(pooled[1:], pooled[:-1], out=distinct[1:])
    thresholds = pooled[distinct]
    del pooled, distinct
    fn = np.searchsorted(pos, thresholds, side="left")
    fp = np.searchsorted(neg, thresholds, side="left")
    np.subtract(neg.size, fp, out=fp)
    n_positive, n_negative = pos.size, neg.size
    del pos, neg
    # Moving the threshold up only trades FP for FN; a step that changes one count but not the
    # other is dominated by its neighbour.
    keep = np.ones(thresholds.size, dtype=bool)
    keep[1:] &= fp[1:] < fp[:-1]
    keep[:-1] &= fn[1:] > fn[:-1]
    return _Rules(thresholds[keep], fp[keep], fn[keep], n_positive, n_negative)


def _counts_at(positive: np.ndarray, negative: np.ndarray, threshold: float) -> tuple[int, int]:
    """(FP, FN) of the rule ``score >= threshold``."""
    return int(np.sum(negative >= threshold)), int(np.sum(positive < threshold))


def _oriented(values: np.ndarray, sign: float) -> np.ndarray:
    """``sign * values`` for a sign of +1 or -1: the same bits, without a copy for +1."""
    return values if sign > 0 else -values


def _orientations(two_sided_threshold: bool) -> tuple[float, ...]:
    # +1: score >= t says positive; -1: score <= t says positive (run as -score >= -t).
    return (1.0, -1.0) if two_sided_threshold else (1.0,)


@dataclass(frozen=True)
class SelectedRule:
    value: float
    threshold: float
    positive_above: bool
    false_positives: int
    false_negatives: int
    n_positive: int
    n_negative: int
    fpr_upper: float
    fnr_upper: float
    n_rules: int

    def test_record(self, strategy: str) -> dict:
        """The fields every bound reports about the chosen test (threshold, counts, rates)."""
        return {"threshold": self.threshold, "positive_above": self.positive_above,
                "fpr_upper": self.fpr_upper, "fnr_upper": self.fnr_upper,
                "false_positives": self.false_positives, "false_negatives": self.false_negatives,
                "n_positive": self.n_positive, "n_negative": self.n_negative,
                "strategy": strategy, "n_rules_considered": self.n_rules}




def select_rule(
    positive: np.ndarray,
    negative: np.ndarray,
    *,
    alpha: float,
    strategy: ThresholdStrategy,
    two_sided_threshold: bool,
    functional: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> SelectedRule:
    """Best rule under ``strategy`` for a statistic ``functional(fpr_upper, fnr_upper)``.

    ``functional`` must be non-increasing in both error rates, so that plugging in upper
    bounds on the rates gives a lower bound on the statistic.
    """
    orientations = _orientations(two_sided_threshold)
    if isinstance(strategy, SampleSplit):
        return _select_split(
            positive,
            negative,
            alpha=alpha,
            strategy=strategy,
            orientations=orientations,
            functional=functional,
        )
    alpha_each = alpha / len(orientations)
    choices = []
    for sign in orientations:
        pos, neg = _oriented(positive, sign), _oriented(negative, sign)
        if isinstance(strategy, FixedThreshold):
            t = sign * float(strategy.threshold)
            fp, fn = _counts_at(pos, neg, t)
            rules = _Rules(np.array([t]), np.array([fp]), np.array([fn]), pos.size, neg.size)
            gamma_neg = gamma_pos = alpha_each / 2
        elif isinstance(strategy, BonferroniPareto):
            rules = _pareto_rules(pos, neg)
            gamma_neg = alpha_each / (2 * neg.size)
            gamma_pos = alpha_each / (2 * pos.size)
        else:
            raise ValueError(f"unknown threshold strategy {strategy!r}")
        fpr_hi = clopper_pearson_upper(rules.false_positives, rules.n_negative, gamma_neg)
        fnr_hi = clopper_pearson_upper(rules.false_negatives, rules.n_positive, gamma_pos)
        values = functional(fpr_hi, fnr_hi)
        i = int(np.argmax(values))
        choices.append(
            SelectedRule(
                value=float(values[i]),
                threshold=float(sign * rules.thresholds[i]),
                positive_above=sign > 0,
                false_positives=int(rules.false_positives[i]),
                false_negatives=int(rules.false_negatives[i]),
                n_positive=rules.n_positive,
                n_negative=rules.n_negative,
                fpr_upper=float(fpr_hi[i]),
                fnr_upper=float(fnr_hi[i]),
                n_rules=int(rules.thresholds.size),
            )
        )
    best = max(choices, key=lambda c: c.value)  # first wins ties: the forward orientation
    return dataclasses.replace(best, n_rules=sum(c.n_rules for c in choices))


def _split_sizes(n: int, fraction: float, name: str) -> int:
    n_select = int(round(fraction * n))
    if not 1 <= n_select <= n - 1:
        raise ValueError(
            f"SampleSplit needs at least one {name} score on each side of the split; "
            f"{n} scores with selection_fraction={fraction} leave {n_select} for selection"
        )
    return n_select


def _select_split(
    positive: np.ndarray,
    negative: np.ndarray,
    *,
    alpha: float,
    strategy: SampleSplit,
    orientations: tuple[float, ...],
    functional: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> SelectedRule:
    rng = np.random.default_rng(strategy.seed)
    k_pos = _split_sizes(positive.size, strategy.selection_fraction, "positive")
    k_neg = _split_sizes(negative.size, strategy.selection_fraction, "negative")
    order_pos, order_neg = paired_permutations(rng, positive.size, negative.size)
    pos, neg = positive[order_pos], negative[order_neg]
    pos_sel, pos_cert = pos[:k_pos], pos[k_pos:]
    neg_sel, neg_cert = neg[:k_neg], neg[k_neg:]
    # Rank candidate rules on the selection part by the bound they would get at level alpha,
    # which penalises rules that look good only through tiny counts; ties (typically all 0
    # when the selection part is small) go to the largest plug-in advantage TPR - FPR.
    best_key, best_rule, n_rules = (-np.inf, -np.inf), (1.0, 0.0), 0
    for sign in orientations:
        rules = _pareto_rules(sign * pos_sel, sign * neg_sel)
        n_rules += rules.thresholds.size
        values = functional(
            clopper_pearson_upper(rules.false_positives, rules.n_negative, alpha / 2),
            clopper_pearson_upper(rules.false_negatives, rules.n_positive, alpha / 2),
        )
        advantage = (
            1.0
            - rules.false_negatives / rules.n_positive
            - rules.false_positives / rules.n_negative
        )
        i = int(np.lexsort((advantage, values))[-1])
        key = (float(values[i]), float(advantage[i]))
        if key > best_key:
            best_key, best_rule = key, (sign, float(rules.thresholds[i]))
    sign, t = best_rule
    fp, fn = _counts_at(sign * pos_cert, sign * neg_cert, t)
    fpr_hi = float(clopper_pearson_upper(fp, neg_cert.size, alpha / 2))
    fnr_hi = float(clopper_pearson_upper(fn, pos_cert.size, alpha / 2))
    value = float(functional(np.array([fpr_hi]), np.array([fnr_hi]))[0])
    return SelectedRule(
        value=value,
        threshold=sign * t,
        positive_above=sign > 0,
        false_positives=fp,
        false_negatives=fn,
        n_positive=pos_cert.size,
        n_negative=neg_cert.size,
        fpr_upper=fpr_hi,
        fnr_upper=fnr_hi,
        n_rules=n_rules,
    )


# ----------------------------------------------------------------------------------------------
# epsilon lower bounds.


@dataclass(frozen=True, kw_only=True)
class ThresholdTestBound:
    """A lower bound certified by one threshold test, valid with probability >= ``confidence``:
    the fields every such bound reports, whatever quantity it bounds.

    ``threshold`` and ``positive_above`` describe the certified rule (``score >= threshold``
    says positive when ``positive_above``, ``score <= threshold`` otherwise; None for counts of
    a test fixed in advance); counts and sizes are those of the sample that certified it (the
    held-out part for ``SampleSplit``, the non-pilot part for a pilot-chosen rule), the rates
    their Clopper-Pearson upper bounds; ``n_rules_considered`` rules were eligible under
    ``strategy``.
    """

    confidence: float
    threshold: float | None
    positive_above: bool | None
    fpr_upper: float
    fnr_upper: float
    false_positives: int
    false_negatives: int
    n_positive: int
    n_negative: int
    strategy: str
    n_rules_considered: int
    method: str
    kind: str = KIND_LOWER_BOUND


# The fields that describe the test (all but its level, method and kind): what a bound derived
# from another copies, and what :meth:`SelectedRule.test_record` fills.
TEST_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(ThresholdTestBound)
                           if f.name not in ("confidence", "method", "kind"))


@dataclass(frozen=True, kw_only=True)
class EpsilonLowerBound(ThresholdTestBound):
    """epsilon lower bound at ``delta`` (the test's fields: :class:`ThresholdTestBound`)."""

    epsilon: float
    delta: float


def check_strategy(strategy) -> ThresholdStrategy:
    """``strategy`` if it is one of the threshold strategies, else a clear error."""
    if not isinstance(strategy, BonferroniPareto | SampleSplit | FixedThreshold):
        raise ValueError(
            "strategy must be BonferroniPareto(), SampleSplit(...) or FixedThreshold(...), "
            f"got {strategy!r}"
        )
    return strategy


def epsilon_lower_bound(
    scores_positive,
    scores_negative,
    *,
    delta: float,
    alpha: float = 0.05,
    strategy: ThresholdStrategy | None = None,
    two_sided_threshold: bool = False,
    direction: str = "both",
) -> EpsilonLowerBound:
    """Clopper-Pearson epsilon lower bound from attack scores (Nasr et al. 2021, Sec. 3).

    Upper Clopper-Pearson bounds on FPR and FNR (a union bound over both rates and over the
    rules the strategy may pick) are plugged into :func:`epsilon_from_error_rates`, which is
    non-increasing in both rates. With probability >= 1 - alpha the result is at or below the
    epsilon of any (epsilon, delta) guarantee the two score distributions satisfy.

    ``strategy`` defaults to :class:`BonferroniPareto`. ``two_sided_threshold=True`` also tries
    rules ``score <= t`` (for attacks whose orientation is unknown), splitting alpha between
    the two orientations except under :class:`SampleSplit`, whose selection is free.
    ``direction`` ("both" or "forward") names the inequalities of the guarantee being tested
    (:func:`epsilon_from_error_rates`); "forward" bounds only P(S) <= e^eps Q(S) + delta with
    the positives' law as P.
    """
    delta = check_delta(delta)
    direction = check_direction(direction)
    alpha = check_alpha(alpha)
    strategy = check_strategy(BonferroniPareto() if strategy is None else strategy)
    positive = as_scores(scores_positive, "scores_positive")
    negative = as_scores(scores_negative, "scores_negative")

    def functional(fpr_hi, fnr_hi):
        return np.asarray(epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta,
                                                   direction=direction))

    choice = select_rule(
        positive,
        negative,
        alpha=alpha,
        strategy=strategy,
        two_sided_threshold=two_sided_threshold,
        functional=functional,
    )
    return EpsilonLowerBound(
        epsilon=choice.value,
        delta=delta,
        confidence=1.0 - alpha,
        **choice.test_record(strategy.name),
        method="Clopper-Pearson upper bounds on FPR/FNR into the (epsilon, delta) test region",
    )


def epsilon_lower_bound_from_counts(
    *,
    false_positives: int,
    n_negative: int,
    false_negatives: int,
    n_positive: int,
    delta: float,
    alpha: float = 0.05,
    direction: str = "both",
) -> EpsilonLowerBound:
    """epsilon lower bound from the confusion counts of one test fixed in advance.

    The test must not have been chosen using these counts; alpha is split evenly between the
    FPR and FNR bounds. ``direction`` as in :func:`epsilon_lower_bound`.
    """
    delta = check_delta(delta)
    direction = check_direction(direction)
    alpha = check_alpha(alpha)
    n_negative = check_count(n_negative, "n_negative", minimum=1)
    n_positive = check_count(n_positive, "n_positive", minimum=1)
    false_positives = check_count(false_positives, "false_positives")
    false_negatives = check_count(false_negatives, "false_negatives")
    if false_positives > n_negative:
        raise ValueError(f"false_positives ({false_positives}) exceeds n_negative ({n_negative})")
    if false_negatives > n_positive:
        raise ValueError(f"false_negatives ({false_negatives}) exceeds n_positive ({n_positive})")
    fpr_hi = float(clopper_pearson_upper(false_positives, n_negative, alpha / 2))
    fnr_hi = float(clopper_pearson_upper(false_negatives, n_positive, alpha / 2))
    return EpsilonLowerBound(
        epsilon=epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta,
                                         direction=direction),
        delta=delta,
        confidence=1.0 - alpha,
        threshold=None,
        positive_above=None,
        fpr_upper=fpr_hi,
        fnr_upper=fnr_hi,
        false_positives=false_positives,
        false_negatives=false_negatives,
        n_positive=n_positive,
        n_negative=n_negative,
        strategy="fixed-test-counts",
        n_rules_considered=1,
        method="Clopper-Pearson upper bounds on FPR/FNR into the (epsilon, delta) test region",
    )


@dataclass(frozen=True)
class EpsilonEstimate:
    """Plug-in epsilon: the largest epsilon over thresholds from raw error rates.

    Rules with exactly one zero error rate are skipped, as the NeurIPS 2023 organisers do:
    taken literally they imply epsilon = +inf from a single extreme score. Perfect separation
    (both rates zero) gives +inf. Biased upwards (a maximum over many noisy rules); never a
    bound. ``threshold`` is None when no rule survives (epsilon is then 0).
    """

    epsilon: float
    delta: float
    threshold: float | None
    positive_above: bool | None
    fpr: float | None
    fnr: float | None
    n_positive: int
    n_negative: int
    method: str = (
        "plug-in maximum over thresholds of the (epsilon, delta) test region, "
        "rules with exactly one zero error rate skipped"
    )
    kind: str = KIND_ESTIMATE


def epsilon_estimate(
    scores_positive,
    scores_negative,
    *,
    delta: float,
    two_sided_threshold: bool = False,
    direction: str = "both",
) -> EpsilonEstimate:
    """Plug-in epsilon estimate (no confidence; see :class:`EpsilonEstimate`); ``direction``
    as in :func:`epsilon_lower_bound`."""
    delta = check_delta(delta)
    direction = check_direction(direction)
    positive = as_scores(scores_positive, "scores_positive")
    negative = as_scores(scores_negative, "scores_negative")
    best = EpsilonEstimate(
        epsilon=0.0,
        delta=delta,
        threshold=None,
        positive_above=None,
        fpr=None,
        fnr=None,
        n_positive=positive.size,
        n_negative=negative.size,
    )
    for sign in _orientations(two_sided_threshold):
        rules = _pareto_rules(_oriented(positive, sign), _oriented(negative, sign))
        fpr = rules.false_positives / rules.n_negative
        fnr = rules.false_negatives / rules.n_positive
        usable = (fpr > 0) == (fnr > 0)
        if not np.any(usable):
            continue
        eps = np.where(
            usable,
            np.asarray(epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=delta,
                                                direction=direction)),
            -1.0,
        )
        i = int(np.argmax(eps))
        if best.threshold is None or eps[i] > best.epsilon:
            best = dataclasses.replace(
                best,
                epsilon=float(eps[i]),
                threshold=float(sign * rules.thresholds[i]),
                positive_above=sign > 0,
                fpr=float(fpr[i]),
                fnr=float(fnr[i]),
            )
    return best


@dataclass(frozen=True)
class EpsilonCeiling:
    """Largest epsilon lower bound a design can produce (reached under perfect separation)."""

    epsilon: float
    n_positive: int
    n_negative: int
    delta: float
    confidence: float
    strategy: str
    method: str = "Clopper-Pearson epsilon lower bound at zero observed errors"
    kind: str = KIND_CEILING


def max_certifiable_epsilon(
    *,
    n_positive: int,
    n_negative: int,
    delta: float,
    alpha: float = 0.05,
    strategy: ThresholdStrategy | None = None,
    two_sided_threshold: bool = False,
    direction: str = "both",
) -> EpsilonCeiling:
    """The epsilon lower bound that perfectly separated scores would get.

    No data can do better, so an audit whose claim to refute exceeds this value is too small
    to tell. ``strategy=None`` gives the most optimistic design (one pre-registered threshold);
    pass the strategy actually used for its own ceiling. ``direction`` as in
    :func:`epsilon_lower_bound`.
    """
    delta = check_delta(delta)
    direction = check_direction(direction)
    alpha = check_alpha(alpha)
    n_positive = check_count(n_positive, "n_positive", minimum=1)
    n_negative = check_count(n_negative, "n_negative", minimum=1)
    n_orient = len(_orientations(two_sided_threshold))
    if strategy is None or isinstance(strategy, FixedThreshold):
        gamma_neg = gamma_pos = alpha / n_orient / 2
        name = "fixed-threshold"
    elif isinstance(strategy, BonferroniPareto):
        gamma_neg = alpha / n_orient / (2 * n_negative)
        gamma_pos = alpha / n_orient / (2 * n_positive)
        name = strategy.name
    elif isinstance(strategy, SampleSplit):
        n_positive -= _split_sizes(n_positive, strategy.selection_fraction, "positive")
        n_negative -= _split_sizes(n_negative, strategy.selection_fraction, "negative")
        gamma_neg = gamma_pos = alpha / 2
        name = strategy.name
    else:
        check_strategy(strategy)
        raise AssertionError("unreachable")
    eps = epsilon_from_error_rates(
        fpr=float(clopper_pearson_upper(0, n_negative, gamma_neg)),
        fnr=float(clopper_pearson_upper(0, n_positive, gamma_pos)),
        delta=delta,
        direction=direction,
    )
    return EpsilonCeiling(
        epsilon=eps,
        n_positive=n_positive,
        n_negative=n_negative,
        delta=delta,
        confidence=1.0 - alpha,
        strategy=name,
    )


