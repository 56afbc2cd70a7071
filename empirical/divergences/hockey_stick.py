"""Hockey-stick lower-bound tester: a confidence bound on the hockey-stick divergence between two
samples of a statistic of the trained models (``samples_p`` from "learn then unlearn",
``samples_q`` from "retrain"; [n] or [n, d] arrays).

Why it is a bound. By the data-processing inequality no function of the model can increase the
hockey-stick divergence, so a region's probabilities measured on a statistic bound the
divergence between the models; the region is fitted on a training split and its probabilities
are bounded by Clopper-Pearson on the held-out split, so the result holds at the stated
confidence whatever the two laws are (kind "lower bound"). The estimators of
:mod:`empirical.divergences.estimators` are estimates of the same divergences, not bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from empirical.divergences.samples import check_epsilon, gaussian_fit, log_determinant, sample_pair
from empirical.statistics.checks import check_probability, paired_permutations
from empirical.statistics.thresholds import clopper_pearson_lower as cp_lower
from empirical.statistics.thresholds import clopper_pearson_upper as cp_upper

__all__ = ["HockeyStickLowerBound", "hockey_stick_lower_bound"]


def _check_level(level: float, name: str) -> float:
    return check_probability(level, name, open_low=True, open_high=True)


@dataclass(frozen=True)
class HockeyStickLowerBound:
    """Lower bound on the hockey-stick divergence at ``epsilon``, valid at ``confidence``.

    ``delta_p_q`` bounds sup_S P(S) - e^eps Q(S), ``delta_q_p`` the reverse, and ``delta`` their
    maximum, the quantity a symmetric (epsilon, delta) guarantee caps. All three hold together
    with probability >= ``confidence`` = 1 - beta. The regions are {T > threshold_p_q} and
    {T < threshold_q_p}, T being the log density ratio of Gaussians fitted on the training
    split; counts are held-out counts inside each region.
    """

    delta: float
    delta_p_q: float
    delta_q_p: float
    epsilon: float
    confidence: float
    threshold_p_q: float
    threshold_q_p: float
    held_out_p_in_region_p_q: int
    held_out_q_in_region_p_q: int
    held_out_p_in_region_q_p: int
    held_out_q_in_region_q_p: int
    n_train_p: int
    n_train_q: int
    n_test_p: int
    n_test_q: int
    method: str = (
        "Gaussian log-ratio region fitted on a training split; Clopper-Pearson on held-out "
        "samples, union bound over 4 one-sided bounds (2 directions)"
    )
    kind: str = "lower bound"


def _log_ratio_statistic(train_p: np.ndarray, train_q: np.ndarray):
    """x -> log N(x; fit of P) - log N(x; fit of Q), with a small ridge for stability."""
    fits = []
    for x in (train_p, train_q):
        mean, cov = gaussian_fit(x)
        ridge = 1e-9 * max(float(np.trace(cov)) / cov.shape[0], 1e-300)
        cov = cov + ridge * np.eye(cov.shape[0])
        logdet = log_determinant(cov)
        if logdet is None or not np.isfinite(logdet):
            raise ValueError("cannot fit a Gaussian to a training split (degenerate samples)")
        fits.append((mean, np.linalg.inv(cov), logdet))

    def statistic(x: np.ndarray) -> np.ndarray:
        out = np.zeros(x.shape[0])
        for sign, (mean, precision, logdet) in zip((1.0, -1.0), fits, strict=True):
            centred = x - mean
            out += sign * -0.5 * (np.einsum("ij,jk,ik->i", centred, precision, centred) + logdet)
        return out

    return statistic


def _best_upper_region(t_in: np.ndarray, t_out: np.ndarray, factor: float, gamma: float) -> float:
    """Threshold tau maximising CP_lower(#t_in > tau) - factor * CP_upper(#t_out > tau)."""
    candidates = np.unique(np.concatenate([t_in, t_out]))
    # {T > tau} for tau just below each candidate equals {T >= candidate}.
    s_in, s_out = np.sort(t_in), np.sort(t_out)
    k_in = t_in.size - np.searchsorted(s_in, candidates, side="left")
    k_out = t_out.size - np.searchsorted(s_out, candidates, side="left")
    score = cp_lower(k_in, t_in.size, gamma) - factor * cp_upper(k_out, t_out.size, gamma)
    i = int(np.argmax(score))
    below = candidates[i - 1] if i > 0 else candidates[i] - 1.0
    return float(0.5 * (below + candidates[i]))


def hockey_stick_lower_bound(
    samples_p,
    samples_q,
    *,
    epsilon: float,
    beta: float = 0.05,
    train_fraction: float = 0.5,
    seed: int = 0,
) -> HockeyStickLowerBound:
    """Lower-bound the hockey-stick divergence at ``epsilon`` in both directions.

    After the DP-Auditorium hockey-stick tester (Kong et al. 2024), with Clopper-Pearson
    instead of Hoeffding. Each sample is split at random; on the training part a Gaussian
    log-ratio statistic T and, for each direction, a threshold are chosen; on the held-out
    part, which those choices never saw, P(S) >= CP_lower and Q(S) <= CP_upper give
    delta >= CP_lower - e^eps CP_upper. Four one-sided bounds at beta / 4 each (union bound),
    so both directions hold together with probability >= 1 - beta, whatever P and Q are.
    An (epsilon, delta_claim) guarantee is refuted at level beta when ``delta`` > delta_claim.
    """
    p, q = sample_pair(samples_p, samples_q)
    epsilon = check_epsilon(epsilon)
    beta = _check_level(beta, "beta")
    train_fraction = _check_level(train_fraction, "train_fraction")
    rng = np.random.default_rng(seed)
    order_p, order_q = paired_permutations(rng, p.shape[0], q.shape[0])
    p, q = p[order_p], q[order_q]
    n_tp = int(round(train_fraction * p.shape[0]))
    n_tq = int(round(train_fraction * q.shape[0]))
    d = p.shape[1]
    if min(n_tp, n_tq) < d + 2 or n_tp >= p.shape[0] or n_tq >= q.shape[0]:
        raise ValueError(
            "each sample needs a training part of at least d + 2 points and a non-empty "
            f"held-out part; got {p.shape[0]} and {q.shape[0]} points with "
            f"train_fraction={train_fraction}"
        )
    train_p, test_p = p[:n_tp], p[n_tp:]
    train_q, test_q = q[:n_tq], q[n_tq:]
    statistic = _log_ratio_statistic(train_p, train_q)
    gamma = beta / 4
    factor = math.exp(epsilon)
    tr_p, tr_q = statistic(train_p), statistic(train_q)
    te_p, te_q = statistic(test_p), statistic(test_q)
    # Direction P || Q: region {T > tau}. Direction Q || P: region {T < tau'} = {-T > -tau'}.
    tau_pq = _best_upper_region(tr_p, tr_q, factor, gamma)
    tau_qp = -_best_upper_region(-tr_q, -tr_p, factor, gamma)
    k_p_pq, k_q_pq = int(np.sum(te_p > tau_pq)), int(np.sum(te_q > tau_pq))
    k_p_qp, k_q_qp = int(np.sum(te_p < tau_qp)), int(np.sum(te_q < tau_qp))
    n_p, n_q = te_p.size, te_q.size
    delta_pq = float(cp_lower(k_p_pq, n_p, gamma) - factor * cp_upper(k_q_pq, n_q, gamma))
    delta_qp = float(cp_lower(k_q_qp, n_q, gamma) - factor * cp_upper(k_p_qp, n_p, gamma))
    delta_pq, delta_qp = max(0.0, delta_pq), max(0.0, delta_qp)
    return HockeyStickLowerBound(
        delta=max(delta_pq, delta_qp),
        delta_p_q=delta_pq,
        delta_q_p=delta_qp,
        epsilon=epsilon,
        confidence=1.0 - beta,
        threshold_p_q=tau_pq,
        threshold_q_p=tau_qp,
        held_out_p_in_region_p_q=k_p_pq,
        held_out_q_in_region_p_q=k_q_pq,
        held_out_p_in_region_q_p=k_p_qp,
        held_out_q_in_region_q_p=k_q_qp,
        n_train_p=n_tp,
        n_train_q=n_tq,
        n_test_p=n_p,
        n_test_q=n_q,
    )
