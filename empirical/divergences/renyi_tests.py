"""The Rényi test of a certified curve: one entry running the directed or the histogram test.

A certificate "D_alpha(P || Q) <= eps(alpha)" about two laws of trained models holds for the law
of any attack score (data-processing inequality for Rényi divergences; van Erven and Harremoës
2014, Theorem 9). :func:`renyi_audit` splits the trials once (a permutation drawn from a seed,
never from the scores) into a pilot that chooses the test's free parts and tested rows that the
test alone reads: the directed test (:mod:`empirical.divergences.renyi_directed`, the default)
or the simultaneous-box curve (:mod:`empirical.divergences.renyi_histogram`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from empirical.divergences.renyi_directed import DirectedChoice, choose_directed, directed_curve
from empirical.divergences.renyi_histogram import (
    DEFAULT_ORDERS,
    DEFAULT_TAIL_LEVELS,
    RenyiLowerBoundCurve,
    as_score_sample,
    check_beta,
    pilot_bin_edges,
    renyi_lower_bound_curve,
)
from empirical.statistics.checks import midranks, split_order

__all__ = ["RenyiAuditResult", "SERIAL_MIN_ROWS", "SERIAL_Z", "renyi_audit",
           "rows_in_trial_order", "serial_rank_z"]

# |serial_rank_z| above which a sample's rows are taken to follow its values: i.i.d. rows pass
# it with probability about 1 - 7e-6 (so the paired test is almost never given up on trials),
# a sample sorted within blocks of 10 rows reads about 0.8 sqrt(n).
SERIAL_Z = 4.5
# Fewest rows on which the serial correlation is read (below, only a sorted sample is caught).
SERIAL_MIN_ROWS = 20

@dataclass(frozen=True)
class RenyiAuditResult:
    """Outcome of testing a certified Rényi curve against a histogram lower-bound curve.

    ``violation`` is True when some order has a lower bound above the certified value; the
    claim is then refuted at level 1 - ``curve.confidence``. ``certified`` lists eps(alpha) on
    ``curve.orders``; ``violating_orders`` the orders where a lower bound exceeds it.
    """

    violation: bool
    violating_orders: tuple[float, ...]
    certified: tuple[float, ...]
    two_sided: bool
    curve: RenyiLowerBoundCurve
    n_pilot_p: int
    n_pilot_q: int
    choice: DirectedChoice | None = None


def rows_in_trial_order(scores_p: np.ndarray, scores_q: np.ndarray) -> bool:
    """Whether two score samples may be taken as rows of trials (row i of both is one trial):
    equal sizes, and neither sample in an order that follows its values. A sorted sample, or
    one sorted within blocks (scores gathered from sorted shards), pairs the i-th smallest
    scores of the two worlds, not trials: their differences vary far less than those of
    independent trials, and a paired test reads that as evidence (7% false alarms at a 5% level
    on a tight Gaussian curve at n = 10^4, sorted or sorted within blocks of 100 or 1000).
    Such an order shows as a lag-1 serial correlation of the sample's ranks far above what
    i.i.d. rows give (:func:`serial_rank_z`), or, on few rows, as a sorted sample (i.i.d.
    scores of a continuous law come sorted with probability 2/n!; a discrete law's can, as a
    lone 1 last among 0s, and are then not paired, which costs power only)."""
    def follows_values(x: np.ndarray) -> bool:
        steps = np.diff(x)
        if np.any(steps != 0) and (np.all(steps >= 0) or np.all(steps <= 0)):
            return True
        return abs(serial_rank_z(x)) > SERIAL_Z

    return scores_p.size == scores_q.size and not (follows_values(scores_p)
                                                   or follows_values(scores_q))


def serial_rank_z(scores: np.ndarray) -> float:
    """sqrt(n) times the lag-1 serial correlation of a sample's midranks: about N(0, 1) for
    i.i.d. rows of any law (Wald and Wolfowitz 1943), near sqrt(n) for rows that follow their
    values; 0 for fewer than :data:`SERIAL_MIN_ROWS` rows or a constant sample."""
    n = scores.size
    if n < SERIAL_MIN_ROWS:
        return 0.0
    centred = midranks(scores) - (n + 1) / 2.0
    spread = float(centred @ centred)
    if not spread > 0:
        return 0.0
    return float(centred[:-1] @ centred[1:]) / spread * math.sqrt(n)


def renyi_audit(
    scores_p,
    scores_q,
    *,
    certified: Callable[[float], float],
    two_sided: bool = True,
    orders: Sequence[float] = DEFAULT_ORDERS,
    beta: float = 0.05,
    pilot_fraction: float = 0.2,
    levels: Sequence[float] = DEFAULT_TAIL_LEVELS,
    seed: int = 0,
    stop_at_violation: bool = False,
    method: str = "directed",
    rows=None,
    paired: bool = True,
) -> RenyiAuditResult:
    """Test a certified Rényi curve alpha -> eps(alpha) against attack scores of two worlds.

    ``scores_p`` / ``scores_q`` are i.i.d. scores of the two worlds (e.g. unlearned and
    retrained). A random ``pilot_fraction`` of each (one permutation of the trials drawn from
    ``seed``, never from the scores, so paired trials stay on the same side of the split) fixes
    the bins and is discarded; the rest gives the simultaneous lower-bound
    curve. ``two_sided=True`` means the certificate caps both D(P || Q) and D(Q || P) (a
    Rényi difference as in Chien et al. 2024, Def. 2.1); then both directions are tested, else
    only D(P || Q). VIOLATION: some lower bound exceeds eps(alpha); the claim is refuted with
    probability of a false alarm <= beta (data-processing inequality + simultaneous boxes).
    ``method="directed"`` (the default) runs the directed test of the module docstring: one
    bound at one order and direction chosen on the pilot, with the whole level ``beta``
    (``levels`` is then unused: the pilot chooses its own bins). ``method="boxes"`` runs the
    simultaneous-box curve over every order; there ``stop_at_violation=True`` evaluates the
    orders one at a time and stops at the first violating one (the curve then holds only the
    orders evaluated): the verdict is the same, for callers that only need it. ``rows``, when
    given, is the split instead of one drawn from ``seed``: a permutation of the row indices
    drawn independently of the scores, whose first ``pilot_fraction`` of each side is the pilot
    (:func:`~empirical.statistics.checks.split_order`). ``paired`` (the default): samples of
    equal size are rows (row i of both worlds is one trial; rows i.i.d.), so the directed test
    may run as one paired test (:mod:`empirical.divergences.renyi_directed`, (4)); False keeps
    the two worlds' bounds apart (only each world's sample is assumed i.i.d.), as do samples
    that cannot be rows in trial order (:func:`rows_in_trial_order`).
    """
    p = as_score_sample(scores_p, "scores_p")
    q = as_score_sample(scores_q, "scores_q")
    paired = paired and rows_in_trial_order(p, q)
    if not (0.0 < pilot_fraction < 1.0):
        raise ValueError(f"pilot_fraction must lie in (0, 1), got {pilot_fraction!r}")
    order_p, order_q = split_order(rows, p.size, q.size, seed=seed)
    p, q = p[order_p], q[order_q]
    n_pp, n_pq = int(round(pilot_fraction * p.size)), int(round(pilot_fraction * q.size))
    if min(n_pp, n_pq) < 2 or n_pp >= p.size - 1 or n_pq >= q.size - 1:
        raise ValueError("pilot_fraction leaves too few pilot or tested scores")
    if method not in ("directed", "boxes"):
        raise ValueError(f"method must be 'directed' or 'boxes', got {method!r}")
    orders = tuple(float(a) for a in orders)
    if not orders or any(not (math.isfinite(a) and a > 1.0) for a in orders):
        raise ValueError("orders must be a non-empty list of finite Rényi orders > 1")
    if method == "directed":
        beta = check_beta(beta)
        choice = choose_directed(p[:n_pp], q[:n_pq], certified=certified, orders=orders,
                                 two_sided=two_sided, beta=beta, n_p=p.size - n_pp,
                                 n_q=q.size - n_pq, paired=paired)
        curve = directed_curve(p[n_pp:], q[n_pq:], choice, orders=orders, beta=beta)
        certified_values = tuple(float(certified(a)) for a in curve.orders)
        violating = tuple(
            a for a, fwd, bwd, c in zip(curve.orders, curve.forward, curve.backward,
                                        certified_values, strict=True)
            if fwd > c or (two_sided and bwd > c))
        return RenyiAuditResult(violation=bool(violating), violating_orders=violating,
                                certified=certified_values, two_sided=two_sided, curve=curve,
                                n_pilot_p=n_pp, n_pilot_q=n_pq, choice=choice)
    edges = pilot_bin_edges(p[:n_pp], q[:n_pq], levels=levels)

    def violating_orders(curve: RenyiLowerBoundCurve) -> tuple[float, ...]:
        return tuple(
            a for a, fwd, bwd in zip(curve.orders, curve.forward, curve.backward, strict=True)
            if fwd > float(certified(a)) or (two_sided and bwd > float(certified(a)))
        )

    if stop_at_violation:
        parts: list[RenyiLowerBoundCurve] = []
        for order in orders:
            parts.append(renyi_lower_bound_curve(p[n_pp:], q[n_pq:], edges=edges,
                                                 orders=[order], beta=beta))
            if violating_orders(parts[-1]):
                break
        curve = dataclasses.replace(parts[0], **{
            name: tuple(v for part in parts for v in getattr(part, name))
            for name in ("orders", "forward", "backward", "estimate_forward",
                         "estimate_backward")})
    else:
        curve = renyi_lower_bound_curve(p[n_pp:], q[n_pq:], edges=edges, orders=orders,
                                        beta=beta)
    certified_values = tuple(float(certified(a)) for a in curve.orders)
    violating = violating_orders(curve)
    return RenyiAuditResult(
        violation=bool(violating),
        violating_orders=violating,
        certified=certified_values,
        two_sided=two_sided,
        curve=curve,
        n_pilot_p=n_pp,
        n_pilot_q=n_pq,
    )
