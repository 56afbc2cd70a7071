"""Declarations: a theorem's citation, parameters, preconditions, guarantee, and the
:class:`Bound` holding its sympy expression with the float, mp and interval evaluators derived
from it; :class:`Evaluation` is the checked value with its provenance.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
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
    LATEX_NAMES,
    exact_truth,
    format_exact,
    format_float,
    is_exact,
    jsonable,
    plain_text,
    real_symbol,
    resolve_values,
    to_float_array,
    to_interval,
    to_mp,
)

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



@dataclasses.dataclass(frozen=True)
class Citation:
    """Where a result is printed.

    Attributes:
      paper: short key of the paper, e.g. ``"chien2024"``.
      reference: full bibliographic reference.
      seed: file name of the paper's text in ``shared/seeds`` (empty for a textbook result
        outside the seed papers).
      label: the paper's own numbering, e.g. ``"Theorem 3.2"``.
      section: section or appendix holding the statement (and proof).
    """

    paper: str
    reference: str
    seed: str
    label: str
    section: str = ""

    def __post_init__(self) -> None:
        # Citations are user-facing text: no empty field, no left-over placeholder.
        for name in ("paper", "reference", "label"):
            if not getattr(self, name).strip():
                raise ValueError(f"citation of {self.paper or '?'}: empty {name}")

    def describe(self) -> str:
        """One line for readers: reference (authors, title, venue), label and section. The seed
        file is the project's own copy of the text, so it is no part of a citation."""
        where = f", {self.section}" if self.section else ""
        return f"{self.reference}, {self.label}{where}"


@dataclasses.dataclass(frozen=True)
class Parameter:
    """A named input of a bound, with its domain.

    ``lower``/``upper`` are bounds of the domain (``None`` for unbounded); ``*_open`` makes the
    inequality strict. ``integer`` parameters must be whole numbers.
    """

    name: str
    description: str
    lower: float | None = None
    upper: float | None = None
    lower_open: bool = False
    upper_open: bool = False
    integer: bool = False

    @property
    def symbol(self) -> sp.Symbol:
        """The real sympy symbol of this parameter (shared by every bound)."""
        return real_symbol(self.name)

    def domain_text(self) -> str:
        """The parameter's domain in words, such as ``sigma > 0``."""
        parts = []
        if self.lower is not None:
            parts.append(f"{self.name} {'>' if self.lower_open else '>='} {format_float(self.lower)}")
        if self.upper is not None:
            parts.append(f"{self.name} {'<' if self.upper_open else '<='} {format_float(self.upper)}")
        if self.integer:
            parts.append(f"{self.name} integer")
        return ", ".join(parts) if parts else f"{self.name} real"

    def violations(self, value: Any) -> list[str]:
        """Describe how ``value`` (scalar or array) leaves the domain; empty if it does not."""
        arr = np.asarray(value, dtype=float) if not is_exact(value) else None
        msgs: list[str] = []
        if arr is not None:
            if not np.all(np.isfinite(arr)):
                return [f"{self.name} must be finite (got {value!r})"]
            if self.lower is not None:
                bad = arr <= self.lower if self.lower_open else arr < self.lower
                if np.any(bad):
                    msgs.append(self.domain_text())
            if self.upper is not None:
                bad = arr >= self.upper if self.upper_open else arr > self.upper
                if np.any(bad):
                    msgs.append(self.domain_text())
            if self.integer and np.any(arr != np.round(arr)):
                msgs.append(f"{self.name} must be an integer")
            return msgs[:1]
        exact = value
        if self.lower is not None:
            lo = sp.Rational(Fraction(self.lower))
            if (exact <= lo) if self.lower_open else (exact < lo):
                msgs.append(self.domain_text())
        if self.upper is not None:
            hi = sp.Rational(Fraction(self.upper))
            if (exact >= hi) if self.upper_open else (exact > hi):
                msgs.append(self.domain_text())
        if self.integer and not (exact.is_integer or exact == sp.floor(exact)):
            msgs.append(f"{self.name} must be an integer")
        return msgs[:1]


@dataclasses.dataclass(frozen=True)
class Precondition:
    """A checkable hypothesis of a theorem, as a sympy relation over its parameters."""

    relation: sp.Basic
    description: str

    def text(self) -> str:
        """The relation and its description, in plain text."""
        return f"{plain_text(self.relation)}  ({self.description})"


