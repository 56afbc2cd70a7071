"""False alarms of the verdict on tight non-Gaussian nulls: mechanisms whose certificate is
exactly right (or right by post-processing), audited with the default settings. A VIOLATION is
a false alarm; the audit promises at most 1 - confidence = 5% of them. Each case runs M seeds
and allows at most the 99.9% quantile of Binomial(M, 0.05) VIOLATIONs."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from audits.protocols import Certificate
from audits.runner import audit_scores

_ORDERS = (1.02, 1.1, 1.5, 2.0, 4.0, 8.0, 32.0)
_LEVEL = 0.05


def _allowed(runs: int) -> int:
    return int(stats.binom.ppf(0.999, runs, _LEVEL))


def _laplace(n: int, rng: np.random.Generator) -> tuple[Certificate, np.ndarray, np.ndarray]:
    """Laplace mechanism, sensitivity 1, scale 1: Mironov 2017, Prop. 6 gives D_alpha exactly;
    delta(eps) = 1 - exp((eps - 1)/2) for eps < 1, so the exact eps at delta is
    1 + 2 log(1 - delta)."""
    delta = 1e-5

    def divergence(a: float) -> float:
        return math.log(a / (2 * a - 1) * math.exp(a - 1)
                        + (a - 1) / (2 * a - 1) * math.exp(-a)) / (a - 1)

    cert = Certificate(epsilon=1 + 2 * math.log1p(-delta), delta=delta,
                       renyi_curve=tuple((a, divergence(a)) for a in _ORDERS))
    return cert, rng.laplace(1.0, 1.0, n), rng.laplace(0.0, 1.0, n)


def _randomized_response(n: int, rng: np.random.Generator):
    """Randomized response at eps = 1 (scores 0/1, all tied): p = e/(1 + e) against 1 - p,
    exact eps at delta log((p - delta)/(1 - p)) and the exact Bernoulli curve."""
    delta, p = 1e-5, math.e / (1 + math.e)

    def divergence(a: float) -> float:
        return math.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)

    cert = Certificate(epsilon=math.log((p - delta) / (1 - p)), delta=delta,
                       renyi_curve=tuple((a, divergence(a)) for a in _ORDERS))
    return cert, (rng.random(n) < p).astype(float), (rng.random(n) < 1 - p).astype(float)


def _point_mass_in_retrained(n: int, rng: np.random.Generator):
    """Retrained = 0.99 N(0, 1) + 0.01 at 12, unlearned N(0, 1): forward D_alpha = log(1/0.99)
    at every order, forward (eps, delta) = (log(1/0.99), 0); the reverse is unbounded."""
    value = -math.log(0.99)
    cert = Certificate(epsilon=value, delta=1e-5, renyi_direction="forward",
                       renyi_curve=tuple((a, value) for a in _ORDERS))
    retrained = np.where(rng.random(n) < 0.01, 12.0, rng.normal(0.0, 1.0, n))
    return cert, rng.normal(0.0, 1.0, n), retrained


def _shared_atom(n: int, rng: np.random.Generator):
    """Both worlds put half their mass on one tied score (0) and the rest on the Gaussian
    mechanism's laws N(1, 1) vs N(0, 1) shifted away from it: integral p^a q^(1-a) =
    1/2 + e^{a(a-1)/2} / 2, so D_alpha = log(1/2 + e^{a(a-1)/2} / 2) / (a - 1) exactly, and the
    exact eps at delta is that of the Gaussian part at delta / (1/2)."""
    from empirical.statistics.gdp import gaussian_epsilon

    delta = 1e-5

    def divergence(a: float) -> float:
        return math.log(0.5 + 0.5 * math.exp(a * (a - 1) / 2)) / (a - 1)

    cert = Certificate(epsilon=gaussian_epsilon(mu=1.0, delta=2 * delta), delta=delta,
                       renyi_curve=tuple((a, divergence(a)) for a in _ORDERS))
    atom_u, atom_r = rng.random(n) < 0.5, rng.random(n) < 0.5
    unlearned = np.where(atom_u, 0.0, 10.0 + rng.normal(1.0, 1.0, n))
    retrained = np.where(atom_r, 0.0, 10.0 + rng.normal(0.0, 1.0, n))
    return cert, unlearned, retrained


def _folded_gaussian(n: int, rng: np.random.Generator):
    """The Gaussian mechanism N(1, 1) vs N(0, 1) seen through the non-monotone score
    |s - 1/2| (post-processing keeps its exact curve alpha/2 valid)."""
    cert = Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1, sigma=1)
    return (cert, np.abs(rng.normal(1.0, 1.0, n) - 0.5), np.abs(rng.normal(0.0, 1.0, n) - 0.5))


def _gaussian(n: int, rng: np.random.Generator):
    cert = Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1, sigma=1)
    return cert, rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)


Null = Callable[[int, np.random.Generator], tuple[Certificate, np.ndarray, np.ndarray]]
NULLS: dict[str, Null] = {
    "laplace": _laplace,
    "randomized-response": _randomized_response,
    "point-mass-in-retrained": _point_mass_in_retrained,
    "folded-gaussian": _folded_gaussian,
    "shared-atom": _shared_atom,
    "gaussian": _gaussian,
}


def false_alarms(null: Null, *, n: int, runs: int, first_seed: int = 0) -> int:
    """VIOLATIONs in ``runs`` default audits of the null at n trials per side."""
    count = 0
    for seed in range(first_seed, first_seed + runs):
        cert, unlearned, retrained = null(n, np.random.default_rng([n, seed]))
        result = audit_scores(unlearned={"s": unlearned}, retrained={"s": retrained},
                              certificate=cert, seed=seed, estimators=[])
        count += result.status == "VIOLATION"
    return count


@pytest.mark.parametrize("name", sorted(NULLS))
@pytest.mark.parametrize("n", [20, 1000])
def test_tight_nulls_raise_no_false_alarm_on_a_few_seeds(name, n):
    assert false_alarms(NULLS[name], n=n, runs=2) == 0


@pytest.mark.slow  # 5 nulls x 3 sizes x 10 seeds of default audits: several minutes
@pytest.mark.parametrize("name", sorted(NULLS))
@pytest.mark.parametrize("n", [20, 10_000, 100_000])
def test_tight_nulls_false_alarms_stay_within_the_level(name, n):
    runs = 10
    assert false_alarms(NULLS[name], n=n, runs=runs, first_seed=100) <= _allowed(runs)
