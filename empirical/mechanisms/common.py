"""Machinery shared by the trial mechanisms (noisy (S)GD, Newton removal, fine-tuning, ...).

A mechanism module (one per paper) combines these pieces instead of copying them:

* :func:`as_requests`, :func:`data_versions`, :class:`DataVersion`: the dataset before and after
  each request of a sequence (a removal keeps the row with weight 0, a "null record"), as
  tensors on the trial device;
* :func:`gather`: per-trial rows of a shared table (mini-batches);
* :func:`noisy_step`: one step x <- Pi_R(x - eta * g + noise) with the projection onto the ball
  C_R and the (already scaled) Gaussian noise of noisy projected (S)GD;
* :func:`batch_gradient`: the mean clipped data gradient of a mini-batch plus the l2 term;
* :func:`full_batch_gradient`: the same on every row of a data version (shared: broadcast views);
* :class:`ScoreSets` and :func:`evaluate`, :func:`model_samples`: the losses and accuracies an
  audit reads, and the per-side :class:`ModelSamples`;
* :func:`prepare_mechanism` (:class:`MechanismSetup`): the setup every mechanism starts with
  (requests, data versions on the device, forget rows, the retained subset, score sets);
* :func:`learn_unlearn_retrain`: the learn -> unlearn (each request) -> retrain skeleton with
  the evaluations and counted gradients of each phase;
* :meth:`MechanismSetup.run`: the trials on the setup's device (one CPU thread);
* :class:`TrialResult`, :func:`result_fields`: the fields every result dataclass carries;
* :func:`check_config`, :func:`check_number`, :func:`per_request_counts`, :func:`counts_for`:
  the validation shared by the configs (finite numbers, step counts, one count or one count
  per request);
* :func:`one_cpu_thread`: runs a block with one intra-op CPU thread (the measured reason is in
  its docstring).

Everything is batched over trials (leading dimension N) and keeps the order of floating-point
operations of the original PNSGD code, so batched and per-trial runs stay bit-identical on CPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from empirical.data.datasets import Dataset
from empirical.data.requests import RequestSequence, UnlearningRequest
from empirical.engine.trials import Pipeline, TrialRandom, resolve_device, run_trials
from empirical.mechanisms.counting import CountingModel
from empirical.models.linear import LogisticRegression, TrialModel, broadcast_rows, clip_scale

__all__ = [
    "DataVersion",
    "MechanismSetup",
    "CPU_TRIAL_THREADS",
    "ModelSamples",
    "TrialOptions",
    "ScoreSets",
    "TrialResult",
    "as_requests",
    "batch_gradient",
    "check_config",
    "check_number",
    "counts_for",
    "data_versions",
    "evaluate",
    "full_batch_gradient",
    "full_batch_bytes_per_trial",
    "gather",
    "learn_unlearn_retrain",
    "lsi_init_std",
    "model_samples",
    "noisy_step",
    "one_cpu_thread",
    "per_request_counts",
    "prepare_mechanism",
    "result_fields",
    "score_sets",
    "tensor_versions",
]


@dataclass(frozen=True, eq=False)
class ModelSamples:
    """One model per trial: parameters [N, P], losses on the forget records [N, S] and on a
    retained subset [N, R], and test accuracy [N] (NaN when undefined)."""

    params: np.ndarray
    forget_losses: np.ndarray
    retain_losses: np.ndarray
    test_accuracy: np.ndarray


@dataclass(frozen=True)
class DataVersion:
    """One version of the training data on the device: rows, labels, weights, feature norms."""

    features: torch.Tensor
    labels: torch.Tensor
    weights: torch.Tensor
    norms: torch.Tensor


def gather(table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``table[rows]`` for an index tensor of any shape (e.g. [N, b] mini-batches per trial)."""
    # index_select on flat rows measured ~3x faster on CPU than advanced indexing table[rows].
    picked = torch.index_select(table, 0, rows.reshape(-1))
    return picked.reshape(*rows.shape, *table.shape[1:])


def as_requests(
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
) -> tuple[UnlearningRequest, ...]:
    """One request, a sequence, or a list of requests as a tuple of requests."""
    if isinstance(request, UnlearningRequest):
        return (request,)
    if isinstance(request, RequestSequence):
        return request.requests
    return RequestSequence(tuple(request)).requests


