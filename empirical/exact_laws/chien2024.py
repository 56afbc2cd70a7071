"""Exact laws of PNSGD (Chien et al. 2024, Algorithm 1) and of Langevin unlearning (Chien, Wang,
Li 2024, as Chien et al. 2024 restate it in Appendix P) on a one-dimensional linear model.

PNSGD: learning starts at the point 0 and runs T epochs over the partition B on D; unlearning
runs K epochs on D' with the same B; retraining runs T epochs on D' from 0 (its own B when
partitions are drawn per trial). Every step adds N(0, 2 eta sigma^2) and projects onto [-R, R].
With ``partition`` "random" both laws are uniform mixtures over the ordered partitions (the
unlearned law mixes over the B that learning and unlearning share); "fixed" conditions on one
B, the conditional laws Theorem 3.2 is proved for.

Langevin unlearning: Theorem P.1 starts unlearning from the limit law nu_D of full-batch
projected noisy descent on D; unlearning runs K steps on D' and is compared with the limit law
nu_D' (:func:`empirical.exact_laws.noisy_gradient.stationary_law`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from empirical.exact_laws.grid import Grid, GridLaw, point_mass
from empirical.exact_laws.noisy_gradient import (
    Records,
    StepRule,
    mixture_over_partitions,
    run_epochs,
    stationary_law,
)

__all__ = ["langevin_pair", "pnsgd_pair", "pnsgd_sequence_pair", "pnsgd_stationary_pair"]


def pnsgd_pair(*, size: int, learn: Records, final: Records, rule: StepRule, sigma: float,
               batch_size: int, learn_epochs: int, unlearn_epochs: int, radius: float,
               partition: str | Sequence[Sequence[int]] = "random") -> tuple[GridLaw, GridLaw]:
    """(unlearned, retrained) laws of PNSGD on a bounded grid of ``size`` points over [-R, R].
    ``partition``: "random", or one fixed ordered partition (a sequence of batches)."""
    grid = Grid(-radius, radius, size, True)
    noise = math.sqrt(2 * rule.eta * sigma**2)
    n = learn.n

    def unlearned(batches: Sequence[Sequence[int]]) -> GridLaw:
        law = run_epochs(point_mass(grid, 0.0), rule, learn, batches, epochs=learn_epochs,
                         noise_std=noise, radius=radius)
        return run_epochs(law, rule, final, batches, epochs=unlearn_epochs, noise_std=noise,
                          radius=radius)

    def retrained(batches: Sequence[Sequence[int]]) -> GridLaw:
        return run_epochs(point_mass(grid, 0.0), rule, final, batches, epochs=learn_epochs,
                          noise_std=noise, radius=radius)

    if partition == "random":
        return (mixture_over_partitions(unlearned, n, batch_size),
                mixture_over_partitions(retrained, n, batch_size))
    batches = _checked(partition, n, batch_size)
    return unlearned(batches), retrained(batches)


def _checked(partition: Sequence[Sequence[int]], n: int,
             batch_size: int) -> list[tuple[int, ...]]:
    """``partition`` as batches, refused unless it splits range(n) into batches of b."""
    batches = [tuple(b) for b in partition]
    if sorted(i for b in batches for i in b) != list(range(n)) or any(
            len(b) != batch_size for b in batches):
        raise ValueError(f"the partition must split range({n}) into batches of {batch_size}")
    return batches


def langevin_pair(*, size: int, learn: Records, final: Records, rule: StepRule, sigma: float,
                  unlearn_steps: int, radius: float) -> tuple[GridLaw, GridLaw]:
    """(unlearned, retrained) laws of Langevin unlearning: K full-batch steps on ``final`` from
    the limit law on ``learn``, against the limit law on ``final``."""
    grid = Grid(-radius, radius, size, True)
    noise = math.sqrt(2 * rule.eta * sigma**2)
    start, _ = stationary_law(grid, rule, learn, noise_std=noise, radius=radius)
    target, _ = stationary_law(grid, rule, final, noise_std=noise, radius=radius)
    batch = [tuple(range(learn.n))]
    return (run_epochs(start, rule, final, batch, epochs=unlearn_steps, noise_std=noise,
                       radius=radius), target)




def pnsgd_stationary_pair(*, grid: Grid, learn: Records, final: Records, rule: StepRule,
                          sigma: float, batches: Sequence[Sequence[int]], unlearn_epochs: int,
                          radius: float | None) -> tuple[GridLaw, GridLaw]:
    """(unlearned, retrained) laws of PNSGD unlearning from the stationary law on ``learn``
    (the epoch map over the fixed ``batches``), K epochs on ``final``, against the stationary
    law on ``final`` (Corollaries 3.7 and 3.8). ``radius`` None: no projection (an open
    ``grid``)."""
    noise = math.sqrt(2 * rule.eta * sigma**2)
    start, _ = stationary_law(grid, rule, learn, noise_std=noise, radius=radius,
                              batches=batches)
    target, _ = stationary_law(grid, rule, final, noise_std=noise, radius=radius,
                               batches=batches)
    return (run_epochs(start, rule, final, batches, epochs=unlearn_epochs, noise_std=noise,
                       radius=radius), target)


def pnsgd_sequence_pair(*, size: int, learn: Records, requests: Sequence[tuple[Records, int]],
                        rule: StepRule, sigma: float, batch_size: int, learn_epochs: int,
                        radius: float, partition: str | Sequence[Sequence[int]] = "random"
                        ) -> tuple[GridLaw, GridLaw]:
    """(unlearned, retrained) laws after a sequence of requests (Theorem 3.11): learning T
    epochs on ``learn``, then for each request (its dataset, its K) K epochs on that dataset,
    with one partition throughout; retraining T epochs on the last dataset."""
    grid = Grid(-radius, radius, size, True)
    noise = math.sqrt(2 * rule.eta * sigma**2)
    final = requests[-1][0]

    def unlearned(batches: Sequence[Sequence[int]]) -> GridLaw:
        law = run_epochs(point_mass(grid, 0.0), rule, learn, batches, epochs=learn_epochs,
                         noise_std=noise, radius=radius)
        for records, epochs in requests:
            law = run_epochs(law, rule, records, batches, epochs=epochs, noise_std=noise,
                             radius=radius)
        return law

    def retrained(batches: Sequence[Sequence[int]]) -> GridLaw:
        return run_epochs(point_mass(grid, 0.0), rule, final, batches, epochs=learn_epochs,
                          noise_std=noise, radius=radius)

    if partition == "random":
        return (mixture_over_partitions(unlearned, learn.n, batch_size),
                mixture_over_partitions(retrained, learn.n, batch_size))
    batches = _checked(partition, learn.n, batch_size)
    return unlearned(batches), retrained(batches)
