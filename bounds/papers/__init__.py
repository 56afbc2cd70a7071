"""Declarations, one module per paper. Importing this package registers every bound.

A paper whose solvers outgrow its declarations is a package: its ``__init__`` declares the bounds
and a sibling module holds the solvers and the reproductions of its printed numbers. The order
below is the order ``unlearn reproduce`` lists the formula reproductions in.
"""

from bounds.papers import chien2024  # noqa: F401, I001  (its schedules register right after it)
from bounds.papers.chien2024 import schedules  # noqa: F401  (Algorithm 6, Table 3, Figure 3d)
from bounds.papers import (  # noqa: F401
    chien2024lu,
    chourasia2023,
    gaussian,
    guo2020,
    koloskova2025,
    neel2021,
)
