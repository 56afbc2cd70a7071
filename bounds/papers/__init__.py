"""Declarations, one module per paper. Importing this package registers every bound."""

from bounds.papers import chien2024, chien2024lu, gaussian, neel2021  # noqa: F401
