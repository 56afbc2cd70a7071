"""Hyper-parameters of an adapter: the spec table in and out (:class:`AlgorithmParams`) and the
field checks most algorithms share."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from audits.fields import fail, from_fields, number, plain, positive_int

__all__ = [
    "AlgorithmParams",
    "counts",
    "flag",
    "noise_scale",
    "optional_sigma",
    "positive",
]

PARAMS_PATH = "spec.algorithm"


# ----------------------------------------------------------------------------------------------
# Hyper-parameters.


class AlgorithmParams:
    """Mixin of an adapter's frozen hyper-parameter dataclass: spec table in, spec table out.

    The subclass sets ``name: ClassVar[str]`` (the spec's ``algorithm.name``) and validates
    its fields in ``__post_init__``.
    """

    name: ClassVar[str]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = PARAMS_PATH) -> Any:
        """The hyper-parameters of a spec's ``[algorithm]`` table; SpecError naming ``path`` if bad."""
        return from_fields(cls, data, path)

    def to_dict(self) -> dict[str, Any]:
        """The ``[algorithm]`` table, ``name`` included, as plain data."""
        return {"name": self.name, **{f.name: plain(getattr(self, f.name))
                                      for f in dataclasses.fields(self)}}  # type: ignore[arg-type]


def positive(value: Any, field: str, what: str = "a positive number") -> float:
    """``spec.algorithm.<field>`` must be a finite number > 0."""
    return number(value, f"{PARAMS_PATH}.{field}", low=0, open_low=True, what=what)


def optional_sigma(value: Any, field: str = "sigma") -> None:
    """A noise level that may be left out (then it is calibrated from the target)."""
    if value is not None:
        positive(value, field, "a positive number (or left out to calibrate it)")


def noise_scale(value: Any) -> None:
    """``noise_multiplier_scale``: >= 0; below 1 breaks the mechanism on purpose."""
    number(value, f"{PARAMS_PATH}.noise_multiplier_scale", low=0, what="a number >= 0")


def flag(value: Any, field: str) -> None:
    """``spec.algorithm.<field>`` must be true or false."""
    if not isinstance(value, bool):
        raise fail(f"{PARAMS_PATH}.{field}", f"must be true or false, got {value!r}")


def counts(params: Any, field: str, *, empty: str) -> None:
    """One positive integer, or a non-empty list of them (one per request), or None.

    A list is stored as a tuple on the frozen ``params`` (so the spec hashes and compares).
    """
    value = getattr(params, field)
    path = f"{PARAMS_PATH}.{field}"
    if isinstance(value, list | tuple):
        if not value:
            raise fail(path, empty)
        object.__setattr__(params, field, tuple(
            positive_int(k, f"{path}[{i}]") for i, k in enumerate(value)))
    elif value is not None:
        positive_int(value, path)
