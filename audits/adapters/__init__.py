"""Algorithm adapters: one module per algorithm family, plus the kit they share.

The kit: :mod:`~audits.adapters.protocol` is the seam (what the generic audit asks of an
algorithm), :mod:`~audits.adapters.base` the base class with every default,
:mod:`~audits.adapters.params`, :mod:`~audits.adapters.data`,
:mod:`~audits.adapters.certificates` and :mod:`~audits.adapters.mechanism` the plumbing by
concern. :mod:`audits.registry` imports every module here before its first look-up, so a new
adapter module is found without a list to edit.
"""
