"""Statistics core for empirical unlearning audits (numpy/scipy only, no torch).

Inputs are plain score arrays (one score per trained model, for one audited example or
statistic) or confusion counts, so scores can come from any framework. Two samples are
compared: ``scores_positive`` from the runs the attack should flag (for unlearning audits,
"learned then unlearned") and ``scores_negative`` from the runs it should not ("retrained
without the example"). A threshold test says "positive" when ``score >= threshold`` (or, for
the reversed orientation, ``score <= threshold``).

Every result is a frozen dataclass whose ``kind`` says what the number is:

* ``"lower bound"``: holds with probability at least ``confidence`` over the trials,
  whatever the (unknown) distributions are;
* ``"estimate"``: a plug-in number with no coverage guarantee;
* ``"confidence interval"``: an interval for a binomial proportion;
* ``"ceiling"``: the largest lower bound a design can ever produce.

Public API
----------
``epsilon_from_error_rates(*, fpr, fnr, delta)``
    epsilon implied by one test's error rates (Kairouz, Oh, Viswanath 2015, Thm 2.1).
``clopper_pearson(*, successes, trials, confidence, sided)``
    exact binomial interval.
``BonferroniPareto``, ``SampleSplit``, ``FixedThreshold``
    threshold-selection strategies.
``epsilon_lower_bound(scores_positive, scores_negative, *, delta, alpha, strategy, ...)``
``epsilon_lower_bound_from_counts(*, false_positives, n_negative, false_negatives, ...)``
    Clopper-Pearson epsilon lower bounds (Nasr et al. 2021, Sec. 3).
``epsilon_estimate(scores_positive, scores_negative, *, delta, ...)``
    plug-in epsilon (an estimate).
``gdp_mu_lower_bound(...)`` and ``epsilon_from_gdp(bound, *, delta, mechanism_is_gaussian)``
    Gaussian-DP mu lower bound (Nasr et al. 2023) and its epsilon for Gaussian mechanisms.
``gaussian_delta(*, mu, epsilon)``
    exact hockey-stick divergence between N(mu, 1) and N(0, 1) (Dong, Roth, Su 2019, Cor 2.13).
``roc_curve(...)``, ``tpr_at_fpr(...)``
    attack ROC, AUC and TPR at a fixed FPR (estimates).
``max_certifiable_epsilon(*, n_positive, n_negative, delta, alpha, ...)``
    the ceiling attained by perfect separation, to tell when N is too small.
``neurips2023_forget_quality(...)``, ``neurips2023_final_score(...)``,
``neurips2023_bin_points(...)``
    the NeurIPS 2023 machine-unlearning challenge metric (estimates).

Simultaneous validity of ``BonferroniPareto``
---------------------------------------------
For a test with ``c`` negatives at or above the threshold, the true FPR is at most
``1 - F(Y_[c+1])`` where ``Y_[c+1]`` is the (c+1)-th largest negative score, and that quantity
is stochastically smaller than Beta(c+1, n-c), whose upper quantile is the Clopper-Pearson
bound for count ``c`` (the same holds for FNR with positives). One event per count therefore
covers every threshold, including thresholds chosen after looking at the data. The union bound
is taken over these ``n_negative + n_positive`` count events, not over the size of the Pareto
frontier: the frontier is itself random, so dividing alpha by its size would make the level
data-dependent. The frontier is still used, to skip dominated thresholds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import optimize, special, stats

KIND_LOWER_BOUND = "lower bound"
KIND_ESTIMATE = "estimate"
KIND_INTERVAL = "confidence interval"
KIND_CEILING = "ceiling"

__all__ = [
    "BonferroniPareto",
    "EpsilonCeiling",
    "EpsilonEstimate",
    "EpsilonLowerBound",
    "FixedThreshold",
    "GdpMuLowerBound",
    "NeurIPS2023ForgetQuality",
    "NeurIPS2023Score",
    "ProportionInterval",
    "RocCurve",
    "SampleSplit",
    "TprAtFpr",
    "clopper_pearson",
    "epsilon_estimate",
    "epsilon_from_error_rates",
    "epsilon_from_gdp",
    "epsilon_lower_bound",
    "epsilon_lower_bound_from_counts",
    "gaussian_delta",
    "gdp_mu_lower_bound",
    "max_certifiable_epsilon",
    "neurips2023_bin_points",
    "neurips2023_final_score",
    "neurips2023_forget_quality",
    "roc_curve",
    "tpr_at_fpr",
]


# ----------------------------------------------------------------------------------------------
# Input validation.


def _check_probability(value: float, name: str, *, open_low: bool, open_high: bool) -> float:
    value = float(value)
    low_ok = value > 0.0 if open_low else value >= 0.0
    high_ok = value < 1.0 if open_high else value <= 1.0
    if not (math.isfinite(value) and low_ok and high_ok):
        lo, hi = ("(" if open_low else "["), (")" if open_high else "]")
        raise ValueError(f"{name} must lie in {lo}0, 1{hi}, got {value!r}")
    return value


def _check_alpha(alpha: float) -> float:
    return _check_probability(alpha, "alpha", open_low=True, open_high=True)


def _check_delta(delta: float) -> float:
    return _check_probability(delta, "delta", open_low=False, open_high=True)


def _as_scores(scores, name: str) -> np.ndarray:
    array = np.asarray(scores, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def _check_count(value, name: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not float(value).is_integer():
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


# ----------------------------------------------------------------------------------------------
# epsilon from one test.


def _log_ratio_term(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """log(numerator / denominator) with the conventions needed by the privacy region.

    A non-positive numerator puts no constraint on epsilon (-inf, later clamped to 0); a zero
    denominator with a positive numerator means no finite epsilon is consistent (+inf).
    """
    out = np.full(np.broadcast(numerator, denominator).shape, -np.inf)
    numerator, denominator = np.broadcast_arrays(numerator, denominator)
    positive = numerator > 0
    zero_den = positive & (denominator <= 0)
    regular = positive & (denominator > 0)
    out[zero_den] = np.inf
    out[regular] = np.log(numerator[regular]) - np.log(denominator[regular])
    return out


def epsilon_from_error_rates(*, fpr, fnr, delta: float):
    """Smallest epsilon consistent with a test of error rates (fpr, fnr) at this delta.

    (epsilon, delta)-indistinguishability (both directions, as in the unlearning definitions of
    the seed papers) forces FPR + e^eps FNR >= 1 - delta and FNR + e^eps FPR >= 1 - delta
    (Kairouz, Oh, Viswanath 2015, Thm 2.1), hence
    eps >= max(0, log((1 - delta - FPR) / FNR), log((1 - delta - FNR) / FPR)).

    Returns a float for scalar input, an array otherwise. Never NaN: a term whose numerator is
    not positive contributes 0; a zero rate facing a positive numerator gives +inf (exact: no
    finite epsilon explains a perfect test). Clopper-Pearson upper bounds are never 0, so the
    lower bounds built on this function are always finite.
    """
    delta = _check_delta(delta)
    fpr_a = np.asarray(fpr, dtype=np.float64)
    fnr_a = np.asarray(fnr, dtype=np.float64)
    for name, arr in (("fpr", fpr_a), ("fnr", fnr_a)):
        if not np.all((arr >= 0.0) & (arr <= 1.0)):
            raise ValueError(f"{name} must lie in [0, 1]")
    first = _log_ratio_term(1.0 - delta - fpr_a, fnr_a)
    second = _log_ratio_term(1.0 - delta - fnr_a, fpr_a)
    eps = np.maximum(0.0, np.maximum(first, second))
    return float(eps) if eps.ndim == 0 else eps


# ----------------------------------------------------------------------------------------------
# Clopper-Pearson.


def _cp_upper(k, n, gamma) -> np.ndarray:
    """One-sided upper Clopper-Pearson bound at level gamma (P[p > bound] <= gamma)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    full = k >= n
    # beta.isf keeps precision for tiny gamma where 1 - gamma would round to 1.
    bound = stats.beta.isf(gamma, k + 1.0, np.where(full, 1.0, n - k))
    return np.where(full, 1.0, bound)


