"""Numerics shared by every evaluator: stable powers of contraction factors, interval helpers,
directed float rounding and float-evaluation guards.

Powers such as ``c**(2*K*n/b)`` are rewritten by :func:`stabilise` into :class:`Pow1p` /
:class:`OneMinusPow1p` and evaluated as ``exp(x * log1p(c - 1))``, so exponents up to 1e12 and
contraction factors close to one neither overflow nor lose accuracy; ``c = 0`` stays exact.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1

from bounds.errors import BoundError


class ExactRational(sp.Function):
    """A rational constant p/q kept symbolic so that interval code encloses it rigorously.

    The default code printer writes ``Rational(1, 3)`` as the float ``1/3``; interval
    evaluation instead computes ``iv.mpf(p) / q``, an enclosure of the exact value.
    """

    nargs = 2


def interval_ready(expr: sp.Expr) -> sp.Expr:
    """Replace non-integer rational constants by :class:`ExactRational` for interval code."""
    return expr.replace(
        lambda e: isinstance(e, sp.Rational) and not e.is_Integer,
        lambda e: ExactRational(sp.Integer(e.p), sp.Integer(e.q)),
    )



def midpoint(x: Any) -> Any:
    """Midpoint of an mpmath interval; any other number unchanged."""
    if type(x).__name__ == "ivmpf":
        lo, hi = interval_endpoints(x)
        return (lo + hi) / 2
    return x


def min2(ctx: Any, x: Any, y: Any) -> Any:
    """``min(x, y)`` in the context ``ctx`` (endpoint-wise, hence rigorous, for intervals)."""
    if ctx is mpmath.iv:
        (xa, xb), (ya, yb) = interval_endpoints(x), interval_endpoints(y)
        return mpmath.iv.mpf([min(xa, ya), min(xb, yb)])
    return x if x <= y else y


def max2(ctx: Any, x: Any, y: Any) -> Any:
    """``max(x, y)`` in the context ``ctx`` (endpoint-wise, hence rigorous, for intervals)."""
    if ctx is mpmath.iv:
        (xa, xb), (ya, yb) = interval_endpoints(x), interval_endpoints(y)
        return mpmath.iv.mpf([max(xa, ya), max(xb, yb)])
    return x if x >= y else y


def pairwise_reduce(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """An n-ary function from the binary ``fn`` (a left fold over the arguments)."""
    def apply(*args: Any) -> Any:
        return functools.reduce(fn, args)

    return apply


class Pow1p(sp.Function):
    """``(1 + y)**x`` evaluated as ``exp(x * log1p(y))``, with ``0**0 = 1`` (numeric code only)."""

    nargs = 2


class OneMinusPow1p(sp.Function):
    """``1 - (1 + y)**x`` evaluated as ``-expm1(x * log1p(y))`` (numeric code only)."""

    nargs = 2


class LogRatio(sp.Function):
    """``log(a/b)`` given ``(a, b, a - b)``: ``log1p((a - b)/b)`` when a/b is within a factor
    of two of 1, where ``log(a/b)`` would cancel; ``a - b`` is formed exactly from the inputs
    (numeric code only)."""

    nargs = 3


def _is_linear_in_symbols(e: sp.Expr) -> bool:
    if e.is_Symbol:
        return True
    if not isinstance(e, sp.Add):
        return False
    terms = [t.as_coeff_Mul() for t in e.args if not t.is_Rational]
    return bool(terms) and all(c.is_Rational and r.is_Symbol for c, r in terms)


def _is_one_plus(e: sp.Basic) -> bool:
    return isinstance(e, sp.Add) and sp.S.One in e.args


def _without_one(e: sp.Add) -> sp.Expr:
    return sp.Add(*[t for t in e.args if t != sp.S.One])


def stabilise(expr: sp.Expr) -> sp.Expr:
    """Rewrite an expression for accurate evaluation in floating point.

    Bottom-up: ``(1 + y)**x`` becomes :class:`Pow1p` (``exp(x*log1p(y))``), ``1 - (1 + y)**x``
    becomes :class:`OneMinusPow1p` (``-expm1(x*log1p(y))``), other powers with a symbolic
    exponent become ``exp(x*log(base))`` and ``1 - exp(u)`` becomes ``-expm1(u)``. The value is
    unchanged; exponents like ``2*K*n/b ~ 1e12`` and contraction factors close to one are
    handled in log space without cancellation, and ``c = 0`` (``eta*m = 1``) stays exact.
    A difference of square roots ``sqrt(x) - sqrt(y)`` becomes ``(x - y)/(sqrt(x) + sqrt(y))``
    (sympy cancels ``x - y`` symbolically), which removes the cancellation of Neel et al.'s
    root gaps ``sqrt(log(1/delta) + epsilon) - sqrt(log(1/delta))`` for tiny epsilon.
    """
    if expr.is_Atom:
        return expr
    roots = _sqrt_difference(expr)
    if roots is not None:
        x, y = roots
        return stabilise(x - y) / (stabilise(sp.sqrt(x)) + stabilise(sp.sqrt(y)))
    args = [stabilise(a) for a in expr.args]
    node = expr.func(*args) if args != list(expr.args) else expr
    if isinstance(node, sp.Pow):
        base, exponent = node.args
        if _is_one_plus(base) and exponent != 1:
            return Pow1p(_without_one(base), exponent)
        if not exponent.is_Rational and not base.is_number:
            return sp.exp(exponent * sp.log(base))
        return node
    if isinstance(node, sp.Add) and len(node.args) == 2 and sp.S.One in node.args:
        other = -_without_one(node)
        if isinstance(other, Pow1p):
            return OneMinusPow1p(*other.args)
        if isinstance(other, sp.exp):
            return -expm1(other.args[0])
    if isinstance(node, sp.Add) and len(node.args) == 2 and sp.S.NegativeOne in node.args:
        other = node + 1
        if isinstance(other, sp.exp):  # exp(u) - 1 loses every digit for tiny u
            return expm1(other.args[0])
    if isinstance(node, sp.log):
        num, den = sp.fraction(node.args[0])
        if den != 1 and _is_linear_in_symbols(num) and _is_linear_in_symbols(den):
            return LogRatio(num, den, num - den)
    return node


def _sqrt_difference(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
    """``(x, y)`` if ``expr`` is ``sqrt(x) - sqrt(y)``, else ``None``."""
    if not isinstance(expr, sp.Add) or len(expr.args) != 2:
        return None

    def radicand(term: sp.Expr) -> tuple[int, sp.Expr] | None:
        # k*sqrt(x) with a numeric k (sympy writes sqrt(2*u) as sqrt(2)*sqrt(u)) is
        # sign(k) * sqrt(k**2 * x).
        coeff, rest = term.as_coeff_Mul()
        factors = sp.Mul.make_args(rest)
        numeric = [f for f in factors if f.is_number]
        roots = [f for f in factors if not f.is_number]
        k = coeff * sp.Mul(*numeric)
        if len(roots) != 1 or not (k.is_positive or k.is_negative):
            return None
        root = roots[0]
        if isinstance(root, sp.Pow) and root.exp == sp.Rational(1, 2):
            return (1 if k.is_positive else -1), k**2 * root.base
        return None

    first, second = (radicand(t) for t in expr.args)
    if first is None or second is None or first[0] == second[0]:
        return None
    return (first[1], second[1]) if first[0] == 1 else (second[1], first[1])


# The bases 1 + y of the declarations are contraction factors c = 1 - eta*m >= 0 (the
# preconditions eta <= 1/L and m <= L are checked exactly). At c = 0 the inputs, rounded one by
# one, can give 1 + y a hair below 0; such a base is snapped to 0 (a relative slack of 2^-40 in
# float, of 2^(8 - prec) in mp) instead of producing a NaN or a complex logarithm.
_FLOAT_SNAP = 2.0**-40


def _snap_float(y: Any) -> Any:
    y = np.asarray(y, dtype=float)
    return np.where((y < -1) & (y >= -1 - _FLOAT_SNAP), -1.0, y)


def pow1p_float(y: Any, x: Any) -> Any:
    """(1 + y)**x in numpy as exp(x log1p(y)), with 0**0 = 1."""
    y = _snap_float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.exp(x * np.log1p(y))
    return np.where((y == -1) & (x == 0), 1.0, value)


def one_minus_pow1p_float(y: Any, x: Any) -> Any:
    """1 - (1 + y)**x in numpy as -expm1(x log1p(y)), with 1 - 0**0 = 0."""
    y = _snap_float(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = -np.expm1(x * np.log1p(y))
    return np.where((y == -1) & (x == 0), 0.0, value)


def _snap_mp(y: Any) -> Any:
    if y < -1 and y >= -1 - mpmath.ldexp(1, 8 - mpmath.mp.prec):
        return mpmath.mpf(-1)
    return y


def pow1p_mp(y: Any, x: Any) -> Any:
    """(1 + y)**x in mpmath as exp(x log1p(y)), with 0**0 = 1."""
    y = _snap_mp(y)
    if y == -1:
        return mpmath.mpf(1) if x == 0 else mpmath.mpf(0) if x > 0 else mpmath.inf
    return mpmath.exp(x * mpmath.log1p(y))


def one_minus_pow1p_mp(y: Any, x: Any) -> Any:
    """1 - (1 + y)**x in mpmath as -expm1(x log1p(y))."""
    y = _snap_mp(y)
    if y == -1:
        return 1 - pow1p_mp(y, x)
    return -mpmath.expm1(x * mpmath.log1p(y))


def pow1p_iv(y: Any, x: Any) -> Any:
    """Rigorous interval enclosure of (1 + y)**x for a base 1 + y >= 0."""
    # The base 1 + y is a contraction factor c >= 0 by the theorems' preconditions, so
    # intersecting its enclosure with [0, inf) keeps the result rigorous.
    lo, hi = interval_endpoints(1 + mpmath.iv.mpf(y))
    x_lo, x_hi = interval_endpoints(x)
    if x_lo == x_hi == 0:  # no steps: c**0 = 1 for every c >= 0, with 0**0 = 1 as in float and mp
        return mpmath.iv.mpf(1)
    lo = max(lo, mpmath.mpf(0))
    if hi <= 0:
        if x_lo == x_hi == 0:
            return mpmath.iv.mpf(1)
        if x_lo > 0:
            return mpmath.iv.mpf(0)
        raise BoundError("0 raised to a non-positive power")
    if lo == 0:
        if x_lo <= 0:
            raise BoundError("a power of a base that may be 0 with an exponent that may be <= 0")
        top = mpmath.iv.exp(mpmath.iv.mpf(x) * mpmath.iv.log(mpmath.iv.mpf(hi)))
        return mpmath.iv.mpf([0, interval_endpoints(top)[1]])
    return mpmath.iv.exp(mpmath.iv.mpf(x) * mpmath.iv.log(mpmath.iv.mpf([lo, hi])))


def log_ratio_float(a: Any, b: Any, diff: Any) -> Any:
    """log(a / b) in numpy, as log1p(diff / b) when a is near b (diff = a - b formed exactly)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        near = np.abs(diff) <= np.abs(b) / 2
        return np.where(near, np.log1p(diff / b), np.log(a / b))


