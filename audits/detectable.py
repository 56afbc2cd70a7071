"""What a CONSISTENT audit could have seen: the smallest violations its design detects.

A CONSISTENT verdict is absence of evidence; how much absence depends on the design (trials,
statistics, levels, the certificate's delta and curve). This module measures it by simulation,
once per design, on one synthetic attack whose scores come from named families of violations
built around the Gaussian mechanism that meets the certificate exactly (the largest mu whose
N(mu, 1) against N(0, 1) has epsilon(delta) and Rényi curve within the certificate):

* **noise shortfall** f: unlearned N(f mu, 1) against retrained N(0, 1) (the noise divided by f);
* **point-mass leak** p: with probability p the unlearned output is one only unlearned models
  give (an atom past the bulk), else N(mu, 1);
* **tail leak** w: a share w of the unlearned outputs moved beyond mu + 3 (mu + 3 + |Z|).

Each family member is audited with the design's own tests, at the levels the design's
allocation gives them (chosen on each simulated draw's own pilot, as the audit chose them):
every statistic and orientation, and, in the noise-shortfall family, the Rényi test where the
certificate has a curve (near the curve it is the test that rejects; its pilot's choice costs a
tenth of a second a draw, so the leak families leave it out, which can only understate what the
design sees). A member is
*detected* when at least 8 of 10 simulated audits refute the certificate (80% power), decided
sequentially (stopped at 8 refutations or 3 misses); the smallest detected member of each family
is found by bisection over a fixed grid, assuming power grows along it. At most
:data:`MAX_SIMULATED_TRIALS` trials per side are simulated: with more trials run, the figures
understate what the audit could see, never overstate it. They are simulations, with the count of
refuting draws reported beside each, and describe these families, not every way a mechanism can
leak.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from audits.allocation import trial_rows
from audits.analysis import design_refutes
from audits.protocols import Certificate
from audits.results import AttackScores
from audits.seeds import derived_seed

__all__ = ["DRAWS", "FAMILIES", "REFUTATIONS", "Design", "Detectable", "FamilyResult",
           "detectable", "gaussian_equivalent_mu"]

DRAWS = 10
REFUTATIONS = 8  # of DRAWS: 80% power


@dataclass(frozen=True)
class Family:
    """A family of violations: ``name``, the parameter's ``label``, its increasing ``grid``
    (larger = stronger leak) and ``draw(rng, n, mu, value)`` -> (unlearned, retrained)."""

    name: str
    label: str
    grid: tuple[float, ...]
    draw: Callable[[np.random.Generator, int, float, float], tuple[np.ndarray, np.ndarray]]
    with_renyi: bool


def _shortfall(rng: np.random.Generator, n: int, mu: float, factor: float):
    return rng.normal(factor * mu, 1.0, n), rng.normal(0.0, 1.0, n)


def _point_mass(rng: np.random.Generator, n: int, mu: float, p: float):
    unlearned = np.where(rng.random(n) < p, mu + 12.0, rng.normal(mu, 1.0, n))
    return unlearned, rng.normal(0.0, 1.0, n)


def _tail(rng: np.random.Generator, n: int, mu: float, w: float):
    base = rng.normal(mu, 1.0, n)
    moved = mu + 3.0 + np.abs(rng.normal(0.0, 1.0, n))
    return np.where(rng.random(n) < w, moved, base), rng.normal(0.0, 1.0, n)


FAMILIES: tuple[Family, ...] = (
    Family("noise shortfall", "factor", (1.05, 1.1, 1.15, 1.2, 1.3, 1.5, 2.0, 3.0), _shortfall,
           with_renyi=True),
    Family("point-mass leak", "probability", (1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3), _point_mass,
           with_renyi=False),
    Family("tail leak", "weight", (3e-3, 0.01, 0.03, 0.1, 0.3), _tail, with_renyi=False),
)
# Trials per side simulated: the audit's own, up to this many. Power grows with the trials, so
# simulating fewer than were run can only understate what the audit could see (the report
# says so); it keeps the simulation to a few seconds.
MAX_SIMULATED_TRIALS = 10_000


@dataclass(frozen=True)
class FamilyResult:
    """The smallest grid value of one family detected in at least :data:`REFUTATIONS` of
    :data:`DRAWS` simulated audits (None: not even the largest), with its count."""

    family: str
    label: str
    smallest_detected: float | None
    refutations: int
    draws: int
    largest_tried: float

    def sentence(self) -> str:
        """One clause for the verdict's summary."""
        if self.smallest_detected is None:
            return f"no {self.family} up to {self.label} {self.largest_tried:g}"
        what = (f"a {self.family} of {self.smallest_detected:g}x" if self.label == "factor"
                else f"a {self.family} of {self.label} {self.smallest_detected:g}")
        return f"{what} ({self.refutations}/{self.draws} simulated audits)"

    def to_dict(self) -> dict[str, Any]:
        """The report's ``verdict.detectable.families[]`` entry."""
        return {"family": self.family, "parameter": self.label,
                "smallest_detected": self.smallest_detected, "refutations": self.refutations,
                "draws": self.draws, "largest_tried": self.largest_tried}


