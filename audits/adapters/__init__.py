"""The built-in algorithm adapters: importing this package registers each of them.

This is the one place that lists them (:mod:`audits.registry` imports it by name before its
first look-up). Adding a family: write ``audits/adapters/<name>.py`` that calls
:func:`audits.registry.register_adapter`, and import it below; see docs/adding-an-algorithm.md.
"""

from __future__ import annotations

import audits.adapters.guo2020_newton  # noqa: F401  (registers "guo2020-newton")
import audits.adapters.koloskova  # noqa: F401  (registers the three Koloskova et al. 2025 adapters)
from audits.adapters import pnsgd  # noqa: F401  (registers "pnsgd", the default algorithm)