def log_ratio_mp(a: Any, b: Any, diff: Any) -> Any:
    """log(a / b) in mpmath, as log1p(diff / b) when a is near b (diff = a - b formed exactly)."""
    if abs(diff) <= abs(b) / 2:
        return mpmath.log1p(diff / b)
    return mpmath.log(a / b)


def log_ratio_iv(a: Any, b: Any, diff: Any) -> Any:
    """Rigorous interval enclosure of log(a / b), through log1p(diff / b) when a is near b."""
    ratio = mpmath.iv.mpf(diff) / mpmath.iv.mpf(b)
    lo, hi = interval_endpoints(ratio)
    if max(abs(lo), abs(hi)) <= 0.5:
        return iv_log1p(ratio)
    return mpmath.iv.log(mpmath.iv.mpf(a) / mpmath.iv.mpf(b))


def call_float(fn: Callable[..., Any], args: list[Any]) -> tuple[Any, dict[str, bool]]:
    """Call a numpy evaluator, recording whether it underflowed, overflowed or divided by 0."""
    flags = {"underflow": False, "overflow": False}

    def on_error(kind: str, _flag: int) -> None:
        if "underflow" in kind:
            flags["underflow"] = True
        if "overflow" in kind or "divide" in kind:
            flags["overflow"] = True

    with np.errstate(under="call", over="call", divide="call", invalid="ignore", call=on_error):
        value = fn(*args)
    return value, flags


