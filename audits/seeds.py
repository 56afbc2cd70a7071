"""Seeds of an audit's purposes (pilot trials, sample splits, bootstrap, replacements)."""

from __future__ import annotations

from empirical.engine.seeding import hash_seed

__all__ = ["derived_seed"]


def derived_seed(seed: int, label: str) -> int:
    """A 63-bit seed for one purpose of an audit (BLAKE2b of seed and label)."""
    return hash_seed(int(seed), label) >> 1