def _cp_lower(k, n, gamma) -> np.ndarray:
    """One-sided lower Clopper-Pearson bound at level gamma (P[p < bound] <= gamma)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    empty = k <= 0
    bound = stats.beta.ppf(gamma, np.where(empty, 1.0, k), n - k + 1.0)
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
    trials = _check_count(trials, "trials", minimum=1)
    successes = _check_count(successes, "successes")
    if successes > trials:
        raise ValueError(f"successes ({successes}) exceeds trials ({trials})")
    confidence = _check_probability(confidence, "confidence", open_low=True, open_high=True)
    miss = 1.0 - confidence
    if sided == "two-sided":
        lower = float(_cp_lower(successes, trials, miss / 2))
        upper = float(_cp_upper(successes, trials, miss / 2))
    elif sided == "upper":
        lower, upper = 0.0, float(_cp_upper(successes, trials, miss))
    elif sided == "lower":
        lower, upper = float(_cp_lower(successes, trials, miss)), 1.0
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
    """Choose the threshold on a random part of each sample, certify it on the rest.

    ``selection_fraction`` of each sample (rounded) picks the rule; the held-out part, which
    the choice never saw, certifies it at the full level alpha. The chosen rule may depend on
    delta, so unlike the other strategies the bound need not be monotone in delta.
    """

    selection_fraction: float = 0.5
    seed: int = 0
    name = "sample-split"

    def __post_init__(self) -> None:
        _check_probability(
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
    thresholds = np.unique(np.concatenate([pos, neg]))
    fn = np.searchsorted(pos, thresholds, side="left")
    fp = neg.size - np.searchsorted(neg, thresholds, side="left")
    # Moving the threshold up only trades FP for FN; a step that changes one count but not the
    # other is dominated by its neighbour.
    keep = np.ones(thresholds.size, dtype=bool)
    keep[1:] &= fp[1:] < fp[:-1]
    keep[:-1] &= fn[1:] > fn[:-1]
    return _Rules(thresholds[keep], fp[keep], fn[keep], pos.size, neg.size)


def _counts_at(positive: np.ndarray, negative: np.ndarray, threshold: float) -> tuple[int, int]:
    """(FP, FN) of the rule ``score >= threshold``."""
    return int(np.sum(negative >= threshold)), int(np.sum(positive < threshold))


def _orientations(two_sided_threshold: bool) -> tuple[float, ...]:
    # +1: score >= t says positive; -1: score <= t says positive (run as -score >= -t).
    return (1.0, -1.0) if two_sided_threshold else (1.0,)


@dataclass(frozen=True)
class _Choice:
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


def _select(
    positive: np.ndarray,
    negative: np.ndarray,
    *,
    alpha: float,
    strategy: ThresholdStrategy,
    two_sided_threshold: bool,
    functional: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> _Choice:
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
        pos, neg = sign * positive, sign * negative
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
        fpr_hi = _cp_upper(rules.false_positives, rules.n_negative, gamma_neg)
        fnr_hi = _cp_upper(rules.false_negatives, rules.n_positive, gamma_pos)
        values = functional(fpr_hi, fnr_hi)
        i = int(np.argmax(values))
        choices.append(
            _Choice(
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
) -> _Choice:
    rng = np.random.default_rng(strategy.seed)
    k_pos = _split_sizes(positive.size, strategy.selection_fraction, "positive")
    k_neg = _split_sizes(negative.size, strategy.selection_fraction, "negative")
    pos = rng.permutation(positive)
    neg = rng.permutation(negative)
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
            _cp_upper(rules.false_positives, rules.n_negative, alpha / 2),
            _cp_upper(rules.false_negatives, rules.n_positive, alpha / 2),
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
    fpr_hi = float(_cp_upper(fp, neg_cert.size, alpha / 2))
    fnr_hi = float(_cp_upper(fn, pos_cert.size, alpha / 2))
    value = float(functional(np.array([fpr_hi]), np.array([fnr_hi]))[0])
    return _Choice(
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


@dataclass(frozen=True)
class EpsilonLowerBound:
    """epsilon lower bound at ``delta``, valid with probability >= ``confidence``.

    ``threshold`` and ``positive_above`` describe the certified rule (``score >= threshold``
    says positive when ``positive_above``, ``score <= threshold`` otherwise); counts and sizes
    are those of the sample that certified it (the held-out part for ``SampleSplit``).
    """

    epsilon: float
    delta: float
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


def _check_strategy(strategy) -> ThresholdStrategy:
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
) -> EpsilonLowerBound:
    """Clopper-Pearson epsilon lower bound from attack scores (Nasr et al. 2021, Sec. 3).

    Upper Clopper-Pearson bounds on FPR and FNR (a union bound over both rates and over the
    rules the strategy may pick) are plugged into :func:`epsilon_from_error_rates`, which is
    non-increasing in both rates. With probability >= 1 - alpha the result is at or below the
    epsilon of any (epsilon, delta) guarantee the two score distributions satisfy.

    ``strategy`` defaults to :class:`BonferroniPareto`. ``two_sided_threshold=True`` also tries
    rules ``score <= t`` (for attacks whose orientation is unknown), splitting alpha between
    the two orientations except under :class:`SampleSplit`, whose selection is free.
    """
    delta = _check_delta(delta)
    alpha = _check_alpha(alpha)
    strategy = _check_strategy(BonferroniPareto() if strategy is None else strategy)
    positive = _as_scores(scores_positive, "scores_positive")
    negative = _as_scores(scores_negative, "scores_negative")

    def functional(fpr_hi, fnr_hi):
        return np.asarray(epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta))

    choice = _select(
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
        threshold=choice.threshold,
        positive_above=choice.positive_above,
        fpr_upper=choice.fpr_upper,
        fnr_upper=choice.fnr_upper,
        false_positives=choice.false_positives,
        false_negatives=choice.false_negatives,
        n_positive=choice.n_positive,
        n_negative=choice.n_negative,
        strategy=strategy.name,
        n_rules_considered=choice.n_rules,
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
) -> EpsilonLowerBound:
    """epsilon lower bound from the confusion counts of one test fixed in advance.

    The test must not have been chosen using these counts; alpha is split evenly between the
    FPR and FNR bounds.
    """
    delta = _check_delta(delta)
    alpha = _check_alpha(alpha)
    n_negative = _check_count(n_negative, "n_negative", minimum=1)
    n_positive = _check_count(n_positive, "n_positive", minimum=1)
    false_positives = _check_count(false_positives, "false_positives")
    false_negatives = _check_count(false_negatives, "false_negatives")
    if false_positives > n_negative:
        raise ValueError(f"false_positives ({false_positives}) exceeds n_negative ({n_negative})")
    if false_negatives > n_positive:
        raise ValueError(f"false_negatives ({false_negatives}) exceeds n_positive ({n_positive})")
    fpr_hi = float(_cp_upper(false_positives, n_negative, alpha / 2))
    fnr_hi = float(_cp_upper(false_negatives, n_positive, alpha / 2))
    return EpsilonLowerBound(
        epsilon=epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta),
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
) -> EpsilonEstimate:
    """Plug-in epsilon estimate (no confidence; see :class:`EpsilonEstimate`)."""
    delta = _check_delta(delta)
    positive = _as_scores(scores_positive, "scores_positive")
    negative = _as_scores(scores_negative, "scores_negative")
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
        rules = _pareto_rules(sign * positive, sign * negative)
        fpr = rules.false_positives / rules.n_negative
        fnr = rules.false_negatives / rules.n_positive
        usable = (fpr > 0) == (fnr > 0)
        if not np.any(usable):
            continue
        eps = np.where(
            usable, np.asarray(epsilon_from_error_rates(fpr=fpr, fnr=fnr, delta=delta)), -1.0
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
) -> EpsilonCeiling:
    """The epsilon lower bound that perfectly separated scores would get.

    No data can do better, so an audit whose claim to refute exceeds this value is too small
    to tell. ``strategy=None`` gives the most optimistic design (one pre-registered threshold);
    pass the strategy actually used for its own ceiling.
    """
    delta = _check_delta(delta)
    alpha = _check_alpha(alpha)
    n_positive = _check_count(n_positive, "n_positive", minimum=1)
    n_negative = _check_count(n_negative, "n_negative", minimum=1)
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
        _check_strategy(strategy)
        raise AssertionError("unreachable")
    eps = epsilon_from_error_rates(
        fpr=float(_cp_upper(0, n_negative, gamma_neg)),
        fnr=float(_cp_upper(0, n_positive, gamma_pos)),
        delta=delta,
    )
    return EpsilonCeiling(
        epsilon=eps,
        n_positive=n_positive,
        n_negative=n_negative,
        delta=delta,
        confidence=1.0 - alpha,
        strategy=name,
    )


# ----------------------------------------------------------------------------------------------
# Gaussian differential privacy.


def gaussian_delta(*, mu: float, epsilon: float) -> float:
    """Exact hockey-stick divergence E_Q[(dP/dQ - e^eps)_+] for P = N(mu, 1), Q = N(0, 1).

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Balle and Wang 2018, Thm 8;
    Dong, Roth, Su 2019, Cor 2.13); it is the privacy profile of every mu-GDP mechanism whose
    trade-off curve is exactly Gaussian. Evaluated in log space so large eps does not overflow.
    """
    mu = float(mu)
    epsilon = float(epsilon)
    if not (math.isfinite(mu) and mu >= 0):
        raise ValueError(f"mu must be finite and non-negative, got {mu!r}")
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and non-negative, got {epsilon!r}")
    if mu == 0.0:
        return 0.0
    log_a = special.log_ndtr(-epsilon / mu + mu / 2)
    log_b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if log_b >= log_a:
        return 0.0
    return float(math.exp(log_a) * -math.expm1(log_b - log_a))


def _gaussian_epsilon(*, mu: float, delta: float) -> float:
    """Smallest eps with gaussian_delta(mu, eps) <= delta (0 < delta < 1)."""
    if mu <= 0.0 or gaussian_delta(mu=mu, epsilon=0.0) <= delta:
        return 0.0
    # delta(eps) <= Phi(-eps/mu + mu/2) < delta at this bracket end.
    upper = mu * (mu / 2 + float(stats.norm.isf(delta))) + 1.0
    log_delta = math.log(delta)

    def excess(eps: float) -> float:
        value = gaussian_delta(mu=mu, epsilon=eps)
        return (math.log(value) if value > 0 else -np.inf) - log_delta

    return float(optimize.brentq(excess, 0.0, upper, xtol=1e-12, rtol=1e-12))


@dataclass(frozen=True)
class GdpMuLowerBound:
    """Lower bound on the Gaussian-DP parameter mu, valid with probability >= ``confidence``.

    Valid for any pair of distributions: if they are mu*-GDP then mu* >= ``mu``.
    """

    mu: float
    confidence: float
    threshold: float
    positive_above: bool
    fpr_upper: float
    fnr_upper: float
    false_positives: int
    false_negatives: int
    n_positive: int
    n_negative: int
    strategy: str
    n_rules_considered: int
    method: str = "Clopper-Pearson FPR/FNR into mu >= Phi^-1(1 - FPR) - Phi^-1(FNR)"
    kind: str = KIND_LOWER_BOUND


def gdp_mu_lower_bound(
    scores_positive,
    scores_negative,
    *,
    alpha: float = 0.05,
    strategy: ThresholdStrategy | None = None,
    two_sided_threshold: bool = False,
) -> GdpMuLowerBound:
    """Gaussian-DP mu lower bound (Nasr et al. 2023; Dong, Roth, Su 2019, Eq. 6).

    mu-GDP means FNR >= Phi(Phi^-1(1 - FPR) - mu) for every test, so
    mu >= Phi^-1(1 - FPR) - Phi^-1(FNR), non-increasing in both rates; Clopper-Pearson upper
    bounds on the rates and the same strategies as :func:`epsilon_lower_bound` apply. Clamped
    at 0, so null data give 0 (cf. the sign bug fixed in jax_privacy PR #270).
    """
    alpha = _check_alpha(alpha)
    strategy = _check_strategy(BonferroniPareto() if strategy is None else strategy)
    positive = _as_scores(scores_positive, "scores_positive")
    negative = _as_scores(scores_negative, "scores_negative")

    def functional(fpr_hi, fnr_hi):
        return np.maximum(0.0, stats.norm.isf(fpr_hi) - stats.norm.ppf(fnr_hi))

    choice = _select(
        positive,
        negative,
        alpha=alpha,
        strategy=strategy,
        two_sided_threshold=two_sided_threshold,
        functional=functional,
    )
    return GdpMuLowerBound(
        mu=choice.value,
        confidence=1.0 - alpha,
        threshold=choice.threshold,
        positive_above=choice.positive_above,
        fpr_upper=choice.fpr_upper,
        fnr_upper=choice.fnr_upper,
        false_positives=choice.false_positives,
        false_negatives=choice.false_negatives,
        n_positive=choice.n_positive,
        n_negative=choice.n_negative,
        strategy=strategy.name,
        n_rules_considered=choice.n_rules,
    )


def epsilon_from_gdp(
    bound: GdpMuLowerBound,
    *,
    delta: float,
    mechanism_is_gaussian: bool = False,
) -> EpsilonLowerBound:
    """epsilon lower bound from a mu lower bound, for mechanisms declared Gaussian.

    If the audited mechanism's trade-off curve is exactly Gaussian (Gaussian noise added to a
    deterministic quantity, e.g. noisy-Newton or Langevin unlearning at a fixed point), its
    privacy profile is :func:`gaussian_delta` at its true mu; delta(eps) grows with mu, so the
    eps solving gaussian_delta(mu_lower, eps) = delta is a valid lower bound. For any other
    mechanism it is an extrapolation, so this function refuses unless the caller sets
    ``mechanism_is_gaussian=True``.
    """
    if mechanism_is_gaussian is not True:
        raise ValueError(
            "epsilon_from_gdp converts mu to epsilon through the Gaussian trade-off curve, which "
            "is a lower bound only for Gaussian mechanisms; pass mechanism_is_gaussian=True if "
            "the audited mechanism is one, otherwise report the mu bound itself"
        )
    if not isinstance(bound, GdpMuLowerBound):
        raise ValueError(f"bound must be a GdpMuLowerBound, got {type(bound).__name__}")
    delta = _check_probability(delta, "delta", open_low=True, open_high=True)
    return EpsilonLowerBound(
        epsilon=_gaussian_epsilon(mu=bound.mu, delta=delta),
        delta=delta,
        confidence=bound.confidence,
        threshold=bound.threshold,
        positive_above=bound.positive_above,
        fpr_upper=bound.fpr_upper,
        fnr_upper=bound.fnr_upper,
        false_positives=bound.false_positives,
        false_negatives=bound.false_negatives,
        n_positive=bound.n_positive,
        n_negative=bound.n_negative,
        strategy=bound.strategy,
        n_rules_considered=bound.n_rules_considered,
        method="GDP mu lower bound through the Gaussian privacy profile (Gaussian mechanism)",
    )


# ----------------------------------------------------------------------------------------------
# ROC, AUC, TPR at fixed FPR.


@dataclass(frozen=True)
class RocCurve:
    """Empirical ROC of the rules ``score >= threshold`` (thresholds descending).

    The first point is (0, 0) at threshold +inf. ``auc`` is the Mann-Whitney statistic
    P(X > Y) + P(X = Y) / 2, equal to the trapezoidal area under these points.
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float
    n_positive: int
    n_negative: int
    method: str = "empirical ROC; AUC by Mann-Whitney with ties counted 1/2"
    kind: str = KIND_ESTIMATE


