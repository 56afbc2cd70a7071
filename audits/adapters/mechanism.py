"""Mechanism plumbing: the fields and data of a spec-driven trial mechanism
(:class:`SpecMechanism`), trial batches from a mechanism's results, one intra-op torch thread on
a shared CPU, and batched-against-looped timing for ``unlearn bench trials``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from audits.adapters.data import SpecData, spec_data
from audits.attacks import LOSS
from audits.protocols import ModelOutputs, TrialBatch

__all__ = [
    "BatchLoopTiming",
    "SpecMechanism",
    "model_outputs",
    "run_request_trials",
    "time_batched_and_loop",
    "torch_threads",
    "trial_batch",
]

@dataclass(frozen=True)
class SpecMechanism:
    """The fields of a :class:`~audits.protocols.TrialMechanism` that runs an empirical
    mechanism on a spec's data: the canonical spec JSON (its data are re-read, cached, in each
    chunk), the mechanism's config dataclass, the device and the torch dtype name.

    The fingerprint keys the chunk store: it changes whenever the numbers may change.
    ``fingerprint_tag`` (a class attribute) prefixes it where a subclass set one.

    ``runner`` (``"module:function"``, imported when trials run) names an empirical mechanism
    with the shared signature of :func:`run_request_trials`; :meth:`run_trials` then runs it on
    the spec's data with :meth:`runner_arguments` (under one intra-op torch thread on CPU when
    ``one_torch_thread``: :func:`torch_threads`). A subclass with other needs overrides
    :meth:`run_trials`. The subclass writes ``description``, one line for the report's notes.
    """

    fingerprint_tag: ClassVar[str | None] = None
    runner: ClassVar[str | None] = None
    one_torch_thread: ClassVar[bool] = False
    # How the spec's data are read (:func:`spec_data`'s options, e.g. batch_size_field).
    data_options: ClassVar[Mapping[str, Any]] = {}

    # The config's iteration counts one trial runs, each with how often a trial runs it (the
    # learning phase twice: the original model and the retrained one), for the work estimate
    # said before the first trial (:meth:`work_per_trial`); a tuple field counts its sum.
    work_fields: ClassVar[Mapping[str, int]] = {}
    work_unit: ClassVar[str] = "iterations"

    spec_json: str
    config: Any
    device: str
    dtype: str
    # The record every forget slot holds under ``[request] forget = "worst-case"``
    # (:class:`~audits.adapters.worst_case.PlantedRecord`); None: the data as the spec gives it.
    planted: Any = field(default=None, kw_only=True)

    @classmethod
    def load_data(cls, spec_json: str) -> SpecData:
        """The dataset and requests of a canonical spec JSON, as this mechanism reads them."""
        return spec_data(spec_json, **cls.data_options)

    def data(self) -> SpecData:
        """The dataset and requests of this mechanism's spec (cached), with the planted record
        in every forget row if there is one."""
        data = self.load_data(self.spec_json)
        if self.planted is None:
            return data
        from audits.adapters.worst_case import plant_features, request_spec

        return plant_features(data, request_spec(self.spec_json),
                              features=np.asarray(self.planted.features),
                              label=self.planted.label, why=self.planted.describe())

    def work_per_trial(self) -> tuple[float, str] | None:
        """(amount, unit) of the iterations one trial runs, from :attr:`work_fields`; None
        when the subclass names none."""
        if not self.work_fields:
            return None
        total = 0.0
        for name, times in self.work_fields.items():
            value = getattr(self.config, name, 0) or 0
            total += times * float(sum(value) if isinstance(value, tuple) else value)
        terms = " + ".join(name if times == 1 else f"{times} x {name}"
                           for name, times in self.work_fields.items())
        return total, f"{self.work_unit} ({terms})"

    def runner_arguments(self, data: SpecData) -> dict[str, Any]:
        """Keyword arguments the ``runner`` takes beyond the shared ones (none here)."""
        return {}

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int,
                   mode: str = "batched") -> TrialBatch:
        """Trials ``first_trial`` .. ``first_trial + n_trials - 1`` of ``runner`` as a
        TrialBatch (``mode`` "loop" runs them one by one, the benchmark's baseline)."""
        if self.runner is None:
            raise NotImplementedError(f"{type(self).__name__} names no runner")
        module, _, function = self.runner.partition(":")
        run = getattr(importlib.import_module(module), function)
        threads = torch_threads(self.device) if self.one_torch_thread else contextlib.nullcontext()
        with threads:
            data = self.data()
            return run_request_trials(run, self, data, seed=seed, first_trial=first_trial,
                                      n_trials=n_trials, mode=mode,
                                      **self.runner_arguments(data))

    def planted_key(self) -> tuple[str, ...]:
        """What the fingerprint adds for a planted record (nothing without one)."""
        return () if self.planted is None else (self.planted.key,)

    def fingerprint(self) -> str:
        """Key of the chunk store: changes whenever the mechanism's numbers may change."""
        parts = (dataclasses.astuple(self.config), self.device, self.dtype, *self.planted_key())
        return repr(parts if self.fingerprint_tag is None else (self.fingerprint_tag, *parts))


def model_outputs(losses: Any, params: Any, accuracy: Any, *, keep_params: bool = True
                  ) -> ModelOutputs:
    """One side of a trial batch: score ``loss`` = minus each forgotten record's loss (higher
    means "looks like a member"), statistic ``params`` (unless too large), test accuracy."""
    return ModelOutputs(scores={LOSS.name: -losses},
                        statistics={"params": params} if keep_params else {},
                        accuracy=accuracy)


def trial_batch(result: Any) -> TrialBatch:
    """A mechanism result with ``unlearned``/``retrained`` samples (``forget_losses``,
    ``params``, ``test_accuracy``) as a :class:`~audits.protocols.TrialBatch`."""
    def side(samples: Any) -> ModelOutputs:
        return model_outputs(samples.forget_losses, samples.params, samples.test_accuracy)

    return TrialBatch(side(result.unlearned), side(result.retrained))


def run_request_trials(run: Callable[..., Any], mechanism: Any, data: SpecData, *, seed: int,
                       first_trial: int, n_trials: int, model: Any = None, mode: str = "batched",
                       **extra: Any) -> TrialBatch:
    """Trials of an empirical mechanism with the shared signature ``run(dataset, request, *,
    config, options, ...)`` (:class:`~empirical.mechanisms.common.TrialOptions`), on the spec's
    data, as a :class:`~audits.protocols.TrialBatch`. ``mechanism`` supplies ``config``,
    ``device`` and ``dtype`` (a torch dtype name); ``extra`` go to ``run`` as they are."""
    import torch

    from empirical.mechanisms.common import TrialOptions

    # retain_scores=0 trips an empty reshape in empirical.models.linear (reported)
    options = TrialOptions(n_trials=n_trials, seed=seed, model=model, device=mechanism.device,
                           dtype=getattr(torch, mechanism.dtype), mode=mode,
                           first_trial=first_trial, retain_scores=1)
    result = run(data.dataset, data.request, config=mechanism.config, options=options, **extra)
    return trial_batch(result)


@contextlib.contextmanager
def torch_threads(device: str, threads: int = 1) -> Iterator[None]:
    """Run with ``threads`` intra-op torch threads on CPU (restored afterwards).

    Batched trials are many small tensor operations: on a shared machine several intra-op
    threads spin-wait at every barrier, so one thread is often many times faster.
    """
    import torch

    previous = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@dataclass(frozen=True)
class BatchLoopTiming:
    """The same trials run batched and one at a time (the first ``loop_trials`` of them), each
    path timed by its fastest run (:func:`empirical.benchmarks.timing.fastest_run`)."""

    batched: Any
    looped: Any
    batched_seconds: float
    loop_seconds: float
    n_trials: int
    loop_trials: int
    peak_rss_growth_kib: int  # ru_maxrss growth during the batched runs
    runs: tuple[int, int]  # timed runs of the batched and the looped path

    @property
    def batched_rate(self) -> float:
        """Trials per second of the batched call."""
        return self.n_trials / self.batched_seconds

    @property
    def loop_rate(self) -> float:
        """Trials per second of the one-at-a-time calls."""
        return self.loop_trials / self.loop_seconds

    def rates(self) -> dict[str, Any]:
        """The benchmark fields every ``benchmark_trials`` reports (trials per second)."""
        return {"n_trials": self.n_trials, "batched_seconds": self.batched_seconds,
                "batched_trials_per_s": self.batched_rate, "loop_trials_timed": self.loop_trials,
                "loop_seconds": self.loop_seconds, "loop_trials_per_s": self.loop_rate,
                "speedup": self.batched_rate / self.loop_rate,
                "timed_runs": {"batched": self.runs[0], "loop": self.runs[1]}}


def time_batched_and_loop(run: Callable[..., Any], *, n_trials: int, loop_trials: int,
                          warmup_trials: int = 1) -> BatchLoopTiming:
    """Time ``run(seed=0, first_trial=0, n_trials=N, mode=...)`` batched over ``n_trials`` and
    in ``mode="loop"`` over the first ``loop_trials`` (after a warm-up that fills caches), each
    by its fastest run."""
    import resource

    from empirical.benchmarks.timing import fastest_run

    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    run(seed=0, first_trial=0, n_trials=warmup_trials)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    batched = fastest_run(functools.partial(run, seed=0, first_trial=0, n_trials=n_trials))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    looped_n = min(n_trials, loop_trials)
    looped = fastest_run(functools.partial(run, seed=0, first_trial=0, n_trials=looped_n,
                                           mode="loop"))
    return BatchLoopTiming(batched.result, looped.result, batched.seconds, looped.seconds,
                           n_trials, looped_n, max(0, peak - before),
                           (len(batched.runs), len(looped.runs)))
