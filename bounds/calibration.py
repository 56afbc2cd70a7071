"""Safe-side inverses of any declared bound: the least σ, K or T, or the most requests, that
meet a target (ε, δ).

Every solver follows the same pattern as Google's dp_accounting ``mechanism_calibration``:
bracket, search in float, then re-check. The returned value is re-evaluated with interval
arithmetic (theorem preconditions included) and must meet the target; its neighbour (the value
one tolerance step on the unsafe side, or K − 1, T − 1, requests + 1) must fail it, which shows
the answer is not needlessly conservative. The direction of the search comes from the bound's
declared monotonicity, which the test-suite checks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from bounds.conversions import (
    CONVERSION_CITATIONS,
    CONVERSIONS,
    best_epsilon,
    check_alpha_range,
    dp_epsilon_float,
    renyi_to_dp,
    require_fixed_order,
)
from bounds.declarations import Bound, GuaranteeKind
from bounds.errors import BoundError, PreconditionError, SolverError
from bounds.registry import get
from bounds.scalar_search import brent_root

SOLVE_ALIASES = {"requests": "s", "burn-in": "T", "epochs": "K"}
_INTEGER_LIMIT = 2**53


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The answer of a calibration, with the checks that make it trustworthy.

    Attributes:
      value: the calibrated parameter (``None`` when every value meets the target, e.g. an
        unbounded number of requests; see ``notes``).
      certified_epsilon: interval-certified ε at ``value`` (≤ ``target_epsilon``).
      alpha: the Rényi order used for the certificate (``None`` for direct (ε, δ) bounds).
      neighbour / neighbour_epsilon: the adjacent value on the unsafe side and its float ε,
        which exceeds the target (``None`` when ``value`` is at the edge of the domain).
      certified: false for a literal printed variant or a bound outside its certificate
        conditions (``notes`` says why): the arithmetic is the same, the guarantee is not.
      quantity: ``"epsilon"``, or ``"delta"`` for a bound whose value is a δ (guarantee kind
        ``unlearning_delta``); the ``*_epsilon`` attributes then hold δ values, and
        :meth:`to_dict` names them ``*_delta``.
    """

    bound_id: str
    parameter: str
    value: float | int | None
    target_epsilon: float
    delta: float | None
    conversion: str | None
    certified_epsilon: float | None
    alpha: float | None
    neighbour: float | int | None
    neighbour_epsilon: float | None
    inputs: Mapping[str, Any]
    notes: tuple[str, ...]
    provenance: Mapping[str, Any]
    certified: bool = True
    quantity: str = "epsilon"

    def to_dict(self) -> dict[str, Any]:
        """The calibration as plain JSON data."""
        q = self.quantity
        return {
            "bound": self.bound_id,
            "solve": self.parameter,
            "value": self.value,
            "quantity": q,
            f"target_{q}": self.target_epsilon,
            "delta": self.delta,
            "conversion": self.conversion,
            "conversion_citation": CONVERSION_CITATIONS.get(self.conversion or "", None),
            f"certified_{q}": self.certified_epsilon,
            "certified": self.certified,
            "alpha": self.alpha,
            "neighbour": self.neighbour,
            f"neighbour_{q}": self.neighbour_epsilon,
            "inputs": {k: _plain(v) for k, v in self.inputs.items()},
            "notes": list(self.notes),
            "provenance": dict(self.provenance),
        }


def _plain(v: Any) -> Any:
    if isinstance(v, sp.Basic):
        return int(v) if v.is_Integer else float(v)
    return v


