"""One-dimensional laws on a uniform grid: a density (as log values at the grid points, with
quadrature weights) plus atoms, propagated exactly through a noisy step.

A law is a discrete measure: each grid point carries the mass weight_i * p(x_i) (Simpson weights
when the grid is the projection interval [-R, R], whose end values jump to 0; trapezoid weights on
an open grid, where they converge spectrally for a smooth density decaying into the tails) and
each atom its own mass. One step of a noisy mechanism, y = Pi(f(x) + s Z), becomes

    log q(y_j) = logsumexp_i(log m_i - (y_j - f(z_i))^2 / (2 s^2)) - log(s sqrt(2 pi)),

a sum over every grid point and atom z_i (the Gaussian convolution of the push-forward of the
discrete law, evaluated at the grid), and with a projection onto [-R, R] the two boundary atoms
get the exact mass sum_i m_i Phi((f(z_i) - R) / s) (and its mirror) through ``log_ndtr``.
Everything stays in logs, so the tails that decide a high-order Rényi divergence or a small
delta never underflow. The error of a law is the quadrature error of the convolution integral:
:func:`propagate` at two grid sizes gives it (the callers report the difference).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, logsumexp

__all__ = ["Grid", "GridLaw", "gaussian_law", "mixture", "noisy_step", "point_mass"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_BLOCK = 256


@dataclass(frozen=True)
class Grid:
    """``size`` points from ``lo`` to ``hi`` (``size`` odd). ``bounded``: the laws live on
    [lo, hi] with possible atoms at both ends (a projection interval), so Simpson weights; else
    an open window into a law with negligible tails (trapezoid weights, mass leaving it is
    counted as ``lost``)."""

    lo: float
    hi: float
    size: int
    bounded: bool

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(f"the grid needs finite lo < hi, got [{self.lo}, {self.hi}]")
        if self.size < 5 or self.size % 2 == 0:
            raise ValueError(f"the grid size must be odd and >= 5, got {self.size}")

    @property
    def points(self) -> np.ndarray:
        """The grid points (float64)."""
        return np.linspace(self.lo, self.hi, self.size)

    @property
    def step(self) -> float:
        """The spacing h."""
        return (self.hi - self.lo) / (self.size - 1)

    @property
    def log_weights(self) -> np.ndarray:
        """Log quadrature weights: Simpson on a bounded grid, trapezoid on an open one."""
        w = np.full(self.size, self.step)
        if self.bounded:
            w[1:-1:2] *= 4 / 3
            w[2:-1:2] *= 2 / 3
            w[0] = w[-1] = self.step / 3
        else:
            w[0] = w[-1] = self.step / 2
        return np.log(w)

    def refined(self) -> Grid:
        """The grid with every interval halved (same ends)."""
        return Grid(self.lo, self.hi, 2 * self.size - 1, self.bounded)


@dataclass(frozen=True, eq=False)
class GridLaw:
    """A law on ``grid``: log density at the points (``log_density``, -inf where 0), atoms at
    ``atom_positions`` with log masses ``atom_log_masses``, and ``lost`` the mass that left an
    open grid (an error term, 0 on a bounded grid)."""

    grid: Grid
    log_density: np.ndarray
    atom_positions: np.ndarray
    atom_log_masses: np.ndarray
    lost: float = 0.0

    def log_masses(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, log masses) of the discrete measure: grid points and atoms together."""
        return (np.concatenate([self.grid.points, self.atom_positions]),
                np.concatenate([self.grid.log_weights + self.log_density, self.atom_log_masses]))

    def total_mass(self) -> float:
        """Mass of the discrete measure (1 up to the quadrature error and ``lost``)."""
        return float(np.exp(logsumexp(self.log_masses()[1])))

    def mean(self) -> float:
        """Mean of the (normalised) discrete measure."""
        x, lm = self.log_masses()
        m = np.exp(lm - logsumexp(lm))
        return float(np.sum(m * x))

    def variance(self) -> float:
        """Variance of the (normalised) discrete measure."""
        x, lm = self.log_masses()
        m = np.exp(lm - logsumexp(lm))
        mu = float(np.sum(m * x))
        return float(np.sum(m * (x - mu) ** 2))


