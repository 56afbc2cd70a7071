"""The NeurIPS 2023 machine-unlearning challenge's forget-quality metric."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from empirical.statistics.checks import (
    KIND_ESTIMATE,
    as_finite_array,
    check_count,
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
    n_models = check_count(n_models, "n_models", minimum=2)
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
    """Scores of at least 2 models (rows) on at least 1 forgotten example (columns)."""
    return as_finite_array(array, name, ndim=2, shape="[n_models, n_examples]", min_shape=(2, 1))


def neurips2023_forget_quality(unlearned_scores, retrained_scores) -> NeurIPS2023ForgetQuality:
    """Forget quality F from score matrices of shape [n_models, n_forget_examples].

    Scores are the organisers' logit-scaled confidences log(p_y / (1 - p_y)) (Carlini et al.
    2022, LiRA, Sec. 4.3), computed stably from logits. For each example the distribution with
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
    """Mean of non-empty accuracies in [0, 1] (one number or one per model)."""
    try:
        return float(as_finite_array(np.atleast_1d(values), name, low=0.0, high=1.0).mean())
    except ValueError as error:
        raise ValueError(f"{name} must be non-empty accuracies in [0, 1] ({error})") from None


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
