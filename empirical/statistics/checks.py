"""Validation helpers and the statistic-kind labels shared by the statistics modules."""

from __future__ import annotations

import enum
import math

import numpy as np

KIND_LOWER_BOUND = "lower bound"
KIND_ESTIMATE = "estimate"
KIND_INTERVAL = "confidence interval"
KIND_CEILING = "ceiling"


# ----------------------------------------------------------------------------------------------
# Input validation.


def check_probability(value: float, name: str, *, open_low: bool, open_high: bool) -> float:
    """``value`` as a float in the unit interval, each end open or closed as asked."""
    value = float(value)
    low_ok = value > 0.0 if open_low else value >= 0.0
    high_ok = value < 1.0 if open_high else value <= 1.0
    if not (math.isfinite(value) and low_ok and high_ok):
        lo, hi = ("(" if open_low else "["), (")" if open_high else "]")
        raise ValueError(f"{name} must lie in {lo}0, 1{hi}, got {value!r}")
    return value


def check_alpha(alpha: float) -> float:
    """``alpha`` as a level in (0, 1)."""
    return check_probability(alpha, "alpha", open_low=True, open_high=True)


def check_delta(delta: float) -> float:
    """``delta`` as a float in [0, 1)."""
    return check_probability(delta, "delta", open_low=False, open_high=True)


