"""Langevin unlearning (LU) as batched trials: Chien, Wang, Li (NeurIPS 2024), as seed 000
restates it (Appendix P, Theorems P.1 and P.2) and runs it as a baseline (Section 4).

Learning and unlearning are projected noisy full-batch gradient descent (PNGD):

    x <- Pi_R(x - eta * ((1/n) sum_i clip_M(grad l_i(x)) + lambda x) + sqrt(2 eta sigma^2) W),

with a fresh standard normal W at every step (the noise sits inside every step, unlike D2D's
output perturbation). One trial:

1. learn: x_0 ~ N(0, (2 sigma^2/m) I), the (2 sigma^2/m)-LSI initialisation Theorem P.2 assumes
   (``init_std`` None), then T PNGD steps on D;
2. unlearn: from the learned x (no other state), K_r PNGD steps on D_r for each request r (a
   batch request on S records is one request);
3. retrain: the learning step on the final D' from a fresh initialisation.

A removal is served as a null record (weight 0). Gradient evaluations are counted as the trials
run (:class:`~empirical.mechanisms.counting.CountingModel`).
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

__all__ = ["LangevinConfig", "LangevinResult", "full_batch_gradient", "run_langevin"]

# Steps whose noise is drawn in one generator call per trial.
NOISE_BLOCK = 256


def _check(value: float, name: str, *, positive: bool) -> None:
    ok = math.isfinite(value) and (value > 0 if positive else value >= 0)
    if not ok:
        raise ValueError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {value}")


@dataclass(frozen=True, kw_only=True)
class LangevinConfig:
    """Hyper-parameters of Langevin unlearning (seed 000, App. P, Theorems P.1/P.2).

    ``sigma`` is the declared noise level (per-step noise sqrt(2 eta sigma^2) N(0, I)).
    ``learn_iterations`` is T; ``unlearn_iterations`` is K, one integer or one per request.
    Theorems P.1/P.2 need 0 < eta <= 1/L (checked by the caller, which knows L).
    ``init_std`` None means sqrt(2 sigma^2/m) (the LSI initialisation of Theorem P.2).
    ``noise_multiplier_scale`` multiplies every noise draw (steps and the derived
    initialisation) without changing the declared sigma (audit tests).
    """

    step_size: float
    sigma: float
    learn_iterations: int
    unlearn_iterations: int | tuple[int, ...]
    l2: float = 0.0
    clip: float | None = 1.0
    radius: float | None = None
    init_std: float | None = None
    noise_multiplier_scale: float = 1.0

    def __post_init__(self) -> None:
        _check(self.step_size, "step_size", positive=True)
        _check(self.sigma, "sigma", positive=False)
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
        _check(self.l2, "l2", positive=False)
        if self.clip is not None:
            _check(self.clip, "clip", positive=True)
        if self.radius is not None:
            _check(self.radius, "radius", positive=True)
        if self.init_std is not None:
            _check(self.init_std, "init_std", positive=False)
        _check(self.noise_multiplier_scale, "noise_multiplier_scale", positive=False)

    @property
    def step_noise_std(self) -> float:
        """Declared per-step noise standard deviation sqrt(2 eta sigma^2)."""
        return math.sqrt(2.0 * self.step_size * self.sigma**2)

    def iterations_for(self, n_requests: int) -> tuple[int, ...]:
        if isinstance(self.unlearn_iterations, tuple):
            if len(self.unlearn_iterations) != n_requests:
                raise ValueError(f"unlearn_iterations lists {len(self.unlearn_iterations)} "
                                 f"values for {n_requests} requests")
            return self.unlearn_iterations
        return (int(self.unlearn_iterations),) * n_requests


@dataclass(frozen=True, eq=False)
class LangevinResult:
    """``n_trials`` runs of LU learn -> unlearn and of retraining on the final D'.

    ``gradient_evaluations`` counts per-example gradients of one trial: ``learn``, ``unlearn``
    (one count per request) and ``retrain``. ``strong_convexity`` m includes the l2 term.
    """

    config: LangevinConfig
    model_name: str
    learned: ModelSamples
    unlearned: ModelSamples
    retrained: ModelSamples
    gradient_evaluations: dict[str, int | tuple[int, ...]]
    forget_indices: tuple[int, ...]
    retain_indices: np.ndarray
    trial_indices: np.ndarray
    seed: int
    n: int
    num_params: int
    strong_convexity: float
    device: str
    dtype: str

    @property
    def n_trials(self) -> int:
        return int(self.trial_indices.shape[0])


def full_batch_gradient(model: TrialModel, params: torch.Tensor, data: DataVersion, *,
                        clip: float | None, l2: float) -> torch.Tensor:
    """(1/n) sum_i clip_M(grad l_i(x)) + lambda x on broadcast views of the data: [N, P]."""
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


def run_langevin(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: LangevinConfig,
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
) -> LangevinResult:
    """Run LU learn -> unlearn (each request in turn) and retraining for ``n_trials`` trials.

    Trial i's numbers depend only on (seed, i) (bit for bit for the linear models on CPU).
    """
    base = LogisticRegression(dataset.dim) if model is None else model
    counted = CountingModel(base)
    requests = as_requests(request)
    iterations = config.iterations_for(len(requests))
    if retain_scores < 0:
        raise ValueError(f"retain_scores must be >= 0, got {retain_scores}")
    n, n_params = dataset.n, base.num_params
    strong_convexity = base.strong_convexity + config.l2
    scale = config.noise_multiplier_scale
    if config.init_std is None:
        if strong_convexity <= 0:
            raise ValueError("init_std=None needs m > 0 (Theorem P.2's (2 sigma^2/m)-LSI start)")
        init_std = math.sqrt(2.0 * config.sigma**2 / strong_convexity) * scale
    else:
        init_std = config.init_std
    step_noise_std = config.step_noise_std * scale

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

    def pngd(params: torch.Tensor, data: DataVersion, steps: int, random: TrialRandom,
             stream: str) -> torch.Tensor:
        # Noise is drawn per block of steps (one generator call per trial and block, not per
        # step); the stream continues across blocks, so the draws do not depend on the batching.
        done = 0
        while done < steps:
            block = min(NOISE_BLOCK, steps - done)
            noise = None
            if step_noise_std > 0:
                noise = random.normal(stream, (block, n_params)) * step_noise_std
            for t in range(block):
                gradient = full_batch_gradient(counted, params, data, clip=config.clip,
                                               l2=config.l2)
                params = noisy_step(params, gradient, step_size=config.step_size,
                                    noise=None if noise is None else noise[:, t],
                                    radius=config.radius)
            done += block
        return params

    def count(random: TrialRandom) -> torch.Tensor:
        value = torch.full((random.size,), counted.evaluations, dtype=torch.int64)
        counted.reset()
        return value

    def pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
        counted.reset()
        params = random.normal("init/learn", (n_params,)) * init_std
        params = pngd(params, versions[0], config.learn_iterations, random, "noise/learn")
        outputs = evaluate(counted, "learned", params, sets)
        outputs["evaluations/learn"] = count(random)
        for position, steps in enumerate(iterations):
            params = pngd(params, versions[position + 1], steps, random,
                          f"noise/unlearn/{position}")
            outputs[f"evaluations/unlearn/{position}"] = count(random)
        outputs.update(evaluate(counted, "unlearned", params, sets))
        params = random.normal("init/retrain", (n_params,)) * init_std
        params = pngd(params, versions[-1], config.learn_iterations, random, "noise/retrain")
        outputs.update(evaluate(counted, "retrained", params, sets))
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
    return LangevinResult(
        config=config,
        model_name=base.name,
        learned=model_samples(outputs, "learned"),
        unlearned=model_samples(outputs, "unlearned"),
        retrained=model_samples(outputs, "retrained"),
        gradient_evaluations=evaluations,
        forget_indices=forget,
        retain_indices=retained,
        trial_indices=np.arange(first_trial, first_trial + n_trials),
        seed=int(seed),
        n=n,
        num_params=n_params,
        strong_convexity=float(strong_convexity),
        device=str(resolved),
        dtype=str(dtype).replace("torch.", ""),
    )