def roc_curve(scores_positive, scores_negative) -> RocCurve:
    """Empirical ROC curve and AUC of a score (higher score = more positive)."""
    positive = _as_scores(scores_positive, "scores_positive")
    negative = _as_scores(scores_negative, "scores_negative")
    pos = np.sort(positive)
    neg = np.sort(negative)
    thresholds = np.unique(np.concatenate([pos, neg]))[::-1]
    tp = pos.size - np.searchsorted(pos, thresholds, side="left")
    fp = neg.size - np.searchsorted(neg, thresholds, side="left")
    ranks = stats.rankdata(np.concatenate([positive, negative]))
    u_stat = ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2
    fpr = np.concatenate([[0.0], fp / neg.size])
    tpr = np.concatenate([[0.0], tp / pos.size])
    thr = np.concatenate([[np.inf], thresholds])
    for arr in (fpr, tpr, thr):
        arr.setflags(write=False)
    return RocCurve(
        fpr=fpr,
        tpr=tpr,
        thresholds=thr,
        auc=float(u_stat / (pos.size * neg.size)),
        n_positive=pos.size,
        n_negative=neg.size,
    )


@dataclass(frozen=True)
class TprAtFpr:
    """Largest empirical TPR among thresholds whose empirical FPR is at most ``target_fpr``."""

    tpr: float
    target_fpr: float
    achieved_fpr: float
    threshold: float
    method: str = "largest empirical TPR with empirical FPR <= target (no interpolation)"
    kind: str = KIND_ESTIMATE


