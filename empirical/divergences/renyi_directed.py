"""The directed Rényi test (the default of :func:`~empirical.divergences.renyi_tests.renyi_audit`).

The boxes of :mod:`empirical.divergences.renyi_histogram` let every bin move
against the test at once; a noise shortfall only shows along one direction, so the default test
uses a joint confidence region for each world that constrains exactly that direction.

(1) Variational lower bound (Hölder). For alpha > 1, any function g of the score and any laws P,
Q of the score (r = dP/dQ; if P is not absolutely continuous D_alpha = inf):

    E_P[e^{(alpha-1) g}] = E_Q[r e^{(alpha-1) g}]
                         <= (E_Q r^alpha)^{1/alpha} (E_Q e^{alpha g})^{(alpha-1)/alpha}

(Hölder with exponents alpha and alpha / (alpha - 1)), that is

    D_alpha(P || Q) >= alpha / (alpha - 1) log E_P[e^{(alpha-1) g}] - log E_Q[e^{alpha g}],

with equality at g = log r (Birrell et al. 2021 state the same representation). Adding a
constant to g changes neither side, so g is shifted to max g = 0 and values stay in (0, 1].

(2) Joint region of each world. With g fixed, X = e^{(alpha-1) g(S)}, S ~ P, and
Y = e^{alpha g(S)}, S ~ Q, are bounded: X in [x_lo, x_hi], Y in [y_lo, y_hi] (g takes one value
per pilot bin). For i.i.d. X_1..X_n with mean mu and a fixed lam > 0, let
lam_m = min(lam, c / (m - x_lo)) (c = 1/2) and W(m) = prod_i (1 + lam_m (X_i - m)). Every
factor is >= 1 - c > 0 and non-increasing in m (on the second branch it is
(1 - c) + c (X_i - x_lo) / (m - x_lo)), so W is non-increasing; E[W(mu)] = prod_i E[1 + lam_mu
(X_i - mu)] = 1 by independence, so P(W(mu) >= 1/b) <= b (Markov; a betting bound in the sense
of Waudby-Smith and Ramdas 2024). The returned L is a point with W(L) >= 1/b checked (or
x_lo): mu < L would give W(mu) >= W(L) >= 1/b, so P(mu < L) <= b. The same on -Y gives an
upper bound U on E_Q[Y]. {p : <p, x> >= L} and {q : <q, y> <= U} are joint confidence regions
of the two worlds' binned laws (one event each, b = beta / 2), and by (1)

    min over the product of the two regions of D_alpha >= alpha / (alpha - 1) log L - log U,

the weak-duality bound of this region (the Hölder inequality is the dual certificate).

(3) What is chosen, and where. A seeded pilot (one permutation of the trials, discarded from
the tested counts) fixes bins at pooled quantiles and two candidate g: the smoothed log-ratio
of the two worlds' bin frequencies, and the same smoothed across bins by a weighted quadratic
in the score. It chooses g, the direction (D(P || Q) or, for two-sided certificates,
D(Q || P)), the order, a clipping of g and lam by the bound it forecasts at the tested sample
sizes minus one standard error of that forecast. Only then are the tested counts read, and
one bound at one order is computed with the whole level beta. Since D_alpha is non-decreasing
in alpha (van Erven and Harremoës 2014, Theorem 3), the bound at alpha* also bounds every
larger order. Float rounding is absorbed by shrinking the bound by 1e-9 times its terms' size.

(4) Paired rows: one test instead of two. When the two worlds' scores come in rows (trial i of
both worlds; rows i.i.d., whatever the dependence inside a row), Z_i = X(S_i^P) - k Y(S_i^Q)
with k > 0 fixed by the pilot is i.i.d., bounded in [min x - k max y, max x - k min y], and has
mean A - k B (A = E_P X, B = E_Q Y). One betting bound at the whole level beta gives t with
P(A - k B < t) <= beta. On that event A >= t + k B, and since the bound of (1) increases in A,

    D_alpha >= min over B > 0 of alpha/(alpha-1) log(t + k B) - log B
             = alpha/(alpha-1) log(alpha t) - log((alpha - 1) t / k)      (t > 0),

the minimum at B = (alpha - 1) t / k (a one-variable convex problem: set the derivative to 0).
No level is split between the worlds, and the two worlds' noise adds in variance instead of in
standard deviation: at a Gaussian noise shortfall this roughly halves the detectable excess.
With k = kappa A / B (kappa = (alpha-1)/alpha) the bound is tight at the true A, B; the pilot
chooses k among multiples of that value estimated on it, and chooses g among the candidates
of (3) and among smooth ones on finer bins: a line and a parabola in the score fitted as the
log-ratio of two normal laws (one shared variance or one each) to the pilot, and the
quadratic smoothing of (3) evaluated on the finer bins. Any g fixed by the pilot is valid.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from empirical.divergences.renyi_histogram import (
    ROUNDING_SHRINK,
    RenyiLowerBoundCurve,
    as_score_sample,
    bin_counts,
    check_beta,
    renyi_from_probabilities,
)

__all__ = ["DirectedChoice", "betting_lower_mean", "choose_directed", "directed_curve",
           "directed_lower_bound", "paired_bound_from_mean", "paired_directed_lower_bound",
           "paired_lower_bound"]

# ----------------------------------------------------------------------------------------------
# The directed test (module docstring, "The directed test").

# Largest fraction of the distance to the range's end one bet may stake: every factor stays
# >= 1 - _STAKE_CAP, so one extreme tested value costs at most log 2 of the wealth.
_STAKE_CAP = 0.5
# Most bins of the pilot's log-ratio g, and pilot scores (pooled, first half) per bin.
_DIRECTED_MAX_BINS = 8
_DIRECTED_PER_BIN = 250
# Quantile levels at which g may be clipped (0: not clipped), and multiples of the
# variance-matched stake the pilot chooses from.
_DIRECTED_CLIPS: tuple[float, ...] = (0.0, 0.02, 0.1)
_DIRECTED_STAKES: tuple[float, ...] = (0.5, 1.0)
_DIRECTED_SMOOTHING = 0.5
# Degree of the polynomial that smooths g across the bins (a second candidate g; None: none).
_DIRECTED_SMOOTH_DEGREE: int | None = 2


def _log_wealth(values: np.ndarray, weights: np.ndarray, m: float, lam: float, low: float) -> float:
    """sum_j weights_j log(1 + lam_m (values_j - m)), lam_m = min(lam, cap / (m - low)); every
    factor is >= 1 - cap > 0 for values >= low, so every logarithm is finite."""
    stake = lam if (m - low) * lam <= _STAKE_CAP else _STAKE_CAP / (m - low)
    return float(weights @ np.log1p(stake * (values - m)))


def betting_lower_mean(values, counts, *, beta: float, lam: float, steps: int = 64) -> float:
    """Lower confidence bound at level 1 - beta on E[X] for i.i.d. X taking values in
    ``values`` (the whole range of X; ``counts[j]`` tested draws equal ``values[j]``).

    The betting bound of the module docstring, (2): W(m) is non-increasing in m, E W(mu) = 1,
    and the result L has W(L) >= 1/beta checked in float with a margin (or is min(values)), so
    P(E[X] < L) <= beta. ``lam`` > 0 must not depend on the counts (choose it on a pilot);
    ``steps`` bisection steps locate L (fewer give a smaller L, never an invalid one).
    """
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(counts, dtype=np.float64)
    if values.shape != weights.shape or values.ndim != 1 or values.size < 1:
        raise ValueError("values and counts must be 1-D arrays of the same length")
    if not (np.all(np.isfinite(values)) and np.all(weights >= 0)):
        raise ValueError("values must be finite and counts non-negative")
    if not (math.isfinite(lam) and lam > 0):
        raise ValueError(f"the stake lam must be finite and > 0, got {lam!r}")
    beta = check_beta(beta)
    low, high = float(values.min()), float(values.max())
    # The wealth is a sum of weights * logs of factors in [1 - cap, 1 + cap * range]: float
    # error far below this margin.
    margin = 1e-9 * (1.0 + float(weights.sum()))
    target = math.log(1.0 / beta) + margin
    if not high > low or not _log_wealth(values, weights, low, lam, low) >= target:
        return low
    if _log_wealth(values, weights, high, lam, low) >= target:
        return high
    ok, bad = low, high
    for _ in range(steps):
        mid = 0.5 * (ok + bad)
        if not ok < mid < bad:
            break
        if _log_wealth(values, weights, mid, lam, low) >= target:
            ok = mid
        else:
            bad = mid
    return ok


def _predicted_lower_mean(values: np.ndarray, freq: np.ndarray, n: int, *, beta: float,
                          lam: float) -> float:
    """The bound :func:`betting_lower_mean` would give if the n tested draws had the pilot's
    frequencies ``freq`` (a forecast on the pilot; no validity claimed)."""
    return betting_lower_mean(values, freq * n, beta=beta, lam=lam, steps=24)


@dataclass(frozen=True)
class DirectedChoice:
    """What the pilot chose for the directed test: ``direction`` ("forward": D(P || Q),
    "backward": D(Q || P)), ``order``, the bin ``edges``, ``g`` (one value per bin, clipped and
    shifted to max 0, oriented for ``direction``), the stakes of the two bounds and the
    predicted lower bound minus the certified value (a pilot forecast, not a bound).
    ``paired_weight`` k > 0 selects the paired test of the module docstring, (4) (stake
    ``lam_first``); 0 the two separate bounds of (2)."""

    direction: str
    order: float
    edges: tuple[float, ...]
    g: tuple[float, ...]
    lam_first: float
    lam_second: float
    predicted_margin: float
    paired_weight: float = 0.0


def _clipped(g_dir: np.ndarray, pooled_freq: np.ndarray,
             clips: Sequence[float]) -> Iterator[np.ndarray]:
    """The candidate g of each clip level: ``g_dir`` clipped at the pooled pilot quantiles clip and
    1 - clip (0: as it is); levels that leave g constant are skipped (a constant g shows nothing)."""
    order_g = np.argsort(g_dir)
    cum = np.cumsum(pooled_freq[order_g])
    last = g_dir.size - 1
    for clip in clips:
        g = g_dir
        if clip > 0:
            lo = float(g_dir[order_g][min(np.searchsorted(cum, clip), last)])
            hi = float(g_dir[order_g][min(np.searchsorted(cum, 1 - clip), last)])
            if not hi > lo:
                continue
            g = np.clip(g_dir, lo, hi)
        if np.ptp(g) > 0:
            yield g


def _directed_values(g: np.ndarray, order: float) -> tuple[np.ndarray, np.ndarray]:
    """x_j = e^{(order-1) g_j}, y_j = e^{order g_j} with g shifted to max 0 and floored so that
    y_j >= e^{-700} (a floored g is another valid g: no underflow to 0)."""
    h = np.maximum(g - g.max(), -700.0 / order)
    return np.exp((order - 1.0) * h), np.exp(order * h)


def _directed_bound(x: np.ndarray, y: np.ndarray, first: np.ndarray, second: np.ndarray, *,
                    order: float, beta: float, lam_first: float, lam_second: float) -> float:
    """order/(order-1) log L - log U from counts (or forecast counts) of the two worlds."""
    lower = betting_lower_mean(x, first, beta=beta / 2.0, lam=lam_first)
    upper = -betting_lower_mean(-y, second, beta=beta / 2.0, lam=lam_second)
    if not (lower > 0.0 and upper > 0.0):
        return 0.0
    a, b = order / (order - 1.0) * math.log(lower), math.log(upper)
    return a - b - ROUNDING_SHRINK * (1.0 + abs(a) + abs(b))


def _bin_centres(pooled: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Median pooled pilot score of each bin (NaN for a bin the pilot left empty)."""
    where = np.searchsorted(edges, pooled, side="right")
    return np.array([np.median(pooled[where == j]) if np.any(where == j) else np.nan
                     for j in range(edges.size + 1)])


