"""Algorithm adapters: one module per algorithm family, plus the kit they share.

:mod:`~audits.adapters.protocol` is the seam (what the generic audit asks of an algorithm),
:mod:`~audits.adapters.base` the plumbing every adapter reuses, and
:mod:`~audits.adapters.builtin` the list of built-in adapters that :mod:`audits.registry` loads.
"""
