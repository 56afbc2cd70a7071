"""Benchmark behind ``unlearn bench trials``: batched PNSGD trials against a per-trial loop.

Both paths run the same pipeline (:func:`empirical.mechanisms.chien2024.run_pnsgd`): learn T
epochs on D, unlearn K epochs on D' (one replaced record, seed 000's request), retrain T
epochs on D'. The batched path runs all N trials as [N, ...] tensors; the loop path calls
the same code once per trial. The loop is timed on the first ``loop_trials`` trials only and
its rate extrapolated (trials are identical in cost); each path's time is its fastest run
(:func:`empirical.benchmarks.timing.fastest_run`); its outputs are compared with the
batched outputs of the same trials (bit-identical on CPU; CUDA reductions may pick
shape-dependent orders, so there the largest difference is reported).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from empirical.benchmarks.timing import fastest_run
from empirical.data.datasets import drop_to_multiple, load_dataset
from empirical.data.requests import random_replacement_request
from empirical.engine.trials import resolve_device
from empirical.mechanisms import common as mechanisms_common
from empirical.mechanisms.chien2024 import paper_logistic_config, run_pnsgd
from empirical.mechanisms.common import TrialOptions

__all__ = ["BENCH_DEFAULTS", "CPU_BENCH_THREADS", "trials_benchmark"]

# Per dataset: batch size b and burn-in T paired as in seed 000 Table 2 (b=32 -> T=10,
# b=128 -> T=20), one unlearning epoch (the K-hat = 1 of Table 3).
BENCH_DEFAULTS: dict[str, dict[str, int]] = {
    "digits": {"batch_size": 32, "learn_epochs": 10, "unlearn_epochs": 1},
    "synthetic-mnist-shape": {"batch_size": 128, "learn_epochs": 20, "unlearn_epochs": 1},
}
_FALLBACK_DEFAULTS = {"batch_size": 32, "learn_epochs": 10, "unlearn_epochs": 1}

_DTYPES = {"float32": torch.float32, "float64": torch.float64}

# Intra-op threads for CPU runs. Each batched step works on a few MB, so extra threads gained
# little on an idle 2-core machine (about 2,600-3,400 vs 2,900 trials/s), while on a shared
# one OpenMP barriers waiting for descheduled threads made the batched path 10-30x slower.
CPU_BENCH_THREADS = 1


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def trials_benchmark(
    *,
    n_trials: int = 1000,
    device: str = "cpu",
    dataset: str = "digits",
    seed: int = 0,
    loop_trials: int | None = None,
    batch_size: int | None = None,
    learn_epochs: int | None = None,
    unlearn_epochs: int | None = None,
    sigma: float = 0.05,
    dtype: str = "float32",
    chunk_size: int | None = None,
    path: str | None = None,
    num_threads: int | None = None,
) -> dict[str, Any]:
    """Trials per second of batched and per-trial-loop PNSGD learn + unlearn + retrain.

    Logistic regression with seed 000's constants: lambda = 1e-6 n, eta = 1/(1/4 + lambda),
    clip M = 1, no projection (as the authors' released code runs), init N(0, 2 sigma^2/m).
    ``loop_trials`` (default min(n_trials, 32)) is how many trials the loop runs; its rate
    is extrapolated to N. ``num_threads`` sets torch's intra-op threads for the run (restored
    afterwards); on CPU it defaults to 1, see :data:`CPU_BENCH_THREADS`. Returns a flat dict of
    sizes, settings, rates and their ratio.
    """
    if num_threads is not None and num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    if num_threads is None and resolve_device(device).type == "cpu":
        num_threads = CPU_BENCH_THREADS
    previous_threads = torch.get_num_threads()
    previous_trial_threads = mechanisms_common.CPU_TRIAL_THREADS
    if num_threads is not None:
        torch.set_num_threads(num_threads)
        # The mechanisms run CPU trials on CPU_TRIAL_THREADS threads; time the ones asked for.
        mechanisms_common.CPU_TRIAL_THREADS = num_threads
    try:
        return _benchmark(
            n_trials=n_trials, device=device, dataset=dataset, seed=seed,
            loop_trials=loop_trials, batch_size=batch_size, learn_epochs=learn_epochs,
            unlearn_epochs=unlearn_epochs, sigma=sigma, dtype=dtype, chunk_size=chunk_size,
            path=path,
        )
    finally:
        torch.set_num_threads(previous_threads)
        mechanisms_common.CPU_TRIAL_THREADS = previous_trial_threads


def _benchmark(
    *,
    n_trials: int,
    device: str,
    dataset: str,
    seed: int,
    loop_trials: int | None,
    batch_size: int | None,
    learn_epochs: int | None,
    unlearn_epochs: int | None,
    sigma: float,
    dtype: str,
    chunk_size: int | None,
    path: str | None,
) -> dict[str, Any]:
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
    loop_trials = min(n_trials, 32) if loop_trials is None else loop_trials
    if not 1 <= loop_trials <= n_trials:
        raise ValueError(f"loop_trials must be in [1, n_trials={n_trials}], got {loop_trials}")
    resolved = resolve_device(device)
    defaults = BENCH_DEFAULTS.get(dataset, _FALLBACK_DEFAULTS)
    batch_size = defaults["batch_size"] if batch_size is None else batch_size
    learn_epochs = defaults["learn_epochs"] if learn_epochs is None else learn_epochs
    unlearn_epochs = defaults["unlearn_epochs"] if unlearn_epochs is None else unlearn_epochs

    data = drop_to_multiple(load_dataset(dataset, path=path), batch_size)
    request = random_replacement_request(data, seed=seed)
    # Seed 000's constants (lambda = 1e-6 n, eta = 1/L, M = 1), without projection.
    config = paper_logistic_config(n=data.n, sigma=sigma, batch_size=batch_size,
                                   learn_epochs=learn_epochs, unlearn_epochs=unlearn_epochs,
                                   radius=None)
    common = TrialOptions(n_trials=2, seed=seed, device=resolved, dtype=_DTYPES[dtype])
    # Warm-up: first-call allocations, kernel caches and (on CUDA) context creation.
    run_pnsgd(data, request, config=config, options=common)

    _synchronize(resolved)
    synchronize = functools.partial(_synchronize, resolved)
    batched_timing = fastest_run(functools.partial(
        run_pnsgd, data, request, config=config,
        options=replace(common, n_trials=n_trials, chunk_size=chunk_size)), synchronize=synchronize)
    loop_timing = fastest_run(functools.partial(
        run_pnsgd, data, request, config=config,
        options=replace(common, n_trials=loop_trials, mode="loop")), synchronize=synchronize)
    batched, batched_seconds = batched_timing.result, batched_timing.seconds
    looped, loop_seconds = loop_timing.result, loop_timing.seconds

    differences = [
        float(np.abs(getattr(batched, side).params[:loop_trials]
                     - getattr(looped, side).params).max())
        for side in ("learned", "unlearned", "retrained")
    ]
    batched_rate = n_trials / batched_seconds
    loop_rate = loop_trials / loop_seconds
    steps = (2 * learn_epochs + unlearn_epochs) * (data.n // batch_size)
    return {
        "dataset": data.name,
        "n": data.n,
        "dim": data.dim,
        "n_test": data.n_test,
        "device": str(resolved),
        "dtype": dtype,
        "torch_threads": torch.get_num_threads(),
        "batch_size": batch_size,
        "learn_epochs": learn_epochs,
        "unlearn_epochs": unlearn_epochs,
        "sigma": sigma,
        "steps_per_trial": steps,
        "n_trials": n_trials,
        "chunk_size": "auto" if chunk_size is None else chunk_size,
        "batched_seconds": batched_seconds,
        "batched_trials_per_s": batched_rate,
        "loop_trials_timed": loop_trials,
        "loop_seconds": loop_seconds,
        "loop_trials_per_s": loop_rate,
        "loop_rate_extrapolated": loop_trials < n_trials,
        "speedup": batched_rate / loop_rate,
        "loop_matches_batched": max(differences) == 0.0,
        "loop_max_abs_difference": max(differences),
        "mean_test_accuracy_unlearned": float(batched.unlearned.test_accuracy.mean()),
        "mean_test_accuracy_retrained": float(batched.retrained.test_accuracy.mean()),
        "timed_runs": {"batched": len(batched_timing.runs), "loop": len(loop_timing.runs)},
        "note": (
            f"loop timed on the first {loop_trials} trials and extrapolated"
            if loop_trials < n_trials
            else "loop timed on all trials"
        ) + "; each path's fastest run",
    }