def _smoothed_log_ratio(pooled: np.ndarray, edges: np.ndarray, g: np.ndarray, cp: np.ndarray,
                        cq: np.ndarray, at_edges: np.ndarray | None = None) -> np.ndarray:
    """The bins' log-ratios ``g`` smoothed by a weighted polynomial fit in the bins' median
    pooled pilot score (weights: inverse variances of the smoothed log-ratios), evaluated on the
    bins of ``edges`` or, when given, of ``at_edges``. Any g is valid; this one is less noisy
    where the log-ratio is smooth in the score."""
    centres = _bin_centres(pooled, edges)
    known = np.isfinite(centres)
    degree = min(_DIRECTED_SMOOTH_DEGREE, int(known.sum()) - 1)
    target = centres if at_edges is None else _bin_centres(pooled, at_edges)
    if degree < 1:
        return g if at_edges is None else np.zeros(target.size)
    weights = 1.0 / np.sqrt(1.0 / (cp + _DIRECTED_SMOOTHING) + 1.0 / (cq + _DIRECTED_SMOOTHING))
    scale = float(np.std(centres[known])) or 1.0
    mean = float(np.mean(centres[known]))
    coef = np.polyfit((centres[known] - mean) / scale, g[known], degree, w=weights[known])
    out = np.polyval(coef, np.where(np.isfinite(target), (target - mean) / scale, 0.0))
    if at_edges is None:
        return np.where(known, out, g)
    return np.where(np.isfinite(target), out, 0.0)


