"""Chunks of trials: plan, compute (locally or as Ray tasks), store, collect; code versions.

Every chunk is a pure function of (mechanism, seed, first trial, size), so chunks can run in any
order, on any worker, and be stored and reused: a killed audit resumes from its chunk store
(:mod:`audits.store`) and gives a bit-identical report.

The store keeps what the verdict and the report need. With the projection attack, the pilot
chunks run first and store the exact column sums of each statistic
(:func:`audits.protocols.exact_column_sums`, from which the direction comes); every main chunk
then stores each statistic's projection on that direction (one number per trial and side).
The statistics themselves (a parameter vector per trial) are stored only with
``keep_statistics``, or when the mechanism returns no score (they are then all a side has).
The reduction happens where the chunk runs, in parts of at most :data:`_PART_TRIALS` trials,
so that a chunk never holds every trial's statistics at once.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audits import progress as progress_lines
from audits.fields import SpecError
from audits.protocols import (
    TrialBatch,
    TrialMechanism,
    direction_from_sums,
    exact_column_sums,
    project_rows,
)
from audits.seeds import derived_seed
from audits.store import (
    STORE_NAME,
    ChunkStore,
    CorruptChunkError,
    StoreError,
    delete_store,
    inspect_store,
)
from empirical.engine.memory import heap_top_kept, release_freed_memory

__all__ = ["MAIN", "PILOT", "ChunkResults", "code_version", "resolve_device", "run_chunks",
           "toolkit_version"]

PILOT, MAIN = "pilot", "audit"
# Score-side files whose code decides the numbers in the chunk store.
_CODE_FILES = ("audits/execution.py", "audits/runner.py", "audits/spec.py", "audits/loader.py",
               "audits/store.py", "audits/protocols.py", "audits/datasets.py", "audits/seeds.py")
_CODE_PACKAGES = ("empirical", "audits/adapters")


# ----------------------------------------------------------------------------------------------
# Versions and seeds.


def toolkit_version() -> str:
    """The installed version of the toolkit (the source version in a checkout)."""
    try:
        return importlib.metadata.version("unlearn-verify")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        return "0.1.0"


@functools.cache
def code_version() -> str:
    """Toolkit version plus a hash of the code that produces trial outputs.

    Hashes the sources of :mod:`empirical` and of the audit runner, spec and store: a change
    there may change stored numbers, so it changes the chunk store's key. The bound engine is
    not hashed; its output (sigma, K) enters the key through the mechanism's fingerprint.
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


# ----------------------------------------------------------------------------------------------
# Progress (tqdm when installed, else one line on stderr; never required).


def printable(text: str, limit: int = 80) -> str:
    """``text`` as one printable line of at most ``limit`` characters (control characters
    escaped), for progress lines and summaries that show names taken from a spec."""
    flat = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in str(text))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class _Progress:
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
        if self._bar is not None:
            self._bar.close()


def _work_estimate(mechanism, todo: list[_Plan]) -> str:
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


# ----------------------------------------------------------------------------------------------
# Chunks: plan, compute (locally or as Ray tasks), store.


@dataclass(frozen=True)
class _Plan:
    phase: str
    chunk: int
    first_trial: int
    n_trials: int
    seed: int


def _planned(plan: _Plan) -> tuple[int, int, int]:
    """(first_trial, n_trials, seed) of a planned chunk, as the store checks a stored one."""
    return plan.first_trial, plan.n_trials, plan.seed


def _plan(phase: str, n_trials: int, chunk_size: int, seed: int) -> list[_Plan]:
    return [
        _Plan(phase, index, start, min(chunk_size, n_trials - start), seed)
        for index, start in enumerate(range(0, n_trials, chunk_size))
    ]


