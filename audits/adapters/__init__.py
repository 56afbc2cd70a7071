"""Algorithm adapters: one module per algorithm family, plus the kit they share.

The kit: :mod:`~audits.adapters.protocol` is the seam (what the generic audit asks of an
algorithm), :mod:`~audits.adapters.base` the base class with every default,
:mod:`~audits.adapters.data`, :mod:`~audits.adapters.certificates`,
:mod:`~audits.adapters.mechanism` and :mod:`~audits.adapters.worst_case` the plumbing by
concern. :mod:`audits.registry` imports every module here before its first look-up, so a new
adapter module is found without a list to edit. An algorithm's hyper-parameters are declared
once, with :mod:`empirical.mechanisms.parameters`.
"""
