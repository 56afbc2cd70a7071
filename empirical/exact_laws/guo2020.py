"""Exact laws of Newton removal with loss perturbation (Guo et al. 2020, Algorithms 1 and 2) on a
one-dimensional logistic model, by change of variables.

Training minimises L_b(w; D) = sum_i l_i(w) + (lambda n / 2) w^2 + b w with b ~ N(0, sigma^2)
(Section 3.1; :mod:`empirical.mechanisms.guo2020`'s conventions). In one dimension the minimiser
w* is a decreasing bijection of b, b(w) = -(sum_i l_i'(w) + lambda n w), so w* has the density
phi_sigma(b(w)) |b'(w)|. Removing record k takes one Newton step on the remaining objective,
w- = g(w*) = w* + Delta(w*) / H(w*), Delta = lambda w + l_k', H = sum_{i != k} l_i'' +
lambda (n - 1); Algorithm 2 publishes it when Corollary 2's residual bound
beta = gamma ||X||^2 (Delta / H)^2 (||X||^2 = sum_{i != k} x_i^2) is within the budget, and
otherwise retrains on the remaining data with a fresh b. Retraining's minimiser r(b) has the
density phi_sigma(b_r(y)) |b_r'(y)|, b_r(y) = -(sum_{i != k} l_i'(y) + lambda (n - 1) y).
The unlearned density at y is p_w(w) / g'(w) at w = g^{-1}(y) where beta(w) <= budget (g is
checked to increase), plus the retraining branch's probability times the retrained density.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, log_ndtr

from empirical.exact_laws.grid import Grid, GridLaw

__all__ = ["NewtonRemoval", "newton_removal_pair"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True)
class NewtonRemoval:
    """The instance: features ``x`` (|x| <= 1), labels ``y`` (+-1), the removed record
    ``forget``, ``lam`` = lambda, ``sigma`` the standard deviation of b, ``budget`` eps'
    (Algorithm 2's bound on the residual) and ``gamma`` Corollary 2's constant."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    forget: int
    lam: float
    sigma: float
    budget: float
    gamma: float = 0.25

    def _derivatives(self, w: np.ndarray, rows: Sequence[int]) -> tuple[np.ndarray, ...]:
        x = np.asarray([self.x[i] for i in rows])[:, None]
        y = np.asarray([self.y[i] for i in rows])[:, None]
        s = expit(y * x * w[None, :])
        first = (-y * x * (1 - s)).sum(axis=0)
        second = (x**2 * s * (1 - s)).sum(axis=0)
        third = (y * x**3 * s * (1 - s) * (1 - 2 * s)).sum(axis=0)
        return first, second, third

    @property
    def remaining(self) -> list[int]:
        """The rows left after the removal."""
        return [i for i in range(len(self.x)) if i != self.forget]

    def b_of_trained(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(b(w), b'(w)) of training on D."""
        first, second, _ = self._derivatives(w, range(len(self.x)))
        n = len(self.x)
        return -(first + self.lam * n * w), -(second + self.lam * n)

    def b_of_retrained(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(b_r(w), b_r'(w)) of training on the remaining rows."""
        first, second, _ = self._derivatives(w, self.remaining)
        m = len(self.remaining)
        return -(first + self.lam * m * w), -(second + self.lam * m)

    def newton(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(g(w), g'(w), beta(w)): the Newton removal from w, its derivative, Corollary 2."""
        k_first, k_second, _ = self._derivatives(w, [self.forget])
        first, second, third = self._derivatives(w, self.remaining)
        delta = self.lam * w + k_first
        d_delta = self.lam + k_second
        h = second + self.lam * len(self.remaining)
        step = delta / h
        slope = 1 + (d_delta * h - delta * third) / h**2
        x_norm2 = sum(self.x[i] ** 2 for i in self.remaining)
        return w + step, slope, self.gamma * x_norm2 * step**2

    def residual(self, w: np.ndarray) -> np.ndarray:
        """|grad L_b(g(w); D')| with b = b(w): the gradient residual the Newton removal from the
        trained w leaves on the remaining objective (what Theorem 3 asks to be <= eps')."""
        g, _, _ = self.newton(w)
        b, _ = self.b_of_trained(w)
        first, _, _ = self._derivatives(g, self.remaining)
        return np.abs(first + self.lam * len(self.remaining) * g + b)

    def largest_residual(self, *, tails: float = 40.0, points: int = 200_001) -> float:
        """The largest residual over w* with |b| <= ``tails`` sigma on a fine grid (beyond,
        the remaining loss is flat and the Newton step exact up to e^-|w|)."""
        span = 4 * tails * self.sigma / self.lam + 10.0
        lo = _solve(self.b_of_trained, tails * self.sigma, -span, span)
        hi = _solve(self.b_of_trained, -tails * self.sigma, -span, span)
        return float(np.max(self.residual(np.linspace(lo, hi, points))))

    def log_density(self, b: np.ndarray, slope: np.ndarray) -> np.ndarray:
        """log of phi_sigma(b) |slope|."""
        return (-(b**2) / (2 * self.sigma**2) - math.log(self.sigma) - _LOG_SQRT_2PI
                + np.log(np.abs(slope)))


def _solve(fn, target: float, lo: float, hi: float) -> float:
    return brentq(lambda w: float(fn(np.array([w]))[0][0]) - target, lo, hi, xtol=1e-14,
                  rtol=1e-15, maxiter=200)


def newton_removal_pair(*, size: int, instance: NewtonRemoval,
                        tails: float = 16.0) -> tuple[GridLaw, GridLaw, float]:
    """(unlearned, retrained) laws covering the retrained law's b within +-``tails`` sigma, and
    the probability of Algorithm 2's retraining branch.

    The published density jumps where Corollary 2's bound crosses the budget; then the laws are
    discrete measures on Gauss-Legendre nodes (8 per panel, ``size`` // 8 panels) of the pieces
    between those jumps (atoms of a :class:`GridLaw`, the same nodes for both laws). Without a
    jump in the window they are densities on a uniform grid of ``size`` points."""
    s = instance.sigma
    span = 4 * tails * s / instance.lam + 10.0
    lo = _solve(instance.b_of_retrained, tails * s, -span, span)
    hi = _solve(instance.b_of_retrained, -tails * s, -span, span)

    # w* over b in +-(tails + 8) sigma, wide enough that g covers [lo, hi]
    w_lo = _solve(instance.b_of_trained, (tails + 8) * s, -span, span)
    w_hi = _solve(instance.b_of_trained, -(tails + 8) * s, -span, span)
    w_grid = np.linspace(w_lo, w_hi, 8 * size)
    g, slope, _ = instance.newton(w_grid)
    if not np.all(slope > 0):
        raise ValueError("the Newton removal map is not increasing on this instance; its law "
                         "needs a sum over preimages, not implemented")
    if not (g[0] <= lo and g[-1] >= hi):
        raise ValueError("the Newton removal map does not cover the window; widen the tails")
    edges = [g_edge for g_edge in (float(instance.newton(np.array([w]))[0][0])
                                   for w in _budget_edges(instance, w_lo, w_hi))
             if lo < g_edge < hi]
    if edges:
        y, weights = _nodes(sorted([lo, *edges, hi]), panels=max(size // 8, 4))
    else:  # no jump inside the window: a uniform grid, so the spline divergences apply
        y, weights = Grid(lo, hi, size, False).points, None

    def inverse(target: np.ndarray) -> np.ndarray:
        w = np.interp(target, g, w_grid)
        for _ in range(4):  # Newton polish of g(w) = y
            gw, sw, _ = instance.newton(w)
            w = w - (gw - target) / sw
        return w

    b_r, db_r = instance.b_of_retrained(y)
    retrained = instance.log_density(b_r, db_r)
    w = inverse(y)
    _, slope_y, beta = instance.newton(w)
    b, db = instance.b_of_trained(w)
    published = np.where(beta <= instance.budget,
                         instance.log_density(b, db) - np.log(slope_y), -np.inf)
    retrain_probability = _retrain_probability(instance, w_lo, w_hi)
    unlearned = published
    if retrain_probability > 0:
        unlearned = np.logaddexp(published, math.log(retrain_probability) + retrained)
    if weights is None:
        grid = Grid(lo, hi, size, False)
        return (GridLaw(grid, unlearned, np.empty(0), np.empty(0)),
                GridLaw(grid, retrained, np.empty(0), np.empty(0)), retrain_probability)
    grid = Grid(lo, hi, 5, False)
    empty = np.full(5, -np.inf)
    log_w = np.log(weights)
    return (GridLaw(grid, empty, y, log_w + unlearned),
            GridLaw(grid, empty, y, log_w + retrained), retrain_probability)


def _nodes(breaks: Sequence[float], *, panels: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre nodes and weights (8 per panel) over the pieces between
    ``breaks``, ``panels`` panels in all shared in proportion to the pieces' lengths."""
    base, base_w = np.polynomial.legendre.leggauss(8)
    total = breaks[-1] - breaks[0]
    nodes, weights = [], []
    for a, c in zip(breaks[:-1], breaks[1:], strict=True):
        count = max(int(round(panels * (c - a) / total)), 1)
        cuts = np.linspace(a, c, count + 1)
        half = (cuts[1:] - cuts[:-1]) / 2
        mid = (cuts[1:] + cuts[:-1]) / 2
        nodes.append((mid[:, None] + half[:, None] * base[None, :]).ravel())
        weights.append((half[:, None] * base_w[None, :]).ravel())
    return np.concatenate(nodes), np.concatenate(weights)


def _budget_edges(instance: NewtonRemoval, w_lo: float, w_hi: float) -> list[float]:
    """The w where Corollary 2's bound crosses the budget, within [w_lo, w_hi]."""
    w = np.linspace(w_lo, w_hi, 20001)
    over = instance.newton(w)[2] > instance.budget
    return [brentq(lambda v: float(instance.newton(np.array([v]))[2][0]) - instance.budget,
                   w[i], w[i + 1], xtol=1e-15)
            for i in np.nonzero(over[1:] != over[:-1])[0]]


def _retrain_probability(instance: NewtonRemoval, w_lo: float, w_hi: float) -> float:
    """P(beta(w*) > budget): the w* intervals where Corollary 2 exceeds the budget, mapped to b
    (a decreasing bijection) and measured exactly under N(0, sigma^2) (b beyond the window,
    below 1e-120 of the mass, is left out)."""
    edges = [w_lo, *_budget_edges(instance, w_lo, w_hi), w_hi]
    flags = [bool(instance.newton(np.array([w_lo]))[2][0] > instance.budget)]
    for _ in edges[1:-1]:
        flags.append(not flags[-1])
    s = instance.sigma
    total = 0.0
    for (a, c), flag in zip(zip(edges[:-1], edges[1:], strict=True), flags, strict=True):
        if flag:
            b_a = float(instance.b_of_trained(np.array([a]))[0][0])
            b_c = float(instance.b_of_trained(np.array([c]))[0][0])
            total += math.exp(log_ndtr(b_a / s)) - math.exp(log_ndtr(b_c / s))
    return min(total, 1.0)
