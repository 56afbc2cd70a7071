"""Declarations, one module per paper. Importing this package registers every bound."""

from bounds.papers import chien2024  # noqa: F401