class _Objective:
    """ε(x) at δ for one free parameter x: float (search) and certified (check) versions."""

    def __init__(
        self,
        bound: Bound,
        parameter: str,
        *,
        delta: float | None,
        conversion: str,
        params: Mapping[str, Any],
        alpha_min: float,
        alpha_max: float,
    ) -> None:
        self.bound = bound
        self.parameter = parameter
        self.delta = delta
        self.conversion = conversion
        self.params = dict(params)
        self.alpha_min = alpha_min
        self.alpha_max = alpha_max
        self.renyi = bound.guarantee.renyi_order is not None
        self.limit_alpha: float | None = None
        if self.renyi and delta is None:
            raise BoundError(f"{bound.id} is a Rényi bound: give --delta for the conversion")
        order = bound.guarantee.renyi_order
        self.fixed_order = self.renyi and order in self.params
        if self.renyi:
            require_fixed_order(bound, self.params)
        placeholder = {parameter: 1}
        if self.renyi and not self.fixed_order:
            placeholder[order] = 2
        values = bound.resolve({**self.params, **placeholder})
        self.float_params = {k: float(v) for k, v in values.items()}

    def float_epsilon(self, x: float) -> float:
        params = {**self.float_params, self.parameter: float(x)}
        if self.fixed_order:
            order = self.bound.guarantee.renyi_order
            args = [np.float64(params[n]) for n in self.bound.parameter_names]
            with np.errstate(all="ignore"):
                rdp = float(self.bound.float_function(*args))
                eps = float(renyi_to_dp(renyi_epsilon=rdp, alpha=params[order], delta=self.delta,
                                        conversion=self.conversion))
            return eps if math.isfinite(eps) else math.inf
        if self.renyi:
            eps, _ = dp_epsilon_float(
                self.bound, delta=self.delta, conversion=self.conversion, params=params,
                alpha_min=self.alpha_min, alpha_max=self.alpha_max,
            )
            return eps
        args = [np.float64(params[n]) for n in self.bound.parameter_names]
        with np.errstate(all="ignore"):
            value = float(self.bound.float_function(*args))
        return value if math.isfinite(value) else math.inf

    def admissible(self, x: Any) -> bool:
        """Whether ``x`` meets the solved parameter's domain and the theorem's preconditions at
        the given inputs (a free Rényi order stands at its placeholder 2 here; it is chosen
        later, and the certified evaluation checks it)."""
        placeholder = {}
        if self.renyi and not self.fixed_order:
            placeholder[self.bound.guarantee.renyi_order] = 2
        try:
            self.bound.check(self.bound.resolve({**self.params, **placeholder,
                                                 self.parameter: x}))
        except PreconditionError:
            return False
        return True

    def certified(self, x: Any) -> tuple[float, float | None]:
        params = {**self.params, self.parameter: x}
        if self.renyi:
            conv = best_epsilon(
                self.bound, delta=self.delta, conversion=self.conversion,
                alpha_min=self.alpha_min, alpha_max=self.alpha_max, **params,
            )
            return conv.epsilon, conv.alpha
        ev = self.bound.evaluate(precision="interval", digits=30, **params)
        return ev.certified_upper, None


