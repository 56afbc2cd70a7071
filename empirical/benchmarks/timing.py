"""Wall time of a benchmark call: the fastest of a few runs, each in the heap regime of audits.

A shared machine only ever adds time to a run (another process held the core, a page was
faulted in), so the fastest of several runs is the best estimate of what the code costs, which
is what ``timeit`` reports too. Each path of a ratio is timed the same way, so a ratio compares
like with like. Runs repeat until :data:`MAX_RUNS` runs or :data:`RUN_BUDGET_SECONDS` of timed
calls, whichever comes first (one run of a call that takes longer). Every run computes in the
heap regime of an audit's chunks (:func:`empirical.engine.memory.heap_top_kept`) and hands the freed
heap back afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from empirical.engine.memory import heap_top_kept, release_freed_memory

__all__ = ["MAX_RUNS", "RUN_BUDGET_SECONDS", "Timed", "fastest_run"]

MAX_RUNS = 5
RUN_BUDGET_SECONDS = 2.0


@dataclass(frozen=True)
class Timed:
    """A call's result (of its first run), its fastest run and every run, in seconds."""

    result: Any
    seconds: float
    runs: tuple[float, ...]


def fastest_run(call: Callable[[], Any], *, max_runs: int = MAX_RUNS,
                budget_seconds: float = RUN_BUDGET_SECONDS,
                synchronize: Callable[[], None] | None = None) -> Timed:
    """Run ``call`` (a pure function of nothing: every run computes the same result) until
    ``max_runs`` runs or ``budget_seconds`` of runs, and time each; ``synchronize`` waits for
    an accelerator's queued work before a clock is read."""
    if max_runs < 1:
        raise ValueError(f"max_runs must be >= 1, got {max_runs}")
    result, runs = None, []
    while not runs or (len(runs) < max_runs and sum(runs) < budget_seconds):
        with heap_top_kept():
            start = time.perf_counter()
            value = call()
            if synchronize is not None:
                synchronize()
            runs.append(time.perf_counter() - start)
        if len(runs) == 1:
            result = value
        del value
        release_freed_memory()
    return Timed(result, min(runs), tuple(runs))
