"""The error types of the bound engine (leaf module: imports nothing from :mod:`bounds`)."""

from __future__ import annotations


class BoundError(ValueError):
    """Base class of the errors raised by the bound engine."""


class UnknownBoundError(BoundError, KeyError):
    """No bound is registered under this id."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class PreconditionError(BoundError):
    """An input violates a parameter domain or a precondition of the theorem."""


class SolverError(BoundError):
    """An inverse problem (calibration, optimisation) has no admissible solution."""
