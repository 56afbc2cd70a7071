"""Parameter names and values: shared sympy symbols, and the resolution of user inputs (numbers,
exact strings, expressions of other parameters) into exact sympy numbers before any rounding.

The only place where a text value becomes a sympy expression is :func:`text_to_expression`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from bounds.backends import IV_FUNCS, MP_FUNCS
from bounds.errors import BoundError, PreconditionError
from bounds.expressions import DEFAULT_LIMITS, ExpressionError, parse_expression, shorten
from bounds.numerics import as_fraction, interval_endpoints, interval_ready, iv_precision, stabilise

_LATEX_NAMES_BY_NAME = {
    "alpha": r"\alpha",
    "sigma": r"\sigma",
    "eta": r"\eta",
    "lam": r"\lambda",
    "epsilon": r"\epsilon",
    "delta": r"\delta",
    "gamma": r"\gamma",
    "mu": r"\mu",
    "j0": r"j_0",
    "eps0": r"\varepsilon_0",
    "C_LSI": r"C_{\mathrm{LSI}}",
}

LATEX_NAMES: dict[sp.Symbol, str] = {}  # filled once real_symbol exists


@functools.cache
def real_symbol(name: str) -> sp.Symbol:
    """The real sympy symbol called ``name`` (one object per name)."""
    return sp.Symbol(name, real=True)


LATEX_NAMES.update({real_symbol(k): v for k, v in _LATEX_NAMES_BY_NAME.items()})


def symbols(names: str) -> tuple[sp.Symbol, ...]:
    """Real sympy symbols by name, shared with :class:`Parameter` (``"alpha sigma eta"``)."""
    return tuple(real_symbol(n) for n in names.split())


def plain_text(expr: sp.Basic) -> str:
    """A sympy expression in plain text."""
    return sp.sstr(expr)


def format_float(x: float) -> str:
    """A float in short ``%g`` form."""
    return f"{x:g}"


def format_exact(x: sp.Expr) -> str:
    """An exact number for messages: an integer as is, else 10 significant digits."""
    if x.is_Integer:
        return str(int(x))
    return f"{float(x):.10g}"


def is_exact(value: Any) -> bool:
    """Whether ``value`` is an exact (sympy) number."""
    return isinstance(value, sp.Basic)


def jsonable(v: Any) -> Any:
    """A numpy, sympy or mpmath value as a JSON number or list."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, sp.Basic):
        return int(v) if v.is_Integer else float(v)
    if isinstance(v, mpmath.mpf):
        return float(v)
    return v


_NUMBER_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_exact(text: str) -> sp.Expr | None:
    """Parse a decimal or fraction string exactly (``"0.1"`` is 1/10); ``None`` otherwise."""
    s = text.strip()
    if len(s) > DEFAULT_LIMITS.max_length:
        raise BoundError(f"value {shorten(s)!r} is longer than {DEFAULT_LIMITS.max_length} "
                         "characters (max_length)")
    if _NUMBER_RE.match(s):
        mantissa, _, exponent = s.lower().partition("e")
        digits = len(mantissa.lstrip("+-").replace(".", "").lstrip("0")) + abs(int(exponent or 0))
        if digits > DEFAULT_LIMITS.max_digits:
            # Exactly, 1e99999999 is an integer of 10^8 digits: refuse before building it.
            raise BoundError(f"value {shorten(s)!r} would have about {digits} digits exactly, more "
                             f"than the limit of {DEFAULT_LIMITS.max_digits} (max_digits)")
        return sp.Rational(s)
    m = re.fullmatch(r"([+-]?\d+)\s*/\s*(\d+)", s)
    if m:
        if int(m.group(2)) == 0:
            raise BoundError(f"value {shorten(s)!r} divides by zero")
        return sp.Rational(int(m.group(1)), int(m.group(2)))
    return None


def text_to_expression(text: str, names: Mapping[str, sp.Symbol]) -> sp.Expr:
    """The one place where a text value becomes a sympy expression of the parameters ``names``.

    User text is untrusted: it goes through the whitelisting parser of
    :mod:`bounds.expressions` (numbers, the given names, ``+ - * / **``, a few functions, with
    limits on size and work), never through ``sympify``/``eval``.
    """
    return parse_expression(text, names=tuple(names), symbol_factory=lambda name: names[name])


def _check_substituted_powers(expr: sp.Expr, values: Mapping[sp.Symbol, Any], *, where: str) -> None:
    """Refuse a substitution whose exact powers would have more than the parser's digit limit.

    The parser bounds the exponents it reads, but ``L**9999`` with ``L = 10**3000`` is only
    known to be huge after substitution; estimating every power's size in mpmath first keeps
    the exact arithmetic bounded.
    """
    limit = DEFAULT_LIMITS.max_digits
    for node in sp.preorder_traversal(expr):
        if not isinstance(node, sp.Pow) or not node.exp.is_number:
            continue
        base = node.base.subs(values)
        if not base.is_number:
            continue
        with mpmath.workdps(15):
            magnitude = abs(mpmath.mpf(sp.N(base, 15))) or 1
            size = abs(mpmath.mpf(sp.N(node.exp, 15))) * abs(mpmath.log10(magnitude))
        if size > limit:
            raise BoundError(f"{where}: a power in it would have about {mpmath.nstr(size, 3)} digits, "
                             f"more than the limit of {limit} (max_digits)")


