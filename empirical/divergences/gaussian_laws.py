"""Exact output laws of mechanisms whose final parameters are Gaussian with one shared,
isotropic covariance: N(m_1, v I) after unlearning and N(m_0, v I) after retraining.

A mechanism module computes the two means and v from its own dynamics (a deterministic
descent plus output noise, or a linear-Gaussian recursion); :class:`GaussianLaws` carries them
with where they come from, and gives what depends only on the pair: the Mahalanobis distance
mu = ||m_1 - m_0|| / sqrt(v) and the log-likelihood ratio of a parameter vector (the most
powerful test between the two laws, Neyman-Pearson).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["GaussianLaws"]


@dataclass(frozen=True, eq=False)
class GaussianLaws:
    """N(``unlearned_mean``, ``variance`` I) and N(``retrained_mean``, ``variance`` I).

    Means are float64 vectors [P]; ``variance`` the per-coordinate variance shared by both
    laws; ``method`` says how they were derived and ``assumptions`` what exactness rests on.
    """

    unlearned_mean: np.ndarray
    retrained_mean: np.ndarray
    variance: float
    method: str
    assumptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        u = np.asarray(self.unlearned_mean, dtype=np.float64)
        r = np.asarray(self.retrained_mean, dtype=np.float64)
        if u.ndim != 1 or u.shape != r.shape:
            raise ValueError(f"the two means must be vectors of one length, got shapes {u.shape} "
                             f"and {r.shape}")
        if not (np.all(np.isfinite(u)) and np.all(np.isfinite(r))):
            raise ValueError("the means must be finite")
        if not (math.isfinite(self.variance) and self.variance > 0):
            raise ValueError(f"the variance must be finite and > 0, got {self.variance!r}")
        object.__setattr__(self, "unlearned_mean", u)
        object.__setattr__(self, "retrained_mean", r)
        object.__setattr__(self, "variance", float(self.variance))

    @property
    def mean_difference(self) -> np.ndarray:
        """m_1 - m_0 (float64)."""
        return self.unlearned_mean - self.retrained_mean

    def mahalanobis(self) -> float:
        """mu = ||m_1 - m_0|| / sqrt(v), the one number both divergences depend on."""
        return float(np.linalg.norm(self.mean_difference) / math.sqrt(self.variance))

    def log_likelihood_ratio(self, params: np.ndarray) -> np.ndarray:
        """log N(x; m_1, v I) - log N(x; m_0, v I) = (x - (m_1 + m_0)/2) . (m_1 - m_0) / v per
        row of ``params`` [N, P] (row by row, so a row's value does not depend on the others)."""
        x = np.ascontiguousarray(params, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.unlearned_mean.shape[0]:
            raise ValueError(f"params must be [N, {self.unlearned_mean.shape[0]}], got {x.shape}")
        middle = (self.unlearned_mean + self.retrained_mean) / 2
        return np.add.reduce((x - middle) * self.mean_difference, axis=1) / self.variance
