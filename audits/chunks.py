"""Chunks of trials: planned, computed and reduced to what the store keeps, and run locally.

A chunk is a pure function of (mechanism, seed, first trial, size) (:class:`ChunkPlan`), so
chunks can run in any order, on any worker (here in this process, :func:`run_local`, or as Ray
tasks, :mod:`audits.ray_runner`), and be stored and reused (:mod:`audits.execution` decides
which to run and reads them back).

With the projection attack, the pilot chunks store the exact column sums of each statistic
(:func:`audits.protocols.exact_column_sums`, from which the direction comes); every main chunk
then stores each statistic's projection on that direction (one number per trial and side),
the statistics themselves only when kept (:class:`Keep`). The reduction happens where the chunk
runs, in parts of at most :data:`PART_TRIALS` trials, so that a chunk never holds every
trial's statistics at once.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from audits import progress as progress_lines
from audits.protocols import TrialBatch, TrialMechanism, exact_column_sums, project_rows
from empirical.engine.memory import release_freed_memory

__all__ = ["MAIN", "PART_TRIALS", "PILOT", "PROJECTED", "SUMS", "ChunkBar", "ChunkPlan", "Keep",
           "compute_chunk", "decode_sums", "joined", "light", "plan_chunks", "planned",
           "printable", "run_local", "store_result", "work_estimate"]

PILOT, MAIN = "pilot", "audit"


def printable(text: str, limit: int = 80) -> str:
    """``text`` as one printable line of at most ``limit`` characters (control characters
    escaped), for progress lines and summaries that show names taken from a spec."""
    flat = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in str(text))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class ChunkBar:
    """Chunks done: progress lines with the time left (:func:`audits.progress.counted`) inside
    a reporting command, else a tqdm bar or a line rewritten in place."""

    def __init__(self, total: int, *, enabled: bool, label: str) -> None:
        label = printable(label)
        self.total, self.done, self.enabled, self.label = total, 0, enabled, label
        self._bar = None
        self._start = time.perf_counter()
        self._lines = enabled and progress_lines.active()
        if enabled and total and not self._lines:
            try:
                from tqdm import tqdm
            except ImportError:
                self._tty = sys.stderr.isatty()
            else:
                self._bar = tqdm(total=total, desc=label, unit="chunk", file=sys.stderr)

    def update(self, what: str) -> None:
        """One more chunk done (``what`` names it)."""
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self._start
        if self._lines:  # one line each, so that heartbeat lines cannot overwrite them
            progress_lines.counted(self.done, self.total,
                                   f"{self.done}/{self.total} chunks ({what}), {elapsed:.0f} s")
            return
        if self._bar is not None:
            self._bar.update(1)
            return
        line = f"{self.label}: {self.done}/{self.total} chunks ({what}), {elapsed:.0f} s"
        end = "\r" if self._tty and self.done < self.total else "\n"
        print(line, end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        """Close the bar, if one is drawn."""
        if self._bar is not None:
            self._bar.close()


def work_estimate(mechanism, todo: list[ChunkPlan]) -> str:
    """The work ahead, said before the first trial: trials and chunks, and what one trial costs
    when the mechanism says (its optional ``work_per_trial()``: (amount, unit))."""
    trials = sum(p.n_trials for p in todo)
    text = f"work ahead: {trials:,} trials in {len(todo):,} chunk(s)"
    work = getattr(mechanism, "work_per_trial", None)
    try:
        per_trial = work() if callable(work) else None
    except Exception:  # an estimate must never stop the audit
        per_trial = None
    if per_trial is not None:
        amount, unit = per_trial
        text += (f"; each trial about {amount:,.4g} {unit}, {amount * trials:,.4g} in all")
    return text


@dataclass(frozen=True)
class ChunkPlan:
    """One chunk: trials ``first_trial`` .. ``first_trial + n_trials - 1`` of ``phase`` (pilot or
    main), numbered ``chunk``, drawn with ``seed``."""

    phase: str
    chunk: int
    first_trial: int
    n_trials: int
    seed: int


def planned(plan: ChunkPlan) -> tuple[int, int, int]:
    """(first_trial, n_trials, seed) of a planned chunk, as the store checks a stored one."""
    return plan.first_trial, plan.n_trials, plan.seed


def plan_chunks(phase: str, n_trials: int, chunk_size: int, seed: int) -> list[ChunkPlan]:
    """``n_trials`` trials of ``phase`` cut into chunks of at most ``chunk_size``."""
    return [
        ChunkPlan(phase, index, start, min(chunk_size, n_trials - start), seed)
        for index, start in enumerate(range(0, n_trials, chunk_size))
    ]


def compute_chunk(mechanism: TrialMechanism, plan: ChunkPlan,
                  keep: Keep | None = None) -> tuple[dict[str, np.ndarray], float]:
    """Run one chunk; returns its arrays as stored (:func:`light`) and the seconds it took.

    With ``keep``, the trials run in parts of at most :data:`PART_TRIALS`, each reduced
    before the next one runs."""
    start = time.perf_counter()
    step = plan.n_trials if keep is None else min(plan.n_trials, PART_TRIALS)
    stop = plan.first_trial + plan.n_trials
    parts = []
    for first in range(plan.first_trial, stop, step):
        size = min(step, stop - first)
        batch = mechanism.run_trials(seed=plan.seed, first_trial=first, n_trials=size)
        if not isinstance(batch, TrialBatch):
            raise TypeError(f"run_trials must return a TrialBatch, got {type(batch).__name__}")
        if batch.n_trials != size:
            raise ValueError(f"run_trials returned {batch.n_trials} trials, {size} asked")
        parts.append(light(batch.to_arrays(), keep))
        del batch
    arrays = joined(parts)
    arrays["trial_index"] = np.arange(plan.first_trial, stop)
    return arrays, time.perf_counter() - start


# Most trials a chunk whose statistics are stored reduced asks of one run_trials call: the parts
# are reduced one by one, so that a chunk never holds every trial's statistics (a parameter
# vector per trial and side) at once. Trial i's outputs depend only on (seed, i), never on how
# trials are grouped into calls (the TrialMechanism contract), so the parts give the numbers one
# call gives.
PART_TRIALS = 500

# Kinds of stored arrays beside a side's scores and statistics (store format, not attack names).
PROJECTED = "projection"  # side.projection.STAT: a statistic's projected scores, per trial
SUMS = "column_sums"  # side.column_sums.STAT: its exact column sums over the chunk (hex text)


def encode_sums(sums: list[int]) -> np.ndarray:
    """Exact column sums as hex text (integers beyond 64 bits)."""
    return np.array([format(v, "x") for v in sums], dtype="S")


def decode_sums(array: np.ndarray) -> list[int]:
    """The exact column sums :func:`encode_sums` wrote."""
    return [int(v.decode("ascii"), 16) for v in np.asarray(array).tolist()]


@dataclass(frozen=True)
class Keep:
    """How chunks are stored with the projection attack: pilot statistics as exact column sums,
    main statistics projected on ``units`` (stat -> unit vector; None for pilot chunks), the
    statistics themselves too when ``statistics``."""

    units: dict[str, np.ndarray] | None
    statistics: bool


def light(arrays: dict[str, np.ndarray], keep: Keep | None) -> dict[str, Any]:
    """Consecutive trials' arrays reduced to what the store keeps (see :class:`Keep`); exact
    column sums as lists of integers (:func:`joined` adds those of a chunk's parts)."""
    if keep is None:
        return arrays
    has_scores = any(".scores." in key for key in arrays)
    out: dict[str, Any] = {}
    for key, array in arrays.items():
        side, _, rest = key.partition(".")
        kind, _, name = rest.partition(".")
        if kind != "statistics" or (keep.units is not None and name not in keep.units):
            out[key] = array
            continue
        if keep.units is None:
            out[f"{side}.{SUMS}.{name}"] = exact_column_sums(array)
        else:
            out[f"{side}.{PROJECTED}.{name}"] = project_rows(array, keep.units[name])
        if keep.statistics or not has_scores:
            out[key] = array
    return out


def joined(parts: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The reduced parts of a chunk (:func:`light`, consecutive trials) as the chunk's arrays:
    per-trial arrays concatenated, exact column sums added and encoded. Row-by-row projections
    and exact sums do not depend on where a chunk is cut, so the arrays are those of the whole
    chunk reduced at once."""
    out: dict[str, np.ndarray] = {}
    for key, first in parts[0].items():
        if f".{SUMS}." in key:
            out[key] = encode_sums([sum(column) for column in
                                    zip(*(part[key] for part in parts), strict=True)])
        else:
            out[key] = first if len(parts) == 1 else np.concatenate([p[key] for p in parts])
    return out


def store_result(sink, plan: ChunkPlan, arrays, seconds: float, worker: str) -> None:
    """Hand a computed chunk to ``sink`` (the chunk store, or memory), its exact sums marked as
    per-chunk arrays."""
    sink.put(phase=plan.phase, chunk=plan.chunk, first_trial=plan.first_trial,
             n_trials=plan.n_trials, seed=plan.seed, arrays=arrays, seconds=seconds,
             worker=worker, per_chunk=[k for k in arrays if f".{SUMS}." in k])


def run_local(mechanism, plans: list[ChunkPlan], sink, progress: ChunkBar,
              keep: Keep | None) -> None:
    """Compute ``plans`` one after the other in this process, each stored as it finishes."""
    for plan in plans:
        arrays, seconds = compute_chunk(mechanism, plan, keep)
        store_result(sink, plan, arrays, seconds, f"local pid {os.getpid()}")
        del arrays
        release_freed_memory()
        progress.update(f"{plan.phase} {plan.chunk}")