def calibrate(
    bound_id: str | Bound,
    *,
    solve: str,
    epsilon: float | None = None,
    delta: float | None = None,
    conversion: str = "mironov",
    rtol: float = 1e-9,
    alpha_min: float = 1.0,
    alpha_max: float = 1e8,
    **params: Any,
) -> Calibration:
    """Solve a declared bound for one parameter so that the certified ε meets ``epsilon``.

    Args:
      bound_id: a bound id or :class:`Bound`.
      solve: the parameter to solve for: ``sigma``, ``K``, ``T``, ``requests`` (the request
        index ``s`` of sequential bounds) or any parameter with a declared monotonicity.
      epsilon: target ε.
      delta: δ: of the conversion for Rényi bounds (at the best order α), the value of the
        bound's own ``delta`` parameter for (ε, δ) bounds that take one, or the target itself
        for a bound whose value is a δ (``unlearning_delta``, where ``epsilon`` is not given).
      conversion: ``"mironov"`` (the papers' choice) or ``"balle2020"``.
      rtol: relative tolerance of continuous solutions.
      alpha_min, alpha_max: range searched for the Rényi order.
      **params: every other parameter of the bound.

    Returns:
      A :class:`Calibration` whose ``value`` is on the safe side: for a quantity that lowers ε
      (σ, K, T) the smallest admissible one, for requests the largest admissible count.

    Raises:
      SolverError: no value in the parameter's domain meets the target.
    """
    bound = bound_id if isinstance(bound_id, Bound) else get(bound_id)
    name = SOLVE_ALIASES.get(solve, solve)
    if name not in bound.parameter_names:
        raise BoundError(f"{bound.id} has no parameter {solve!r} to solve for; it takes "
                         f"{', '.join(bound.parameter_names)}")
    direction = bound.monotone.get(name)
    if direction not in ("increasing", "decreasing"):
        raise BoundError(
            f"{bound.id} is not known to be monotone in {name} over its whole domain, so no "
            f"value of {name} can be guaranteed to hold for every larger (or smaller) one; "
            "cannot calibrate it" + _monotone_alternatives(bound, name)
        )
    alpha_min, alpha_max = check_alpha_range(alpha_min, alpha_max)
    if name in params:
        raise BoundError(f"do not pass {name}: it is the unknown")
    quantity = "delta" if bound.guarantee.kind == GuaranteeKind.UNLEARNING_DELTA else "epsilon"
    if quantity == "delta":
        if epsilon is not None:
            raise BoundError(f"{bound.id} bounds a delta, not an epsilon: give the target delta "
                             "(--delta), not a target epsilon")
        epsilon, delta = delta, None
    elif bound.guarantee.renyi_order is None and "delta" in bound.parameter_names and name != "delta":
        # An (epsilon, delta) bound with its own delta parameter: the given delta is that input.
        if delta is not None and "delta" in params:
            raise BoundError(f"{bound.id}: delta given twice (as --delta and as delta=...); give it "
                             "once")
        if delta is not None:
            params = {**params, "delta": delta}
        elif "delta" not in params:
            raise BoundError(f"{bound.id} takes delta: give it with --delta")
        delta = resolve_delta(params["delta"], bound.id)
    if epsilon is None:
        raise BoundError(f"give the target {quantity} of {bound.id}")
    if not (isinstance(epsilon, (int, float)) and 0 < epsilon and math.isfinite(epsilon)):
        raise BoundError(f"target {quantity} must be a positive finite number, got {epsilon!r}")
    if conversion not in CONVERSIONS:
        raise BoundError(f"unknown conversion {conversion!r}; choose one of {CONVERSIONS}")
    if bound.guarantee.kind not in (GuaranteeKind.RENYI_UNLEARNING, GuaranteeKind.RENYI_DP,
                                    GuaranteeKind.EPS_DELTA_UNLEARNING,
                                    GuaranteeKind.UNLEARNING_DELTA):
        raise BoundError(f"{bound.id} bounds a {bound.guarantee.kind}, not a privacy loss")
    if bound.guarantee.renyi_order == name:
        raise BoundError("the Rényi order is optimised, not calibrated")
    objective = _Objective(
        bound, name, delta=delta, conversion=conversion, params=params,
        alpha_min=alpha_min, alpha_max=alpha_max,
    )
    param = bound.parameter(name)
    notes: list[str] = []
    if param.integer:
        value, neighbour = _solve_integer(objective, param, direction, epsilon, notes)
    else:
        value, neighbour = _solve_continuous(objective, param, direction, epsilon, rtol)

    certified_eps = alpha = None
    if value is not None:
        certified_eps, alpha = objective.certified(value)
        # The float search may sit a hair on the wrong side of the rigorous answer: step out.
        for _ in range(64):
            if certified_eps <= epsilon:
                break
            value, neighbour = _step_safe(param, direction, value, rtol), value
            certified_eps, alpha = objective.certified(value)
        else:  # pragma: no cover - would mean the float and interval values disagree wildly
            raise SolverError(f"{bound.id}: could not certify a value of {name} for the target")
    if value is None and objective.renyi:
        alpha = objective.limit_alpha
    status_values = {**params, name: value if value is not None else 1}
    if objective.renyi and bound.guarantee.renyi_order not in params:
        status_values[bound.guarantee.renyi_order] = alpha if alpha is not None else 2
    is_certificate, why = bound.certificate_status(bound.resolve(status_values))
    if not is_certificate:
        notes.append(why)
    neighbour_eps = None
    if neighbour is not None:
        neighbour_eps = objective.float_epsilon(neighbour)
        if not neighbour_eps > epsilon:
            raise SolverError(
                f"{bound.id}: calibration check failed, the neighbour {name}={neighbour} also "
                f"meets the target (epsilon {neighbour_eps})"
            )
    return Calibration(
        bound_id=bound.id,
        parameter=name,
        value=value,
        target_epsilon=float(epsilon),
        delta=None if delta is None else float(delta),
        conversion=conversion if objective.renyi else None,
        certified_epsilon=certified_eps,
        alpha=alpha,
        neighbour=neighbour,
        neighbour_epsilon=neighbour_eps,
        inputs=dict(params),
        notes=tuple(notes),
        provenance={**bound.provenance(), "solver": f"least/greatest {name} ({direction} bound)"},
        certified=is_certificate,
        quantity=quantity,
    )


def resolve_delta(value: Any, where: str) -> float:
    """A δ input as a float in (0, 1), for reporting (the bound itself uses the exact value)."""
    from bounds.values import resolve_values

    exact = resolve_values({"delta": value}, context=where)["delta"]
    number = float(exact)
    if not 0 < number < 1:
        raise BoundError(f"{where}: delta must lie in (0, 1) as a float, got {value!r}")
    return number


