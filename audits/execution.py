"""Chunks of trials: plan, compute (locally or as Ray tasks), store, collect; code versions.

Every chunk is a pure function of (mechanism, seed, first trial, size), so chunks can run in any
order, on any worker, and be stored and reused: a killed audit resumes from its chunk store
(:mod:`audits.store`) and gives a bit-identical report.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audits import progress as progress_lines
from audits.fields import SpecError
from audits.protocols import TrialBatch, TrialMechanism
from audits.seeds import derived_seed
from audits.store import STORE_NAME, ChunkStore, CorruptChunkError, StoreError

__all__ = ["MAIN", "PILOT", "code_version", "resolve_device", "run_chunks", "toolkit_version"]

PILOT, MAIN = "pilot", "audit"
# Score-side files whose code decides the numbers in the chunk store.
_CODE_FILES = ("audits/execution.py", "audits/runner.py", "audits/spec.py", "audits/store.py",
               "audits/protocols.py", "audits/datasets.py", "audits/seeds.py")
_CODE_PACKAGES = ("empirical", "audits/adapters")


# ----------------------------------------------------------------------------------------------
# Versions and seeds.


def toolkit_version() -> str:
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


class _Progress:
    def __init__(self, total: int, *, enabled: bool, label: str) -> None:
        self.total, self.done, self.enabled, self.label = total, 0, enabled, label
        self._bar = None
        self._start = time.perf_counter()
        if enabled and total:
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
        if self._bar is not None:
            self._bar.update(1)
            return
        elapsed = time.perf_counter() - self._start
        if progress_lines.active():  # one line each, so that heartbeat lines cannot overwrite them
            progress_lines.line(f"{self.done}/{self.total} chunks ({what}), {elapsed:.0f} s")
            return
        line = f"{self.label}: {self.done}/{self.total} chunks ({what}), {elapsed:.0f} s"
        end = "\r" if self._tty and self.done < self.total else "\n"
        print(line, end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


# ----------------------------------------------------------------------------------------------
# Chunks: plan, compute (locally or as Ray tasks), store.


@dataclass(frozen=True)
class _Plan:
    phase: str
    chunk: int
    first_trial: int
    n_trials: int
    seed: int


def _plan(phase: str, n_trials: int, chunk_size: int, seed: int) -> list[_Plan]:
    return [
        _Plan(phase, index, start, min(chunk_size, n_trials - start), seed)
        for index, start in enumerate(range(0, n_trials, chunk_size))
    ]


def _compute_chunk(mechanism: TrialMechanism, plan: _Plan) -> tuple[dict[str, np.ndarray], float]:
    """Run one chunk; returns its flat arrays and the seconds it took."""
    start = time.perf_counter()
    batch = mechanism.run_trials(seed=plan.seed, first_trial=plan.first_trial,
                                 n_trials=plan.n_trials)
    if not isinstance(batch, TrialBatch):
        raise TypeError(f"run_trials must return a TrialBatch, got {type(batch).__name__}")
    if batch.n_trials != plan.n_trials:
        raise ValueError(f"run_trials returned {batch.n_trials} trials, {plan.n_trials} asked")
    arrays = batch.to_arrays()
    arrays["trial_index"] = np.arange(plan.first_trial, plan.first_trial + plan.n_trials)
    return arrays, time.perf_counter() - start


class _MemorySink:
    """The store's interface for audits without an output directory."""

    where = "memory"

    def __init__(self) -> None:
        self._chunks: dict[tuple[str, int], dict[str, np.ndarray]] = {}

    def finished(self) -> set[tuple[str, int]]:
        return set(self._chunks)

    def put(self, *, phase, chunk, arrays, **_: Any) -> None:
        self._chunks[(phase, chunk)] = dict(arrays)

    def arrays(self, phase: str, chunk: int) -> dict[str, np.ndarray]:
        return self._chunks[(phase, chunk)]


class _StoreSink:
    def __init__(self, store: ChunkStore) -> None:
        self.store = store
        self.where = str(store.path)

    def finished(self) -> set[tuple[str, int]]:
        return self.store.finished()

    def put(self, *, phase, chunk, first_trial, n_trials, seed, arrays, seconds, worker) -> None:
        self.store.put(phase=phase, chunk=chunk, first_trial=first_trial, n_trials=n_trials,
                       seed=seed, arrays=arrays, seconds=seconds, worker=worker)

    def arrays(self, phase: str, chunk: int) -> dict[str, np.ndarray]:
        return dict(self.store.get(phase, chunk).arrays)


def _store_result(sink, plan: _Plan, arrays, seconds: float, worker: str) -> None:
    sink.put(phase=plan.phase, chunk=plan.chunk, first_trial=plan.first_trial,
             n_trials=plan.n_trials, seed=plan.seed, arrays=arrays, seconds=seconds,
             worker=worker)


