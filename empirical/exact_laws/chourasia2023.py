"""Exact laws of Noisy-GD deletion (Chourasia and Shah 2023, Algorithm 2 and Definition 5.1) on a
one-dimensional linear model.

Learning draws theta ~ rho = N(0, sigma^2 / (lam (1 - eta lam / 2))) and runs K_A full-batch
steps on D, theta <- theta - eta (mean clip_L(l_i') + lam theta) + sqrt(2 eta) sigma Z (no
projection); deletion runs K_Abar more steps on D'. The reference (Definition 4.1's pi) runs
K_A + K_Abar steps on D' from a fresh rho. The laws live on an open grid wide enough that the
mass leaving it is reported (``lost``).
"""

from __future__ import annotations

import math

from empirical.exact_laws.grid import Grid, GridLaw, gaussian_law
from empirical.exact_laws.noisy_gradient import Records, StepRule, run_epochs

__all__ = ["noisy_gd_pair"]


def noisy_gd_pair(*, size: int, learn: Records, final: Records, rule: StepRule, sigma: float,
                  learn_steps: int, unlearn_steps: int,
                  half_width: float | None = None) -> tuple[GridLaw, GridLaw]:
    """(deleted, reference) laws on an open grid of ``size`` points over [-w, w]; w defaults to
    the rho standard deviation times 16 plus the largest drift the clipped gradients allow."""
    init_var = sigma**2 / (rule.l2 * (1 - rule.eta * rule.l2 / 2))
    if half_width is None:
        # every step contracts by (1 - eta lam) and moves by at most eta L: the means stay
        # within L / lam of 0
        reach = (rule.clip if rule.clip is not None else 1.0) / rule.l2
        half_width = reach + 16 * math.sqrt(init_var)
    grid = Grid(-half_width, half_width, size, False)
    noise = math.sqrt(2 * rule.eta) * sigma
    full = [tuple(range(learn.n))]
    start = gaussian_law(grid, mean=0.0, variance=init_var)
    deleted = run_epochs(run_epochs(start, rule, learn, full, epochs=learn_steps,
                                    noise_std=noise, radius=None),
                         rule, final, full, epochs=unlearn_steps, noise_std=noise, radius=None)
    reference = run_epochs(start, rule, final, full, epochs=learn_steps + unlearn_steps,
                           noise_std=noise, radius=None)
    return deleted, reference
