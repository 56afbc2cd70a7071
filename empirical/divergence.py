"""Monte Carlo divergence estimators between two samples of low-dimensional statistics.

Use these on samples of a statistic of the trained models, e.g. a projection of the final
parameters or the score of the forget example, over many independent runs: ``samples_p`` from
"learn then unlearn" and ``samples_q`` from "retrain". Arrays are [n] or [n, d] (numpy/scipy).

Why these are lower-bound evidence. A statistic is a (possibly randomised) function of the model,
and by the data-processing inequality no such function can increase a Renyi, KL or hockey-stick
divergence: D(f(P) || f(Q)) <= D(P || Q). A divergence measured on a projection therefore
understates the divergence between the models; only the tester below turns that into a bound
with a stated confidence, the other estimators are estimates of the projected divergence.

Public API
----------
``gaussian_renyi_divergence(samples_p, samples_q, *, order, n_bootstrap, interval_level, seed)``
``gaussian_kl_divergence(samples_p, samples_q, *, ...)``
``gaussian_hockey_stick_divergence(samples_p, samples_q, *, epsilon, ...)``
    closed forms for Gaussians fitted to each sample, with percentile-bootstrap intervals of the
    estimate (kind "estimate": the interval describes the estimator's spread, it is not a
    confidence bound on the truth when the samples are not Gaussian).
``knn_kl_divergence(samples_p, samples_q, *, k, jitter, seed)``
    Wang, Kulkarni, Verdu (2009) k-nearest-neighbour KL estimator.
``knn_renyi_divergence(samples_p, samples_q, *, order, k, jitter, seed)``
    Poczos and Schneider (2011) k-nearest-neighbour Renyi estimator.
``hockey_stick_lower_bound(samples_p, samples_q, *, epsilon, beta, train_fraction, seed)``
    a test region fitted on a training split, evaluated with Clopper-Pearson bounds on the
    held-out split; valid at level beta for both directions at once (kind "lower bound").

Duplicate points in the kNN estimators. Both estimators assume continuous distributions; a
zero nearest-neighbour distance (tied points within a sample or across samples) makes a log
ratio infinite. Rule: if any zero distance occurs, every point of both samples gets independent
N(0, s^2 I) noise from ``np.random.default_rng(seed)``, with s = ``jitter`` times the median
positive k-NN distance of the pooled sample divided by sqrt(d), and all distances are
recomputed. A tie then counts as two points about 1% (default) of a typical neighbour spacing
apart. The result records that jitter was applied. Samples with no positive distance at all
are rejected. kNN estimates carry no bootstrap interval: resampling with replacement creates
exactly the ties these estimators cannot handle.

All divergences are in nats; Renyi orders must be positive and not 1 (use KL for order 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy.spatial import cKDTree

from empirical.statistics import _cp_lower, _cp_upper, gaussian_delta

__all__ = [
    "DivergenceEstimate",
    "HockeyStickLowerBound",
    "gaussian_hockey_stick_divergence",
    "gaussian_kl_divergence",
    "gaussian_renyi_divergence",
    "hockey_stick_lower_bound",
    "knn_kl_divergence",
    "knn_renyi_divergence",
]


@dataclass(frozen=True)
class DivergenceEstimate:
    """Estimate of D(P || Q) from samples (never a bound).

    ``interval`` is a percentile-bootstrap interval of the estimator at ``interval_level``
    (None when not computed). ``order`` is the Renyi order, ``epsilon`` the hockey-stick
    parameter, when relevant.
    """

    value: float
    interval: tuple[float, float] | None
    interval_level: float | None
    divergence: str
    order: float | None
    epsilon: float | None
    n_p: int
    n_q: int
    dimension: int
    jittered: bool
    method: str
    kind: str = "estimate"


# ----------------------------------------------------------------------------------------------
# Validation.


def _as_samples(samples, name: str) -> np.ndarray:
    array = np.asarray(samples, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise ValueError(f"{name} must have shape [n] or [n, d], got {array.shape}")
    if array.shape[0] < 2 or array.shape[1] < 1:
        raise ValueError(f"{name} needs at least 2 samples, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def _pair(samples_p, samples_q) -> tuple[np.ndarray, np.ndarray]:
    p = _as_samples(samples_p, "samples_p")
    q = _as_samples(samples_q, "samples_q")
    if p.shape[1] != q.shape[1]:
        raise ValueError(f"samples_p has dimension {p.shape[1]}, samples_q {q.shape[1]}")
    return p, q


def _check_order(order: float) -> float:
    order = float(order)
    if not (math.isfinite(order) and order > 0 and order != 1.0):
        raise ValueError(f"Renyi order must be positive, finite and not 1, got {order!r}")
    return order


def _check_epsilon(epsilon: float) -> float:
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and non-negative, got {epsilon!r}")
    return epsilon


def _check_level(level: float, name: str) -> float:
    level = float(level)
    if not (0.0 < level < 1.0):
        raise ValueError(f"{name} must lie in (0, 1), got {level!r}")
    return level


# ----------------------------------------------------------------------------------------------
# Gaussian fits.


def _fit(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    cov = np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    return mean, cov


def _logdet(cov: np.ndarray) -> float | None:
    """log det of a symmetric matrix, or None when it is not positive definite."""
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return None
    return 2.0 * float(np.sum(np.log(np.diag(chol))))


def _require_logdet(cov: np.ndarray, name: str) -> float:
    value = _logdet(cov)
    if value is None:
        raise ValueError(
            f"the fitted covariance of {name} is singular; a Gaussian fit needs more samples "
            "than dimensions and non-constant coordinates"
        )
    return value


def _gaussian_renyi(p: np.ndarray, q: np.ndarray, order: float) -> float:
    """D_order(N_p || N_q) for the fitted Gaussians (Gil, Alajaji, Linder 2013, Table 2)."""
    mp, cp = _fit(p)
    mq, cq = _fit(q)
    logdet_p = _require_logdet(cp, "samples_p")
    logdet_q = _require_logdet(cq, "samples_q")
    mixed = order * cq + (1.0 - order) * cp
    logdet_mixed = _logdet(mixed)
    if logdet_mixed is None:
        # order * Sigma_q - (order - 1) * Sigma_p not positive definite: the integral diverges.
        return math.inf
    diff = mp - mq
    quad = float(diff @ np.linalg.solve(mixed, diff))
    log_term = logdet_mixed - (1.0 - order) * logdet_p - order * logdet_q
    return max(0.0, 0.5 * order * quad - log_term / (2.0 * (order - 1.0)))


def _gaussian_kl(p: np.ndarray, q: np.ndarray) -> float:
    mp, cp = _fit(p)
    mq, cq = _fit(q)
    logdet_p = _require_logdet(cp, "samples_p")
    logdet_q = _require_logdet(cq, "samples_q")
    d = p.shape[1]
    diff = mp - mq
    trace = float(np.trace(np.linalg.solve(cq, cp)))
    quad = float(diff @ np.linalg.solve(cq, diff))
    return max(0.0, 0.5 * (trace + quad - d + logdet_q - logdet_p))


def _normal_mass(lo: float, hi: float, mean: float, sd: float) -> float:
    """P(lo < X < hi) for X ~ N(mean, sd^2), accurate in both tails."""
    a, b = (lo - mean) / sd, (hi - mean) / sd
    if a > 0:
        return float(special.ndtr(-a) - special.ndtr(-b))
    return float(special.ndtr(b) - special.ndtr(a))


def _hockey_stick_1d(mp: float, sp: float, mq: float, sq: float, epsilon: float) -> float:
    """sup_S P(S) - e^eps Q(S) for P = N(mp, sp^2), Q = N(mq, sq^2), exactly.

    The optimal S is {log p - log q > eps}, a quadratic inequality a x^2 + b x + c > 0.
    """
    a = 0.5 / sq**2 - 0.5 / sp**2
    b = mp / sp**2 - mq / sq**2
    c = 0.5 * mq**2 / sq**2 - 0.5 * mp**2 / sp**2 + math.log(sq / sp) - epsilon
    intervals: list[tuple[float, float]]
    if abs(a) <= 1e-12 * max(0.5 / sq**2, 0.5 / sp**2):
        if b == 0:
            intervals = [(-math.inf, math.inf)] if c > 0 else []
        else:
            root = -c / b
            intervals = [(root, math.inf)] if b > 0 else [(-math.inf, root)]
    else:
        disc = b * b - 4 * a * c
        if disc <= 0:
            intervals = [(-math.inf, math.inf)] if a > 0 else []
        else:
            # Numerically stable roots.
            t = -0.5 * (b + math.copysign(math.sqrt(disc), b))
            r1, r2 = sorted((t / a, c / t))
            intervals = [(-math.inf, r1), (r2, math.inf)] if a > 0 else [(r1, r2)]
    p_mass = sum(_normal_mass(lo, hi, mp, sp) for lo, hi in intervals)
    q_mass = sum(_normal_mass(lo, hi, mq, sq) for lo, hi in intervals)
    return max(0.0, p_mass - math.exp(epsilon) * q_mass)


def _gaussian_hockey_stick(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    if p.shape[1] == 1:
        sp, sq = float(p[:, 0].std(ddof=1)), float(q[:, 0].std(ddof=1))
        if sp == 0 or sq == 0:
            raise ValueError("a fitted standard deviation is zero; the samples are constant")
        return _hockey_stick_1d(float(p[:, 0].mean()), sp, float(q[:, 0].mean()), sq, epsilon)
    # d > 1: a shared (pooled) covariance, so the divergence is that of a Gaussian shift by the
    # Mahalanobis distance.
    mp, cp = _fit(p)
    mq, cq = _fit(q)
    n_p, n_q = p.shape[0], q.shape[0]
    pooled = ((n_p - 1) * cp + (n_q - 1) * cq) / (n_p + n_q - 2)
    _require_logdet(pooled, "the pooled samples")
    diff = mp - mq
    mu = math.sqrt(max(0.0, float(diff @ np.linalg.solve(pooled, diff))))
    return gaussian_delta(mu=mu, epsilon=epsilon)


def _bootstrap_interval(
    p: np.ndarray,
    q: np.ndarray,
    estimator: Callable[[np.ndarray, np.ndarray], float],
    *,
    n_bootstrap: int,
    level: float,
    seed: int,
) -> tuple[float, float] | None:
    if n_bootstrap == 0:
        return None
    rng = np.random.default_rng(seed)
    values = np.empty(n_bootstrap)
    for b in range(n_bootstrap):
        values[b] = estimator(
            p[rng.integers(0, p.shape[0], p.shape[0])],
            q[rng.integers(0, q.shape[0], q.shape[0])],
        )
    # inverted_cdf never interpolates, so infinite replicates stay infinite instead of NaN.
    tail = (1.0 - level) / 2
    lo, hi = np.quantile(values, [tail, 1.0 - tail], method="inverted_cdf")
    return float(lo), float(hi)


def _check_bootstrap(n_bootstrap: int) -> int:
    if isinstance(n_bootstrap, bool) or not float(n_bootstrap).is_integer() or n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be a non-negative integer, got {n_bootstrap!r}")
    return int(n_bootstrap)


def _gaussian_estimate(
    p, q, estimator, *, divergence, order, epsilon, n_bootstrap, interval_level, seed, method
) -> DivergenceEstimate:
    n_bootstrap = _check_bootstrap(n_bootstrap)
    interval_level = _check_level(interval_level, "interval_level")
    value = estimator(p, q)
    interval = _bootstrap_interval(
        p, q, estimator, n_bootstrap=n_bootstrap, level=interval_level, seed=seed
    )
    return DivergenceEstimate(
        value=value,
        interval=interval,
        interval_level=interval_level if interval is not None else None,
        divergence=divergence,
        order=order,
        epsilon=epsilon,
        n_p=p.shape[0],
        n_q=q.shape[0],
        dimension=p.shape[1],
        jittered=False,
        method=method,
    )


def gaussian_renyi_divergence(
    samples_p,
    samples_q,
    *,
    order: float,
    n_bootstrap: int = 200,
    interval_level: float = 0.95,
    seed: int = 0,
) -> DivergenceEstimate:
    """Renyi divergence of order ``order`` between Gaussians fitted to the two samples.

    Closed form with means and unbiased covariances; +inf when
    order * Sigma_q - (order - 1) * Sigma_p is not positive definite. For N(mu, 1) vs N(0, 1)
    it equals order * mu^2 / 2.
    """
    p, q = _pair(samples_p, samples_q)
    order = _check_order(order)
    return _gaussian_estimate(
        p,
        q,
        lambda a, b: _gaussian_renyi(a, b, order),
        divergence="renyi",
        order=order,
        epsilon=None,
        n_bootstrap=n_bootstrap,
        interval_level=interval_level,
        seed=seed,
        method="Gaussian fit, closed-form Renyi divergence, percentile bootstrap",
    )


def gaussian_kl_divergence(
    samples_p,
    samples_q,
    *,
    n_bootstrap: int = 200,
    interval_level: float = 0.95,
    seed: int = 0,
) -> DivergenceEstimate:
    """KL divergence between Gaussians fitted to the two samples (closed form)."""
    p, q = _pair(samples_p, samples_q)
    return _gaussian_estimate(
        p,
        q,
        _gaussian_kl,
        divergence="kl",
        order=None,
        epsilon=None,
        n_bootstrap=n_bootstrap,
        interval_level=interval_level,
        seed=seed,
        method="Gaussian fit, closed-form KL divergence, percentile bootstrap",
    )


def gaussian_hockey_stick_divergence(
    samples_p,
    samples_q,
    *,
    epsilon: float,
    n_bootstrap: int = 200,
    interval_level: float = 0.95,
    seed: int = 0,
) -> DivergenceEstimate:
    """Hockey-stick divergence sup_S P(S) - e^eps Q(S) between fitted Gaussians.

    One dimension: separate means and variances, evaluated exactly on the likelihood-ratio
    region. Several dimensions: a pooled covariance, which reduces the divergence to
    :func:`empirical.statistics.gaussian_delta` at the Mahalanobis distance of the means.
    """
    p, q = _pair(samples_p, samples_q)
    epsilon = _check_epsilon(epsilon)
    shape = "separate variances" if p.shape[1] == 1 else "pooled covariance"
    return _gaussian_estimate(
        p,
        q,
        lambda a, b: _gaussian_hockey_stick(a, b, epsilon),
        divergence="hockey-stick",
        order=None,
        epsilon=epsilon,
        n_bootstrap=n_bootstrap,
        interval_level=interval_level,
        seed=seed,
        method=f"Gaussian fit ({shape}), exact hockey-stick divergence, percentile bootstrap",
    )


# ----------------------------------------------------------------------------------------------
# k-nearest-neighbour estimators.


def _check_k(k: int, n_p: int, n_q: int) -> int:
    if isinstance(k, bool) or not float(k).is_integer() or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    if k > n_p - 1 or k > n_q:
        raise ValueError(f"k={k} needs at least k+1 samples of P and k of Q, got {n_p}, {n_q}")
    return k


def _knn_distances(p: np.ndarray, q: np.ndarray, k: int):
    """rho: k-th neighbour of each P point among the other P points; nu: among Q points."""
    rho = cKDTree(p).query(p, k=[k + 1])[0][:, 0]  # the point itself is its own 1st neighbour
    nu = cKDTree(q).query(p, k=[k])[0][:, 0]
    return rho, nu


def _knn_distances_without_ties(p, q, k, *, jitter: float, seed: int):
    rho, nu = _knn_distances(p, q, k)
    if np.all(rho > 0) and np.all(nu > 0):
        return rho, nu, False
    pooled = np.concatenate([rho, nu])
    scale = np.median(pooled[pooled > 0]) if np.any(pooled > 0) else 0.0
    if scale == 0.0:
        raise ValueError("all nearest-neighbour distances are zero; the samples are constant")
    rng = np.random.default_rng(seed)
    sd = jitter * scale / math.sqrt(p.shape[1])
    p = p + rng.normal(0.0, sd, p.shape)
    q = q + rng.normal(0.0, sd, q.shape)
    rho, nu = _knn_distances(p, q, k)
    if not (np.all(rho > 0) and np.all(nu > 0)):
        raise ValueError("zero nearest-neighbour distances remain after jitter; raise jitter")
    return rho, nu, True


def _check_jitter(jitter: float) -> float:
    jitter = float(jitter)
    if not (math.isfinite(jitter) and jitter > 0):
        raise ValueError(f"jitter must be positive and finite, got {jitter!r}")
    return jitter


def knn_kl_divergence(
    samples_p,
    samples_q,
    *,
    k: int = 5,
    jitter: float = 0.01,
    seed: int = 0,
) -> DivergenceEstimate:
    """Wang, Kulkarni, Verdu (2009, Eq. 5) k-NN estimate of KL(P || Q).

    D = (d / n) sum_i log(nu_k(i) / rho_k(i)) + log(m / (n - 1)). Consistent, but biased for
    small samples and able to go negative; reported as computed, not clamped, so that its
    bias stays visible. Ties are handled as in the module docstring.
    """
    p, q = _pair(samples_p, samples_q)
    n, d = p.shape
    m = q.shape[0]
    k = _check_k(k, n, m)
    rho, nu, jittered = _knn_distances_without_ties(p, q, k, jitter=_check_jitter(jitter), seed=seed)
    value = d * float(np.mean(np.log(nu) - np.log(rho))) + math.log(m / (n - 1))
    return DivergenceEstimate(
        value=value,
        interval=None,
        interval_level=None,
        divergence="kl",
        order=None,
        epsilon=None,
        n_p=n,
        n_q=m,
        dimension=d,
        jittered=jittered,
        method=f"Wang-Kulkarni-Verdu k-NN KL estimator (k={k})",
    )


def knn_renyi_divergence(
    samples_p,
    samples_q,
    *,
    order: float,
    k: int = 5,
    jitter: float = 0.01,
    seed: int = 0,
) -> DivergenceEstimate:
    """Poczos and Schneider (2011, Eq. 5 and Thm 4) k-NN estimate of D_order(P || Q).

    With kNN density ratios r_i = (n - 1) rho_k(i)^d / (m nu_k(i)^d), the integral
    int p^a q^(1-a) is estimated by B_{k,a} mean_i r_i^(1-a), with the bias correction
    B_{k,a} = Gamma(k)^2 / (Gamma(k - a + 1) Gamma(k + a - 1)); requires k > |a - 1|. The
    integral estimate is asymptotically unbiased; its log is not, and small samples can give
    negative values (reported as computed).
    """
    p, q = _pair(samples_p, samples_q)
    order = _check_order(order)
    n, d = p.shape
    m = q.shape[0]
    k = _check_k(k, n, m)
    if not k > abs(order - 1.0):
        raise ValueError(f"k must exceed |order - 1| = {abs(order - 1.0)}, got k={k}")
    rho, nu, jittered = _knn_distances_without_ties(p, q, k, jitter=_check_jitter(jitter), seed=seed)
    log_ratio = math.log(n - 1) - math.log(m) + d * (np.log(rho) - np.log(nu))
    log_b = 2 * special.gammaln(k) - special.gammaln(k - order + 1) - special.gammaln(k + order - 1)
    log_integral = special.logsumexp((1.0 - order) * log_ratio) - math.log(n) + log_b
    return DivergenceEstimate(
        value=float(log_integral / (order - 1.0)),
        interval=None,
        interval_level=None,
        divergence="renyi",
        order=order,
        epsilon=None,
        n_p=n,
        n_q=m,
        dimension=d,
        jittered=jittered,
        method=f"Poczos-Schneider k-NN Renyi estimator (k={k})",
    )


# ----------------------------------------------------------------------------------------------
# Hockey-stick lower-bound tester.


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
        mean, cov = _fit(x)
        ridge = 1e-9 * max(float(np.trace(cov)) / cov.shape[0], 1e-300)
        cov = cov + ridge * np.eye(cov.shape[0])
        logdet = _logdet(cov)
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
    score = _cp_lower(k_in, t_in.size, gamma) - factor * _cp_upper(k_out, t_out.size, gamma)
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
    p, q = _pair(samples_p, samples_q)
    epsilon = _check_epsilon(epsilon)
    beta = _check_level(beta, "beta")
    train_fraction = _check_level(train_fraction, "train_fraction")
    rng = np.random.default_rng(seed)
    p, q = p[rng.permutation(p.shape[0])], q[rng.permutation(q.shape[0])]
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
    delta_pq = float(_cp_lower(k_p_pq, n_p, gamma) - factor * _cp_upper(k_q_pq, n_q, gamma))
    delta_qp = float(_cp_lower(k_q_qp, n_q, gamma) - factor * _cp_upper(k_p_qp, n_p, gamma))
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
