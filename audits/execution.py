"""Which chunks of an audit run, where, and reading them back: the chunk store's checks, the
pilot before the main chunks, and the trials collected for the analysis.

Every chunk is a pure function of (mechanism, seed, first trial, size) (:mod:`audits.chunks`),
so chunks can run in any order, on any worker (:func:`audits.chunks.run_local`, or
:mod:`audits.ray_runner`), and be stored and reused: a killed audit resumes from its chunk store
(:mod:`audits.store`) and gives a bit-identical report.

The store keeps what the verdict and the report need. With the projection attack the pilot
chunks run first and store exact column sums, from which each statistic's direction comes;
the main chunks then store the statistics' projections on it (:class:`audits.chunks.Keep`).
The statistics themselves (a parameter vector per trial) are stored only with
``keep_statistics``, or when the mechanism returns no score (they are then all a side has).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audits import progress as progress_lines
from audits.chunks import (
    MAIN,
    PILOT,
    PROJECTED,
    SUMS,
    ChunkBar,
    ChunkPlan,
    Keep,
    decode_sums,
    plan_chunks,
    planned,
    run_local,
    work_estimate,
)
from audits.fields import SpecError
from audits.options import Backend, ExecutionOptions
from audits.protocols import TrialBatch, TrialMechanism, direction_from_sums
from audits.seeds import derived_seed
from audits.store import (
    STORE_NAME,
    ChunkStore,
    CorruptChunkError,
    StoreError,
    delete_store,
    inspect_store,
)
from audits.versions import code_version
from empirical.engine.memory import heap_top_kept, release_freed_memory

__all__ = ["ChunkResults", "resolve_device", "run_chunks"]


class _MemorySink:
    """The store's interface for audits without an output directory."""

    where = "memory"

    def __init__(self) -> None:
        self._chunks: dict[tuple[str, int], dict[str, np.ndarray]] = {}

    def finished(self) -> set[tuple[str, int]]:
        return set(self._chunks)

    def put(self, *, phase, chunk, arrays, **_: Any) -> None:
        self._chunks[(phase, chunk)] = dict(arrays)  # the same arrays the store would keep

    def arrays(self, plan: ChunkPlan) -> dict[str, np.ndarray]:
        return self._chunks[(plan.phase, plan.chunk)]


class _StoreSink:
    def __init__(self, store: ChunkStore) -> None:
        self.store = store
        self.where = str(store.path)

    def finished(self) -> set[tuple[str, int]]:
        return self.store.finished()

    def put(self, *, phase, chunk, first_trial, n_trials, seed, arrays, seconds, worker,
            per_chunk=()) -> None:
        self.store.put(phase=phase, chunk=chunk, first_trial=first_trial, n_trials=n_trials,
                       seed=seed, arrays=arrays, seconds=seconds, worker=worker,
                       per_chunk=per_chunk)

    def arrays(self, plan: ChunkPlan) -> dict[str, np.ndarray]:
        # the plan's trial count, not the stored one, bounds what the chunk's blobs may inflate to
        record = self.store.get(plan.phase, plan.chunk, planned=planned(plan))
        return dict(record.arrays)


def _execute(mechanism, plans: list[ChunkPlan], sink, *, options: ExecutionOptions, label: str,
             keep: Callable[[str], Keep | None] = lambda phase: None) -> tuple[int, str | None]:
    """Compute every plan not yet in ``sink``, pilot chunks first (``keep(phase)`` says how a
    phase's chunks are stored; for the main phase it is called once the pilot chunks are all
    stored); returns (chunks resumed, Ray description)."""
    progress = options.progress
    done = sink.finished()
    todo = [p for p in plans if (p.phase, p.chunk) not in done]
    if progress and len(todo) < len(plans):
        reused = len(plans) - len(todo)
        message = (f"reusing {reused} of {len(plans)} chunks already stored in {sink.where}; "
                   f"computing {len(todo)}" if todo else
                   f"all {len(plans)} chunks already stored in {sink.where}: nothing to compute")
        if progress_lines.active():
            progress_lines.announce(message)
        else:
            print(f"{label}: {message}", file=sys.stderr, flush=True)
    elif progress and todo:
        progress_lines.phase(f"computing {len(todo)} chunks of trials")
    bar = ChunkBar(len(todo), enabled=progress, label=label)
    if progress and todo and progress_lines.active():
        progress_lines.counted(0, len(todo), work_estimate(mechanism, todo))
    cluster = None
    try:
        for phase in (PILOT, MAIN):
            stage = [p for p in todo if p.phase == phase]
            how = keep(phase) if stage else None
            if stage and options.backend is Backend.LOCAL:
                run_local(mechanism, stage, sink, bar, how)
            elif stage:
                from audits.ray_runner import run_on_ray

                cluster = run_on_ray(mechanism, stage, sink, bar, address=options.ray_address,
                                     keep=how)
    finally:
        bar.close()
    return len(plans) - len(todo), cluster


