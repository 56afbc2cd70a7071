"""Empirical floor: batched (un)learning trials, attacks, statistics and divergence estimators.

This package never imports :mod:`bounds` or :mod:`audits`; certificates are joined to
experiments only in :mod:`audits`.
"""
