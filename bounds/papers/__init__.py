"""Declarations, one module per paper. Importing this package registers every bound."""

from bounds.papers import (  # noqa: F401
    chien2024,
    chien2024lu,
    chourasia2023,
    gaussian,
    guo2020,
    koloskova2025,
    neel2021,
)
