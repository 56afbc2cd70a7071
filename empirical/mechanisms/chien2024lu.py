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

import torch

from empirical.data.datasets import Dataset
from empirical.data.requests import RequestSequence, UnlearningRequest
from empirical.engine.trials import TrialRandom
from empirical.mechanisms.common import (
    DataVersion,
    ModelSamples,
    TrialOptions,
    TrialResult,
    check_config,
    counts_for,
    full_batch_bytes_per_trial,
    full_batch_gradient,
    learn_unlearn_retrain,
    lsi_init_std,
    noisy_step,
    prepare_mechanism,
    result_fields,
)
from empirical.mechanisms.counting import CountingModel, phase_counts

__all__ = ["LangevinConfig", "LangevinResult", "full_batch_gradient", "run_langevin"]

# Steps whose noise is drawn in one generator call per trial.
NOISE_BLOCK = 256


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
        check_config(self, counts=("learn_iterations",),
                     per_request=(("unlearn_iterations", "value"),),
                     positive=("step_size", "clip", "radius"),
                     non_negative=("sigma", "l2", "init_std", "noise_multiplier_scale"),
                     optional=("clip", "radius", "init_std"))

    @property
    def step_noise_std(self) -> float:
        """Declared per-step noise standard deviation sqrt(2 eta sigma^2)."""
        return math.sqrt(2.0 * self.step_size * self.sigma**2)

    def iterations_for(self, n_requests: int) -> tuple[int, ...]:
        """Unlearning iterations of each of ``n_requests`` requests."""
        return counts_for(self.unlearn_iterations, n_requests, "unlearn_iterations")


@dataclass(frozen=True, eq=False)
class LangevinResult(TrialResult):
    """``n_trials`` runs of LU learn -> unlearn and of retraining on the final D'.

    ``gradient_evaluations`` counts per-example gradients of one trial: ``learn``, ``unlearn``
    (one count per request) and ``retrain``. ``strong_convexity`` m includes the l2 term.
    """

    config: LangevinConfig
    model_name: str
    learned: ModelSamples
    gradient_evaluations: dict[str, int | tuple[int, ...]]
    n: int
    num_params: int
    strong_convexity: float


def run_langevin(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: LangevinConfig,
    options: TrialOptions,
) -> LangevinResult:
    """Run LU learn -> unlearn (each request in turn) and retraining for ``n_trials`` trials.

    Trial i's numbers depend only on (seed, i) (:class:`TrialOptions`; bit for bit for the
    linear models on CPU).
    """
    setup = prepare_mechanism(dataset, request, options)
    base = setup.model
    counted = CountingModel(base)
    iterations = config.iterations_for(len(setup.requests))
    versions, n_params = setup.versions, base.num_params
    strong_convexity = base.strong_convexity + config.l2
    init_std = lsi_init_std(config.init_std, sigma=config.sigma,
                            strong_convexity=strong_convexity,
                            scale=config.noise_multiplier_scale,
                            remedy="Theorem P.2's (2 sigma^2/m)-LSI start")
    step_noise_std = config.step_noise_std * config.noise_multiplier_scale

    def pngd(params: torch.Tensor | None, data: DataVersion, steps: int, random: TrialRandom,
             stream: str, *, start_std: float | None = None) -> torch.Tensor:
        """``steps`` PNGD steps from ``params``, or with ``start_std`` from ``start_std`` times a
        standard normal vector drawn as the first row of the first noise block."""
        # Noise is drawn per block of steps (one draw for all trials of a chunk, not one per
        # step); the stream continues across blocks, so the draws do not depend on the batching.
        done, lead = 0, int(start_std is not None)
        while lead or done < steps:
            block = min(NOISE_BLOCK, steps - done)
            normals = None
            if lead or step_noise_std > 0:
                normals = random.normal(stream, (lead + block, n_params))
            if lead:
                params, normals, lead = normals[:, 0] * start_std, normals[:, 1:], 0
            noise = normals * step_noise_std if normals is not None and step_noise_std > 0 else None
            for t in range(block):
                gradient = full_batch_gradient(counted, params, data, clip=config.clip,
                                               l2=config.l2)
                params = noisy_step(params, gradient, step_size=config.step_size,
                                    noise=None if noise is None else noise[:, t],
                                    radius=config.radius)
            done += block
        return params

    def trained(random: TrialRandom, phase: str, data: DataVersion) -> torch.Tensor:
        return pngd(None, data, config.learn_iterations, random, f"noise/{phase}",
                    start_std=init_std)

    def learn(random: TrialRandom) -> tuple[torch.Tensor, torch.Tensor]:
        params = trained(random, "learn", versions[0])
        return params, params

    def unlearn(random: TrialRandom, position: int,
                params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # From the learned model, no other state (App. P).
        params = pngd(params, versions[position + 1], iterations[position], random,
                      f"noise/unlearn/{position}")
        return params, params

    def pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
        return learn_unlearn_retrain(
            random, model=counted, sets=setup.sets, n_requests=len(iterations), learn=learn,
            unlearn=unlearn, retrain=lambda random: trained(random, "retrain", versions[-1]))[0]

    bytes_per_trial = full_batch_bytes_per_trial(base, n=dataset.n, dtype=setup.dtype)
    outputs = setup.run(pipeline, bytes_per_trial=bytes_per_trial)
    evaluations = phase_counts(outputs, len(iterations))
    return LangevinResult(
        config=config,
        model_name=base.name,
        gradient_evaluations=evaluations,
        n=dataset.n,
        num_params=n_params,
        strong_convexity=float(strong_convexity),
        **result_fields(setup, outputs, LangevinResult),
    )