# ----------------------------------------------------------------------------------------------
# The paired test (module docstring, (4)).

# Multiples of the pilot's tight weight kappa A / B the pilot chooses k from (a smaller k
# trades a looser bound for less noise from the heavy-tailed Y), and quantile levels at which
# the paired test may clip g (finer than the separate bounds': the noise adds in variance).
_PAIRED_WEIGHTS: tuple[float, ...] = (0.5, 0.75, 1.0)
_PAIRED_CLIPS: tuple[float, ...] = (0.0, 0.005, 0.02, 0.05, 0.1)
# Standard errors of the pilot's forecast subtracted from it when choosing.
_PAIRED_ERRORS = 1.0
# Most bins of the smooth candidate g, and pooled pilot scores per bin.
_FINE_MAX_BINS = 64
_FINE_PER_BIN = 40


def paired_bound_from_mean(t: float, *, order: float, weight: float) -> float:
    """min over B > 0 of order/(order-1) log(t + weight B) - log B, shrunk for rounding (0 when
    t <= 0: the bound shows nothing). Module docstring, (4)."""
    if not (t > 0.0 and weight > 0.0):
        return 0.0
    a = order / (order - 1.0) * math.log(order * t)
    b = math.log((order - 1.0) * t / weight)
    return max(0.0, a - b - ROUNDING_SHRINK * (1.0 + abs(a) + abs(b)))


