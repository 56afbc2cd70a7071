"""The bound engine: a theorem is declared once, as a sympy expression, and evaluated many ways.

A :class:`Bound` holds the paper's formula as a sympy expression together with its citation,
its parameters and their domains, its preconditions and the guarantee it gives. From that one
declaration the engine derives

* ``float``: numpy evaluation, vectorised over array-valued parameters (fast, not rigorous);
* ``mp``: mpmath evaluation at a chosen number of significant digits;
* ``interval``: mpmath interval arithmetic; the upper end is a certified upper bound on the
  exact value of the formula at the given inputs;
* LaTeX and plain-text renderings.

Numerics: powers such as ``c**(2*K*n/b)`` are evaluated as ``exp(x * log1p(c - 1))`` so that
exponents up to 1e12 and contraction factors close to one neither overflow nor lose accuracy.
When a float evaluation underflows (a term rounded toward zero) the result says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any, Literal

import mpmath
import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1

Precision = Literal["float", "mp", "interval"]
PRECISIONS: tuple[str, ...] = ("float", "mp", "interval")

_FLOAT_NOTE = (
    "float evaluation: IEEE-754 round-to-nearest, so the direction of rounding is not "
    "controlled; use precision='interval' for a certified upper bound"
)


class BoundError(ValueError):
    """Base class of the errors raised by the bound engine."""


class UnknownBoundError(BoundError, KeyError):
    """No bound is registered under this id."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class PreconditionError(BoundError):
    """An input violates a parameter domain or a precondition of the theorem."""


class SolverError(BoundError):
    """An inverse problem (calibration, optimisation) has no admissible solution."""


# --------------------------------------------------------------------------------------------
# Declarations
# --------------------------------------------------------------------------------------------


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
        return _symbol(self.name)

    def domain_text(self) -> str:
        parts = []
        if self.lower is not None:
            parts.append(f"{self.name} {'>' if self.lower_open else '>='} {_fmt(self.lower)}")
        if self.upper is not None:
            parts.append(f"{self.name} {'<' if self.upper_open else '<='} {_fmt(self.upper)}")
        if self.integer:
            parts.append(f"{self.name} integer")
        return ", ".join(parts) if parts else f"{self.name} real"

    def violations(self, value: Any) -> list[str]:
        """Describe how ``value`` (scalar or array) leaves the domain; empty if it does not."""
        arr = np.asarray(value, dtype=float) if not _is_exact(value) else None
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
        return f"{_plain(self.relation)}  ({self.description})"


@dataclasses.dataclass(frozen=True)
class Guarantee:
    """What the value of a bound certifies.

    ``kind`` is one of :data:`GUARANTEE_KINDS`; ``renyi_order`` names the parameter that is the
    Rényi order when the value is a Rényi divergence bound.
    """

    kind: str
    description: str
    renyi_order: str | None = None

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
        return self.id.split(":", 1)[0]

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise BoundError(f"{self.id} has no parameter {name!r}; it takes {self.parameter_names}")

    def latex(self) -> str:
        return sp.latex(self.expression, symbol_names=_LATEX_NAMES)

    def text(self) -> str:
        return _plain(self.expression)

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
        return sp.lambdify(self._symbols, self._numeric_expression, modules=[_NUMPY_FUNCS, "numpy"])

    @functools.cached_property
    def mp_function(self) -> Callable[..., Any]:
        return sp.lambdify(self._symbols, self._numeric_expression, modules=[_MP_FUNCS, "mpmath"])

    @functools.cached_property
    def interval_function(self) -> Callable[..., Any]:
        return sp.lambdify(self._symbols, interval_ready(self._numeric_expression),
                           modules=[_IV_FUNCS])

    @functools.cached_property
    def _precondition_functions(self) -> list[tuple[Precondition, Callable[..., Any]]]:
        out = []
        for pre in self.preconditions:
            rel = pre.relation
            gap = sp.simplify(rel.rhs - rel.lhs) if not isinstance(rel, sp.Eq) else rel.lhs - rel.rhs
            out.append((pre, sp.lambdify(self._symbols, gap, modules=[_NUMPY_FUNCS, "numpy"])))
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
            args = [_to_float_array(values[n]) for n in self.parameter_names]
            value, underflow = _call_float(self.float_function, args)
            if underflow:
                notes.append(
                    "float underflow: a term was rounded toward zero, so the float value may "
                    "lie below the exact one; re-evaluate with precision='mp' or 'interval'"
                )
            _check_finite(self.id, value)
            notes.append(_FLOAT_NOTE)
            return Evaluation(self, _squeeze(value), "float", 16, None, None, tuple(notes), values)
        if precision == "mp":
            with mpmath.workdps(digits):
                args = [_to_mp(values[n]) for n in self.parameter_names]
                value = self.mp_function(*args)
                _check_finite(self.id, value)
            return Evaluation(self, value, "mp", digits, None, None, tuple(notes), values)
        with iv_precision(digits):
            args = [_to_iv(values[n]) for n in self.parameter_names]
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
        if all(_is_exact(values[n]) for n in self.parameter_names):
            subs = {_symbol(n): values[n] for n in self.parameter_names}
            for pre in self.preconditions:
                ok = _exact_truth(pre.relation, subs)
                if not ok:
                    raise PreconditionError(
                        f"{self.id} ({self.citation.label}): requires {_plain(pre.relation)} "
                        f"[{pre.description}]; got "
                        + ", ".join(
                            f"{s}={_fmt_exact(subs[_symbol(s)])}"
                            for s in sorted(x.name for x in pre.relation.free_symbols)
                        )
                    )
            return
        args = [_to_float_array(values[n]) for n in self.parameter_names]
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
                    f"{self.id} ({self.citation.label}): requires {_plain(rel)} "
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
        out: dict[str, Any] = {
            "bound": self.bound.id,
            "guarantee": self.bound.guarantee.kind,
            "precision": self.precision,
            "digits": self.digits,
            "inputs": {k: _jsonable(v) for k, v in self.inputs.items()},
            "value": _jsonable(self.value),
            "notes": list(self.notes),
            "provenance": self.bound.provenance(),
        }
        if self.precision == "mp":
            out["value_digits"] = mpmath.nstr(self.value, self.digits)
        if self.precision == "interval":
            out["interval"] = [mpmath.nstr(self.lower, self.digits), mpmath.nstr(self.upper, self.digits)]
            out["certified_upper"] = self.certified_upper
        return out


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------

