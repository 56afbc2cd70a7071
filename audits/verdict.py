"""The verdict of an audit: VIOLATION, CONSISTENT or INCONCLUSIVE (docs/audits.md, "Verdicts
and statuses").

VIOLATION when some test of the family exceeds the certificate; otherwise CONSISTENT only when
the design as run could have refuted it: for every attack, some test refutes the certificate on
that attack's reference violation (its scores pulled apart, :mod:`audits.analysis`). Else
INCONCLUSIVE, with the number of trials per side an audit would need to refute a mechanism
with no privacy at all (:func:`trials_needed`). The verdict reads an
:class:`~audits.analysis.Analysis`; it computes no lower bound of its own.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from audits.allocation import trial_rows
from audits.analysis import design_refutes
from audits.protocols import Certificate
from audits.report.schema import EXIT_CODES
from audits.results import AttackScores, LowerBoundResult, RenyiTestResult, finite
from audits.statistics import ScoreOrientation

if TYPE_CHECKING:
    from audits.analysis import Analysis
    from audits.detectable import Detectable
    from audits.plan import AuditPlan

__all__ = ["POSSIBLE_CAUSES", "could_refute", "decide", "trials_needed"]


def decide(plan: AuditPlan, analysis: Analysis) -> dict:
    """The verdict dict of the report (schema ``report.json``, ``verdict``) of ``analysis``
    against the plan's certificate."""
    settings, certificate = plan.settings, plan.certificate
    scored = analysis.attacks
    certified = analysis.allocation.tested_epsilon
    could = could_refute(scored, analysis.lower_bounds, analysis.renyi, certified)
    needed = None
    if not could and scored:
        # The family an adequately sized audit would run (the Rényi test included).
        needed = trials_needed(certificate, statistics=settings.statistics,
                               miss=1.0 - settings.confidence,
                               n_eps=analysis.n_eps_tests,
                               n_renyi=len(scored) if analysis.renyi_certificate else 0,
                               n_attacks=len(scored), seed=settings.seed,
                               n_now=analysis.n_trials, direction=settings.direction)
    seen = None
    refuted = (any(e.refutes(certified) for e in analysis.lower_bounds)
               or any(e.violation for e in analysis.renyi))
    if could and scored and not refuted and simulate_detectable():
        from audits.detectable import Design, detectable

        seen = detectable(certificate, Design(
            n=analysis.n_trials, statistics=tuple(settings.statistics),
            direction=settings.direction, miss=1.0 - settings.confidence,
            n_eps=analysis.n_eps_tests,
            n_renyi=len(analysis.renyi) if analysis.renyi_certificate else 0,
            n_attacks=len(scored)))
    return _verdict(certificate, analysis, confidence=settings.confidence, could_refute=could,
                    trials_needed=needed, detectable=seen)


# Set to "0" to skip the simulation of what a CONSISTENT audit could have seen (a few seconds
# per design; the report then says it was skipped). The project's own test suite sets it.
DETECTABLE_VARIABLE = "UNLEARN_DETECTABLE"


def simulate_detectable() -> bool:
    """Whether CONSISTENT verdicts simulate what they could have seen (:mod:`audits.detectable`):
    yes unless the environment variable :data:`DETECTABLE_VARIABLE` is "0"."""
    return os.environ.get(DETECTABLE_VARIABLE, "").strip() != "0"


def could_refute(attacks: list[AttackScores], lower_bounds: Sequence[LowerBoundResult],
                 renyi: Sequence[RenyiTestResult], certified: float) -> bool:
    """Whether the design as run could have refuted the certificate: for EVERY attack, some
    test of that attack refutes it on the attack's reference violation (its scores pulled
    apart). Requiring every attack keeps a mechanism whose scores lie apart under one attack
    from being called CONSISTENT because another attack's reference would have been refuted."""
    if not attacks:
        return False

    def refutes(name: str) -> bool:
        return (any(e.reach > certified for e in lower_bounds if e.attack == name)
                or any(e.could_refute for e in renyi if e.attack == name))

    return all(refutes(attack.name) for attack in attacks)


# Further draws of the reference violation that a planned number of trials must refute, each.
_NEEDED_CONFIRMATIONS = 10
# The Rényi test's pilot bins vary by draw, so ten confirmations only sample them. Measured on a
# mechanism with no privacy (N(50, 1) against N(0, 1), gaussian:rdp at sigma 1, one (epsilon,
# delta) test and one Rényi test): 1.1 times the confirmed size (264 trials) left 2 of 48 audits
# INCONCLUSIVE, 1.2 and 1.3 times none of 48.
_NEEDED_MARGIN = Fraction(5, 4)
_NEEDED_MAX = 10**7


