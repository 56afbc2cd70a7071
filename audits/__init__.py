"""Audit runner: joins certified bounds to empirical trials and issues a verdict."""
