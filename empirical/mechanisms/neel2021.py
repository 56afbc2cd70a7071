"""Delete-to-Descent (D2D) as batched trials: Neel, Roth, Sharifi-Malvajerdi (ALT 2021), in the
form Chien et al. run it as a baseline (seed 000, Appendix N.3 Algorithms 2 and 3, Appendix O).

One trial:

1. learn: from x_0 (the point 0, or N(0, init_std^2 I)), T full-batch (projected) gradient
   descent steps ``x <- Pi_R(x - eta * ((1/n) sum_i clip_M(grad l_i(x)) + lambda x))`` with
   eta = 2/(L + m) (:func:`d2d_step_size`); publish x_T + N(0, sigma^2 I) (output perturbation);
2. unlearn each request i: update the data to D_i and fine-tune for I_i steps of the same
   descent, then publish the result plus fresh N(0, sigma^2 I). The start of the fine-tuning is
   the variant's difference (seed 000, App. O, "The non-private internal state of D2D"):

   * ``internal_state=True`` (Theorem O.1 = Neel et al. Theorem 9): the server keeps the
     noiseless parameters and fine-tunes them; only the noisy copy is published;
   * ``internal_state=False`` (Theorem O.2 = Theorem 28): the server keeps only the published
     noisy parameters and fine-tunes those;

3. retrain: the learning step on the final D' from a fresh start, published with fresh noise.

The noise is added once per publication, never inside the descent. A removal is served as a
null record (weight 0, the row kept), as in :mod:`empirical.mechanisms.chien2024`. Gradient
evaluations are counted as the trials run (:class:`~empirical.mechanisms.counting.CountingModel`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from empirical.data import Dataset, RequestSequence, UnlearningRequest
from empirical.mechanisms.common import (
    DataVersion,
    ModelSamples,
    as_requests,
    data_versions,
    evaluate,
    model_samples,
    noisy_step,
    score_sets,
    tensor_versions,
)
from empirical.mechanisms.counting import CountingModel
from empirical.models import LogisticRegression, TrialModel
from empirical.trials import TrialRandom, resolve_device, run_trials

__all__ = ["D2DConfig", "D2DResult", "d2d_contraction", "d2d_step_size", "run_d2d"]


def d2d_step_size(*, smoothness: float, strong_convexity: float) -> float:
    """eta = 2/(L + m), the step size of Theorems O.1 and O.2 (seed 000, App. O)."""
    if not (math.isfinite(smoothness) and math.isfinite(strong_convexity)
            and 0 < strong_convexity < smoothness):
        raise ValueError(f"Theorems O.1/O.2 need 0 < m < L, got m={strong_convexity}, "
                         f"L={smoothness}")
    return 2.0 / (smoothness + strong_convexity)


def d2d_contraction(*, smoothness: float, strong_convexity: float) -> float:
    """gamma = (L - m)/(L + m): one step with eta = 2/(L + m) contracts distances by gamma."""
    d2d_step_size(smoothness=smoothness, strong_convexity=strong_convexity)
    return (smoothness - strong_convexity) / (smoothness + strong_convexity)


def _check(value: float, name: str, *, positive: bool) -> None:
    ok = math.isfinite(value) and (value > 0 if positive else value >= 0)
    if not ok:
        raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {value}")


@dataclass(frozen=True, kw_only=True)
class D2DConfig:
    """Hyper-parameters of D2D (seed 000, App. N.3 Algorithms 2-3; Theorems O.1/O.2).

    ``noise_std`` is the output perturbation sigma (a standard deviation, added once per
    publication). ``learn_iterations`` is T; ``unlearn_iterations`` is the fine-tuning length of
    each request (one integer for all, or one per request: Theorem O.2 asks for
    I + log(log(4 d i/delta))/log(1/gamma) at the i-th request). ``internal_state`` picks the
    variant (module docstring). ``step_size`` must be 2/(L + m) for the theorems
    (:func:`d2d_step_size`; the mechanism runs what it is given). ``noise_multiplier_scale``
    multiplies the drawn output noise without changing the declared sigma (audit tests).
    """

    step_size: float
    noise_std: float
    learn_iterations: int
    unlearn_iterations: int | tuple[int, ...]
    internal_state: bool
    l2: float = 0.0
    clip: float | None = 1.0
    radius: float | None = None
    init_std: float = 0.0
    noise_multiplier_scale: float = 1.0

    def __post_init__(self) -> None:
        _check(self.step_size, "step_size", positive=True)
        _check(self.noise_std, "noise_std", positive=False)
        if int(self.learn_iterations) != self.learn_iterations or self.learn_iterations < 0:
            raise ValueError(f"learn_iterations must be an integer >= 0, got {self.learn_iterations}")
        iterations = self.unlearn_iterations
        if isinstance(iterations, list | tuple):
            iterations = tuple(int(k) for k in iterations)
            if not iterations:
                raise ValueError("unlearn_iterations must list at least one value")
            object.__setattr__(self, "unlearn_iterations", iterations)
        checked = iterations if isinstance(iterations, tuple) else (iterations,)
        if any(int(k) != k or k < 0 for k in checked):
            raise ValueError(f"unlearn_iterations must be integers >= 0, got {iterations}")
        if not isinstance(self.internal_state, bool):
            raise ValueError(f"internal_state must be True or False, got {self.internal_state!r}")
        _check(self.l2, "l2", positive=False)
        if self.clip is not None:
            _check(self.clip, "clip", positive=True)
        if self.radius is not None:
            _check(self.radius, "radius", positive=True)
        _check(self.init_std, "init_std", positive=False)
        _check(self.noise_multiplier_scale, "noise_multiplier_scale", positive=False)

    def iterations_for(self, n_requests: int) -> tuple[int, ...]:
        """The fine-tuning length of each of ``n_requests`` sequential requests."""
        if isinstance(self.unlearn_iterations, tuple):
            if len(self.unlearn_iterations) != n_requests:
                raise ValueError(f"unlearn_iterations lists {len(self.unlearn_iterations)} "
                                 f"values for {n_requests} requests")
            return self.unlearn_iterations
        return (int(self.unlearn_iterations),) * n_requests


@dataclass(frozen=True, eq=False)
class D2DResult:
    """``n_trials`` runs of D2D learn -> unlearn and of retraining on the final D'.

    ``learned``, ``unlearned``, ``retrained`` are the published (noisy) models;
    ``unlearned_clean`` [N, P] the noiseless fine-tuned parameters before the last publication
    (the internal state, when the variant keeps one). ``gradient_evaluations`` counts per-example
    gradients of one trial: ``learn``, ``unlearn`` (one count per request) and ``retrain``.
    """

    config: D2DConfig
    model_name: str
    learned: ModelSamples
    unlearned: ModelSamples
    retrained: ModelSamples
    unlearned_clean: np.ndarray
    gradient_evaluations: dict[str, int | tuple[int, ...]]
    forget_indices: tuple[int, ...]
    retain_indices: np.ndarray
    trial_indices: np.ndarray
    seed: int
    n: int
    num_params: int
    device: str
    dtype: str

    @property
    def n_trials(self) -> int:
        return int(self.trial_indices.shape[0])


def full_batch_gradient(model: TrialModel, params: torch.Tensor, data: DataVersion, *,
                        clip: float | None, l2: float) -> torch.Tensor:
    """(1/n) sum_i clip_M(grad l_i) + lambda x over the whole data version: [N, P].

    The same arithmetic as :func:`~empirical.mechanisms.common.batch_gradient` on all rows, on
    broadcast views of the shared data instead of per-trial copies (no [N, n, d] gather).
    """
    trials, n = params.shape[0], data.features.shape[0]
    gradient = model.data_gradient_sum(
        params,
        data.features.expand(trials, *data.features.shape),
        data.labels.expand(trials, n),
        data.weights.expand(trials, n),
        clip=clip,
        feature_norms=None if clip is None else data.norms.expand(trials, n),
    ) / n
    if l2:
        gradient = gradient + l2 * params
    return gradient


def _counts(outputs: dict[str, np.ndarray], key: str) -> int:
    values = outputs.pop(key)
    if not np.all(values == values[0]):  # pragma: no cover - every trial runs the same steps
        raise RuntimeError(f"trials disagree on {key}")
    return int(values[0])


def run_d2d(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: D2DConfig,
    n_trials: int,
    seed: int,
    model: TrialModel | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float64,
    mode: Literal["batched", "loop"] = "batched",
    chunk_size: int | None = None,
    first_trial: int = 0,
    retain_scores: int = 64,
    score_seed: int = 0,
) -> D2DResult:
    """Run D2D learn -> unlearn (each request of a sequence in turn) and retraining.

    Trial i's numbers depend only on (seed, i) (bit for bit for the linear models on CPU,
    whatever ``mode``, ``chunk_size`` or ``first_trial``). Losses of the forget records use the
    original records; ``retain_scores`` retained rows chosen with ``score_seed`` get losses too.
    """
    base = LogisticRegression(dataset.dim) if model is None else model
    counted = CountingModel(base)
    requests = as_requests(request)
    iterations = config.iterations_for(len(requests))
    if retain_scores < 0:
        raise ValueError(f"retain_scores must be >= 0, got {retain_scores}")
    n, n_params = dataset.n, base.num_params
    noise_std = config.noise_std * config.noise_multiplier_scale

    versions_np = data_versions(dataset, requests)
    forget = tuple(i for r in requests for i in r.indices)
    retained = np.setdiff1d(np.arange(n), np.array(forget))
    if retain_scores < retained.size:
        rng = np.random.default_rng(score_seed)
        retained = np.sort(rng.choice(retained, size=retain_scores, replace=False))
    resolved = resolve_device(device)

    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.tensor(np.asarray(array), dtype=dtype, device=resolved)

    versions = tensor_versions(versions_np, tensor)
    sets = score_sets(dataset, forget, retained, tensor)

    def start(random: TrialRandom, stream: str) -> torch.Tensor:
        params = random.normal(stream, (n_params,))
        return params * config.init_std

    def descend(params: torch.Tensor, data: DataVersion, steps: int) -> torch.Tensor:
        # Noiseless projected gradient descent (Algorithm 2, line 4; Algorithm 3, line 5).
        for _ in range(steps):
            gradient = full_batch_gradient(counted, params, data, clip=config.clip, l2=config.l2)
            params = noisy_step(params, gradient, step_size=config.step_size, noise=None,
                                radius=config.radius)
        return params

    def publish(params: torch.Tensor, random: TrialRandom, stream: str) -> torch.Tensor:
        # Output perturbation N(0, sigma^2 I_d) (Algorithm 3, lines 8-9): once per publication.
        if noise_std == 0:
            return params.clone()
        return params + random.normal(stream, (n_params,)) * noise_std

    def count(random: TrialRandom) -> torch.Tensor:
        value = torch.full((random.size,), counted.evaluations, dtype=torch.int64)
        counted.reset()
        return value

    def pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
        counted.reset()
        clean = descend(start(random, "init/learn"), versions[0], config.learn_iterations)
        published = publish(clean, random, "noise/learn")
        outputs = evaluate(counted, "learned", published, sets)
        outputs["evaluations/learn"] = count(random)
        for position, steps in enumerate(iterations):
            begin = clean if config.internal_state else published
            clean = descend(begin, versions[position + 1], steps)
            published = publish(clean, random, f"noise/unlearn/{position}")
            outputs[f"evaluations/unlearn/{position}"] = count(random)
        outputs.update(evaluate(counted, "unlearned", published, sets))
        outputs["unlearned_clean"] = clean
        retrained = descend(start(random, "init/retrain"), versions[-1], config.learn_iterations)
        outputs.update(evaluate(counted, "retrained", publish(retrained, random, "noise/retrain"),
                                sets))
        outputs["evaluations/retrain"] = count(random)
        return outputs

    itemsize = torch.empty((), dtype=dtype).element_size()
    bytes_per_trial = 2 * itemsize * (base.workspace_elements(n) + 2 * n * dataset.dim
                                      + 12 * n_params)
    outputs = run_trials(pipeline, n_trials=n_trials, seed=seed, device=resolved, dtype=dtype,
                         mode=mode, chunk_size=chunk_size, bytes_per_trial=bytes_per_trial,
                         first_trial=first_trial)
    evaluations: dict[str, int | tuple[int, ...]] = {
        "learn": _counts(outputs, "evaluations/learn"),
        "unlearn": tuple(_counts(outputs, f"evaluations/unlearn/{p}")
                         for p in range(len(iterations))),
        "retrain": _counts(outputs, "evaluations/retrain"),
    }
    return D2DResult(
        config=config,
        model_name=base.name,
        learned=model_samples(outputs, "learned"),
        unlearned=model_samples(outputs, "unlearned"),
        retrained=model_samples(outputs, "retrained"),
        unlearned_clean=outputs["unlearned_clean"],
        gradient_evaluations=evaluations,
        forget_indices=forget,
        retain_indices=retained,
        trial_indices=np.arange(first_trial, first_trial + n_trials),
        seed=int(seed),
        n=n,
        num_params=n_params,
        device=str(resolved),
        dtype=str(dtype).replace("torch.", ""),
    )
