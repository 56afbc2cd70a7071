"""The histogram Rényi test: simultaneous boxes on bin probabilities and a dual lower bound.

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
pilot sample that :func:`~empirical.divergences.renyi_tests.renyi_audit` then discards (a random
split of i.i.d. trials, so the tested part is independent of the edges).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from empirical.statistics.checks import as_scores, check_probability
from empirical.statistics.thresholds import clopper_pearson_lower, clopper_pearson_upper

__all__ = [
    "DEFAULT_ORDERS",
    "DEFAULT_TAIL_LEVELS",
    "ROUNDING_SHRINK",
    "RenyiLowerBoundCurve",
    "as_score_sample",
    "bin_counts",
    "check_beta",
    "histogram_renyi_lower_bound",
    "pilot_bin_edges",
    "renyi_from_probabilities",
    "renyi_lower_bound_curve",
    "simultaneous_boxes",
]

# Orders near 1 carry most of the power against a noise shortfall on score histograms (the tails
# that large orders need are cut by the bins); larger ones catch heavy-tailed leaks.
DEFAULT_ORDERS: tuple[float, ...] = (1.02, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0)

# Pooled-pilot quantile levels of the bin edges: both tails resolved to 1%, few enough bins (9)
# that the Bonferroni correction stays mild (chosen on Gaussian pilots, see power_bench).
DEFAULT_TAIL_LEVELS: tuple[float, ...] = (0.01, 0.05, 0.15, 0.35, 0.65, 0.85, 0.95, 0.99)

ROUNDING_SHRINK = 1e-9
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


# ----------------------------------------------------------------------------------------------
# Boxes.


def as_score_sample(scores, name: str) -> np.ndarray:
    """``scores`` as a 1-D float array of at least two finite scores."""
    array = as_scores(scores, name)
    if array.size < 2:
        raise ValueError(f"{name} needs at least 2 scores, got {array.size}")
    return array


def check_beta(beta: float) -> float:
    """``beta`` as a level strictly between 0 and 1."""
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


def renyi_from_probabilities(p: np.ndarray, q: np.ndarray, order: float) -> float:
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
    floor = best_log + math.log1p(-ROUNDING_SHRINK)
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
        est_f.append(renyi_from_probabilities(freq_p, freq_q, order))
        est_b.append(renyi_from_probabilities(freq_q, freq_p, order))
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
    pooled = np.concatenate([as_score_sample(pilot_p, "pilot_p"), as_score_sample(pilot_q, "pilot_q")])
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
    p = as_score_sample(scores_p, "scores_p")
    q = as_score_sample(scores_q, "scores_q")
    edges = _check_edges(edges)
    beta = check_beta(beta)
    orders = tuple(float(a) for a in orders)
    if not orders or any(not (math.isfinite(a) and a > 1.0) for a in orders):
        raise ValueError("orders must be a non-empty list of finite Rényi orders > 1")
    return _curve(bin_counts(p, edges), bin_counts(q, edges), orders=orders, beta=beta, edges=edges)
