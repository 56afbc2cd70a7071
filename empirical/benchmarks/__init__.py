"""Benchmarks behind ``unlearn bench``: measured ratios side by side in one run, never timed tests.

* :mod:`empirical.benchmarks.trials` - batched against per-trial PNSGD trials (``bench trials``);
* :mod:`empirical.benchmarks.power` - audit power on the Gaussian ground truth (``bench power``);
* :mod:`empirical.benchmarks.timing` - the fastest of a few runs of a call, as each benchmark times it.
"""