def tpr_at_fpr(scores_positive, scores_negative, *, fpr: float) -> TprAtFpr:
    """TPR at a fixed FPR, as LiRA reports it (Carlini et al. 2022, Sec. 4)."""
    target = _check_probability(fpr, "fpr", open_low=False, open_high=False)
    roc = roc_curve(scores_positive, scores_negative)
    ok = np.flatnonzero(roc.fpr <= target)
    i = int(ok[np.argmax(roc.tpr[ok])])
    return TprAtFpr(
        tpr=float(roc.tpr[i]),
        target_fpr=target,
        achieved_fpr=float(roc.fpr[i]),
        threshold=float(roc.thresholds[i]),
    )


# ----------------------------------------------------------------------------------------------
# NeurIPS 2023 machine-unlearning challenge metric.
#
# Reimplemented from the organisers' definition (white paper "Machine_Unlearning_Metric.pdf",
# Aug 2023, and google-deepmind/unlearning_evaluation metric.py @ ffae0ff), including their
# float32 rates and their torch.linspace float32 grid for the single-threshold rule, so that
# per-example epsilons agree with theirs. Their code asserts that at least one rule survives the
# filtering; we raise ValueError in that case.

_NEURIPS_DELTA = 1e-5
_NEURIPS_EPSILON_CAP = 50.0
_NEURIPS_THRESHOLDS_PER_UNIT = 100
_NEURIPS_BUFFER = 2.0
_NEURIPS_BIN_WIDTH = 0.5


