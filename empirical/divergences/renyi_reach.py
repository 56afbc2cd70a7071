"""What the histogram Rényi test can show at a design, and what a pilot forecasts it will.

:func:`max_renyi_lower_bound` is the test's reach (the bound on perfectly separated counts), the
ceiling an INCONCLUSIVE verdict compares with the certified curve; :func:`gaussian_fit_excess`
forecasts, from a pilot alone, how far normal fits of the two worlds exceed the curve.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from empirical.divergences.renyi_histogram import (
    DEFAULT_ORDERS,
    DEFAULT_TAIL_LEVELS,
    as_score_sample,
    check_beta,
    histogram_renyi_lower_bound,
    simultaneous_boxes,
)

__all__ = ["gaussian_fit_excess", "max_renyi_lower_bound"]


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
    p = as_score_sample(pilot_p, "pilot_p")
    q = as_score_sample(pilot_q, "pilot_q")
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
    beta = check_beta(beta)
    counts_p = np.zeros(n_bins, dtype=np.int64)
    counts_q = np.zeros(n_bins, dtype=np.int64)
    counts_p[0], counts_q[-1] = n_p, n_q
    gamma = beta / (4 * n_bins)
    box_p = simultaneous_boxes(counts_p, gamma=gamma)
    box_q = simultaneous_boxes(counts_q, gamma=gamma)
    return tuple(histogram_renyi_lower_bound(box_p, box_q, order=float(a)) for a in orders)