def as_finite_array(values, name: str, *, ndim: int | tuple[int, ...] = 1, shape: str = "",
                    min_shape: tuple[int, ...] = (), numbers_only: bool = False,
                    low: float | None = None, high: float | None = None) -> np.ndarray:
    """``values`` as a float64 array, or a ValueError naming ``name``: the one array check of
    the statistics (and of the audit layer's trial outputs).

    ``ndim``: the allowed number(s) of dimensions (``shape`` describes them in the message,
    e.g. ``"[n_models, n_examples]"``); ``min_shape``: the least length of each leading axis
    (default: not empty); ``numbers_only``: refuse non-numeric dtypes instead of parsing them
    (strings, objects); ``low``/``high``: a closed range every entry must lie in. NaN and
    infinities are always refused.
    """
    raw = np.asarray(values)
    if numbers_only and raw.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers, got dtype {raw.dtype}")
    array = np.asarray(raw, dtype=np.float64)
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if array.ndim not in allowed:
        what = f"have shape {shape}" if shape else (
            "be one-dimensional" if allowed == (1,) else f"have {' or '.join(map(str, allowed))} "
            "dimensions")
        raise ValueError(f"{name} must {what}, got shape {array.shape}")
    if not min_shape and array.size == 0:
        raise ValueError(f"{name} is empty")
    if any(length < least for length, least in zip(array.shape, min_shape, strict=False)):
        raise ValueError(f"{name} {'of shape ' + shape + ' ' if shape else ''}needs at least "
                         f"{' x '.join(map(str, min_shape))} entries, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if (low is not None and np.any(array < low)) or (high is not None and np.any(array > high)):
        raise ValueError(f"{name} must lie in [{'-inf' if low is None else low}, "
                         f"{'inf' if high is None else high}]")
    return array


def as_scores(scores, name: str) -> np.ndarray:
    """One-dimensional, non-empty, finite attack scores (kept name: other modules import it)."""
    return as_finite_array(scores, name)


def paired_permutations(rng: np.random.Generator, n_p: int,
                        n_q: int) -> tuple[np.ndarray, np.ndarray]:
    """Random orders of two samples for a pilot / held-out split, drawn as ONE permutation of
    the row indices: row i of both samples (trial i of both worlds, which may share
    randomness) lands in the same part whenever the parts have the same size, so a pilot never
    leaks into the other side's tested rows. Unequal sizes keep each side's rows in the order
    of the shared permutation (such samples are not paired)."""
    order = rng.permutation(max(n_p, n_q))
    return order[order < n_p], order[order < n_q]


def split_order(rows, n_p: int, n_q: int, *, seed: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The two samples' orders for a pilot / held-out split from ``rows``, a permutation of
    the row indices 0 .. max(n_p, n_q) - 1 drawn by the caller independently of the scores
    (as :func:`paired_permutations` draws one), so that several statistics can share one split:
    a pilot that is a prefix of ``rows`` is then the same rows for every statistic. ``rows``
    None: the permutation :func:`paired_permutations` draws from ``seed``."""
    if rows is None:
        return paired_permutations(np.random.default_rng(seed), n_p, n_q)
    order = np.asarray(rows)
    size = max(n_p, n_q)
    if (order.ndim != 1 or order.size != size or not np.issubdtype(order.dtype, np.integer)
            or not np.array_equal(np.sort(order), np.arange(size))):
        raise ValueError(f"rows must be a permutation of the {size} row indices 0 .. {size - 1}")
    return order[order < n_p], order[order < n_q]


def check_count(value, name: str, *, minimum: int = 0) -> int:
    """``value`` as an integer >= ``minimum`` (booleans refused)."""
    if isinstance(value, bool) or not float(value).is_integer():
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


# ----------------------------------------------------------------------------------------------
# epsilon from one test.


def _log_ratio_term(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """log(numerator / denominator) with the conventions needed by the privacy region.

    A non-positive numerator puts no constraint on epsilon (-inf, later clamped to 0); a zero
    denominator with a positive numerator means no finite epsilon is consistent (+inf).
    """
    out = np.full(np.broadcast(numerator, denominator).shape, -np.inf)
    numerator, denominator = np.broadcast_arrays(numerator, denominator)
    positive = numerator > 0
    zero_den = positive & (denominator <= 0)
    regular = positive & (denominator > 0)
    out[zero_den] = np.inf
    out[regular] = np.log(numerator[regular]) - np.log(denominator[regular])
    return out


class PrivacyDirection(enum.StrEnum):
    """Which inequalities of the (epsilon, delta) region a guarantee states (and which Rényi
    divergences a Rényi guarantee caps): "both" (P and Q may be swapped, as in the unlearning
    definitions of the seed papers) or "forward" (only P(S) <= e^eps Q(S) + delta, P the
    positive law: a one-directional divergence bound). Not a score's orientation."""

    BOTH = "both"
    FORWARD = "forward"

    # Written as the plain value, so that seeds drawn from the repr of a setting holding one
    # are those of the plain string.
    __repr__ = str.__repr__


def midranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``values``, tied values sharing the mean of their ranks (scipy.stats'
    rankdata with method "average", without importing scipy.stats)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]


def check_direction(direction: str) -> PrivacyDirection:
    """``direction`` as a :class:`PrivacyDirection`, else a clear error."""
    try:
        return PrivacyDirection(direction)
    except ValueError:
        raise ValueError(f"direction must be one of {', '.join(PrivacyDirection)}, got "
                         f"{direction!r}") from None


def epsilon_from_error_rates(*, fpr, fnr, delta: float, direction: str = "both"):
    """Smallest epsilon consistent with a test of error rates (fpr, fnr) at this delta.

    The test says "positive" on a set S: P(S) = 1 - FNR under the positive law P, Q(S) = FPR
    under the negative law Q. A guarantee P(S) <= e^eps Q(S) + delta for every S (the forward
    direction) forces 1 - FNR <= e^eps FPR + delta, i.e. eps >= log((1 - delta - FNR) / FPR);
    the reverse guarantee Q(S') <= e^eps P(S') + delta on the complement S' gives
    eps >= log((1 - delta - FPR) / FNR) (Kairouz, Oh, Viswanath 2015, Thm 2.1).
    ``direction="both"`` ((epsilon, delta)-indistinguishability, as in the unlearning
    definitions of the seed papers) uses both, ``"forward"`` only the first: a forward-only
    certificate says nothing about the reverse inequality, so using it would refute exactly
    right certificates. Each term is non-increasing in both rates. (The forward inequality on
    the complement, FNR <= e^eps (1 - FPR) + delta, is the first term of the reversed rule
    "score <= t", which the audit tests as its own orientation.)

    Returns a float for scalar input, an array otherwise. Never NaN: a term whose numerator is
    not positive contributes 0; a zero rate facing a positive numerator gives +inf (exact: no
    finite epsilon explains a perfect test). Clopper-Pearson upper bounds are never 0, so the
    lower bounds built on this function are always finite.
    """
    delta = check_delta(delta)
    direction = check_direction(direction)
    fpr_a = np.asarray(fpr, dtype=np.float64)
    fnr_a = np.asarray(fnr, dtype=np.float64)
    for name, arr in (("fpr", fpr_a), ("fnr", fnr_a)):
        if not np.all((arr >= 0.0) & (arr <= 1.0)):
            raise ValueError(f"{name} must lie in [0, 1]")
    forward = _log_ratio_term(1.0 - delta - fnr_a, fpr_a)
    eps = np.maximum(0.0, forward)
    if direction == "both":
        eps = np.maximum(eps, _log_ratio_term(1.0 - delta - fpr_a, fnr_a))
    return float(eps) if eps.ndim == 0 else eps
