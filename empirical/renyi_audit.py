"""Rényi-native audit: a lower confidence bound on the Rényi divergence of a score histogram.

Why it is valid. A certificate "D_alpha(P || Q) <= eps(alpha) for every alpha" about two laws of
trained models survives every post-processing (data-processing inequality for Rényi divergences;
van Erven and Harremoës 2014, Theorem 9): the law of any attack score, and the law of the bin
that score falls in for bins fixed in advance, obey the same curve. So if the bin probabilities
of the two worlds, p and q, satisfy D_alpha(p || q) > eps(alpha) at some alpha, the certificate
is false. We never see p and q, only counts; but with probability >= 1 - beta every p_j and q_j
lies in its Clopper-Pearson interval at level beta / (4 B) (two tails, two worlds, B bins,
Bonferroni), and then

    D_alpha(p || q) >= min { D_alpha(p' || q') : p' in box_P ∩ simplex, q' in box_Q ∩ simplex }

for every alpha at once (one event covers the whole grid, both directions and all alphas). The
minimum is the value of a convex program: for alpha > 1, F(p, q) = sum_j p_j^alpha q_j^(1-alpha)
is jointly convex (the perspective of t -> t^alpha) and D_alpha = log F / (alpha - 1).

How the minimum is bounded from below without trusting an optimiser. Weak Lagrangian duality:
for any multipliers (lam, nu),

    min_{box ∩ simplex} F >= g(lam, nu) = -lam - nu + sum_j min_{(p_j, q_j) in box_j}
                                            [p_j^alpha q_j^(1-alpha) + lam p_j + nu q_j].

Each per-bin term h(p, q) = p^alpha q^(1-alpha) + lam p + nu q is convex and positively
homogeneous of degree one, so its minimum over the rectangle box_j is attained on an edge (an
interior stationary point has h = 0, and h vanishes on the whole ray through it, which leaves
the rectangle); on each edge h is a convex function of one variable whose minimiser has a closed
form, clipped to the edge. So g is evaluated exactly (up to float rounding), every (lam, nu) gives
a valid bound, and the optimiser over (lam, nu) can only make the bound tighter, never invalid.
Float rounding is not tracked; the bound on F is shrunk by a relative 1e-9 to absorb it.

Bins must be fixed before the tested counts are seen: :func:`pilot_bin_edges` builds them from a
pilot sample that :func:`renyi_audit` then discards (a random split of i.i.d. trials, so the
tested part is independent of the edges).

The directed test (the default of :func:`renyi_audit`). The boxes above let every bin move
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
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from empirical.statistics.checks import (
    as_scores,
    check_probability,
    split_order,
)
from empirical.statistics.thresholds import clopper_pearson_lower, clopper_pearson_upper

__all__ = [
    "DEFAULT_ORDERS",
    "DirectedChoice",
    "betting_lower_mean",
    "choose_directed",
    "directed_lower_bound",
    "gaussian_fit_excess",
    "DEFAULT_TAIL_LEVELS",
    "RenyiAuditResult",
    "RenyiLowerBoundCurve",
    "histogram_renyi_lower_bound",
    "max_renyi_lower_bound",
    "pilot_bin_edges",
    "renyi_audit",
    "simultaneous_boxes",
]

# Orders near 1 carry most of the power against a noise shortfall on score histograms (the tails
# that large orders need are cut by the bins); larger ones catch heavy-tailed leaks.
DEFAULT_ORDERS: tuple[float, ...] = (1.02, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0)

# Pooled-pilot quantile levels of the bin edges: both tails resolved to 1%, few enough bins (9)
# that the Bonferroni correction stays mild (chosen on Gaussian pilots, see power_bench).
DEFAULT_TAIL_LEVELS: tuple[float, ...] = (0.01, 0.05, 0.15, 0.35, 0.65, 0.85, 0.95, 0.99)

_ROUNDING_SHRINK = 1e-9
# A dual value this far (in log) from 1 is refined at its own scale (large orders; below this the
# unscaled dual is well conditioned).
_RESCALE_AT = 30.0


@dataclass(frozen=True)
class RenyiLowerBoundCurve:
    """Lower confidence bounds on D_alpha of the binned score laws, one per order.

    ``forward[i]`` bounds D_orders[i](P || Q), ``backward[i]`` bounds D_orders[i](Q || P); all
    hold together with probability >= ``confidence`` (one simultaneous box event). ``estimate_*``
    are plug-in values at the observed frequencies (estimates, not bounds; +inf when a bin is
    empty in the denominator world).
    """

    orders: tuple[float, ...]
    forward: tuple[float, ...]
    backward: tuple[float, ...]
    estimate_forward: tuple[float, ...]
    estimate_backward: tuple[float, ...]
    confidence: float
    edges: tuple[float, ...]
    counts_p: tuple[int, ...]
    counts_q: tuple[int, ...]
    method: str = (
        "Clopper-Pearson boxes on bin probabilities, Bonferroni over bins, worlds and both tails; "
        "Lagrangian dual of min D_alpha over the boxes intersected with the simplex"
    )
    kind: str = "lower bound"


@dataclass(frozen=True)
class RenyiAuditResult:
    """Outcome of testing a certified Rényi curve against a histogram lower-bound curve.

    ``violation`` is True when some order has a lower bound above the certified value; the
    claim is then refuted at level 1 - ``curve.confidence``. ``certified`` lists eps(alpha) on
    ``curve.orders``; ``violating_orders`` the orders where a lower bound exceeds it.
    """

    violation: bool
    violating_orders: tuple[float, ...]
    certified: tuple[float, ...]
    two_sided: bool
    curve: RenyiLowerBoundCurve
    n_pilot_p: int
    n_pilot_q: int
    choice: DirectedChoice | None = None


# ----------------------------------------------------------------------------------------------
# Boxes.


def _as_scores(scores, name: str) -> np.ndarray:
    array = as_scores(scores, name)
    if array.size < 2:
        raise ValueError(f"{name} needs at least 2 scores, got {array.size}")
    return array


def _check_beta(beta: float) -> float:
    return check_probability(beta, "beta", open_low=True, open_high=True)


def _check_edges(edges: Sequence[float]) -> np.ndarray:
    array = np.asarray(edges, dtype=np.float64)
    if array.ndim != 1 or array.size < 1 or not np.all(np.isfinite(array)):
        raise ValueError("edges must be a non-empty 1-D array of finite numbers")
    if np.any(np.diff(array) <= 0):
        raise ValueError("edges must be strictly increasing")
    return array


def bin_counts(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts in the B = len(edges) + 1 bins (-inf, e_0), [e_0, e_1), ..., [e_last, inf)."""
    return np.bincount(np.searchsorted(edges, scores, side="right"), minlength=edges.size + 1)