@dataclasses.dataclass(frozen=True)
class Guarantee:
    """What the value of a bound certifies.

    ``kind`` is one of :data:`GUARANTEE_KINDS`; ``renyi_order`` names the parameter that is the
    Rényi order when the value is a Rényi divergence bound. ``fixed_order_inputs`` names inputs
    that are themselves Rényi quantities valid at that one order (e.g. an RDP level ``eps0``):
    the value then holds at the order the caller gives, and conversions must not move it.
    """

    kind: str
    description: str
    renyi_order: str | None = None
    fixed_order_inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in GUARANTEE_KINDS:
            raise ValueError(f"unknown guarantee kind {self.kind!r}")

    @property
    def safe_end(self) -> str:
        """``"upper"``, ``"lower"`` or ``"both"``: which end of an enclosure errs safely."""
        return SAFE_END[self.kind]


GUARANTEE_KINDS = (
    "renyi_unlearning",  # (alpha, value)-Rényi unlearning: d_alpha(unlearned, retrained) <= value
    "renyi_dp",  # (alpha, value)-RDP of the learning algorithm
    "eps_delta_unlearning",  # (value, delta)-unlearning
    "w_infinity",  # W_infinity distance between two laws <= value
    "excess_risk",  # expected excess empirical risk <= value
    "gradient_residual",  # norm of the gradient residual <= value
    "residual_budget",  # largest accumulated residual a noise level certifies (a budget)
    "unlearning_delta",  # delta (not epsilon) of (epsilon, delta)-unlearning <= value
    "noise_scale",  # the noise standard deviation the theorem requires (sufficient)
    "noise_floor",  # a noise level that is necessary but not sufficient: sigma must exceed it
    "iterations",  # number of iterations the theorem requires
    "exact_divergence",  # exact Rényi divergence of a closed-form model (ground truth)
    "membership_advantage",  # advantage of any membership-inference test <= value
    "epsilon_lower_limit",  # no certificate with a privacy loss below value can hold
    "step_size",  # the step size the theorem prescribes, or its largest admissible value
    "gradient_complexity",  # per-example gradient computations (a count, or its growth order)
)

# Which end of an enclosure is the safe one, by kind of quantity: an upper bound (a divergence,
# a residual, a sufficient noise level or iteration count) errs safely upward; a budget, a
# largest admissible step, or a limit below which something is impossible errs safely
# downward; an exact value or a cost has no safe side.
SAFE_END: Mapping[str, str] = {
    "renyi_unlearning": "upper", "renyi_dp": "upper", "eps_delta_unlearning": "upper",
    "unlearning_delta": "upper", "w_infinity": "upper", "excess_risk": "upper",
    "gradient_residual": "upper", "residual_budget": "lower", "noise_scale": "upper",
    "noise_floor": "lower", "iterations": "upper", "exact_divergence": "both",
    "membership_advantage": "upper", "epsilon_lower_limit": "lower", "step_size": "lower",
    "gradient_complexity": "both",
}


