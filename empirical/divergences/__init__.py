"""Estimators and tests of divergences between the laws of two worlds' outputs.

Plug-in and bootstrap estimators (:mod:`~empirical.divergences.estimators`), the hockey-stick
lower bound, and the Rényi tests of a certified curve: the histogram test, the directed test,
the entry that runs them on a pilot split and the reach of a design.
"""
