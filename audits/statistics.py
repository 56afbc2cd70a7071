"""The (epsilon, delta) statistics an audit can run, each declared once.

A statistic turns one attack's two score samples (unlearned = positive, retrained = negative)
into an epsilon lower bound at the certificate's delta, at a level the audit's allocation gives
it (:mod:`audits.analysis`). Its declaration says everything the pipeline needs to know about it:
how it is run, in how many score orientations it counts as a test, whether its pilot is exactly
the audit's allocation pilot (and so may let the pilot choose the levels), the largest bound it
can ever give (for the verdict's reach), and what its pilot forecasts (for the allocation).
Spec parsing, analysis, verdict and report read the declarations from :func:`statistic`; a name
appears only here.

Validity of each statistic is proved in the empirical module it calls
(:mod:`empirical.statistics`); this module only binds names to them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from audits.seeds import derived_seed

if TYPE_CHECKING:
    from empirical.statistics.checks import PrivacyDirection

__all__ = [
    "ALLOCATION_PILOT_FRACTION",
    "DEFAULT_STATISTICS",
    "EpsilonStatistic",
    "ScoreOrientation",
    "allocation_pilot_size",
    "register_statistic",
    "statistic",
    "statistic_names",
    "statistic_summaries",
]

# The audit's allocation pilot: the first 5% of the shared row order (at least 2 rows), which
# the pilot statistics hold out to place their rules and the allocation reads to split levels.
ALLOCATION_PILOT_FRACTION = 0.05
_ALLOCATION_PILOT_MIN = 2


def allocation_pilot_size(n: int) -> int:
    """Rows of the allocation pilot among n paired rows: 5%, and at least 2."""
    return max(_ALLOCATION_PILOT_MIN, int(round(ALLOCATION_PILOT_FRACTION * n)))


class ScoreOrientation(enum.StrEnum):
    """Which way an attack's score points: "greater" (a higher score says unlearned), "less",
    or "both" (not known in advance: each orientation is a test of the family, or one test when
    the statistic's pilot chooses). Not the certificate's direction
    (:class:`empirical.statistics.PrivacyDirection`)."""

    GREATER = "greater"
    LESS = "less"
    BOTH = "both"

    # Written as the plain value, so that seeds drawn from the repr of a design holding one
    # (audits.detectable) are those of the plain string.
    __repr__ = str.__repr__


LowerBoundRun = Callable[..., Any]


@dataclass(frozen=True, kw_only=True)
class EpsilonStatistic:
    """One (epsilon, delta) lower-bound statistic of the audit family.

    ``run(u, r, *, delta, alpha, rows, seed, both_orientations, direction)`` returns an
    :class:`empirical.statistics.EpsilonLowerBound` for the orientation "higher score says
    unlearned" (or the better one, chosen on its pilot, when ``both_orientations``).
    ``chooses_orientation``: its pilot picks the orientation, so "both" is one test.
    ``uses_allocation_pilot``: it holds out exactly the allocation pilot
    (:func:`allocation_pilot_size` rows of the shared order) and never reads it as tested data,
    once there are at least ``min_pilot_trials()`` rows per side; below, it reads every trial.
    ``min_trials``: the fewest tested trials per side it runs on (a spec asking fewer is refused).
    ``ceiling`` bounds every value it can give with n tested rows per side; ``forecast`` (or
    None) predicts its bound from the allocation pilot's rows alone.
    """

    name: str
    summary: str
    run: LowerBoundRun
    ceiling: Callable[..., float]
    chooses_orientation: bool = False
    uses_allocation_pilot: bool = False
    min_trials: int = 2
    min_pilot_trials: Callable[[], int] = lambda: 0
    forecast: Callable[..., float] | None = None
    detail: str = field(default="", compare=False)

    def orientations(self, orientation: str) -> tuple[ScoreOrientation, ...]:
        """The score orientations it is run in, each one test of the family, when the score
        points ``orientation``."""
        if orientation != ScoreOrientation.BOTH:
            return (ScoreOrientation(orientation),)
        if self.chooses_orientation:
            return (ScoreOrientation.BOTH,)
        return (ScoreOrientation.GREATER, ScoreOrientation.LESS)

    def reads_every_trial(self, n: int) -> bool:
        """Whether, with n rows per side, it reads the allocation pilot as tested data."""
        return not self.uses_allocation_pilot or n < self.min_pilot_trials()

    def lower_bound(self, unlearned: np.ndarray, retrained: np.ndarray, *,
                    orientation: ScoreOrientation, delta: float, alpha: float, seed: int,
                    privacy_direction: PrivacyDirection, rows: np.ndarray | None = None):
        """The bound in one score orientation ("less" runs it on the negated scores), for the
        inequalities ``privacy_direction`` of the certificate."""
        flip = orientation == ScoreOrientation.LESS
        u, r = (-unlearned, -retrained) if flip else (unlearned, retrained)
        return self.run(u, r, delta=delta, alpha=alpha, rows=rows, seed=seed,
                        both_orientations=orientation == ScoreOrientation.BOTH,
                        direction=privacy_direction)


_REGISTRY: dict[str, EpsilonStatistic] = {}


def register_statistic(declaration: EpsilonStatistic) -> EpsilonStatistic:
    """Add a statistic to the registry (a name is declared once)."""
    if declaration.name in _REGISTRY:
        raise ValueError(f"statistic {declaration.name!r} is already declared")
    _REGISTRY[declaration.name] = declaration
    return declaration


def statistic(name: str) -> EpsilonStatistic:
    """The declaration of ``name``; ValueError naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown statistic {name!r}; known: {', '.join(_REGISTRY)}") from None


def statistic_names() -> tuple[str, ...]:
    """The declared statistics' names, in declaration order."""
    return tuple(_REGISTRY)


def statistic_summaries() -> dict[str, str]:
    """name -> one-line summary, for spec validation and ``--help`` texts."""
    return {name: s.summary for name, s in _REGISTRY.items()}


# ----------------------------------------------------------------------------------------------
# The declarations.


def _ceiling_at(*, n: int, delta: float, alpha: float, direction: str, strategy=None) -> float:
    from empirical import statistics as st

    return st.max_certifiable_epsilon(n_positive=max(n, 1), n_negative=max(n, 1), delta=delta,
                                      alpha=alpha, strategy=strategy,
                                      direction=direction).epsilon


def _pilot_window_run(u, r, *, delta, alpha, rows, seed, both_orientations, direction):
    from empirical.statistics.pilot_window import pilot_window_epsilon_lower_bound

    return pilot_window_epsilon_lower_bound(
        u, r, delta=delta, alpha=alpha, pilot_fraction=ALLOCATION_PILOT_FRACTION, rows=rows,
        seed=seed, both_orientations=both_orientations, direction=direction)


def _pilot_window_ceiling(*, n, delta, alpha, seed, direction) -> float:
    # Each rule's two levels are at most alpha / 2, on at most n tested rows per side.
    return _ceiling_at(n=n, delta=delta, alpha=alpha, direction=direction)


def _pilot_window_forecast(u, r, *, n_positive, n_negative, delta, alpha, both_orientations,
                           direction) -> float:
    from empirical.statistics.pilot_window import pilot_window_prediction

    return pilot_window_prediction(u, r, n_positive=n_positive, n_negative=n_negative,
                                   delta=delta, alpha=alpha,
                                   both_orientations=both_orientations, direction=direction)


def _pilot_threshold_run(u, r, *, delta, alpha, rows, seed, both_orientations, direction):
    from empirical.statistics.pilot import pilot_epsilon_lower_bound

    return pilot_epsilon_lower_bound(
        u, r, delta=delta, alpha=alpha, pilot_fraction=allocation_pilot_size(u.size) / u.size,
        rows=rows, seed=seed, both_orientations=both_orientations, direction=direction)


def _pilot_threshold_ceiling(*, n, delta, alpha, seed, direction) -> float:
    return _ceiling_at(n=n - allocation_pilot_size(n), delta=delta, alpha=alpha,
                       direction=direction)


def _pilot_threshold_forecast(u, r, *, n_positive, n_negative, delta, alpha, both_orientations,
                              direction) -> float:
    from empirical.statistics.pilot import pilot_threshold_prediction

    return pilot_threshold_prediction(u, r, n_positive=n_positive, n_negative=n_negative,
                                      delta=delta, alpha=alpha,
                                      both_orientations=both_orientations, direction=direction)


def _strategy_run(make_strategy):
    def run(u, r, *, delta, alpha, rows, seed, both_orientations, direction):
        from empirical import statistics as st

        return st.epsilon_lower_bound(u, r, delta=delta, alpha=alpha,
                                      strategy=make_strategy(seed), direction=direction)

    def ceiling(*, n, delta, alpha, seed, direction) -> float:
        return _ceiling_at(n=n, delta=delta, alpha=alpha, direction=direction,
                           strategy=make_strategy(seed))

    return run, ceiling


def _bonferroni_pareto(seed: int):
    from empirical import statistics as st

    return st.BonferroniPareto()


def _sample_split(seed: int):
    from empirical import statistics as st

    return st.SampleSplit(selection_fraction=0.5, seed=derived_seed(seed, SAMPLE_SPLIT.name))


def _min_pilot_trials() -> int:
    from empirical.statistics.pilot_window import MIN_PILOT_TRIALS

    return MIN_PILOT_TRIALS


PILOT_WINDOW = register_statistic(EpsilonStatistic(
    name="pilot-window",
    summary="Clopper-Pearson epsilon lower bound, a few thresholds placed on a 5% pilot, both "
            "score orientations and both inequalities in one test",
    run=_pilot_window_run,
    ceiling=_pilot_window_ceiling,
    chooses_orientation=True,
    uses_allocation_pilot=True,
    min_pilot_trials=_min_pilot_trials,
    forecast=_pilot_window_forecast,
))

_bp_run, _bp_ceiling = _strategy_run(_bonferroni_pareto)
BONFERRONI_PARETO = register_statistic(EpsilonStatistic(
    name="bonferroni-pareto",
    summary="Clopper-Pearson epsilon lower bound, every threshold certified at once",
    run=_bp_run,
    ceiling=_bp_ceiling,
))

_ss_run, _ss_ceiling = _strategy_run(_sample_split)
SAMPLE_SPLIT = register_statistic(EpsilonStatistic(
    name="sample-split",
    summary="Clopper-Pearson epsilon lower bound, threshold chosen on half the trials",
    run=_ss_run,
    ceiling=_ss_ceiling,
    min_trials=4,  # two per half
))

PILOT_THRESHOLD = register_statistic(EpsilonStatistic(
    name="pilot-threshold",
    summary="Clopper-Pearson epsilon lower bound, threshold chosen on a 5% pilot",
    run=_pilot_threshold_run,
    ceiling=_pilot_threshold_ceiling,
    chooses_orientation=True,
    uses_allocation_pilot=True,
    forecast=_pilot_threshold_forecast,
))

def _pilot_regions_run(u, r, *, delta, alpha, rows, seed, both_orientations, direction):
    from empirical.statistics.pilot_regions import pilot_regions_epsilon_lower_bound

    return pilot_regions_epsilon_lower_bound(
        u, r, delta=delta, alpha=alpha, pilot_fraction=ALLOCATION_PILOT_FRACTION, rows=rows,
        seed=seed, both_orientations=both_orientations, direction=direction)


def _pilot_regions_forecast(u, r, *, n_positive, n_negative, delta, alpha, both_orientations,
                            direction) -> float:
    from empirical.statistics.pilot_regions import pilot_regions_prediction

    return pilot_regions_prediction(u, r, n_positive=n_positive, n_negative=n_negative,
                                    delta=delta, alpha=alpha,
                                    both_orientations=both_orientations, direction=direction)


PILOT_REGIONS = register_statistic(EpsilonStatistic(
    name="pilot-regions",
    summary="Clopper-Pearson epsilon lower bound on a few regions chosen on a 5% pilot: score "
            "thresholds, or score cells ordered by their estimated likelihood ratio when the "
            "leak is not a shift; both orientations and both inequalities in one test",
    run=_pilot_regions_run,
    # the same tested rows, rules and levels as pilot-window: the same zero-error ceiling
    ceiling=_pilot_window_ceiling,
    chooses_orientation=True,
    uses_allocation_pilot=True,
    min_pilot_trials=_min_pilot_trials,
    forecast=_pilot_regions_forecast,
))

DEFAULT_STATISTICS: tuple[str, ...] = (PILOT_REGIONS.name,)