_REGISTRY: dict[str, Bound] = {}
_ALIASES: dict[str, str] = {}


def register(bound: Bound) -> Bound:
    """Add a declaration to the registry (ids and aliases must be new)."""
    for key in (bound.id, *bound.aliases):
        if key in _REGISTRY or key in _ALIASES:
            raise ValueError(f"bound id {key!r} is already registered")
        if not re.fullmatch(r"[a-z0-9]+:[A-Za-z0-9.+/_-]+", key):
            raise ValueError(f"bound id {key!r} is not of the form paper:label")
    _REGISTRY[bound.id] = bound
    for alias in bound.aliases:
        _ALIASES[alias] = bound.id
    return bound


def get(bound_id: str) -> Bound:
    """The bound declared under ``bound_id`` (or one of its aliases)."""
    _load_papers()
    key = _ALIASES.get(bound_id, bound_id)
    try:
        return _REGISTRY[key]
    except KeyError:
        close = [k for k in [*_REGISTRY, *_ALIASES] if k.split(":")[0] == bound_id.split(":")[0]]
        hint = f"; known for this paper: {', '.join(sorted(close))}" if close else ""
        raise UnknownBoundError(f"no bound {bound_id!r}{hint} (see 'unlearn bounds list')") from None


def list_bounds(paper: str | None = None) -> list[Bound]:
    """Every declared bound, optionally only those of one paper, in declaration order."""
    _load_papers()
    out = list(_REGISTRY.values())
    if paper is not None:
        out = [b for b in out if b.paper == paper or any(a.startswith(paper + ":") for a in b.aliases)]
        if not out:
            papers = sorted({b.paper for b in _REGISTRY.values()})
            raise UnknownBoundError(f"no paper {paper!r}; known papers: {', '.join(papers)}")
    return out


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """A published table or figure that the declarations must reproduce.

    ``run()`` returns a dict with ``rows`` (each with ``published``, ``computed`` and ``match``),
    ``matches`` and ``total``; ``rule`` says how a computed value is compared to the print.
    """

    id: str
    title: str
    citation: Citation
    rule: str
    run: Callable[[], dict[str, Any]]


_REPRODUCTIONS: dict[str, Reproduction] = {}


def register_reproduction(reproduction: Reproduction) -> Reproduction:
    if reproduction.id in _REPRODUCTIONS:
        raise ValueError(f"reproduction {reproduction.id!r} is already registered")
    _REPRODUCTIONS[reproduction.id] = reproduction
    return reproduction


def get_reproduction(reproduction_id: str) -> Reproduction:
    _load_papers()
    try:
        return _REPRODUCTIONS[reproduction_id]
    except KeyError:
        raise UnknownBoundError(
            f"no reproduction {reproduction_id!r}; known: {', '.join(sorted(_REPRODUCTIONS))}"
        ) from None


