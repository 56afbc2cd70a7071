"""Declarations: a theorem's citation, parameters, preconditions, guarantee, and the
:class:`Bound` holding its sympy expression with the float, mp and interval evaluators derived
from it; :class:`Evaluation` is the checked value with its provenance.
"""

from __future__ import annotations

import dataclasses
import functools
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
    float_up,
    interval_endpoints,
    interval_ready,
    iv_precision,
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



@dataclasses.dataclass(frozen=True)
class Citation:
    """Where a result is printed.

    Attributes:
      paper: short key of the paper, e.g. ``"chien2024"``.
      reference: full bibliographic reference.
      seed: file name of the paper's text in ``shared/seeds``.
      label: the paper's own numbering, e.g. ``"Theorem 3.2"``.
      section: section or appendix holding the statement (and proof).
    """

    paper: str
    reference: str
    seed: str
    label: str
    section: str = ""

    def describe(self) -> str:
        """One line: reference, label, section and seed."""
        where = f", {self.section}" if self.section else ""
        return f"{self.reference}, {self.label}{where} [seed {self.seed}]"


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


GUARANTEE_KINDS = (
    "renyi_unlearning",  # (alpha, value)-Rényi unlearning: d_alpha(unlearned, retrained) <= value
    "renyi_dp",  # (alpha, value)-RDP of the learning algorithm
    "eps_delta_unlearning",  # (value, delta)-unlearning
    "w_infinity",  # W_infinity distance between two laws <= value
    "excess_risk",  # expected excess empirical risk <= value
    "gradient_residual",  # norm of the gradient residual <= value
    "noise_scale",  # the noise standard deviation the theorem requires
    "iterations",  # number of iterations the theorem requires
    "exact_divergence",  # exact Rényi divergence of a closed-form model (ground truth)
    "membership_advantage",  # advantage of any membership-inference test <= value
    "epsilon_lower_limit",  # no certificate with a privacy loss below value can hold
    "step_size",  # the step size the theorem prescribes, or its largest admissible value
    "gradient_complexity",  # per-example gradient computations (a count, or its growth order)
)


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
    def mp_function(self) -> Callable[..., Any]:
        """The formula as an mpmath function of the parameters (stable powers)."""
        return sp.lambdify(self._symbols, self._numeric_expression, modules=[MP_FUNCS, "mpmath"])

    @functools.cached_property
    def interval_function(self) -> Callable[..., Any]:
        """The formula as an mpmath interval function of the parameters (rigorous)."""
        return sp.lambdify(self._symbols, interval_ready(self._numeric_expression),
                           modules=[IV_FUNCS])

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
        if precision == "float":
            args = [to_float_array(values[n]) for n in self.parameter_names]
            value, underflow = call_float(self.float_function, args)
            if underflow:
                notes.append(
                    "float underflow: a term was rounded toward zero, so the float value may "
                    "lie below the exact one; re-evaluate with precision='mp' or 'interval'"
                )
            check_finite(self.id, value)
            notes.append(FLOAT_NOTE)
            return Evaluation(self, squeeze(value), "float", 16, None, None, tuple(notes), values)
        if precision == "mp":
            with mpmath.workdps(digits):
                args = [to_mp(values[n]) for n in self.parameter_names]
                value = self.mp_function(*args)
                check_finite(self.id, value)
            return Evaluation(self, value, "mp", digits, None, None, tuple(notes), values)
        with iv_precision(digits):
            args = [to_interval(values[n]) for n in self.parameter_names]
            enclosure = self.interval_function(*args)
            enclosure = mpmath.iv.mpf(enclosure)
        lo, hi = interval_endpoints(enclosure)
        if not (mpmath.isfinite(lo) and mpmath.isfinite(hi)):
            raise BoundError(f"{self.id}: interval evaluation is not finite ({enclosure})")
        mid = (lo + hi) / 2
        return Evaluation(self, mid, "interval", digits, lo, hi, tuple(notes), values)

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

    For ``precision == "interval"``, ``[lower, upper]`` encloses the exact value of the formula
    and ``upper`` is a certified upper bound. ``value`` is a float or numpy array for
    ``"float"``, an ``mpmath.mpf`` otherwise.
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

    def to_dict(self) -> dict[str, Any]:
        """The evaluation as plain JSON data (inputs, value, precision, notes)."""
        out: dict[str, Any] = {
            "bound": self.bound.id,
            "guarantee": self.bound.guarantee.kind,
            "precision": self.precision,
            "digits": self.digits,
            "inputs": {k: jsonable(v) for k, v in self.inputs.items()},
            "value": jsonable(self.value),
            "notes": list(self.notes),
            "provenance": self.bound.provenance(),
        }
        if self.precision == "mp":
            out["value_digits"] = mpmath.nstr(self.value, self.digits)
        if self.precision == "interval":
            out["interval"] = [mpmath.nstr(self.lower, self.digits), mpmath.nstr(self.upper, self.digits)]
            out["certified_upper"] = self.certified_upper
        return out


def describe_parameters(params: Iterable[Parameter]) -> list[str]:
    """One line per parameter: name, description and domain."""
    return [f"{p.name}: {p.description} ({p.domain_text()})" for p in params]