def check_finite(bound_id: str, value: Any) -> None:
    """Refuse (BoundError naming the bound) a value that is not finite."""
    if isinstance(value, mpmath.mpf) or isinstance(value, mpmath.mpc):
        if not mpmath.isfinite(value):
            raise BoundError(f"{bound_id}: the value is not finite ({value})")
        return
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise BoundError(
            f"{bound_id}: float evaluation overflowed or is undefined at these inputs; "
            "use precision='mp'"
        )


def squeeze(value: Any) -> Any:
    """A 0-d result as a float, an array result as an array."""
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def interval_endpoints(x: Any) -> tuple[mpmath.mpf, mpmath.mpf]:
    """The two endpoints of an mpmath interval as exact ``mpf`` numbers."""
    x = mpmath.iv.mpf(x)
    # make_mpf wraps the raw endpoint without rounding it to the global precision.
    return mpmath.mp.make_mpf(x._mpi_[0]), mpmath.mp.make_mpf(x._mpi_[1])


def interval_min(x: Any, y: Any) -> Any:
    """Rigorous ``min`` of two mpmath intervals (endpoint-wise)."""
    return min2(mpmath.iv, x, y)



_LARGEST = 1.7976931348623157e308  # the largest finite float


_ALGEBRAIC_VARIABLE = sp.Symbol("_float_rounding_root")
# Decimal digits of the successive evaluations that decide the sign of ``f - x`` for an exact
# irrational ``x``: a nonzero difference shows its sign at some precision; the last rung only
# bounds the work for numbers closer to a float than about 10^-2000 of their size.
_SIGN_DIGITS = (30, 60, 120, 240, 480, 1000, 2000)