@dataclass(frozen=True)
class Detectable:
    """The design's detectable violations, per family, around the Gaussian equivalent ``mu``."""

    mu: float
    families: tuple[FamilyResult, ...]
    simulated_trials: int
    trials: int

    def summary(self) -> str:
        """The sentence the verdict prints ("this audit would have caught ...")."""
        return ("this audit would have caught " + ", or ".join(f.sentence() for f in
                                                               self.families
                                                               if f.smallest_detected is not None)
                if any(f.smallest_detected is not None for f in self.families) else
                "this audit would not have caught any of the simulated violations "
                "(" + "; ".join(f.sentence() for f in self.families) + ")")

    def to_dict(self) -> dict[str, Any]:
        """The report's ``verdict.detectable``."""
        return {"summary": self.summary(), "gaussian_mu": self.mu,
                "simulated_trials": self.simulated_trials,
                "families": [f.to_dict() for f in self.families],
                "method": (f"simulated audits of one synthetic attack with this design's tests "
                           f"and levels; a member counts as detected when at least "
                           f"{REFUTATIONS} of {DRAWS} refute the certificate; families built "
                           f"around N(mu, 1) against N(0, 1) with mu = {self.mu:.4g}, the "
                           "Gaussian mechanism that meets the certificate exactly"
                           + (f"; simulated at {self.simulated_trials} trials per side, fewer "
                              f"than the {self.trials} run, which understates what the audit "
                              "could see" if self.simulated_trials < self.trials else ""))}


def gaussian_equivalent_mu(certificate: Certificate) -> float:
    """The largest mu for which N(mu, 1) against N(0, 1) meets the certificate: its epsilon at
    the certificate's delta (its hockey-stick divergence at the certified epsilon at most delta,
    Balle and Wang 2018) and, with a curve, its Rényi divergence alpha mu^2 / 2 at every order of
    the (non-decreasing) curve. Bisection, kept on the side that meets the certificate."""
    from empirical.statistics.gdp import gaussian_delta

    high = 40.0
    for order, value in certificate.effective_curve():
        high = min(high, math.sqrt(2.0 * value / order))
    if not math.isfinite(certificate.epsilon):
        return high

    def meets(mu: float) -> bool:  # delta(eps) of the Gaussian pair grows with mu
        return gaussian_delta(mu=mu, epsilon=certificate.epsilon) <= certificate.delta

    if meets(high):
        return high
    low = 0.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if meets(mid) else (low, mid)
    return low


@dataclass(frozen=True, kw_only=True)
class Design:
    """What an audit ran: ``n`` trials per side, its statistics and score direction, its
    error budget ``miss`` over ``n_eps`` (epsilon, delta) and ``n_renyi`` Rényi tests of
    ``n_attacks`` attacks (the levels are the allocation's, chosen on each draw's own pilot as
    the audit chose them; with several attacks the least each kind can get,
    :func:`audits.analysis.reference_levels`)."""

    n: int
    statistics: tuple[str, ...]
    direction: str
    miss: float
    n_eps: int
    n_renyi: int
    n_attacks: int


def detectable(certificate: Certificate, design: Design,
               families: Sequence[Family] = FAMILIES) -> Detectable:
    """The smallest member of each family ``design`` detects with 80% power (module
    docstring). A function of the certificate and the design alone (its draws are seeded from
    them, not from the audit's data or seed), computed once per design in a process."""
    key = (certificate.epsilon, certificate.delta, tuple(certificate.renyi_curve or ()),
           certificate.renyi_direction, design, tuple(families))
    return _detectable(key)


@functools.lru_cache(maxsize=64)
def _detectable(key: tuple) -> Detectable:
    epsilon, delta, curve, renyi_direction, design, families = key
    certificate = Certificate(epsilon=epsilon, delta=delta, renyi_curve=curve or None,
                              renyi_direction=renyi_direction)
    # Seeded by what the figures are a function of (the families by name: a function's repr
    # carries its address, which would change the draws from one process to the next).
    named = (epsilon, delta, curve, renyi_direction, design, tuple(f.name for f in families))
    seed = derived_seed(0, f"detectable/{named!r}")
    mu = gaussian_equivalent_mu(certificate)
    n = min(design.n, MAX_SIMULATED_TRIALS)

    def count(family: Family, index: int) -> tuple[bool, int, int]:
        hits = misses = 0
        value = family.grid[index]
        for draw in range(DRAWS):
            draw_seed = derived_seed(seed, f"detectable/{family.name}/{index}/{draw}")
            u, r = family.draw(np.random.default_rng(draw_seed), n, mu, value)
            if design_refutes(AttackScores("synthetic", u, r, None, {}), certificate,
                              statistics=design.statistics, direction=design.direction,
                              miss=design.miss, rows=trial_rows(draw_seed, n), seed=draw_seed,
                              n_eps=design.n_eps, n_renyi=design.n_renyi,
                              n_attacks=design.n_attacks, with_renyi=family.with_renyi):
                hits += 1
                if hits >= REFUTATIONS:
                    return True, hits, draw + 1
            else:
                misses += 1
                if misses > DRAWS - REFUTATIONS:
                    return False, hits, draw + 1
        return hits >= REFUTATIONS, hits, DRAWS

    results = []
    for family in families:
        if family.label == "factor" and mu <= 0:
            continue  # no Gaussian meets the certificate: no noise to fall short of
        # Bisection for the smallest detected grid value (power assumed to grow along it);
        # "high" is detected once some value is, len(grid) stands for "none".
        low, high, best = -1, len(family.grid), (0, 0)
        while high - low > 1:
            mid = (low + high) // 2
            found, hits, draws = count(family, mid)
            if found:
                high, best = mid, (hits, draws)
            else:
                low, best = mid, best if high < len(family.grid) else (hits, draws)
        detected = high < len(family.grid)
        results.append(FamilyResult(family.name, family.label,
                                    family.grid[high] if detected else None, best[0], best[1],
                                    family.grid[-1]))
    return Detectable(mu, tuple(results), n, design.n)