def _monotone_alternatives(bound: Bound, name: str) -> str:
    from bounds.registry import list_bounds

    others = [b.id for b in list_bounds(bound.paper)
              if b.id.startswith(bound.id + "/") and name in b.monotone]
    return f"; variants proved monotone in {name}: {', '.join(others)}" if others else ""


def _step_safe(param: Any, direction: str, value: Any, rtol: float) -> Any:
    if param.integer:
        return value + 1 if direction == "decreasing" else value - 1
    return value * (1 + rtol) if direction == "decreasing" else value * (1 - rtol)


def _solve_continuous(
    objective: _Objective, param: Any, direction: str, target: float, rtol: float
) -> tuple[float, float]:
    """Bracket in log space, root-find, then place the answer on the safe side of the root."""

    def ok(x: float) -> bool:
        return objective.float_epsilon(x) <= target

    def gap(t: float) -> float:
        eps = objective.float_epsilon(math.exp(t))
        if eps == math.inf:
            return math.inf
        return math.log(max(eps, 1e-300)) - math.log(target)

    want_large = direction == "decreasing"  # a larger x lowers epsilon
    x = 1.0
    if ok(x):
        good, step = x, (0.5 if want_large else 2.0)  # walk toward the unsafe side
        while True:
            x *= step
            if not 1e-300 < x < 1e300 or not _in_domain(param, x):
                raise SolverError(
                    f"{objective.bound.id}: every {param.name} meets epsilon={target}; "
                    "nothing to calibrate"
                )
            if not ok(x):
                bad = x
                break
            good = x
    else:
        bad, step = x, (2.0 if want_large else 0.5)  # walk toward the safe side
        while True:
            x *= step
            if not 1e-300 < x < 1e300 or not _in_domain(param, x):
                raise SolverError(
                    f"{objective.bound.id}: no value of {param.name} meets epsilon={target}"
                )
            if ok(x):
                good = x
                break
            bad = x
    lo_t, hi_t = sorted((math.log(good), math.log(bad)))
    try:
        root = math.exp(brent_root(gap, lo_t, hi_t, xtol=rtol / 4, rtol=4 * np.finfo(float).eps))
    except ValueError:
        root = math.exp(0.5 * (lo_t + hi_t))
    safe_dir = 1 if want_large else -1
    for k in (1, 2, 4, 8, 16):
        candidate = root * (1 + safe_dir * k * rtol)
        neighbour = root * (1 - safe_dir * k * rtol)
        if ok(candidate) and not ok(neighbour):
            return candidate, neighbour
    # Fall back to plain bisection between the bracket ends.
    good_x, bad_x = good, bad
    while abs(good_x / bad_x - 1) > rtol:
        mid = math.sqrt(good_x * bad_x)
        if ok(mid):
            good_x = mid
        else:
            bad_x = mid
    return good_x, bad_x


def _in_domain(param: Any, x: float) -> bool:
    return not param.violations(x)


def _least_admissible(objective: _Objective, param: Any, lo: int) -> int:
    """The least integer from ``lo`` the theorem's preconditions admit: a precondition may bound
    an integer parameter from below beyond its domain (Theorem 3.2 of Chien et al. needs T >= 1).
    Admissible values are taken to run upwards from there, as such lower limits make them."""
    if objective.admissible(lo):
        return lo
    bad, good = lo, lo + 1
    while not objective.admissible(good):
        bad, good = good, 2 * good
        if good > _INTEGER_LIMIT:
            raise SolverError(f"{objective.bound.id}: no {param.name} up to 2^53 meets the "
                              "theorem's preconditions at these inputs")
    while good - bad > 1:
        mid = (good + bad) // 2
        if objective.admissible(mid):
            good = mid
        else:
            bad = mid
    return good