def _accurate_value(value: sp.Expr, x: sp.Expr) -> sp.Float | None:
    """An exact real sympy number to at least 30 correct significant digits (sympy's
    ``strict=True`` accuracy at rising precision), or None when it is exactly 0 (decided exactly:
    an algebraic number is 0 when its minimal polynomial is the variable)."""
    if value.free_symbols or value.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise ValueError(f"directed rounding needs a finite real number, got {x}")
    for rung, digits in enumerate(_SIGN_DIGITS):
        if rung == 1 and _is_algebraic_zero(value):
            return None  # the first evaluation could not separate it from 0: test exactly
        try:
            result = value.evalf(digits, strict=True)
        except sp.core.evalf.PrecisionExhausted:
            continue
        if not (result.is_Number and result.is_real):
            raise ValueError(f"directed rounding needs a real number, got {x}")
        if result != 0:
            return result
    raise ValueError(f"cannot decide on which side of the nearest float {x} lies (it agrees "
                     f"with a float to {_SIGN_DIGITS[-1]} digits and its zero test failed)")


def _symbolic_sign(difference: sp.Expr, x: sp.Expr) -> int:
    """Sign of an exact real sympy number (``float - x``)."""
    if difference.is_Rational:
        return (difference > 0) - (difference < 0)
    value = _accurate_value(difference, x)
    return 0 if value is None else (1 if value > 0 else -1)


