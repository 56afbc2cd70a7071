"""The levels of an audit's family of tests: who gets which share of the error budget.

Allocation. One seeded permutation of the N trial rows (:func:`trial_rows`; drawn from the
audit seed, never from the scores) is shared by both worlds (row i of both worlds is trial i,
which may share randomness) and by every attack. Every pilot of the audit is a prefix of it:
the pilot statistics (:attr:`~audits.statistics.EpsilonStatistic.uses_allocation_pilot`) hold
out its first k = :func:`~audits.statistics.allocation_pilot_size` rows (5%), P0, the
*allocation pilot*, and the Rényi test its first 20%, a superset of P0; each test reads only
its pilot and the rows after it. The weights (the level of each test) are a function of P0
alone (:func:`pilot_allocation`), and so is, for a Rényi curve, the point of its privacy
profile the (epsilon, delta) tests are run against (:func:`profile_delta`): a kind of test
that the forecasts from P0 predict cannot reject at the whole level -- the (epsilon, delta)
tests when their predicted epsilon is at most the certified one, the Rényi tests when the fits'
Rényi divergence stays at or below the certified curve at every order -- keeps a floor share
(:data:`FLOOR_EPS`, :data:`FLOOR_RENYI`) and the other kind gets the rest; otherwise the split
is :data:`RENYI_SHARE` to the Rényi tests (:func:`allocation`).

Validity. Let beta_i(P0) be the level of test i, with sum_i beta_i(P0) <= 1 - confidence for
every value of P0 (:func:`allocation` checks this for each of its four cases). Rows are i.i.d.
and the permutation is independent of them, so given the permutation and the scores of P0, the
other rows are still i.i.d. draws of the row law, independent of P0. Test i is a function of its
pilot Pi (P0 itself, or the first 20%, which contains P0) and of rows outside Pi; it is valid at
any level fixed before its tested rows are read, conditionally on Pi, against any (epsilon,
delta) the certificate guarantees (every point of a Rényi curve's profile is one), and
beta_i(P0) and the point chosen on P0 are so fixed (P0 is part of Pi). Hence
P(test i rejects a true certificate | P0) = E[P(test i rejects | Pi) | P0] <= beta_i(P0), and
by the union bound P(some test rejects | P0) <= sum_i beta_i(P0) <= 1 - confidence for every
P0; averaging over P0 gives the unconditional guarantee. Nothing else is needed: the choice may
be as poor as the normal fits make it, it only moves power between tests. The argument needs
every test to hold out P0; a statistic that reads every trial (bonferroni-pareto,
sample-split, or pilot-window below :data:`~empirical.statistics.pilot_window.MIN_PILOT_TRIALS`
trials, where it has no pilot) would read P0 as tested data, so with one in the family the
split stays fixed (:func:`fixed_split_reason`), and the report says which rule ran
(``verdict.tests.allocation``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from audits.protocols import Certificate
from audits.results import AttackScores, finite
from audits.seeds import derived_seed
from audits.statistics import allocation_pilot_size, statistic

__all__ = ["EPS_FORECAST_MARGIN", "FLOOR_EPS", "FLOOR_RENYI", "KIND_EPS", "KIND_RENYI",
           "PROFILE_COUNT", "PROFILE_DELTA_MAX", "RENYI_MIN_TRIALS", "RENYI_PILOT_FRACTION",
           "RENYI_SHARE", "Allocation", "allocation", "fixed_split_reason", "pilot_allocation",
           "profile_delta", "trial_rows"]

# Fraction of the trials the Rényi test sets aside to choose its bins (a seeded random subset,
# independent of the tested scores; it contains the allocation pilot).
RENYI_PILOT_FRACTION = 0.2
# Smallest number of trials per side for which the histogram test is run.
RENYI_MIN_TRIALS = 20


# Share of the error budget 1 - confidence the Rényi tests get when they run (split evenly
# among them; the (epsilon, delta) tests split the rest evenly) unless the allocation pilot
# rules a kind out (:func:`pilot_allocation`). Why most of it: with a Rényi certificate the
# directed Rényi test is the one that detects a shortfall near the certified curve, while the
# threshold tests at a small delta reject only leaks far beyond it, where their reach depends on
# their level only through log(1 / level) (e.g. 0.2 instead of 2/3 of 0.05 lowers the largest
# showable epsilon at N = 10^4 by about log(10/3) = 1.2 nats).
RENYI_SHARE = 0.8
# Share of the budget a kind keeps when the allocation pilot predicts it cannot reject (the
# other kind gets the rest). Not zero: the prediction rests on normal fits of a 5% pilot, which
# heavy tails, point masses and discrete scores can fool. Measured on such scores at N = 10^4
# (docs/audits.md, "Tests and levels"): where the fits wrongly rule the (epsilon, delta) tests
# out, floors from 0.01 to 0.2 detect as often as the fixed split (their reach moves with the
# level only through log(1 / level)); 0.05 keeps them that power at a cost of 5% to the other
# kind.
FLOOR_EPS = 0.05
FLOOR_RENYI = 0.05
# The (epsilon, delta) tests are ruled out only when their pilot forecast stays below this
# share of the certified epsilon: a forecast from a 5% pilot is noisy, and a test forecast short
# of the certificate still rejects in many runs. Measured around a Gaussian curve (sigma 2,
# epsilon 2.52 at 1e-5, 60 draws a cell): a 5% atom inside the bulk at N = 2000 is forecast
# near 2.0 (0.79 of it) in the draws where stating the curve lost them (0.8 here: 36 of 60
# VIOLATIONs with the curve against 44 without; 0.65: 44 and 44), while a Gaussian shortfall
# near the curve at N = 10^4 is forecast at 0.33-0.52 of the certificate, where the Rényi tests
# must keep the budget (detection at 1.08x: 0.75 either way).
EPS_FORECAST_MARGIN = 0.65
# A Rényi curve certifies a whole privacy profile, epsilon(delta') at every delta'; the (epsilon,
# delta) tests may be run at one other point of it, delta' = PROFILE_COUNT / N (at most
# PROFILE_DELTA_MAX), when the allocation pilot forecasts more there (:func:`profile_delta`). Why
# there: a region the tests can resolve holds at least a few of the N trials, so subtracting a
# delta' of about 2 / N costs its lower bound little, while the certified epsilon falls with
# log(1 / delta'). Measured on the leak suite's Gaussian curve (sigma 2) at N = 2000, the set
# chosen with the truth refutes a scale leak in 0.25 of draws at the stated 1e-5 and 0.99 at
# 1e-3 (certified 1.556 there).
PROFILE_COUNT = 2.0
PROFILE_DELTA_MAX = 0.01
# The kinds of test of the family, as :func:`allocation` names them.
KIND_EPS, KIND_RENYI = "epsilon-delta", "renyi"


def allocation(*, n_eps: int, n_renyi: int, miss: float,
               ruled_out: Collection[str] | None = None) -> tuple[float, float]:
    """(level of each (epsilon, delta) test, level of each Rényi test) for a family of
    ``n_eps`` and ``n_renyi`` tests and total error ``miss`` = 1 - confidence. The levels sum to
    at most ``miss`` (weighted Bonferroni) whatever ``ruled_out`` is; a kind with no test gets
    level 0.

    ``ruled_out`` None: no forecast (the fixed rule), the Rényi tests share
    :data:`RENYI_SHARE`. Otherwise the kinds (:data:`KIND_EPS`, :data:`KIND_RENYI`) an
    allocation pilot predicts cannot reject: when the (epsilon, delta) tests are forecast to
    reject they get all but :data:`FLOOR_RENYI`, whatever the Rényi forecast, so that stating a
    Rényi curve beside (epsilon, delta) never leaves a promising (epsilon, delta) test with less
    than 1 - FLOOR_RENYI of the level it would have alone (their reach moves with the level only
    through log(1 / level)); when only they are ruled out the Rényi tests get all but
    :data:`FLOOR_EPS`; when both are ruled out the split is :data:`RENYI_SHARE`."""
    if n_eps < 0 or n_renyi < 0 or not 0 < miss < 1:
        raise ValueError(f"bad family ({n_eps}, {n_renyi}) or error budget {miss!r}")
    unknown = set(ruled_out or ()) - {KIND_EPS, KIND_RENYI}
    if unknown:
        raise ValueError(f"unknown kind(s) of test {sorted(unknown)}")
    if n_renyi == 0:
        return miss / max(1, n_eps), 0.0
    if n_eps == 0:
        return 0.0, miss / n_renyi
    share = RENYI_SHARE
    if ruled_out is not None:
        if KIND_EPS not in ruled_out:
            share = FLOOR_RENYI
        elif KIND_RENYI not in ruled_out:
            share = 1.0 - FLOOR_EPS
    return miss * (1.0 - share) / n_eps, miss * share / n_renyi


@dataclass(frozen=True)
class Allocation:
    """The levels of the family and how they were chosen: ``rule`` "pilot" (from the allocation
    pilot, :func:`pilot_allocation`) or "fixed" (:data:`RENYI_SHARE`, ``reason`` says why);
    ``tested_epsilon`` at ``tested_delta`` the point of the certificate the (epsilon, delta) tests
    are run against (its stated pair, or another point of its curve's privacy profile);
    ``ruled_out`` the kinds the pilot predicts cannot reject; ``predicted_epsilon`` the largest
    epsilon the (epsilon, delta) tests are predicted to show at the whole level and
    ``renyi_excess`` the largest excess of the normal fits' Rényi divergence over the certified
    curve (pilot forecasts, None under the fixed rule)."""

    alpha_eps: float
    alpha_renyi: float
    rule: str
    tested_epsilon: float
    tested_delta: float
    ruled_out: tuple[str, ...] = ()
    reason: str = ""
    predicted_epsilon: float | None = None
    renyi_excess: float | None = None

    def record(self) -> dict:
        """The allocation as the report's ``verdict.tests.allocation`` records it."""
        return {"rule": self.rule, "ruled_out": list(self.ruled_out), "reason": self.reason,
                "tested_epsilon": finite(self.tested_epsilon), "tested_delta": self.tested_delta,
                "predicted_epsilon": None if self.predicted_epsilon is None
                else finite(self.predicted_epsilon),
                "renyi_excess": None if self.renyi_excess is None else finite(self.renyi_excess)}


def trial_rows(seed: int, n: int) -> np.ndarray:
    """The one seeded permutation of the n trial rows every pilot of the audit is a prefix of
    (the same for both worlds, whose rows are paired, and for every attack)."""
    return np.random.default_rng(derived_seed(seed, "trial-rows")).permutation(n)


def fixed_split_reason(attacks: Sequence[AttackScores], *, statistics: Sequence[str],
                       n_eps: int, n_renyi: int) -> str | None:
    """Why the allocation must stay fixed for this family (None when the pilot may choose it):
    the pilot rule needs both kinds of test, paired rows, and every (epsilon, delta) statistic
    holding out exactly the allocation pilot."""
    if not n_eps or not n_renyi:
        return "one kind of test only"
    declared = [statistic(name) for name in statistics]
    others = [s.name for s in declared if not s.uses_allocation_pilot]
    if others:
        return (f"statistic(s) {', '.join(others)} use every trial, the allocation pilot "
                "included")
    sizes = {(a.unlearned.size, a.retrained.size) for a in attacks}
    if len(sizes) != 1 or len({n for pair in sizes for n in pair}) != 1:
        return "the two worlds' trials are not paired rows of one size"
    n = next(iter(sizes))[0]
    for s in declared:
        if s.reads_every_trial(n):
            return (f"with fewer than {s.min_pilot_trials()} trials the {s.name} statistic uses "
                    "every trial")
    return None


def profile_delta(certificate: Certificate, n: int) -> float | None:
    """The other point of the privacy profile the (epsilon, delta) tests may be run at, for
    ``n`` trials per side: :data:`PROFILE_COUNT` / n, at most :data:`PROFILE_DELTA_MAX`; None
    without a Rényi curve or where it is not above the stated delta."""
    if certificate.renyi_curve is None or n <= 0:
        return None
    delta = min(PROFILE_DELTA_MAX, PROFILE_COUNT / n)
    return delta if delta > certificate.delta else None


def pilot_allocation(attacks: Sequence[AttackScores], certificate: Certificate, *,
                     statistics: Sequence[str], direction: str, miss: float, rows: np.ndarray,
                     n_eps: int, n_renyi: int) -> Allocation:
    """The levels of the family, and the point of the certificate its (epsilon, delta) tests
    are run against, chosen on the allocation pilot: the rows ``rows[:k]``,
    k = :func:`~audits.statistics.allocation_pilot_size` (5%), of every attack (module
    docstring, "Allocation").

    The point is the stated (epsilon, delta) unless the certificate has a Rényi curve and the
    pilot forecasts, at the whole level ``miss``, no refutation of the stated point but one at
    :func:`profile_delta` (more than its certified epsilon, :meth:`Certificate.profile_epsilon`)
    with a larger excess than at the stated delta: a function of the pilot only, and every
    point of the profile is certified, so the choice costs no level. (A forecast short of the
    certificate does not move it: near a Gaussian curve the profile point's forecast often
    reaches a larger share of its epsilon than the stated point's, which would take the level
    from the Rényi test that detects such shortfalls.) The (epsilon, delta) kind is then ruled
    out when no test of it is predicted to show more than :data:`EPS_FORECAST_MARGIN` of the
    certified epsilon at the chosen point; the Rényi kind when the normal fits' Rényi
    divergence stays at or below the certified curve at every order. Falls back to the fixed
    split, at the stated point, when :func:`fixed_split_reason` gives a reason."""
    fixed = fixed_split_reason(attacks, statistics=statistics, n_eps=n_eps, n_renyi=n_renyi)
    if fixed is not None:
        return Allocation(*allocation(n_eps=n_eps, n_renyi=n_renyi, miss=miss), rule="fixed",
                          tested_epsilon=certificate.epsilon, tested_delta=certificate.delta,
                          reason=fixed)
    from empirical.divergences.renyi_reach import gaussian_fit_excess

    privacy_direction = certificate.privacy_direction
    curve = dict(certificate.effective_curve())
    n = attacks[0].unlearned.size
    pilot = rows[:allocation_pilot_size(n)]

    def forecast(delta: float) -> float:
        best = 0.0
        for attack in attacks:
            u, r = attack.unlearned[pilot], attack.retrained[pilot]
            for name in statistics:
                declared = statistic(name)
                if declared.forecast is None:
                    continue
                for orientation in declared.orientations(direction):
                    sign = -1.0 if orientation == "less" else 1.0
                    best = max(best, declared.forecast(
                        sign * u, sign * r, n_positive=n - pilot.size,
                        n_negative=n - pilot.size, delta=delta, alpha=miss,
                        both_orientations=orientation == "both", direction=privacy_direction))
        return best

    tested_delta, tested_epsilon = certificate.delta, certificate.epsilon
    predicted = forecast(tested_delta)
    excess = max((gaussian_fit_excess(attack.unlearned[pilot], attack.retrained[pilot],
                                      certified=curve.__getitem__, orders=list(curve),
                                      two_sided=certificate.renyi_direction == "both")
                  for attack in attacks), default=-math.inf)
    other = profile_delta(certificate, n)
    # The profile point is sought only where the stated point is not forecast to refute (where
    # it is, the stated pair is tested, as stated). A rule's bound falls as delta grows, and so
    # does the pilot's forecast (none of 1680 pilots of the peer and leak laws forecast more at
    # a larger delta): the profile point can win only where the stated point's forecast
    # exceeds epsilon(delta'), and only there is its forecast computed. Either way the choice
    # reads the pilot only.
    if (other is not None and predicted <= tested_epsilon
            and predicted > (other_epsilon := certificate.profile_epsilon(other))):
        other_predicted = forecast(other)
        if (other_predicted > other_epsilon
                and other_predicted - other_epsilon > predicted - tested_epsilon):
            tested_delta, tested_epsilon, predicted = other, other_epsilon, other_predicted
    ruled_out = tuple(kind for kind, out in (
        (KIND_EPS, predicted <= EPS_FORECAST_MARGIN * tested_epsilon),
        (KIND_RENYI, excess <= 0.0)) if out)
    alpha_eps, alpha_renyi = allocation(n_eps=n_eps, n_renyi=n_renyi, miss=miss,
                                        ruled_out=ruled_out)
    moved = ("" if tested_delta == certificate.delta else
             f" (at delta {tested_delta:.3g} of the Rényi curve's privacy profile, certified "
             f"epsilon {tested_epsilon:.6g}, where the pilot forecasts more than at the stated "
             f"delta {certificate.delta:.3g})")
    reason = (f"allocation pilot of {pilot.size} rows: the (epsilon, delta) tests predict "
              f"epsilon {predicted:.4g} at the whole level (certified "
              f"{tested_epsilon:.6g}){moved}, the normal fits exceed the certified Rényi curve by "
              f"{excess:.4g}")
    return Allocation(alpha_eps, alpha_renyi, rule="pilot", tested_epsilon=tested_epsilon,
                      tested_delta=tested_delta, ruled_out=ruled_out, reason=reason,
                      predicted_epsilon=predicted, renyi_excess=excess)
