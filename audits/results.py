"""Typed results of an audit's analysis: the attacks' scores, each test of the family and each
estimate, with one ``to_dict()`` each for the report (``report.json``, docs/report-schema.md). Between the
analysis, the verdict and the report they travel as these objects; dicts exist only at the JSON
boundary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from audits.report.schema import KIND_ESTIMATE, KIND_LOWER_BOUND

if TYPE_CHECKING:
    from empirical.statistics.checks import PrivacyDirection

__all__ = ["AttackScores", "EstimateResult", "LowerBoundResult", "RenyiTestResult", "finite"]


def finite(x: float) -> float | str:
    """``x``, or "inf"/"-inf" where it is infinite (JSON has no infinities)."""
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


@dataclass(frozen=True)
class AttackScores:
    """One attack's scores, unlearned (the positive class) and retrained, one per trial."""

    name: str
    unlearned: np.ndarray  # [n] aggregated score
    retrained: np.ndarray
    per_example: tuple[np.ndarray, np.ndarray] | None  # [n, E] when E > 1
    details: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class LowerBoundResult:
    """One (epsilon, delta) test of the family: statistic ``statistic`` on attack ``attack`` in
    one orientation. ``epsilon`` holds with probability ``confidence`` (= 1 - ``alpha_each``,
    its share of the family's level); ``reach`` is what the same test gives on the attack's
    scores pulled apart (the verdict's reference violation); ``test`` the rule that gave it
    (an :class:`empirical.statistics.ThresholdTestBound`)."""

    attack: str
    statistic: str
    method: str
    epsilon: float
    confidence: float
    reach: float
    delta: float
    privacy_direction: PrivacyDirection
    strategy: str
    positive_above: bool
    orientation_chosen_by_statistic: bool
    threshold: float
    false_positives: int
    false_negatives: int
    n_positive: int
    n_negative: int
    fpr_upper: float
    fnr_upper: float
    rules_considered: int
    family_size: int
    alpha_each: float
    overall_confidence: float
    attack_details: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def refutes(self, certified: float) -> bool:
        """Whether this bound exceeds the certified epsilon."""
        return self.epsilon > certified

    def to_dict(self) -> dict[str, Any]:
        """The report's ``empirical.lower_bounds[]`` entry."""
        return {
            "attack": self.attack,
            "statistic": self.statistic,
            "method": self.method,
            "epsilon": self.epsilon,
            "kind": KIND_LOWER_BOUND,
            "confidence": self.confidence,
            "details": {
                "delta": self.delta,
                "certificate_direction": self.privacy_direction,
                "strategy": self.strategy,
                "score_direction": ("higher score = unlearned" if self.positive_above
                                    else "lower score = unlearned"),
                "orientation_chosen_by_statistic": self.orientation_chosen_by_statistic,
                "threshold": self.threshold,
                "positive_above": self.positive_above,
                "false_positives": self.false_positives,
                "false_negatives": self.false_negatives,
                "n_positive (unlearned)": self.n_positive,
                "n_negative (retrained)": self.n_negative,
                "fpr_upper": self.fpr_upper,
                "fnr_upper": self.fnr_upper,
                "rules_considered": self.rules_considered,
                "reach": self.reach,
                "family_size": self.family_size,
                "alpha_each": self.alpha_each,
                "confidence_each": 1.0 - self.alpha_each,
                "overall_confidence": self.overall_confidence,
                **self.extra,
                **self.attack_details,
            },
        }


@dataclass(frozen=True, kw_only=True)
class RenyiTestResult:
    """One attack's directed Rényi test against the certified curve (empirical.divergences.renyi_directed):
    the lower-bound curves per order in each direction, the certified curve (non-decreasing
    form, and as stated), the same test's curve on the scores pulled apart (``ceiling``) and
    whether it exceeded the certificate there (``could_refute``)."""

    attack: str
    method: str
    confidence: float
    alpha_each: float
    overall_confidence: float
    direction: PrivacyDirection
    orders: tuple[float, ...]
    certified: tuple[float, ...]
    certified_as_stated: tuple[float, ...]
    lower_forward: tuple[float, ...]
    lower_backward: tuple[float, ...]
    estimate_forward: tuple[float, ...]
    estimate_backward: tuple[float, ...]
    ceiling: tuple[float, ...]
    could_refute: bool
    violating_orders: tuple[float, ...]
    violation: bool
    edges: tuple[float, ...]
    counts_unlearned: tuple[int, ...]
    counts_retrained: tuple[int, ...]
    n_pilot: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        """The report's ``empirical.renyi[]`` entry."""
        return {
            "attack": self.attack,
            "kind": KIND_LOWER_BOUND,
            "method": self.method,
            "confidence": self.confidence,
            "alpha_each": self.alpha_each,
            "overall_confidence": self.overall_confidence,
            "direction": self.direction,
            "orders": list(self.orders),
            "certified": [finite(v) for v in self.certified],
            "certified_as_stated": [finite(v) for v in self.certified_as_stated],
            "lower_forward": list(self.lower_forward),
            "lower_backward": list(self.lower_backward),
            "estimate_forward": [finite(v) for v in self.estimate_forward],
            "estimate_backward": [finite(v) for v in self.estimate_backward],
            "ceiling": list(self.ceiling),
            "could_refute": self.could_refute,
            "violating_orders": list(self.violating_orders),
            "violation": self.violation,
            "edges": list(self.edges),
            "counts_unlearned": list(self.counts_unlearned),
            "counts_retrained": list(self.counts_retrained),
            "n_pilot": list(self.n_pilot),
        }


@dataclass(frozen=True, kw_only=True)
class EstimateResult:
    """One estimator's number on one attack (never a bound; the verdict does not read it)."""

    name: str
    attack: str
    value: float
    interval: tuple[float, float] | None
    method: str

    def to_dict(self) -> dict[str, Any]:
        """The report's ``empirical.estimates[]`` entry."""
        return {"name": self.name, "attack": self.attack, "value": finite(float(self.value)),
                "kind": KIND_ESTIMATE,
                "interval": None if self.interval is None else [finite(self.interval[0]),
                                                                finite(self.interval[1])],
                "method": self.method}