def _torch_style_linspace_f32(start: float, end: float, steps: int) -> np.ndarray:
    """torch.linspace(start, end, steps) as the organisers got it: float32, CUDA kernel.

    The kernel computes start + step * i below the halfway index and end - step * (steps-1-i)
    above it; products are exact in float64 and one rounding to float32 mimics the fused
    multiply-add, so values match to within one float32 ulp.
    """
    if steps <= 0:
        return np.empty(0, dtype=np.float32)
    start32, end32 = np.float32(start), np.float32(end)
    if steps == 1:
        return np.array([start32], dtype=np.float32)
    step = np.float64((end32 - start32) / np.float32(steps - 1))
    idx = np.arange(steps, dtype=np.float64)
    head = np.float64(start32) + step * idx
    tail = np.float64(end32) - step * (steps - 1 - idx)
    return np.where(idx < steps // 2, head, tail).astype(np.float32)


def _count_at_least(sorted_scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    return sorted_scores.size - np.searchsorted(sorted_scores, thresholds, side="left")


def _count_in_interval(sorted_scores: np.ndarray, left: np.ndarray, right: np.ndarray):
    inside = np.searchsorted(sorted_scores, right, side="right") - np.searchsorted(
        sorted_scores, left, side="left"
    )
    return np.maximum(inside, 0)


def _neurips_rule_counts(pos: np.ndarray, neg: np.ndarray):
    """(positive hits, negative hits, n_pos, n_neg) for every single and double threshold rule."""
    # Double thresholds: "positive" is the distribution with the smaller range; an interval of
    # width within +-buffer of that range says positive.
    pos_diff = pos.max() - pos.min()
    neg_diff = neg.max() - neg.min()
    width = neg_diff if pos_diff > neg_diff else pos_diff
    peaky, other = (neg, pos) if pos_diff >= neg_diff else (pos, neg)
    low = peaky.min() + width - _NEURIPS_BUFFER
    high = peaky.max() + _NEURIPS_BUFFER
    n_right = int(np.ceil((high - low) * _NEURIPS_THRESHOLDS_PER_UNIT))
    right_edges = np.linspace(low, high, num=n_right)
    n_left = int(np.ceil(2 * _NEURIPS_BUFFER * _NEURIPS_THRESHOLDS_PER_UNIT))
    # Same arithmetic as the organisers' linspace(tr - width - b, tr - width + b) per edge tr.
    left = np.linspace(
        right_edges - width - _NEURIPS_BUFFER,
        right_edges - width + _NEURIPS_BUFFER,
        num=n_left,
        axis=-1,
    ).reshape(-1)
    right = np.repeat(right_edges, n_left)
    peaky_sorted, other_sorted = np.sort(peaky), np.sort(other)
    double_pos = _count_in_interval(peaky_sorted, left, right)
    double_neg = _count_in_interval(other_sorted, left, right)

    # Single threshold: "score >= t" says positive, on a float32 grid over the pooled range.
    pooled = np.concatenate([pos, neg])
    n_single = int(np.ceil((pooled.max() - pooled.min()) * _NEURIPS_THRESHOLDS_PER_UNIT))
    grid = _torch_style_linspace_f32(pooled.min(), pooled.max(), n_single).astype(np.float64)
    single_pos = _count_at_least(np.sort(pos), grid)
    single_neg = _count_at_least(np.sort(neg), grid)
    return (
        (double_pos, double_neg, peaky.size, other.size),
        (single_pos, single_neg, pos.size, neg.size),
    )


def _neurips_example_epsilon(pos: np.ndarray, neg: np.ndarray, example: int) -> float:
    pos_diff = pos.max() - pos.min()
    neg_diff = neg.max() - neg.min()
    largest = max(pos_diff, neg_diff)
    smallest = min(pos_diff, neg_diff)
    # One distribution much peakier than the other: the organisers assign the cap directly.
    # (0/0 is NaN in their code and does not trigger the cap.)
    if largest > 0 and smallest / largest < 0.01:
        return _NEURIPS_EPSILON_CAP
    eps_all = []
    for hits_pos, hits_neg, n_pos, n_neg in _neurips_rule_counts(pos, neg):
        n_pos32, n_neg32 = np.float32(n_pos), np.float32(n_neg)
        tpr = hits_pos.astype(np.float32) / n_pos32
        fnr = (n_pos - hits_pos).astype(np.float32) / n_pos32
        fpr = hits_neg.astype(np.float32) / n_neg32
        tnr = (n_neg - hits_neg).astype(np.float32) / n_neg32
        perfect = (fpr + fnr == 0) & (tpr + tnr == 2)
        one_zero = ~perfect & (fpr * fnr == 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            one_minus_delta = np.float32(1 - _NEURIPS_DELTA)
            first = np.log(one_minus_delta - fpr) - np.log(fnr)
            second = np.log(one_minus_delta - fnr) - np.log(fpr)
        eps = np.fmax(first, second)
        eps = np.where(np.isnan(eps), np.nan, np.maximum(eps, np.float32(0)))
        eps = np.where(perfect, np.float32(np.inf), eps)
        eps = np.where(one_zero, np.nan, eps)
        eps_all.append(eps[~np.isnan(eps)])
    kept = np.concatenate(eps_all)
    if kept.size == 0:
        raise ValueError(
            f"NeurIPS 2023 metric: every decision rule was discarded for example {example} "
            "(each had exactly one zero error rate); the organisers' code fails here too"
        )
    return float(min(kept.max(), np.float32(_NEURIPS_EPSILON_CAP)))


def neurips2023_bin_points(*, epsilon, n_models: int) -> np.ndarray:
    """Points per example: 2 / 2^n for epsilon in bin n = 1, 2, ... of width 0.5.

    Bins are kept while their right end is at most ceil(log(n_models - 1)); larger epsilon
    scores 0 (14 bins, [0, 7), for the challenge's 512 models).
    """
    n_models = _check_count(n_models, "n_models", minimum=2)
    eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        raise ValueError("epsilon must be non-negative and not NaN")
    max_epsilon = math.ceil(math.log(n_models - 1)) if n_models > 2 else 0
    n_bins = int(math.floor(max_epsilon / _NEURIPS_BIN_WIDTH + 1e-9)) if max_epsilon > 0 else 0
    index = np.floor(eps / _NEURIPS_BIN_WIDTH)
    points = np.where(index < n_bins, 2.0 ** -np.minimum(index, 1074.0), 0.0)
    return points


@dataclass(frozen=True)
class NeurIPS2023ForgetQuality:
    """Forget quality of the NeurIPS 2023 unlearning challenge (a plug-in estimate).

    ``per_example_epsilon`` are the organisers' plug-in epsilons (delta = 1e-5, max over
    single- and double-threshold rules, capped at 50); ``forget_quality`` is the mean of the
    per-example bin points. No confidence is attached; the resolution is limited to about
    log(n_models).
    """

    forget_quality: float
    per_example_epsilon: np.ndarray
    per_example_points: np.ndarray
    n_models: int
    delta: float = _NEURIPS_DELTA
    method: str = "NeurIPS 2023 machine-unlearning challenge forget score (organisers' rules)"
    kind: str = KIND_ESTIMATE


def _as_score_matrix(array, name: str) -> np.ndarray:
    matrix = np.asarray(array, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must have shape [n_models, n_examples], got {matrix.shape}")
    if matrix.shape[0] < 2 or matrix.shape[1] < 1:
        raise ValueError(f"{name} needs at least 2 models and 1 example, got {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return matrix


def neurips2023_forget_quality(unlearned_scores, retrained_scores) -> NeurIPS2023ForgetQuality:
    """Forget quality F from score matrices of shape [n_models, n_forget_examples].

    Scores are the organisers' logit-scaled confidences (see
    :func:`empirical.attacks.logit_scaled_confidence`). For each example the distribution with
    the larger median is "positive"; the per-example epsilon is the plug-in maximum over the
    rules, then F = mean of :func:`neurips2023_bin_points`.
    """
    unlearned = _as_score_matrix(unlearned_scores, "unlearned_scores")
    retrained = _as_score_matrix(retrained_scores, "retrained_scores")
    if unlearned.shape != retrained.shape:
        raise ValueError(
            f"unlearned_scores {unlearned.shape} and retrained_scores {retrained.shape} "
            "must have the same shape"
        )
    retrain_is_positive = np.median(retrained, axis=0) > np.median(unlearned, axis=0)
    positive = np.where(retrain_is_positive, retrained, unlearned)
    negative = np.where(retrain_is_positive, unlearned, retrained)
    eps = np.array(
        [
            _neurips_example_epsilon(positive[:, j], negative[:, j], j)
            for j in range(positive.shape[1])
        ]
    )
    n_models = unlearned.shape[0]
    points = neurips2023_bin_points(epsilon=eps, n_models=n_models)
    for arr in (eps, points):
        arr.setflags(write=False)
    return NeurIPS2023ForgetQuality(
        forget_quality=float(points.mean()),
        per_example_epsilon=eps,
        per_example_points=points,
        n_models=n_models,
    )


@dataclass(frozen=True)
class NeurIPS2023Score:
    """Utility-adjusted challenge score F * (RA_U / RA_R) * (TA_U / TA_R) (an estimate)."""

    score: float
    forget_quality: float
    retain_accuracy_ratio: float
    test_accuracy_ratio: float
    method: str = "NeurIPS 2023 challenge final score: forget quality times accuracy ratios"
    kind: str = KIND_ESTIMATE
    details: NeurIPS2023ForgetQuality | None = field(default=None, repr=False)


def _mean_accuracy(values, name: str) -> float:
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any((arr < 0) | (arr > 1)):
        raise ValueError(f"{name} must be non-empty accuracies in [0, 1]")
    return float(arr.mean())


def neurips2023_final_score(
    forget_quality: NeurIPS2023ForgetQuality | float,
    *,
    unlearned_retain_accuracy,
    retrained_retain_accuracy,
    unlearned_test_accuracy,
    retrained_test_accuracy,
) -> NeurIPS2023Score:
    """Final challenge score; accuracies are per-model arrays (averaged) or their means."""
    details = forget_quality if isinstance(forget_quality, NeurIPS2023ForgetQuality) else None
    quality = details.forget_quality if details is not None else float(forget_quality)
    if not (0.0 <= quality <= 1.0):
        raise ValueError(f"forget_quality must lie in [0, 1], got {quality!r}")
    ra_u = _mean_accuracy(unlearned_retain_accuracy, "unlearned_retain_accuracy")
    ra_r = _mean_accuracy(retrained_retain_accuracy, "retrained_retain_accuracy")
    ta_u = _mean_accuracy(unlearned_test_accuracy, "unlearned_test_accuracy")
    ta_r = _mean_accuracy(retrained_test_accuracy, "retrained_test_accuracy")
    if ra_r == 0 or ta_r == 0:
        raise ValueError("retrained accuracies must be positive (they are denominators)")
    return NeurIPS2023Score(
        score=quality * (ra_u / ra_r) * (ta_u / ta_r),
        forget_quality=quality,
        retain_accuracy_ratio=ra_u / ra_r,
        test_accuracy_ratio=ta_u / ta_r,
        details=details,
    )
