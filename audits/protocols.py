"""Interfaces for auditing your own unlearning mechanism (in the style of DP-Auditorium).

Two ways in, one way out:

* a :class:`TrialMechanism`: an object whose ``run_trials(seed=, first_trial=, n_trials=)``
  trains, unlearns and retrains ``n_trials`` models and returns a :class:`TrialBatch` of their
  attack scores (and optionally low-dimensional statistics and test accuracies); audit it with
  :func:`audits.runner.audit_mechanism`, which runs it in chunks, stores the chunks, and can
  resume and use Ray like a spec-driven audit;
* precomputed score arrays or matrices (one row per model): audit them with
  :func:`audits.runner.audit_scores`.

Both end in the same analysis, verdict and report as ``unlearn audit run``. The certified side
is a :class:`Certificate`, either a number you vouch for or computed from a declared theorem
(:meth:`Certificate.from_bound`).

Conventions. Scores follow one sign convention: higher means "more like a model that
trained on the forgotten data", so unlearned models are the positive class. A score array is
``[n]`` (one score per model) or ``[n, E]`` (one column per forgotten example: the audit bounds
the mean over columns and plots a per-example estimate). Statistics are ``[n, k]`` arrays (for
example the final parameters of a small model); the audit projects them on a direction learned
from pilot trials. Trial ``i``'s outputs must depend only on ``(seed, i)``, never on how trials
are grouped into calls; that is what makes resumed and distributed audits reproducible.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from empirical.statistics.checks import PrivacyDirection

__all__ = [
    "CURVE_ORDERS",
    "Certificate",
    "ModelOutputs",
    "TrialBatch",
    "TrialMechanism",
    "certified_renyi_curve",
    "direction_from_sums",
    "exact_column_sums",
    "project_rows",
    "projection_unit",
]


def _as_rows(value: Any, name: str, *, ndim: tuple[int, ...]) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise ValueError(f"{name} must hold numbers, got dtype {array.dtype}")
    array = array.astype(np.float64, copy=False)
    if array.ndim not in ndim:
        shapes = " or ".join({1: "[n]", 2: "[n, k]"}[d] for d in ndim)
        raise ValueError(f"{name} must have shape {shapes}, got {array.shape}")
    return array


@dataclass(frozen=True)
class ModelOutputs:
    """What the audit reads from the models of one side, one row per trial.

    ``scores``: attack name -> ``[n]`` or ``[n, E]`` scores (higher = more like having trained
    on the forgotten data). ``statistics``: name -> ``[n, k]`` low-dimensional statistics for
    the projection attack. ``accuracy``: ``[n]`` test accuracies in [0, 1], or None.
    """

    scores: Mapping[str, np.ndarray]
    statistics: Mapping[str, np.ndarray] = field(default_factory=dict)
    accuracy: np.ndarray | None = None

    def __post_init__(self) -> None:
        scores = {str(k): _as_rows(v, f"scores[{k!r}]", ndim=(1, 2))
                  for k, v in dict(self.scores).items()}
        statistics = {str(k): _as_rows(v, f"statistics[{k!r}]", ndim=(2,))
                      for k, v in dict(self.statistics).items()}
        if not scores and not statistics:
            raise ValueError("a side needs at least one score or statistic")
        sizes = {a.shape[0] for a in [*scores.values(), *statistics.values()]}
        accuracy = self.accuracy
        if accuracy is not None:
            accuracy = _as_rows(accuracy, "accuracy", ndim=(1,))
            sizes.add(accuracy.shape[0])
        if len(sizes) != 1:
            raise ValueError(f"scores, statistics and accuracy disagree on the number of "
                             f"trials: {sorted(sizes)}")
        for name, array in [*scores.items(), *statistics.items()]:
            if not np.all(np.isfinite(array)):
                raise ValueError(f"{name!r} contains NaN or infinite values")
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "statistics", statistics)
        object.__setattr__(self, "accuracy", accuracy)

    @property
    def n_trials(self) -> int:
        """Number of trials (rows) in these outputs."""
        first = next(iter([*self.scores.values(), *self.statistics.values()]))
        return int(first.shape[0])


@dataclass(frozen=True)
class TrialBatch:
    """Outputs of ``n`` trials: the unlearned models and the models retrained without the
    forgotten data, row ``i`` of both sides coming from trial ``i`` of the call."""

    unlearned: ModelOutputs
    retrained: ModelOutputs

    def __post_init__(self) -> None:
        if self.unlearned.n_trials != self.retrained.n_trials:
            raise ValueError(f"unlearned has {self.unlearned.n_trials} trials, retrained "
                             f"{self.retrained.n_trials}")
        for kind in ("scores", "statistics"):
            a = set(getattr(self.unlearned, kind))
            b = set(getattr(self.retrained, kind))
            if a != b:
                raise ValueError(f"unlearned and retrained {kind} differ: {sorted(a ^ b)}")
            for name in a:
                shape_u = getattr(self.unlearned, kind)[name].shape[1:]
                shape_r = getattr(self.retrained, kind)[name].shape[1:]
                if shape_u != shape_r:
                    raise ValueError(f"{kind} {name!r} has shape {shape_u} per unlearned "
                                     f"trial but {shape_r} per retrained trial")
        if (self.unlearned.accuracy is None) != (self.retrained.accuracy is None):
            raise ValueError("give accuracies for both sides or for neither")

    @property
    def n_trials(self) -> int:
        """Number of trials in the batch."""
        return self.unlearned.n_trials

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat ``side.kind.name`` arrays (the chunk store's format)."""
        out: dict[str, np.ndarray] = {}
        for side in ("unlearned", "retrained"):
            outputs: ModelOutputs = getattr(self, side)
            for name, array in outputs.scores.items():
                out[f"{side}.scores.{name}"] = array
            for name, array in outputs.statistics.items():
                out[f"{side}.statistics.{name}"] = array
            if outputs.accuracy is not None:
                out[f"{side}.accuracy"] = outputs.accuracy
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> TrialBatch:
        """The batch stored as flat arrays (:meth:`to_arrays`), read back."""
        sides: dict[str, dict[str, Any]] = {
            side: {"scores": {}, "statistics": {}, "accuracy": None}
            for side in ("unlearned", "retrained")
        }
        for key, array in arrays.items():
            side, _, rest = key.partition(".")
            if side not in sides:
                continue
            if rest == "accuracy":
                sides[side]["accuracy"] = array
            else:
                kind, _, name = rest.partition(".")
                sides[side][kind][name] = array
        return cls(ModelOutputs(**sides["unlearned"]), ModelOutputs(**sides["retrained"]))

    @classmethod
    def concatenate(cls, batches: list[TrialBatch]) -> TrialBatch:
        """Batches of consecutive trials as one batch, in order."""
        if not batches:
            raise ValueError("nothing to concatenate")
        parts = [b.to_arrays() for b in batches]
        keys = set(parts[0])
        for part in parts[1:]:
            if set(part) != keys:
                raise ValueError("chunks disagree on their outputs")
        return cls.from_arrays({k: np.concatenate([p[k] for p in parts]) for k in sorted(keys)})


