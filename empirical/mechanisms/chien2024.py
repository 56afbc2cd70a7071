"""PNSGD learning, unlearning and retraining as batched trials (seed 000, Algorithm 1).

Chien, Wang, Chen, Li, "Certified Machine Unlearning via Noisy Stochastic Gradient Descent"
(NeurIPS 2024). One trial:

1. draw a partition B of [n] into n/b batches of size b (per trial, or one fixed partition);
2. learn: x ~ N(0, init_std^2 I) (default init_std^2 = 2 sigma^2 / m, as in App. N.3), then T
   epochs over B^0, ..., B^{n/b-1} of
   ``x <- Pi_R(x - eta * (1/b) sum_{i in B^j} [clip_M(grad l_i(x)) + lambda x] + sqrt(2 eta sigma^2) W)``;
3. unlearn: from the learned x, K epochs of the same recursion on D' with the same B and fresh
   noise (one K per request of a sequence, Thm 3.11; a batch request is one request on S
   records, Cor. J.1);
4. retrain: the learning step on the final D' from a fresh initialisation (with a fresh
   partition when partitions are per trial).

A removal is served as a null record (zero data loss), so n and the partition are unchanged;
this is the "replace by a null point" reading of replacement adjacency that App. N.3 cites.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from empirical.data.datasets import Dataset
from empirical.data.requests import RequestSequence, UnlearningRequest
from empirical.engine.trials import TrialRandom, trial_seed
from empirical.mechanisms.common import (
    ModelSamples,
    TrialOptions,
    TrialResult,
    batch_gradient,
    check_config,
    counts_for,
    full_batch_gradient,
    learn_unlearn_retrain,
    lsi_init_std,
    noisy_step,
    prepare_mechanism,
    result_fields,
)
from empirical.mechanisms.counting import CountingModel, phase_counts
from empirical.models.linear import LOGISTIC_SMOOTHNESS, LinearModel

__all__ = [
    "PAPER_BURN_IN_EPOCHS",
    "ModelSamples",
    "PNSGDConfig",
    "PNSGDResult",
    "paper_logistic_config",
    "run_pnsgd",
]

# Seed 000, Table 2: burn-in epochs T per batch size ("full" = n).
PAPER_BURN_IN_EPOCHS = {32: 10, 128: 20, 512: 50, "full": 1000}


@dataclass(frozen=True, kw_only=True)
class PNSGDConfig:
    """Hyperparameters of PNSGD (un)learning, seed 000 Algorithm 1.

    ``sigma`` is the declared noise level: each step adds sqrt(2 eta sigma^2) N(0, I).
    ``noise_multiplier_scale`` multiplies every noise the mechanism draws (step noise, and
    the initialisation when ``init_std`` is derived from sigma) without changing the declared
    sigma, to build deliberately under-noised mechanisms for audit tests.
    ``unlearn_epochs`` is K, or one K per request of a sequence.
    ``l2`` is lambda: every per-example loss gets (lambda/2) ||x||^2 (App. N.3 uses 1e-6 n).
    ``clip`` is M (None: no clipping), ``radius`` is R (None: no projection).
    ``init_std`` None means sqrt(2 sigma^2 / m) with m the strong convexity of the objective.
    ``partition``: "per_trial" draws B per trial (Algorithm 1; retraining draws its own B),
    "fixed" uses one B for every trial and phase (the conditional-on-B laws of Thm 3.2).
    """

    step_size: float
    sigma: float
    batch_size: int
    learn_epochs: int
    unlearn_epochs: int | tuple[int, ...]
    l2: float = 0.0
    clip: float | None = 1.0
    radius: float | None = None
    init_std: float | None = None
    partition: Literal["per_trial", "fixed"] = "per_trial"
    noise_multiplier_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        check_config(self, counts=("learn_epochs",), per_request=(("unlearn_epochs", "K"),),
                     positive=("step_size", "clip", "radius"),
                     non_negative=("sigma", "l2", "init_std", "noise_multiplier_scale"),
                     optional=("clip", "radius", "init_std"))
        if self.partition not in ("per_trial", "fixed"):
            raise ValueError(f"partition must be 'per_trial' or 'fixed', got {self.partition!r}")

    @property
    def noise_std(self) -> float:
        """Declared per-step noise standard deviation sqrt(2 eta sigma^2)."""
        return math.sqrt(2.0 * self.step_size * self.sigma**2)

    def unlearn_epochs_for(self, n_requests: int) -> tuple[int, ...]:
        """K for each of ``n_requests`` sequential requests."""
        return counts_for(self.unlearn_epochs, n_requests, "unlearn_epochs")


def paper_logistic_config(
    *,
    n: int,
    sigma: float,
    batch_size: int,
    unlearn_epochs: int | tuple[int, ...] = 1,
    learn_epochs: int | None = None,
    radius: float | None = 100.0,
    clip: float = 1.0,
    noise_multiplier_scale: float = 1.0,
) -> PNSGDConfig:
    """Seed 000's logistic-regression settings (App. N.3): lambda = 1e-6 n, eta = 1/L with
    L = 1/4 + lambda, M = 1, R = 100, T from Table 2 unless given.

    The authors' released code runs without projection; pass ``radius=None`` for that.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    l2 = 1e-6 * n
    if learn_epochs is None:
        key = "full" if batch_size == n else batch_size
        if key not in PAPER_BURN_IN_EPOCHS:
            raise ValueError(
                f"Table 2 has no burn-in for batch size {batch_size}; pass learn_epochs="
            )
        learn_epochs = PAPER_BURN_IN_EPOCHS[key]
    return PNSGDConfig(
        step_size=1.0 / (float(LOGISTIC_SMOOTHNESS) + l2),  # eta = 1/L, L = 1/4 + lambda
        sigma=sigma,
        batch_size=batch_size,
        learn_epochs=learn_epochs,
        unlearn_epochs=unlearn_epochs,
        l2=l2,
        clip=clip,
        radius=radius,
        partition="per_trial",
        noise_multiplier_scale=noise_multiplier_scale,
    )


