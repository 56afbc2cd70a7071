"""Third-party extensions through Python entry points, loaded so that a broken one cannot break
the toolkit.

Two groups exist: ``unlearn_verify.bounds`` (modules that declare bounds; read by
:mod:`bounds.registry` on its first look-up) and ``unlearn_verify.algorithms`` (audit adapters;
read by :mod:`audits.registry`). :func:`load_group` imports every entry point of a group once;
a failure becomes one line naming the entry point (:func:`notes`), never an exception, and the
built-ins registered before it stay. The command line prints those lines as ``note: ...``.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import Any

__all__ = ["BOUNDS_GROUP", "ALGORITHMS_GROUP", "load_group", "notes"]

BOUNDS_GROUP = "unlearn_verify.bounds"
ALGORITHMS_GROUP = "unlearn_verify.algorithms"

_LOADED: set[str] = set()
_NOTES: list[str] = []
_NOTE_CHARS = 300  # a note stays one readable line whatever the plug-in raised


def _one_line(text: str) -> str:
    flat = "".join(ch if ch.isprintable() else " " for ch in " ".join(str(text).split()))
    return flat if len(flat) <= _NOTE_CHARS else flat[: _NOTE_CHARS - 3] + "..."


def _entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    # A distribution found twice on sys.path lists its entry points twice: load each once.
    seen: dict[tuple[str, str], importlib.metadata.EntryPoint] = {}
    for point in importlib.metadata.entry_points(group=group):
        seen.setdefault((point.name, point.value), point)
    return sorted(seen.values(), key=lambda p: (p.name, p.value))


def load_group(group: str, use: Callable[[Any], None] | None = None) -> tuple[str, ...]:
    """Load every entry point of ``group`` (once per process), in name order, and pass what
    each one names to ``use``; returns the names loaded. A failing entry point (import error,
    duplicate registration, anything ``use`` refuses) adds a note and is skipped."""
    if group in _LOADED:
        return ()
    _LOADED.add(group)
    try:
        points = _entry_points(group)
    except Exception as error:  # a malformed metadata file of some installed distribution
        _NOTES.append(_one_line(f"entry points of group {group} could not be read: "
                                f"{type(error).__name__}: {error}"))
        return ()
    loaded = []
    for point in points:
        try:
            target = point.load()
            if use is not None:
                use(target)
        except (Exception, SystemExit) as error:  # a plug-in is untrusted code: contain it
            _NOTES.append(_one_line(
                f"plug-in entry point '{point.name} = {point.value}' (group {group}) was not "
                f"loaded: {type(error).__name__}: {error}"))
        else:
            loaded.append(point.name)
    return tuple(loaded)


def notes() -> tuple[str, ...]:
    """One line per entry point that failed to load so far (empty when all loaded)."""
    return tuple(_NOTES)
