"""Versions: the toolkit's and the code's that decides stored numbers.

:func:`code_version` keys the chunk store (:mod:`audits.store`) and every cache of an audit: a
change to the code that computes, reduces or stores a trial's outputs changes it, so that a
stored chunk is never read back under code that would have computed it differently.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from pathlib import Path

__all__ = ["code_version", "toolkit_version"]

# Audit-side files whose code decides the numbers in the chunk store: the chunks (computed,
# reduced, stored; locally or on Ray), the attacks (which statistics are projected), the runner,
# spec, loader, store, protocols, datasets and seeds.
_CODE_FILES = ("audits/chunks.py", "audits/execution.py", "audits/ray_runner.py",
               "audits/attacks.py", "audits/runner.py", "audits/spec.py", "audits/loader.py",
               "audits/store.py", "audits/protocols.py", "audits/datasets.py", "audits/seeds.py")
_CODE_PACKAGES = ("empirical", "audits/adapters")


def toolkit_version() -> str:
    """The installed version of the toolkit (the source version in a checkout)."""
    try:
        return importlib.metadata.version("unlearn-verify")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        return "0.1.0"


@functools.cache
def code_version() -> str:
    """Toolkit version plus a hash of the code that produces trial outputs.

    Hashes the sources of :mod:`empirical` and of the audit files listed in ``_CODE_FILES``:
    a change there may change stored numbers, so it changes the chunk store's key. The bound
    engine is not hashed; its output (sigma, K) enters the key through the mechanism's
    fingerprint.
    """
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    files = [root / f for f in _CODE_FILES]
    for package in _CODE_PACKAGES:
        files += sorted((root / package).rglob("*.py"))
    for path in files:
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return f"{toolkit_version()}+src.{digest.hexdigest()[:12]}"
