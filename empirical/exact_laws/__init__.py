"""Exact output laws of unlearning mechanisms on small one-dimensional instances, by density
propagation on a grid (not sampling), and the divergences between them.

Modules: ``grid`` (the laws and the noisy step), ``divergences`` (Rényi and hockey-stick
divergences, atoms included), ``truth`` (the exact curve with its grid-refinement error),
``noisy_gradient`` (the update rules the noisy-gradient methods share) and one module per
mechanism family that builds the two laws: ``chien2024``, ``chourasia2023``, ``neel2021``,
``koloskova2025``, ``guo2020``.
"""
