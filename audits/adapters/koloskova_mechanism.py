"""The trial mechanism of the Koloskova et al. 2025 adapters (:mod:`audits.adapters.koloskova`)
and its batched-against-looped benchmark.

A network task (data, model, A(D) and A(D_r) trained once) is built per spec and cached; each
trial runs the method's noisy fine-tuning from A(D) and from A(D_r).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from audits import progress
from audits.adapters.data import SpecData, plant_record, spec_data
from audits.adapters.mechanism import SpecMechanism, model_outputs, torch_threads
from audits.attacks import STATED_DIRECTION
from audits.loader import spec_from_dict
from audits.protocols import TrialBatch
from audits.spec import DatasetSpec, ModelSpec
from empirical.engine.memory import heap_top_kept

__all__ = ["PARAMS_STATISTICS_LIMIT", "WORST_CASE_RULE", "KoloskovaMechanism", "benchmark",
           "worst_case_record"]

PARAMS_STATISTICS_LIMIT = 5000  # parameters handed to the projection attack up to this size
# The benchmark runs its trials in calls sized to take about this many seconds (from the
# previous call's rate), each followed by a progress line.
PROGRESS_SECONDS = 5.0

# What ``[request] forget = "worst-case"`` means for eqs. (1), (3) and (4) (the adapters'
# ``worst_case_forget``; the rule is empirical.mechanisms.koloskova2025.worst_case_forget_record).
WORST_CASE_RULE = (
    "Theorems A.9 and 4.2 and eq. (1) assume nothing of the data: the forget set reaches the "
    "unlearning run only through x_0 = Pi_C0(A(D)), and the certificates hold for start "
    "distances ||x_0 - x_0'|| up to 2 C0. Every forget slot holds one record from the data "
    "domain (a row's features, with the label A(D_r) does not predict there), chosen among "
    "screened rows (largest gradient at A(D_r); gradient at the initialisation most against the "
    "retain mean gradient) by the largest start distance after the audit's own training of A(D)")


def _spec_task(dataset: Any, model: str, device: str, dtype: str) -> Any:
    import torch

    from empirical.mechanisms.koloskova2025 import build_task

    return build_task(dataset, model=model, device=device, dtype=getattr(torch, dtype))


@functools.lru_cache(maxsize=8)
def worst_case_record(spec_json: str, model: str, device: str, dtype: str) -> Any:
    """The worst-case forgotten record of a spec (a WorstCaseRecord), searched on its data with
    the forget rows drawn as usual and the spec's own training of A(D) and A(D_r)."""
    from empirical.mechanisms.koloskova2025 import worst_case_forget_record

    params = spec_from_dict(json.loads(spec_json)).algorithm
    data = spec_data(spec_json)
    task = _spec_task(data.dataset, model, device, dtype)
    return worst_case_forget_record(task, forget=data.indices, learn_steps=params.learn_steps,
                                    learn_step_size=params.learn_step_size, C0=params.C0)


def _forget_mode(spec_json: str) -> str:
    return str(json.loads(spec_json)["request"]["forget"])


@functools.lru_cache(maxsize=8)
def _task(spec_json: str, model: str, device: str, dtype: str) -> Any:
    data = KoloskovaMechanism.load_data(spec_json, model=model, device=device, dtype=dtype)
    return _spec_task(data.dataset, model, device, dtype)



