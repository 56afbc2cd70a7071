"""The built-in reproductions: importing this module registers each paper's reproductions.

The one place that lists them (:mod:`audits.reproductions.registry` imports it by name before
its first look-up); ``unlearn reproduce`` lists them in this order.
"""

from __future__ import annotations

import importlib

PAPERS = (
    "guo2020",  # Figure 2: residuals over removals
    "chourasia2023",  # Section 3's adaptive attacks, simulated
    "chien2024",  # seed 000's Figure 3 panels, audited
)

for _paper in PAPERS:
    importlib.import_module(f"audits.reproductions.{_paper}")
