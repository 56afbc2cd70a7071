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

Each family member is audited with the design's own tests (every statistic and orientation at
the design's (epsilon, delta) level, and its Rényi test at the Rényi level where the
certificate has a curve; the Rényi test only in the shortfall family, which is where it is the
test that rejects: leaving it out elsewhere can only understate the design's power). A member is
*detected* when at least 8 of 10 simulated audits refute the certificate (80% power), decided
sequentially (stopped at 8 refutations or 3 misses); the smallest detected member of each
family is found by bisection over a fixed grid, assuming power grows along it. The figures are
simulations, with the count of refuting draws reported beside each; they describe these
families, not every way a mechanism can leak.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from audits.analysis import (
    RENYI_MIN_TRIALS,
    RENYI_PILOT_FRACTION,
    AttackScores,
    certificate_direction,
    effective_curve,
    one_lower_bound,
    reference_levels,
    trial_rows,
)
from audits.protocols import Certificate
from audits.seeds import derived_seed
from audits.statistics import statistic

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
    needs_renyi: bool


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
    Family("noise shortfall", "factor", (1.05, 1.08, 1.1, 1.15, 1.2, 1.3, 1.5, 2.0, 3.0, 5.0),
           _shortfall, True),
    Family("point-mass leak", "probability",
           (1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3), _point_mass, False),
    Family("tail leak", "weight", (1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3), _tail, False),
)


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
        if self.smallest_detected is None:
            return f"no {self.family} up to {self.label} {self.largest_tried:g}"
        what = (f"a {self.family} of {self.smallest_detected:g}x" if self.label == "factor"
                else f"a {self.family} of {self.label} {self.smallest_detected:g}")
        return f"{what} ({self.refutations}/{self.draws} simulated audits)"

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "parameter": self.label,
                "smallest_detected": self.smallest_detected, "refutations": self.refutations,
                "draws": self.draws, "largest_tried": self.largest_tried}


@dataclass(frozen=True)
class Detectable:
    """The design's detectable violations, per family, around the Gaussian equivalent ``mu``."""

    mu: float
    families: tuple[FamilyResult, ...]

    def summary(self) -> str:
        return ("this audit would have caught " + ", or ".join(f.sentence() for f in
                                                               self.families
                                                               if f.smallest_detected is not None)
                if any(f.smallest_detected is not None for f in self.families) else
                "this audit would not have caught any of the simulated violations "
                "(" + "; ".join(f.sentence() for f in self.families) + ")")

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary(), "gaussian_mu": self.mu,
                "families": [f.to_dict() for f in self.families],
                "method": (f"simulated audits of one synthetic attack with this design's tests "
                           f"and levels; a member counts as detected when at least "
                           f"{REFUTATIONS} of {DRAWS} refute the certificate; families built "
                           f"around N(mu, 1) against N(0, 1) with mu = {self.mu:.4g}, the "
                           "Gaussian mechanism that meets the certificate exactly")}


def gaussian_equivalent_mu(certificate: Certificate) -> float:
    """The largest mu for which N(mu, 1) against N(0, 1) meets the certificate: its epsilon at
    the certificate's delta (Balle and Wang 2018) and, with a curve, its Rényi divergence
    alpha mu^2 / 2 at every order of the (non-decreasing) curve. Bisection, kept on the side
    that meets the certificate."""
    from empirical.statistics.gdp import gaussian_epsilon

    high = 40.0
    for order, value in effective_curve(certificate):
        high = min(high, math.sqrt(2.0 * value / order))
    if not math.isfinite(certificate.epsilon):
        return high
    low = 0.0
    if gaussian_epsilon(mu=high, delta=certificate.delta) <= certificate.epsilon:
        return high
    for _ in range(60):
        mid = (low + high) / 2
        if gaussian_epsilon(mu=mid, delta=certificate.delta) <= certificate.epsilon:
            low = mid
        else:
            high = mid
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


def _refutes(unlearned: np.ndarray, retrained: np.ndarray, *, certificate: Certificate,
             design: Design, seed: int, renyi: bool) -> bool:
    """Whether the design's tests refute the certificate on one synthetic attack."""
    n = unlearned.size
    rows = trial_rows(seed, n)
    attack = AttackScores("synthetic", unlearned, retrained, None, {})
    privacy_direction = certificate_direction(certificate)
    n_renyi = design.n_renyi if n >= RENYI_MIN_TRIALS else 0
    alpha_eps, alpha_renyi = reference_levels(
        attack, certificate, statistics=design.statistics, direction=design.direction,
        miss=design.miss, rows=rows, n_eps=design.n_eps, n_renyi=n_renyi,
        n_attacks=design.n_attacks)
    for name in design.statistics:
        declared = statistic(name)
        for orientation in declared.orientations(design.direction):
            try:
                bound = one_lower_bound(attack, declared=declared, orientation=orientation,
                                        delta=certificate.delta, alpha_each=alpha_eps,
                                        seed=seed, privacy_direction=privacy_direction,
                                        rows=rows)
            except ValueError:
                continue
            if bound.epsilon > certificate.epsilon:
                return True
    if renyi and alpha_renyi > 0 and certificate.renyi_curve and n_renyi:
        from empirical.renyi_audit import renyi_audit

        curve = dict(effective_curve(certificate))
        return renyi_audit(unlearned, retrained, certified=curve.__getitem__,
                           two_sided=certificate.renyi_direction == "both", orders=list(curve),
                           beta=alpha_renyi, pilot_fraction=RENYI_PILOT_FRACTION,
                           rows=rows).violation
    return False


def detectable(certificate: Certificate, design: Design, *, seed: int,
               families: Sequence[Family] = FAMILIES) -> Detectable:
    """The smallest member of each family ``design`` detects with 80% power (module
    docstring)."""
    mu = gaussian_equivalent_mu(certificate)

    def count(family: Family, index: int) -> tuple[bool, int, int]:
        hits = misses = 0
        value = family.grid[index]
        for draw in range(DRAWS):
            draw_seed = derived_seed(seed, f"detectable/{family.name}/{index}/{draw}")
            rng = np.random.default_rng(draw_seed)
            u, r = family.draw(rng, design.n, mu, value)
            if _refutes(u, r, certificate=certificate, design=design, seed=draw_seed,
                        renyi=family.needs_renyi):
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
        top = len(family.grid) - 1
        found, hits, draws = count(family, top)
        if not found:
            results.append(FamilyResult(family.name, family.label, None, hits, draws,
                                        family.grid[top]))
            continue
        low, high, best = -1, top, (hits, draws)
        while high - low > 1:
            mid = (low + high) // 2
            found, hits, draws = count(family, mid)
            if found:
                high, best = mid, (hits, draws)
            else:
                low = mid
        results.append(FamilyResult(family.name, family.label, family.grid[high], best[0],
                                    best[1], family.grid[top]))
    return Detectable(mu, tuple(results))
