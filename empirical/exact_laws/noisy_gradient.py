"""Exact laws of noisy (projected) gradient descent on a one-dimensional linear model.

The data are records (x_i, y_i) with |x_i| <= 1 and y_i = +-1 and a weight 1, or 0 for a null
record (a removal served as a record whose loss is 0, so the divisor stays n, as the mechanisms
in :mod:`empirical.mechanisms` serve it). A step on the batch B is

    x <- Pi_R(x - eta ((1/|B|) sum_{i in B} w_i clip_M(l_i'(x)) + lambda x) + sqrt(2 eta sigma^2) Z),

the update rule of PNSGD (Chien et al. 2024, Algorithm 1), Langevin unlearning (full batch) and
Noisy-GD (Chourasia and Shah 2023, Algorithm 2, no projection), with l_i the logistic loss
log(1 + exp(-y_i x_i w)) or the quadratic (w - x_i)^2 / 2 (``loss``), and clip_M the
clipping of a per-example gradient to norm M (None: none). Each law is propagated by
:func:`empirical.exact_laws.grid.noisy_step`; a random mini-batch partition makes the law a
mixture over the ordered partitions (:func:`ordered_partitions`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from empirical.exact_laws.grid import Grid, GridLaw, mixture, noisy_step, point_mass

__all__ = ["Records", "StepRule", "ordered_partitions", "run_epochs", "stationary_law"]


@dataclass(frozen=True)
class Records:
    """Features ``x`` (|x| <= 1), labels ``y`` (+-1) and weights (1, or 0: a null record)."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    weight: tuple[float, ...]

    def __post_init__(self) -> None:
        if not (len(self.x) == len(self.y) == len(self.weight) >= 1):
            raise ValueError("x, y and weight must be non-empty and of one length")

    @property
    def n(self) -> int:
        """The number of records (null records included)."""
        return len(self.x)

    def without(self, index: int) -> Records:
        """These records with record ``index`` replaced by a null record."""
        weight = list(self.weight)
        weight[index] = 0.0
        return Records(self.x, self.y, tuple(weight))

    def replaced(self, index: int, *, x: float, y: float) -> Records:
        """These records with record ``index`` replaced by (x, y), weight 1."""
        xs, ys, ws = list(self.x), list(self.y), list(self.weight)
        xs[index], ys[index], ws[index] = x, y, 1.0
        return Records(tuple(xs), tuple(ys), tuple(ws))


@dataclass(frozen=True)
class StepRule:
    """The deterministic part of a step: step size ``eta``, ``l2`` = lambda, ``clip`` = M (None:
    no clipping), ``loss`` ``"logistic"`` or ``"quadratic"``; ``clip_model`` projects the
    drift onto [-clip_model, clip_model] before the noise (Koloskova et al.'s model clipping,
    eq. 4); ``clip_total`` clips the whole batch gradient instead of each example's (their
    gradient clipping, eq. 3)."""

    eta: float
    l2: float
    clip: float | None
    loss: str = "logistic"
    clip_model: float | None = None
    clip_total: bool = False

    def gradients(self, w: np.ndarray, records: Records, batch: Sequence[int]) -> np.ndarray:
        """Per-example loss gradients [len(batch), len(w)] (weighted, clipped per example
        unless ``clip_total``)."""
        x = np.asarray([records.x[i] for i in batch])[:, None]
        y = np.asarray([records.y[i] for i in batch])[:, None]
        weight = np.asarray([records.weight[i] for i in batch])[:, None]
        if self.loss == "logistic":
            g = -y * x * expit(-y * x * w[None, :])
        elif self.loss == "quadratic":
            g = w[None, :] - x
        else:
            raise ValueError(f"unknown loss {self.loss!r}")
        if self.clip is not None and not self.clip_total:
            g = np.clip(g, -self.clip, self.clip)
        return weight * g

    def drift(self, records: Records, batch: Sequence[int]) -> Callable[[np.ndarray], np.ndarray]:
        """x -> x - eta (mean clipped gradient on ``batch`` + lambda x), projected onto
        [-clip_model, clip_model] when ``clip_model`` is set."""
        size = len(batch)

        def f(w: np.ndarray) -> np.ndarray:
            g = self.gradients(w, records, batch).sum(axis=0) / size
            if self.clip is not None and self.clip_total:
                g = np.clip(g, -self.clip, self.clip)
            out = w - self.eta * (g + self.l2 * w)
            if self.clip_model is not None:
                out = np.clip(out, -self.clip_model, self.clip_model)
            return out

        return f


def ordered_partitions(n: int, b: int) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Every ordered partition of range(n) into n/b batches of size b (b must divide n): the
    distinct batch sequences a uniformly random permutation cut into consecutive batches gives,
    each equally likely."""
    if n % b:
        raise ValueError(f"b = {b} must divide n = {n}")
    if n == b:
        yield (tuple(range(n)),)
        return
    for first in itertools.combinations(range(n), b):
        rest = [i for i in range(n) if i not in first]
        for tail in ordered_partitions(len(rest), b):
            yield (first, *(tuple(rest[i] for i in batch) for batch in tail))


def run_epochs(law: GridLaw, rule: StepRule, records: Records,
               batches: Sequence[Sequence[int]], *, epochs: int, noise_std: float,
               radius: float | None) -> GridLaw:
    """``epochs`` passes over ``batches``, one noisy step per batch."""
    for _ in range(epochs):
        for batch in batches:
            law = noisy_step(law, rule.drift(records, batch), noise_std=noise_std, radius=radius)
    return law


def stationary_law(grid: Grid, rule: StepRule, records: Records, *, noise_std: float,
                   radius: float | None, batches: Sequence[Sequence[int]] | None = None,
                   tolerance: float = 1e-12, max_steps: int = 20_000) -> tuple[GridLaw, int]:
    """The limit law of epochs over ``batches`` (default: full batch) on ``records``, from the
    point 0 until an epoch moves less than ``tolerance`` of mass (total variation between the
    discrete measures; the stationary law of the epoch map, at the start of an epoch), and the
    number of epochs taken."""
    law = point_mass(grid, 0.0)
    batches = [tuple(range(records.n))] if batches is None else batches
    previous = None
    for step in range(1, max_steps + 1):
        law = run_epochs(law, rule, records, batches, epochs=1, noise_std=noise_std,
                         radius=radius)
        current = np.exp(law.log_masses()[1])
        if previous is not None and float(np.sum(np.abs(current - previous))) < tolerance:
            return law, step
        previous = current
    raise RuntimeError(f"the law did not settle within {max_steps} steps")


def mixture_over_partitions(run: Callable[[tuple[tuple[int, ...], ...]], GridLaw], n: int,
                            b: int, *, limit: int = 64) -> GridLaw:
    """The uniform mixture of ``run(partition)`` over every ordered partition (at most
    ``limit`` of them, else ValueError)."""
    count = math.factorial(n) // (math.factorial(b) ** (n // b))
    if count > limit:
        raise ValueError(f"{count} ordered partitions of {n} records into batches of {b}: more "
                         f"than {limit}; use a fixed partition")
    return mixture([run(p) for p in ordered_partitions(n, b)])
