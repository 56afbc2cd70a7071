"""Field checks shared by audit specs and algorithm adapters.

Each check returns the normalised value or raises :class:`SpecError` (a ``ValueError``) whose
message starts with the field's path, e.g. ``spec.trials: must be a positive integer, got -3``.
A leaf module: it imports nothing from the toolkit, so adapters and the spec loader can both
use it without importing each other.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "SpecError",
    "check_keys",
    "choice",
    "fail",
    "from_fields",
    "integer",
    "names",
    "number",
    "plain",
    "positive_int",
]


class SpecError(ValueError):
    """A spec field is missing, unknown or invalid; the message starts with its path."""



def fail(path: str, message: str) -> SpecError:
    """A SpecError naming the spec field ``path``."""
    return SpecError(f"{path}: {message}")


def integer(value: Any, path: str, *, minimum: int | None = None, what: str = "") -> int:
    """``value`` as an int (bools refused), at least ``minimum`` when given; SpecError naming ``path``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(path, f"must be {what or 'an integer'}, got {value!r}")
    if minimum is not None and value < minimum:
        raise fail(path, f"must be {what or f'an integer >= {minimum}'}, got {value!r}")
    return value


def positive_int(value: Any, path: str) -> int:
    """``value`` as an int >= 1; SpecError naming ``path``."""
    return integer(value, path, minimum=1, what="a positive integer")


def number(
    value: Any,
    path: str,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    what: str = "",
) -> float:
    """``value`` as a finite float within the given bounds; SpecError naming ``path``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(path, f"must be {what or 'a number'}, got {value!r}")
    number = float(value)
    bad = not math.isfinite(number)
    if low is not None:
        bad = bad or number < low or (open_low and number == low)
    if high is not None:
        bad = bad or number > high or (open_high and number == high)
    if bad:
        if not what:
            lo = "(" if open_low else "["
            hi = ")" if open_high else "]"
            what = f"a finite number in {lo}{low if low is not None else '-inf'}, "
            what += f"{high if high is not None else 'inf'}{hi}"
        raise fail(path, f"must be {what}, got {value!r}")
    return number


def choice(value: Any, path: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``; SpecError naming ``path`` otherwise."""
    if not isinstance(value, str) or value not in choices:
        raise fail(path, f"must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def names(value: Any, path: str, known: Mapping[str, str], *, allow_empty: bool = False):
    """A list of known names as a tuple (no repeats; empty only if allowed); SpecError naming
    ``path`` otherwise."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise fail(path, f"must be a list of names, got {value!r}")
    items = tuple(value)
    if not items and not allow_empty:
        raise fail(path, f"must name at least one of {', '.join(known)}")
    for i, item in enumerate(items):
        choice(item, f"{path}[{i}]", tuple(known))
    if len(set(items)) != len(items):
        raise fail(path, f"lists a name twice: {list(items)}")
    return items


def check_keys(data: Mapping[str, Any], path: str, known: Sequence[str]) -> None:
    """Refuse keys of ``data`` outside ``known`` (a typo must not be ignored)."""
    if not isinstance(data, Mapping):
        raise fail(path, f"must be a table of fields, got {type(data).__name__}")
    for key in data:
        if key not in known:
            raise fail(f"{path}.{key}", f"unknown field; known fields: {', '.join(known)}")


def from_fields(cls: type, data: Mapping[str, Any], path: str, **fixed: Any) -> Any:
    """The frozen dataclass ``cls`` from a spec table (unknown keys refused, errors naming ``path``)."""
    names = [f.name for f in dataclasses.fields(cls) if f.name not in fixed]
    check_keys(data, path, names)
    try:
        return cls(**data, **fixed)
    except TypeError as error:  # a field of the wrong shape, e.g. a table for a number
        raise fail(path, str(error)) from None


def plain(value: Any) -> Any:
    """``value`` as JSON-ready plain data (tuples, nested ones too, as lists)."""
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value