@dataclass(frozen=True)
class KoloskovaMechanism(SpecMechanism):
    """Unlearned U(A(D), D_r) vs certifying U(A(D_r), D_r) trials as a TrialMechanism.

    Scores: ``loss`` = minus the cross-entropy of each forgotten record, ``stated-direction`` =
    the final parameters on the unit start difference Pi_C0(A(D)) - Pi_C0(A(D_r)) (white-box,
    fixed by the data before any trial); statistics: the final parameters (networks up to
    5,000 parameters); accuracy on the test split. ``config`` is an
    empirical.mechanisms.koloskova2025.KoloskovaConfig.
    """

    model: str
    work_fields: ClassVar[dict[str, int]] = {"learn_steps": 2, "unlearn_steps": 2,
                                             "finetune_steps": 2}
    work_unit: ClassVar[str] = "gradient steps"
    forget: tuple[int, ...]

    @classmethod
    def load_data(cls, spec_json: str, *, model: str | None = None, device: str = "cpu",
                  dtype: str | None = None) -> SpecData:
        """The spec's data; with ``forget = "worst-case"`` the forget rows hold the worst-case
        record searched with ``model`` on ``device`` in ``dtype`` (default: the spec's)."""
        data = spec_data(spec_json)
        if _forget_mode(spec_json) != "worst-case":
            return data
        plain = json.loads(spec_json)
        record = worst_case_record(spec_json, model or plain["model"]["name"], device,
                                   dtype or plain["dtype"])
        return plant_record(data, source_row=record.row, label=record.label,
                            why=f"worst case of Theorems A.9/4.2/eq. (1): start distance "
                                f"{record.start_distance:.6g} of the assumed bound 2 C0 = "
                                f"{record.bound:g}")

    def data(self) -> SpecData:
        """The data this mechanism runs on (the planted record in the forget rows if any)."""
        return self.load_data(self.spec_json, model=self.model, device=self.device,
                              dtype=self.dtype)

    @property
    def description(self) -> str:
        """One line naming the method, its numbers and the forget set, for the report's notes."""
        c = self.config
        return (f"Koloskova et al. 2025 {c.method} on {self.model}: sigma={c.sigma!r}, "
                f"T={c.unlearn_steps}, gamma={c.step_size}, lambda={c.l2}, C0={c.C0}, "
                f"C1={c.C1}, C2={c.C2}, fine-tuning {c.finetune_steps} steps, forget "
                f"{len(self.forget)} rows, noise x{c.noise_multiplier_scale}")

    def task(self) -> Any:
        """The built network task (data, model, A(D) and A(D_r) training), cached per spec."""
        return _task(self.spec_json, self.model, self.device, self.dtype)

    def fingerprint(self) -> str:
        """Key of the chunk store (config, model, forget rows, device, dtype; for the CNN and
        the MLP also the batched products with the gradient written out that their numbers
        come from, which round differently from autograd through conv2d and linear)."""
        parts = (dataclasses.astuple(self.config), self.model, self.forget, self.device, self.dtype)
        if self.model in ("cnn", "mlp"):
            parts = (*parts, "stacked products")
        if _forget_mode(self.spec_json) == "worst-case":
            parts = (*parts, "worst-case forget")
        return repr(parts)

    def run(self, *, seed: int, first_trial: int, n_trials: int, mode: str = "batched") -> Any:
        """The mechanism's raw result (``mode`` batched or loop) for trials from ``first_trial``."""
        from empirical.mechanisms.koloskova2025 import run_koloskova

        task = self.task()
        return run_koloskova(task, forget=self.forget, config=self.config, n_trials=n_trials,
                             seed=seed, first_trial=first_trial, mode=mode)

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        """Trials ``first_trial`` .. ``first_trial + n_trials - 1`` as a TrialBatch (parameters kept up to
        5,000)."""
        result = self.run(seed=seed, first_trial=first_trial, n_trials=n_trials)
        small = result.unlearned_params.shape[1] <= PARAMS_STATISTICS_LIMIT

        def side(losses: Any, params: Any, accuracy: Any, direction: Any) -> Any:
            out = model_outputs(losses, params, accuracy, keep_params=small)
            return dataclasses.replace(out, scores={**out.scores, STATED_DIRECTION.name: direction})

        return TrialBatch(
            side(result.unlearned_forget_losses, result.unlearned_params,
                 result.unlearned_accuracy, result.unlearned_direction_scores),
            side(result.reference_forget_losses, result.reference_params,
                 result.reference_accuracy, result.reference_direction_scores))


