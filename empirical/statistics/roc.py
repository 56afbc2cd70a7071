"""ROC curves, AUC and TPR at a fixed FPR."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from empirical.statistics.checks import (
    KIND_ESTIMATE,
    as_scores,
    check_probability,
)

# ----------------------------------------------------------------------------------------------
# ROC, AUC, TPR at fixed FPR.

# Scores or thresholds roc_curve handles at a time in its copies and counts (64 KiB of each).
_COUNT_BLOCK = 8192


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
    positive = as_scores(scores_positive, "scores_positive")
    negative = as_scores(scores_negative, "scores_negative")
    pos = np.sort(positive)
    neg = np.sort(negative)
    # One sort of the pooled scores serves the thresholds (np.unique's sort and mask, written
    # straight into thr) and the ranks, and every array is freed or filled in place as soon as
    # it can be: an audit's 10^5 scores then never need more than five arrays of their size.
    pooled = np.concatenate([pos, neg])
    pooled.sort()
    distinct = np.empty(pooled.size, dtype=bool)
    distinct[0] = True
    np.not_equal(pooled[1:], pooled[:-1], out=distinct[1:])
    # thr starts with +inf (the point (0, 0)), then the distinct scores descending.
    thr = np.empty(int(np.count_nonzero(distinct)) + 1)
    thr[0] = np.inf
    # block by block from the top down (np.compress into the reversed view of thr would take
    # two temporary copies of the pooled size)
    end = thr.size
    for start in range(0, pooled.size, _COUNT_BLOCK):
        block = pooled[start:start + _COUNT_BLOCK][distinct[start:start + _COUNT_BLOCK]]
        thr[end - block.size:end] = block[::-1]
        end -= block.size
    del distinct
    # Mid-ranks of the positives in the pooled sample (ties share their mean rank, as
    # scipy.stats.rankdata gives them): 1 + (below + below-or-equal - 1) / 2, exact in float.
    below = np.searchsorted(pooled, positive, side="left")
    below += np.searchsorted(pooled, positive, side="right")
    below += 1
    u_stat = (0.5 * below).sum() - pos.size * (pos.size + 1) / 2
    del below, pooled
    fpr, tpr = np.empty(thr.size), np.empty(thr.size)
    for rate, sample in ((tpr, pos), (fpr, neg)):
        rate[0] = 0.0
        # in blocks of thresholds, so that the counts never take a sixth array of that size
        for start in range(1, thr.size, _COUNT_BLOCK):
            stop = min(start + _COUNT_BLOCK, thr.size)
            above = np.searchsorted(sample, thr[start:stop], side="left")
            np.subtract(sample.size, above, out=above)
            np.divide(above, sample.size, out=rate[start:stop])
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
    target = check_probability(fpr, "fpr", open_low=False, open_high=False)
    roc = roc_curve(scores_positive, scores_negative)
    ok = np.flatnonzero(roc.fpr <= target)
    i = int(ok[np.argmax(roc.tpr[ok])])
    return TprAtFpr(
        tpr=float(roc.tpr[i]),
        target_fpr=target,
        achieved_fpr=float(roc.fpr[i]),
        threshold=float(roc.thresholds[i]),
    )