@dataclass(frozen=True, eq=False)
class PNSGDResult(TrialResult):
    """Outputs of ``n_trials`` runs of learn -> unlearn and of retraining on D'.

    ``unlearned`` and ``retrained`` are the two samples an audit compares; ``learned`` is the
    model before unlearning. ``forget_indices`` are the requested rows (losses use their
    original records), ``retain_indices`` the rows of the retained subset. ``forget_batch``
    [N, S] is the batch position j of each forget row in the learning partition.
    ``fixed_partition`` [n/b, b] holds the batches when ``config.partition == "fixed"``.
    ``strong_convexity`` m and ``smoothness`` L include the l2 term. ``gradient_evaluations``
    counts the per-example gradients of one trial: ``learn``, ``unlearn`` (one count per
    request) and ``retrain`` (null records included, as they are computed too).
    """

    config: PNSGDConfig
    model_name: str
    learned: ModelSamples
    gradient_evaluations: dict[str, int | tuple[int, ...]]
    forget_batch: np.ndarray
    fixed_partition: np.ndarray | None
    n: int
    num_params: int
    strong_convexity: float
    smoothness: float | None


def run_pnsgd(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: PNSGDConfig,
    options: TrialOptions,
) -> PNSGDResult:
    """Run PNSGD learn -> unlearn and retrain-from-scratch for ``n_trials`` trials.

    n must be a multiple of the batch size (see :func:`empirical.data.datasets.drop_to_multiple`). The
    forget records' losses use the original records. On a given device type and dtype, trial
    i's numbers depend only on (seed, i) (:class:`TrialOptions`; bit for bit for the linear
    models on CPU, to rounding for networks).
    """
    n, batch = dataset.n, config.batch_size
    if n % batch != 0:
        raise ValueError(
            f"n={n} is not a multiple of batch_size={batch}; drop the tail first with "
            "empirical.data.datasets.drop_to_multiple (as Chien et al. 2024 do)"
        )
    setup = prepare_mechanism(dataset, request, options)
    model = setup.model
    counted = CountingModel(model)
    strong_convexity = model.strong_convexity + config.l2
    init_std = lsi_init_std(config.init_std, sigma=config.sigma,
                            strong_convexity=strong_convexity,
                            scale=config.noise_multiplier_scale,
                            remedy="set l2 > 0 or give init_std")
    step_noise_std = config.noise_std * config.noise_multiplier_scale
    unlearn_epochs = config.unlearn_epochs_for(len(setup.requests))
    resolved, versions, sets = setup.device, setup.versions, setup.sets
    forget_rows = torch.as_tensor(setup.forget, dtype=torch.long, device=resolved)
    n_batches, n_params = n // batch, model.num_params

    fixed_order = None
    if config.partition == "fixed":
        # Drawn once on the CPU so that the shared partition is the same on every device.
        generator = torch.Generator().manual_seed(
            trial_seed(seed=options.seed, trial=-1, stream="partition/fixed"))
        fixed_order = torch.randperm(n, generator=generator)
        fixed_on_device = fixed_order.to(resolved)

    def partition(random: TrialRandom, stream: str) -> torch.Tensor:
        if fixed_order is not None:
            return fixed_on_device.expand(random.size, n)
        return random.permutation(stream, n)

    def batches_of(random: TrialRandom, order: torch.Tensor) -> torch.Tensor:
        return order.reshape(random.size, n_batches, batch)

    def initial(random: TrialRandom, stream: str) -> torch.Tensor:
        return random.normal(stream, (n_params,)) * init_std

    def train(
        params: torch.Tensor,
        data,
        batches: torch.Tensor,
        epochs: int,
        random: TrialRandom,
        stream: str,
    ) -> torch.Tensor:
        for _ in range(epochs):
            noise = None
            if step_noise_std > 0:
                noise = random.normal(stream, (n_batches, n_params)) * step_noise_std
            for j in range(n_batches):
                if n_batches == 1:
                    # One batch of every row: its order does not change the sum, so the shared
                    # rows serve through broadcast views instead of a gathered copy per trial.
                    gradient = full_batch_gradient(counted, params, data, clip=config.clip,
                                                   l2=config.l2)
                else:
                    gradient = batch_gradient(counted, params, data, batches[:, j, :],
                                              batch_size=batch, clip=config.clip, l2=config.l2)
                params = noisy_step(params, gradient, step_size=config.step_size,
                                    noise=None if noise is None else noise[:, j],
                                    radius=config.radius)
        return params

    def learn(random: TrialRandom) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
        order = partition(random, "partition/learn")
        params = train(initial(random, "init/learn"), versions[0], batches_of(random, order),
                       config.learn_epochs, random, "noise/learn")
        return (params, order), params

    def unlearn(random: TrialRandom, position: int, state):
        # The same partition B as learning, fresh noise (Algorithm 1, unlearning).
        params, order = state
        params = train(params, versions[position + 1], batches_of(random, order),
                       unlearn_epochs[position], random, f"noise/unlearn/{position}")
        return (params, order), params

    def retrain(random: TrialRandom) -> torch.Tensor:
        # A fresh partition when partitions are per trial (the fixed one otherwise).
        order = partition(random, "partition/retrain")
        return train(initial(random, "init/retrain"), versions[-1], batches_of(random, order),
                     config.learn_epochs, random, "noise/retrain")

    def pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
        outputs, (_, order) = learn_unlearn_retrain(
            random, model=counted, sets=sets, n_requests=len(unlearn_epochs), learn=learn,
            unlearn=unlearn, retrain=retrain)
        # Batch position of each forget row: inverse permutation, then integer division by b.
        inverse = torch.argsort(order, dim=1)
        outputs["forget_batch"] = inverse[:, forget_rows] // batch
        return outputs

    itemsize = torch.empty((), dtype=setup.dtype).element_size()
    workspace = model.workspace_elements(batch)
    if n_batches == 1 and isinstance(model, LinearModel):
        # Full batch on broadcast rows: a dozen [n] vectors per trial for a step, and as many
        # again for sampling and evaluation (a chunk's measured peak was twice the dozen).
        workspace = 24 * n
    bytes_per_trial = 2 * (itemsize * (n_batches * n_params + workspace + 12 * n_params)
                           + 8 * 3 * n)
    outputs = setup.run(pipeline, bytes_per_trial=bytes_per_trial)
    smoothness = model.smoothness
    return PNSGDResult(
        config=config,
        model_name=model.name,
        gradient_evaluations=phase_counts(outputs, len(unlearn_epochs)),
        forget_batch=outputs["forget_batch"],
        fixed_partition=None if fixed_order is None else fixed_order.reshape(n_batches, batch)
        .numpy(),
        n=n,
        num_params=n_params,
        strong_convexity=float(strong_convexity),
        smoothness=None if smoothness is None else float(smoothness + config.l2),
        **result_fields(setup, outputs, PNSGDResult),
    )