def _solve_integer(
    objective: _Objective, param: Any, direction: str, target: float, notes: list[str]
) -> tuple[int | None, int | None]:
    lo = int(math.ceil(param.lower)) if param.lower is not None else 0
    if param.lower_open and lo == param.lower:
        lo += 1
    lo = _least_admissible(objective, param, lo)

    def ok(k: int) -> bool:
        return objective.float_epsilon(k) <= target

    if direction == "decreasing":  # least k with eps(k) <= target
        if ok(lo):
            notes.append(f"the smallest admissible value {param.name}={lo} already meets the target")
            return lo, None
        bad, good = lo, lo + 1
        while not ok(good):
            bad, good = good, 2 * good
            if good > _INTEGER_LIMIT:
                raise SolverError(
                    f"{objective.bound.id}: no {param.name} up to 2^53 meets epsilon={target}"
                )
        while good - bad > 1:
            mid = (good + bad) // 2
            if ok(mid):
                good = mid
            else:
                bad = mid
        return good, good - 1
    # increasing: greatest k with eps(k) <= target
    if not ok(lo):
        raise SolverError(
            f"{objective.bound.id}: even {param.name}={lo} exceeds epsilon={target}"
        )
    proved, why = _limit_meets_target(objective, target)
    if proved:
        notes.append(why)
        return None, None
    if why:
        notes.append(why)
    good, bad = lo, lo + 1
    while ok(bad):
        good, bad = bad, 2 * bad
        if bad > _INTEGER_LIMIT:
            top = _INTEGER_LIMIT
            eps, _ = objective.certified(sp.Integer(top))
            if eps > target:
                raise SolverError(
                    f"{objective.bound.id}: the float search found every {param.name} up to 2^53 "
                    f"below the target but the certified epsilon at 2^53 is {eps}; refusing"
                )
            notes.append(
                f"every {param.name} up to 2^53 meets the target (certified at {param.name} = 2^53, "
                f"epsilon {eps:.6g}; the bound is increasing in {param.name}); no maximum is "
                "claimed beyond that"
            )
            return None, None
    while bad - good > 1:
        mid = (good + bad) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good, good + 1


def limit_at_infinity(
    expr: sp.Expr, symbol: sp.Symbol, values: Mapping[sp.Symbol, Any]
) -> sp.Expr | None:
    """The exact limit of ``expr`` as ``symbol`` -> infinity at the exact inputs ``values``, or
    ``None`` when it is not proved here.

    Proved only for the shape of the sequential bounds: ``symbol`` may appear solely in
    exponents ``base**(k*symbol + r)`` whose base lies in [0, 1] and whose k > 0 at the inputs
    (decided exactly on the substituted base and k), or in ``exp(k*symbol + r)`` with k < 0. Such
    a power tends to 0 (base < 1) or 1 (base = 1); the rest of the expression is a composition
    of continuous functions, so the limit is the expression with those powers replaced, wherever
    that value is finite (the caller checks it in interval arithmetic). The result keeps the
    other parameters symbolic, so no huge exact power is ever expanded, and no floating-point
    limit is taken.
    """

    def linear_coefficient(exponent: sp.Expr) -> Any:
        poly = sp.Poly(sp.expand(exponent), symbol) if exponent.is_polynomial(symbol) else None
        if poly is None or poly.degree() != 1:
            return None
        k = sp.sympify(poly.coeffs()[0]).subs(values)
        return k if k.is_number and k.is_real else None

    def rewrite(e: sp.Expr) -> sp.Expr | None:
        if not e.has(symbol):
            return e
        if e == symbol:
            return None
        if isinstance(e, sp.Pow) and not e.base.has(symbol):
            base = sp.sympify(e.base).subs(values)
            k = linear_coefficient(e.exp)
            if k is None or not base.is_number or not base.is_real or not bool(k > 0):
                return None
            if bool(base < 0) or bool(base > 1):
                return None
            return sp.S.One if bool(base == 1) else sp.S.Zero
        if isinstance(e, sp.exp):
            k = linear_coefficient(e.args[0])
            if k is None or not bool(k < 0):
                return None
            return sp.S.Zero
        args = [rewrite(x) for x in e.args]
        if any(x is None for x in args):
            return None
        return e.func(*args)

    return rewrite(expr)