def paired_lower_bound(x: np.ndarray, y: np.ndarray, bins_first: np.ndarray,
                       bins_second: np.ndarray, *, order: float, weight: float, beta: float,
                       lam: float) -> float:
    """Lower confidence bound at level 1 - beta on D_order from paired rows: row i of the first
    world fell in bin ``bins_first[i]`` and of the second in ``bins_second[i]`` (module
    docstring, (4)); ``x``, ``y`` are the bins' values of X and Y."""
    z = x[bins_first] - weight * y[bins_second]
    # The range of Z from the bins' values, not from the draws: the stake cap must not depend
    # on the tested rows.
    ends = np.array([float(x.min()) - weight * float(y.max()),
                     float(x.max()) - weight * float(y.min())])
    values = np.concatenate([ends, z])
    counts = np.concatenate([np.zeros(2), np.ones(z.size)])
    t = betting_lower_mean(values, counts, beta=beta, lam=lam)
    return paired_bound_from_mean(t, order=order, weight=weight)


def _forecast_betting_lower(mean: float, var: float, n: int, low: float, *, beta: float,
                            lam: float) -> float:
    """Second-order forecast of :func:`betting_lower_mean` for n draws of a given mean and
    variance (a pilot heuristic, no validity claimed): log W(m) / n ~ s d - s^2 (var + d^2) / 2
    with d = mean - m and s the capped stake, set equal to log(1 / beta) / n."""
    stake = lam if (mean - low) * lam <= _STAKE_CAP else _STAKE_CAP / (mean - low)
    disc = 1.0 - 2.0 * math.log(1.0 / beta) / n - stake * stake * var
    if disc < 0.0:
        return -math.inf
    return mean - (1.0 - math.sqrt(disc)) / stake