def simultaneous_boxes(counts: np.ndarray, *, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper-Pearson intervals for every bin probability, each tail at ``gamma``.

    With n = sum(counts), each p_j escapes its interval with probability <= 2 gamma (Clopper and
    Pearson 1934); a union bound over bins gives the simultaneous level.
    """
    counts = np.asarray(counts)
    n = int(counts.sum())
    return clopper_pearson_lower(counts, n, gamma), clopper_pearson_upper(counts, n, gamma)


# ----------------------------------------------------------------------------------------------
# The dual bound.


def _log_terms(log_p: np.ndarray, log_q: np.ndarray, order: float, scale: float) -> np.ndarray:
    """e^{-scale} p^order q^(1-order), computed from logarithms (p = 0 gives 0; q = 0 < p gives
    +inf; overflow gives +inf, never NaN). Callers silence floating-point warnings."""
    out = np.exp(order * log_p + (1.0 - order) * log_q - scale)
    out = np.where(log_p == -np.inf, 0.0, out)
    return np.where(np.isnan(out), np.inf, out)


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(x)


def _log_quiet(x: np.ndarray) -> np.ndarray:
    return np.log(x)  # inside the dual, under the caller's np.errstate


@dataclass(frozen=True)
class _Boxes:
    """Both boxes of one dual problem and their logarithms, stacked per edge: the edges with q
    fixed at (q_lo, q_hi) and those with p fixed at (p_lo, p_hi)."""

    p_lo: np.ndarray
    p_hi: np.ndarray
    q_fixed: np.ndarray  # [2, B]: q_lo, q_hi
    p_fixed: np.ndarray  # [2, B]: p_lo, p_hi
    q_lo: np.ndarray
    q_hi: np.ndarray
    log_q_fixed: np.ndarray
    log_p_fixed: np.ndarray

    @classmethod
    def of(cls, box_p, box_q) -> _Boxes:
        p_lo, p_hi = box_p
        q_lo, q_hi = box_q
        q_fixed = np.stack([q_lo, q_hi])
        p_fixed = np.stack([p_lo, p_hi])
        return cls(p_lo, p_hi, q_fixed, p_fixed, q_lo, q_hi, _log(q_fixed), _log(p_fixed))


def _dual_value(lam: float, nu: float, boxes: _Boxes, order: float, scale: float) -> float:
    """g(lam, nu) for the scaled objective e^{-scale} F: a lower bound on min e^{-scale} F over
    (box_P ∩ simplex) x (box_Q ∩ simplex) (module docstring; the scale keeps large orders in
    range: the bound on F is e^scale times the value). Call under np.errstate(all="ignore")."""
    # Edges with q fixed: h is convex in p with stationary point
    # log p* = log q + (log(-lam) + scale - log(order)) / (order - 1) when lam < 0.
    if lam < 0:  # and -lam e^scale / order > 0
        shift = (math.log(-lam) + scale - math.log(order)) / (order - 1.0)
        p_star = np.exp(np.minimum(boxes.log_q_fixed + shift, 700.0))
    else:
        p_star = np.zeros_like(boxes.q_fixed)
    p = np.clip(p_star, boxes.p_lo, boxes.p_hi)
    first = _log_terms(_log_quiet(p), boxes.log_q_fixed, order, scale) + lam * p + nu * boxes.q_fixed
    # Edges with p fixed: h is convex in q > 0 with stationary point
    # log q* = (log(order - 1) - scale + order log p - log(nu)) / order when nu > 0.
    if nu > 0:
        q_star = np.exp(np.minimum((math.log(order - 1.0) - scale + order * boxes.log_p_fixed
                                    - math.log(nu)) / order, 700.0))
    else:
        q_star = np.full_like(boxes.p_fixed, np.inf)
    q = np.clip(q_star, boxes.q_lo, boxes.q_hi)
    second = _log_terms(boxes.log_p_fixed, _log_quiet(q), order, scale) + lam * boxes.p_fixed + nu * q
    per_bin = np.minimum(first.min(axis=0), second.min(axis=0))
    return float(np.sum(per_bin) - lam - nu)


def _renyi_from_probabilities(p: np.ndarray, q: np.ndarray, order: float) -> float:
    """D_order(p || q) of two probability vectors, from logarithms (no overflow at large
    orders): log sum_j p_j^order q_j^(1 - order) / (order - 1)."""
    keep = p > 0
    if np.any(q[keep] <= 0):
        return math.inf
    exponents = order * np.log(p[keep]) + (1.0 - order) * np.log(q[keep])
    top = float(exponents.max())
    return (top + math.log(float(np.sum(np.exp(exponents - top))))) / (order - 1.0)


def _corner_scale(boxes: _Boxes, order: float) -> float:
    """A rough log-size of F over the boxes (each bin's smallest corner term, summed in log
    space), to start the dual where e^{-scale} F is of order one."""
    with np.errstate(invalid="ignore"):
        corners = np.stack([order * lp + (1.0 - order) * lq
                            for lp in boxes.log_p_fixed for lq in boxes.log_q_fixed])
    smallest = np.where(np.isnan(corners), -np.inf, corners).min(axis=0)  # p = 0: a zero term
    finite = smallest[np.isfinite(smallest)]
    if finite.size == 0:
        return 0.0
    top = float(finite.max())
    return top + math.log(float(np.sum(np.exp(finite - top))))


def histogram_renyi_lower_bound(box_p, box_q, *, order: float) -> float:
    """Valid lower bound on min D_order(p || q) over p in box_p ∩ simplex, q in box_q ∩ simplex.

    Weak duality (module docstring), evaluated in log space: with a scale s, every (lam, nu)
    gives min F >= e^s g_s(lam, nu), where g_s is the dual of e^{-s} F. Nelder-Mead starts from
    the multipliers of the unconstrained optimum p = q, (-order, order - 1), at s = 0; when that
    finds no positive value (large orders overflow there) it restarts at a scale read off the
    boxes' corners, and a positive value far from 1 is refined at the scale it indicates (the
    multipliers rescaled with it, so the value carries over). Every iterate of every pass is a
    valid bound; the largest is returned, 0 when none shows F > 1 (D_alpha >= 0 always holds).
    """
    order = float(order)
    if not (math.isfinite(order) and order > 1.0):
        raise ValueError(f"the Rényi order must be finite and > 1, got {order!r}")
    boxes = _Boxes.of(tuple(np.asarray(b, dtype=np.float64) for b in box_p),
                      tuple(np.asarray(b, dtype=np.float64) for b in box_q))
    best_log = -math.inf  # log of the best lower bound on min F found so far
    best_at: tuple[float, np.ndarray] | None = None

    def run(scale: float, start: np.ndarray) -> None:
        nonlocal best_log, best_at

        def negative_dual(x: np.ndarray) -> float:
            nonlocal best_log, best_at
            value = _dual_value(float(x[0]), float(x[1]), boxes, order, scale)
            if not math.isfinite(value):
                return 1e300
            if value > 0 and scale + math.log(value) > best_log:
                best_log, best_at = scale + math.log(value), (scale, np.array(x, dtype=float))
            return -value

        from scipy import optimize  # here: its import is heavy (~23 MB) and few audits need it

        # Nelder-Mead on the concave, piecewise-smooth dual; tolerances far below the resolution
        # that matters for a divergence bound. A restart from its optimum guards against an
        # early stall.
        with np.errstate(all="ignore"):
            result = optimize.minimize(negative_dual, start, method="Nelder-Mead",
                                       options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 1000})
            optimize.minimize(negative_dual, result.x, method="Nelder-Mead",
                              options={"xatol": 1e-8, "fatol": 1e-11, "maxiter": 400,
                                       "initial_simplex": result.x + np.array([[0, 0], [1e-3, 0],
                                                                               [0, 1e-3]])})

    start = np.array([-order, order - 1.0])
    run(0.0, start)
    if best_at is None:
        run(_corner_scale(boxes, order), start)
    if best_at is not None and abs(best_log - best_at[0]) > _RESCALE_AT:
        scale, x = best_at
        run(best_log, x * math.exp(scale - best_log))
    floor = best_log + math.log1p(-_ROUNDING_SHRINK)
    if not (floor > 0.0):
        return 0.0
    return floor / (order - 1.0)


def _curve(counts_p, counts_q, *, orders: Sequence[float], beta: float,
           edges: np.ndarray) -> RenyiLowerBoundCurve:
    n_bins = counts_p.size
    gamma = beta / (4 * n_bins)  # two tails x two worlds x bins
    box_p = simultaneous_boxes(counts_p, gamma=gamma)
    box_q = simultaneous_boxes(counts_q, gamma=gamma)
    freq_p, freq_q = counts_p / counts_p.sum(), counts_q / counts_q.sum()
    forward, backward, est_f, est_b = [], [], [], []
    for order in orders:
        forward.append(histogram_renyi_lower_bound(box_p, box_q, order=order))
        backward.append(histogram_renyi_lower_bound(box_q, box_p, order=order))
        est_f.append(_renyi_from_probabilities(freq_p, freq_q, order))
        est_b.append(_renyi_from_probabilities(freq_q, freq_p, order))
    return RenyiLowerBoundCurve(
        orders=tuple(float(a) for a in orders),
        forward=tuple(forward),
        backward=tuple(backward),
        estimate_forward=tuple(est_f),
        estimate_backward=tuple(est_b),
        confidence=1.0 - beta,
        edges=tuple(float(e) for e in edges),
        counts_p=tuple(int(c) for c in counts_p),
        counts_q=tuple(int(c) for c in counts_q),
    )


# ----------------------------------------------------------------------------------------------
# Pilot bins and the audit.


def pilot_bin_edges(pilot_p, pilot_q, *, levels: Sequence[float] = DEFAULT_TAIL_LEVELS) -> np.ndarray:
    """Bin edges at quantiles of the pooled pilot scores (duplicates merged).

    Only the pilot is looked at, so edges are independent of the tested scores.
    """
    pooled = np.concatenate([_as_scores(pilot_p, "pilot_p"), _as_scores(pilot_q, "pilot_q")])
    levels = np.asarray(levels, dtype=np.float64)
    if levels.ndim != 1 or np.any((levels <= 0) | (levels >= 1)):
        raise ValueError("levels must be quantile levels strictly between 0 and 1")
    edges = np.unique(np.quantile(pooled, np.sort(levels)))
    return edges


def renyi_lower_bound_curve(
    scores_p, scores_q, *, edges: Sequence[float], orders: Sequence[float] = DEFAULT_ORDERS,
    beta: float = 0.05,
) -> RenyiLowerBoundCurve:
    """Lower confidence bounds on D_alpha of the binned laws, for bins fixed in advance.

    ``edges`` must not depend on ``scores_p`` / ``scores_q`` (use a pilot); the curve then
    holds with probability >= 1 - beta for every order and both directions together.
    """
    p = _as_scores(scores_p, "scores_p")
    q = _as_scores(scores_q, "scores_q")
    edges = _check_edges(edges)
    beta = _check_beta(beta)
    orders = tuple(float(a) for a in orders)
    if not orders or any(not (math.isfinite(a) and a > 1.0) for a in orders):
        raise ValueError("orders must be a non-empty list of finite Rényi orders > 1")
    return _curve(bin_counts(p, edges), bin_counts(q, edges), orders=orders, beta=beta, edges=edges)


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
    beta = _check_beta(beta)
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
    predicted lower bound minus the certified value (a pilot forecast, not a bound)."""

    direction: str
    order: float
    edges: tuple[float, ...]
    g: tuple[float, ...]
    lam_first: float
    lam_second: float
    predicted_margin: float


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
    return a - b - _ROUNDING_SHRINK * (1.0 + abs(a) + abs(b))