def _limit_meets_target(objective: _Objective, target: float) -> tuple[bool, str]:
    """Prove that the bound stays below ``target`` for every value of the free parameter.

    The bound is increasing in that parameter, so it suffices that its exact limit (see
    :func:`limit_at_infinity`) meets the target, at one Rényi order, in interval arithmetic.
    Returns (proved, note); an unproved limit is never claimed.
    """
    from bounds.backends import IV_FUNCS, MP_FUNCS
    from bounds.numerics import float_up, interval_endpoints, interval_ready, iv_precision, stabilise
    from bounds.values import to_interval, to_mp

    bound = objective.bound
    sym = bound.parameter(objective.parameter).symbol
    order = bound.guarantee.renyi_order
    fixed = objective.fixed_order
    placeholder = {objective.parameter: 1}
    if order and not fixed:
        placeholder[order] = 2
    values = bound.resolve({**objective.params, **placeholder})
    known = {k: v for k, v in values.items() if k != objective.parameter and (k != order or fixed)}
    symbols_ = [bound.parameter(k).symbol for k in known]
    limit = limit_at_infinity(bound.expression, sym, dict(zip(symbols_, known.values(), strict=True)))
    if limit is None:
        return False, ""
    free = [bound.parameter(order).symbol] if order and not fixed else []
    iv_fn = sp.lambdify([*symbols_, *free], interval_ready(stabilise(limit)), modules=[IV_FUNCS])
    mp_fn = sp.lambdify([*symbols_, *free], stabilise(limit), modules=[MP_FUNCS, "mpmath"])

    def certified_limit(alpha: float | None) -> float:
        with iv_precision(40):
            args = [to_interval(v) for v in known.values()] + ([mpmath.iv.mpf(alpha)] if free else [])
            value = mpmath.iv.mpf(iv_fn(*args))
            if order:
                a = alpha if free else float(values[order])
                value = renyi_to_dp(renyi_epsilon=value, alpha=mpmath.iv.mpf(a),
                                    delta=objective.delta, conversion=objective.conversion)
            upper = interval_endpoints(value)[1]
        return float_up(upper) if mpmath.isfinite(upper) else math.inf

    try:
        alpha = None
        if free:
            with mpmath.workdps(30):
                base_args = [to_mp(v) for v in known.values()]
                lo = max(objective.alpha_min, 1 + 1e-6) - 1
                grid = np.geomspace(lo, objective.alpha_max - 1, 400) + 1
                scores = []
                for a in grid:
                    try:
                        v = float(mp_fn(*base_args, mpmath.mpf(a)))
                    except (ValueError, OverflowError, ZeroDivisionError, TypeError):
                        v = math.inf
                    conv = float(renyi_to_dp(renyi_epsilon=0.0, alpha=float(a),
                                             delta=objective.delta, conversion=objective.conversion))
                    scores.append(v + conv if math.isfinite(v) else math.inf)
            alpha = float(grid[int(np.argmin(scores))])
        upper = certified_limit(alpha)
    except (ValueError, OverflowError, ZeroDivisionError, TypeError, BoundError):
        return False, ""
    if not upper <= target:
        return False, ""
    objective.limit_alpha = alpha
    where = f" at alpha = {alpha:.6g}" if alpha is not None else ""
    return True, (
        f"the bound stays below the target for every {objective.parameter}: it increases in "
        f"{objective.parameter} and its exact limit as {objective.parameter} -> infinity gives a "
        f"certified epsilon of at most {upper:.6g}{where} (interval arithmetic), so no finite "
        "maximum exists"
    )


def least_integer(predicate: Callable[[int], bool], *, start: int = 1, limit: int = _INTEGER_LIMIT,
                  hint: int | None = None, first_step: int = 1, resolution: Fraction = Fraction(0)) -> int:
    """Least k >= ``start`` with ``predicate(k)`` true, for a predicate monotone in k (false, then
    true): the one integer search of the toolkit (epochs, step counts, trial counts).

    The search begins at ``hint`` (default ``start``): where the predicate holds there it gallops
    down (hint - 1, hint - 3, hint - 7, ...), otherwise up (hint + s, then doubling steps, with s =
    ``first_step``), then bisects; so a good hint costs O(log |answer - hint|) evaluations and
    ``first_step = hint`` doubles k (2 hint, 4 hint, ...). A probe above ``limit`` raises
    :class:`SolverError`. With ``resolution`` r > 0 the bisection stops once the bracket is at most
    max(1, floor(r * k)) wide and returns its upper end, a k where the predicate holds that is
    within that distance of the least one.
    """
    if first_step < 1:
        raise ValueError(f"first_step must be >= 1, got {first_step}")
    hint = start if hint is None else max(start, int(hint))
    if predicate(hint):
        good, step = hint, 1
        while good > start:
            probe = max(start, good - step)
            if not predicate(probe):
                bad = probe
                break
            good, step = probe, 2 * step
        else:
            return good
    else:
        bad, step = hint, first_step
        while True:
            probe = bad + step
            if probe > limit:
                raise SolverError(f"no integer up to {limit} satisfies the condition")
            if predicate(probe):
                good = probe
                break
            bad, step = probe, 2 * step
    while good - bad > max(1, math.floor(resolution * bad)):  # predicate(bad) false, (good) true
        mid = (good + bad) // 2
        if predicate(mid):
            good = mid
        else:
            bad = mid
    return good