def _is_algebraic_zero(value: sp.Expr) -> bool:
    """Whether an exact sympy number is an algebraic number equal to 0 (its minimal polynomial is
    the variable); False for a nonzero or a non-algebraic one."""
    try:
        return bool(sp.minimal_polynomial(value, _ALGEBRAIC_VARIABLE) == _ALGEBRAIC_VARIABLE)
    except (NotImplementedError, ValueError, sp.polys.polyerrors.PolynomialError,
            sp.polys.polyerrors.NotAlgebraic):
        return False


def _exact_compare(f: float, x: Any) -> int:
    """Sign of ``f - x`` computed exactly, for ``x`` an int, Fraction, mpmath number (an mpf is a
    binary fraction, so the mpf comparison is exact) or exact real sympy number (a Rational, or
    an algebraic or other closed-form value such as ``sqrt(3)``)."""
    if isinstance(x, mpmath.mpf):
        y: Any = mpmath.mpf(f)
    elif isinstance(x, sp.Basic):
        if isinstance(x, sp.Rational):
            x = Fraction(int(x.p), int(x.q))
        else:
            return _symbolic_sign(sp.Rational(f) - x, x)
        y = Fraction(f)
    else:
        y = Fraction(f)
    return (y > x) - (y < x)


def float_up(x: Any) -> float:
    """The smallest float that is >= ``x`` (an exact number, an exact real sympy value such as
    ``sqrt(3)``, or an mpmath number): the safe side for a quantity that must reach its bound
    (a noise, an epsilon)."""
    f = _nearest_float(x)  # nearest, so at most one step away
    if math.isinf(f):
        # beyond the float range: +inf is above x; -inf rounds up to the most negative float
        return f if f > 0 else -_LARGEST
    if _exact_compare(f, x) < 0:
        f = math.nextafter(f, math.inf)
    return f


def float_down(x: Any) -> float:
    """The largest float that is <= ``x`` (an exact number, an exact real sympy value such as
    ``sqrt(3)``, or an mpmath number): the safe side for a quantity that must not exceed its
    bound (a step size, a budget)."""
    f = _nearest_float(x)
    if math.isinf(f):
        return f if f < 0 else _LARGEST
    if _exact_compare(f, x) > 0:
        f = math.nextafter(f, -math.inf)
    return f


def _nearest_float(x: Any) -> float:
    """``float(x)``, within one step of ``x`` (a sympy value is first evaluated to 30 correct
    digits; the exact comparison then fixes the direction)."""
    if isinstance(x, sp.Basic) and not isinstance(x, sp.Rational):
        value = _accurate_value(x, x)
        return 0.0 if value is None else float(value)
    return float(x)


def as_fraction(x: Any) -> Fraction:
    """``x`` (a float, an int, a Fraction, a sympy Rational or a finite mpf) as an exact Fraction."""
    if isinstance(x, mpmath.mpf):
        # _mpf_ is (sign, mantissa, exponent, bits); ``man_exp`` drops the sign.
        sign, man, exp, _ = x._mpf_
        return (-1 if sign else 1) * Fraction(int(man)) * Fraction(2) ** int(exp)
    if isinstance(x, sp.Rational):
        return Fraction(int(x.p), int(x.q))
    return Fraction(x)


def decimal_directed(x: Any, digits: int, direction: str) -> Fraction:
    """``x`` rounded to ``digits`` significant decimal digits toward -inf (``"down"``) or +inf
    (``"up"``), as an exact Fraction: the number a printed lower or upper end must stand for."""
    if direction not in ("down", "up"):
        raise ValueError(f"direction must be 'down' or 'up', got {direction!r}")
    value = as_fraction(x)
    if value == 0:
        return value
    magnitude = abs(value)
    exponent = len(str(magnitude.numerator)) - len(str(magnitude.denominator))
    if Fraction(10) ** exponent > magnitude:  # 10^exponent <= |x| < 10^(exponent + 1)
        exponent -= 1
    scale = Fraction(10) ** (digits - 1 - exponent)
    scaled = value * scale
    steps = math.floor(scaled) if direction == "down" else math.ceil(scaled)
    return steps / scale