def _smoothed_log_ratio(pooled: np.ndarray, edges: np.ndarray, g: np.ndarray, cp: np.ndarray,
                        cq: np.ndarray) -> np.ndarray:
    """The bins' log-ratios ``g`` smoothed by a weighted polynomial fit in the bins' median
    pooled pilot score (weights: inverse variances of the smoothed log-ratios). Any g is
    valid; this one is less noisy where the log-ratio is smooth in the score."""
    index = bin_counts(pooled, edges)  # to find bins holding pilot scores
    where = np.searchsorted(edges, pooled, side="right")
    centres = np.array([np.median(pooled[where == j]) if index[j] else np.nan
                        for j in range(edges.size + 1)])
    known = np.isfinite(centres)
    degree = min(_DIRECTED_SMOOTH_DEGREE, int(known.sum()) - 1)
    if degree < 1:
        return g
    weights = 1.0 / np.sqrt(1.0 / (cp + _DIRECTED_SMOOTHING) + 1.0 / (cq + _DIRECTED_SMOOTHING))
    scale = float(np.std(centres[known])) or 1.0
    x = (centres - float(np.mean(centres[known]))) / scale
    coef = np.polyfit(x[known], g[known], degree, w=weights[known])
    out = np.polyval(coef, np.where(known, x, 0.0))
    return np.where(known, out, g)