def _compute_chunk(mechanism: TrialMechanism, plan: _Plan,
                   keep: _Keep | None = None) -> tuple[dict[str, np.ndarray], float]:
    """Run one chunk; returns its arrays as stored (:func:`_light`) and the seconds it took.

    With ``keep``, the trials run in parts of at most :data:`_PART_TRIALS`, each reduced
    before the next one runs."""
    start = time.perf_counter()
    step = plan.n_trials if keep is None else min(plan.n_trials, _PART_TRIALS)
    stop = plan.first_trial + plan.n_trials
    parts = []
    for first in range(plan.first_trial, stop, step):
        size = min(step, stop - first)
        batch = mechanism.run_trials(seed=plan.seed, first_trial=first, n_trials=size)
        if not isinstance(batch, TrialBatch):
            raise TypeError(f"run_trials must return a TrialBatch, got {type(batch).__name__}")
        if batch.n_trials != size:
            raise ValueError(f"run_trials returned {batch.n_trials} trials, {size} asked")
        parts.append(_light(batch.to_arrays(), keep))
        del batch
    arrays = _joined(parts)
    arrays["trial_index"] = np.arange(plan.first_trial, stop)
    return arrays, time.perf_counter() - start


class _MemorySink:
    """The store's interface for audits without an output directory."""

    where = "memory"

    def __init__(self) -> None:
        self._chunks: dict[tuple[str, int], dict[str, np.ndarray]] = {}

    def finished(self) -> set[tuple[str, int]]:
        return set(self._chunks)

    def put(self, *, phase, chunk, arrays, **_: Any) -> None:
        self._chunks[(phase, chunk)] = dict(arrays)  # the same arrays the store would keep

    def arrays(self, plan: _Plan) -> dict[str, np.ndarray]:
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

    def arrays(self, plan: _Plan) -> dict[str, np.ndarray]:
        # the plan's trial count, not the stored one, bounds what the chunk's blobs may inflate to
        record = self.store.get(plan.phase, plan.chunk, planned=_planned(plan))
        return dict(record.arrays)


# Most trials a chunk whose statistics are stored reduced asks of one run_trials call: the parts
# are reduced one by one, so that a chunk never holds every trial's statistics (a parameter
# vector per trial and side) at once. Trial i's outputs depend only on (seed, i), never on how
# trials are grouped into calls (the TrialMechanism contract), so the parts give the numbers one
# call gives.
_PART_TRIALS = 500

_PROJECTION = "projection"  # side.projection.STAT: a statistic's projected scores, per trial
_SUMS = "column_sums"  # side.column_sums.STAT: its exact column sums over the chunk (hex text)


def _encode_sums(sums: list[int]) -> np.ndarray:
    return np.array([format(v, "x") for v in sums], dtype="S")


def _decode_sums(array: np.ndarray) -> list[int]:
    return [int(v.decode("ascii"), 16) for v in np.asarray(array).tolist()]


@dataclass(frozen=True)
class _Keep:
    """How chunks are stored with the projection attack: pilot statistics as exact column sums,
    main statistics projected on ``units`` (stat -> unit vector; None for pilot chunks), the
    statistics themselves too when ``statistics``."""

    units: dict[str, np.ndarray] | None
    statistics: bool


def _light(arrays: dict[str, np.ndarray], keep: _Keep | None) -> dict[str, Any]:
    """Consecutive trials' arrays reduced to what the store keeps (see :class:`_Keep`); exact
    column sums as lists of integers (:func:`_joined` adds those of a chunk's parts)."""
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
            out[f"{side}.{_SUMS}.{name}"] = exact_column_sums(array)
        else:
            out[f"{side}.{_PROJECTION}.{name}"] = project_rows(array, keep.units[name])
        if keep.statistics or not has_scores:
            out[key] = array
    return out