def nstr_directed(x: Any, digits: int, direction: str) -> str:
    """``mpmath.nstr`` text of ``x`` at ``digits`` significant digits, rounded toward -inf
    (``"down"``) or +inf (``"up"``) instead of to nearest: a printed lower end never exceeds
    the exact one and a printed upper end is never below it."""
    if isinstance(x, mpmath.mpf) and not mpmath.isfinite(x):
        return mpmath.nstr(x, digits)
    target = decimal_directed(x, digits, direction)
    # The target has at most ``digits`` significant digits; at 20 more working digits its
    # nearest rounding to ``digits`` digits is the target itself.
    with mpmath.workdps(digits + 20):
        return mpmath.nstr(mpmath.mpf(target.numerator) / target.denominator, digits)


def g_directed(x: Any, digits: int, direction: str) -> str:
    """``f"{x:.{digits}g}"`` rounded toward -inf (``"down"``) or +inf (``"up"``); ``digits`` <= 15,
    so the rounded decimal survives the trip through a float unchanged."""
    if not 1 <= digits <= 15:
        raise ValueError(f"digits must be in [1, 15], got {digits}")
    if isinstance(x, float) and not math.isfinite(x):
        return f"{x:g}"
    return f"{float(decimal_directed(x, digits, direction)):.{digits}g}"


@contextlib.contextmanager
def iv_precision(digits: int) -> Iterator[None]:
    """Set mpmath's interval context to ``digits`` significant digits for a block."""
    saved = mpmath.iv.prec
    mpmath.iv.dps = digits
    try:
        yield
    finally:
        mpmath.iv.prec = saved


def iv_expm1(x: Any) -> Any:
    """Rigorous enclosure of ``exp(x) - 1`` that stays tight *relative* to small ``x``.

    ``iv.exp(x) - 1`` only encloses to about one unit of the working precision in absolute
    terms, which is loose for tiny values (Chien et al. 2024, Corollary 3.8, at c near 0). For
    |x| <= 1/2 the Taylor series is summed until the Lagrange remainder
    |x|^(N+1) e^|x| / (N+1)! drops below 2^-prec |x|, and the remainder is added as an interval.
    """
    iv = mpmath.iv
    x = iv.mpf(x)
    lo, hi = interval_endpoints(x)
    size = max(abs(lo), abs(hi))
    if size > 0.5:
        return iv.exp(x) - 1
    if size == 0:
        return iv.mpf(0)
    total = iv.mpf(0)
    term = iv.mpf(1)
    bound = mpmath.mpf(1)  # |x|^k / k! for the remainder
    limit = size * mpmath.ldexp(1, -iv.prec - 4)
    k = 0
    while True:
        k += 1
        term = term * x / k
        total += term
        bound = bound * size / (k + 1)
        if bound * 2 <= limit:  # e^|x| <= 2 for |x| <= 1/2
            break
    slack = bound * 2
    return total + iv.mpf([-slack, slack])


def iv_log1p(x: Any) -> Any:
    """Rigorous enclosure of ``log(1 + x)``, tight relative to small ``x`` (see :func:`iv_expm1`).

    For |x| <= 1/2 the alternating series is summed; the tail after N terms is at most
    |x|^(N+1) / ((N+1)(1 - |x|)) <= 2 |x|^(N+1) / (N+1).
    """
    iv = mpmath.iv
    x = iv.mpf(x)
    lo, hi = interval_endpoints(x)
    size = max(abs(lo), abs(hi))
    if size > 0.5:
        return iv.log(1 + x)
    if size == 0:
        return iv.mpf(0)
    total = iv.mpf(0)
    power = iv.mpf(1)
    limit = size * mpmath.ldexp(1, -iv.prec - 4)
    k = 0
    while True:
        k += 1
        power = power * x
        total += power / k if k % 2 else -power / k
        tail = 2 * size ** (k + 1) / (k + 1)
        if tail <= limit:
            break
    return total + iv.mpf([-tail, tail])
