"""Rényi and hockey-stick divergences between two grid laws, atoms included.

Both laws are read as discrete measures on the union of their supports (the shared grid's points
with their quadrature weights, and every atom of either law), each normalised to mass 1 so that
the quadrature's error in the total mass does not enter a divergence to first order. Then

* D_alpha(P || Q) = log(sum_i q_i (p_i/q_i)^alpha) / (alpha - 1), infinite when P puts mass
  where Q has none; near P = Q it is computed as log1p(sum_i q_i g(log p_i/q_i)) / (alpha - 1)
  with g(u) = expm1(alpha u) - alpha expm1(u) >= 0 (sum q_i (r_i - 1) = 0 exactly for
  normalised laws), so a tiny divergence is not lost to cancellation;
* H_eps(P || Q) = sum_i (p_i - e^eps q_i)_+, and the smallest eps >= 0 with H_eps <= delta is
  solved exactly for the discrete measures (H is piecewise e^eps-linear between the sorted
  log ratios).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq
from scipy.special import logsumexp

from empirical.exact_laws.grid import Grid, GridLaw

__all__ = ["aligned_log_masses", "epsilon_at_delta", "hockey_stick", "renyi_divergence"]


def aligned_log_masses(p: GridLaw, q: GridLaw, *, refine: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Normalised log masses of ``p`` and ``q`` on the union of their supports; ``refine`` > 1
    first interpolates both log densities (cubic splines; they are smooth) onto a grid
    ``refine`` times finer, which a kinked integrand such as (p - e^eps q)_+ needs."""
    if p.grid != q.grid:
        raise ValueError("the two laws must live on one grid")
    if refine > 1:
        p, q = _interpolated(p, refine), _interpolated(q, refine)
    positions = np.union1d(p.atom_positions, q.atom_positions)

    def atoms(law: GridLaw) -> np.ndarray:
        out = np.full(positions.size, -np.inf)
        out[np.searchsorted(positions, law.atom_positions)] = law.atom_log_masses
        return out

    lw = p.grid.log_weights
    lp = np.concatenate([lw + p.log_density, atoms(p)])
    lq = np.concatenate([lw + q.log_density, atoms(q)])
    return lp - logsumexp(lp), lq - logsumexp(lq)


def _interpolated(law: GridLaw, factor: int) -> GridLaw:
    """``law`` with its log density interpolated onto a grid ``factor`` times finer."""
    grid = law.grid
    fine = Grid(grid.lo, grid.hi, (grid.size - 1) * factor + 1, grid.bounded)
    finite = np.isfinite(law.log_density)
    if not np.all(finite):
        if np.any(finite):
            raise ValueError("interpolation needs a density positive on the whole grid")
        return GridLaw(fine, np.full(fine.size, -np.inf), law.atom_positions,
                       law.atom_log_masses, law.lost)
    spline = CubicSpline(grid.points, law.log_density)
    return GridLaw(fine, spline(fine.points), law.atom_positions, law.atom_log_masses, law.lost)


def _g(u: np.ndarray, alpha: float) -> np.ndarray:
    """expm1(alpha u) - alpha expm1(u), by its series where alpha |u| is small."""
    small = np.abs(alpha * u) < 1e-3
    out = np.expm1(alpha * u) - alpha * np.expm1(u)
    us = u[small]
    out[small] = (us**2 * (alpha**2 - alpha) / 2 + us**3 * (alpha**3 - alpha) / 6
                  + us**4 * (alpha**4 - alpha) / 24)
    return out


def renyi_divergence(p: GridLaw, q: GridLaw, alpha: float) -> float:
    """D_alpha(p || q) for alpha > 1 (inf where p has mass that q has not)."""
    if not alpha > 1:
        raise ValueError(f"the order must be > 1, got {alpha!r}")
    lp, lq = aligned_log_masses(p, q)
    support = np.isfinite(lp)
    if np.any(support & ~np.isfinite(lq)):
        return math.inf
    lp, lq = lp[support], lq[support]
    log_sum = float(logsumexp(alpha * lp + (1 - alpha) * lq))
    value = log_sum / (alpha - 1)
    if value > 1e-3 or not math.isfinite(value):
        return max(value, 0.0)
    # Near p = q: the sum of q g(log r) over q's support (terms where p = 0 add q (alpha - 1)).
    lq_all = aligned_log_masses(p, q)[1]
    outside = float(np.exp(logsumexp(lq_all[~support]))) if np.any(~support) else 0.0
    s = float(np.sum(np.exp(lq) * _g(lp - lq, alpha))) + (alpha - 1) * outside
    return math.log1p(max(s, 0.0)) / (alpha - 1)


HOCKEY_STICK_REFINE = 8