def list_reproductions() -> list[Reproduction]:
    _load_papers()
    return list(_REPRODUCTIONS.values())


def _load_papers() -> None:
    import bounds.papers  # noqa: F401  (declarations register themselves on import)


# --------------------------------------------------------------------------------------------
# Special functions with one implementation per backend
# --------------------------------------------------------------------------------------------


class GeometricLogMeanExp(sp.Function):
    """``log( (1/P) * sum_{k=0}^{P-1} exp(q * min(r**k * A, cap)**2) )``.

    The log-mean-exp over the batch positions of the replaced point that appears when the
    Rényi bound is averaged over a uniformly random cyclic batch order (Chien et al. 2024,
    Corollary 3.8). Evaluated with a max-shift so that large exponents cannot overflow.
    Arguments: ``(q, A, r, P, cap)``.
    """

    nargs = 5

    def _latex(self, printer: Any) -> str:
        q, a, r, p, cap = (printer._print(x) for x in self.args)
        return (
            rf"\log\left(\frac{{1}}{{{p}}}\sum_{{k=0}}^{{{p}-1}} "
            rf"e^{{{q}\,\min\left(\left({r}\right)^{{k}} {a},\ {cap}\right)^{{2}}}}\right)"
        )

    def _sympystr(self, printer: Any) -> str:
        q, a, r, p, cap = (printer._print(x) for x in self.args)
        return f"log((1/({p}))*Sum(exp({q}*min(({r})**k*{a}, {cap})**2), (k, 0, {p} - 1)))"


def _glme_float(q: Any, a: Any, r: Any, p: Any, cap: Any) -> Any:
    q, a, r, p, cap = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q, a, r, p, cap)))
    out = np.empty(q.shape)
    for idx in np.ndindex(q.shape):
        k = np.arange(int(p[idx]), dtype=float)
        with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
            powers = np.where(k == 0, 1.0, np.exp(k * np.log(r[idx])))
            z = np.minimum(powers * a[idx], cap[idx])
        terms = q[idx] * z * z
        # The k = 0 term is the largest (r <= 1, q >= 0): log-mean-exp as
        # shift + log1p(mean(expm1(t - shift))) keeps full relative accuracy for small values.
        out[idx] = terms[0] + np.log1p(np.mean(np.expm1(terms - terms[0])))
    return out if out.shape else float(out)


def _glme_generic(ctx: Any, q: Any, a: Any, r: Any, p: Any, cap: Any) -> Any:
    count = int(mpmath.nint(_midpoint(p)))
    terms = []
    rk = ctx.mpf(1)
    for _ in range(count):
        z = _min2(ctx, rk * a, cap)
        terms.append(q * z * z)
        rk = rk * r
    shift = terms[0]  # k = 0 gives the largest term: r <= 1 and q >= 0
    if ctx is mpmath.iv:
        total = ctx.mpf(0)
        for t in terms:
            total += ctx.exp(t - shift)
        return shift + ctx.log(total / count)
    mean = ctx.fsum(ctx.expm1(t - shift) for t in terms) / count
    return shift + ctx.log1p(mean)


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


def _midpoint(x: Any) -> Any:
    if type(x).__name__ == "ivmpf":
        lo, hi = interval_endpoints(x)
        return (lo + hi) / 2
    return x


def _min2(ctx: Any, x: Any, y: Any) -> Any:
    if ctx is mpmath.iv:
        (xa, xb), (ya, yb) = interval_endpoints(x), interval_endpoints(y)
        return mpmath.iv.mpf([min(xa, ya), min(xb, yb)])
    return x if x <= y else y


def _max2(ctx: Any, x: Any, y: Any) -> Any:
    if ctx is mpmath.iv:
        (xa, xb), (ya, yb) = interval_endpoints(x), interval_endpoints(y)
        return mpmath.iv.mpf([max(xa, ya), max(xb, yb)])
    return x if x >= y else y


