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

This module is the stable public face of the engine; the code lives along its seams:

* :mod:`bounds.errors` - the error types;
* :mod:`bounds.declarations` - Citation, Parameter, Precondition, Guarantee, Bound, Evaluation;
* :mod:`bounds.registry` - register/get/list of bounds and reproductions;
* :mod:`bounds.numerics` - stable powers, interval helpers, directed rounding;
* :mod:`bounds.special` - special functions (Corollary 3.8's GeometricLogMeanExp);
* :mod:`bounds.backends` - the lambdify function tables;
* :mod:`bounds.values` - symbols and the resolution of user values.
"""

from __future__ import annotations

from sympy.codegen.cfunctions import expm1

from bounds.backends import _IV_FUNCS, _MP_FUNCS, _NUMPY_FUNCS
from bounds.declarations import (
    _FLOAT_NOTE,
    GUARANTEE_KINDS,
    PRECISIONS,
    Bound,
    Citation,
    Evaluation,
    Guarantee,
    Parameter,
    Precision,
    Precondition,
    describe_parameters,
)
from bounds.errors import BoundError, PreconditionError, SolverError, UnknownBoundError
from bounds.numerics import (
    ExactRational,
    OneMinusPow1p,
    Pow1p,
    float_down,
    float_up,
    interval_endpoints,
    interval_min,
    interval_ready,
    iv_precision,
    stabilise,
)
from bounds.registry import (
    _ALIASES,
    _REGISTRY,
    _REPRODUCTIONS,
    Reproduction,
    get,
    get_reproduction,
    list_bounds,
    list_reproductions,
    register,
    register_reproduction,
)
from bounds.special import GeometricLogMeanExp
from bounds.values import (
    _LATEX_NAMES,
    _jsonable,
    _plain,
    _symbol,
    _to_iv,
    _to_mp,
    exact_interval,
    parse_exact,
    resolve_values,
    symbols,
    text_to_expression,
)

__all__ = [
    "GUARANTEE_KINDS", "PRECISIONS", "Bound", "BoundError", "Citation", "Evaluation",
    "ExactRational", "GeometricLogMeanExp", "Guarantee", "OneMinusPow1p", "Parameter", "Pow1p",
    "Precision", "Precondition", "PreconditionError", "Reproduction", "SolverError",
    "UnknownBoundError", "describe_parameters", "exact_interval", "float_down", "float_up", "get",
    "get_reproduction", "interval_endpoints", "interval_min", "interval_ready", "iv_precision",
    "list_bounds", "list_reproductions", "parse_exact", "register", "register_reproduction",
    "resolve_values", "stabilise", "symbols", "text_to_expression",
    "_ALIASES", "_FLOAT_NOTE", "_IV_FUNCS", "_LATEX_NAMES", "_MP_FUNCS", "_NUMPY_FUNCS",
    "_REGISTRY", "_REPRODUCTIONS", "_jsonable", "_plain", "_symbol", "_to_iv", "_to_mp", "expm1",
]
