"""Certified bounds of unlearning algorithms, declared once and evaluated many ways.

Data path: a theorem (``bounds.papers.<paper>``) is a :class:`Bound`; its value is converted
(:mod:`bounds.conversions`) and inverted (:mod:`bounds.calibration`). Pure math: this package
never imports torch, :mod:`empirical` or :mod:`audits`.

A :class:`Bound` holds a paper's formula as a sympy expression with its citation, parameters,
preconditions and guarantee; from that one declaration come float (numpy, vectorised), mp
(mpmath at chosen digits) and interval (rigorous upper end) evaluations and LaTeX/text. Modules:

* :mod:`bounds.errors` - the error types;
* :mod:`bounds.declarations` - Citation, Parameter, Precondition, Guarantee, Bound, Evaluation;
* :mod:`bounds.registry` - register/get/list of bounds and reproductions;
* :mod:`bounds.plugins` - third-party bounds through the entry-point group ``unlearn_verify.bounds``;
* :mod:`bounds.values` - symbols and the resolution of user values;
* :mod:`bounds.numerics` - stable powers, interval helpers, directed rounding;
* :mod:`bounds.special` - special functions (Corollary 3.8's GeometricLogMeanExp);
* :mod:`bounds.backends` - the lambdify function tables of the three precisions;
* :mod:`bounds.expressions` - the safe parser of user formulas;
* :mod:`bounds.conversions`, :mod:`bounds.calibration` - Rényi to (epsilon, delta), inverses;
* :mod:`bounds.strategies` - hypothesis strategies of each theorem's valid domain.
"""

# Discovery of the papers happens here, once: each paper module registers its declarations on
# import. The engine never imports the papers, so the package has no import circle. Plug-ins
# (entry-point group unlearn_verify.bounds) load on the registry's first look-up after this.
import bounds.papers  # noqa: E402,F401,I001
from bounds.declarations import Bound
from bounds.evaluator import Evaluation
from bounds.errors import BoundError, PreconditionError, SolverError, UnknownBoundError
from bounds.registry import get, list_bounds, seal_builtins

seal_builtins()

__all__ = [
    "Bound",
    "BoundError",
    "Evaluation",
    "PreconditionError",
    "SolverError",
    "UnknownBoundError",
    "get",
    "list_bounds",
]