def choose_directed(pilot_p, pilot_q, *, certified: Callable[[float], float],
                    orders: Sequence[float], two_sided: bool, beta: float, n_p: int,
                    n_q: int) -> DirectedChoice:
    """Choose the directed test on a pilot (module docstring, (3)); ``n_p``, ``n_q`` are the
    tested sample sizes the forecast is made for. Uses only the pilot."""
    p = _as_scores(pilot_p, "pilot_p")
    q = _as_scores(pilot_q, "pilot_q")
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
    candidates = []
    for g_one in fits:
        candidates.append(("forward", g_one, freq_p, freq_q, n_p, n_q))
        if two_sided:
            candidates.append(("backward", -g_one, freq_q, freq_p, n_q, n_p))
    z_log = math.log(2.0 / beta)
    best: DirectedChoice | None = None
    best_score = -math.inf
    for direction, g_dir, f_first, f_second, n_first, n_second in candidates:
        pooled_freq = 0.5 * (f_first + f_second)
        order_g = np.argsort(g_dir)
        cum = np.cumsum(pooled_freq[order_g])
        for clip in _DIRECTED_CLIPS:
            if clip > 0:  # g clipped at the pooled evaluation quantiles clip and 1 - clip
                lo = float(g_dir[order_g][min(np.searchsorted(cum, clip), bins - 1)])
                hi = float(g_dir[order_g][min(np.searchsorted(cum, 1 - clip), bins - 1)])
                if not hi > lo:
                    continue
                g = np.clip(g_dir, lo, hi)
            else:
                g = g_dir
            if not np.ptp(g) > 0:
                continue
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
    return best


