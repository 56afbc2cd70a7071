"""Declarations, one module per paper. Importing this package registers every bound.

Discovery is automatic: every module and package under ``bounds/papers/`` is imported, in name
order (a package before its modules), so a new paper is a new file and nothing else here. A
paper whose solvers outgrow its declarations is a package: its ``__init__`` declares the bounds
and a sibling module holds the solvers and the reproductions of its printed numbers. The import
order is the order ``unlearn bounds list`` and ``unlearn reproduce`` list them in.
"""

import importlib
import pkgutil


def _import_every_paper() -> tuple[str, ...]:
    # walk_packages yields a package, then (after importing it) its own modules, each level
    # in name order: the same order on every platform.
    return tuple(importlib.import_module(info.name).__name__
                 for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."))


PAPER_MODULES = _import_every_paper()
