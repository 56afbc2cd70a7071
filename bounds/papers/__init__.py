"""Declarations, one module per paper. Importing this package registers every bound."""

import bounds.papers.chourasia2023  # noqa: F401
from bounds.papers import chien2024, chien2024lu, neel2021  # noqa: F401