def directed_lower_bound(choice: DirectedChoice, counts_p, counts_q, *, beta: float) -> float:
    """Lower confidence bound at level 1 - beta on D_order of the chosen direction from tested
    bin counts (module docstring, (1)-(2)); 0 when the bound shows nothing."""
    beta = _check_beta(beta)
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


def _directed_curve(p: np.ndarray, q: np.ndarray, choice: DirectedChoice, *,
                    orders: Sequence[float], beta: float) -> RenyiLowerBoundCurve:
    edges = np.asarray(choice.edges, dtype=np.float64)
    counts_p, counts_q = bin_counts(p, edges), bin_counts(q, edges)
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
        estimate_forward=tuple(_renyi_from_probabilities(freq_p, freq_q, a) for a in orders),
        estimate_backward=tuple(_renyi_from_probabilities(freq_q, freq_p, a) for a in orders),
        confidence=1.0 - beta,
        edges=choice.edges,
        counts_p=tuple(int(c) for c in counts_p),
        counts_q=tuple(int(c) for c in counts_q),
        method=(f"directed: Hölder bound D_alpha >= alpha/(alpha-1) log E_P e^((alpha-1) g) - "
                f"log E_Q e^(alpha g) with g, the {choice.direction} direction and order "
                f"{choice.order:g} chosen on a pilot; betting confidence bounds on both means "
                "(one joint region per world)"),
    )


