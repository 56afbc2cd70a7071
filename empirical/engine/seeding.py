"""Seed derivation by hashing, shared by the trial engine and the audit layer (no torch).

One function, :func:`hash_seed`, turns a tuple of labels into an unrelated 64-bit seed
(BLAKE2b of the labels joined by ``|``), so distinct purposes never share a random stream.
"""

from __future__ import annotations

import hashlib

__all__ = ["hash_seed"]


def hash_seed(*parts: int | str) -> int:
    """A 64-bit seed: BLAKE2b (8 bytes, little-endian) of ``"|".join(parts)``."""
    if not parts:
        raise ValueError("give at least one part to hash")
    message = "|".join(str(part) for part in parts).encode()
    return int.from_bytes(hashlib.blake2b(message, digest_size=8).digest(), "little")
