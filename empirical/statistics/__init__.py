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
``epsilon_from_error_rates(*, fpr, fnr, delta, direction)``
    epsilon implied by one test's error rates (Kairouz, Oh, Viswanath 2015, Thm 2.1), from both
    inequalities of the (epsilon, delta) region or only the forward one (``PrivacyDirection``).
``clopper_pearson(*, successes, trials, confidence, sided)``
    exact binomial interval.
``BonferroniPareto``, ``SampleSplit``, ``FixedThreshold``
    threshold-selection strategies.
``epsilon_lower_bound(scores_positive, scores_negative, *, delta, alpha, strategy, ...)``
``epsilon_lower_bound_from_counts(*, false_positives, n_negative, false_negatives, ...)``
    Clopper-Pearson epsilon lower bounds (Nasr et al. 2021, Sec. 3); every bound from a
    threshold test is a ``ThresholdTestBound`` (the rule, its counts and rate bounds).
``epsilon_estimate(scores_positive, scores_negative, *, delta, ...)``
    plug-in epsilon (an estimate).
``gdp_mu_lower_bound(...)`` and ``epsilon_from_gdp(bound, *, delta, epsilon_of_mu, ...)``
    Gaussian-DP mu lower bound (Nasr et al. 2023) and its epsilon for Gaussian mechanisms
    (the caller passes the privacy profile's inverse, e.g. from ``bounds.conversions``).
``gaussian_delta(*, mu, epsilon)``
    exact hockey-stick divergence between N(mu, 1) and N(0, 1) (Dong, Roth, Su 2019, Cor 2.13):
    the ground truth of Gaussian test beds, never used to state a bound.
``roc_curve(...)``, ``tpr_at_fpr(...)``
    attack ROC, AUC and TPR at a fixed FPR (estimates).
``pilot_window_epsilon_lower_bound(...)``
    the default statistic of the audits: a few rules placed on a pilot split, both score
    orientations and both inequalities of the region in one simultaneous event
    (:mod:`empirical.statistics.pilot_window`, validity proved there).
``pilot_epsilon_lower_bound(...)``, ``single_threshold_limit(...)``
    epsilon lower bound from one threshold chosen on a pilot split, and the best such a test
    can reach on Gaussian scores.
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

The package is split along its seams: :mod:`empirical.statistics.thresholds` (Clopper-Pearson,
threshold strategies, epsilon lower bounds, estimates and ceilings),
:mod:`empirical.statistics.gdp`, :mod:`empirical.statistics.roc`,
:mod:`empirical.statistics.neurips2023`, :mod:`empirical.statistics.pilot` (one threshold
chosen on a pilot split) and :mod:`empirical.statistics.pilot_window` (a few), over
:mod:`empirical.statistics.checks`; every name stays importable from ``empirical.statistics``.
"""

from __future__ import annotations

from empirical.statistics.checks import (
    KIND_CEILING,
    KIND_ESTIMATE,
    KIND_INTERVAL,
    KIND_LOWER_BOUND,
    PrivacyDirection,
    as_finite_array,
    epsilon_from_error_rates,
)
from empirical.statistics.gdp import (
    GdpMuLowerBound,
    epsilon_from_gdp,
    gaussian_delta,
    gdp_mu_lower_bound,
)
from empirical.statistics.neurips2023 import (
    NeurIPS2023ForgetQuality,
    NeurIPS2023Score,
    neurips2023_bin_points,
    neurips2023_final_score,
    neurips2023_forget_quality,
)
from empirical.statistics.pilot import (
    PilotEpsilonLowerBound,
    pilot_epsilon_lower_bound,
    single_threshold_limit,
)
from empirical.statistics.pilot_window import (
    PilotWindowEpsilonLowerBound,
    pilot_window_epsilon_lower_bound,
)
from empirical.statistics.roc import (
    RocCurve,
    TprAtFpr,
    roc_curve,
    tpr_at_fpr,
)
from empirical.statistics.thresholds import (
    BonferroniPareto,
    EpsilonCeiling,
    EpsilonEstimate,
    EpsilonLowerBound,
    FixedThreshold,
    ProportionInterval,
    SampleSplit,
    ThresholdTestBound,
    clopper_pearson,
    epsilon_estimate,
    epsilon_lower_bound,
    epsilon_lower_bound_from_counts,
    max_certifiable_epsilon,
)

__all__ = [
    "as_finite_array",
    "BonferroniPareto",
    "EpsilonCeiling",
    "EpsilonEstimate",
    "EpsilonLowerBound",
    "FixedThreshold",
    "GdpMuLowerBound",
    "KIND_CEILING",
    "KIND_ESTIMATE",
    "KIND_INTERVAL",
    "KIND_LOWER_BOUND",
    "NeurIPS2023ForgetQuality",
    "NeurIPS2023Score",
    "PilotEpsilonLowerBound",
    "PilotWindowEpsilonLowerBound",
    "PrivacyDirection",
    "ProportionInterval",
    "RocCurve",
    "SampleSplit",
    "ThresholdTestBound",
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
    "pilot_epsilon_lower_bound",
    "pilot_window_epsilon_lower_bound",
    "roc_curve",
    "single_threshold_limit",
    "tpr_at_fpr",
]