def point_mass(grid: Grid, at: float) -> GridLaw:
    """The point mass at ``at`` (an atom; the density is 0)."""
    return GridLaw(grid, np.full(grid.size, -np.inf), np.array([float(at)]), np.array([0.0]))


def gaussian_law(grid: Grid, *, mean: float, variance: float) -> GridLaw:
    """N(mean, variance) on an open grid (its density at the points, no atoms)."""
    if grid.bounded:
        raise ValueError("a Gaussian law lives on an open grid; project it with a noisy step")
    x = grid.points
    log_density = -(x - mean) ** 2 / (2 * variance) - 0.5 * math.log(variance) - _LOG_SQRT_2PI
    return GridLaw(grid, log_density, np.empty(0), np.empty(0))


def noisy_step(law: GridLaw, drift: Callable[[np.ndarray], np.ndarray], *, noise_std: float,
               radius: float | None = None) -> GridLaw:
    """The law of Pi_R(drift(x) + noise_std Z) for x ~ ``law`` (Pi the identity when ``radius``
    is None), on the same grid. With a radius the grid must be the bounded [-radius, radius]."""
    grid = law.grid
    if not (noise_std > 0 and math.isfinite(noise_std)):
        raise ValueError(f"noise_std must be finite and > 0, got {noise_std!r}")
    if radius is not None and not (grid.bounded and grid.lo == -radius and grid.hi == radius):
        raise ValueError("a projected step needs the bounded grid [-R, R]")
    if radius is None and grid.bounded:
        raise ValueError("an unprojected step needs an open grid")
    x, lm = law.log_masses()
    keep = np.isfinite(lm)
    z = np.asarray(drift(x[keep]), dtype=np.float64)
    lm = lm[keep]
    y = grid.points
    inv = 1.0 / (2 * noise_std**2)
    log_density = np.empty(y.size)
    for start in range(0, y.size, _BLOCK):  # blocks of rows keep the memory at O(size)
        rows = y[start:start + _BLOCK]
        log_density[start:start + _BLOCK] = logsumexp(
            lm[None, :] - (rows[:, None] - z[None, :]) ** 2 * inv, axis=1)
    log_density -= math.log(noise_std) + _LOG_SQRT_2PI
    above = logsumexp(lm + log_ndtr((z - grid.hi) / noise_std))
    below = logsumexp(lm + log_ndtr((grid.lo - z) / noise_std))
    # The step keeps the mass exactly; the quadrature of the density part does not quite, and
    # left alone that error would compound over steps: the density is rescaled so that it
    # holds the input's mass less what the atoms (or the outside of an open grid) took.
    total = logsumexp(lm)
    outside = logsumexp([above, below])
    inside = total + math.log(-math.expm1(outside - total)) if outside < total else -math.inf
    log_density += inside - logsumexp(grid.log_weights + log_density)
    if radius is not None:
        return GridLaw(grid, log_density, np.array([grid.lo, grid.hi]), np.array([below, above]))
    lost = law.lost + float(np.exp(above) + np.exp(below))
    return GridLaw(grid, log_density, np.empty(0), np.empty(0), lost)


def mixture(laws: Sequence[GridLaw], weights: Sequence[float] | None = None) -> GridLaw:
    """The mixture sum_k w_k law_k (equal weights by default) of laws on one grid whose atoms
    sit at the same positions."""
    if not laws:
        raise ValueError("a mixture needs at least one law")
    grid = laws[0].grid
    positions = laws[0].atom_positions
    for law in laws:
        if law.grid != grid or not np.array_equal(law.atom_positions, positions):
            raise ValueError("the laws of a mixture must share the grid and the atom positions")
    w = np.full(len(laws), 1.0 / len(laws)) if weights is None else np.asarray(weights, float)
    lw = np.log(w)[:, None]
    density = logsumexp(lw + np.stack([law.log_density for law in laws]), axis=0)
    atoms = (logsumexp(lw + np.stack([law.atom_log_masses for law in laws]), axis=0)
             if positions.size else np.empty(0))
    lost = float(sum(wk * law.lost for wk, law in zip(w, laws, strict=True)))
    return GridLaw(grid, density, positions, atoms, lost)
