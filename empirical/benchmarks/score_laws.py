"""The default (epsilon, delta) statistic beside jax-privacy on score laws beyond the Gaussian.

A real attack's scores (losses, log-likelihood ratios of trained models) are rarely Gaussian.
Each law here is a location pair, unlearned shifted by one unit against retrained: Gaussian,
Laplace, logistic, exponential (a support edge), Student-t with 3 degrees of freedom (heavy
tails, a likelihood ratio that returns to 1 in both tails), a two-component Gaussian mixture
and a binomial (tied scores). :func:`peer_suite` runs both bounds on the same seeded draws and
reports the mean ratio.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from empirical.benchmarks.power import peer_epsilon
from empirical.statistics.pilot_regions import pilot_regions_epsilon_lower_bound

__all__ = ["SCORE_LAWS", "peer_suite"]


def _mixture(rng: np.random.Generator, n: int, shift: float) -> np.ndarray:
    side = np.where(rng.random(n) < 0.5, -2.0, 2.0)
    return shift + side + rng.normal(0.0, 1.0, n)


Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]
SCORE_LAWS: dict[str, Draw] = {
    "gaussian": lambda rng, n: (rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)),
    "laplace": lambda rng, n: (rng.laplace(1.0, 1.0, n), rng.laplace(0.0, 1.0, n)),
    "logistic": lambda rng, n: (rng.logistic(1.0, 1.0, n), rng.logistic(0.0, 1.0, n)),
    "exponential": lambda rng, n: (1.0 + rng.exponential(1.0, n), rng.exponential(1.0, n)),
    "student-t3": lambda rng, n: (1.0 + rng.standard_t(3, n), rng.standard_t(3, n)),
    "mixture": lambda rng, n: (_mixture(rng, n, 1.0), _mixture(rng, n, 0.0)),
    "binomial": lambda rng, n: (rng.binomial(20, 0.6, n).astype(float),
                                rng.binomial(20, 0.5, n).astype(float)),
}


def peer_suite(*, laws: Sequence[str] = tuple(SCORE_LAWS), sizes: Sequence[int] = (1_000, 10_000),
               deltas: Sequence[float] = (1e-5, 1e-3), runs: int = 20, alpha: float = 0.05,
               seed: int = 0) -> list[dict[str, Any]]:
    """Per (law, n, delta): the default statistic's and jax-privacy's mean lower bound over
    ``runs`` seeded draws of ``n`` scores per side, their ratio, and the single-draw ratios'
    range. Rows without jax-privacy installed carry ``peer`` None."""
    rows = []
    for law in laws:
        draw = SCORE_LAWS[law]
        for n in sizes:
            for delta in deltas:
                ours, theirs = [], []
                for run in range(runs):
                    rng = np.random.default_rng([seed, run, n, sorted(SCORE_LAWS).index(law)])
                    positive, negative = draw(rng, n)
                    ours.append(pilot_regions_epsilon_lower_bound(
                        positive, negative, delta=delta, alpha=alpha, seed=run).epsilon)
                    peer = peer_epsilon(positive, negative, delta=delta, alpha=alpha)
                    if peer is not None:
                        theirs.append(peer)
                row: dict[str, Any] = {"law": law, "n_per_side": n, "delta": delta,
                                       "runs": runs, "default": float(np.mean(ours)),
                                       "peer": float(np.mean(theirs)) if theirs else None}
                if theirs and row["peer"] > 0:
                    row["ratio"] = row["default"] / row["peer"]
                rows.append(row)
    return rows