def renyi_audit(
    scores_p,
    scores_q,
    *,
    certified: Callable[[float], float],
    two_sided: bool = True,
    orders: Sequence[float] = DEFAULT_ORDERS,
    beta: float = 0.05,
    pilot_fraction: float = 0.2,
    levels: Sequence[float] = DEFAULT_TAIL_LEVELS,
    seed: int = 0,
    stop_at_violation: bool = False,
    method: str = "directed",
    rows=None,
) -> RenyiAuditResult:
    """Test a certified Rényi curve alpha -> eps(alpha) against attack scores of two worlds.

    ``scores_p`` / ``scores_q`` are i.i.d. scores of the two worlds (e.g. unlearned and
    retrained). A random ``pilot_fraction`` of each (one permutation of the trials drawn from
    ``seed``, never from the scores, so paired trials stay on the same side of the split) fixes
    the bins and is discarded; the rest gives the simultaneous lower-bound
    curve. ``two_sided=True`` means the certificate caps both D(P || Q) and D(Q || P) (a
    Rényi difference as in Chien et al. 2024, Def. 2.1); then both directions are tested, else
    only D(P || Q). VIOLATION: some lower bound exceeds eps(alpha); the claim is refuted with
    probability of a false alarm <= beta (data-processing inequality + simultaneous boxes).
    ``method="directed"`` (the default) runs the directed test of the module docstring: one
    bound at one order and direction chosen on the pilot, with the whole level ``beta``
    (``levels`` is then unused: the pilot chooses its own bins). ``method="boxes"`` runs the
    simultaneous-box curve over every order; there ``stop_at_violation=True`` evaluates the
    orders one at a time and stops at the first violating one (the curve then holds only the
    orders evaluated): the verdict is the same, for callers that only need it. ``rows``, when
    given, is the split instead of one drawn from ``seed``: a permutation of the row indices
    drawn independently of the scores, whose first ``pilot_fraction`` of each side is the pilot
    (:func:`~empirical.statistics.checks.split_order`).
    """
    p = _as_scores(scores_p, "scores_p")
    q = _as_scores(scores_q, "scores_q")
    if not (0.0 < pilot_fraction < 1.0):
        raise ValueError(f"pilot_fraction must lie in (0, 1), got {pilot_fraction!r}")
    order_p, order_q = split_order(rows, p.size, q.size, seed=seed)
    p, q = p[order_p], q[order_q]
    n_pp, n_pq = int(round(pilot_fraction * p.size)), int(round(pilot_fraction * q.size))
    if min(n_pp, n_pq) < 2 or n_pp >= p.size - 1 or n_pq >= q.size - 1:
        raise ValueError("pilot_fraction leaves too few pilot or tested scores")
    if method not in ("directed", "boxes"):
        raise ValueError(f"method must be 'directed' or 'boxes', got {method!r}")
    orders = tuple(float(a) for a in orders)
    if not orders or any(not (math.isfinite(a) and a > 1.0) for a in orders):
        raise ValueError("orders must be a non-empty list of finite Rényi orders > 1")
    if method == "directed":
        beta = _check_beta(beta)
        choice = choose_directed(p[:n_pp], q[:n_pq], certified=certified, orders=orders,
                                 two_sided=two_sided, beta=beta, n_p=p.size - n_pp,
                                 n_q=q.size - n_pq)
        curve = _directed_curve(p[n_pp:], q[n_pq:], choice, orders=orders, beta=beta)
        certified_values = tuple(float(certified(a)) for a in curve.orders)
        violating = tuple(
            a for a, fwd, bwd, c in zip(curve.orders, curve.forward, curve.backward,
                                        certified_values, strict=True)
            if fwd > c or (two_sided and bwd > c))
        return RenyiAuditResult(violation=bool(violating), violating_orders=violating,
                                certified=certified_values, two_sided=two_sided, curve=curve,
                                n_pilot_p=n_pp, n_pilot_q=n_pq, choice=choice)
    edges = pilot_bin_edges(p[:n_pp], q[:n_pq], levels=levels)

    def violating_orders(curve: RenyiLowerBoundCurve) -> tuple[float, ...]:
        return tuple(
            a for a, fwd, bwd in zip(curve.orders, curve.forward, curve.backward, strict=True)
            if fwd > float(certified(a)) or (two_sided and bwd > float(certified(a)))
        )

    if stop_at_violation:
        parts: list[RenyiLowerBoundCurve] = []
        for order in orders:
            parts.append(renyi_lower_bound_curve(p[n_pp:], q[n_pq:], edges=edges,
                                                 orders=[order], beta=beta))
            if violating_orders(parts[-1]):
                break
        curve = dataclasses.replace(parts[0], **{
            name: tuple(v for part in parts for v in getattr(part, name))
            for name in ("orders", "forward", "backward", "estimate_forward",
                         "estimate_backward")})
    else:
        curve = renyi_lower_bound_curve(p[n_pp:], q[n_pq:], edges=edges, orders=orders,
                                        beta=beta)
    certified_values = tuple(float(certified(a)) for a in curve.orders)
    violating = violating_orders(curve)
    return RenyiAuditResult(
        violation=bool(violating),
        violating_orders=violating,
        certified=certified_values,
        two_sided=two_sided,
        curve=curve,
        n_pilot_p=n_pp,
        n_pilot_q=n_pq,
    )