def benchmark(adapter: Any, *, n_trials: int, device: str, dataset: str, model: str,
              loop_trials: int | None, path: str | None = None) -> dict[str, Any]:
    """Models per second of ``adapter``'s demo mechanism, batched (stacked parameter sets)
    against one model per call, on ``dataset`` (read from ``path`` for a file dataset) and
    ``model``."""
    import torch

    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    spec = adapter.demo_spec(trials=max(4, n_trials), device=device)
    spec = spec.replace(model=ModelSpec(name=model))
    if dataset != "digits" or path is not None:
        spec = spec.replace(dataset=DatasetSpec(name=dataset, path=path))
    mechanism = adapter.prepare(spec, device=device).mechanism
    looped_n = min(n_trials, loop_trials or 16)
    # the heap regime of an audit's chunks, as every benchmark times its trials
    with torch_threads(device), heap_top_kept():
        progress.announce(f"{model} on {spec.dataset.name}: training A(D) and A(D_r) once, "
                          "then one warm-up trial")
        start = time.perf_counter()
        mechanism.run(seed=0, first_trial=0, n_trials=1)
        progress.line(f"trained and warmed up in {time.perf_counter() - start:.0f} s")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        batched, batched_seconds, batched_cpu = _timed_chunks(mechanism.run, n_trials=n_trials,
                                                              what="batched")
        peak_growth = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
        looped, loop_seconds, loop_cpu = _timed_chunks(
            functools.partial(mechanism.run, mode="loop"), n_trials=looped_n,
            what="one at a time")
    # The rates count models (two per trial: unlearned and certifying); A(D) and A(D_r) were
    # trained before either timing.
    batched_rate = 2 * n_trials / batched_seconds
    loop_rate = 2 * looped_n / loop_seconds
    params = mechanism.config
    bytes_per_model = batched.unlearned_params.shape[1] * batched.unlearned_params.itemsize
    return {
        "model": model, "dataset": spec.dataset.name, "device": device,
        "num_params": int(batched.unlearned_params.shape[1]),
        "torch_threads": 1 if device == "cpu" else torch.get_num_threads(),
        "n_trials": n_trials, "batched_seconds": batched_seconds,
        "batched_models_per_s": batched_rate, "loop_trials_timed": looped_n,
        "loop_seconds": loop_seconds, "loop_models_per_s": loop_rate,
        "speedup": batched_rate / loop_rate,
        # CPU seconds of this process: on a shared machine the wall time also counts the
        # time other processes held the cores
        "batched_cpu_seconds": batched_cpu, "loop_cpu_seconds": loop_cpu,
        "cpu_speedup": (loop_cpu / looped_n) / (batched_cpu / n_trials),
        "loop_matches_batched": bool(np.array_equal(batched.unlearned_params[:looped_n],
                                                    looped.unlearned_params)),
        "peak_rss_growth_mib_per_model": peak_growth / 1024 / (2 * n_trials),
        "param_bytes_per_model": bytes_per_model,
        "steps_per_model": params.unlearn_steps + params.finetune_steps,
        "note": "per model: T noisy steps + fine-tuning (full-batch retain gradients) and the "
                "evaluation; A(D) and A(D_r) trained once before timing; trials run in calls "
                f"that grow from one trial to about {PROGRESS_SECONDS:g} s each (a progress "
                "line after each); ru_maxrss growth during the batched calls divided by the "
                "models",
    }


def _timed_chunks(run: Callable[..., Any], *, n_trials: int, what: str
                  ) -> tuple[Any, float, float]:
    """``run`` over trials 0 .. n_trials - 1 (a trial depends only on its seed and index) in
    calls that start at one trial and grow to about ``PROGRESS_SECONDS`` each, with a progress
    line after each call; the joined result, the wall seconds and the process CPU seconds
    spent in the calls."""
    parts, elapsed, cpu, first, chunk = [], 0.0, 0.0, 0, 1
    while first < n_trials:
        size = min(chunk, n_trials - first)
        start, start_cpu = time.perf_counter(), time.process_time()
        parts.append(run(seed=0, first_trial=first, n_trials=size))
        seconds = time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        elapsed += seconds
        first += size
        # the next call sized to take about PROGRESS_SECONDS at this call's rate, never smaller
        chunk = max(chunk, int(size * PROGRESS_SECONDS / max(seconds, 1e-9)))
        progress.line(f"{what}: {first}/{n_trials} trials ({2 * first} models) in "
                      f"{elapsed:.0f} s, {2 * first / elapsed:.3g} models/s")
    joined = type(parts[0])(**{field.name: np.concatenate([getattr(p, field.name) for p in parts])
                               for field in dataclasses.fields(parts[0])})
    return joined, elapsed, cpu
