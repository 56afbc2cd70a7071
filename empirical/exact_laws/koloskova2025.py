"""Exact laws of Koloskova et al. 2025's three unlearning methods on a one-dimensional model.

Definition 2.1 compares the unlearning run started from the model trained on D with the same
run started from the model trained on D_r; the theorems assume nothing of the two trained models
or of the loss, so the instance gives the two start points x_hat and x_hat_r directly. The
gradient g_t is the full-batch gradient on the retain set (both runs see the same map).

* gradient clipping, eq. (3): x_0 = Pi_C0(x_hat), x_{t+1} = x_t - gamma (Pi_C1(g_t) +
  lambda x_t) + N(0, sigma^2);
* model clipping (Theorem 4.2's form of eq. 4): x_0 = Pi_C0(x_hat) + N(0, sigma0^2),
  x_{t+1} = Pi_C2(x_t - gamma (g_t + lambda x_t)) + N(0, sigma^2);
* output perturbation, eq. (1): Pi_C0(x_hat) + N(0, sigma^2).
"""

from __future__ import annotations

import math

import numpy as np

from empirical.exact_laws.grid import Grid, GridLaw, noisy_step, point_mass
from empirical.exact_laws.noisy_gradient import Records, StepRule

__all__ = ["clipped_start", "gradient_clipping_pair", "model_clipping_pair",
           "output_perturbation_pair"]


def clipped_start(x_hat: float, c0: float) -> float:
    """Pi_C0(x_hat) in one dimension."""
    return float(np.clip(x_hat, -c0, c0))


def _window(centres: list[float], reach: float, std: float) -> tuple[float, float]:
    return min(centres) - reach - 16 * std, max(centres) + reach + 16 * std


def _run(grid: Grid, start: float, drift, *, steps: int, sigma: float,
         sigma0: float) -> GridLaw:
    law = point_mass(grid, start)
    if sigma0 > 0:
        law = noisy_step(law, lambda x: x, noise_std=sigma0)
    for _ in range(steps):
        law = noisy_step(law, drift, noise_std=sigma)
    return law


def gradient_clipping_pair(*, size: int, x_hat: float, x_hat_r: float, retain: Records,
                           gamma: float, l2: float, c0: float, c1: float, sigma: float,
                           steps: int, loss: str = "logistic") -> tuple[GridLaw, GridLaw]:
    """(unlearned, certifying) laws of eq. (3) after T = ``steps`` steps."""
    rule = StepRule(eta=gamma, l2=l2, clip=c1, loss=loss, clip_total=True)
    drift = rule.drift(retain, tuple(range(retain.n)))
    starts = [clipped_start(x_hat, c0), clipped_start(x_hat_r, c0)]
    lo, hi = _window(starts, steps * gamma * c1, math.sqrt(steps) * sigma)
    grid = Grid(lo, hi, size, False)
    return tuple(_run(grid, s, drift, steps=steps, sigma=sigma, sigma0=0.0)  # type: ignore
                 for s in starts)


def model_clipping_pair(*, size: int, x_hat: float, x_hat_r: float, retain: Records,
                        gamma: float, l2: float, c0: float, c2: float, sigma0: float,
                        sigma: float, steps: int,
                        loss: str = "logistic") -> tuple[GridLaw, GridLaw]:
    """(unlearned, certifying) laws of Theorem 4.2's model clipping after T = ``steps``."""
    rule = StepRule(eta=gamma, l2=l2, clip=None, loss=loss, clip_model=c2)
    drift = rule.drift(retain, tuple(range(retain.n)))
    starts = [clipped_start(x_hat, c0), clipped_start(x_hat_r, c0)]
    std = max(sigma, sigma0)
    lo, hi = (_window(starts, 0.0, std) if steps == 0
              else (-c2 - 16 * sigma, c2 + 16 * sigma))
    grid = Grid(lo, hi, size, False)
    return tuple(_run(grid, s, drift, steps=steps, sigma=sigma, sigma0=sigma0)  # type: ignore
                 for s in starts)


def output_perturbation_pair(*, size: int, x_hat: float, x_hat_r: float, c0: float,
                             sigma: float) -> tuple[GridLaw, GridLaw]:
    """(unlearned, certifying) laws of eq. (1): two Gaussians N(Pi_C0(.), sigma^2)."""
    starts = [clipped_start(x_hat, c0), clipped_start(x_hat_r, c0)]
    grid = Grid(*_window(starts, 0.0, sigma), size, False)
    return tuple(noisy_step(point_mass(grid, s), lambda x: x, noise_std=sigma)  # type: ignore
                 for s in starts)
