"""The exact Rényi curve and (epsilon, delta) of a pair of laws, with a numerical error.

A builder maps a grid size to the pair (P, Q) = (unlearned, retrained) laws. The truth is taken
on a grid and on the grid with every interval halved; the finer grid's values are reported and
the error is their difference (plus the mass that left an open grid, which bounds what that
mass could move a hockey-stick divergence). Each divergence is the larger of the two directions,
as the certificates bound both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from empirical.exact_laws.divergences import epsilon_at_delta, renyi_divergence
from empirical.exact_laws.grid import GridLaw

__all__ = ["ExactTruth", "exact_truth"]

Builder = Callable[[int], tuple[GridLaw, GridLaw]]


@dataclass(frozen=True)
class ExactTruth:
    """``renyi``: (order, D_alpha, error) with D_alpha = max of both directions; ``epsilon``
    the smallest eps with both hockey-stick divergences <= ``delta`` and ``epsilon_error`` its
    error; ``sizes`` the two grid sizes; ``lost`` the mass that left an open grid."""

    renyi: tuple[tuple[float, float, float], ...]
    delta: float
    epsilon: float
    epsilon_error: float
    sizes: tuple[int, int]
    lost: float

    def renyi_at(self, alpha: float) -> tuple[float, float]:
        """(D_alpha, error) at an order of :attr:`renyi`."""
        for a, value, error in self.renyi:
            if a == alpha:
                return value, error
        raise KeyError(alpha)


def _values(p: GridLaw, q: GridLaw, orders: Sequence[float],
            delta: float) -> tuple[list[float], float]:
    renyi = [max(renyi_divergence(p, q, a), renyi_divergence(q, p, a)) for a in orders]
    eps = max(epsilon_at_delta(p, q, delta), epsilon_at_delta(q, p, delta))
    return renyi, eps


def _difference(a: float, b: float) -> float:
    if math.isinf(a) or math.isinf(b):
        return 0.0 if a == b else math.inf
    return abs(a - b)


def exact_truth(build: Builder, *, size: int, orders: Sequence[float],
                delta: float) -> ExactTruth:
    """The truth of ``build`` at ``orders`` and ``delta`` from grids of ``size`` and
    2 ``size`` - 1 points."""
    coarse_p, coarse_q = build(size)
    fine_size = 2 * size - 1
    fine_p, fine_q = build(fine_size)
    coarse, coarse_eps = _values(coarse_p, coarse_q, orders, delta)
    fine, fine_eps = _values(fine_p, fine_q, orders, delta)
    lost = max(fine_p.lost, fine_q.lost, coarse_p.lost, coarse_q.lost)
    renyi = tuple((float(a), v, _difference(v, c)) for a, v, c in zip(orders, fine, coarse,
                                                                         strict=True))
    # Mass m outside the window moves each hockey-stick divergence by at most m; as an error
    # in epsilon it is m / (the density of the privacy loss there), not known: it is added to
    # the error only as a flag when it is not negligible against delta.
    eps_error = _difference(fine_eps, coarse_eps) + (math.inf if lost > 1e-3 * delta else 0.0)
    return ExactTruth(renyi, delta, fine_eps, eps_error, (size, fine_size), lost)