def _joined(parts: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The reduced parts of a chunk (:func:`_light`, consecutive trials) as the chunk's arrays:
    per-trial arrays concatenated, exact column sums added and encoded. Row-by-row projections
    and exact sums do not depend on where a chunk is cut, so the arrays are those of the whole
    chunk reduced at once."""
    out: dict[str, np.ndarray] = {}
    for key, first in parts[0].items():
        if f".{_SUMS}." in key:
            out[key] = _encode_sums([sum(column) for column in
                                     zip(*(part[key] for part in parts), strict=True)])
        else:
            out[key] = first if len(parts) == 1 else np.concatenate([p[key] for p in parts])
    return out


def _store_result(sink, plan: _Plan, arrays, seconds: float, worker: str) -> None:
    sink.put(phase=plan.phase, chunk=plan.chunk, first_trial=plan.first_trial,
             n_trials=plan.n_trials, seed=plan.seed, arrays=arrays, seconds=seconds,
             worker=worker, per_chunk=[k for k in arrays if f".{_SUMS}." in k])


def _run_local(mechanism, plans: list[_Plan], sink, progress: _Progress,
               keep: _Keep | None) -> None:
    for plan in plans:
        arrays, seconds = _compute_chunk(mechanism, plan, keep)
        _store_result(sink, plan, arrays, seconds, f"local pid {os.getpid()}")
        del arrays
        release_freed_memory()
        progress.update(f"{plan.phase} {plan.chunk}")


def _ray_chunk(mechanism, plan: _Plan, keep: _Keep | None = None):
    """Body of a Ray task (module-level so that workers import it by name)."""
    import socket

    arrays, seconds = _compute_chunk(mechanism, plan, keep)
    return arrays, seconds, f"ray {socket.gethostname()} pid {os.getpid()}"


def _run_ray(mechanism, plans: list[_Plan], sink, progress: _Progress, *,
             address: str | None, keep: _Keep | None = None) -> str:
    try:
        import ray
    except ImportError:
        raise ValueError("the Ray backend needs ray: pip install 'unlearn-verify[distributed]'") \
            from None
    started = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        except Exception as error:  # Ray raises many types; the user needs one line
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise RuntimeError(f"Ray could not start ({type(error).__name__}: {first[:200]}); "
                               "check --ray-address / RAY_ADDRESS or use --backend local") \
                from None
        started = True
    try:
        resources = ray.cluster_resources()
        wants_gpu = str(getattr(mechanism, "device", "cpu")).startswith("cuda")
        num_gpus = 1 if wants_gpu and resources.get("GPU", 0) >= 1 else 0
        if wants_gpu and not num_gpus:
            raise ValueError("the mechanism runs on CUDA but the Ray cluster has no GPU")
        task = ray.remote(num_cpus=1, num_gpus=num_gpus, max_retries=2)(_ray_chunk)
        shared = ray.put(mechanism)
        in_flight_limit = max(2, 2 * int(resources.get("CPU", 1)))
        queue = list(plans)
        pending: dict[Any, _Plan] = {}
        while queue or pending:
            while queue and len(pending) < in_flight_limit:
                plan = queue.pop(0)
                pending[task.remote(shared, plan, keep)] = plan
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                plan = pending.pop(ref)
                arrays, seconds, worker = ray.get(ref)
                _store_result(sink, plan, arrays, seconds, worker)
                progress.update(f"{plan.phase} {plan.chunk}")
        gpus = f", {int(resources.get('GPU', 0))} GPU" if resources.get("GPU") else ""
        return f"ray cluster ({int(resources.get('CPU', 0))} CPU{gpus})"
    finally:
        if started:
            ray.shutdown()


def _execute(mechanism, plans: list[_Plan], sink, *, backend: str, progress: bool,
             label: str, ray_address: str | None,
             keep: Callable[[str], _Keep | None] = lambda phase: None) -> tuple[int, str | None]:
    """Compute every plan not yet in ``sink``, pilot chunks first (``keep(phase)`` says how a
    phase's chunks are stored; for the main phase it is called once the pilot chunks are all
    stored); returns (chunks resumed, Ray description)."""
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
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
    bar = _Progress(len(todo), enabled=progress, label=label)
    if progress and todo and progress_lines.active():
        progress_lines.counted(0, len(todo), _work_estimate(mechanism, todo))
    cluster = None
    try:
        for phase in (PILOT, MAIN):
            stage = [p for p in todo if p.phase == phase]
            how = keep(phase) if stage else None
            if stage and backend == "local":
                _run_local(mechanism, stage, sink, bar, how)
            elif stage:
                cluster = _run_ray(mechanism, stage, sink, bar, address=ray_address, keep=how)
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


def _collect(sink, plans: list[_Plan], phase: str) -> _Phase:
    parts, extras = [], []
    for plan in plans:
        if plan.phase != phase:
            continue
        arrays = sink.arrays(plan)
        expected = np.arange(plan.first_trial, plan.first_trial + plan.n_trials)
        if not np.array_equal(arrays.get("trial_index"), expected):
            raise ValueError(f"stored chunk {phase}/{plan.chunk} holds other trials than planned")
        extra = {k: v for k, v in arrays.items() if k.split(".")[1:2] in ([_PROJECTION], [_SUMS])}
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
        if kind == _PROJECTION:
            projected[name] = (np.concatenate(pair[0]), np.concatenate(pair[1]))
        else:
            sums[name] = tuple([sum(col) for col in zip(*map(_decode_sums, side_parts),
                                                      strict=True)]
                               for side_parts in pair)
    return _Phase(TrialBatch.concatenate(parts), projected, sums)


def resolve_device(device: str, backend: str) -> str:
    """The spec's device for this backend: ``auto`` picks CUDA when torch (or Ray) has one.

    Locally the device is checked by :func:`empirical.engine.trials.resolve_device` (the one place
    that knows what torch can run on); a Ray backend may have GPUs the driver does not see.
    """
    if device == "auto":
        import torch

        if torch.cuda.is_available():
            return "cuda"
        if backend == "ray":
            try:
                import ray

                if ray.is_initialized() and ray.cluster_resources().get("GPU", 0) >= 1:
                    return "cuda"
            except ImportError:
                pass
        return "cpu"
    if backend != "ray":
        from empirical.engine.trials import resolve_device as torch_device

        try:
            torch_device(device)
        except (RuntimeError, ValueError) as error:
            raise SpecError(f"spec.device: {device!r} cannot be used: {error}") from None
    return device


def _check_store(path: Path, *, audit_key: str, spec_json: str, replace: bool,
                 resume: bool, plans: list[_Plan]) -> set[tuple[str, int]]:
    """Before anything is written: refuse a folder of another spec (unless ``replace``) and
    damaged chunks, or chunks other than ``plans`` say (unless ``resume``). Returns the damaged
    chunks to drop and recompute."""
    try:
        state = inspect_store(path, audit_key=audit_key, spec_json=spec_json,
                              planned={(p.phase, p.chunk): _planned(p) for p in plans})
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
               backend: str, progress: bool, label: str, ray_address: str | None,
               replace: bool = False, resume: bool = False, project: bool = False,
               keep_statistics: bool = False) -> ChunkResults:
    """Pilot and main trials of an audit, computed or read back from the chunk store.

    A store holding another spec's audit is refused unless ``replace`` (which deletes it).
    Stored chunks failing their checksum are refused, or with ``resume`` dropped and
    recomputed; either way they are named, and the recomputation is in the result's notes.
    Nothing is written to ``out_dir`` before these checks pass. ``project``: main chunks store
    their statistics projected on the pilot's direction (the projection attack), the statistics
    themselves only with ``keep_statistics``.
    """
    pilot_seed = derived_seed(seed, "pilot")
    plans = _plan(PILOT, pilot_trials, chunk_size, pilot_seed) if pilot_trials else []
    plans += _plan(MAIN, trials, chunk_size, seed)
    store = None
    notes: list[str] = []
    if out_dir is not None:
        path = Path(out_dir) / STORE_NAME
        bad = _check_store(path, audit_key=audit_key, spec_json=spec_json, replace=replace,
                           resume=resume, plans=plans)
        store = ChunkStore(path, audit_key=audit_key, spec_json=spec_json,
                           code_version=code_version())
        try:
            if replace and store.other_specs():
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

    def keep(phase: str) -> _Keep | None:
        if not (project and pilot_trials):
            return None
        if phase == PILOT:
            return _Keep(None, keep_statistics)
        directions.update(_directions(_collect(sink, plans, PILOT)))
        return _Keep({name: unit for name, (unit, _) in directions.items()}, keep_statistics)

    try:
        with heap_top_kept():
            resumed, cluster = _execute(mechanism, plans, sink, backend=backend,
                                        progress=progress, label=label,
                                        ray_address=ray_address, keep=keep)
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