def trials_needed(certificate: Certificate, *, statistics: Sequence[str], miss: float,
                  n_eps: int, n_renyi: int, n_attacks: int, seed: int, n_now: int,
                  direction: str) -> int | None:
    """Smallest number of trials per side (to 5%) at which this design -- the same tests,
    orientations, pilot fractions, bin rule and allocation of the error budget ``miss`` over
    ``n_eps`` (epsilon, delta) and ``n_renyi`` Rényi tests of ``n_attacks`` attacks -- shows a
    violation on the reference violation: continuous scores of the two worlds lying apart (a
    mechanism with no privacy through the attack; the tests' outcome on such scores depends
    only on their ranks, their levels on the allocation pilot's normal fits). Doubling and
    bisection on one draw, then the answer is raised by 5% until
    :data:`_NEEDED_CONFIRMATIONS` further draws all refute, plus a 25% margin
    (:data:`_NEEDED_MARGIN`) when a Rényi test is run; None when no size up to 10^7 refutes.
    At each size the levels are those the allocation gives the reference
    (:func:`_reference_levels`), so the plan is the design as it would run."""

    from bounds.calibration import least_integer
    from bounds.errors import SolverError

    curve = bool(n_renyi and certificate.renyi_curve)

    def refutes_at(n: int, draw: int) -> bool:
        rng = np.random.default_rng([seed, n, draw])
        # One reference for every test: unlearned scores above (below for orientation "less").
        u, r = 3.0 + rng.random(n), rng.random(n)
        if direction == ScoreOrientation.LESS:
            u = -u
        return design_refutes(AttackScores("reference", u, r, None, {}), certificate,
                              statistics=statistics, direction=direction, miss=miss,
                              rows=trial_rows(seed + draw, n), seed=seed + draw, n_eps=n_eps,
                              n_renyi=n_renyi, n_attacks=n_attacks)

    n = max(n_now, 1)
    try:  # doubling from the trials run, then bisection: 5% resolution is enough to plan a run
        high = least_integer(lambda k: refutes_at(k, 0), start=n, hint=n, first_step=n,
                             limit=_NEEDED_MAX, resolution=Fraction(1, 20))
    except SolverError:
        return None
    while not all(refutes_at(high, draw) for draw in range(1, _NEEDED_CONFIRMATIONS + 1)):
        high = int(math.ceil(high * 1.05))
        if high > _NEEDED_MAX:
            return None
    # A Rényi test's pilot bins differ from draw to draw and the confirmations only sample
    # them: at the confirmed size about one audit in twelve still fell short, so a plan with a
    # Rényi test adds a margin (the threshold tests' reach on separated scores is rank-only).
    needed = int(math.ceil(high * _NEEDED_MARGIN)) if curve else high
    return needed if needed <= _NEEDED_MAX else None


POSSIBLE_CAUSES = (
    "the implementation departs from the algorithm the theorem analyses (noise scale, step "
    "count, batches, clipping, projection, random seeds reused between trials)",
    "an assumption of the theorem does not hold for this data or model (smoothness, strong "
    "convexity, bounded gradients or domain, sensitivity)",
    "the theorem, its constants or its conversion to (epsilon, delta) are wrong",
)