def exact_column_sums(rows: np.ndarray) -> list[int]:
    """Column sums of a float64 ``[n, k]`` array, exactly: integers in units of 2^-1074 (every
    finite float64 is an integer multiple of 2^-1074). Sums of chunks add up to the sum of all
    rows whatever the chunking, which no float summation guarantees."""
    rows = np.asarray(rows, dtype=np.float64)
    if rows.ndim != 2 or not np.all(np.isfinite(rows)):
        raise ValueError("exact column sums need a finite [n, k] array")
    fraction, exponent = np.frexp(rows)  # rows = fraction * 2**exponent, |fraction| in [0.5, 1)
    mantissa = (fraction * 2.0**53).astype(np.int64)  # exact: 53 significant bits
    # value = mantissa * 2**(exponent - 53) = (mantissa << shift) units of 2**-1074; a subnormal
    # has a negative shift and as many trailing zero bits in its mantissa, so >> is exact too
    shift = exponent.astype(np.int64) - 53 + 1074
    return [sum(m << s if s >= 0 else m >> -s
                for m, s in zip(mantissa[:, j].tolist(), shift[:, j].tolist(), strict=True))
            for j in range(rows.shape[1])]


def direction_from_sums(unlearned: Sequence[int], n_unlearned: int, retrained: Sequence[int],
                        n_retrained: int) -> tuple[np.ndarray, float]:
    """The projection attack's direction, mean(unlearned) - mean(retrained) of a statistic over
    the pilot trials, from exact column sums (:func:`exact_column_sums`): the difference of the
    means is formed exactly and rounded once. Returns it as a unit vector (itself when zero) and
    its norm."""
    scale = 2**1074
    direction = np.array([float(Fraction(u, scale * n_unlearned) - Fraction(r, scale * n_retrained))
                          for u, r in zip(unlearned, retrained, strict=True)])
    norm = float(np.linalg.norm(direction))
    return (direction / norm if norm > 0 else direction), norm


