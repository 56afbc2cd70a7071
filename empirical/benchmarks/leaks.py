"""Leaks beyond shifts: score laws whose leak no single threshold of the score isolates well, and
the power of the best test one could fix in advance knowing the truth.

Each leak is a pair of laws for the attack score, unlearned P and retrained Q, around the
Gaussian mechanism N(mu, 1) against N(0, 1): a continuous part given by its density on a grid,
plus atoms. The yardstick of an audit's power on a leak is the *truth-chosen set*: among the
sets {dP/dQ >= c} (and, for the reverse inequality, {dP/dQ <= c}), the one whose single
Clopper-Pearson test at the audit's whole level refutes a certificate epsilon most often. Its
rate is computed exactly: for a fixed set S the false positives are Binomial(n, Q(S)) and the
false negatives Binomial(n, P(S^c)), independent, so the probability that the bound exceeds the
certificate is a sum over the binomial laws (:func:`fixed_set_power`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from empirical.statistics.thresholds import clopper_pearson_upper

__all__ = ["LEAKS", "Leak", "fixed_set_power", "truth_chosen_power"]

_GRID = np.linspace(-20.0, 30.0, 200_001)
_SHARE = 0.7  # the binding rate's part of the level, as the audits' statistics split it


def _normal(x: np.ndarray, mean: float, sd: float) -> np.ndarray:
    return np.exp(-0.5 * ((x - mean) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))


@dataclass(frozen=True)
class Leak:
    """A pair of score laws: ``density_p`` / ``density_q`` of the continuous parts (each
    integrating to 1 - its atoms' mass), atoms as (value, mass in P, mass in Q), and a sampler
    ``draw(rng, n)`` -> (unlearned, retrained)."""

    name: str
    description: str
    density_p: Callable[[np.ndarray], np.ndarray]
    density_q: Callable[[np.ndarray], np.ndarray]
    atoms: tuple[tuple[float, float, float], ...]
    draw: Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]
    no_privacy: bool = False


def _rare(p: float, mu: float) -> Leak:
    atom = mu + 8.0

    def draw(rng: np.random.Generator, n: int):
        unlearned = np.where(rng.random(n) < p, atom, rng.normal(mu, 1.0, n))
        return unlearned, rng.normal(0.0, 1.0, n)

    return Leak(f"rare leak p={p:g}",
                f"with probability {p:g} the unlearned output is one only unlearned models give",
                lambda x: (1 - p) * _normal(x, mu, 1.0), lambda x: _normal(x, 0.0, 1.0),
                ((atom, p, 0.0),), draw)


def _inner_atom(p: float, mu: float) -> Leak:
    atom = mu / 2

    def draw(rng: np.random.Generator, n: int):
        unlearned = np.where(rng.random(n) < p, atom, rng.normal(mu, 1.0, n))
        return unlearned, rng.normal(0.0, 1.0, n)

    return Leak(f"inner atom p={p:g}",
                f"with probability {p:g} the unlearned output is one exact value inside the bulk",
                lambda x: (1 - p) * _normal(x, mu, 1.0), lambda x: _normal(x, 0.0, 1.0),
                ((atom, p, 0.0),), draw)


def _tail(w: float, mu: float) -> Leak:
    start = mu + 3.0

    def tail_density(x: np.ndarray) -> np.ndarray:
        return np.where(x >= start, 2 * _normal(x, start, 1.0), 0.0)

    def draw(rng: np.random.Generator, n: int):
        moved = start + np.abs(rng.normal(0.0, 1.0, n))
        unlearned = np.where(rng.random(n) < w, moved, rng.normal(mu, 1.0, n))
        return unlearned, rng.normal(0.0, 1.0, n)

    return Leak(f"tail leak w={w:g}", f"a share {w:g} of the unlearned outputs moved past mu + 3",
                lambda x: (1 - w) * _normal(x, mu, 1.0) + w * tail_density(x),
                lambda x: _normal(x, 0.0, 1.0), (), draw)


def _scale(s: float) -> Leak:
    def draw(rng: np.random.Generator, n: int):
        return rng.normal(0.0, s, n), rng.normal(0.0, 1.0, n)

    return Leak(f"scale leak s={s:g}", f"unlearned N(0, {s:g}^2) against retrained N(0, 1): both "
                "tails", lambda x: _normal(x, 0.0, s), lambda x: _normal(x, 0.0, 1.0), (), draw)


def _multimodal(spread: float) -> Leak:
    sd = math.sqrt(0.25 + spread**2)  # the retrained law has the unlearned law's variance

    def draw(rng: np.random.Generator, n: int):
        sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        return sign * spread + rng.normal(0.0, 0.5, n), rng.normal(0.0, sd, n)

    return Leak(f"multimodal spread={spread:g}",
                f"unlearned 0.5 N(-{spread:g}, 0.5^2) + 0.5 N({spread:g}, 0.5^2) against "
                f"retrained N(0, {sd:.3g}^2) of the same variance",
                lambda x: 0.5 * (_normal(x, -spread, 0.5) + _normal(x, spread, 0.5)),
                lambda x: _normal(x, 0.0, sd), (), draw)


def _interleaved() -> Leak:
    def world(rng: np.random.Generator, n: int, parity: float) -> np.ndarray:
        k = rng.geometric(0.1, n) - rng.geometric(0.1, n)
        return 2.0 * k + parity + rng.random(n)

    def draw(rng: np.random.Generator, n: int):
        return world(rng, n, 0.0), world(rng, n, 1.0)

    return Leak("interleaved", "2K + V against 2K' + 1 + V' (K two-sided geometric, V uniform): "
                "disjoint supports, no privacy", lambda x: np.zeros_like(x),
                lambda x: np.zeros_like(x), (), draw, no_privacy=True)


# The suite around the Gaussian mechanism at mu = 1/2 (certificate sigma = 2).
LEAKS: tuple[Leak, ...] = (
    _rare(0.01, 0.5), _rare(0.05, 0.5), _inner_atom(0.05, 0.5), _tail(0.01, 0.5),
    _scale(1.6), _multimodal(1.5), _interleaved(),
)


def fixed_set_power(*, p_set: float, q_set: float, n: int, epsilon: float, delta: float,
                    alpha: float) -> float:
    """Exact probability that one Clopper-Pearson test of a set S fixed in advance refutes
    ``epsilon`` through P(S) <= e^eps Q(S) + delta: FP ~ Bin(n, Q(S)) bound at level
    ``_SHARE`` alpha, FN ~ Bin(n, 1 - P(S)) at the rest, independent. (The reverse inequality
    is the same call with the worlds swapped and S a set where Q dominates.)"""
    counts = np.arange(n + 1)
    fpr_hi = clopper_pearson_upper(counts, n, _SHARE * alpha)
    fnr_hi = clopper_pearson_upper(counts, n, (1 - _SHARE) * alpha)
    # refuted at (fp, fn) iff (1 - delta - fnr_hi) / fpr_hi > e^eps; fnr_hi grows with fn
    allowed = 1.0 - delta - math.exp(epsilon) * fpr_hi
    fn_max = np.searchsorted(fnr_hi, allowed, side="left") - 1
    p_fp = stats.binom.pmf(counts, n, min(max(q_set, 0.0), 1.0))
    p_fn = stats.binom.cdf(fn_max, n, min(max(1.0 - p_set, 0.0), 1.0))
    return float(np.sum(p_fp * np.where(fn_max >= 0, p_fn, 0.0)))


def truth_chosen_power(leak: Leak, *, n: int, epsilon: float, delta: float,
                       alpha: float = 0.05, levels: int = 400) -> tuple[float, str]:
    """(power, description) of the best set {dP/dQ >= c} or {dP/dQ <= c} fixed with the truth,
    over ``levels`` quantiles of the likelihood ratio on the grid (atoms of P alone first)."""
    dx = float(_GRID[1] - _GRID[0])
    p = leak.density_p(_GRID) * dx
    q = leak.density_q(_GRID) * dx
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.where(q > 0, np.log(p) - np.log(q), np.where(p > 0, np.inf, -np.inf))
    finite = log_ratio[np.isfinite(log_ratio) & ((p > 1e-16) | (q > 1e-16))]
    cuts = np.unique(np.quantile(finite, np.linspace(0, 1, levels))) if finite.size else []
    atom_p = sum(a[1] for a in leak.atoms if a[2] == 0)
    best, where = 0.0, "none"
    for c in cuts:
        above = log_ratio >= c
        p_above = float(p[above].sum()) + atom_p
        q_above = float(q[above].sum())
        forward = fixed_set_power(p_set=p_above, q_set=q_above, n=n, epsilon=epsilon,
                                  delta=delta, alpha=alpha)
        reverse = fixed_set_power(p_set=1.0 - q_above, q_set=1.0 - p_above, n=n,
                                  epsilon=epsilon, delta=delta, alpha=alpha)
        if forward > best:
            best, where = forward, f"{{log dP/dQ >= {c:.3g}}}"
        if reverse > best:
            best, where = reverse, f"{{log dP/dQ < {c:.3g}}} (reverse inequality)"
    return best, where
