"""An algorithm's hyper-parameters, declared once: each field of a frozen dataclass carries its
help text and its check in the field's metadata (:func:`parameter`), and every reader takes
them from there: the dataclass's own validation (:class:`AlgorithmParameters`), the audit's
spec parser and ``unlearn audit algorithms`` (through :func:`parameter_help`).

Errors are :class:`ParameterError`, naming the field (``steps[1]`` for an entry of a list) and
the problem; the audit's spec parser prefixes the spec path (``spec.algorithm.steps[1]: ...``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "AlgorithmParameters",
    "Check",
    "ParameterError",
    "at_least",
    "check_parameters",
    "config_from",
    "counts",
    "flag",
    "noise_scale",
    "number",
    "one_of",
    "parameter",
    "parameter_help",
    "positive",
]

HELP = "help"
CHECK = "check"


class ParameterError(ValueError):
    """A hyper-parameter is invalid: ``field`` (with ``[i]`` for a list entry) and ``problem``."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(field, problem)  # both in args: the error pickles (worker processes)
        self.field = field
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}"


@dataclass(frozen=True)
class Check:
    """What one hyper-parameter must be. ``kind``: ``"number"`` (finite, within ``low``/``high``),
    ``"integer"`` (an int >= ``low``; bools refused), ``"counts"`` (one positive integer or a
    non-empty list of them, stored as a tuple), ``"choice"`` (one of ``choices``) or ``"flag"``
    (true or false). ``optional``: None is accepted; ``words``: strings accepted beside a number.
    ``what`` is how the error names a valid value (``must be <what>, got <value>``)."""

    kind: str
    what: str = ""
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    choices: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    optional: bool = False
    empty: str = "must list at least one value"

    def apply(self, value: Any, field: str) -> Any:
        """``value`` as stored (a list of counts becomes a tuple); ParameterError if invalid."""
        if value is None and self.optional:
            return value
        if isinstance(value, str) and value in self.words:
            return value
        if self.kind == "counts":
            return self._counts(value, field)
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise ParameterError(field, f"must be one of "
                                     f"{', '.join(repr(c) for c in self.choices)}, got {value!r}")
            return value
        if self.kind == "flag":
            if not isinstance(value, bool):
                raise ParameterError(field, f"must be true or false, got {value!r}")
            return value
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                self.kind == "integer" and not isinstance(value, int)):
            raise ParameterError(field, f"must be {self._what()}, got {value!r}")
        bad = not math.isfinite(value)
        if self.low is not None:
            bad = bad or value < self.low or (self.open_low and value == self.low)
        if self.high is not None:
            bad = bad or value > self.high
        if bad:
            raise ParameterError(field, f"must be {self._what()}, got {value!r}")
        return value

    def _what(self) -> str:
        if self.what:
            return self.what
        if self.kind == "integer":
            return "an integer" if self.low is None else f"an integer >= {self.low:g}"
        return "a number"

    def _counts(self, value: Any, field: str) -> Any:
        entry = Check("integer", what="a positive integer", low=1)
        if isinstance(value, list | tuple):
            if not value:
                raise ParameterError(field, self.empty)
            return tuple(entry.apply(k, f"{field}[{i}]") for i, k in enumerate(value))
        return entry.apply(value, field)


def number(*, what: str, low: float | None = None, high: float | None = None,
           open_low: bool = False, optional: bool = False,
           words: tuple[str, ...] = ()) -> Check:
    """A finite number within ``[low, high]`` (``(low, ...`` with ``open_low``)."""
    return Check("number", what=what, low=low, high=high, open_low=open_low, optional=optional,
                 words=words)


def positive(what: str = "a positive number", *, optional: bool = False,
             words: tuple[str, ...] = ()) -> Check:
    """A finite number > 0."""
    return number(what=what, low=0, open_low=True, optional=optional, words=words)


def at_least(low: int, what: str = "", *, optional: bool = False,
             words: tuple[str, ...] = ()) -> Check:
    """An integer >= ``low``."""
    return Check("integer", what=what, low=low, optional=optional, words=words)


def counts(*, empty: str, optional: bool = True) -> Check:
    """One positive integer, or a non-empty list of them (one per request; a tuple once stored)."""
    return Check("counts", empty=empty, optional=optional)


def one_of(*choices: str) -> Check:
    """One of the given strings."""
    return Check("choice", choices=tuple(choices))


def flag() -> Check:
    """True or false."""
    return Check("flag")


def parameter(default: Any = dataclasses.MISSING, *, help: str, check: Check | None = None
              ) -> Any:
    """A dataclass field declaring one hyper-parameter: its default, its one-line ``help`` (what
    ``unlearn audit algorithms`` prints) and its ``check``."""
    return dataclasses.field(default=default, metadata={HELP: help, CHECK: check})


def noise_scale() -> Any:
    """The ``noise_multiplier_scale`` field every mechanism under audit test declares: it
    multiplies every noise draw without changing the certificate (1: the real algorithm)."""
    return parameter(1.0, help="< 1 breaks the mechanism on purpose (tests of the audit)",
                     check=number(what="a number >= 0", low=0))


def parameter_help(params_type: type) -> dict[str, str]:
    """The declared help of every field of a hyper-parameter dataclass ("" where none)."""
    return {f.name: f.metadata.get(HELP, "") for f in dataclasses.fields(params_type)}


def check_parameters(params: Any) -> None:
    """Run every declared check on a frozen dataclass (normalised values stored back)."""
    for f in dataclasses.fields(params):
        check: Check | None = f.metadata.get(CHECK)
        if check is not None:
            value = getattr(params, f.name)
            stored = check.apply(value, f.name)
            if stored is not value:
                object.__setattr__(params, f.name, stored)


def config_from(config_type: type, params: Any, **resolved: Any) -> Any:
    """The mechanism's config (``config_type``, a dataclass) from the declared hyper-parameters:
    every config field ``params`` also declares, by the same name, unless ``resolved`` gives
    its value (a calibrated sigma, a step size read off the theorem, ...)."""
    names = {f.name for f in dataclasses.fields(config_type)}
    shared = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)
              if f.name in names and f.name not in resolved}
    return config_type(**shared, **resolved)


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


class AlgorithmParameters:
    """Base of an algorithm's frozen hyper-parameter dataclass whose fields are declared with
    :func:`parameter`: construction runs the declared checks (then :meth:`check_fields`, the
    cross-field rules of the subclass), and :meth:`to_dict` writes the spec's ``[algorithm]``
    table. ``name`` (a ClassVar the subclass sets) is the algorithm's one name: the spec's
    ``algorithm.name`` and the name of the adapter that runs it."""

    name: ClassVar[str]

    def __post_init__(self) -> None:
        check_parameters(self)
        self.check_fields()

    def check_fields(self) -> None:
        """Rules between fields, or beyond one field's check (none here); ParameterError."""

    def to_dict(self) -> dict[str, Any]:
        """The ``[algorithm]`` table, ``name`` included, as plain data (tuples as lists)."""
        return {"name": self.name, **{f.name: _plain(getattr(self, f.name))
                                      for f in dataclasses.fields(self)}}  # type: ignore[arg-type]

