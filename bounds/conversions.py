"""Conversions between privacy notions, and the optimisation over the Rényi order.

* Rényi (α, ε) → (ε', δ):
  - ``"mironov"``: ε' = ε + log(1/δ)/(α − 1) (Mironov 2017, Proposition 3; the form used by
    Chien et al. 2024, Proposition N.2);
  - ``"balle2020"``: ε' = ε + log((α − 1)/α) − (log δ + log α)/(α − 1) (Balle et al. 2020,
    Theorem 21; Canonne, Kamath and Steinke 2020, Proposition 12). Never larger than Mironov's.
* Both hold for each direction of a Rényi divergence, so a bound on the two-sided Rényi
  difference d_α = max(D_α(P‖Q), D_α(Q‖P)) gives (ε', δ)-indistinguishability both ways.
* The exact hockey-stick curve δ(ε) of a Gaussian pair N(0,1) vs N(μ,1) (Balle and Wang 2018,
  Theorem 8), evaluated in log space, and its inverse ε(δ).

:func:`best_epsilon` minimises ε'(α) over the continuous order α > 1 (no grid of orders), then
re-evaluates the winning order in interval arithmetic so that the reported ε' is certified.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from scipy import special

from bounds.declarations import Bound
from bounds.errors import BoundError, PreconditionError, SolverError
from bounds.numerics import float_up, interval_endpoints, iv_precision
from bounds.registry import get
from bounds.scalar_search import bounded_minimum

CONVERSIONS: tuple[str, ...] = ("mironov", "balle2020")

CONVERSION_CITATIONS = {
    "mironov": "Mironov 2017, Proposition 3 (as used in Chien et al. 2024, Proposition N.2)",
    "balle2020": "Balle et al. 2020, Theorem 21; Canonne-Kamath-Steinke 2020, Proposition 12",
}


def _check_delta(delta: float) -> None:
    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) < 1.0):
        raise PreconditionError(f"conversion requires 0 < delta < 1, got {delta!r}")


def renyi_to_dp(*, renyi_epsilon: Any, alpha: Any, delta: float, conversion: str = "mironov") -> Any:
    """(α, ε)-Rényi → ε' at δ. Vectorised over numpy arrays; exact for mpmath inputs.

    The result is clamped at 0: the privacy profile δ(ε) is non-increasing in ε, so (ε', δ) with
    ε' < 0 implies (0, δ), and no ε below 0 is meaningful (dp_accounting and the exact Gaussian
    curve answer 0 there too). Balle et al.'s conversion goes negative for large δ.
    """
    return _clamp_at_zero(_renyi_to_dp_raw(renyi_epsilon, alpha, delta, conversion))


def _renyi_to_dp_raw(renyi_epsilon: Any, alpha: Any, delta: float, conversion: str) -> Any:
    _check_delta(delta)
    if conversion == "mironov":
        if isinstance(alpha, np.ndarray) or isinstance(renyi_epsilon, np.ndarray):
            return renyi_epsilon + math.log(1.0 / delta) / (alpha - 1.0)
        return renyi_epsilon + _log(1 / _num(delta, alpha)) / (alpha - 1)
    if conversion == "balle2020":
        if isinstance(alpha, np.ndarray) or isinstance(renyi_epsilon, np.ndarray):
            return (
                renyi_epsilon
                + np.log1p(-1.0 / alpha)
                - (math.log(delta) + np.log(alpha)) / (alpha - 1.0)
            )
        d = _num(delta, alpha)
        return renyi_epsilon + _log(1 - 1 / alpha) - (_log(d) + _log(alpha)) / (alpha - 1)
    raise BoundError(f"unknown conversion {conversion!r}; choose one of {CONVERSIONS}")


def _clamp_at_zero(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return np.maximum(value, 0.0)
    if type(value).__name__ == "ivmpf":
        lo, hi = interval_endpoints(value)
        return mpmath.iv.mpf([max(lo, 0), max(hi, 0)])
    return value if value >= 0 else type(value)(0)


def check_alpha_range(alpha_min: Any, alpha_max: Any) -> tuple[float, float]:
    """Validate a search range of Rényi orders: finite numbers with 1 <= alpha_min < alpha_max."""
    try:
        lo, hi = float(alpha_min), float(alpha_max)
    except (TypeError, ValueError):
        raise BoundError(f"alpha range must be numbers, got {alpha_min!r}, {alpha_max!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise BoundError(f"alpha range must be finite, got [{alpha_min}, {alpha_max}]")
    if lo < 1:
        raise BoundError(f"alpha_min must be >= 1 (Rényi orders are > 1), got {alpha_min}")
    if not hi > lo or not hi > 1:
        raise BoundError(f"alpha_max must exceed alpha_min and 1, got [{alpha_min}, {alpha_max}]")
    return lo, hi


def renyi_difference(forward: Any, backward: Any) -> Any:
    """The two-sided Rényi difference d_α = max(D_α(P‖Q), D_α(Q‖P)) (Chien et al., Def. 2.1)."""
    return np.maximum(forward, backward) if isinstance(forward, np.ndarray) else max(forward, backward)


def _num(delta: float, like: Any) -> Any:
    if type(like).__name__ == "ivmpf":
        return mpmath.iv.mpf(delta)
    if isinstance(like, mpmath.mpf):
        return mpmath.mpf(delta)
    return float(delta)


def _log(x: Any) -> Any:
    if type(x).__name__ == "ivmpf":
        return mpmath.iv.log(x)
    if isinstance(x, mpmath.mpf):
        return mpmath.log(x)
    return math.log(x)


# --------------------------------------------------------------------------------------------
# Gaussian hockey-stick divergence
# --------------------------------------------------------------------------------------------


def gaussian_delta(*, epsilon: float, mu: float) -> float:
    """Exact δ(ε) of N(0,1) vs N(μ,1): Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).

    Computed as a difference of exponentials of log-CDFs, so it stays accurate when δ is tiny.
    """
    if not (mu > 0 and math.isfinite(mu)):
        raise PreconditionError(f"gaussian_delta requires mu > 0, got {mu!r}")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise PreconditionError(f"gaussian_delta requires epsilon >= 0, got {epsilon!r}")
    log_a = special.log_ndtr(mu / 2 - epsilon / mu)
    log_b = epsilon + special.log_ndtr(-mu / 2 - epsilon / mu)
    if log_b >= log_a:
        return 0.0
    return float(math.exp(log_a) * -math.expm1(log_b - log_a))


def _gaussian_delta_terms(epsilon: Any, mu: Any) -> tuple[Any, Any]:
    """Φ(μ/2 − ε/μ) and e^ε Φ(−μ/2 − ε/μ) in mpmath at the working precision (δ = first − second)."""
    e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
    return mpmath.ncdf(m / 2 - e / m), mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


def gaussian_delta_mp(*, epsilon: Any, mu: Any, digits: int = 50) -> Any:
    """δ(ε) of N(0,1) vs N(μ,1) in mpmath at ``digits`` significant digits (Balle and Wang 2018,
    Theorem 8): Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), clamped at 0.

    The high-precision twin of :func:`gaussian_delta`: accurate to about ``digits`` digits when
    the two terms do not cancel, but not interval-rigorous (callers that certify add a margin;
    :func:`gaussian_epsilon` decides with an explicit error bound instead).
    """
    with mpmath.workdps(digits):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        if not (e >= 0 and m > 0):
            raise PreconditionError(f"the Gaussian delta(epsilon) (Balle and Wang 2018, Theorem 8) "
                                    f"needs epsilon >= 0 and mu > 0, got {epsilon!r}, {mu!r}")
        first, second = _gaussian_delta_terms(e, m)
        return +max(first - second, mpmath.mpf(0))


def _gaussian_delta_exceeds(epsilon: float, mu: float, delta: float) -> bool:
    """Whether δ(ε) > ``delta`` for N(0,1) vs N(μ,1), decided in high precision with a margin.

    Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) is evaluated with mpmath at 60 digits (more when the two
    terms cancel); the answer "not exceeded" is given only when the value plus a bound on the
    rounding error of the difference is still <= delta.
    """
    dps = 60
    while True:
        with mpmath.workdps(dps):
            first, second = _gaussian_delta_terms(epsilon, mu)
            value = first - second
            error = (first + second) * mpmath.ldexp(1, 20 - mpmath.mp.prec)
            if value - error > delta:
                return True
            if value + error <= delta:
                return False
        if dps > 2000:  # the difference is within 1e-1900 of delta: call it exceeded (safe side)
            return True
        dps *= 2


def gaussian_epsilon(*, delta: float, mu: float) -> float:
    """Smallest float ε >= 0 with δ(ε) <= ``delta`` for N(0,1) vs N(μ,1), rounded up.

    A float bisection brackets the answer; the returned ε is then checked in high precision
    (:func:`_gaussian_delta_exceeds`) and moved up one float at a time until δ(ε) <= delta holds,
    so the answer is never below the exact one (the float curve alone can be ~1e-11 low).
    """
    _check_delta(delta)
    if not (mu > 0 and math.isfinite(mu)):
        raise PreconditionError(f"gaussian_epsilon requires mu > 0, got {mu!r}")
    if not _gaussian_delta_exceeds(0.0, mu, delta):
        return 0.0
    hi = 1.0
    while gaussian_delta(epsilon=hi, mu=mu) > delta:
        hi *= 2.0
        if hi > 1e6:
            raise BoundError("gaussian_epsilon: no epsilon below 1e6 reaches this delta")
    lo = hi / 2 if hi > 1.0 else 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if gaussian_delta(epsilon=mid, mu=mu) > delta:
            lo = mid
        else:
            hi = mid
    step = max(hi * 2.0**-52, 5e-324)
    while _gaussian_delta_exceeds(hi, mu, delta):
        hi += step
        step *= 2.0
    return hi


def gaussian_epsilon_lower(*, delta: float, mu: float) -> float:
    """A float ε >= 0 never above the exact ε(δ) of N(0,1) vs N(μ,1): the safe side of a LOWER
    bound (Balle and Wang 2018, Theorem 8), e.g. turning an audit's μ lower bound into ε.

    Starts at :func:`gaussian_epsilon` (rounded up) and steps down until δ(ε) > ``delta`` is
    shown in high precision (:func:`_gaussian_delta_exceeds`), so ε is below the exact answer;
    0 is returned when δ(0) <= delta. (That check calls a difference within 1e-1900 of delta
    "exceeded"; such a tie is the only case it could err on this side.)
    """
    upper = gaussian_epsilon(delta=delta, mu=mu)
    x, step = upper, max(upper * 2.0**-52, 5e-324)
    while x > 0.0:
        x = max(0.0, x - step)
        if _gaussian_delta_exceeds(x, mu, delta):
            return x
        step *= 2.0
    return 0.0


# --------------------------------------------------------------------------------------------
# Optimal Rényi order
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DPConversion:
    """An (ε, δ) guarantee obtained from a Rényi bound at an optimised order.

    ``epsilon`` is the upper end of an interval evaluation at ``alpha`` of the Rényi bound plus
    the conversion term, clamped at 0. It is a certificate only when ``certified`` is true: a
    literal printed variant, or a bound outside its certificate conditions, is evaluated the
    same way but ``certified`` is false and ``notes`` says why. ``alpha_fixed`` orders (given
    by the caller) are not optimised. ``epsilon_float`` is the float value at the same order.
    """

    epsilon: float
    delta: float
    alpha: float
    renyi_epsilon: float
    conversion: str
    epsilon_float: float
    bound_id: str
    provenance: Mapping[str, Any]
    certified: bool = True
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The conversion as plain JSON data."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "alpha": self.alpha,
            "renyi_epsilon": self.renyi_epsilon,
            "conversion": self.conversion,
            "conversion_citation": CONVERSION_CITATIONS[self.conversion],
            "epsilon_float": self.epsilon_float,
            "certified": self.certified,
            "notes": list(self.notes),
            "provenance": dict(self.provenance),
        }


def _order_parameter(bound: Bound) -> str:
    order = bound.guarantee.renyi_order
    if order is None:
        raise BoundError(
            f"{bound.id} gives a {bound.guarantee.kind} guarantee, not a Rényi bound; "
            "there is nothing to convert to (epsilon, delta)"
        )
    return order


def dp_epsilon_float(
    bound: Bound,
    *,
    delta: float,
    conversion: str,
    params: Mapping[str, Any],
    alpha_max: float = 1e8,
    alpha_min: float = 1.0,
) -> tuple[float, float]:
    """Float search of min over α of the converted bound: returns (ε', α*). Not certified.

    A log-spaced scan of α − 1 over [1e-6, alpha_max] brackets the minimum; bounded Brent
    refines it. ``params`` must hold float-convertible scalars for every other parameter.
    """
    order = _order_parameter(bound)
    names = bound.parameter_names
    # numpy scalars: an overflow gives inf (then rejected), not Python's OverflowError.
    base = [np.float64(params[n]) if n != order else None for n in names]
    idx = names.index(order)
    lo_exp = math.log10(max(alpha_min - 1.0, 1e-6)) if alpha_min > 1.0 else -6.0
    hi_exp = math.log10(alpha_max - 1.0)

    def converted(alpha: np.ndarray) -> np.ndarray:
        args = list(base)
        args[idx] = alpha
        with np.errstate(all="ignore"):
            rdp = np.asarray(bound.float_function(*args), dtype=float)
            value = renyi_to_dp(renyi_epsilon=rdp, alpha=alpha, delta=delta, conversion=conversion)
        return np.where(np.isfinite(value), value, np.inf)

    grid = 1.0 + np.logspace(lo_exp, hi_exp, 400)
    values = converted(grid)
    best = int(np.argmin(values))
    if not np.isfinite(values[best]):
        raise SolverError(f"{bound.id}: the bound is not finite for any order alpha")
    lo = math.log(grid[max(best - 1, 0)] - 1.0)
    hi = math.log(grid[min(best + 1, len(grid) - 1)] - 1.0)
    if hi > lo:
        res = bounded_minimum(lambda t: float(converted(np.array([1.0 + math.exp(t)]))[0]),
                              lo, hi, xatol=1e-10)
        if res.fun < values[best]:
            return float(res.fun), 1.0 + math.exp(res.x)
    return float(values[best]), float(grid[best])


def best_epsilon(
    bound_id: str | Bound,
    *,
    delta: float,
    conversion: str = "mironov",
    alpha_max: float = 1e8,
    alpha_min: float = 1.0,
    digits: int = 30,
    **params: Any,
) -> DPConversion:
    """Certified ε at δ from a Rényi bound, minimised over the order α.

    The optimiser works in float; the reported ``epsilon`` is re-evaluated at the optimal order
    with interval arithmetic (theorem preconditions checked), so it is a certified upper bound
    whatever the optimiser did. ``alpha_min``/``alpha_max`` restrict the search (some papers
    search a fixed range, e.g. [2, 1e4]). Passing the order itself fixes it (required when an
    input such as ``eps0`` holds at one order only).
    """
    bound = bound_id if isinstance(bound_id, Bound) else get(bound_id)
    if conversion not in CONVERSIONS:
        raise BoundError(f"unknown conversion {conversion!r}; choose one of {CONVERSIONS}")
    _check_delta(delta)
    alpha_min, alpha_max = check_alpha_range(alpha_min, alpha_max)
    order = _order_parameter(bound)
    notes: list[str] = []
    fixed = order in params
    require_fixed_order(bound, params)
    values = bound.resolve({**params, order: params.get(order, 2)})
    for name, v in values.items():
        if isinstance(v, np.ndarray):
            raise BoundError(f"best_epsilon takes scalar parameters; {name} is an array")
    if fixed:
        # A given order is used as is: its Rényi inputs hold there only (e.g. eps0).
        alpha = float(values[order])
        if sp.Rational(Fraction(alpha)) != values[order]:
            raise BoundError(f"{order} must be a float-representable order, got {params[order]}")
        notes.append(f"order {order} = {alpha:g} fixed by the caller (not optimised)")
        rest = {k: v for k, v in params.items() if k != order}
        eps_float = float(renyi_to_dp(
            renyi_epsilon=bound.evaluate(**params).value, alpha=alpha, delta=delta,
            conversion=conversion))
    else:
        rest = dict(params)
        float_params = {k: float(v) for k, v in values.items() if k != order}
        eps_float, alpha = dp_epsilon_float(
            bound, delta=delta, conversion=conversion, params=float_params,
            alpha_max=alpha_max, alpha_min=alpha_min,
        )
    certified, rdp_upper = certify_at_order(
        bound, delta=delta, conversion=conversion, alpha=alpha, params=rest, digits=digits
    )
    with iv_precision(digits):
        raw = _renyi_to_dp_raw(mpmath.iv.mpf(rdp_upper), mpmath.iv.mpf(alpha), delta, conversion)
    if interval_endpoints(raw)[1] < 0:
        notes.append("the conversion gave a negative epsilon; clamped at 0 (the privacy profile "
                     "is non-increasing in epsilon, so (0, delta) holds)")
    is_certificate, why = bound.certificate_status(bound.resolve({**rest, order: alpha}))
    if not is_certificate:
        notes.append(why)
    return DPConversion(
        epsilon=certified,
        delta=float(delta),
        alpha=alpha,
        renyi_epsilon=rdp_upper,
        conversion=conversion,
        epsilon_float=eps_float,
        bound_id=bound.id,
        provenance={**bound.provenance(), "conversion": CONVERSION_CITATIONS[conversion]},
        certified=is_certificate,
        notes=tuple(notes),
    )


def require_fixed_order(bound: Bound, params: Mapping[str, Any]) -> None:
    """Refuse to optimise the order of a bound whose inputs hold at one order only."""
    order = _order_parameter(bound)
    inputs = bound.guarantee.fixed_order_inputs
    if inputs and order not in params:
        raise BoundError(
            f"{bound.id}: {', '.join(inputs)} is a Rényi level valid at one order only, so the "
            f"order cannot be optimised; pass {order}=<the order at which "
            f"{', '.join(inputs)} holds> (or use a bound that carries its order, e.g. "
            "chien2024lu:eq98)"
        )


def certify_at_order(
    bound: Bound,
    *,
    delta: float,
    conversion: str,
    alpha: float,
    params: Mapping[str, Any],
    digits: int = 30,
) -> tuple[float, float]:
    """Interval upper bound of (converted ε', Rényi ε) at a given order α."""
    order = _order_parameter(bound)
    ev = bound.evaluate(precision="interval", digits=digits, **{**params, order: alpha})
    with iv_precision(digits):
        a = mpmath.iv.mpf(alpha)
        rdp = mpmath.iv.mpf([ev.lower, ev.upper])
        total = renyi_to_dp(renyi_epsilon=rdp, alpha=a, delta=delta, conversion=conversion)
        _, upper = interval_endpoints(total)
    return float_up(upper), float_up(ev.upper)