def resolve_values(params: Mapping[str, Any], *, context: str = "") -> dict[str, Any]:
    """Resolve numbers, exact strings and expressions of other parameters.

    Scalars become exact sympy numbers (a float is taken at its exact binary value, a decimal
    string at its exact decimal value); arrays become float arrays. A string that is not a
    number is parsed as an expression of the other parameters (``eta="1/L"``).
    """
    prefix = f"{context}: " if context else ""
    exact: dict[str, Any] = {}
    pending: dict[str, str] = {}
    for name, raw in params.items():
        if isinstance(raw, str):
            try:
                parsed = parse_exact(raw)
            except BoundError as exc:
                raise BoundError(f"{prefix}{name}: {exc}") from None
            if parsed is None:
                pending[name] = raw
            else:
                exact[name] = parsed
        elif isinstance(raw, bool):
            raise BoundError(f"{prefix}{name} must be a number, got {raw!r}")
        elif isinstance(raw, (int, np.integer)):
            exact[name] = sp.Integer(int(raw))
        elif isinstance(raw, (float, np.floating)):
            if not math.isfinite(float(raw)):
                raise PreconditionError(f"{prefix}{name} must be finite, got {raw!r}")
            exact[name] = sp.Rational(Fraction(float(raw)))
        elif isinstance(raw, Fraction):
            exact[name] = sp.Rational(raw)
        elif isinstance(raw, sp.Basic):
            if raw.free_symbols or not (raw.is_real and raw.is_finite):
                raise PreconditionError(f"{prefix}{name} must be a finite real number, got {raw}")
            exact[name] = raw
        elif isinstance(raw, mpmath.mpf):
            if not mpmath.isfinite(raw):
                raise PreconditionError(f"{prefix}{name} must be finite, got {raw!r}")
            exact[name] = sp.Rational(as_fraction(raw))
        elif isinstance(raw, (np.ndarray, list, tuple)):
            arr = np.asarray(raw, dtype=float)
            if not np.all(np.isfinite(arr)):
                raise PreconditionError(f"{prefix}{name} must be finite, got non-finite entries")
            exact[name] = arr
        else:
            raise BoundError(f"{prefix}{name} has unsupported type {type(raw).__name__}")
    local = {n: real_symbol(n) for n in params}
    for _ in range(len(pending) + 1):
        progressed = False
        for name, text in list(pending.items()):
            shown = shorten(text)
            try:
                expr = text_to_expression(text, local)
            except ExpressionError as exc:
                raise BoundError(f"{prefix}cannot parse {name}: {exc}") from None
            deps = {s.name for s in expr.free_symbols}
            if deps - set(params):
                raise BoundError(f"{prefix}{name}={shown!r} uses unknown names {sorted(deps - set(params))}")
            if all(d in exact and is_exact(exact[d]) for d in deps):
                values = {real_symbol(d): exact[d] for d in deps}
                _check_substituted_powers(expr, values, where=f"{prefix}{name}={shown!r}")
                value = expr.subs(values)
                if not value.is_number or not value.is_real or not value.is_finite:
                    raise BoundError(f"{prefix}{name}={shown!r} is not a real number")
                exact[name] = value
                del pending[name]
                progressed = True
        if not progressed:
            break
    if pending:
        unresolved = ", ".join(f"{k}={shorten(v)!r}" for k, v in pending.items())
        raise BoundError(f"{prefix}cannot resolve {shorten(unresolved, 200)} (circular or non-exact inputs)")
    return exact



def exact_truth(relation: sp.Basic, subs: Mapping[sp.Symbol, Any]) -> bool:
    """Whether ``relation`` holds at ``subs``, decided exactly (rigorous intervals for transcendental
    sides)."""
    value = relation.subs(subs)
    if value in (sp.true, sp.false):
        return bool(value)
    # Transcendental sides: decide with a rigorous interval enclosure of rhs - lhs.
    gap = (relation.rhs - relation.lhs).subs(subs)
    with iv_precision(60):
        lo, hi = interval_endpoints(
            sp.lambdify([], interval_ready(stabilise(gap)), modules=[IV_FUNCS])()
        )
    if isinstance(relation, sp.Eq):
        return lo == 0 and hi == 0
    if isinstance(relation, sp.LessThan):
        return lo >= 0
    if isinstance(relation, sp.StrictLessThan):
        return lo > 0
    if isinstance(relation, sp.GreaterThan):
        return hi <= 0
    return hi < 0


def to_float_array(v: Any) -> Any:
    """A resolved value as a float64 scalar or array (overflow gives inf)."""
    if isinstance(v, np.ndarray):
        return v
    return np.float64(float(v))  # numpy semantics: overflow gives inf, not OverflowError


def to_mp(v: Any) -> Any:
    """A resolved exact value as an mpmath number."""
    if isinstance(v, np.ndarray):
        raise BoundError("array-valued parameters are only supported with precision='float'")
    if v.is_Rational:
        return mpmath.mpf(int(v.p)) / int(v.q)
    return sp.lambdify([], v, modules=[MP_FUNCS, "mpmath"])()


def to_interval(v: Any) -> Any:
    """A resolved exact value as an mpmath interval enclosing it."""
    if isinstance(v, np.ndarray):
        raise BoundError("array-valued parameters are only supported with precision='float'")
    if v.is_Rational:
        return mpmath.iv.mpf(int(v.p)) / int(v.q)
    return mpmath.iv.mpf(sp.lambdify([], interval_ready(stabilise(v)), modules=[IV_FUNCS])())



def exact_interval(value: Any) -> Any:
    """An mpmath interval enclosing an exact input (number, Fraction, sympy value)."""
    resolved = resolve_values({"value": value})["value"]
    return to_interval(resolved)
