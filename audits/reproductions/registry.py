"""The one registry of reproductions that run mechanisms (``unlearn reproduce ID``).

The bound engine keeps the reproductions that need only formulas
(:func:`bounds.registry.register_reproduction`); a reproduction that trains models, simulates an
attack or audits a mechanism belongs here, in one module per paper under
:mod:`audits.reproductions`, which registers it on import. The built-in modules are listed in
:mod:`audits.reproductions.builtin`. This module names no paper.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["REPRODUCE_OUT", "EmpiricalReproduction", "default_reproduction_dir",
           "empirical_reproductions", "get_empirical_reproduction", "register_empirical_reproduction",
           "summary_lines", "table_summary"]

REPRODUCE_OUT = Path("reproduce-out")


def default_reproduction_dir(reproduction_id: str) -> Path:
    """Where a reproduction writes without ``--out``: ``reproduce-out/<id>``, the id made one
    plain folder name as audits make theirs (characters other than letters, digits, ``-``,
    ``_`` and ``.``, and a leading dot, become ``_``): ``paper:fig1/variant`` writes to
    ``reproduce-out/paper_fig1_variant``."""
    safe = re.sub(r"^\.", "_", re.sub(r"[^\w.-]", "_", reproduction_id)[:100])
    return REPRODUCE_OUT / (safe or "reproduction")

_BUILTINS = "audits.reproductions.builtin"


_SKIPPED_IN_LABELS = ("published", "computed", "match", "truncated", "alpha", "certified_epsilon",
                      "delta", "first_request_epochs")


def table_summary(result: Mapping[str, Any]) -> str:
    """Terminal text of a table reproduction: its rows, published against computed."""
    lines = [f"{result['reproduction']}: {result['title']}", f"rule: {result['rule']}"]
    for row in result["rows"]:
        label = ", ".join(f"{k}={v}" for k, v in row.items() if k not in _SKIPPED_IN_LABELS)
        lines.append(f"  {label}: published {row['published']}, computed {row['computed']:.6g}"
                     f"  {'ok' if row['match'] else 'MISMATCH'}")
    lines.append(f"{result['matches']}/{result['total']} match")
    return "\n".join(lines)


def summary_lines(result: Mapping[str, Any]) -> str:
    """The terminal text of a result that carries its own ``summary`` lines."""
    return "\n".join(result["summary"])


@dataclass(frozen=True)
class EmpiricalReproduction:
    """A figure or table reproduced by running mechanisms (and auditing them).

    ``run(dataset=(name, path), trials=N, device=..., out_dir=..., reduced=bool[, setting=NAME])``
    returns the JSON-ready result, which ``summary`` turns into terminal text. A result with ``matches``
    and ``total`` passes when every row matches (``unlearn reproduce`` exits 1 otherwise).
    """

    id: str
    title: str
    run: Callable[..., dict[str, Any]]
    summary: Callable[[Mapping[str, Any]], str] = summary_lines
    # Named variants of the constants ``run(setting=NAME)`` accepts, the default first; empty
    # when the reproduction has one setting (``run`` is then never given ``setting``).
    settings: tuple[str, ...] = ()

    def passed(self, result: Mapping[str, Any]) -> bool:
        """Whether every row of ``result`` matched (True for results without rows to match)."""
        return result.get("matches") == result.get("total")


_REPRODUCTIONS: dict[str, EmpiricalReproduction] = {}
_loaded = False


def register_empirical_reproduction(reproduction: EmpiricalReproduction) -> EmpiricalReproduction:
    """Make ``reproduction`` known under its id; returns it. Refuses a second one of that id."""
    if reproduction.id in _REPRODUCTIONS and _REPRODUCTIONS[reproduction.id] is not reproduction:
        raise ValueError(f"an empirical reproduction {reproduction.id!r} is already registered")
    _REPRODUCTIONS[reproduction.id] = reproduction
    return reproduction


def empirical_reproductions() -> dict[str, EmpiricalReproduction]:
    """Every registered reproduction by id (built-ins first, in the order they registered)."""
    global _loaded
    if not _loaded:
        _loaded = True
        importlib.import_module(_BUILTINS)
    return dict(_REPRODUCTIONS)


def get_empirical_reproduction(reproduction_id: str) -> EmpiricalReproduction | None:
    """The reproduction registered as ``reproduction_id``, or None."""
    return empirical_reproductions().get(reproduction_id)