def data_versions(
    dataset: Dataset, requests: tuple[UnlearningRequest, ...]
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(features, labels, weights) of D and after each request (a removal sets weight 0)."""
    features = np.array(dataset.features)
    labels = np.array(dataset.labels)
    weights = np.ones(dataset.n)
    versions = [(features.copy(), labels.copy(), weights.copy())]
    for request in requests:
        if max(request.indices) >= dataset.n:
            raise ValueError(f"request index {max(request.indices)} out of range for n={dataset.n}")
        rows = list(request.indices)
        if request.is_removal:
            weights[rows] = 0.0
        else:
            if request.replacement_features.shape[1] != dataset.dim:
                raise ValueError(
                    f"replacement features have dimension "
                    f"{request.replacement_features.shape[1]}, dataset has {dataset.dim}"
                )
            features[rows] = request.replacement_features
            labels[rows] = request.replacement_labels
        versions.append((features.copy(), labels.copy(), weights.copy()))
    return versions


def tensor_versions(versions: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                    tensor) -> list[DataVersion]:
    """:func:`data_versions` on the device (``tensor`` converts an array), with row norms."""
    return [DataVersion(tensor(x), tensor(y), tensor(w), tensor(np.linalg.norm(x, axis=1)))
            for x, y, w in versions]


def batch_gradient(model: TrialModel, params: torch.Tensor, data: DataVersion,
                   rows: torch.Tensor, *, batch_size: int, clip: float | None,
                   l2: float) -> torch.Tensor:
    """(1/b) sum over the batch of clipped data gradients, plus l2 * params: [N, P]."""
    gradient = model.data_gradient_sum(
        params,
        gather(data.features, rows),
        gather(data.labels, rows),
        gather(data.weights, rows),
        clip=clip,
        feature_norms=None if clip is None else gather(data.norms, rows),
    ) / batch_size
    if l2:
        gradient = gradient + l2 * params
    return gradient


def full_batch_gradient(model: TrialModel, params: torch.Tensor, data: DataVersion, *,
                        clip: float | None, l2: float) -> torch.Tensor:
    """(1/n) sum_i clip_M(grad l_i(x)) + lambda x over every row of a data version: [N, P].

    The arithmetic of :func:`batch_gradient` on all n rows: of a shared data version ([n, d]
    rows) through broadcast views instead of per-trial gathered copies, or of one version per
    trial ([N, n, d] rows, e.g. edited by an adaptive requester). Full-batch (projected)
    gradient descent of D2D (seed 000 App. N.3 Algorithm 2), Langevin unlearning (App. P) and
    Noisy-GD (seed 001 Algorithm 2).
    """
    trials = params.shape[0]
    if data.features.dim() == 3:  # one version per trial
        features, labels, weights, norms = data.features, data.labels, data.weights, data.norms
    else:
        features = broadcast_rows(data.features, trials)
        labels, weights, norms = (t.expand(trials, t.shape[0])
                                  for t in (data.labels, data.weights, data.norms))
    gradient = model.data_gradient_sum(
        params, features, labels, weights, clip=clip,
        feature_norms=None if clip is None else norms,
    ) / features.shape[1]
    if l2:
        gradient = gradient + l2 * params
    return gradient


def noisy_step(params: torch.Tensor, gradient: torch.Tensor, *, step_size: float,
               noise: torch.Tensor | None, radius: float | None) -> torch.Tensor:
    """x <- Pi_{C_R}(x - eta g + noise): the noisy projected gradient step ([N, P])."""
    params = params - step_size * gradient
    if noise is not None:
        params = params + noise
    if radius is not None:
        norms = params.square().sum(-1).sqrt()
        params = params * clip_scale(norms, radius)[:, None]
    return params


@dataclass(frozen=True)
class ScoreSets:
    """The records whose losses and accuracies every model is evaluated on (device tensors)."""

    forget_features: torch.Tensor
    forget_labels: torch.Tensor
    retain_features: torch.Tensor
    retain_labels: torch.Tensor
    test_features: torch.Tensor
    test_labels: torch.Tensor


def score_sets(dataset: Dataset, forget: Sequence[int], retained: np.ndarray,
               tensor) -> ScoreSets:
    """Forget records (original rows), the retained subset and the test split as tensors."""
    return ScoreSets(
        tensor(dataset.features[list(forget)]), tensor(dataset.labels[list(forget)]),
        tensor(dataset.features[retained]), tensor(dataset.labels[retained]),
        tensor(dataset.test_features), tensor(dataset.test_labels),
    )


def evaluate(model: TrialModel, prefix: str, params: torch.Tensor,
             sets: ScoreSets) -> dict[str, torch.Tensor]:
    """Parameters, forget and retain losses and test accuracy, keyed ``prefix/...``."""
    return {
        f"{prefix}/params": params,
        f"{prefix}/forget_losses": model.losses(params, sets.forget_features, sets.forget_labels),
        f"{prefix}/retain_losses": model.losses(params, sets.retain_features, sets.retain_labels),
        f"{prefix}/test_accuracy": model.accuracy(params, sets.test_features, sets.test_labels),
    }


def model_samples(outputs: dict[str, np.ndarray], prefix: str) -> ModelSamples:
    """The :class:`ModelSamples` of one side from the outputs of :func:`evaluate`."""
    return ModelSamples(
        params=outputs[f"{prefix}/params"],
        forget_losses=outputs[f"{prefix}/forget_losses"],
        retain_losses=outputs[f"{prefix}/retain_losses"],
        test_accuracy=outputs[f"{prefix}/test_accuracy"],
    )


# ---------------------------------------------------------------------------------------------
# Setup, results and configuration checks shared by the mechanism modules.


@dataclass(frozen=True, kw_only=True)
class TrialOptions:
    """How a mechanism's trials run, the same for every ``run_*`` entry point.

    ``n_trials`` trials numbered from ``first_trial``, each seeded from (``seed``, its number), so
    trial i's numbers do not depend on ``n_trials``, ``first_trial``, ``chunk_size`` or ``mode``
    (batched [N, ...] tensors, or a per-trial loop); ``model`` defaults to logistic regression
    on the features (mechanisms with their own loss refuse one); ``device`` (None: CPU) and
    ``dtype`` of the tensors; ``retain_scores`` retained rows, drawn with ``score_seed``, get
    losses as well as the forget rows.
    """

    n_trials: int
    seed: int
    model: TrialModel | None = None
    device: str | torch.device | None = None
    dtype: torch.dtype = torch.float64
    mode: Literal["batched", "loop"] = "batched"
    chunk_size: int | None = None
    first_trial: int = 0
    retain_scores: int = 64
    score_seed: int = 0


@dataclass(frozen=True, eq=False)
class MechanismSetup:
    """What a mechanism prepares before its trials (:func:`prepare_mechanism`).

    ``versions_np`` are the (features, labels, weights) of D and after each request,
    ``versions`` the same on the device with row norms; ``forget`` the requested rows in order,
    ``retained`` the sorted retained rows whose losses are reported, ``sets`` the score sets,
    ``model`` the trial model (logistic regression unless one was given), ``options`` how the
    trials run.
    """

    model: TrialModel
    requests: tuple[UnlearningRequest, ...]
    versions_np: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    versions: list[DataVersion]
    forget: tuple[int, ...]
    retained: np.ndarray
    sets: ScoreSets
    device: torch.device
    dtype: torch.dtype
    options: TrialOptions

    def tensor(self, array: np.ndarray) -> torch.Tensor:
        """``array`` as a tensor of the trials' dtype on the trials' device."""
        return torch.tensor(np.asarray(array), dtype=self.dtype, device=self.device)

    def run(self, pipeline: Pipeline, *, bytes_per_trial: int, chunk_size: int | None = None,
            one_thread: bool = True) -> dict[str, np.ndarray]:
        """:func:`~empirical.engine.trials.run_trials` of the options' trials on this device and dtype,
        with one CPU thread (:func:`one_cpu_thread`) unless ``one_thread`` is False;
        ``chunk_size`` stands in for the options' when they leave it to the mechanism."""
        o = self.options
        with one_cpu_thread(self.device) if one_thread else contextlib.nullcontext():
            return run_trials(pipeline, n_trials=o.n_trials, seed=o.seed, device=self.device,
                              dtype=self.dtype, mode=o.mode,
                              chunk_size=o.chunk_size if o.chunk_size is not None else chunk_size,
                              bytes_per_trial=bytes_per_trial, first_trial=o.first_trial)


def prepare_mechanism(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    options: TrialOptions,
    *,
    least_retain_scores: int = 0,
) -> MechanismSetup:
    """The opening every mechanism shares: the model (default: logistic regression on the
    features), requests, data versions on the device, forget rows, retained subset and score
    sets.

    ``options.retain_scores`` retained rows (all when fewer remain; at least
    ``least_retain_scores``) are drawn with ``options.score_seed`` and sorted.
    """
    retain_scores, dtype = options.retain_scores, options.dtype
    if retain_scores < 0:
        raise ValueError(f"retain_scores must be >= 0, got {retain_scores}")
    requests = as_requests(request)
    versions_np = data_versions(dataset, requests)
    forget = tuple(i for r in requests for i in r.indices)
    retained = np.setdiff1d(np.arange(dataset.n), np.array(forget))
    if retain_scores < retained.size:
        rng = np.random.default_rng(options.score_seed)
        retained = np.sort(rng.choice(retained, size=max(least_retain_scores, retain_scores),
                                      replace=False))
    resolved = resolve_device(options.device)

    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.tensor(np.asarray(array), dtype=dtype, device=resolved)

    model = LogisticRegression(dataset.dim) if options.model is None else options.model
    return MechanismSetup(model, requests, versions_np, tensor_versions(versions_np, tensor), forget,
                          retained, score_sets(dataset, forget, retained, tensor), resolved,
                          dtype, options)


def learn_unlearn_retrain(
    random: TrialRandom,
    *,
    model: CountingModel,
    sets: ScoreSets,
    n_requests: int,
    learn: Callable[[TrialRandom], tuple[Any, torch.Tensor]],
    unlearn: Callable[[TrialRandom, int, Any], tuple[Any, torch.Tensor]],
    retrain: Callable[[TrialRandom], torch.Tensor],
) -> tuple[dict[str, torch.Tensor], Any]:
    """One chunk of the learn -> unlearn -> retrain pipeline; returns its outputs and the state
    after the last request.

    ``learn`` returns (state, published model); ``unlearn(random, position, state)`` serves
    request ``position`` and returns the same pair; ``retrain`` returns the published model
    trained on the final data. The published models are evaluated as ``learned``,
    ``unlearned`` (after the last request) and ``retrained``; the per-example gradients of each
    phase are counted as ``evaluations/learn``, ``evaluations/unlearn/<position>`` and
    ``evaluations/retrain`` (read back with :func:`~empirical.mechanisms.counting.phase_counts`).
    """
    model.reset()
    state, published = learn(random)
    outputs = evaluate(model, "learned", published, sets)
    outputs["evaluations/learn"] = model.take(random.size)
    for position in range(n_requests):
        state, published = unlearn(random, position, state)
        outputs[f"evaluations/unlearn/{position}"] = model.take(random.size)
    outputs.update(evaluate(model, "unlearned", published, sets))
    outputs.update(evaluate(model, "retrained", retrain(random), sets))
    outputs["evaluations/retrain"] = model.take(random.size)
    return outputs, state


def full_batch_bytes_per_trial(model: TrialModel, *, n: int, dtype: torch.dtype) -> int:
    """Memory estimate of one trial of full-batch descent on records shared by the trials
    (chunk sizing): twice the model's step workspace
    (:meth:`~empirical.models.linear.TrialModel.full_batch_workspace_elements`) and a dozen parameter
    vectors."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    return 2 * itemsize * (model.full_batch_workspace_elements(n) + 12 * model.num_params)


@dataclass(frozen=True, eq=False)
class TrialResult:
    """What every mechanism's result holds (the rest is the paper's own): the two samples an
    audit compares, ``unlearned`` and ``retrained``; ``forget_indices``, the requested rows
    (their losses use the original records); ``retain_indices``, the retained rows with reported
    losses; the ``trial_indices``, the ``seed``, the ``device`` and the ``dtype`` name."""

    unlearned: ModelSamples
    retrained: ModelSamples
    forget_indices: tuple[int, ...]
    retain_indices: np.ndarray
    trial_indices: np.ndarray
    seed: int
    device: str
    dtype: str

    @property
    def n_trials(self) -> int:
        """Number of trials in this result."""
        return int(self.trial_indices.shape[0])


def result_fields(setup: MechanismSetup, outputs: dict[str, np.ndarray],
                  result_type: type[TrialResult] = TrialResult) -> dict[str, Any]:
    """The fields of ``result_type`` (a :class:`TrialResult` subclass) the shared setup fills:
    the :class:`ModelSamples` of each side it declares as one (the base's ``unlearned`` and
    ``retrained``, plus e.g. a subclass's ``learned``; an optional side is the mechanism's to
    fill), the forget and retained rows, the trial indices, the seed, the device and the dtype
    name."""
    first, count = setup.options.first_trial, setup.options.n_trials
    sides = [f.name for f in dataclasses.fields(result_type)
             if f.type in (ModelSamples, "ModelSamples")]
    return {
        **{side: model_samples(outputs, side) for side in sides},
        "forget_indices": setup.forget,
        "retain_indices": setup.retained,
        "trial_indices": np.arange(first, first + count),
        "seed": int(setup.options.seed),
        "device": str(setup.device),
        "dtype": str(setup.dtype).replace("torch.", ""),
    }


def check_number(value: float, name: str, *, positive: bool) -> None:
    """``value`` must be finite and > 0 (``positive``) or >= 0; the error names it."""
    if not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
        raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {value}")


def check_config(config: Any, *, positive: Sequence[str] = (), non_negative: Sequence[str] = (),
                 counts: Sequence[str] = (), per_request: Sequence[tuple[str, str]] = (),
                 optional: Sequence[str] = ()) -> None:
    """Checks the fields of a frozen config by name, in this order: ``counts`` are integers
    >= 0; ``per_request`` (name, what one entry is) are normalised by
    :func:`per_request_counts`; ``positive`` and ``non_negative`` are finite and > 0 or >= 0.
    Fields named in ``optional`` may be None (e.g. no clipping). Errors name the field."""
    for name in counts:
        value = getattr(config, name)
        if int(value) != value or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value}")
    for name, what in per_request:
        object.__setattr__(config, name, per_request_counts(getattr(config, name), name,
                                                            what=what))
    for names, strict in ((positive, True), (non_negative, False)):
        for name in names:
            value = getattr(config, name)
            if not (value is None and name in optional):
                check_number(value, name, positive=strict)


def lsi_init_std(init_std: float | None, *, sigma: float, strong_convexity: float,
                 scale: float, remedy: str) -> float:
    """The initialisation's standard deviation: ``init_std`` when given, else
    sqrt(2 sigma^2 / m) times the noise ``scale``, the (2 sigma^2/m)-LSI start of seed 000
    (App. N.3 for PNSGD; Theorem P.2 for Langevin unlearning), which needs m > 0."""
    if init_std is not None:
        return init_std
    if strong_convexity <= 0:
        raise ValueError(f"init_std=None needs m > 0 ({remedy})")
    return math.sqrt(2.0 * sigma**2 / strong_convexity) * scale


def per_request_counts(value: int | Sequence[int], name: str, *,
                       what: str = "value") -> int | tuple[int, ...]:
    """One count for every request, or a non-empty tuple of one count per request (a list
    becomes a tuple); each an integer >= 0. The error names the field ``name``."""
    if isinstance(value, list | tuple):
        value = tuple(int(k) for k in value)
        if not value:
            raise ValueError(f"{name} must list at least one {what}")
    checked = value if isinstance(value, tuple) else (value,)
    if any(int(k) != k or k < 0 for k in checked):
        raise ValueError(f"{name} must be integers >= 0, got {value}")
    return value


def counts_for(value: int | tuple[int, ...], n_requests: int, name: str) -> tuple[int, ...]:
    """The count of each of ``n_requests`` sequential requests (a tuple must match in length)."""
    if isinstance(value, tuple):
        if len(value) != n_requests:
            raise ValueError(f"{name} lists {len(value)} values for {n_requests} requests")
        return value
    return (int(value),) * n_requests


# Intra-op threads of CPU trials (:func:`one_cpu_thread`); None leaves torch's setting alone.
# A benchmark may change it to time other thread counts (empirical.benchmarks.trials).
CPU_TRIAL_THREADS: int | None = 1


@contextlib.contextmanager
def one_cpu_thread(device: torch.device) -> Iterator[None]:
    """One torch intra-op thread on CPU for the duration (restored afterwards); precisely,
    :data:`CPU_TRIAL_THREADS` threads, one unless a benchmark asks for others.

    A batched step works on [chunk, n, d] tensors above PyTorch's parallel grain size, so it is
    split over the intra-op threads, while a single trial's step is below it and runs on one.
    On a shared machine every parallel region waits at a barrier for threads the scheduler has
    put aside: on the 2-core test machine under load, batched D2D and Langevin trials ran about
    20x and 50x slower with 2 threads than with 1 (300 trials of their demo specs), and the
    networks of seed 004 about 40x. The trials are the parallel work (chunks, Ray workers);
    with one thread no reduction is split between threads either.
    """
    threads = CPU_TRIAL_THREADS
    if torch.device(device).type != "cpu" or threads is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)

