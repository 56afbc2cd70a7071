"""Declarations: a theorem's citation, parameters, preconditions, guarantee (its kind a
:class:`GuaranteeKind`), and the :class:`Bound` holding its sympy expression. The float, mp and
interval evaluation derived from it, and the checked :class:`~bounds.evaluator.Evaluation`,
live in :mod:`bounds.evaluator`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from bounds.errors import BoundError
from bounds.evaluator import BoundEvaluator
from bounds.values import (
    LATEX_NAMES,
    exact_truth,
    format_float,
    is_exact,
    plain_text,
    real_symbol,
)


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

    ``kind`` is a :class:`GuaranteeKind` (its value, a string, is accepted); ``renyi_order``
    names the parameter that is the Rényi order when the value is a Rényi divergence bound.
    ``fixed_order_inputs`` names inputs that are themselves Rényi quantities valid at that one
    order (e.g. an RDP level ``eps0``): the value then holds at the order the caller gives, and
    conversions must not move it.
    """

    kind: GuaranteeKind
    description: str
    renyi_order: str | None = None
    fixed_order_inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in set(GuaranteeKind):
            raise ValueError(f"unknown guarantee kind {self.kind!r}; known: "
                             f"{', '.join(GuaranteeKind)}")
        object.__setattr__(self, "kind", GuaranteeKind(self.kind))

    @property
    def safe_end(self) -> str:
        """``"upper"``, ``"lower"`` or ``"both"``: which end of an enclosure errs safely."""
        return self.kind.safe_end


class GuaranteeKind(enum.StrEnum):
    """What kind of quantity a bound's value is; each kind knows its safe end
    (:attr:`safe_end`). A string enum: a kind compares equal to, and prints as, its value."""

    RENYI_UNLEARNING = "renyi_unlearning"  # d_alpha(unlearned, retrained) <= value
    RENYI_DP = "renyi_dp"  # (alpha, value)-RDP of the learning algorithm
    EPS_DELTA_UNLEARNING = "eps_delta_unlearning"  # (value, delta)-unlearning
    W_INFINITY = "w_infinity"  # W_infinity distance between two laws <= value
    SENSITIVITY = "sensitivity"  # L2 sensitivity, or L2 distance between two outputs, <= value
    EXCESS_RISK = "excess_risk"  # expected excess empirical risk <= value
    GRADIENT_RESIDUAL = "gradient_residual"  # norm of the gradient residual <= value
    RESIDUAL_BUDGET = "residual_budget"  # largest accumulated residual a noise level certifies
    UNLEARNING_DELTA = "unlearning_delta"  # delta (not epsilon) of (epsilon, delta)-unlearning
    NOISE_SCALE = "noise_scale"  # the noise standard deviation the theorem requires (sufficient)
    NOISE_FLOOR = "noise_floor"  # a necessary, not sufficient, noise level: sigma must exceed it
    ITERATIONS = "iterations"  # number of iterations the theorem requires
    EXACT_DIVERGENCE = "exact_divergence"  # exact Rényi divergence of a closed-form model
    MEMBERSHIP_ADVANTAGE = "membership_advantage"  # advantage of any membership test <= value
    EPSILON_LOWER_LIMIT = "epsilon_lower_limit"  # no certificate below value can hold
    STEP_SIZE = "step_size"  # the prescribed step size, or its largest admissible value
    GRADIENT_COMPLEXITY = "gradient_complexity"  # per-example gradients (a count or its order)

    @property
    def safe_end(self) -> str:
        """``"upper"``, ``"lower"`` or ``"both"``: which end of an enclosure errs safely."""
        return _SAFE_END[self]


# Which end of an enclosure is the safe one, by kind of quantity: an upper bound (a divergence,
# a distance or sensitivity, a residual, a sufficient noise level or iteration count) errs
# safely upward; a budget, a largest admissible step, or a limit below which something is
# impossible errs safely downward; an exact value or a cost has no safe side. Every kind is
# listed (checked below): a new kind must say which end is safe.
_SAFE_END: Mapping[GuaranteeKind, str] = {
    GuaranteeKind.RENYI_UNLEARNING: "upper", GuaranteeKind.RENYI_DP: "upper",
    GuaranteeKind.EPS_DELTA_UNLEARNING: "upper", GuaranteeKind.UNLEARNING_DELTA: "upper",
    GuaranteeKind.W_INFINITY: "upper", GuaranteeKind.SENSITIVITY: "upper",
    GuaranteeKind.EXCESS_RISK: "upper", GuaranteeKind.GRADIENT_RESIDUAL: "upper",
    GuaranteeKind.RESIDUAL_BUDGET: "lower", GuaranteeKind.NOISE_SCALE: "upper",
    GuaranteeKind.NOISE_FLOOR: "lower", GuaranteeKind.ITERATIONS: "upper",
    GuaranteeKind.EXACT_DIVERGENCE: "both", GuaranteeKind.MEMBERSHIP_ADVANTAGE: "upper",
    GuaranteeKind.EPSILON_LOWER_LIMIT: "lower", GuaranteeKind.STEP_SIZE: "lower",
    GuaranteeKind.GRADIENT_COMPLEXITY: "both",
}
if set(_SAFE_END) != set(GuaranteeKind):
    raise RuntimeError(f"guarantee kinds without a safe end: {set(GuaranteeKind) - set(_SAFE_END)}")


@dataclasses.dataclass(frozen=True)
class Bound(BoundEvaluator):
    """One theorem's bound, declared once (its evaluation: :class:`~bounds.evaluator.BoundEvaluator`).

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

def describe_parameters(params: Iterable[Parameter]) -> list[str]:
    """One line per parameter: name, description and domain."""
    return [f"{p.name}: {p.description} ({p.domain_text()})" for p in params]