def projection_unit(pilot: TrialBatch, statistic: str) -> tuple[np.ndarray, float]:
    """The projection attack's direction from the pilot trials' statistic (see
    :func:`direction_from_sums`), as a unit vector, and its norm."""
    u = pilot.unlearned.statistics[statistic]
    r = pilot.retrained.statistics[statistic]
    return direction_from_sums(exact_column_sums(u), u.shape[0], exact_column_sums(r), r.shape[0])


def project_rows(statistics: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Each row's dot product with ``unit``, computed row by row (a row's value never depends
    on which other rows are in the array, unlike a BLAS matrix-vector product), so that scores
    projected chunk by chunk equal those of the whole array bit for bit."""
    rows = np.ascontiguousarray(statistics, dtype=np.float64)
    return np.add.reduce(rows * np.asarray(unit, dtype=np.float64), axis=1)


@runtime_checkable
class TrialMechanism(Protocol):
    """A mechanism under audit: learn, unlearn and retrain for a range of trials.

    ``run_trials`` must return a :class:`TrialBatch` of ``n_trials`` rows for trials
    ``first_trial .. first_trial + n_trials - 1``, and trial ``i``'s row must depend only on
    ``(seed, i)``. Objects sent to Ray must be picklable. An optional attribute ``device``
    (``"cuda"`` asks Ray for a GPU per chunk) and ``description`` (shown in the report) are
    read when present.
    """

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        """Trials ``first_trial`` .. ``first_trial + n_trials - 1`` of both worlds, reproducible from
        ``seed``."""


@functools.lru_cache(maxsize=256)
def _profile_epsilon(curve: tuple[tuple[float, float], ...], delta: float) -> float:
    """:meth:`Certificate.profile_epsilon` of a (non-decreasing) curve: cached, since every
    allocation pilot of an audit and of its simulated designs asks it of the same curve."""
    import mpmath

    from bounds.conversions import renyi_to_dp
    from bounds.numerics import float_up, interval_endpoints, iv_precision

    best = math.inf
    with iv_precision(40):
        for order, value in curve:
            if not math.isfinite(value):
                continue
            converted = renyi_to_dp(renyi_epsilon=mpmath.iv.mpf(value),
                                    alpha=mpmath.iv.mpf(order), delta=delta,
                                    conversion="balle2020")
            best = min(best, float_up(interval_endpoints(converted)[1]))
    return best


@dataclass(frozen=True)
class Certificate:
    """The certified side of an audit: (epsilon, delta) and where it comes from.

    ``epsilon`` must be a certified upper bound (the engine's interval upper end, or a number
    the caller vouches for). ``bound`` names its theorem (``"user"`` when there is none).

    ``renyi_curve``: when the bound is a Rényi bound, the certified curve alpha -> eps(alpha) as
    ``((alpha, eps), ...)`` pairs on a grid of orders, each eps the interval upper end of the
    bound at that order with the audit's parameters (so the whole curve is certified, not only
    the converted (epsilon, delta)). ``renyi_direction``: ``"both"`` when the certificate caps
    D_alpha(unlearned || retrained) and D_alpha(retrained || unlearned) (a Rényi difference,
    seed 000's Rényi unlearning, or RDP over a symmetric neighbouring relation), ``"forward"``
    when only the first. The audit tests the curve directly (data-processing inequality, see
    :mod:`empirical.divergences.renyi_tests`).
    """

    epsilon: float
    delta: float
    bound: str = "user"
    alpha: float | None = None
    conversion: str | None = None
    calibration: Mapping[str, Any] | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    renyi_curve: tuple[tuple[float, float], ...] | None = None
    renyi_direction: PrivacyDirection | None = None

    @property
    def privacy_direction(self) -> PrivacyDirection:
        """The inequalities of the (epsilon, delta) region the certificate states: "forward" (only
        P(S) <= e^eps Q(S) + delta, P = unlearned) when its Rényi curve bounds only
        D(unlearned || retrained), else "both" (the unlearning definitions of the seed papers)."""
        from empirical.statistics.checks import PrivacyDirection

        return (PrivacyDirection.FORWARD if self.renyi_direction == PrivacyDirection.FORWARD
                else PrivacyDirection.BOTH)

    def effective_curve(self) -> list[tuple[float, float]]:
        """The certified curve made non-decreasing: D_alpha is non-decreasing in alpha (van Erven
        and Harremoës 2014, Theorem 3), so eps(alpha') certifies every alpha <= alpha' too and the
        certificate at alpha is the smallest value it states at any order >= alpha."""
        out, running = [], math.inf
        for order, value in reversed(list(self.renyi_curve or ())):
            running = min(running, value)
            out.append((order, running))
        return out[::-1]

    def __post_init__(self) -> None:
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, int | float) or math.isnan(eps) \
                or eps < 0:
            raise ValueError(f"certificate epsilon must be a number >= 0, got {eps!r}")
        delta = self.delta
        if isinstance(delta, bool) or not isinstance(delta, int | float) \
                or not 0 <= delta < 1:
            raise ValueError(f"certificate delta must be a number in [0, 1), got {delta!r}")
        if not isinstance(self.bound, str) or not self.bound:
            raise ValueError(f"certificate bound must be a non-empty string, got {self.bound!r}")
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "delta", float(delta))
        curve = self.renyi_curve
        if curve is None:
            if self.renyi_direction is not None:
                raise ValueError("renyi_direction needs a renyi_curve")
            return
        pairs = []
        for item in curve:
            order, value = (float(x) for x in item)
            if not (math.isfinite(order) and order > 1):
                raise ValueError(f"renyi_curve orders must be finite and > 1, got {order!r}")
            if math.isnan(value) or value < 0:
                raise ValueError(f"renyi_curve values must be numbers >= 0, got {value!r}")
            pairs.append((order, value))
        if not pairs:
            raise ValueError("renyi_curve must hold at least one (alpha, epsilon) pair")
        orders = [a for a, _ in pairs]
        if any(b <= a for a, b in zip(orders, orders[1:], strict=False)):
            raise ValueError("renyi_curve orders must be strictly increasing")
        from empirical.statistics.checks import PrivacyDirection

        try:
            direction = PrivacyDirection(self.renyi_direction or PrivacyDirection.BOTH)
        except ValueError:
            raise ValueError(f"renyi_direction must be one of {tuple(PrivacyDirection)}, got "
                             f"{self.renyi_direction!r}") from None
        object.__setattr__(self, "renyi_curve", tuple(pairs))
        object.__setattr__(self, "renyi_direction", direction)

    def renyi_epsilon(self, order: float) -> float:
        """Certified eps(order) at one of the curve's grid orders (no interpolation: between
        grid points the curve is not known to the certificate)."""
        if self.renyi_curve is None:
            raise ValueError("this certificate carries no Rényi curve")
        for a, value in self.renyi_curve:
            if a == float(order):
                return value
        raise ValueError(f"order {order!r} is not on the certificate's grid")

    def profile_epsilon(self, delta: float) -> float:
        """The certified epsilon at another ``delta`` of the privacy profile the Rényi curve
        implies: the smallest over the curve's orders of the conversion of Balle et al. 2020,
        Theorem 21 (Canonne, Kamath and Steinke 2020, Proposition 12), each evaluated in
        interval arithmetic and its upper end rounded up to a float, so the value is never below
        what the curve certifies. At the certificate's own delta, its stated epsilon (its bound
        may convert more tightly)."""
        if self.renyi_curve is None:
            raise ValueError("the privacy profile needs a Rényi curve; this certificate states "
                             "one (epsilon, delta) only")
        if float(delta) == self.delta:
            return self.epsilon
        if not 0 < delta < 1:
            raise ValueError(f"a profile delta must lie in (0, 1), got {delta!r}")
        return _profile_epsilon(tuple(self.effective_curve()), float(delta))

    @classmethod
    def from_bound(cls, bound_id: str, *, delta: float, conversion: str = "mironov",
                   orders: Any = None, **params: Any) -> Certificate:
        """Certified (epsilon, delta) of a declared Rényi bound at its best order, and its
        whole certified curve on ``orders`` (default :data:`CURVE_ORDERS`), e.g.
        ``Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1, sigma=1)``."""
        from bounds.conversions import best_epsilon
        from bounds.registry import get

        conv = best_epsilon(bound_id, delta=delta, conversion=conversion, **params)
        bound = get(conv.bound_id)
        curve, direction, _ = certified_renyi_curve(bound, params, orders=orders)
        return cls(
            epsilon=conv.epsilon,
            delta=conv.delta,
            bound=conv.bound_id,
            alpha=conv.alpha,
            conversion=conv.conversion,
            inputs={k: _plain_number(v) for k, v in params.items()},
            provenance=dict(conv.provenance),
            renyi_curve=curve,
            renyi_direction=direction,
        )

    def to_dict(self) -> dict[str, Any]:
        """The report's ``certificate`` object."""
        return {
            "bound": self.bound,
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else "inf",
            "delta": self.delta,
            "alpha": self.alpha,
            "conversion": self.conversion,
            "calibration": None if self.calibration is None else dict(self.calibration),
            "inputs": {k: _plain_number(v) for k, v in self.inputs.items()},
            "provenance": dict(self.provenance) if self.provenance else {
                "source": "given by the caller (not computed by the bound engine)"},
            "renyi_curve": None if self.renyi_curve is None else {
                "orders": [a for a, _ in self.renyi_curve],
                "epsilon": [v if math.isfinite(v) else "inf" for _, v in self.renyi_curve],
                "direction": self.renyi_direction,
                "evaluation": "interval upper end of the bound at each order (certified)",
            },
        }


