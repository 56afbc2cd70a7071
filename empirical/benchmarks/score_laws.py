"""The default (epsilon, delta) statistic beside jax-privacy on score laws beyond the Gaussian.

A real attack's scores (losses, log-likelihood ratios of trained models) are rarely Gaussian.
Each law here is a location pair, unlearned shifted by one unit against retrained: Gaussian,
Laplace, logistic, exponential (a support edge), Student-t with 3 degrees of freedom (heavy
tails, a likelihood ratio that returns to 1 in both tails), a two-component Gaussian mixture
and a binomial (tied scores). :func:`peer_suite` runs both bounds on the same seeded draws and
reports the mean ratio, beside the ceiling :func:`truth_chosen_bound` computes exactly from each
law's declared survival functions: the mean bound of the one threshold a tester knowing the law
would fix (``unlearn bench laws``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from empirical.benchmarks.power import peer_epsilon
from empirical.statistics.pilot_regions import pilot_regions_epsilon_lower_bound
from empirical.statistics.thresholds import clopper_pearson_upper

__all__ = ["SCORE_LAWS", "LawRow", "ScoreLaw", "TruthChosenBound", "fixed_rule_mean_bound",
           "law_table", "peer_suite", "truth_chosen_bound"]


_MIXTURE_MODES = (-2.0, 2.0)


def _mixture(rng: np.random.Generator, n: int, shift: float) -> np.ndarray:
    side = np.where(rng.random(n) < 0.5, *_MIXTURE_MODES)
    return shift + side + rng.normal(0.0, 1.0, n)


def _mixture_survival(t: np.ndarray, shift: float) -> np.ndarray:
    return sum(0.5 * stats.norm.sf(t - shift - mode) for mode in _MIXTURE_MODES)


Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]
Survival = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class ScoreLaw:
    """One location pair of the peer suite: ``draw(rng, n)`` gives ``n`` unlearned and ``n``
    retrained scores; ``survival_positive(t)`` and ``survival_negative(t)`` are their exact
    P(score >= t); ``thresholds`` the grid the truth-chosen threshold is sought on (every
    support point of a discrete law)."""

    draw: Draw
    survival_positive: Survival
    survival_negative: Survival
    thresholds: np.ndarray = dataclasses.field(
        default_factory=lambda: np.linspace(-8.0, 10.0, 361))


SCORE_LAWS: dict[str, ScoreLaw] = {
    "gaussian": ScoreLaw(
        lambda rng, n: (rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)),
        lambda t: stats.norm.sf(t - 1.0), stats.norm.sf),
    "laplace": ScoreLaw(
        lambda rng, n: (rng.laplace(1.0, 1.0, n), rng.laplace(0.0, 1.0, n)),
        lambda t: stats.laplace.sf(t - 1.0), stats.laplace.sf),
    "logistic": ScoreLaw(
        lambda rng, n: (rng.logistic(1.0, 1.0, n), rng.logistic(0.0, 1.0, n)),
        lambda t: stats.logistic.sf(t - 1.0), stats.logistic.sf),
    "exponential": ScoreLaw(
        lambda rng, n: (1.0 + rng.exponential(1.0, n), rng.exponential(1.0, n)),
        lambda t: stats.expon.sf(t - 1.0), stats.expon.sf,
        # the support edges 0 and 1 are where the reverse inequality's optimum lies
        np.union1d(np.linspace(-1.0, 12.0, 261), [1.0])),
    "student-t3": ScoreLaw(
        lambda rng, n: (1.0 + rng.standard_t(3, n), rng.standard_t(3, n)),
        lambda t: stats.t.sf(t - 1.0, 3), lambda t: stats.t.sf(t, 3)),
    "mixture": ScoreLaw(
        lambda rng, n: (_mixture(rng, n, 1.0), _mixture(rng, n, 0.0)),
        lambda t: _mixture_survival(t, 1.0), lambda t: _mixture_survival(t, 0.0)),
    "binomial": ScoreLaw(
        lambda rng, n: (rng.binomial(20, 0.6, n).astype(float),
                        rng.binomial(20, 0.5, n).astype(float)),
        lambda t: stats.binom.sf(np.ceil(t) - 1.0, 20, 0.6),
        lambda t: stats.binom.sf(np.ceil(t) - 1.0, 20, 0.5),
        np.arange(0.0, 22.0)),
}


@dataclass(frozen=True)
class TruthChosenBound:
    """The exact mean of one Clopper-Pearson (epsilon, delta) lower bound at a threshold fixed
    with the truth, the whole level on it, every row tested (:func:`truth_chosen_bound`)."""

    epsilon_mean: float
    threshold: float
    inequality: str  # "forward": {score >= t} bound by its FPR; "reverse": {score < t}, its FNR
    binding_share: float  # the binding rate's part of the level


# Binding-rate shares of the level the truth-chosen rule may take (the audits' own is 0.7).
_BINDING_SHARES = (0.5, 0.6, 0.7, 0.8, 0.9)
# Binomial tails beyond this many standard deviations (plus one count) are left out of the
# exact mean: their mass is at most 2e-18 for p from 1e-7 to 1 - 1e-7 and n from 300 to 10^4,
# and a bound is below 50, so the mean moves by less than 1e-16.
_TAIL_SDS = 9.0


def _counts(p: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    sd = math.sqrt(n * p * (1.0 - p)) + 1.0
    k = np.arange(max(0, math.floor(n * p - _TAIL_SDS * sd)),
                  min(n, math.ceil(n * p + _TAIL_SDS * sd)) + 1)
    return k, stats.binom.pmf(k, n, p)


def fixed_rule_mean_bound(*, detected: float, binding: float, n: int, delta: float,
                          alpha: float, binding_share: float) -> float:
    """Exact mean of max(0, log((1 - delta - FNR_hi) / FPR_hi)) for one set S fixed in
    advance, tested on ``n`` rows a world: FPR_hi the Clopper-Pearson upper bound at
    ``binding_share`` alpha on the binding count ~ Bin(n, ``binding``), FNR_hi at the rest on
    the missed count ~ Bin(n, 1 - ``detected``), independent (Kairouz, Oh, Viswanath 2015,
    Theorem 2.1; Clopper and Pearson 1934)."""
    missed, missed_pmf = _counts(1.0 - detected, n)
    bound, bound_pmf = _counts(binding, n)
    lower = 1.0 - delta - clopper_pearson_upper(missed, n, (1.0 - binding_share) * alpha)
    upper = clopper_pearson_upper(bound, n, binding_share * alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.log(np.where(lower > 0.0, lower, np.nan))[:, None] - np.log(upper)[None, :]
    value = np.where(np.isnan(value), 0.0, np.maximum(value, 0.0))
    return float(missed_pmf @ value @ bound_pmf)


def truth_chosen_bound(law: str, *, n: int, delta: float, alpha: float = 0.05
                       ) -> TruthChosenBound:
    """The best mean bound of a single threshold rule chosen knowing ``law``: over the law's
    threshold grid, both inequalities and the binding shares, the rule whose exact mean
    (:func:`fixed_rule_mean_bound`) is largest, with all ``n`` rows a world and all of
    ``alpha``. No valid test that must find its rule in the data does better on average unless
    it, like the peer, maximizes over many rules; it is the ceiling the peer suite's cells are
    read against."""
    score_law = SCORE_LAWS[law]
    best = TruthChosenBound(0.0, math.nan, "none", math.nan)
    for t in score_law.thresholds:
        p_above = float(score_law.survival_positive(np.asarray(t)))
        q_above = float(score_law.survival_negative(np.asarray(t)))
        candidates = (("forward", p_above, q_above), ("reverse", 1.0 - q_above, 1.0 - p_above))
        for inequality, detected, binding in candidates:
            if not (binding < 1.0 and detected > delta):
                continue
            for share in _BINDING_SHARES:
                mean = fixed_rule_mean_bound(detected=detected, binding=binding, n=n,
                                             delta=delta, alpha=alpha, binding_share=share)
                if mean > best.epsilon_mean:
                    best = TruthChosenBound(mean, float(t), inequality, share)
    return best


@dataclass(frozen=True)
class LawRow:
    """One cell of the peer suite: the default statistic's and jax-privacy's mean lower bound
    over ``runs`` seeded draws, and the exact mean of the rule fixed with the truth
    (:func:`truth_chosen_bound`). ``peer`` is None without jax-privacy installed."""

    law: str
    n_per_side: int
    delta: float
    runs: int
    default: float
    peer: float | None
    truth_chosen: TruthChosenBound

    @property
    def ratio(self) -> float | None:
        """Default over peer (None without a positive peer mean)."""
        return self.default / self.peer if self.peer else None

    def to_dict(self) -> dict[str, Any]:
        """The row at the JSON boundary, with both means over the truth-chosen rule's."""
        ceiling = self.truth_chosen.epsilon_mean
        return {"law": self.law, "n_per_side": self.n_per_side, "delta": self.delta,
                "runs": self.runs, "default": self.default, "peer": self.peer,
                "ratio": self.ratio, "truth_chosen": dataclasses.asdict(self.truth_chosen),
                "default_over_truth_chosen": self.default / ceiling if ceiling > 0 else None,
                "peer_over_truth_chosen": (self.peer / ceiling
                                           if ceiling > 0 and self.peer is not None else None)}


