"""Hypothesis strategies of the valid domain of every declared bound, for tests and users' CI.

Each strategy draws a ``dict`` of parameter values that satisfies the theorem's parameter
domains *and* its preconditions: the step size is drawn as a fraction of its cap (``1/L``,
``m/(2 L^2)``, ...), ``n`` as ``b`` times a number of batches, ``j0`` below ``n/b``, ``m <= L``
and so on, so that almost no draw is rejected. Continuous values are exact
:class:`fractions.Fraction` (a float drawn by hypothesis, taken at its binary value, or an exact
ratio such as ``eta = frac / L``) and integer values are ``int``; both are accepted as they are
by :meth:`bounds.Bound.evaluate`, and :func:`as_floats` turns a draw into floats for
``Bound.float_function``.

With ``well_conditioned=True`` the draws stay where IEEE float evaluation of the declared
formulas agrees with a 60-digit evaluation to about 1e-9 relative: ``c = 1 - eta*m >= 0.1`` and
``eta*m >= ~5e-4`` (no cancellation in ``1 - c**2``), ``m/L <= 0.9`` (no cancellation in
``L - m``), exponents such as ``2*K*n/b*log(1/c)`` at most 300 (far from underflow), distances
at least 0.01 (no subnormal values), moderate orders, noises and radii. (Corollary 3.8's
log-mean-exp is accurate only in absolute terms in float; see ``tests/bounds``.)

Hypothesis is imported inside the functions, so ``import bounds`` never needs it::

    from hypothesis import given
    from bounds.strategies import strategy_for

    @given(strategy_for("chien2024:cor3.7", well_conditioned=True))
    def test_my_accountant(params):
        assert my_epsilon(**params) <= bounds.get("chien2024:cor3.7")(**params)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import sympy as sp

from bounds.declarations import Bound
from bounds.errors import BoundError
from bounds.registry import get
from bounds.values import resolve_values

if TYPE_CHECKING:  # hypothesis is a test-time dependency: annotations only
    from hypothesis.strategies import SearchStrategy

Params = dict[str, Any]

# Largest |exponent| of a contraction power c**x kept by well-conditioned draws: e^-300 is far
# above the float underflow threshold (about e^-745), also after squaring.
_MAX_LOG_DECAY = 300.0

def _st() -> Any:
    import hypothesis.strategies as st  # lazy: hypothesis is a test-time dependency only

    return st


def as_floats(params: Mapping[str, Any]) -> dict[str, float]:
    """The same draw with every value as a float (for ``Bound.float_function`` and numpy)."""
    return {k: float(v) for k, v in params.items()}


def _fraction(draw: Callable[[Any], Any], lo: float, hi: float, *, log: bool = True) -> Fraction:
    """A value in [lo, hi], log-uniform-ish when ``log`` (lo > 0), as an exact Fraction."""
    st = _st()
    if log and lo > 0:
        t = draw(st.floats(math.log(lo), math.log(hi), allow_nan=False, allow_infinity=False))
        value = min(max(math.exp(t), lo), hi)
    else:
        value = draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))
    return Fraction(value)


def _exact(value: Any) -> sp.Expr:
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    return sp.Integer(value) if isinstance(value, int) else sp.nsimplify(value)


def _number(expr: sp.Expr, values: Mapping[str, Any]) -> tuple[Fraction, bool] | None:
    """``expr`` at ``values`` as ``(Fraction, exact)``: exact for a rational function, else a
    30-digit value (``exact`` False). None when it is not a finite real number."""
    symbols, fn, rational = _compiled(expr)
    if any(s.name not in values for s in symbols):
        return None
    if rational:
        value = expr.subs({s: _exact(values[s.name]) for s in symbols})
        if value.is_Rational:
            return Fraction(int(value.p), int(value.q)), True
        return None  # division by zero and the like
    import mpmath

    with mpmath.workdps(30):
        try:
            number = fn(*(mpmath.mpf(_exact(values[s.name]).p) / int(_exact(values[s.name]).q)
                          for s in symbols))
        except (ValueError, ZeroDivisionError):
            return None
        if not isinstance(number, mpmath.mpf) or not mpmath.isfinite(number):
            return None
        man, exp = number.man_exp
        return Fraction(int(man)) * Fraction(2) ** int(exp), False


@functools.lru_cache(maxsize=512)
def _compiled(expr: sp.Expr) -> tuple[tuple[sp.Symbol, ...], Callable[..., Any], bool]:
    symbols = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
    rational = expr.is_rational_function(*symbols) if symbols else expr.is_Rational
    fn = sp.lambdify(symbols, expr, modules="mpmath")
    return symbols, fn, bool(rational)


def _one_sided(relation: sp.Basic) -> tuple[sp.Expr, sp.Expr, bool] | None:
    """``(small, big, strict)`` with ``small <= big`` (``<`` when strict), or None."""
    if isinstance(relation, (sp.LessThan, sp.StrictLessThan)):
        return relation.lhs, relation.rhs, isinstance(relation, sp.StrictLessThan)
    if isinstance(relation, (sp.GreaterThan, sp.StrictGreaterThan)):
        return relation.rhs, relation.lhs, isinstance(relation, sp.StrictGreaterThan)
    return None


def _step_cap(bound: Bound, values: Mapping[str, Any]) -> tuple[Fraction | None, bool]:
    """Cap on eta from the preconditions ``eta <= expr`` (``<``) at ``values``, and whether some
    precondition on eta is strict (then eta stays strictly below its cap)."""
    eta = sp.Symbol("eta", real=True)
    caps: list[Fraction] = []
    strict = False
    for pre in bound.preconditions:
        sides = _one_sided(pre.relation)
        if sides is None or eta not in pre.relation.free_symbols:
            continue
        small, big, is_strict = sides
        strict = strict or is_strict
        if small == eta and eta not in big.free_symbols:
            found = _number(big, values)
            if found is not None:
                cap, exact = found
                # A transcendental cap was rounded to 30 digits: stay a hair below it.
                caps.append(cap if exact else cap * (1 - Fraction(1, 10**20)))
    return (min(caps) if caps else None), strict


def _solved_sides(
    small: sp.Expr, big: sp.Expr, values: Mapping[str, Any]
) -> list[tuple[sp.Symbol, sp.Expr, bool]]:
    """``(symbol, limit, is_lower)`` readings of ``small <= big``: a side that is a symbol, or a
    symbol times a factor that is positive at ``values`` (``gamma*lam > 1/2`` bounds gamma)."""
    readings = []
    for target, other, is_lower in ((big, small, True), (small, big, False)):
        if isinstance(target, sp.Symbol):
            if target not in other.free_symbols:
                readings.append((target, other, is_lower))
            continue
        # Products with the step size are caps on eta, which has its own recipe (_step_cap).
        if not isinstance(target, sp.Mul) or sp.Symbol("eta", real=True) in target.free_symbols:
            continue
        for symbol in sorted(target.free_symbols, key=lambda s: s.name):
            coefficient = target / symbol
            if symbol in coefficient.free_symbols or symbol in other.free_symbols:
                continue
            found = _number(coefficient, values) if coefficient.free_symbols <= {
                sp.Symbol(n, real=True) for n in values} else None
            if found is not None and found[0] > 0:
                readings.append((symbol, other / coefficient, is_lower))
    return readings


def _repair(
    draw: Callable[[Any], Any], bound: Bound, out: dict[str, Any], fixed: Mapping[str, Any]
) -> None:
    """Move a drawn parameter into the range a precondition ``param >= expr`` (or ``<=``)
    allows, when it is outside; parameters named in ``fixed`` and eta are left alone."""
    st = _st()
    for _ in range(3):  # a later repair may enable an earlier one (T >= I + ..., I >= ...)
        changed = False
        for pre in bound.preconditions:
            sides = _one_sided(pre.relation)
            if sides is None:
                continue
            small, big, strict = sides
            for target, other, is_lower in _solved_sides(small, big, out):
                name = target.name
                if name in fixed or name == "eta" or name not in out:
                    continue
                if not {s.name for s in other.free_symbols} <= set(out):
                    continue
                found = _number(other, out)
                if found is None:
                    continue
                limit = found[0]
                current = out[name]
                ok = (current > limit if strict else current >= limit) if is_lower else (
                    current < limit if strict else current <= limit)
                if ok:
                    continue
                integer = bound.parameter(name).integer
                if is_lower:
                    if integer:
                        start = math.floor(limit) + 1 if strict or limit != math.floor(limit) \
                            else int(limit)
                        out[name] = start + draw(st.integers(0, 3))
                    else:
                        grow = _fraction(draw, 1e-3, 1.0)
                        out[name] = limit * (1 + grow) if limit > 0 else limit + grow
                else:
                    if integer:
                        top = math.ceil(limit) - 1 if strict or limit != math.ceil(limit) \
                            else int(limit)
                        floor = math.ceil(bound.parameter(name).lower or 0)
                        out[name] = top - draw(st.integers(0, max(0, min(3, top - floor))))
                    else:
                        shrink = _fraction(draw, 0.05, 1.0)
                        if strict and shrink >= 1:
                            shrink = Fraction(1023, 1024)
                        out[name] = limit * shrink if limit > 0 else limit - shrink
                changed = True
        if not changed:
            return


def _parameter_default(
    draw: Callable[[Any], Any], bound: Bound, name: str, well_conditioned: bool
) -> Any:
    """A value of a parameter the generator has no recipe for, from its declared domain."""
    st = _st()
    p = bound.parameter(name)
    lo = p.lower if p.lower is not None else (0.0 if p.upper is None else p.upper - 10.0)
    hi = p.upper if p.upper is not None else lo + (10.0 if well_conditioned else 1000.0)
    if p.integer:
        first = math.ceil(lo) + (1 if p.lower_open and math.ceil(lo) == lo else 0)
        last = math.floor(hi) - (1 if p.upper_open and math.floor(hi) == hi else 0)
        return draw(st.integers(first, max(first, min(last, first + 50))))
    span = hi - lo
    inner_lo = lo + (1e-3 * span if p.lower_open or well_conditioned else 0.0)
    inner_hi = hi - (1e-3 * span if p.upper_open or well_conditioned else 0.0)
    return _fraction(draw, inner_lo, inner_hi, log=False)


def _universe(
    draw: Callable[[Any], Any],
    bound: Bound,
    well_conditioned: bool,
    fixed: Mapping[str, Any],
) -> dict[str, Any]:
    """Draw every parameter of ``bound`` consistently (domains and preconditions)."""
    st = _st()
    names = set(bound.parameter_names)
    wc = well_conditioned
    out: dict[str, Any] = {}

    def pick(name: str, make: Callable[[], Any]) -> Any:
        if name in fixed:
            value = fixed[name]
            if hasattr(value, "example") and hasattr(value, "map"):  # a hypothesis strategy
                value = draw(value)
        else:
            value = make()
        if isinstance(value, float):
            value = Fraction(value)
        elif isinstance(value, str):
            exact = resolve_values({name: value})[name]
            value = int(exact) if exact.is_Integer else Fraction(int(exact.p), int(exact.q))
        elif isinstance(value, sp.Rational):
            value = int(value) if value.is_Integer else Fraction(int(value.p), int(value.q))
        out[name] = value
        return value

    # Smoothness and strong convexity: m = r * L with r in (0, 1].
    L = pick("L", lambda: _fraction(draw, *((0.1, 10.0) if wc else (1e-3, 1e3))))
    # Well-conditioned draws keep m/L <= 0.9: L - m (D2D's contraction) stays accurate.
    pick("m", lambda: L * _fraction(draw, *((0.01, 0.9) if wc else (1e-6, 1.0))))

    # Batches: n = b * batches; j0 indexes a batch; S <= n points.
    if "n" in fixed and "b" not in fixed:
        n_value = pick("n", lambda: 0)
        divisors = [k for k in range(1, min(int(n_value), 4096) + 1) if n_value % k == 0]
        b = pick("b", lambda: draw(st.sampled_from(divisors)))
    else:
        b = pick("b", lambda: draw(st.integers(1, 16 if wc else 64)))
        n_value = pick("n", lambda: b * draw(st.integers(1, 20 if wc else 64)))
    batches = max(int(n_value) // max(int(b), 1), 1)
    pick("j0", lambda: draw(st.integers(0, batches - 1)))
    pick("S", lambda: draw(st.integers(1, max(1, min(int(n_value), 10)))))

    pick("M", lambda: _fraction(draw, *((0.01, 10.0) if wc else (1e-3, 100.0))))
    pick("R", lambda: _fraction(draw, *((0.1, 100.0) if wc else (1e-3, 1e4))))
    pick("alpha", lambda: 1 + _fraction(draw, *((0.01, 100.0) if wc else (1e-6, 1e6))))
    pick("sigma", lambda: _fraction(draw, *((0.01, 10.0) if wc else (1e-4, 1e3))))
    # Distances may be 0 in general; well-conditioned draws keep them >= 0.01 so that no value
    # is subnormal.
    def distance(top: float) -> Fraction:
        return _fraction(draw, 0.01, top) if wc else _fraction(draw, 0.0, top, log=False)

    pick("W0", lambda: distance(100.0))
    pick("E0", lambda: distance(100.0))
    pick("d", lambda: draw(st.integers(1, 1000)))
    pick("epsilon", lambda: _fraction(draw, *((0.01, 10.0) if wc else (1e-6, 100.0))))
    pick("delta", lambda: _fraction(draw, *((1e-10, 0.5) if wc else (1e-300, 0.999))))
    # "s" is a request index in Theorem 3.11 and a noise level in Lemma 2.6: read the domain.
    if "s" in names:
        if bound.parameter("s").integer:
            pick("s", lambda: draw(st.integers(1, 30 if wc else 1000)))
        else:
            pick("s", lambda: _fraction(draw, *((0.01, 10.0) if wc else (1e-4, 1e3))))
    if "c" in names:  # Lemma 2.6's contraction factor
        pick("c", lambda: _fraction(draw, *((0.1, 0.99) if wc else (0.0, 1.0 - 2.0**-30)),
                                    log=False))
    pick("Z", lambda: distance(10.0))
    for name in bound.parameter_names:
        if name not in out and name not in ("eta", "K", "T", "N", "Kprev"):
            pick(name, lambda name=name: _parameter_default(draw, bound, name, wc))
    _repair(draw, bound, out, fixed)

    # Step size: a fraction of the cap the preconditions put on it (1/L, m/(2L^2), ...).
    if "eta" in names or "eta" in fixed:
        def make_eta() -> Fraction:
            cap, strict = _step_cap(bound, out)
            cap = cap if cap is not None else 1 / Fraction(L)
            frac = _fraction(draw, *((0.05, 1.0) if wc else (1e-4, 1.0)))
            if strict and frac >= 1:
                frac = Fraction(1023, 1024)
            value = cap * frac
            if wc and "m" in out and value * out["m"] > Fraction(9, 10):
                value = Fraction(9, 10) / out["m"]  # keep c = 1 - eta*m >= 0.1
            return value

        pick("eta", make_eta)

    # Epoch counts; well-conditioned draws keep c**(2*K*n/b) and c**(T*n/b) far from underflow.
    decay = 0.0
    if "eta" in out and "m" in out:
        c_float = 1.0 - float(out["eta"]) * float(out["m"])
        decay = -math.log(c_float) * batches if c_float > 0 else math.inf
    k_max, t_max = (20, 30) if wc else (1000, 1000)
    if wc and decay > 0:
        k_max = max(1, min(k_max, int(_MAX_LOG_DECAY / (2 * decay))))
        t_max = max(1, min(t_max, int(_MAX_LOG_DECAY / (2 * decay))))
    t_lo = max(0, math.ceil(bound.parameter("T").lower or 0)) if "T" in names else 0
    pick("K", lambda: draw(st.integers(1, k_max)))
    pick("T", lambda: draw(st.integers(t_lo, max(t_lo, t_max))))
    pick("Kprev", lambda: draw(st.integers(0, k_max)))  # earlier requests' epochs, in total
    n_max = 200 if wc else 10_000
    if wc and "c" in out and out["c"] > 0:
        n_max = max(1, min(n_max, int(_MAX_LOG_DECAY / (-2 * math.log(float(out["c"]))))))
    pick("N", lambda: draw(st.integers(1, n_max)))
    _repair(draw, bound, out, fixed)
    return {name: out[name] for name in bound.parameter_names}


def is_valid(bound: Bound | str, params: Mapping[str, Any]) -> bool:
    """Whether ``params`` passes every domain and precondition of ``bound``."""
    bound = bound if isinstance(bound, Bound) else get(bound)
    try:
        bound.check(bound.resolve(params))
    except BoundError:
        return False
    return True


def strategy_for(
    bound: Bound | str,
    *,
    well_conditioned: bool = False,
    **fixed: Any,
) -> SearchStrategy[Params]:
    """Strategy of valid parameter dicts for a declared bound.

    Args:
      bound: a :class:`Bound` or its id (aliases accepted).
      well_conditioned: keep the draws where float evaluation is accurate (see module doc).
      **fixed: parameters to hold fixed, as numbers, exact strings or hypothesis strategies
        (e.g. ``b=st.just(1)``); the other parameters are drawn consistently with them.

    Draws that still violate a precondition (rare: strict inequalities at a boundary, or
    incompatible fixed values) are filtered out.
    """
    st = _st()
    bound = bound if isinstance(bound, Bound) else get(bound)
    unknown = set(fixed) - set(bound.parameter_names)
    if unknown:
        raise BoundError(f"{bound.id} has no parameters {sorted(unknown)}")

    @st.composite
    def draw_params(draw: Callable[[Any], Any]) -> dict[str, Any]:
        return _universe(draw, bound, well_conditioned, fixed)

    return draw_params().filter(lambda p: is_valid(bound, p))


def pnsgd_setting(
    *,
    well_conditioned: bool = False,
    full_batch: bool | None = None,
    **fixed: Any,
) -> SearchStrategy[Params]:
    """Strategy of consistent PNSGD settings ``{eta, m, L, M, n, b, R}`` (Chien et al. 2024).

    ``0 < eta <= 1/L``, ``0 < m <= L``, ``b`` divides ``n``; ``full_batch`` forces ``b = n``
    (True) or ``b < n`` (False); ``fixed`` holds some of the seven values fixed.
    """
    base = get("chien2024:cor3.7")
    keys = ("eta", "m", "L", "M", "n", "b", "R")
    unknown = set(fixed) - set(keys)
    if unknown:
        raise BoundError(f"pnsgd_setting has no parameters {sorted(unknown)}; it draws {keys}")
    strategy = strategy_for(base, well_conditioned=well_conditioned,
                            **{"alpha": 2, "sigma": 1, "K": 1, **fixed})
    if full_batch is True:
        strategy = strategy.map(lambda p: {**p, "b": p["n"]})
    elif full_batch is False:
        strategy = strategy.filter(lambda p: p["b"] < p["n"])
    return strategy.map(lambda p: {k: p[k] for k in keys})


def bound_ids(paper: str | None = None) -> list[str]:
    """Ids of the declared bounds (optionally of one paper), for ``pytest.mark.parametrize``."""
    from bounds.registry import list_bounds

    return [b.id for b in list_bounds(paper)]