@dataclass(frozen=True)
class _SplinePair:
    """Both laws' normalised densities as cubic splines on the shared grid, the spline of
    their log ratio (for the crossings), and their atoms on the union of positions."""

    density_p: CubicSpline
    density_q: CubicSpline
    log_ratio: CubicSpline
    atoms_p: np.ndarray
    atoms_q: np.ndarray
    lo: float
    hi: float

    def hockey_stick(self, epsilon: float) -> float:
        """Atoms' (p_a - e^eps q_a)_+ plus the integral of (p - e^eps q)_+ over the grid, the
        pieces between the crossings of log(p/q) = eps integrated exactly on the splines."""
        scale = math.exp(epsilon)
        atoms = self.atoms_p - scale * self.atoms_q
        total = float(np.sum(atoms[atoms > 0]))
        cuts = np.concatenate([[self.lo], self._crossings(epsilon), [self.hi]])
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if b <= a or float(self.log_ratio((a + b) / 2)) <= epsilon:
                continue
            part = float(self.density_p.integrate(a, b)) - scale * float(
                self.density_q.integrate(a, b))
            total += max(part, 0.0)
        return total


    def _crossings(self, level: float) -> np.ndarray:
        """The x where the log-ratio spline crosses ``level``: one root per knot interval whose
        ends straddle it (a pair of crossings inside one interval, O(h^4) of mass, is not
        resolved)."""
        knots = self.log_ratio.x
        gap = self.log_ratio(knots) - level
        roots = list(knots[gap == 0])
        for i in np.nonzero(gap[:-1] * gap[1:] < 0)[0]:
            roots.append(brentq(lambda v: float(self.log_ratio(v)) - level, knots[i],
                                knots[i + 1], xtol=1e-15, rtol=1e-15))
        return np.sort(np.asarray(roots, dtype=float))


def _spline_pair(p: GridLaw, q: GridLaw) -> _SplinePair | None:
    """The spline form of (p, q), or None where a density vanishes somewhere on the grid (the
    discrete form is used there)."""
    if p.grid != q.grid:
        raise ValueError("the two laws must live on one grid")
    if not (np.all(np.isfinite(p.log_density)) and np.all(np.isfinite(q.log_density))):
        return None
    positions = np.union1d(p.atom_positions, q.atom_positions)
    lw = p.grid.log_weights
    x = p.grid.points

    def parts(law: GridLaw) -> tuple[np.ndarray, np.ndarray, float]:
        atoms = np.full(positions.size, -np.inf)
        atoms[np.searchsorted(positions, law.atom_positions)] = law.atom_log_masses
        norm = float(logsumexp(np.concatenate([lw + law.log_density, atoms])))
        return law.log_density - norm, atoms - norm, norm

    dp, ap, _ = parts(p)
    dq, aq, _ = parts(q)
    return _SplinePair(CubicSpline(x, np.exp(dp)), CubicSpline(x, np.exp(dq)),
                       CubicSpline(x, dp - dq), np.exp(ap), np.exp(aq), float(x[0]),
                       float(x[-1]))


def hockey_stick(p: GridLaw, q: GridLaw, epsilon: float, *,
                 refine: int = HOCKEY_STICK_REFINE) -> float:
    """H_eps(p || q): on the splines of the two densities where both are positive on the grid,
    else sum (p_i - e^eps q_i)_+ of the discrete measures (the log densities interpolated
    ``refine`` times finer first)."""
    pair = _spline_pair(p, q)
    if pair is not None:
        return pair.hockey_stick(epsilon)
    lp, lq = aligned_log_masses(p, q, refine=refine)
    terms = np.exp(lp) - np.exp(epsilon + lq)
    return float(np.sum(terms[terms > 0]))


def epsilon_at_delta(p: GridLaw, q: GridLaw, delta: float, *,
                     refine: int = HOCKEY_STICK_REFINE) -> float:
    """The smallest eps >= 0 with H_eps(p || q) <= delta (inf when no finite eps reaches it):
    solved on the splines (:func:`hockey_stick`) where both densities are positive on the grid,
    else exactly for the discrete measures (log densities interpolated ``refine`` times finer)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    discrete = _discrete_epsilon(p, q, delta, refine)
    pair = _spline_pair(p, q)
    if pair is None or math.isinf(discrete):
        return discrete
    if pair.hockey_stick(0.0) <= delta:
        return 0.0
    hi = max(discrete, 1e-3)
    while pair.hockey_stick(hi) > delta:
        hi *= 2
        if hi > 1e4:
            return math.inf
    return float(brentq(lambda e: pair.hockey_stick(e) - delta, 0.0, hi, xtol=1e-14,
                        rtol=1e-14, maxiter=200))


def _discrete_epsilon(p: GridLaw, q: GridLaw, delta: float, refine: int) -> float:
    """:func:`epsilon_at_delta` of the discrete measures."""
    lp, lq = aligned_log_masses(p, q, refine=refine)
    keep = np.isfinite(lp)
    lp, lq = lp[keep], lq[keep]
    ratio = lp - lq  # +inf where q has no mass: that mass counts at every eps
    infinite = np.isinf(ratio)
    p_inf = float(np.sum(np.exp(lp[infinite])))
    if p_inf > delta:
        return math.inf
    positive = ~infinite & (ratio > 0)
    r = np.sort(ratio[positive])[::-1]
    order = np.argsort(-ratio[positive], kind="stable")
    cum_p = p_inf + np.concatenate([[0.0], np.cumsum(np.exp(lp[positive][order]))])
    cum_q = np.concatenate([[0.0], np.cumsum(np.exp(lq[positive][order]))])
    # H at the breakpoints r_0 > r_1 > ... > 0, then at eps = 0; H(eps) on (r_k, r_{k-1}] is
    # cum_p[k] - e^eps cum_q[k].
    breaks = np.concatenate([r, [0.0]])
    h = cum_p - np.exp(breaks) * cum_q
    above = np.nonzero(h > delta)[0]
    if above.size == 0:
        return 0.0
    k = int(above[0])
    if k == 0:
        return math.inf  # pragma: no cover - p_inf > delta was returned above
    return max(math.log((cum_p[k] - delta) / cum_q[k]), float(breaks[k]))