@dataclass(frozen=True)
class _Phase:
    """A phase's stored chunks read back: the batch (what the analysis reads per trial), the
    projected statistics (stat -> (unlearned, retrained) scores) and the exact column sums
    (stat -> (unlearned, retrained) sums), each over all chunks."""

    batch: TrialBatch | None
    projected: dict[str, tuple[np.ndarray, np.ndarray]]
    sums: dict[str, tuple[list[int], list[int]]]


def _collect(sink, plans: list[ChunkPlan], phase: str) -> _Phase:
    parts, extras = [], []
    for plan in plans:
        if plan.phase != phase:
            continue
        arrays = sink.arrays(plan)
        expected = np.arange(plan.first_trial, plan.first_trial + plan.n_trials)
        if not np.array_equal(arrays.get("trial_index"), expected):
            raise ValueError(f"stored chunk {phase}/{plan.chunk} holds other trials than planned")
        extra = {k: v for k, v in arrays.items() if k.split(".")[1:2] in ([PROJECTED], [SUMS])}
        rest = {k: v for k, v in arrays.items() if k not in extra}
        if any(".scores." in k for k in rest):
            # statistics kept beside their projection or sums (keep_statistics) are not read
            # back, so chunks stored with and without them make one batch
            names = {k.split(".", 2)[2] for k in extra}
            rest = {k: v for k, v in rest.items()
                    if not (".statistics." in k and k.split(".", 2)[2] in names)}
        extras.append(extra)
        parts.append(TrialBatch.from_arrays(rest))
    if not parts:
        return _Phase(None, {}, {})
    if any(set(e) != set(extras[0]) for e in extras):
        raise ValueError(f"stored chunks of phase {phase} disagree on their projected statistics")
    projected: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    sums: dict[str, tuple[list[int], list[int]]] = {}
    for key in extras[0]:
        side, kind, name = key.split(".", 2)
        if side != "unlearned":
            continue
        pair = [[e[f"{s}.{kind}.{name}"] for e in extras] for s in ("unlearned", "retrained")]
        if kind == PROJECTED:
            projected[name] = (np.concatenate(pair[0]), np.concatenate(pair[1]))
        else:
            sums[name] = tuple([sum(col) for col in zip(*map(decode_sums, side_parts),
                                                      strict=True)]
                               for side_parts in pair)
    return _Phase(TrialBatch.concatenate(parts), projected, sums)


def resolve_device(device: str, backend: Backend) -> str:
    """The spec's device for this backend: ``auto`` picks CUDA when torch (or Ray) has one.

    Locally the device is checked by :func:`empirical.engine.trials.resolve_device` (the one place
    that knows what torch can run on); a Ray backend may have GPUs the driver does not see.
    """
    if device == "auto":
        import torch

        if torch.cuda.is_available():
            return "cuda"
        if backend == Backend.RAY:
            try:
                import ray

                if ray.is_initialized() and ray.cluster_resources().get("GPU", 0) >= 1:
                    return "cuda"
            except ImportError:
                pass
        return "cpu"
    if backend != Backend.RAY:
        from empirical.engine.trials import resolve_device as torch_device

        try:
            torch_device(device)
        except (RuntimeError, ValueError) as error:
            raise SpecError(f"spec.device: {device!r} cannot be used: {error}") from None
    return device


def _check_store(path: Path, *, audit_key: str, spec_json: str, replace: bool,
                 resume: bool, plans: list[ChunkPlan]) -> set[tuple[str, int]]:
    """Before anything is written: refuse a folder of another spec (unless ``replace``) and
    damaged chunks, or chunks other than ``plans`` say (unless ``resume``). Returns the damaged
    chunks to drop and recompute."""
    try:
        state = inspect_store(path, audit_key=audit_key, spec_json=spec_json,
                              planned={(p.phase, p.chunk): planned(p) for p in plans})
    except StoreError:
        # another schema, or a file sqlite cannot read: the refusal advises --replace, so
        # --replace must get past it (check_folder has accepted the folder as the toolkit's)
        if not replace:
            raise
        delete_store(path)
        return set()
    if state is None:
        return set()
    if state.other_specs and not replace:
        raise StoreError(f"{path.parent} holds the audit of a different spec; use another --out "
                         "folder, or --replace to delete it and start afresh")
    if state.bad and not resume:
        raise CorruptChunkError(path, list(state.bad))
    return {(phase, chunk) for phase, chunk, _ in state.bad}