def peer_suite(*, laws: Sequence[str] = tuple(SCORE_LAWS), sizes: Sequence[int] = (1_000, 10_000),
               deltas: Sequence[float] = (1e-5, 1e-3), runs: int = 20, alpha: float = 0.05,
               seed: int = 0, progress: Callable[[str], None] | None = None
               ) -> tuple[LawRow, ...]:
    """Per (law, n, delta): the default statistic's and jax-privacy's mean lower bound over
    ``runs`` seeded draws of ``n`` scores per side (draw ``run`` from
    ``default_rng([seed, run, n, law's index in sorted order])``, the default's pilot seeded by
    ``run``) and the truth-chosen rule's exact mean."""
    unknown = sorted(set(laws) - set(SCORE_LAWS))
    if unknown:
        raise ValueError(f"unknown score law(s) {unknown}; known: {sorted(SCORE_LAWS)}")
    rows = []
    for law in laws:
        draw = SCORE_LAWS[law].draw
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
                rows.append(LawRow(law=law, n_per_side=n, delta=delta, runs=runs,
                                   default=float(np.mean(ours)),
                                   peer=float(np.mean(theirs)) if theirs else None,
                                   truth_chosen=truth_chosen_bound(law, n=n, delta=delta,
                                                                   alpha=alpha)))
                if progress is not None:
                    progress(f"{law} N={n} delta={delta:g}: default {rows[-1].default:.4g}")
    return tuple(rows)


def law_table(rows: Sequence[LawRow]) -> str:
    """The peer suite as a text table: means, default / peer, and both over the truth-chosen
    rule's mean."""
    lines = [f"{'law':12s} {'N':>6s} {'delta':>7s} {'default':>8s} {'peer':>8s} {'truth':>8s} "
             f"{'def/peer':>8s} {'def/truth':>9s} {'peer/truth':>10s}"]
    for row in rows:
        ceiling = row.truth_chosen.epsilon_mean

        def cell(value: float | None, width: int) -> str:
            return f"{value:{width}.3f}" if value is not None else f"{'-':>{width}s}"

        lines.append(
            f"{row.law:12s} {row.n_per_side:6d} {row.delta:7.0e} {row.default:8.3f} "
            f"{cell(row.peer, 8)} {ceiling:8.3f} {cell(row.ratio, 8)} "
            f"{cell(row.default / ceiling if ceiling > 0 else None, 9)} "
            f"{cell(row.peer / ceiling if ceiling > 0 and row.peer is not None else None, 10)}")
    lines.append("truth: the exact mean bound of the best threshold fixed knowing the law, the "
                 "whole level on it, every row tested (empirical.benchmarks.score_laws)")
    return "\n".join(lines)