def _verdict(certificate: Certificate, analysis: Analysis, *, confidence: float,
             could_refute: bool, trials_needed: Any, detectable: Detectable | None) -> dict:
    """CONSISTENT, VIOLATION or INCONCLUSIVE (see docs/audits.md, "Verdicts and statuses")."""
    lower_bounds, renyi, ceiling = analysis.lower_bounds, analysis.renyi, analysis.reach
    family, alpha_each, alpha_renyi = analysis.family, analysis.alpha_each, analysis.alpha_renyi
    n_trials = analysis.n_trials
    # The point of the certificate the (epsilon, delta) tests ran against: the stated pair, or
    # another point of its Rényi curve's privacy profile that the allocation pilot chose.
    certified, delta = analysis.allocation.tested_epsilon, analysis.allocation.tested_delta
    profile = ("" if delta == certificate.delta else
               f" (the point at delta {delta:.3g} of the privacy profile its Rényi curve "
               f"certifies, Balle et al. 2020, Theorem 21; the stated point is epsilon "
               f"{certificate.epsilon:.6g} at delta {certificate.delta:.3g})")
    best = max(lower_bounds, key=lambda e: e.epsilon) if lower_bounds else None
    max_lb = best.epsilon if best else 0.0
    violations = [e for e in lower_bounds if e.refutes(certified)]
    renyi_violations = [{"attack": e.attack, "orders": list(e.violating_orders),
                         "direction": e.direction, "confidence": e.confidence}
                        for e in renyi if e.violation]
    allocation = analysis.allocation.record()
    if certified > 0:
        tightness = max_lb / certified
    else:
        tightness = math.inf if max_lb > 0 else 0.0
    miss = f"{1 - confidence:.3g}"
    split = (f"each (epsilon, delta) test at confidence {1 - alpha_each:.6g}"
             + (f", each Rényi test at {1 - alpha_renyi:.6g}" if renyi else ""))
    rule = ("by a rule fixed in advance" if allocation["rule"] == "fixed" else
            "by weights chosen on the 5% allocation pilot, which no test reads again")
    levels = (f"{family} test(s), {split} (weighted Bonferroni: {1 - confidence:.3g} split "
              f"{rule}), all holding together with probability >= {confidence:g}")
    causes: list[str] = []
    needed = None
    if violations or renyi_violations:
        status = "VIOLATION"
        found = []
        if violations:
            found.append(
                f"{len(violations)} of {len(lower_bounds)} (epsilon, delta) lower bound(s) exceed "
                f"the certified epsilon {certified:.6g} at delta {delta:.3g}{profile}; the "
                f"largest is epsilon >= {max_lb:.6g} (attack {best.attack}, "
                f"{best.statistic})")
        for e in renyi_violations:
            found.append(f"the Rényi lower-bound curve of attack {e['attack']} exceeds the "
                         f"certified curve at order(s) {', '.join(f'{a:g}' for a in e['orders'])}")
        explanation = (
            f"The mechanism as run does not meet the certificate ({certificate.bound}): "
            f"{'; '.join(found)}. {levels}: unless an event of probability {miss} occurred, the "
            "unlearned models leak more than the certificate allows. This refutes the "
            "certificate for this run, not necessarily the theorem; see possible_causes."
        )
        causes = list(POSSIBLE_CAUSES)
    elif not could_refute:
        status = "INCONCLUSIVE"
        needed = trials_needed
        renyi_note = ""
        if renyi:
            renyi_note = (" and its Rényi test on those scores stays at or below the certified "
                          "curve at every order")
        explanation = (
            f"This audit of {n_trials} trials per side could not have shown a violation: run on "
            "the two worlds' scores pulled apart (what a mechanism with no privacy at all "
            "through these attacks gives, with the same split, bins and levels), its largest "
            f"epsilon lower bound is {ceiling:.4g}, not above the certified {certified:.6g} at "
            f"delta {delta:.3g}{profile}{renyi_note}. Even a mechanism leaking everything would "
            "not be refuted, so the audit says nothing about the certificate. "
            + (f"About {needed} trials per side would let it refute such a mechanism (the "
               "smallest size at which these tests refute the certificate on scores lying apart, "
               "confirmed on several draws; detecting a small violation needs more)."
               if needed is not None else
               "No audit of up to 10^7 trials per side could show a violation.")
        )
    else:
        status = "CONSISTENT"
        if best is None and not renyi:
            explanation = "No attack produced a lower bound; nothing contradicts the certificate."
        else:
            explanation = (
                f"No empirical lower bound exceeds the certified epsilon {certified:.6g} "
                f"(delta {delta:.3g}, {certificate.bound}){profile}"
                + (f"; the largest, epsilon >= {max_lb:.6g} from attack {best.attack} "
                   f"({best.statistic}), is {tightness:.3g} of the certificate"
                   if best is not None else "")
                + ("; no Rényi lower bound exceeds the certified curve" if renyi else "")
                + f". {levels}. This is absence of evidence against the certificate, not a "
                "proof of it"
                + (f": {detectable.summary()}, and saw none." if detectable is not None else
                   f" (what it could have seen was not simulated: {DETECTABLE_VARIABLE}=0).")
                + f" The largest lower bound these {n_trials} trials could show at all, on "
                "perfectly separated scores, is "
                f"{ceiling:.4g} (empirical.max_certifiable_epsilon)."
            )
    return {"status": status, "exit_code": EXIT_CODES[status],
            "certified_epsilon": finite(certified), "certified_delta": delta,
            "max_lower_bound": max_lb,
            "best_lower_bound": None if best is None else best.to_dict(),
            "tightness": finite(tightness),
            "explanation": explanation, "violations": [e.to_dict() for e in violations],
            "renyi_violations": renyi_violations, "possible_causes": causes,
            "could_show_violation": could_refute, "trials_needed": needed,
            "detectable": None if detectable is None else detectable.to_dict(),
            "tests": {"family_size": family, "alpha_each": alpha_each,
                      "confidence_each": 1.0 - alpha_each, "alpha_renyi": alpha_renyi,
                      "overall_confidence": confidence, "allocation": allocation}}
