"""Exact laws of Delete-to-Descent with an internal state (Neel et al. 2021, Theorem 9) on a
one-dimensional linear model.

Learning runs T projected full-batch gradient steps x <- Pi_R(x - eta (mean clip_M(l_i') +
lambda x)) from the point 0 on D, with eta = 2/(L + m); unlearning fine-tunes the noiseless
state for I steps on D'; retraining runs T steps on D' from 0. Each publication adds
N(0, sigma^2): the two released laws are the Gaussians around the two descents' end points.
"""

from __future__ import annotations

import numpy as np

from empirical.exact_laws.grid import Grid, GridLaw, noisy_step, point_mass
from empirical.exact_laws.noisy_gradient import Records, StepRule

__all__ = ["d2d_pair", "descent"]


def descent(start: float, rule: StepRule, records: Records, *, steps: int,
            radius: float) -> float:
    """The noiseless projected descent from ``start`` after ``steps`` steps."""
    drift = rule.drift(records, tuple(range(records.n)))
    x = np.array([float(start)])
    for _ in range(steps):
        x = np.clip(drift(x), -radius, radius)
    return float(x[0])


def d2d_pair(*, size: int, learn: Records, final: Records, rule: StepRule, sigma: float,
             learn_steps: int, unlearn_steps: int, radius: float) -> tuple[GridLaw, GridLaw]:
    """(unlearned, retrained) published laws on an open grid of ``size`` points."""
    learned = descent(0.0, rule, learn, steps=learn_steps, radius=radius)
    unlearned = descent(learned, rule, final, steps=unlearn_steps, radius=radius)
    retrained = descent(0.0, rule, final, steps=learn_steps, radius=radius)
    lo, hi = min(unlearned, retrained) - 16 * sigma, max(unlearned, retrained) + 16 * sigma
    grid = Grid(lo, hi, size, False)
    return tuple(noisy_step(point_mass(grid, c), lambda x: x, noise_std=sigma)  # type: ignore
                 for c in (unlearned, retrained))
