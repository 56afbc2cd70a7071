"""The built-in algorithm adapters: importing this package registers each of them.

This is the one place that lists them (:mod:`audits.registry` imports it by name before its
first look-up). Adding a family: write ``audits/adapters/<name>.py`` that calls
:func:`audits.registry.register_adapter`, and import it below; see docs/adding-an-algorithm.md.
"""

from __future__ import annotations

from audits.adapters import (
    chien2024_fig3,  # noqa: F401  (registers the empirical Figure 3 reproductions)
    d2d,  # noqa: F401  (registers "d2d", Delete-to-Descent)
    langevin,  # noqa: F401  (registers "langevin", Langevin unlearning)
    pnsgd,  # noqa: F401  (registers "pnsgd", the default algorithm)
)