@dataclass(frozen=True)
class ChunkResults:
    """What :func:`run_chunks` returns: the main and pilot batches, the main chunks' projected
    statistics (stat -> (unlearned, retrained) scores, direction norm), chunk counts, the pilot
    seed (None where no trials ran), where the chunks ran (None: locally) and notes for the
    report (stored chunks recomputed)."""

    main: TrialBatch
    pilot: TrialBatch | None
    projections: dict[str, tuple[np.ndarray, np.ndarray, float]]
    chunks: int
    resumed: int
    pilot_seed: int | None
    cluster: str | None
    notes: tuple[str, ...] = ()

    @classmethod
    def given(cls, batch: TrialBatch) -> ChunkResults:
        """Trials computed elsewhere (precomputed scores): no chunks, no pilot, no seeds."""
        return cls(batch, None, {}, 0, 0, None, None)


def run_chunks(mechanism: TrialMechanism, *, trials: int, pilot_trials: int, chunk_size: int,
               seed: int, out_dir: str | Path | None, audit_key: str, spec_json: str,
               options: ExecutionOptions, label: str, project: bool = False) -> ChunkResults:
    """Pilot and main trials of an audit, computed or read back from the chunk store.

    A store holding another spec's audit is refused unless ``options.replace`` (which deletes
    it). Stored chunks failing their checksum are refused, or with ``options.resume`` dropped and
    recomputed; either way they are named, and the recomputation is in the result's notes.
    Nothing is written to ``out_dir`` before these checks pass. ``project``: main chunks store
    their statistics projected on the pilot's direction (the projection attack), the statistics
    themselves only with ``options.keep_statistics``.
    """
    pilot_seed = derived_seed(seed, "pilot")
    plans = plan_chunks(PILOT, pilot_trials, chunk_size, pilot_seed) if pilot_trials else []
    plans += plan_chunks(MAIN, trials, chunk_size, seed)
    store = None
    notes: list[str] = []
    if out_dir is not None:
        path = Path(out_dir) / STORE_NAME
        bad = _check_store(path, audit_key=audit_key, spec_json=spec_json,
                           replace=options.replace, resume=options.resume, plans=plans)
        store = ChunkStore(path, audit_key=audit_key, spec_json=spec_json,
                           code_version=code_version())
        try:
            if options.replace and store.other_specs():
                store.drop_other_audits()
            if bad:
                store.drop(bad)
                named = ", ".join(f"{phase}/{chunk}" for phase, chunk in sorted(bad))
                message = (f"chunks {named} failed their SHA-256 checksum or the store's checks "
                           f"of their contents in {store.path} and were recomputed (--resume)")
                print(f"warning: {message}", file=sys.stderr)
                notes.append(message)
        except BaseException:
            store.close()
            raise
        sink: Any = _StoreSink(store)
    else:
        sink = _MemorySink()

    directions: dict[str, tuple[np.ndarray, float]] = {}

    def keep(phase: str) -> Keep | None:
        if not (project and pilot_trials):
            return None
        if phase == PILOT:
            return Keep(None, options.keep_statistics)
        directions.update(_directions(_collect(sink, plans, PILOT)))
        return Keep({name: unit for name, (unit, _) in directions.items()},
                    options.keep_statistics)

    try:
        with heap_top_kept():
            resumed, cluster = _execute(mechanism, plans, sink, options=options, label=label,
                                        keep=keep)
        pilot = _collect(sink, plans, PILOT) if pilot_trials else _Phase(None, {}, {})
        main = _collect(sink, plans, MAIN)
    finally:
        if store is not None:
            store.close()
    release_freed_memory()  # what reading the chunks back freed goes back before the analysis
    norms = {name: norm for name, (_, norm) in _directions(pilot).items()}
    projections = {name: (u, r, norms[name]) for name, (u, r) in main.projected.items()}
    return ChunkResults(main.batch, pilot.batch, projections, len(plans), resumed, pilot_seed,
                        cluster, tuple(notes))


def _directions(pilot: _Phase) -> dict[str, tuple[np.ndarray, float]]:
    """Each statistic's projection direction (unit vector, norm) from the pilot's exact sums."""
    if pilot.batch is None:
        return {}
    n = pilot.batch.n_trials
    return {name: direction_from_sums(u, n, r, n) for name, (u, r) in pilot.sums.items()}
