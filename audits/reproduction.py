"""Registry of reproductions that run mechanisms (``unlearn reproduce ID --dataset ...``).

The bound engine keeps the reproductions that need only formulas
(:func:`bounds.registry.register_reproduction`); a reproduction that trains models and audits
them belongs here, contributed by an adapter module (which registers it on import, like an
adapter). This module names no algorithm: ``run`` receives the dataset choice, the trial count,
the device and the output folder, and returns a JSON-ready dict with ``summary`` (lines to print)
and ``files`` (what it wrote).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audits.registry import adapters

__all__ = ["EmpiricalReproduction", "empirical_reproductions", "get_empirical_reproduction",
           "register_empirical_reproduction"]


@dataclass(frozen=True)
class EmpiricalReproduction:
    """A figure or table reproduced by running mechanisms (and auditing them).

    ``run(dataset=(name, path), trials=N, device=..., out_dir=..., reduced=bool)``.
    """

    id: str
    title: str
    run: Callable[..., dict[str, Any]]


_REPRODUCTIONS: dict[str, EmpiricalReproduction] = {}


def register_empirical_reproduction(reproduction: EmpiricalReproduction) -> EmpiricalReproduction:
    if reproduction.id in _REPRODUCTIONS and _REPRODUCTIONS[reproduction.id] is not reproduction:
        raise ValueError(f"an empirical reproduction {reproduction.id!r} is already registered")
    _REPRODUCTIONS[reproduction.id] = reproduction
    return reproduction


def empirical_reproductions() -> dict[str, EmpiricalReproduction]:
    adapters()  # built-in adapter modules register their reproductions on import
    return dict(_REPRODUCTIONS)


def get_empirical_reproduction(reproduction_id: str) -> EmpiricalReproduction | None:
    return empirical_reproductions().get(reproduction_id)
