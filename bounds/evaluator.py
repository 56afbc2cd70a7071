"""The evaluator of a declared bound (:class:`bounds.declarations.Bound`): the float, mp and
interval evaluation derived from its sympy expression (:class:`BoundEvaluator`, which ``Bound``
inherits), the checked :class:`Evaluation` with its provenance, and the safe-side float of a
value (:func:`safe_float`) with the notes on values that leave the float range.

The evaluator reads a declaration only through its attributes (``id``, ``parameters``,
``expression``, ``guarantee``, ``preconditions``, ...), so it imports no declaration.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping
from typing import Any, Literal

import mpmath
import numpy as np
import sympy as sp

from bounds.backends import IV_FUNCS, MP_FUNCS, NUMPY_FUNCS
from bounds.errors import BoundError, PreconditionError
from bounds.numerics import (
    call_float,
    check_finite,
    float_down,
    float_up,
    interval_endpoints,
    interval_ready,
    iv_precision,
    nstr_directed,
    squeeze,
    stabilise,
)
from bounds.values import (
    exact_truth,
    format_exact,
    is_exact,
    jsonable,
    plain_text,
    real_symbol,
    resolve_values,
    to_float_array,
    to_interval,
    to_mp,
)

__all__ = ["FLOAT_NOTE", "PRECISIONS", "BoundEvaluator", "Evaluation", "Precision", "safe_float"]

Precision = Literal["float", "mp", "interval"]
PRECISIONS: tuple[str, ...] = ("float", "mp", "interval")

FLOAT_NOTE = (
    "float evaluation: IEEE-754 round-to-nearest, so the direction of rounding is not "
    "controlled; use precision='interval' for a certified upper bound"
)
_FLOAT_NOTES = {
    "upper": FLOAT_NOTE,
    "lower": FLOAT_NOTE.replace("upper bound", "lower bound (the safe end of this kind of "
                                 "quantity)"),
    "both": FLOAT_NOTE.replace("a certified upper bound", "a rigorous enclosure"),
}




class BoundEvaluator:
    """The evaluation half of a :class:`~bounds.declarations.Bound`: compiled float, mp and
    interval functions of its expression, the checks of every domain and precondition, and
    :meth:`evaluate`. A mixin: the declaration supplies the attributes it reads."""

    # -- compiled evaluators -------------------------------------------------------------------

    @functools.cached_property
    def _symbols(self) -> list[sp.Symbol]:
        return [p.symbol for p in self.parameters]

    @functools.cached_property
    def _numeric_expression(self) -> sp.Expr:
        return stabilise(self.expression)

    @functools.cached_property
    def float_function(self) -> Callable[..., Any]:
        """Unchecked vectorised numpy evaluator, positional in :attr:`parameter_names`.

        For solvers' inner loops; everything user-facing goes through :meth:`evaluate`.
        """
        return sp.lambdify(self._symbols, self._numeric_expression, modules=[NUMPY_FUNCS, "numpy"])

    @functools.cached_property
    def _exact_split(self) -> tuple[sp.Expr, tuple[sp.Expr, ...], tuple[sp.Symbol, ...]]:
        """The numeric expression with every exact linear combination of inputs replaced.

        ``n - m`` rounded after converting ``n`` and ``m`` one by one cancels (at n ~ 2^53 in
        float, at n ~ 10^digits in mp); each sum of rational multiples of parameters and a
        rational constant is instead formed exactly from the exact inputs and rounded once.
        Returns (expression with placeholders, the combinations, the placeholder symbols).
        """
        parameters = set(self._symbols)
        found: list[sp.Expr] = []

        def linear(node: sp.Expr) -> bool:
            if not isinstance(node, sp.Add):
                return False
            symbolic = 0
            for term in node.args:
                if term.is_Rational:
                    continue
                coeff, rest = term.as_coeff_Mul()
                if not (coeff.is_Rational and rest in parameters):
                    return False
                symbolic += 1
            return symbolic >= 1 and len(node.args) >= 2

        def walk(node: sp.Expr) -> sp.Expr:
            if linear(node):
                if node not in found:
                    found.append(node)
                return _placeholder(found.index(node))
            if node.is_Atom or not node.args:
                return node
            args = [walk(a) for a in node.args]
            return node.func(*args) if args != list(node.args) else node

        expression = walk(self._numeric_expression)
        return expression, tuple(found), tuple(_placeholder(i) for i in range(len(found)))

    @functools.cached_property
    def _split_float(self) -> Callable[..., Any]:
        expression, _, extra = self._exact_split
        return sp.lambdify([*self._symbols, *extra], expression, modules=[NUMPY_FUNCS, "numpy"])

    @functools.cached_property
    def _split_mp(self) -> Callable[..., Any]:
        expression, _, extra = self._exact_split
        return sp.lambdify([*self._symbols, *extra], expression, modules=[MP_FUNCS, "mpmath"])

    @functools.cached_property
    def _split_iv(self) -> Callable[..., Any]:
        expression, _, extra = self._exact_split
        return sp.lambdify([*self._symbols, *extra], interval_ready(expression), modules=[IV_FUNCS])

    def _combinations(self, values: Mapping[str, Any]) -> list[Any]:
        """The exact values of :attr:`_exact_split`'s combinations (float arrays for arrays)."""
        subs = {real_symbol(n): values[n] for n in self.parameter_names}
        out = []
        for combo in self._exact_split[1]:
            if any(isinstance(subs[s], np.ndarray) for s in combo.free_symbols):
                fn = sp.lambdify(sorted(combo.free_symbols, key=str), combo, modules="numpy")
                out.append(fn(*[to_float_array(subs[s]) for s in sorted(combo.free_symbols, key=str)]))
            else:
                out.append(combo.xreplace(subs))
        return out

    @functools.cached_property
    def _precondition_functions(self) -> list[tuple[Any, Callable[..., Any]]]:
        out = []
        for pre in self.preconditions:
            rel = pre.relation
            gap = sp.simplify(rel.rhs - rel.lhs) if not isinstance(rel, sp.Eq) else rel.lhs - rel.rhs
            out.append((pre, sp.lambdify(self._symbols, gap, modules=[NUMPY_FUNCS, "numpy"])))
        return out

    # -- evaluation ------------------------------------------------------------------------------

    def evaluate(
        self,
        *,
        precision: Precision = "float",
        digits: int = 50,
        **params: Any,
    ) -> Evaluation:
        """Evaluate the bound after checking every domain and precondition.

        Args:
          precision: ``"float"`` (numpy, vectorised over array parameters), ``"mp"`` (mpmath
            with ``digits`` significant digits) or ``"interval"`` (rigorous enclosure).
          digits: working precision for ``"mp"`` and ``"interval"``.
          **params: every parameter of the bound, by name. Scalars may be given as numbers,
            exact strings (``"1/4"``, ``"1e-6"``) or expressions of the other parameters
            (``eta="1/L"``) which are resolved exactly before rounding.

        Raises:
          PreconditionError: a value is outside its domain or a precondition fails; the
            message names the theorem and the condition.
        """
        if precision not in PRECISIONS:
            raise BoundError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if not isinstance(digits, int) or digits < 5 or digits > 10_000:
            raise BoundError(f"digits must be an integer in [5, 10000], got {digits!r}")
        values = self.resolve(params)
        self.check(values)
        notes: list[str] = []
        if self.variant == "literal" or self.remark is not None or self.certificate_conditions:
            notes.extend(self._remarks(values))
        combos = self._combinations(values)
        if precision == "float":
            return self._evaluate_float(values, combos, notes)
        if precision == "mp":
            with mpmath.workdps(digits):
                args = [to_mp(values[n]) for n in self.parameter_names]
                args += [to_mp(c) for c in combos]
                value = self._mp_value(args)
            notes.extend(_float_range_notes(value, self.guarantee.safe_end))
            return Evaluation(self, value, "mp", digits, None, None, tuple(notes), values)
        with iv_precision(digits):
            args = [to_interval(values[n]) for n in self.parameter_names]
            args += [to_interval(c) for c in combos]
            try:
                enclosure = mpmath.iv.mpf(self._split_iv(*args))
            except ZeroDivisionError:
                raise BoundError(f"{self.id}: division by zero at these inputs") from None
        lo, hi = interval_endpoints(enclosure)
        if not (mpmath.isfinite(lo) and mpmath.isfinite(hi)):
            raise BoundError(f"{self.id}: interval evaluation is not finite ({enclosure})")
        mid = (lo + hi) / 2
        return Evaluation(self, mid, "interval", digits, lo, hi, tuple(notes), values)

    def _mp_value(self, args: list[Any]) -> Any:
        try:
            value = self._split_mp(*args)
        except ZeroDivisionError:
            raise BoundError(f"{self.id}: division by zero at these inputs") from None
        check_finite(self.id, value)
        return value

    def _evaluate_float(self, values: Mapping[str, Any], combos: list[Any],
                        notes: list[str]) -> Evaluation:
        """Float value; an overflow, a division by zero or an input outside the float range is
        never rounded silently: a scalar is recomputed in mpmath (with a note), an array refused.
        """
        scalar = all(is_exact(values[n]) for n in self.parameter_names)
        if scalar and self._rational:
            exact_value = self._exact_rational_float(values, notes)
            if exact_value is not None:
                return Evaluation(self, exact_value, "float", 16, None, None, tuple(notes), values)
        args = [to_float_array(values[n]) for n in self.parameter_names]
        args += [to_float_array(c) for c in combos]
        lost = [n for n in self.parameter_names if is_exact(values[n]) and _leaves_float_range(values[n])]
        lost += [str(c) for c in combos if is_exact(c) and _leaves_float_range(c)]
        value, flags = call_float(self._split_float, args)
        if lost or flags["overflow"]:
            why = (f"the input {lost[0]} is outside the normal float range" if lost else
                   "an intermediate result overflowed the float range")
            if not scalar:
                raise BoundError(f"{self.id}: float evaluation is not reliable here ({why}); "
                                 "evaluate point by point with precision='mp'")
            with mpmath.workdps(30):
                exact = self._mp_value([to_mp(values[n]) for n in self.parameter_names]
                                       + [to_mp(c) for c in combos])
                value = safe_float(exact, self.guarantee.safe_end)
            side = {"upper": "up (the safe side)", "lower": "down (the safe side)",
                    "both": "to nearest"}[self.guarantee.safe_end]
            notes.append(f"float evaluation: {why}, so the value was computed in mpmath at 30 "
                         f"digits and rounded {side}")
            if exact != 0 and (value == 0 or abs(value) < _FLOAT_TINY):
                notes.append(f"the value {mpmath.nstr(exact, 6)} is below the normal float range; "
                             "the float shown is rounded (to 0 if below 5e-324): use precision='mp'")
            elif not math.isfinite(value):
                raise BoundError(f"{self.id}: the value {mpmath.nstr(exact, 6)} exceeds the float "
                                 "range; use precision='mp'")
        elif flags["underflow"]:
            notes.append(
                "float underflow: a term was rounded toward zero, so the float value may "
                "lie below the exact one; re-evaluate with precision='mp' or 'interval'"
            )
        check_finite(self.id, value)
        notes.append(_FLOAT_NOTES[self.guarantee.safe_end])
        return Evaluation(self, squeeze(value), "float", 16, None, None, tuple(notes), values)

    @functools.cached_property
    def _rational(self) -> bool:
        """Whether the expression is a rational function of the parameters (no Min, log, ...)."""
        for node in sp.preorder_traversal(self.expression):
            if node.is_Symbol or node.is_Rational or isinstance(node, (sp.Add, sp.Mul)):
                continue
            if isinstance(node, sp.Pow) and node.exp.is_Integer:
                continue
            return False
        return True

    def _exact_rational_float(self, values: Mapping[str, Any], notes: list[str]) -> float | None:
        """A rational bound's float at scalar inputs, formed exactly and rounded once to the safe
        side (Guo et al.'s m^2 at m = 2^53 + 1 is not m rounded, then squared); ``None`` where
        the exact value is undefined (the float path then reports it)."""
        exact = self.expression.xreplace({real_symbol(n): values[n] for n in self.parameter_names})
        if not exact.is_Rational:
            return None
        end = self.guarantee.safe_end
        value = safe_float(exact, end)
        size = abs(exact)
        with mpmath.workdps(20):
            shown = mpmath.nstr(to_mp(exact), 6)
        if size > _FLOAT_MAX and end != "lower":
            raise BoundError(f"{self.id}: the value {shown} exceeds the float range; "
                             "use precision='mp'")
        side = {"upper": "up", "lower": "down", "both": "to nearest"}[end]
        notes.append(f"float evaluation: a rational function of the inputs, formed exactly and "
                     f"rounded once {side}" + ("" if end == "both" else " (the safe side)"))
        if size != 0 and size < _FLOAT_TINY:
            notes.append(f"the value {shown} is below the normal float range "
                         "(underflow); use precision='mp'")
        return value

    def _remarks(self, values: Mapping[str, Any]) -> list[str]:
        """Notes on a value that is not a certificate at these inputs (see :attr:`remark`)."""
        out = []
        scalar = all(is_exact(values[n]) for n in self.parameter_names)
        if self.variant == "literal" or (self.certificate_conditions and scalar):
            ok, why = self.certificate_status(values)
            if not ok:
                out.append(why)
        if self.remark is not None and scalar:
            extra = self.remark(values)
            if extra:
                out.append(extra)
        return out

    def __call__(self, **params: Any) -> Any:
        """Float value of the bound (checked); see :meth:`evaluate`."""
        return self.evaluate(**params).value

    # -- input handling ------------------------------------------------------------------------

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Turn user inputs into exact sympy numbers (scalars) or float arrays."""
        names = set(self.parameter_names)
        unknown = set(params) - names
        if unknown:
            raise BoundError(
                f"{self.id} does not take {sorted(unknown)}; its parameters are "
                f"{', '.join(self.parameter_names)}"
            )
        missing = names - set(params)
        if missing:
            raise BoundError(
                f"{self.id} needs {', '.join(p for p in self.parameter_names if p in missing)}"
            )
        return resolve_values(params, context=self.id)

    def check(self, values: Mapping[str, Any]) -> None:
        """Raise :class:`PreconditionError` unless every domain and precondition holds."""
        for p in self.parameters:
            for msg in p.violations(values[p.name]):
                raise PreconditionError(f"{self.id} ({self.citation.label}): requires {msg}")
        if not self.preconditions:
            return
        if all(is_exact(values[n]) for n in self.parameter_names):
            subs = {real_symbol(n): values[n] for n in self.parameter_names}
            for pre in self.preconditions:
                ok = exact_truth(pre.relation, subs)
                if not ok:
                    raise PreconditionError(
                        f"{self.id} ({self.citation.label}): requires {plain_text(pre.relation)} "
                        f"[{pre.description}]; got "
                        + ", ".join(
                            f"{s}={format_exact(subs[real_symbol(s)])}"
                            for s in sorted(x.name for x in pre.relation.free_symbols)
                        )
                    )
            return
        args = [to_float_array(values[n]) for n in self.parameter_names]
        for pre, gap_fn in self._precondition_functions:
            with np.errstate(all="ignore"):
                gap = np.asarray(gap_fn(*args), dtype=float)
            rel = pre.relation
            if isinstance(rel, sp.Eq):
                bad = gap != 0
            elif isinstance(rel, (sp.StrictLessThan, sp.StrictGreaterThan)):
                bad = ~(gap > 0) if isinstance(rel, sp.StrictLessThan) else ~(gap < 0)
            elif isinstance(rel, sp.LessThan):
                bad = ~(gap >= 0)
            else:
                bad = ~(gap <= 0)
            if np.any(bad):
                raise PreconditionError(
                    f"{self.id} ({self.citation.label}): requires {plain_text(rel)} "
                    f"[{pre.description}]; violated at {int(np.sum(bad))} of {bad.size} points"
                )


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The value of a bound at some inputs, with its precision and provenance.

    For ``precision == "interval"``, ``[lower, upper]`` encloses the exact value of the formula;
    which end is the certificate depends on the kind of quantity
    (:attr:`~bounds.declarations.GuaranteeKind.safe_end`): the upper end of a divergence or a
    sufficient noise level, the lower end of a budget.
    ``value`` is a float or numpy array for ``"float"``, an ``mpmath.mpf`` otherwise.
    """

    bound: Any  # the bounds.declarations.Bound evaluated
    value: Any
    precision: str
    digits: int
    lower: Any
    upper: Any
    notes: tuple[str, ...]
    inputs: Mapping[str, Any]

    @property
    def certified_upper(self) -> float:
        """A float that is >= the exact value; only available for interval evaluations."""
        if self.precision != "interval":
            raise BoundError(
                "only an interval evaluation yields a certified upper bound; "
                "evaluate with precision='interval'"
            )
        return float_up(self.upper)

    @property
    def certified_lower(self) -> float:
        """A float that is <= the exact value; only available for interval evaluations."""
        if self.precision != "interval":
            raise BoundError(
                "only an interval evaluation yields a certified lower bound; "
                "evaluate with precision='interval'"
            )
        return float_down(self.lower)

    @property
    def certified_safe(self) -> float:
        """The end that errs safely for this kind of quantity (its guarantee's ``safe_end``).

        Raises for a kind without a safe side (an exact value, a cost).
        """
        end = self.bound.guarantee.safe_end
        if end == "both":
            raise BoundError(f"{self.bound.id} gives a {self.bound.guarantee.kind}, which has no "
                             "safe side; use certified_lower and certified_upper")
        return self.certified_upper if end == "upper" else self.certified_lower

    def to_dict(self) -> dict[str, Any]:
        """The evaluation as plain JSON data (inputs, value, precision, notes)."""
        out: dict[str, Any] = {
            "bound": self.bound.id,
            "guarantee": self.bound.guarantee.kind,
            "safe_end": self.bound.guarantee.safe_end,
            "precision": self.precision,
            "digits": self.digits,
            "inputs": {k: jsonable(v) for k, v in self.inputs.items()},
            "value": jsonable(self.value),
            "notes": list(self.notes),
            "provenance": self.bound.provenance(),
        }
        if self.precision == "mp":
            out["value"] = safe_float(self.value, self.bound.guarantee.safe_end)
            out["value_digits"] = mpmath.nstr(self.value, self.digits)
        if self.precision == "interval":
            # Rounded outward at the digits printed: the text encloses the exact value too.
            out["interval"] = [nstr_directed(self.lower, self.digits, "down"),
                               nstr_directed(self.upper, self.digits, "up")]
            end = self.bound.guarantee.safe_end
            if end in ("upper", "both"):
                out["certified_upper"] = self.certified_upper
            if end in ("lower", "both"):
                out["certified_lower"] = self.certified_lower
        return out