def _run_local(mechanism, plans: list[_Plan], sink, progress: _Progress) -> None:
    for plan in plans:
        arrays, seconds = _compute_chunk(mechanism, plan)
        _store_result(sink, plan, arrays, seconds, f"local pid {os.getpid()}")
        progress.update(f"{plan.phase} {plan.chunk}")


def _ray_chunk(mechanism, plan: _Plan):
    """Body of a Ray task (module-level so that workers import it by name)."""
    import socket

    arrays, seconds = _compute_chunk(mechanism, plan)
    return arrays, seconds, f"ray {socket.gethostname()} pid {os.getpid()}"


def _run_ray(mechanism, plans: list[_Plan], sink, progress: _Progress, *,
             address: str | None) -> str:
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
                pending[task.remote(shared, plan)] = plan
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
             label: str, ray_address: str | None) -> tuple[int, str | None]:
    """Compute every plan not yet in ``sink``; returns (chunks resumed, Ray description)."""
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
    cluster = None
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
    try:
        if todo and backend == "local":
            _run_local(mechanism, todo, sink, bar)
        elif todo:
            cluster = _run_ray(mechanism, todo, sink, bar, address=ray_address)
    finally:
        bar.close()
    return len(plans) - len(todo), cluster


def _collect(sink, plans: list[_Plan], phase: str) -> TrialBatch | None:
    parts = []
    for plan in plans:
        if plan.phase != phase:
            continue
        arrays = sink.arrays(plan.phase, plan.chunk)
        expected = np.arange(plan.first_trial, plan.first_trial + plan.n_trials)
        if not np.array_equal(arrays.get("trial_index"), expected):
            raise ValueError(f"stored chunk {phase}/{plan.chunk} holds other trials than planned")
        parts.append(TrialBatch.from_arrays(arrays))
    return TrialBatch.concatenate(parts) if parts else None



def resolve_device(device: str, backend: str) -> str:
    """The spec's device for this backend: ``auto`` picks CUDA when torch (or Ray) has one.

    Locally the device is checked by :func:`empirical.trials.resolve_device` (the one place
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
        from empirical.trials import resolve_device as torch_device

        try:
            torch_device(device)
        except (RuntimeError, ValueError) as error:
            raise SpecError(f"spec.device: {device!r} cannot be used: {error}") from None
    return device


def _check_store(store: ChunkStore, *, replace: bool, resume: bool,
                 notes: list[str] | None) -> None:
    """Refuse a folder of another spec (unless ``replace``) and tampered chunks (unless
    ``resume``, which drops them so that they are recomputed)."""
    if store.other_specs():
        if not replace:
            raise StoreError(f"{store.path.parent} holds the audit of a different spec; use "
                             "another --out folder, or --replace to delete it and start afresh")
        store.drop_other_audits()
    bad = store.verify()
    if bad and not resume:
        raise CorruptChunkError(store.path, bad)
    if bad:
        chunks = {(phase, chunk) for phase, chunk, _ in bad}
        store.drop(chunks)
        named = ", ".join(f"{phase}/{chunk}" for phase, chunk in sorted(chunks))
        message = (f"chunks {named} failed their SHA-256 checksum in {store.path} and were "
                   "recomputed (--resume)")
        print(f"warning: {message}", file=sys.stderr)
        if notes is not None:
            notes.append(message)


def run_chunks(mechanism: TrialMechanism, *, trials: int, pilot_trials: int, chunk_size: int,
               seed: int, out_dir: str | Path | None, audit_key: str, spec_json: str,
               backend: str, progress: bool, label: str, ray_address: str | None,
               replace: bool = False, resume: bool = False, notes: list[str] | None = None):
    """Pilot and main trials of an audit, computed or read back from the chunk store.

    A store holding another spec's audit is refused unless ``replace`` (which deletes it).
    Stored chunks failing their checksum are refused, or with ``resume`` dropped and
    recomputed; either way they are named, and with ``notes`` the recomputation is recorded.
    """
    pilot_seed = derived_seed(seed, "pilot")
    plans = _plan(PILOT, pilot_trials, chunk_size, pilot_seed) if pilot_trials else []
    plans += _plan(MAIN, trials, chunk_size, seed)
    store = None
    if out_dir is not None:
        store = ChunkStore(Path(out_dir) / STORE_NAME, audit_key=audit_key, spec_json=spec_json,
                           code_version=code_version())
        try:
            _check_store(store, replace=replace, resume=resume, notes=notes)
        except BaseException:
            store.close()
            raise
        sink: Any = _StoreSink(store)
    else:
        sink = _MemorySink()
    try:
        resumed, cluster = _execute(mechanism, plans, sink, backend=backend, progress=progress,
                                    label=label, ray_address=ray_address)
        pilot = _collect(sink, plans, PILOT) if pilot_trials else None
        main = _collect(sink, plans, MAIN)
    finally:
        if store is not None:
            store.close()
    return main, pilot, len(plans), resumed, pilot_seed, cluster