@dataclasses.dataclass(frozen=True)
class Bound:
    """One theorem's bound, declared once.

    Attributes:
      id: stable id ``paper:label`` in the paper's own numbering (``chien2024:thm3.2``).
      title: one-line name of the result.
      citation: where it is printed.
      parameters: the inputs, named as the paper names them (ASCII).
      expression: the sympy expression of the bound.
      guarantee: what its value certifies.
      preconditions: checked on every evaluation.
      assumptions: hypotheses that cannot be checked from the numbers (smoothness, ...).
      aliases: other ids of the same result (e.g. the earlier version's numbering).
      variant: ``"paper"`` (as printed, or corrected per ``docs/errata.md``), ``"literal"``
        (the printed form kept for comparison with an erratum), or ``"improved"`` (a tightening
        proved in this toolkit).
      monotone: direction in which the value moves as a parameter grows (``"increasing"`` or
        ``"decreasing"``); the calibration solvers rely on it and the tests check it.
      notes: remarks shown with the formula.
      example: parameter values for documentation and smoke tests.
      certificate_conditions: conditions under which the value is justified by the stated
        hypotheses; outside them the formula is evaluated but never labelled certified (e.g.
        Corollary 3.10 needs T >= Rb/(eta M), erratum E8). ``"literal"`` variants never certify.
      remark: a function of the exact scalar inputs returning a note shown with the value (or
        ``None``), e.g. the exact answer where a literal printed form understates it.
    """

    id: str
    title: str
    citation: Citation
    parameters: tuple[Parameter, ...]
    expression: sp.Expr
    guarantee: Guarantee
    preconditions: tuple[Precondition, ...] = ()
    assumptions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    variant: str = "paper"
    monotone: Mapping[str, str] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()
    example: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    certificate_conditions: tuple[Precondition, ...] = ()
    remark: Callable[[Mapping[str, Any]], str | None] | None = None

    def __post_init__(self) -> None:
        names = [p.name for p in self.parameters]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.id}: duplicate parameter names")
        free = {s.name for s in self.expression.free_symbols}
        unknown = free - set(names)
        if unknown:
            raise ValueError(f"{self.id}: expression uses undeclared symbols {sorted(unknown)}")
        if self.variant not in ("paper", "literal", "improved"):
            raise ValueError(f"{self.id}: unknown variant {self.variant!r}")

    # -- introspection ------------------------------------------------------------------------

    @property
    def paper(self) -> str:
        """The paper part of the bound's id (before the colon)."""
        return self.id.split(":", 1)[0]

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Names of the parameters, in declaration order."""
        return tuple(p.name for p in self.parameters)

    def parameter(self, name: str) -> Parameter:
        """The declared parameter called ``name`` (BoundError when there is none)."""
        for p in self.parameters:
            if p.name == name:
                return p
        raise BoundError(f"{self.id} has no parameter {name!r}; it takes {self.parameter_names}")

    def latex(self) -> str:
        """The formula in LaTeX, with Greek parameter names."""
        return sp.latex(self.expression, symbol_names=LATEX_NAMES)

    def text(self) -> str:
        """The formula in plain text."""
        return plain_text(self.expression)

    def provenance(self) -> dict[str, Any]:
        """Where the number comes from: theorem, paper, assumptions, variant."""
        return {
            "bound": self.id,
            "aliases": list(self.aliases),
            "title": self.title,
            "citation": self.citation.describe(),
            "paper": self.citation.paper,
            "label": self.citation.label,
            "guarantee": self.guarantee.kind,
            "guarantee_description": self.guarantee.description,
            "variant": self.variant,
            "assumptions": list(self.assumptions),
            "preconditions": [p.text() for p in self.preconditions],
        }

    def certificate_status(self, values: Mapping[str, Any]) -> tuple[bool, str]:
        """Whether the value at these (resolved, exact) inputs is a certificate, and why not.

        ``"literal"`` variants (a printed form kept next to its erratum) are never certificates;
        a bound with :attr:`certificate_conditions` certifies only where each one holds.
        """
        if self.variant == "literal":
            return False, (f"{self.id} is the literal printed form kept for comparison "
                           "(variant 'literal'), not a certificate; see docs/errata.md")
        if self.certificate_conditions and all(is_exact(values[n]) for n in self.parameter_names):
            subs = {real_symbol(n): values[n] for n in self.parameter_names}
            for cond in self.certificate_conditions:
                if not exact_truth(cond.relation, subs):
                    return False, (f"{self.id} certifies only where {plain_text(cond.relation)} "
                                   f"[{cond.description}]; it does not hold at these inputs")
        elif self.certificate_conditions:
            return False, f"{self.id}: certificate conditions need scalar inputs"
        return True, ""

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
    def _precondition_functions(self) -> list[tuple[Precondition, Callable[..., Any]]]:
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
    which end is the certificate depends on the kind of quantity (:data:`SAFE_END`): the
    upper end of a divergence or a sufficient noise level, the lower end of a budget.
    ``value`` is a float or numpy array for ``"float"``, an ``mpmath.mpf`` otherwise.
    """

    bound: Bound
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
        """The end that errs safely for this kind of quantity (:data:`SAFE_END`).

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


def describe_parameters(params: Iterable[Parameter]) -> list[str]:
    """One line per parameter: name, description and domain."""
    return [f"{p.name}: {p.description} ({p.domain_text()})" for p in params]