def _smooth_candidates(p: np.ndarray, q: np.ndarray, pooled: np.ndarray, edges: np.ndarray,
                       g_fit: np.ndarray, cp: np.ndarray, cq: np.ndarray
                       ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(edges, g) on fine bins at pooled pilot quantiles: the log-ratio of two normal fits with
    one shared variance (a line in the score) and with one variance each (a parabola), and the
    quadratic smoothing of the coarse bins' log-ratio."""
    n_fine = int(min(_FINE_MAX_BINS, pooled.size // _FINE_PER_BIN))
    if n_fine <= edges.size + 1:
        return []
    fine = np.unique(np.quantile(pooled, np.arange(1, n_fine) / n_fine))
    centres = _bin_centres(pooled, fine)
    centres = np.where(np.isfinite(centres), centres, float(np.median(pooled)))
    mp, mq = float(np.mean(p)), float(np.mean(q))
    vp, vq = float(np.var(p)), float(np.var(q))
    out = []
    shared = 0.5 * (vp + vq)
    if shared > 0:
        out.append((fine, (mp - mq) / shared * centres))
    if vp > 0 and vq > 0:
        out.append((fine, (-(centres - mp) ** 2 / (2 * vp) + (centres - mq) ** 2 / (2 * vq)
                           - 0.5 * math.log(vp / vq))))
    if _DIRECTED_SMOOTH_DEGREE is not None:
        out.append((fine, _smoothed_log_ratio(pooled, edges, g_fit, cp, cq, at_edges=fine)))
    return out


def _choose_paired(p: np.ndarray, q: np.ndarray, candidates, *, certified: Callable[[float], float],
                   orders: Sequence[float], two_sided: bool, beta: float,
                   n: int) -> DirectedChoice | None:
    """The paired test's choices on the pilot rows ``p``, ``q`` (module docstring, (4)): g,
    direction, clipping, order, weight and stake by the forecast bound at ``n`` tested rows
    minus one standard error of the forecast."""
    log_b = math.log(1.0 / beta)
    best: DirectedChoice | None = None
    best_score = -math.inf
    for edges, g_one in candidates:
        # Pseudo-counts: a bin the pilot saw rarely (a tail, where Y is largest) is not
        # forecast to be as rare as seen.
        cp, cq = bin_counts(p, edges) + _DIRECTED_SMOOTHING, bin_counts(q, edges) + _DIRECTED_SMOOTHING
        fp, fq = cp / cp.sum(), cq / cq.sum()
        options = [("forward", g_one, fp, fq)]
        if two_sided:
            options.append(("backward", -g_one, fq, fp))
        for direction, g_dir, f_first, f_second in options:
            for g in _clipped(g_dir, 0.5 * (f_first + f_second), _PAIRED_CLIPS):
                for order in orders:
                    order = float(order)
                    x, y = _directed_values(g, order)
                    a, b = float(f_first @ x), float(f_second @ y)
                    if not (a > 0 and b > 0):
                        continue
                    var_x = max(float(f_first @ x**2) - a * a, 0.0)
                    var_y = max(float(f_second @ y**2) - b * b, 0.0)
                    # One more pilot row at each range's unfavourable end: a range the pilot
                    # cannot estimate (a tail it barely saw) is not preferred.
                    var_x += (a - float(x.min())) ** 2 / p.size
                    var_y += (float(y.max()) - b) ** 2 / q.size
                    a -= (a - float(x.min())) / p.size
                    b += (float(y.max()) - b) / q.size
                    cert = float(certified(order))
                    tight = (order - 1.0) / order * a / b
                    for multiple in _PAIRED_WEIGHTS:
                        k = multiple * tight
                        # The pilot's means one standard error against the test: a weight
                        # tuned to an underestimated B (heavy-tailed Y) is not preferred.
                        mean = (a - math.sqrt(var_x / p.size)
                                - k * (b + math.sqrt(var_y / q.size)))
                        var = var_x + k * k * var_y
                        if not (mean > 0 and var > 0):
                            continue
                        low = float(x.min()) - k * float(y.max())
                        lam0 = math.sqrt(2.0 * log_b / (n * var))
                        t, lam = max((_forecast_betting_lower(mean, var, n, low, beta=beta,
                                                              lam=m * lam0), m * lam0)
                                     for m in _DIRECTED_STAKES)
                        margin = paired_bound_from_mean(t, order=order, weight=k) - cert
                        # One standard error of the pilot's own estimate of the bound.
                        error = (_PAIRED_ERRORS * math.sqrt(var / p.size)
                                 / ((order - 1.0) * mean))
                        if margin - error > best_score:
                            best_score = margin - error
                            best = DirectedChoice(direction, order, tuple(float(e) for e in edges),
                                                  tuple(float(v) for v in g), lam, lam, margin,
                                                  paired_weight=k)
    return best


def choose_directed(pilot_p, pilot_q, *, certified: Callable[[float], float],
                    orders: Sequence[float], two_sided: bool, beta: float, n_p: int,
                    n_q: int, paired: bool = False) -> DirectedChoice:
    """Choose the directed test on a pilot (module docstring, (3)); ``n_p``, ``n_q`` are the
    tested sample sizes the forecast is made for. ``paired``: the tested rows come in rows of
    both worlds (equal sizes), so the paired test of (4) is chosen. Uses only the pilot."""
    p = as_score_sample(pilot_p, "pilot_p")
    q = as_score_sample(pilot_q, "pilot_q")
    # One pilot both fits g and forecasts the choices: the forecast's own standard error
    # (below) keeps an in-sample look from being preferred; halves fitted and forecast worse.
    fit_p, fit_q, ev_p, ev_q = p, q, p, q
    pooled = np.concatenate([fit_p, fit_q])
    n_bins = int(min(_DIRECTED_MAX_BINS, max(2, pooled.size // _DIRECTED_PER_BIN)))
    edges = np.unique(np.quantile(pooled, np.arange(1, n_bins) / n_bins))
    bins = edges.size + 1
    cp, cq = bin_counts(fit_p, edges), bin_counts(fit_q, edges)
    g_fit = (np.log((cp + _DIRECTED_SMOOTHING) / (cp.sum() + _DIRECTED_SMOOTHING * bins))
             - np.log((cq + _DIRECTED_SMOOTHING) / (cq.sum() + _DIRECTED_SMOOTHING * bins)))
    ep, eq = bin_counts(ev_p, edges), bin_counts(ev_q, edges)
    freq_p, freq_q = ep / ep.sum(), eq / eq.sum()
    fits = [g_fit]
    if _DIRECTED_SMOOTH_DEGREE is not None:
        fits.append(_smoothed_log_ratio(pooled, edges, g_fit, cp, cq))
    paired_choice = None
    if paired and n_p == n_q and p.size == q.size:
        paired_choice = _choose_paired(p, q, [(edges, g) for g in fits]
                                       + _smooth_candidates(p, q, pooled, edges, g_fit, cp, cq),
                                       certified=certified, orders=orders, two_sided=two_sided,
                                       beta=beta, n=n_p)
        # The paired test runs wherever its forecast shows some divergence, even short of the
        # curve (its forecast is pessimistic, and near the curve it still rejects often).
        if paired_choice is not None and (paired_choice.predicted_margin
                                          + float(certified(paired_choice.order)) > 0):
            return paired_choice
    candidates = []
    for g_one in fits:
        candidates.append(("forward", g_one, freq_p, freq_q, n_p, n_q))
        if two_sided:
            candidates.append(("backward", -g_one, freq_q, freq_p, n_q, n_p))
    z_log = math.log(2.0 / beta)
    best: DirectedChoice | None = None
    best_score = -math.inf
    for direction, g_dir, f_first, f_second, n_first, n_second in candidates:
        for g in _clipped(g_dir, 0.5 * (f_first + f_second), _DIRECTED_CLIPS):
            for order in orders:
                order = float(order)
                x, y = _directed_values(g, order)
                mx, my = float(f_first @ x), float(f_second @ y)
                sx = math.sqrt(max(float(f_first @ x**2) - mx * mx, 0.0))
                sy = math.sqrt(max(float(f_second @ y**2) - my * my, 0.0))
                lam_x = [k * math.sqrt(2 * z_log / (n_first * max(sx, 1e-12) ** 2))
                         for k in _DIRECTED_STAKES]
                lam_y = [k * math.sqrt(2 * z_log / (n_second * max(sy, 1e-12) ** 2))
                         for k in _DIRECTED_STAKES]
                lower = max((_predicted_lower_mean(x, f_first, n_first, beta=beta / 2, lam=lam),
                             lam) for lam in lam_x)
                upper = min((-_predicted_lower_mean(-y, f_second, n_second, beta=beta / 2,
                                                    lam=lam), lam) for lam in lam_y)
                if not (lower[0] > 0 and upper[0] > 0 and mx > 0 and my > 0):
                    continue
                margin = (order / (order - 1.0) * math.log(lower[0]) - math.log(upper[0])
                          - float(certified(order)))
                # One standard error of the forecast itself (the evaluation half's size): a
                # choice that only looks good by the pilot's noise is not preferred.
                n_ev_first = ev_p.size if direction == "forward" else ev_q.size
                n_ev_second = ev_q.size if direction == "forward" else ev_p.size
                error = math.hypot(order / (order - 1.0) * (sx / mx) / math.sqrt(n_ev_first),
                                   (sy / my) / math.sqrt(n_ev_second))
                if margin - error > best_score:
                    best_score = margin - error
                    best = DirectedChoice(direction, order, tuple(float(e) for e in edges),
                                          tuple(float(v) for v in g), lower[1], upper[1], margin)
    if best is None:  # nothing separates on the pilot: a test that shows nothing, still valid
        order = float(orders[0])
        best = DirectedChoice("forward", order, tuple(float(e) for e in edges),
                              tuple(0.0 for _ in range(bins)), 1.0, 1.0, -math.inf)
    # The paired forecast is pessimistic where the pilot is small (an extra row at each range's
    # end): when it forecasts no divergence at all and the two-bound test forecasts a
    # refutation, that one runs (a choice made on the pilot alone, so either test keeps the
    # whole level).
    if paired_choice is not None and not best.predicted_margin > 0:
        return paired_choice
    return best


def directed_lower_bound(choice: DirectedChoice, counts_p, counts_q, *, beta: float) -> float:
    """Lower confidence bound at level 1 - beta on D_order of the chosen direction from tested
    bin counts (module docstring, (1)-(2)); 0 when the bound shows nothing."""
    beta = check_beta(beta)
    g = np.asarray(choice.g, dtype=np.float64)
    if not np.ptp(g) > 0:
        return 0.0
    x, y = _directed_values(g, choice.order)
    first, second = ((counts_p, counts_q) if choice.direction == "forward"
                     else (counts_q, counts_p))
    return max(0.0, _directed_bound(x, y, np.asarray(first, dtype=np.float64),
                                    np.asarray(second, dtype=np.float64), order=choice.order,
                                    beta=beta, lam_first=choice.lam_first,
                                    lam_second=choice.lam_second))


def paired_directed_lower_bound(choice: DirectedChoice, p, q, *, beta: float) -> float:
    """Lower confidence bound at level 1 - beta on D_order of the chosen direction from tested
    rows: ``p[i]`` and ``q[i]`` are row i of the two worlds (module docstring, (4))."""
    beta = check_beta(beta)
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError("the paired test needs the two worlds' scores row by row (equal sizes)")
    if not (choice.paired_weight > 0 and np.ptp(np.asarray(choice.g)) > 0):
        return 0.0
    edges = np.asarray(choice.edges, dtype=np.float64)
    x, y = _directed_values(np.asarray(choice.g, dtype=np.float64), choice.order)
    first, second = (p, q) if choice.direction == "forward" else (q, p)
    return paired_lower_bound(x, y, np.searchsorted(edges, first, side="right"),
                              np.searchsorted(edges, second, side="right"), order=choice.order,
                              weight=choice.paired_weight, beta=beta, lam=choice.lam_first)


def directed_curve(p: np.ndarray, q: np.ndarray, choice: DirectedChoice, *,
                    orders: Sequence[float], beta: float) -> RenyiLowerBoundCurve:
    """The directed bound on the tested rows ``p``, ``q`` as a curve over ``orders``: the bound at
    the chosen order and above (D_alpha is non-decreasing in alpha), 0 below and the other way."""
    edges = np.asarray(choice.edges, dtype=np.float64)
    counts_p, counts_q = bin_counts(p, edges), bin_counts(q, edges)
    if choice.paired_weight > 0:
        bound = paired_directed_lower_bound(choice, p, q, beta=beta)
    else:
        bound = directed_lower_bound(choice, counts_p, counts_q, beta=beta)
    # D_alpha is non-decreasing in alpha: the bound at the chosen order holds at larger ones.
    at = [bound if a >= choice.order else 0.0 for a in orders]
    zero = [0.0] * len(orders)
    forward, backward = (at, zero) if choice.direction == "forward" else (zero, at)
    freq_p, freq_q = counts_p / counts_p.sum(), counts_q / counts_q.sum()
    return RenyiLowerBoundCurve(
        orders=tuple(float(a) for a in orders),
        forward=tuple(forward),
        backward=tuple(backward),
        estimate_forward=tuple(renyi_from_probabilities(freq_p, freq_q, a) for a in orders),
        estimate_backward=tuple(renyi_from_probabilities(freq_q, freq_p, a) for a in orders),
        confidence=1.0 - beta,
        edges=choice.edges,
        counts_p=tuple(int(c) for c in counts_p),
        counts_q=tuple(int(c) for c in counts_q),
        method=(f"directed: Hölder bound D_alpha >= alpha/(alpha-1) log E_P e^((alpha-1) g) - "
                f"log E_Q e^(alpha g) with g, the {choice.direction} direction and order "
                f"{choice.order:g} chosen on a pilot; "
                + (f"one betting bound on the paired rows' mean of e^((alpha-1) g) - "
                   f"{choice.paired_weight:.4g} e^(alpha g) (one test, whole level)"
                   if choice.paired_weight > 0 else
                   "betting confidence bounds on both means (one joint region per world)")),
    )
