"""The built-in algorithm adapters: importing this module registers each of them.

This is the one place that lists them (:mod:`audits.registry` imports it by name before its
first look-up). Adding a family: write ``audits/adapters/<name>.py`` that calls
:func:`audits.registry.register_adapter`, and import it below; see docs/adding-an-algorithm.md.
"""

from __future__ import annotations

from audits.adapters import (  # noqa: F401  (each import registers its adapter)
    d2d,  # "d2d", Delete-to-Descent
    guo2020_newton,  # "guo2020-newton", Guo et al. 2020 certified removal
    koloskova,  # "koloskova-gradient-clipping", "koloskova-model-clipping", "output-perturbation"
    langevin,  # "langevin", Langevin unlearning
    noisy_gd,  # "noisy-gd", Chourasia and Shah 2023
    pnsgd,  # "pnsgd", the default algorithm
)
