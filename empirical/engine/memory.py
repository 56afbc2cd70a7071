"""The C heap while batched trials compute: keep its freed top, hand it back afterwards.

Batched trials allocate and free tensors of a few MB at every step. glibc returns a freed heap
top above its trim threshold (128 KiB by default) to the system at each ``free``, and the next
step faults the same pages in again; blocks above its mmap threshold are fresh mappings, faulted
in page by page. :func:`heap_top_kept` raises both thresholds while trials compute, and
:func:`release_freed_memory` hands the freed pages back once they are done. Audits
(:mod:`audits.execution`) and the benchmarks run their trials in the same regime. Numbers are
unaffected; without glibc both do nothing.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["heap_top_kept", "release_freed_memory"]

# glibc's mallopt options M_TRIM_THRESHOLD and M_MMAP_THRESHOLD, and their documented
# defaults (128 KiB each).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _DEFAULT_THRESHOLD = -1, -3, 128 * 1024
# Blocks from this size up are mapped and unmapped by themselves while trials compute: glibc's
# largest dynamic mmap threshold on 64-bit systems (32 MiB), so a step's temporaries, each a few
# MB, come from the heap and are reused by the next step.
_TRIAL_MMAP_THRESHOLD = 32 * 1024 * 1024


@functools.cache
def _glibc(name: str) -> Any:
    """A function of the glibc already loaded, with its C signature (None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        # the libc already loaded: ctypes.util.find_library would fork ldconfig, a child that
        # shows this whole process's resident set until it execs
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):  # not glibc
        return None
    arguments = {"malloc_trim": [ctypes.c_size_t], "mallopt": [ctypes.c_int, ctypes.c_int]}
    function.argtypes, function.restype = arguments[name], ctypes.c_int
    return function


@contextlib.contextmanager
def heap_top_kept() -> Iterator[None]:
    """While trials compute, a step's temporaries come from the heap, and ``free`` never
    shrinks it: the freed pages are handed back by :func:`release_freed_memory` after each
    chunk instead of at every step of every trial.

    Both glibc thresholds are set, because setting either one freezes glibc's dynamic mmap
    threshold wherever it stood: at its 128 KiB start, every temporary of a few MB was a fresh
    mapping whose pages faulted in at each step. Measured on the PNSGD benchmark's 1000 trials
    (2 cores): 0.2 to 1.2 million minor faults and 0.7 to 2.5 s per run when a run found the
    threshold low, against a few thousand faults and 0.35 to 0.5 s with both set.

    Afterwards the trim threshold is glibc's default again, so that later frees shrink the
    heap (the demo's report phase then peaks about 3 MiB lower than with the heap kept), and
    the mmap threshold stays at 32 MiB: glibc cannot be told to adapt it again, and frozen at
    its 128 KiB start it would leave later torch work in the process mapping and faulting in
    its temporaries (the MLP mechanism ran at 700 rather than 1,500 to 1,900 models/s)."""
    mallopt = _glibc("mallopt")
    if mallopt is None:
        yield
        return
    mallopt(_M_MMAP_THRESHOLD, _TRIAL_MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, 2**30)
    try:
        yield
    finally:
        mallopt(_M_TRIM_THRESHOLD, _DEFAULT_THRESHOLD)


def release_freed_memory() -> None:
    """Hand the heap pages freed by finished trials back to the system (glibc keeps them
    otherwise, and the torch temporaries of every chunk then pile up in the resident set until
    the report is drawn)."""
    trim = _glibc("malloc_trim")
    if trim is not None:
        trim(0)
