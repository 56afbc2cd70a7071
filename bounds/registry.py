"""The registry of declared bounds and of published tables they reproduce.

Papers register themselves when imported; discovery happens once, in :mod:`bounds` (its
``__init__`` imports :mod:`bounds.papers`, which imports every module under it, then calls
:func:`seal_builtins`), never from here, so no import circle exists. Bounds of third-party
packages (entry-point group ``unlearn_verify.bounds``, :mod:`bounds.plugins`) are loaded on the
first look-up after that; a broken one is a note, never an error.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from bounds.declarations import Bound, Citation
from bounds.errors import UnknownBoundError
from bounds.plugins import BOUNDS_GROUP, load_group

_REGISTRY: dict[str, Bound] = {}
_ALIASES: dict[str, str] = {}
_BUILTINS: set[str] = set()  # ids and reproductions registered by bounds.papers
_sealed = False


def seal_builtins() -> None:
    """Record every bound and reproduction registered so far as built-in (called once the
    papers of :mod:`bounds.papers` are imported); plug-ins load only after this."""
    global _sealed
    _BUILTINS.update(_REGISTRY, _REPRODUCTIONS)
    _sealed = True


def load_plugins() -> None:
    """Load the bounds of the entry-point group ``unlearn_verify.bounds`` (once; every look-up
    does it first)."""
    if _sealed:  # never while the built-in papers are still registering
        load_group(BOUNDS_GROUP)


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
    load_plugins()
    key = _ALIASES.get(bound_id, bound_id)
    try:
        return _REGISTRY[key]
    except KeyError:
        close = [k for k in [*_REGISTRY, *_ALIASES] if k.split(":")[0] == bound_id.split(":")[0]]
        hint = f"; known for this paper: {', '.join(sorted(close))}" if close else ""
        raise UnknownBoundError(f"no bound {bound_id!r}{hint} (see 'unlearn bounds list')") from None


def list_bounds(paper: str | None = None, *, plugins: bool = True) -> list[Bound]:
    """Every declared bound, optionally only those of one paper, in declaration order (the
    built-ins first); ``plugins=False``: the built-in bounds only."""
    if plugins:
        load_plugins()
    out = [b for b in _REGISTRY.values() if plugins or b.id in _BUILTINS]
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
    """Register a paper-number reproduction under its id (refuses duplicates)."""
    if reproduction.id in _REPRODUCTIONS:
        raise ValueError(f"reproduction {reproduction.id!r} is already registered")
    _REPRODUCTIONS[reproduction.id] = reproduction
    return reproduction


def get_reproduction(reproduction_id: str) -> Reproduction:
    """The reproduction registered as ``reproduction_id`` (UnknownBoundError otherwise)."""
    load_plugins()
    try:
        return _REPRODUCTIONS[reproduction_id]
    except KeyError:
        raise UnknownBoundError(
            f"no reproduction {reproduction_id!r}; known: {', '.join(sorted(_REPRODUCTIONS))}"
        ) from None


def list_reproductions(*, plugins: bool = True) -> list[Reproduction]:
    """Every registered reproduction, in registration order; ``plugins=False``: the built-ins."""
    if plugins:
        load_plugins()
    return [r for r in _REPRODUCTIONS.values() if plugins or r.id in _BUILTINS]