def _normal_renyi(m1: float, s1: float, m2: float, s2: float, order: float) -> float:
    """D_order(N(m1, s1^2) || N(m2, s2^2)) in closed form (Gil, Alajaji, Linder 2013, Table 2);
    +inf where order s2^2 + (1 - order) s1^2 <= 0."""
    mixed = order * s2 * s2 + (1.0 - order) * s1 * s1
    if not mixed > 0:
        return math.inf
    return (math.log(s2 / s1) + math.log(s2 * s2 / mixed) / (2.0 * (order - 1.0))
            + order * (m1 - m2) ** 2 / (2.0 * mixed))


def gaussian_fit_excess(pilot_p, pilot_q, *, certified: Callable[[float], float],
                        orders: Sequence[float], two_sided: bool) -> float:
    """max over ``orders`` (and both directions when ``two_sided``) of D_alpha between normal
    fits of the two pilots minus ``certified(alpha)``: a forecast of how far the score laws
    exceed the certified curve, read off the pilot alone (no validity claimed; the histogram
    test shows at most the binned divergence, so a negative excess predicts that it cannot
    reject when the normal fits are right)."""
    p = _as_scores(pilot_p, "pilot_p")
    q = _as_scores(pilot_q, "pilot_q")
    scale = max(1.0, float(np.max(np.abs(p))), float(np.max(np.abs(q))))
    floor = 1e-12 * scale  # a constant pilot: a near point mass, not a division by zero
    m1, s1 = float(np.mean(p)), max(float(np.std(p, ddof=1)), floor)
    m2, s2 = float(np.mean(q)), max(float(np.std(q, ddof=1)), floor)
    excess = -math.inf
    for order in orders:
        order = float(order)
        values = [_normal_renyi(m1, s1, m2, s2, order)]
        if two_sided:
            values.append(_normal_renyi(m2, s2, m1, s1, order))
        excess = max(excess, max(values) - float(certified(order)))
    return excess