def _reduce(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def apply(*args: Any) -> Any:
        return functools.reduce(fn, args)

    return apply




class Pow1p(sp.Function):
    """``(1 + y)**x`` evaluated as ``exp(x * log1p(y))``, with ``0**0 = 1`` (numeric code only)."""

    nargs = 2


class OneMinusPow1p(sp.Function):
    """``1 - (1 + y)**x`` evaluated as ``-expm1(x * log1p(y))`` (numeric code only)."""

    nargs = 2


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
    """
    if expr.is_Atom:
        return expr
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
    return node


def _pow1p_float(y: Any, x: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.exp(x * np.log1p(y))
    return np.where((y == -1) & (x == 0), 1.0, value)


def _one_minus_pow1p_float(y: Any, x: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        value = -np.expm1(x * np.log1p(y))
    return np.where((y == -1) & (x == 0), 0.0, value)


def _pow1p_mp(y: Any, x: Any) -> Any:
    if y == -1:
        return mpmath.mpf(1) if x == 0 else mpmath.mpf(0) if x > 0 else mpmath.inf
    return mpmath.exp(x * mpmath.log1p(y))


def _one_minus_pow1p_mp(y: Any, x: Any) -> Any:
    if y == -1:
        return 1 - _pow1p_mp(y, x)
    return -mpmath.expm1(x * mpmath.log1p(y))


def _pow1p_iv(y: Any, x: Any) -> Any:
    # The base 1 + y is a contraction factor c >= 0 by the theorems' preconditions, so
    # intersecting its enclosure with [0, inf) keeps the result rigorous.
    lo, hi = interval_endpoints(1 + mpmath.iv.mpf(y))
    x_lo, x_hi = interval_endpoints(x)
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


_NUMPY_FUNCS: dict[str, Any] = {
    "Pow1p": _pow1p_float,
    "OneMinusPow1p": _one_minus_pow1p_float,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "GeometricLogMeanExp": _glme_float,
}
_MP_FUNCS: dict[str, Any] = {
    "Pow1p": _pow1p_mp,
    "OneMinusPow1p": _one_minus_pow1p_mp,
    "log1p": mpmath.log1p,
    "expm1": mpmath.expm1,
    "Min": _reduce(lambda x, y: _min2(mpmath.mp, x, y)),
    "Max": _reduce(lambda x, y: _max2(mpmath.mp, x, y)),
    "GeometricLogMeanExp": lambda *a: _glme_generic(mpmath.mp, *a),
}
_IV_FUNCS: dict[str, Any] = {
    "Pow1p": lambda y, x: _pow1p_iv(y, x),
    "OneMinusPow1p": lambda y, x: 1 - _pow1p_iv(y, x),
    "exp": mpmath.iv.exp,
    "log": mpmath.iv.log,
    "sqrt": mpmath.iv.sqrt,
    "log1p": lambda x: mpmath.iv.log(1 + x),
    "expm1": lambda x: mpmath.iv.exp(x) - 1,
    "Min": _reduce(lambda x, y: _min2(mpmath.iv, x, y)),
    "Max": _reduce(lambda x, y: _max2(mpmath.iv, x, y)),
    "floor": lambda x: mpmath.iv.mpf([mpmath.floor(e) for e in interval_endpoints(x)]),
    "ceiling": lambda x: mpmath.iv.mpf([mpmath.ceil(e) for e in interval_endpoints(x)]),
    "pi": mpmath.iv.pi,
    "E": mpmath.iv.e,
    "GeometricLogMeanExp": lambda *a: _glme_generic(mpmath.iv, *a),
    "ExactRational": lambda p, q: mpmath.iv.mpf(int(p)) / int(q),
}


# --------------------------------------------------------------------------------------------
# Numeric helpers
# --------------------------------------------------------------------------------------------

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

_LATEX_NAMES: dict[sp.Symbol, str] = {}  # filled once _symbol exists


@functools.cache
def _symbol(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True)


_LATEX_NAMES.update({_symbol(k): v for k, v in _LATEX_NAMES_BY_NAME.items()})


def symbols(names: str) -> tuple[sp.Symbol, ...]:
    """Real sympy symbols by name, shared with :class:`Parameter` (``"alpha sigma eta"``)."""
    return tuple(_symbol(n) for n in names.split())


def _plain(expr: sp.Basic) -> str:
    return sp.sstr(expr)


def _fmt(x: float) -> str:
    return f"{x:g}"


def _fmt_exact(x: sp.Expr) -> str:
    if x.is_Integer:
        return str(int(x))
    return f"{float(x):.10g}"


def _is_exact(value: Any) -> bool:
    return isinstance(value, sp.Basic)


def _jsonable(v: Any) -> Any:
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
    if _NUMBER_RE.match(s):
        return sp.Rational(s)
    m = re.fullmatch(r"([+-]?\d+)\s*/\s*(\d+)", s)
    if m:
        return sp.Rational(int(m.group(1)), int(m.group(2)))
    return None


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
            parsed = parse_exact(raw)
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
            man, exp = raw.man_exp
            exact[name] = sp.Integer(int(man)) * sp.Integer(2) ** int(exp)
        elif isinstance(raw, (np.ndarray, list, tuple)):
            arr = np.asarray(raw, dtype=float)
            if not np.all(np.isfinite(arr)):
                raise PreconditionError(f"{prefix}{name} must be finite, got non-finite entries")
            exact[name] = arr
        else:
            raise BoundError(f"{prefix}{name} has unsupported type {type(raw).__name__}")
    local = {n: _symbol(n) for n in params}
    for _ in range(len(pending) + 1):
        progressed = False
        for name, text in list(pending.items()):
            try:
                expr = sp.sympify(text, locals=local, rational=True)
            except (sp.SympifyError, SyntaxError, TypeError) as exc:
                raise BoundError(f"{prefix}cannot parse {name}={text!r}") from exc
            deps = {s.name for s in expr.free_symbols}
            if deps - set(params):
                raise BoundError(f"{prefix}{name}={text!r} uses unknown names {sorted(deps - set(params))}")
            if all(d in exact and _is_exact(exact[d]) for d in deps):
                value = expr.subs({_symbol(d): exact[d] for d in deps})
                if not value.is_number or not value.is_real or not value.is_finite:
                    raise BoundError(f"{prefix}{name}={text!r} is not a real number")
                exact[name] = value
                del pending[name]
                progressed = True
        if not progressed:
            break
    if pending:
        raise BoundError(f"{prefix}cannot resolve {', '.join(f'{k}={v!r}' for k, v in pending.items())}")
    return exact


def _exact_truth(relation: sp.Basic, subs: Mapping[sp.Symbol, Any]) -> bool:
    value = relation.subs(subs)
    if value in (sp.true, sp.false):
        return bool(value)
    # Transcendental sides: decide with a rigorous interval enclosure of rhs - lhs.
    gap = (relation.rhs - relation.lhs).subs(subs)
    with iv_precision(60):
        lo, hi = interval_endpoints(
            sp.lambdify([], interval_ready(stabilise(gap)), modules=[_IV_FUNCS])()
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


def _to_float_array(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v
    return float(v)


def _to_mp(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        raise BoundError("array-valued parameters are only supported with precision='float'")
    if v.is_Rational:
        return mpmath.mpf(int(v.p)) / int(v.q)
    return sp.lambdify([], v, modules=[_MP_FUNCS, "mpmath"])()


def _to_iv(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        raise BoundError("array-valued parameters are only supported with precision='float'")
    if v.is_Rational:
        return mpmath.iv.mpf(int(v.p)) / int(v.q)
    return mpmath.iv.mpf(sp.lambdify([], interval_ready(stabilise(v)), modules=[_IV_FUNCS])())


def _call_float(fn: Callable[..., Any], args: list[Any]) -> tuple[Any, bool]:
    flags = {"underflow": False}

    def on_error(kind: str, _flag: int) -> None:
        if "underflow" in kind:
            flags["underflow"] = True

    with np.errstate(under="call", over="ignore", divide="ignore", invalid="ignore", call=on_error):
        value = fn(*args)
    return value, flags["underflow"]


def _check_finite(bound_id: str, value: Any) -> None:
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


def _squeeze(value: Any) -> Any:
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def interval_endpoints(x: Any) -> tuple[mpmath.mpf, mpmath.mpf]:
    """The two endpoints of an mpmath interval as exact ``mpf`` numbers."""
    x = mpmath.iv.mpf(x)
    # make_mpf wraps the raw endpoint without rounding it to the global precision.
    return mpmath.mp.make_mpf(x._mpi_[0]), mpmath.mp.make_mpf(x._mpi_[1])


def interval_min(x: Any, y: Any) -> Any:
    """Rigorous ``min`` of two mpmath intervals (endpoint-wise)."""
    return _min2(mpmath.iv, x, y)


def exact_interval(value: Any) -> Any:
    """An mpmath interval enclosing an exact input (number, Fraction, sympy value)."""
    resolved = resolve_values({"value": value})["value"]
    return _to_iv(resolved)


def float_up(x: Any) -> float:
    """The smallest float that is >= the mpmath number ``x``."""
    f = float(x)
    if mpmath.mpf(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def float_down(x: Any) -> float:
    """The largest float that is <= the mpmath number ``x``."""
    f = float(x)
    if mpmath.mpf(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


@contextlib.contextmanager
def iv_precision(digits: int) -> Iterator[None]:
    """Set mpmath's interval context to ``digits`` significant digits for a block."""
    saved = mpmath.iv.prec
    mpmath.iv.dps = digits
    try:
        yield
    finally:
        mpmath.iv.prec = saved


def describe_parameters(params: Iterable[Parameter]) -> list[str]:
    return [f"{p.name}: {p.description} ({p.domain_text()})" for p in params]