# Orders at which a Rényi certificate's curve is evaluated: those the histogram test uses
# (empirical.divergences.renyi_histogram.DEFAULT_ORDERS, repeated here so this module stays free of the trial
# code) -- near 1, where score histograms carry most evidence, up to 32.
CURVE_ORDERS: tuple[float, ...] = (1.02, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0)
# Guarantee kinds whose value caps the divergence in both directions: a Rényi difference
# (seed 000's Rényi unlearning: the max of both directions) and RDP, whose neighbouring
# relation is symmetric (Mironov 2017, Definition 4).
_TWO_SIDED_KINDS = ("renyi_unlearning", "renyi_dp")


def certified_renyi_curve(bound: Any, params: Mapping[str, Any], *,
                          orders: Any = None) -> tuple[tuple[tuple[float, float], ...] | None,
                                                       PrivacyDirection | None, list[str]]:
    """The certified curve ``((alpha, eps), ...)`` of a Rényi bound at ``params``, its
    direction, and notes on orders left out.

    Each eps is the interval-arithmetic upper end (``certified_upper``) at that order, with
    the theorem's preconditions checked; an order the theorem refuses is left out (noted), never
    guessed. A bound whose inputs hold at one order only (``Guarantee.fixed_order_inputs``), or
    a call that fixes the order, gives a one-point curve. Non-Rényi bounds give ``None``.
    """
    from bounds.errors import BoundError

    guarantee = bound.guarantee
    order_name = guarantee.renyi_order
    if order_name is None or guarantee.kind not in (*_TWO_SIDED_KINDS, "exact_divergence"):
        return None, None, []
    given = {k: v for k, v in params.items() if k != order_name}
    if order_name in params or any(name in params for name in guarantee.fixed_order_inputs):
        grid: tuple[float, ...] = (float(params[order_name]),) if order_name in params else ()
    else:
        grid = CURVE_ORDERS if orders is None else tuple(float(a) for a in orders)
    pairs, notes = [], []
    for order in grid:
        try:
            value = bound.evaluate(precision="interval", **given, **{order_name: order})
        except BoundError as error:
            notes.append(f"order {order:g} left out of the certified curve: {error}")
            continue
        upper = float(value.certified_upper)
        if math.isnan(upper):
            notes.append(f"order {order:g} left out of the certified curve: not a number")
            continue
        pairs.append((order, upper))
    if not pairs:
        return None, None, notes
    from empirical.statistics.checks import PrivacyDirection

    direction = (PrivacyDirection.BOTH if guarantee.kind in _TWO_SIDED_KINDS
                 else PrivacyDirection.FORWARD)
    return tuple(pairs), direction, notes


def _plain_number(value: Any) -> Any:
    """Numbers stay numbers (exact fractions become exact strings) for the report."""
    from fractions import Fraction

    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, Fraction):
        return str(value) if value.denominator != 1 else int(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, list | tuple):
        return [_plain_number(v) for v in value]
    return str(value)
