"""The built-in reproductions: importing this module registers each paper's reproductions.

The one place that lists them (:mod:`audits.reproductions.registry` imports it by name before
its first look-up).
"""

from __future__ import annotations

from audits.reproductions import (  # noqa: F401  (each import registers its reproductions)
    chien2024,  # seed 000's Figure 3 panels
)
