"""(epsilon, delta) lower bound from regions learned on a pilot and ordered by an estimated
likelihood ratio: thresholds of the score where they suffice, any set of score cells where the
leak is not a shift.

The statistic. A seeded random pilot (5% of the rows, one permutation for both worlds, never
chosen by the scores) decides, before any tested score is read:

1. *The ordering of the score line.* Either the score itself (either orientation), or g(s), the
   estimated log likelihood ratio of the pilot cell s falls in: cells cut between distinct pooled
   pilot values at equal pooled counts (an atom of tied scores is never split), add-1/2 smoothed
   counts. A rule "g(s) >= t" says "unlearned" on the union of the cells whose estimated ratio is
   at least t: regions ordered by the ratio, not by the score, so a leak that interleaves the two
   worlds (a parity, two tails, a rare atom inside the bulk) is a region like any other. The
   candidate g: the fine cells' ratios, the same on coarser cells, the ratio of the two worlds'
   kernel density estimates, and the fine cells ordered by the log-ratio of two normal fits
   (:func:`_orderings`). The ordering is chosen by
   cross-fitting inside the pilot: each g is fitted on the first half and judged by the AUC it
   gives the second half's worlds; the best is kept (refitted on the whole pilot) only when it
   beats both orientations of the score by :data:`_AUC_MARGIN` standard errors and its rules
   forecast more epsilon than the score's own rules (an AUC weighs the bulk, the epsilon at a
   small delta the tails).
2. *The rules.* Three per inequality of the certificate (forward, bound by the false-positive
   rate; reverse, bound by the false-negative rate), as in
   :mod:`~empirical.statistics.pilot_window`: the forecast optimum and the places where the
   binding rate is half and twice as large. On the score itself they come from the pilot's normal
   fits (pilot-window's rules) when the pilot looks normal (Jarque-Bera at 1% and, on untied
   pilots, Shapiro-Wilk at 0.3%, in each world and on both worlds' standardized pilots
   pooled): normal tails extrapolate to the rates of order 1/N a pilot cannot see. Where the
   pooled pilot passes only narrowly (Shapiro-Wilk p-value below :data:`_HEDGE_LEVEL`), each
   inequality's last rule is instead the optimum of the pilot's own rates described next (a
   heavy-tailed or two-mode law whose pilot of a few dozen rows passed the checks).
   Otherwise (heavy or light tails, skew, several modes, atoms), and always on g, they come from
   the pilot's empirical rates: each small count moved one standard deviation against the rule
   (the best of many noisy forecasts is optimistic), the detected mass never extrapolated, and
   the binding rate past the pilot's last score read off an exponential tail only at a support
   edge (where the rule detects a tenth of the other world), or on the score off the binding
   world's normal fit when that world's pilot alone looks normal. A tied value is an atom (a
   continuous law never ties) and gets a cell of its own; an atom the pilot saw at least three
   times in one world and never in the other (an output only that world gives) takes the
   window's last rule of its inequality, so the number of rules, and every level, stays.
   An inequality the pilot forecasts no epsilon for (its two worlds look alike by chance, or its
   tail is empty) has its rules where the pooled pilot's binding rate is an eighth, a quarter
   and a half (:func:`~empirical.statistics.pilot_window.blind_thresholds`), not wherever a
   flat forecast peaks (a grid's edge). The rule forecast best -- the best inequality's
   optimum, or a one-world atom's rule where its forecast is higher -- leads: it is tested at
   :data:`~empirical.statistics.pilot_window.LEAD_SHARE` of the level, the other rules at an
   even split of the rest.

The remaining rows test the rules: Clopper-Pearson upper bounds on each rule's FPR and FNR
(Clopper and Pearson 1934) in the (epsilon, delta) region (Kairouz, Oh, Viswanath 2015,
Theorem 2.1), the largest value is returned.

Validity (with probability >= 1 - alpha the result is at or below the epsilon of every
(epsilon, delta) guarantee, in the stated direction, that the two score laws satisfy, whatever
the laws, ties and atoms included, and whatever the dependence between the two worlds' trials
of one row). The argument of :mod:`~empirical.statistics.pilot_window` applies word for word:
(1) the ordering, the cells, the rules and their levels are functions of the pilot rows only, and
rows are independent, so given the pilot each world's tested scores are i.i.d. draws of its
law; a rule is a fixed set S of scores (a union of cells of g, or a half-line); (2) for a fixed
S the false positives are Binomial(n_neg, Q(S)) and the false negatives Binomial(n_pos, P(S^c)),
each one world's sample alone; (3) the R rules' 2R rates get levels summing to alpha, whatever
the pilot (:func:`~empirical.statistics.pilot_window.rule_levels`: the rule the pilot forecasts
best, the lead, gets :data:`~empirical.statistics.pilot_window.LEAD_SHARE` of alpha, the others
the rest; :data:`~empirical.statistics.pilot_window.SHARE` of a rule's share to its binding
rate), so all
upper bounds hold at once with probability >= 1 - alpha; (4) on that event every rule's value is
at most the epsilon of any guarantee of the laws, since the (epsilon, delta) inequalities hold for
every set S (post-processing: S is the event "g(score) >= t") and the region's epsilon is
non-increasing in both rates. The pilot can only cost power. Below
:data:`~empirical.statistics.pilot_window.MIN_PILOT_TRIALS` rows per side there is no pilot and
the statistic is Bonferroni over every Pareto threshold of both orientations, at level alpha.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from empirical.statistics.checks import (
    as_scores,
    check_alpha,
    check_delta,
    check_direction,
    epsilon_from_error_rates,
    midranks,
)
from empirical.statistics.pilot_window import (
    MIN_PILOT_TRIALS,
    WINDOW,
    PilotWindowEpsilonLowerBound,
    _levels,
    _plan,
    _without_pilot,
    blind_thresholds,
    checked_inputs,
    pilot_split,
    rule_levels,
)
from empirical.statistics.thresholds import EpsilonLowerBound, clopper_pearson_upper

__all__ = [
    "JARQUE_BERA_CRITICAL",
    "PilotRegionsEpsilonLowerBound",
    "RegionPlan",
    "pilot_regions_epsilon_lower_bound",
    "pilot_regions_plan",
    "pilot_regions_prediction",
]

# Jarque-Bera statistic above which a pilot world is not taken for normal: the 99% quantile of
# its chi-square(2) null law, -2 log(0.01).
JARQUE_BERA_CRITICAL = -2.0 * math.log(0.01)
# g is kept only when, fitted on half the pilot, it separates the other half's worlds better
# than the score by this many standard errors: a shift's g is a noisy copy of the score's own
# order and must not win by noise.
_AUC_MARGIN = 3.0
# Pilot sizes on which the Shapiro-Wilk test is run beside Jarque-Bera (the range of
# Royston's approximation of its p-value used here).
_SHAPIRO_MIN, _SHAPIRO_MAX = 12, 5000
# Its level: at 1% it also sends a normal pilot in 50 to the empirical rules, which costs the
# Gaussian peer case at N = 1000 about 0.2%; at 0.3% none on the measured draws.
_SHAPIRO_LEVEL = 0.003
# Shapiro-Wilk p-value of the pooled pilot below which the normal fits' window gives one rule an
# inequality to the pilot's own rates: at 0.02 the two-mode pilots that pass the checks are
# hedged and Gaussian ones almost never (at 0.1 Laplace gains too, but Gaussians lose ~1%).
_HEDGE_LEVEL = 0.02
# The empirical rules of one inequality: the binding rate at the forecast optimum times these.
EMPIRICAL_WINDOW = WINDOW
# Share of a world's pilot a rule must detect for its binding rate to be read off a tail model.
_EDGE_SHARE = 0.1
# Standard deviations each pilot count is moved against a rule (the binding count up, from
# half a count, the detected count down).
_SHRINK = 1.0
# Fewest pilot scores in the mass a rule detects.
_MIN_DETECTED = 3
_PSEUDO = 0.5  # add-1/2 smoothing of the pilot cells' counts
# Pooled pilot scores per cell: fine cells resolve a leak that interleaves the worlds on a small
# scale; their noisy ratios only matter when the cross-fitted check below keeps them.
_CELL_SCORES = 8
# Coarser cells tried beside them (multiples of _CELL_SCORES pooled pilot scores a cell).
_COARSER: tuple[int, ...] = (4, 16)
# Kernel density ratio: Silverman's bandwidth times this factor (a two-mode leak at N = 2000,
# the region fixed from it: 6 of 40 draws refute at 0.4, 14 at 0.6, 8 at 1; wide kernels fill
# the hole between the modes), on at most this many cells, the sample summed in blocks.
_KERNEL_BANDWIDTH = 0.6
_KERNEL_CELLS = 512
_KERNEL_BLOCK = 8192
_KERNEL_MERGE = 0.25  # bandwidths within which scores share one kernel


@dataclass(frozen=True, kw_only=True)
class PilotRegionsEpsilonLowerBound(EpsilonLowerBound):
    """epsilon lower bound at ``delta`` from the best of a few pilot-chosen regions; ``ordering``
    is "score" (half-lines of the score; ``threshold`` and ``positive_above`` are the rule's) or
    "likelihood-ratio cells" (``threshold`` is then on the estimated log ratio g, and
    ``n_cells`` the pilot's cells); ``placement`` "normal fits" or "empirical"."""

    n_pilot_positive: int
    n_pilot_negative: int
    ordering: str = "score"
    placement: str = "normal fits"
    n_cells: int = 0
    predicted_epsilon: float = 0.0
    strategy: str = "pilot-regions"
    method: str = (
        "regions chosen on a seeded 5% pilot (score half-lines, or score cells ordered by their "
        "estimated likelihood ratio when the leak is not a shift; rules at each inequality's "
        "forecast optimum and half and twice its binding rate), Clopper-Pearson upper bounds on "
        "FPR and FNR of the remaining trials, one union bound at alpha over every rule (a "
        "third of it to the best forecast rule), Kairouz "
        "et al. 2015 region"
    )


@dataclass(frozen=True)
class _Cells:
    """Cells of the score line (cut points between distinct pilot values) and their estimated
    log likelihood ratios (unlearned over retrained)."""

    cuts: np.ndarray
    log_ratio: np.ndarray

    def transform(self, scores: np.ndarray) -> np.ndarray:
        """g(score): the estimated log ratio of the cell each score falls in."""
        return self.log_ratio[np.searchsorted(self.cuts, scores, side="right")]


@dataclass(frozen=True)
class RegionPlan:
    """What the pilot chose: ``sign`` of the score (or +1 on g), ``cells`` (None: the score
    itself), the rules (threshold on the ordered value, reverse inequality?), the placement and
    the forecast epsilon; ``exclusive`` cells and their rules (threshold on their g, reverse?)
    where the pilot saw scores of one world only (:func:`_exclusive_rules`); ``lead`` the index,
    in the rules followed by the exclusive rules, of the rule the pilot forecasts best (None:
    no forecast), which the test gives :data:`~empirical.statistics.pilot_window.LEAD_SHARE` of
    the level."""

    sign: float
    cells: _Cells | None
    rules: tuple[tuple[float, bool], ...]
    placement: str
    predicted: float
    exclusive: _Cells | None = None
    exclusive_rules: tuple[tuple[float, bool], ...] = ()
    lead: int | None = None

    def ordered(self, scores: np.ndarray) -> np.ndarray:
        """The value a rule "ordered >= t" reads: g(score) on cells, else sign * score."""
        return self.cells.transform(scores) if self.cells is not None else self.sign * scores


def _fit_cells(positive: np.ndarray, negative: np.ndarray, *,
               per_cell: int = _CELL_SCORES) -> _Cells:
    """Cells of about ``per_cell`` pooled pilot scores (:func:`_cell_cuts`) with their add-1/2
    smoothed log likelihood ratios."""
    cuts = _cell_cuts(positive, negative, per_cell=per_cell)
    cell_p = np.bincount(np.searchsorted(cuts, positive, side="right"), minlength=cuts.size + 1)
    cell_q = np.bincount(np.searchsorted(cuts, negative, side="right"), minlength=cuts.size + 1)
    width = _PSEUDO * (cuts.size + 1)
    log_ratio = (np.log((cell_p + _PSEUDO) / (positive.size + width))
                 - np.log((cell_q + _PSEUDO) / (negative.size + width)))
    return _Cells(cuts, log_ratio)


def _cell_cuts(positive: np.ndarray, negative: np.ndarray, *, per_cell: int) -> np.ndarray:
    """Cut points between distinct pooled pilot values at about equal pooled counts of
    ``per_cell``, every tied value (an atom) a cell of its own."""
    pooled = np.sort(np.concatenate([positive, negative]))
    values, multiplicity = np.unique(pooled, return_counts=True)
    n_cells = int(min(values.size, max(4, pooled.size // per_cell)))
    if values.size <= n_cells:
        marks = np.arange(1, values.size)
    else:
        # Equal pooled counts, each cut moved up to the next change of value (ties stay whole).
        marks = np.searchsorted(values, pooled[(np.arange(1, n_cells) * pooled.size) // n_cells],
                                side="right")
    marks = np.unique(marks[(marks > 0) & (marks < values.size)])
    cuts = (values[marks - 1] + values[marks]) / 2
    if values.size > n_cells:
        # A value the pilot saw more than once is an atom (a continuous law never ties): its
        # cell is that value alone, [v, next float), so an output only one world gives is
        # neither diluted by its neighbours nor shared with a nearby score of the other world.
        atoms = values[multiplicity > 1]
        cuts = np.unique(np.concatenate([cuts, atoms, np.nextafter(atoms, np.inf)]))
    return cuts


def _normal_fit_cells(positive: np.ndarray, negative: np.ndarray) -> _Cells | None:
    """The fine cells of :func:`_fit_cells` with the log-ratio of two normal laws fitted to the
    two worlds (a parabola in the score, at each cell's middle): an ordering by |score - c| where
    the worlds differ in spread (two tails), smoother than the cells' own counts."""
    cells = _fit_cells(positive, negative)
    vp, vq = float(np.var(positive)), float(np.var(negative))
    if not (vp > 0 and vq > 0) or cells.cuts.size < 2:
        return None
    cuts = cells.cuts
    gaps = np.diff(cuts)
    middle = np.concatenate([[cuts[0] - gaps[0] / 2], (cuts[:-1] + cuts[1:]) / 2,
                             [cuts[-1] + gaps[-1] / 2]])
    mp, mq = float(np.mean(positive)), float(np.mean(negative))
    log_ratio = (-(middle - mp) ** 2 / (2 * vp) + (middle - mq) ** 2 / (2 * vq)
                 - 0.5 * math.log(vp / vq))
    return _Cells(cuts, log_ratio)


def _kernel_ratio_cells(positive: np.ndarray, negative: np.ndarray) -> _Cells | None:
    """Cells between the pooled pilot values (at most :data:`_KERNEL_CELLS`, atoms whole) with
    the log-ratio of the two worlds' Gaussian kernel density estimates at each cell's middle
    (bandwidth :data:`_KERNEL_BANDWIDTH` times Silverman's rule, per world): a smooth ratio that
    resolves several bands a coarse cell merges and a fine cell's few counts cannot rank (two
    modes against one, a hole in the middle). None where a world's pilot has no spread."""
    bandwidths = [_bandwidth(world) for world in (positive, negative)]
    if any(b is None for b in bandwidths):
        return None
    per_cell = max(1, -(-(positive.size + negative.size) // _KERNEL_CELLS))
    cuts = _cell_cuts(positive, negative, per_cell=per_cell)
    if cuts.size < 2:
        return None
    pooled = np.concatenate([positive, negative])
    middle = np.concatenate([[pooled.min()], (cuts[:-1] + cuts[1:]) / 2, [pooled.max()]])
    # The ratio is smooth on the scale of the merge width: it is estimated once per group of
    # middles that close and interpolated between the groups.
    points = np.sort(_merged(middle, min(bandwidths) * _KERNEL_MERGE)[0])
    log_ratio = (_log_kernel_density(points, positive, bandwidths[0])
                 - _log_kernel_density(points, negative, bandwidths[1]))
    return _Cells(cuts, np.interp(middle, points, log_ratio))


def _bandwidth(sample: np.ndarray) -> float | None:
    """:data:`_KERNEL_BANDWIDTH` times Silverman's rule, 0.9 min(sd, IQR / 1.34) n^(-1/5); None
    for a sample without spread."""
    spread = float(np.std(sample))
    quartiles = np.quantile(sample, [0.25, 0.75])
    iqr = float(quartiles[1] - quartiles[0]) / 1.34
    scale = min(spread, iqr) if iqr > 0 else spread
    if not scale > 0:
        return None
    return _KERNEL_BANDWIDTH * 0.9 * scale * sample.size ** -0.2


def _merged(values: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """(means of the groups of ``values`` within one ``width``-wide bin, each value's group);
    a value whose bin index passes the float's reach keeps a group of its own."""
    with np.errstate(over="ignore", invalid="ignore"):
        keys = np.floor((values - values.min()) / width)
    keys = np.where(np.isfinite(keys), keys, -1.0 - np.arange(values.size))
    _, group, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return np.bincount(group, weights=values) / counts, group


def _log_kernel_density(at: np.ndarray, sample: np.ndarray, bandwidth: float) -> np.ndarray:
    """log of the Gaussian kernel density estimate of ``sample`` at ``at``, summed in log space
    (a far cell reads the log of its nearest kernels, never log 0). Scores less than
    :data:`_KERNEL_MERGE` bandwidths apart are summed as one kernel at their mean, weighted by
    their count: the estimate barely moves, and its cost follows the sample's spread in
    bandwidths instead of its size."""
    centres, group = _merged(sample, bandwidth * _KERNEL_MERGE)
    log_counts = np.log(np.bincount(group))
    total = np.full(at.size, -np.inf)
    for start in range(0, centres.size, _KERNEL_BLOCK):
        z = (at[:, None] - centres[None, start:start + _KERNEL_BLOCK]) / bandwidth
        block = log_counts[None, start:start + _KERNEL_BLOCK] - 0.5 * z * z
        # logsumexp by hand: scipy's checks and masking take twice as long on these blocks
        top = block.max(axis=1)
        total = np.logaddexp(total, top + np.log(np.exp(block - top[:, None]).sum(axis=1)))
    return total - math.log(sample.size * bandwidth * math.sqrt(2.0 * math.pi))


_ORDERINGS: tuple[Callable[[np.ndarray, np.ndarray], _Cells | None], ...] = (
    _fit_cells,
    *(functools.partial(_fit_cells, per_cell=_CELL_SCORES * factor) for factor in _COARSER),
    _kernel_ratio_cells,
    _normal_fit_cells,
)


def _orderings(positive: np.ndarray, negative: np.ndarray) -> list[_Cells | None]:
    """Candidate cell orderings fitted on pilot rows, from the finest to the smoothest, each at
    its place in :data:`_ORDERINGS` (None where it cannot be fitted): the fine cells' own
    ratios, the same on cells :data:`_COARSER` times as wide (bands a fine cell's few counts
    cannot resolve), the kernel density estimates' ratio (:func:`_kernel_ratio_cells`) and the
    normal fits' parabola (:func:`_normal_fit_cells`)."""
    return [fit(positive, negative) for fit in _ORDERINGS]


def _looks_normal(scores: np.ndarray) -> bool:
    """A Jarque-Bera statistic below :data:`JARQUE_BERA_CRITICAL` (ties allowed: pilot-window's
    rules move to the values a discrete score takes) and, on untied pilots of at most
    :data:`_SHAPIRO_MAX` scores, a Shapiro-Wilk p-value above :data:`_SHAPIRO_LEVEL`
    (:func:`shapiro_wilk_pvalue`)."""
    centred = scores - scores.mean()
    variance = float(np.mean(centred**2))
    if variance <= 0:
        return False
    skew = float(np.mean(centred**3)) / variance**1.5
    kurtosis = float(np.mean(centred**4)) / variance**2
    statistic = scores.size / 6.0 * (skew**2 + (kurtosis - 3.0) ** 2 / 4.0)
    if not statistic < JARQUE_BERA_CRITICAL:
        return False
    # Jarque-Bera misses several modes in a small pilot (a two-component mixture's kurtosis is
    # near 3 at 50 rows); Shapiro-Wilk often sees them. Not on tied
    # (discrete) scores, whose normal-fit rules pilot-window moves to the values the score takes.
    if _shapiro_applies(scores):
        return shapiro_wilk_pvalue(scores) > _SHAPIRO_LEVEL
    return True


def _shapiro_applies(scores: np.ndarray) -> bool:
    """An untied sample whose size Royston's approximation covers."""
    return _SHAPIRO_MIN <= scores.size <= _SHAPIRO_MAX and np.unique(scores).size == scores.size


def shapiro_wilk_pvalue(scores: np.ndarray) -> float:
    """p-value of the Shapiro-Wilk test of normality by Royston's algorithm (AS R94, 1995): the
    coefficients from Blom's normal scores with polynomial corrections of the two extreme ones,
    and log(1 - W) normal with a mean and log standard deviation cubic and quadratic in log n,
    for 12 <= n <= 5000. Needs only scipy.special (scipy.stats would pull scipy.optimize into the
    trials' process)."""
    n = scores.size
    if not _SHAPIRO_MIN <= n <= _SHAPIRO_MAX:
        raise ValueError(f"Royston's approximation is used here for 12 to 5000 scores, got {n}")
    m = special.ndtri((np.arange(1, n + 1) - 0.375) / (n + 0.25))
    mm = float(m @ m)
    u = 1.0 / math.sqrt(n)
    last = m[-1] / math.sqrt(mm) + np.polyval([-2.706056, 4.434685, -2.071190, -0.147981,
                                               0.221157, 0.0], u)
    second = m[-2] / math.sqrt(mm) + np.polyval([-3.582633, 5.682633, -1.752461, -0.293762,
                                                 0.042981, 0.0], u)
    phi = (mm - 2 * m[-1] ** 2 - 2 * m[-2] ** 2) / (1 - 2 * last**2 - 2 * second**2)
    a = m / math.sqrt(phi)
    a[-1], a[-2], a[0], a[1] = last, second, -last, -second
    ordered = np.sort(scores)
    centred = ordered - ordered.mean()
    spread = float(centred @ centred)
    if not spread > 0:
        return 0.0  # a constant sample: no normal law
    w = min(float((a @ ordered) ** 2) / spread, 1.0)
    if not w < 1.0:
        return 1.0
    log_n = math.log(n)
    mean = np.polyval([0.0038915, -0.083751, -0.31082, -1.5861], log_n)
    sd = math.exp(np.polyval([0.0030302, -0.082676, -0.4803], log_n))
    z = (math.log1p(-w) - mean) / sd
    return float(0.5 * special.erfc(z / math.sqrt(2.0)))


def _standardized_pool(positive: np.ndarray, negative: np.ndarray) -> np.ndarray | None:
    """Both worlds' pilots, each centred and scaled by its own mean and standard deviation,
    pooled (None where a world's pilot is constant)."""
    sd_p, sd_q = float(np.std(positive)), float(np.std(negative))
    if not (sd_p > 0 and sd_q > 0):
        return None
    return np.concatenate([(positive - positive.mean()) / sd_p,
                           (negative - negative.mean()) / sd_q])


def _all_look_normal(positive: np.ndarray, negative: np.ndarray) -> bool:
    """Each world's pilot looks normal (:func:`_looks_normal`), and so does their standardized
    pool: twice the scores see two modes or a heavy tail that one world's few dozen miss."""
    if not (_looks_normal(positive) and _looks_normal(negative)):
        return False
    pool = _standardized_pool(positive, negative)
    return pool is not None and _looks_normal(pool)


def _narrowly_normal(positive: np.ndarray, negative: np.ndarray) -> bool:
    """An untied standardized pool (of at most :data:`_SHAPIRO_MAX` scores) whose
    Shapiro-Wilk p-value is below :data:`_HEDGE_LEVEL`: normal fits placed on it are hedged."""
    pool = _standardized_pool(positive, negative)
    return pool is not None and _shapiro_applies(pool) and shapiro_wilk_pvalue(pool) < _HEDGE_LEVEL


def _tail_size(k: int) -> int:
    return max(2, min(10, k // 10))


def _upper_rate(sorted_x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Estimated P(X >= t) from a pilot sample: its empirical rate where at least m of its values
    are at or above t, else an exponential tail through its m-th largest value with their mean
    excess as scale (m = :func:`_tail_size`), so that a rate beyond the pilot's reach is
    neither 0 nor the last count."""
    k = sorted_x.size
    m = _tail_size(k)
    counts = k - np.searchsorted(sorted_x, t, side="left")
    top = sorted_x[k - m:]
    anchor = top[0]
    scale = max(float(np.mean(top - anchor)), 1e-12 * max(1.0, abs(float(anchor))))
    model = (m / k) * np.exp(-np.maximum(t - anchor, 0.0) / scale)
    return np.where(counts >= m, counts / k, np.minimum(model, m / k))


def _lower_rate(sorted_x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Estimated P(X < t), the mirror image of :func:`_upper_rate` (below the m-th smallest
    value, an exponential tail through it)."""
    k = sorted_x.size
    m = _tail_size(k)
    counts = np.searchsorted(sorted_x, t, side="left")
    bottom = sorted_x[:m]
    anchor = bottom[-1]
    scale = max(float(np.mean(anchor - bottom)), 1e-12 * max(1.0, abs(float(anchor))))
    model = (m / k) * np.exp(-np.maximum(anchor - t, 0.0) / scale)
    return np.where(counts >= m, counts / k, np.minimum(model, m / k))


def _candidates(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Thresholds tried: every pooled pilot value and points beyond both extremes, at multiples
    of the extreme values' spacing (where a support edge or a tail lies past the pilot)."""
    pooled = np.unique(np.concatenate([pos, neg]))
    spread = float(pooled[-1] - pooled[0]) or 1.0
    steps = spread * np.array([1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3])
    return np.unique(np.concatenate([pooled, pooled[0] - steps, pooled[-1] + steps]))


def _normal_tail(sorted_x: np.ndarray, t: np.ndarray, *, upper: bool) -> np.ndarray:
    """P(X >= t) (``upper``) or P(X < t) of the normal law fitted to a pilot sample."""
    sd = float(np.std(sorted_x))
    z = (t - float(np.mean(sorted_x))) / max(sd, 1e-300)
    return 0.5 * special.erfc((z if upper else -z) / math.sqrt(2.0))


def _empirical_plan(positive: np.ndarray, negative: np.ndarray, *, n_positive: int,
                    n_negative: int, delta: float, gamma_small: float, gamma_large: float,
                    inequalities: tuple[bool, ...], normal_positive: bool = False,
                    normal_negative: bool = False
                    ) -> tuple[float, list[tuple[float, bool]], int | None]:
    """(forecast epsilon, rules) of "ordered value >= t" from the pilot's own rates, with an
    exponential tail past each world's m-th extreme value (:func:`_upper_rate`): for each
    inequality the t with the best Clopper-Pearson bound at the expected counts and the
    candidates nearest half and twice its binding rate. ``normal_positive`` /
    ``normal_negative``: that world's pilot looks normal, so its binding rate where the pilot
    shows fewer than m scores is its normal fit's (a leak into one world's tail, past the
    other's pilot, is placed where the normal world's rate is small enough, not at the other
    world's last pilot score)."""
    pos, neg = np.sort(positive), np.sort(negative)
    candidates = _candidates(pos, neg)
    false_pos = neg.size - np.searchsorted(neg, candidates, side="left")
    false_neg = np.searchsorted(pos, candidates, side="left")
    best, rules, lead = 0.0, [], None
    for reverse in inequalities:
        # The mass a rule detects: positives at or above t (forward), negatives below t (reverse).
        detected = (neg.size - false_pos) if reverse else (pos.size - false_neg)
        k_detected = neg.size if reverse else pos.size
        # The small binding rate comes from the tail model only where the rule detects a large
        # part of the other world (a support edge: one world ends where the other goes on);
        # elsewhere from the count with one pseudo-count, which never reads a thin pilot tail
        # as a vanishing rate (heavy tails would make up a ratio there).
        edge = detected >= _EDGE_SHARE * k_detected
        # Pilot counts are noisy where they are small, and the best of many noisy forecasts is
        # optimistic (the winner's curse): each count is moved _SHRINK standard deviations
        # against the rule, the binding count up (from half a count) and the detected one down.
        shrunk = np.maximum(detected - _SHRINK * np.sqrt(detected), 0.0) / k_detected
        if reverse:
            fnr = np.where(edge, _lower_rate(pos, candidates),
                           (false_neg + 0.5 + _SHRINK * np.sqrt(false_neg)) / pos.size)
            if normal_positive:
                fnr = np.where(false_neg < _tail_size(pos.size),
                               _normal_tail(pos, candidates, upper=False), fnr)
            fpr = 1.0 - shrunk
        else:
            fpr = np.where(edge, _upper_rate(neg, candidates),
                           (false_pos + 0.5 + _SHRINK * np.sqrt(false_pos)) / neg.size)
            if normal_negative:
                fpr = np.where(false_pos < _tail_size(neg.size),
                               _normal_tail(neg, candidates, upper=True), fpr)
            fnr = 1.0 - shrunk
        fpr, fnr = np.minimum(fpr, 1.0), np.minimum(fnr, 1.0)
        g_fpr, g_fnr = (gamma_large, gamma_small) if reverse else (gamma_small, gamma_large)
        fpr_hi = clopper_pearson_upper(fpr * n_negative, n_negative, g_fpr)
        fnr_hi = clopper_pearson_upper(fnr * n_positive, n_positive, g_fnr)
        # each inequality alone: forward P(S) <= e^eps Q(S) + delta bound by the FPR, reverse
        # Q(S') <= e^eps P(S') + delta on the complement bound by the FNR
        values = (_reverse_only(fpr_hi, fnr_hi, delta) if reverse else np.asarray(
            epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta, direction="forward")))
        # The detected mass itself is never extrapolated: pilot scores must show it.
        values = np.where(detected >= _MIN_DETECTED, values, 0.0)
        # The window's other rules sit where the binding rate is half and twice the optimum's,
        # read off each world's own rates with an exponential tail past its last scores: past
        # the last pilot score of the binding world the forecast cannot tell candidates apart,
        # and the half rule then moves further out (towards an atom only one world has).
        binding = np.maximum(_lower_rate(pos, candidates) if reverse
                             else _upper_rate(neg, candidates), 1e-300)
        i = int(np.argmax(values))
        if values[i] > best:
            best, lead = float(values[i]), len(rules) + EMPIRICAL_WINDOW.index(1.0)
        if not values[i] > 0:
            rules += [(t, reverse) for t in blind_thresholds(np.concatenate([pos, neg]),
                                                              reverse=reverse)]
            continue
        for factor in EMPIRICAL_WINDOW:
            j = i if factor == 1.0 else int(np.argmin(np.abs(np.log(binding / binding[i] / factor))))
            rules.append((float(candidates[j]), reverse))
    return best, rules, lead


def _reverse_only(fpr: np.ndarray, fnr: np.ndarray, delta: float) -> np.ndarray:
    """epsilon of the reverse inequality alone: log((1 - delta - FPR) / FNR), 0 where void."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.log(np.maximum(1.0 - delta - fpr, 1e-300)) - np.log(fnr)
    return np.where(1.0 - delta - fpr > 0, np.maximum(value, 0.0), 0.0)


def pilot_regions_plan(pilot_positive: np.ndarray, pilot_negative: np.ndarray, *,
                       n_positive: int, n_negative: int, delta: float, alpha: float,
                       both_orientations: bool, direction: str) -> RegionPlan:
    """The ordering and rules the pilot chooses for ``n_positive`` / ``n_negative`` tested
    scores (module docstring, steps 1 and 2)."""
    _, gamma_small, gamma_large = _levels(alpha, direction)
    inequalities = (False, True) if direction == "both" else (False,)
    signs = (1.0, -1.0) if both_orientations else (1.0,)

    def empirical(pos: np.ndarray, neg: np.ndarray, n_pos: int, n_neg: int,
                  normal: tuple[bool, bool] = (False, False)
                  ) -> tuple[float, list[tuple[float, bool]], int | None]:
        return _empirical_plan(pos, neg, n_positive=n_pos, n_negative=n_neg, delta=delta,
                               gamma_small=gamma_small, gamma_large=gamma_large,
                               inequalities=inequalities, normal_positive=normal[0],
                               normal_negative=normal[1])

    def normal(pos: np.ndarray, neg: np.ndarray) -> RegionPlan:
        sign, predicted, rules, lead = _plan(pos, neg, n_positive=n_positive,
                                             n_negative=n_negative,
                                       delta=delta, alpha=alpha,
                                       both_orientations=both_orientations, direction=direction)
        return RegionPlan(sign, None, tuple(rules), "normal fits", predicted, lead=lead)

    def on_score(pos: np.ndarray, neg: np.ndarray) -> RegionPlan:
        best: RegionPlan | None = None
        # A world whose pilot looks normal (the other does not) lends its normal tail.
        normal = (_looks_normal(pos), _looks_normal(neg))
        for sign in signs:
            predicted, rules, lead = empirical(sign * pos, sign * neg, n_positive, n_negative,
                                               normal)
            if best is None or predicted > best.predicted:
                best = RegionPlan(sign, None, tuple(rules), "empirical", predicted, lead=lead)
        assert best is not None
        return best

    def on_cells(pos: np.ndarray, neg: np.ndarray, which: int) -> RegionPlan | None:
        cells = _ORDERINGS[which](pos, neg)
        if cells is None:
            return None
        predicted, rules, lead = empirical(cells.transform(pos), cells.transform(neg), n_positive,
                                           n_negative)
        return RegionPlan(1.0, cells, tuple(rules), "empirical", predicted, lead=lead)

    if min(pilot_positive.size, pilot_negative.size) < 8:
        return normal(pilot_positive, pilot_negative)
    def hedged(pos: np.ndarray, neg: np.ndarray) -> RegionPlan:
        # A pilot of a few dozen rows can pass the normality checks when its law is not normal
        # (heavy tails, two modes): the normal fits then place every rule in a tail they
        # misjudge. Where the pooled pilot passes only narrowly, the window's last rule of each
        # inequality (twice the optimum's binding rate) makes room for the optimum of the
        # pilot's own rates on the same orientation: the number of rules, and every level, stays.
        plan = normal(pos, neg)
        if not _narrowly_normal(pos, neg):
            return plan
        _, own, _ = empirical(plan.sign * pos, plan.sign * neg, n_positive, n_negative)
        width = len(EMPIRICAL_WINDOW)
        optimum, last = EMPIRICAL_WINDOW.index(1.0), len(WINDOW) - 1
        rules = list(plan.rules)
        for block in range(len(rules) // len(WINDOW)):
            rules[block * len(WINDOW) + last] = own[block * width + optimum]
        return dataclasses.replace(plan, rules=tuple(rules))

    score_plan = _with_exclusive(
        hedged(pilot_positive, pilot_negative)
        if _all_look_normal(pilot_positive, pilot_negative)
        else on_score(pilot_positive, pilot_negative), pilot_positive, pilot_negative,
        inequalities, n_positive=n_positive, n_negative=n_negative, delta=delta,
        gamma_small=gamma_small, gamma_large=gamma_large)
    which = _cells_beating_the_score(pilot_positive, pilot_negative) if both_orientations else None
    if which is not None:
        # Cells separate the worlds better, but the epsilon at a small delta lives in the tails,
        # where their fitted ratios are noisiest: they are kept only where their own forecast is
        # above the score's (at a tie both read the same tail, which the score cuts cleanly).
        cells_plan = on_cells(pilot_positive, pilot_negative, which)
        if cells_plan is not None and cells_plan.predicted > score_plan.predicted:
            return cells_plan
    return score_plan


def _cells_beating_the_score(pilot_positive: np.ndarray, pilot_negative: np.ndarray
                             ) -> int | None:
    """Index in :func:`_orderings` of the cell ordering whose held-out AUC beats either
    orientation of the score by more than :data:`_AUC_MARGIN` standard errors of an AUC
    (Hanley-McNeil's null variance), else None. Cross-fitted: each candidate is fitted on the
    pilot's first half and judged on its second, so that it never wins by fitting the noise it
    is judged on."""
    # The allocation's forecast and the test read the same pilot: its winner is computed once.
    return _held_out_winner(np.ascontiguousarray(pilot_positive, dtype=float).tobytes(),
                            np.ascontiguousarray(pilot_negative, dtype=float).tobytes(),
                            _AUC_MARGIN)


@functools.lru_cache(maxsize=4)
def _held_out_winner(positive: bytes, negative: bytes, margin: float) -> int | None:
    """:func:`_cells_beating_the_score` on the pilot's two worlds given as float64 bytes, with
    the AUC ``margin`` in standard errors (an argument, so that the cache is keyed by it)."""
    pilot_positive, pilot_negative = np.frombuffer(positive), np.frombuffer(negative)
    half_p, half_q = pilot_positive.size // 2, pilot_negative.size // 2
    fit_p, fit_q = pilot_positive[:half_p], pilot_negative[:half_q]
    held_p, held_q = pilot_positive[half_p:], pilot_negative[half_q:]
    on_score_auc = _auc(held_p, held_q)
    aucs = np.array([-np.inf if c is None else _auc(c.transform(held_p), c.transform(held_q))
                     for c in _orderings(fit_p, fit_q)])
    se = math.sqrt((held_p.size + held_q.size + 1) / (12.0 * held_p.size * held_q.size))
    # The smoothest ordering within one standard error of the best (the list runs from the
    # finest to the smoothest): fewer fitted ratios place the extreme rules better. It must
    # itself beat the score by the margin.
    which = int(np.flatnonzero(aucs >= aucs.max() - se)[-1])
    if aucs[which] - max(on_score_auc, 1 - on_score_auc) > margin * se:
        return which
    return None


def _exclusive_rules(cells: _Cells, positive: np.ndarray, negative: np.ndarray,
                     inequalities: tuple[bool, ...]) -> tuple[_Cells, tuple[tuple[float, bool],
                                                                          ...]]:
    """Rules on the atoms the pilot saw in one world only (a tied value seen at least
    :data:`_MIN_DETECTED` times there, never in the other): an output only one world gives,
    which a half-line of the score may not isolate. Forward: the positives' atoms; reverse:
    the negatives' atoms as the complement S' of the rule."""
    cell_p = np.bincount(np.searchsorted(cells.cuts, positive, side="right"),
                         minlength=cells.log_ratio.size)
    cell_q = np.bincount(np.searchsorted(cells.cuts, negative, side="right"),
                         minlength=cells.log_ratio.size)
    # Atoms only: a cell of one tied value (a continuous law never ties, so a half-line's noise
    # in a thin tail is never taken for an output one world lacks).
    pooled = np.concatenate([positive, negative])
    index = np.searchsorted(cells.cuts, pooled, side="right")
    lowest = np.full(cells.log_ratio.size, np.inf)
    highest = np.full(cells.log_ratio.size, -np.inf)
    np.minimum.at(lowest, index, pooled)
    np.maximum.at(highest, index, pooled)
    atom = lowest == highest
    # The rules read a map of the cells: +1 on atoms of the positives only, -1 on atoms of the
    # negatives only, 0 elsewhere; "map >= 1" is the first set, the complement of "map >= 0"
    # the second.
    only_p = atom & (cell_p >= _MIN_DETECTED) & (cell_q == 0)
    only_q = atom & (cell_q >= _MIN_DETECTED) & (cell_p == 0)
    marks = only_p.astype(float) - only_q.astype(float)
    rules = []
    for reverse in inequalities:
        if (only_q if reverse else only_p).any():
            rules.append((0.0 if reverse else 1.0, reverse))
    return _Cells(cells.cuts, marks), tuple(rules)


def _with_exclusive(plan: RegionPlan, positive: np.ndarray, negative: np.ndarray,
                    inequalities: tuple[bool, ...], *, n_positive: int, n_negative: int,
                    delta: float, gamma_small: float, gamma_large: float) -> RegionPlan:
    """``plan`` with each inequality's last window rule (twice the optimum's binding rate)
    replaced by a rule on the atoms only one world's pilot showed, where there are such atoms:
    the number of rules stays the same. Such a rule's forecast reads its binding count as 0 (an
    output the other world never gave) and its detected mass as seen; the plan's forecast is
    the larger of the two, and the lead goes to an exclusive rule forecast above the plan's."""
    marks, extra = _exclusive_rules(_fit_cells(positive, negative), positive, negative,
                                    inequalities)
    if not extra:
        return plan
    predicted, lead = plan.predicted, None
    for index, (_, reverse) in enumerate(extra):
        detected = np.mean(marks.transform(negative if reverse else positive)
                           == (-1.0 if reverse else 1.0))
        n_binding, n_other = (n_positive, n_negative) if reverse else (n_negative, n_positive)
        binding_hi = float(clopper_pearson_upper(0, n_binding, gamma_small))
        other_hi = float(clopper_pearson_upper((1.0 - detected) * n_other, n_other, gamma_large))
        if 1.0 - delta - other_hi > 0:
            value = math.log((1.0 - delta - other_hi) / binding_hi)
            if value > predicted:
                predicted, lead = value, index
    replaced = {reverse for _, reverse in extra}
    rules, seen, kept_lead = [], dict.fromkeys(replaced, 0), None
    for index, (threshold, reverse) in enumerate(plan.rules):
        if reverse in replaced:
            seen[reverse] += 1
            if seen[reverse] == len(EMPIRICAL_WINDOW):
                continue  # the window's last rule makes room for the exclusive one
        if index == plan.lead:
            kept_lead = len(rules)
        rules.append((threshold, reverse))
    return dataclasses.replace(plan, rules=tuple(rules), exclusive=marks, exclusive_rules=extra,
                               predicted=predicted,
                               lead=kept_lead if lead is None else len(rules) + lead)


def _auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(X > Y) + P(X = Y)/2 for X a positive and Y a negative score (midranks for ties)."""
    ranks = midranks(np.concatenate([positive, negative]))
    n_p, n_q = positive.size, negative.size
    return float((ranks[:n_p].sum() - n_p * (n_p + 1) / 2.0) / (n_p * n_q))


def pilot_regions_prediction(pilot_positive, pilot_negative, *, n_positive: int,
                             n_negative: int, delta: float, alpha: float,
                             both_orientations: bool = True, direction: str = "both") -> float:
    """The epsilon the statistic forecasts from the pilot alone for ``n_positive`` /
    ``n_negative`` tested scores at level ``alpha``. A forecast, not a bound."""
    positive = as_scores(pilot_positive, "pilot_positive")
    negative = as_scores(pilot_negative, "pilot_negative")
    if min(positive.size, negative.size) < 2:
        raise ValueError("a prediction needs at least 2 pilot scores per side")
    return pilot_regions_plan(positive, negative, n_positive=n_positive, n_negative=n_negative,
                              delta=check_delta(delta), alpha=check_alpha(alpha),
                              both_orientations=both_orientations,
                              direction=check_direction(direction)).predicted


def pilot_regions_epsilon_lower_bound(
    scores_positive,
    scores_negative,
    *,
    delta: float,
    alpha: float = 0.05,
    pilot_fraction: float = 0.05,
    seed: int = 0,
    both_orientations: bool = True,
    direction: str = "both",
    rows=None,
) -> PilotRegionsEpsilonLowerBound | PilotWindowEpsilonLowerBound:
    """epsilon lower bound at ``delta`` from a few pilot-chosen regions (module docstring).

    With probability >= 1 - alpha the result is at or below the epsilon of every (epsilon,
    delta) guarantee in ``direction`` that the two score laws satisfy. ``both_orientations=False``
    states the orientation "higher score says positive" in advance: only half-lines of the score
    in that orientation are considered (no cells). ``rows`` and ``pilot_fraction`` as in
    :func:`~empirical.statistics.pilot_window.pilot_window_epsilon_lower_bound`.
    """
    positive, negative, delta, alpha, direction, pilot_fraction = checked_inputs(
        scores_positive, scores_negative, delta=delta, alpha=alpha, direction=direction,
        pilot_fraction=pilot_fraction, seed=seed)
    if min(positive.size, negative.size) < MIN_PILOT_TRIALS:
        return dataclasses.replace(
            _without_pilot(positive, negative, delta=delta, alpha=alpha,
                           both_orientations=both_orientations, direction=direction),
            strategy="pilot-regions")
    pilot_pos, test_pos, pilot_neg, test_neg = pilot_split(
        positive, negative, pilot_fraction=pilot_fraction, rows=rows, seed=seed)
    k_pos, k_neg = pilot_pos.size, pilot_neg.size

    n_rules = _levels(alpha, direction)[0]
    plan = pilot_regions_plan(pilot_pos, pilot_neg, n_positive=test_pos.size,
                              n_negative=test_neg.size, delta=delta, alpha=alpha,
                              both_orientations=both_orientations, direction=direction)
    rules = list(plan.rules)
    if plan.cells is None:
        pooled = np.unique(plan.sign * np.concatenate([pilot_pos, pilot_neg]))
        if pooled.size < pilot_pos.size + pilot_neg.size:
            # Tied pilot scores: each threshold moves up to the least value the pilot saw at or
            # above it (the same rule on those values), as pilot-window does.
            index = np.minimum(np.searchsorted(pooled, [t for t, _ in rules], side="left"),
                               pooled.size - 1)
            rules = [(float(pooled[i]), r) for i, (_, r) in zip(index, rules, strict=True)]
    # Each rule is a fixed set of scores: "ordered >= t" on the plan's ordering, or on the
    # map of one-world atoms for the exclusive rules; counts are read off sorted copies.
    groups = [(plan.ordered, rules)]
    if plan.exclusive_rules:
        groups.append((plan.exclusive.transform, list(plan.exclusive_rules)))
    counts = []
    for transform, group in groups:
        pos_sorted, neg_sorted = transform(test_pos), transform(test_neg)
        pos_sorted.sort()
        neg_sorted.sort()
        at = np.array([t for t, _ in group])
        counts.append((neg_sorted.size - np.searchsorted(neg_sorted, at, side="left"),
                       np.searchsorted(pos_sorted, at, side="left")))
    thresholds = np.array([t for _, group in groups for t, _ in group])
    reverse = np.array([r for _, group in groups for _, r in group])
    false_positives = np.concatenate([fp for fp, _ in counts])
    false_negatives = np.concatenate([fn for _, fn in counts])
    fpr_level, fnr_level = rule_levels(alpha, reverse, plan.lead)
    fpr_hi = clopper_pearson_upper(false_positives, test_neg.size, fpr_level)
    fnr_hi = clopper_pearson_upper(false_negatives, test_pos.size, fnr_level)
    values = np.asarray(epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta,
                                                 direction=direction))
    i = int(np.argmax(values))
    exclusive = i >= len(rules)
    on_cells = plan.cells is not None or exclusive
    cells = plan.cells if plan.cells is not None else plan.exclusive
    return PilotRegionsEpsilonLowerBound(
        epsilon=float(values[i]),
        delta=delta,
        confidence=1.0 - alpha,
        threshold=float(thresholds[i] if on_cells else plan.sign * thresholds[i]),
        positive_above=on_cells or plan.sign > 0,
        fpr_upper=float(fpr_hi[i]),
        fnr_upper=float(fnr_hi[i]),
        false_positives=int(false_positives[i]),
        false_negatives=int(false_negatives[i]),
        n_positive=int(test_pos.size),
        n_negative=int(test_neg.size),
        n_rules_considered=n_rules,
        n_pilot_positive=k_pos,
        n_pilot_negative=k_neg,
        ordering=("one-world atoms" if exclusive else "likelihood-ratio cells" if on_cells
                  else "score"),
        placement=plan.placement,
        n_cells=0 if not on_cells or cells is None else int(cells.cuts.size + 1),
        predicted_epsilon=plan.predicted,
    )