def _placeholder(index: int) -> sp.Symbol:
    return sp.Symbol(f"_exact_combination_{index}", real=True)


_FLOAT_TINY = 2.2250738585072014e-308  # the least normal float


_FLOAT_MAX = 1.7976931348623157e308


def safe_float(value: Any, end: str) -> float:
    """A real ``value`` as a float on the safe side for a quantity whose safe end is ``end``:
    rounded up for ``"upper"``, down for ``"lower"``, to nearest for ``"both"`` (no safe side)."""
    if end == "upper":
        return float_up(value)
    if end == "lower":
        return float_down(value)
    return float(value)


def _float_range_notes(value: Any, end: str) -> list[str]:
    """Notes for an mp value whose float form (:func:`safe_float`) leaves the normal float range."""
    size = abs(value)
    if size == 0 or _FLOAT_TINY <= size <= _FLOAT_MAX:
        return []
    shown = safe_float(value, end)
    side = {"upper": "rounded up, the safe side of this kind", "lower": "rounded down, the safe "
            "side of this kind", "both": "rounded to nearest: this kind has no safe side"}[end]
    where = "below the normal float range (underflow)" if size < _FLOAT_TINY else \
        "beyond the float range (overflow)"
    return [f"the value {mpmath.nstr(value, 6)} is {where}: its float form is {shown!r} ({side}); "
            "value_digits holds its digits"]


def _leaves_float_range(value: sp.Expr) -> bool:
    """Whether an exact nonzero input rounds to 0, to a subnormal or to infinity as a float."""
    if value == 0:
        return False
    with mpmath.workdps(20):
        size = abs(to_mp(value))
    return size < _FLOAT_TINY or size > 1.7976931348623157e308
