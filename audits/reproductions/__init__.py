"""Published tables and figures recomputed by running mechanisms and auditing them.

:mod:`~audits.reproductions.registry` holds the protocol and the one registry that
``unlearn reproduce`` dispatches through; one module per paper registers its reproductions.
"""
