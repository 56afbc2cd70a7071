"""Certified bounds of unlearning algorithms, declared once and evaluated many ways.

Data path: a theorem (``bounds.papers.<paper>``) is a :class:`Bound`; its value is converted
(:mod:`bounds.conversions`) and inverted (:mod:`bounds.calibration`). Pure math: this package
never imports torch, :mod:`empirical` or :mod:`audits`.
"""

# Discovery of the papers happens here, once: each paper module registers its declarations on
# import. The engine never imports the papers, so the package has no import circle.
import bounds.papers  # noqa: E402,F401,I001
from bounds.engine import (
    Bound,
    BoundError,
    Evaluation,
    PreconditionError,
    SolverError,
    UnknownBoundError,
    get,
    list_bounds,
)

list = list_bounds  # noqa: A001  (mirrors ``unlearn bounds list``)

__all__ = [
    "Bound",
    "BoundError",
    "Evaluation",
    "PreconditionError",
    "SolverError",
    "UnknownBoundError",
    "get",
    "list",
    "list_bounds",
]