def max_renyi_lower_bound(
    *, n_p: int, n_q: int, n_bins: int = len(DEFAULT_TAIL_LEVELS) + 1,
    orders: Sequence[float] = DEFAULT_ORDERS, beta: float = 0.05,
) -> tuple[float, ...]:
    """The largest D_alpha lower bound the histogram test can show with these sample sizes.

    Defined as the lower bound :func:`renyi_lower_bound_curve` gives for perfectly separated
    scores: all ``n_p`` tested scores of one world in one bin and all ``n_q`` of the other world
    in another (the boxes are then as far apart as counts can put them). This is the definition
    of the test's reach used for INCONCLUSIVE verdicts (the natural extreme; a proof that no other
    count vector gives more is not claimed, tests check observed curves stay below it): when it
    stays below the certified eps(alpha) at every order, the test could not refute the
    certificate. One value per order (the
    forward direction; by symmetry of the separated counts the backward one is the same when
    n_p = n_q).
    """
    if n_p < 1 or n_q < 1:
        raise ValueError(f"sample sizes must be >= 1, got {n_p}, {n_q}")
    if n_bins < 2:
        raise ValueError(f"at least 2 bins are needed, got {n_bins}")
    beta = _check_beta(beta)
    counts_p = np.zeros(n_bins, dtype=np.int64)
    counts_q = np.zeros(n_bins, dtype=np.int64)
    counts_p[0], counts_q[-1] = n_p, n_q
    gamma = beta / (4 * n_bins)
    box_p = simultaneous_boxes(counts_p, gamma=gamma)
    box_q = simultaneous_boxes(counts_q, gamma=gamma)
    return tuple(histogram_renyi_lower_bound(box_p, box_q, order=float(a)) for a in orders)
