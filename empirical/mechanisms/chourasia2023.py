"""Noisy-GD learning and deletion as batched trials (seed 001, Algorithm 2 and Definition 5.1).

Chourasia and Shah, "Forget Unlearning: Towards True Data-Deletion in Machine Learning"
(ICML 2023). One trial:

1. learn (eq. 14): Theta ~ rho = N(0, v I_d), then K_A steps of Algorithm 2 on D_0,
   ``theta <- theta - eta (1/n sum_x clip_L(grad l(theta; x)) + lam theta) + sqrt(2 eta) N(0, sigma^2 I_d)``
   (full-batch gradients; ``clip_L`` is Remark 5.3's clipping, the identity when ``clip`` is None);
2. the requests of the interaction (Algorithm 4 with f_pub = identity): first ``adaptive``
   requests issued by a :class:`Requester` that sees the model published before each of them
   (and nothing else of the curator), then the fixed requests of the spec (the target edits);
   after each request the curator deletes by K_Abar more steps on the edited database (eq. 15),
   warm-started from the previous model;
3. reference (Definition 4.1's pi_i^Q, a map of D'_0 = D_0 o <ind, y> that knows the requester
   Q): the same curator *and the same requester* run from D'_0, the fixed edits already
   applied, so the requester's edits answer the reference's own releases and the run never
   sees the targets' records. For fixed requests only, this is K_A + sum K_Abar steps of
   Algorithm 2 on the final database from a fresh draw of rho. (The proof of Theorem 4.3, eq.
   56, instead restarts a non-adaptive pi on D'_0 o U'_{<i} o u_i; that pi lags behind the
   requester's late edits, which the curator has seen for only a few steps, so it is a looser
   reference than this one.)

Noise convention, exactly Algorithm 2 and Theorem 5.1: ``sigma`` is the noise *standard deviation
parameter*; sigma^2 is what the theorem calls the gradient noise variance
(sigma^2 = 4 q L^2/(lam epsilon_dp n^2)), and each step adds sqrt(2 eta) sigma times a standard
normal vector, i.e. variance 2 eta sigma^2 per coordinate. The initialisation rho of Theorem 5.1
has per-coordinate variance sigma^2/(lam (1 - eta lam/2)), the stationary variance of a step on
the regulariser alone.

A removal is served as a null record (weight 0, the divisor stays n): a replacement by a record
whose loss is 0, which is convex, 0-smooth and 0-Lipschitz, so Theorem 5.1's assumptions still
hold for the edited database.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from empirical.data.datasets import Dataset
from empirical.data.requests import RequestSequence, UnlearningRequest
from empirical.divergences.gaussian_laws import GaussianLaws
from empirical.engine.trials import TrialRandom, chunk_size_for
from empirical.mechanisms.common import (
    DataVersion,
    ModelSamples,
    TrialOptions,
    TrialResult,
    check_config,
    check_number,
    counts_for,
    data_versions,
    evaluate,
    full_batch_gradient,
    noisy_step,
    prepare_mechanism,
    result_fields,
    tensor_versions,
)
from empirical.models.linear import LinearModel, clip_scale, pairwise_dot, weighted_rows_sum

__all__ = [
    "BatchedRequest",
    "LinearLoss",
    "NoisyGDConfig",
    "NoisyGDResult",
    "PublishedDirectionRequester",
    "Requester",
    "linear_loss_law",
    "noisy_gd_gaussian_laws",
    "run_noisy_gd",
    "stationary_init_variance",
]


# CPU bytes one chunk of full-batch trials may use (see run_noisy_gd): the knee of the demo's
# batched rate on a 2-core EPYC (32 MiB L3), in the heap regime of audits
# (empirical.engine.memory.heap_top_kept): about 5,700, 7,200, 8,700, 9,300 and 9,400 trials/s at
# 2, 4, 8, 16 and 32 MiB. A chunk's size leaves every trial's bits as they are.
CPU_CACHE_BUDGET = 16 * 2**20


def stationary_init_variance(*, sigma: float, step_size: float, l2: float) -> float:
    """Per-coordinate variance of rho in Theorem 5.1: sigma^2 / (lam (1 - eta lam / 2))."""
    check_number(l2, "l2 (lambda)", positive=True)
    if step_size * l2 >= 2:
        raise ValueError("Theorem 5.1's rho needs eta * lam < 2 (the variance is then positive)")
    return sigma**2 / (l2 * (1.0 - step_size * l2 / 2.0))


@dataclass(frozen=True, kw_only=True)
class NoisyGDConfig:
    """Hyper-parameters of Noisy-GD learning and deletion (seed 001, Algorithm 2, Def. 5.1).

    ``sigma``: Algorithm 2's sigma; each step adds sqrt(2 eta) sigma N(0, I_d), so sigma^2 is the
    "gradient noise variance" of Theorem 5.1. ``step_size`` is eta, ``learn_steps`` K_A,
    ``unlearn_steps`` K_Abar (one integer for every request, or one per request, adaptive
    requests first). ``l2`` is lam of r(theta) = lam/2 ||theta||^2. ``clip`` is L of Remark 5.3
    (per-example gradients clipped to norm L; None: no clipping). ``init_variance`` is the
    per-coordinate variance of rho; None means Theorem 5.1's sigma^2/(lam (1 - eta lam/2)).
    ``noise_multiplier_scale`` multiplies every noise draw (steps and rho when derived from
    sigma) without changing the declared sigma: a deliberately broken mechanism for testing
    audits (1 = Algorithm 2).
    """

    step_size: float
    sigma: float
    learn_steps: int
    unlearn_steps: int | tuple[int, ...]
    l2: float
    clip: float | None = None
    init_variance: float | None = None
    noise_multiplier_scale: float = 1.0

    def __post_init__(self) -> None:
        check_config(self, counts=("learn_steps",), per_request=(("unlearn_steps", "K_Abar"),),
                     positive=("step_size", "clip"), optional=("clip", "init_variance"),
                     non_negative=("sigma", "l2", "init_variance", "noise_multiplier_scale"))

    @property
    def step_noise_std(self) -> float:
        """Declared per-step noise standard deviation sqrt(2 eta) sigma (Algorithm 2, line 4)."""
        return math.sqrt(2.0 * self.step_size) * self.sigma

    def rho_variance(self) -> float:
        """Declared per-coordinate variance of the initialisation rho (Theorem 5.1 by default)."""
        if self.init_variance is not None:
            return self.init_variance
        return stationary_init_variance(sigma=self.sigma, step_size=self.step_size, l2=self.l2)

    def unlearn_steps_for(self, n_requests: int) -> tuple[int, ...]:
        """K_Abar for each of ``n_requests`` requests (adaptive ones first)."""
        return counts_for(self.unlearn_steps, n_requests, "unlearn_steps")


@dataclass(frozen=True)
class LinearLoss(LinearModel):
    """l(theta; x, y) = -y <theta, x>: convex, ||x||-Lipschitz and 0-smooth (so beta-smooth for
    every beta > 0), the loss under which Noisy-GD's iterates are exactly Gaussian.

    The gradient -y x does not depend on theta; clipping scales it to norm <= clip. Accuracy
    is sign agreement, as for a linear classifier.
    """

    name: str = "linear"

    @property
    def smoothness(self) -> float:
        """L = 0: a linear loss has no curvature."""
        return 0.0

    def data_gradient_sum(self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor,
                          weights: torch.Tensor, *, clip: float | None,
                          feature_norms: torch.Tensor | None = None) -> torch.Tensor:
        """Sum_i weights_i * Pi_{C_clip}(-y_i x_i): [N, B, d] -> [N, d]."""
        coefficient = -labels * weights
        if clip is not None:
            if feature_norms is None:
                feature_norms = features.square().sum(-1).sqrt()
            coefficient = coefficient * clip_scale(feature_norms, clip)
        return weighted_rows_sum(coefficient, features)

    def data_hessian_sum(self, params: torch.Tensor, features: torch.Tensor,
                         labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Zero: a linear loss has no Hessian ([N, d, d])."""
        return params.new_zeros((params.shape[0], self.dim, self.dim))

    def data_hvp_sum(self, params: torch.Tensor, vectors: torch.Tensor, features: torch.Tensor,
                     labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Zero: a linear loss has no Hessian ([N, d])."""
        return torch.zeros_like(vectors)

    def losses(self, params: torch.Tensor, features: torch.Tensor,
               labels: torch.Tensor) -> torch.Tensor:
        """Per-example losses -y <w, x>: [N, d], [E, d] -> [N, E]."""
        return -labels[None, :] * pairwise_dot(params, features)


@dataclass(frozen=True)
class BatchedRequest:
    """One edit request per trial: ``indices`` [N, r] (int64) and, for a replacement, the new
    records ``features`` [N, r, d] and ``labels`` [N, r]; ``features`` None is a removal."""

    indices: torch.Tensor
    features: torch.Tensor | None = None
    labels: torch.Tensor | None = None


class Requester(Protocol):
    """An adaptive requester (Algorithm 4): it sees the published model and its own randomness.

    ``published`` [N, P] is the model released before request ``position`` (the learned model
    for position 0). ``random`` gives per-trial streams (name them ``requester/...``), so the
    requests of trial i depend only on (seed, i) and on what trial i published: the requester
    is part of the trial, batched and reproducible like the rest.
    """

    def __call__(self, *, position: int, published: torch.Tensor,
                 random: TrialRandom) -> BatchedRequest: ...


@dataclass(frozen=True)
class PublishedDirectionRequester:
    """A p-adaptive requester in the spirit of Theorem 3.1's re-encoding: request j replaces
    record ``rows[j]`` by the unit vector along the model published before it, labelled +1.

    What the published model learned from a target record is copied into the database, where
    it outlives the target's deletion; under Noisy-GD the copy carries only what the releases
    leak, which Theorem 4.3 charges as p epsilon_dp. Deterministic given the releases.
    """

    rows: tuple[int, ...]

    def __call__(self, *, position: int, published: torch.Tensor,
                 random: TrialRandom) -> BatchedRequest:
        size = published.shape[0]
        norms = published.square().sum(-1, keepdim=True).sqrt()
        # a zero release (no information) inserts the first basis vector
        fallback = torch.zeros_like(published)
        fallback[:, 0] = 1.0
        direction = torch.where(norms > 0, published / norms.clamp_min(1e-300), fallback)
        indices = torch.full((size, 1), self.rows[position], dtype=torch.long,
                             device=published.device)
        labels = torch.ones(size, 1, dtype=published.dtype, device=published.device)
        return BatchedRequest(indices, direction[:, None, :], labels)


@dataclass(frozen=True, eq=False)
class NoisyGDResult(TrialResult):
    """Outputs of ``n_trials`` runs of the curator (learn, then every request's deletion) and of
    the reference run that never saw the fixed requests' original records.

    ``unlearned`` and ``retrained`` (the reference) are the two samples an audit compares;
    ``learned`` is the model published before the first request. ``adaptive_indices`` [N, p, r]
    holds the indices the requester edited (empty when there is no requester).
    """

    config: NoisyGDConfig
    model_name: str
    learned: ModelSamples
    adaptive_indices: np.ndarray
    n: int
    num_params: int


def linear_loss_law(*, dataset_versions: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
                    steps: Sequence[int], config: NoisyGDConfig) -> tuple[np.ndarray, float]:
    """Exact law of Noisy-GD under :class:`LinearLoss`: N(mean, var I).

    ``dataset_versions`` (features, labels, weights) and ``steps`` pair each phase's database
    with its number of steps, starting from rho. Each step is theta <- c theta + eta s_D + noise
    with c = 1 - eta lam and s_D = (1/n) sum_i w_i y_i min(1, L/||x_i||) x_i (the clipped
    gradient -y x does not depend on theta), so after k steps the mean moves to
    c^k mean + (1 - c^k) s_D / lam and the variance to c^(2k) var + 2 eta sigma^2 (1 - c^(2k))/(1 - c^2).
    """
    eta, lam = config.step_size, config.l2
    c = 1.0 - eta * lam
    scale = config.noise_multiplier_scale
    mean = np.zeros(dataset_versions[0][0].shape[1])
    var = config.rho_variance() * (1.0 if config.init_variance is not None else scale**2)
    step_var = 2.0 * eta * config.sigma**2 * scale**2
    for (features, labels, weights), k in zip(dataset_versions, steps, strict=True):
        factor = weights * labels
        if config.clip is not None:
            norms = np.linalg.norm(features, axis=1)
            factor = factor * np.minimum(1.0, config.clip / np.maximum(norms, np.finfo(float).tiny))
        s = factor @ features / features.shape[0]
        mean = c**k * mean + (1.0 - c**k) * s / lam
        var = c ** (2 * k) * var + step_var * (1.0 - c ** (2 * k)) / (1.0 - c**2)
    return mean, float(var)


def noisy_gd_gaussian_laws(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: NoisyGDConfig,
    reference_record: int | None = None,
) -> GaussianLaws | None:
    """The exact laws of the deleted model and of the reference of :func:`run_noisy_gd` under
    :class:`LinearLoss` without an adaptive requester (:func:`linear_loss_law` for each).

    The curator runs K_A steps on D_0 then each request's K_Abar steps on its database; the
    reference runs the same numbers of steps from a fresh rho, on the final database (or, with
    ``reference_record``, learning on D_0 with only that record edited), so both variances
    are the same. None where the variance is 0 (no noise).
    """
    requests = tuple(request.requests if isinstance(request, RequestSequence)
                     else (request,) if isinstance(request, UnlearningRequest) else request)
    versions = data_versions(dataset, requests)
    steps = config.unlearn_steps_for(len(requests))
    curator_mean, curator_var = linear_loss_law(
        dataset_versions=versions, steps=(config.learn_steps, *steps), config=config)
    if reference_record is None:
        reference = [versions[-1]] * (len(requests) + 1)
    else:
        if len(requests) != 1:
            raise ValueError("reference_record needs one request")
        edited = requests[0]
        s = reference_record
        single = UnlearningRequest((edited.indices[s],)) if edited.is_removal else UnlearningRequest(
            (edited.indices[s],), edited.replacement_features[s:s + 1],
            edited.replacement_labels[s:s + 1])
        reference = [data_versions(dataset, (single,))[1], versions[1]]
    reference_mean, reference_var = linear_loss_law(
        dataset_versions=reference, steps=(config.learn_steps, *steps), config=config)
    if not curator_var > 0:
        return None
    which = ("Definition 4.1's per-record reference (record "
             f"{reference_record} of the request)" if reference_record is not None
             else "the reference retrained on the final database")
    return GaussianLaws(
        unlearned_mean=curator_mean, retrained_mean=reference_mean,
        variance=max(curator_var, reference_var),
        method=("Noisy-GD on the linear loss: the linear-Gaussian recursion theta <- (1 - eta "
                "lam) theta + eta s_D + N(0, 2 eta sigma^2 I) from rho, in closed form for the "
                f"deleted model and {which}"),
        assumptions=(
            "the linear loss -y <theta, x> has a clipped gradient that does not depend on "
            "theta, so every step is affine in theta plus Gaussian noise, and rho is Gaussian",
            "both runs take K_A + sum K_Abar steps from the same rho, so their variances agree",
            "the trial engine's float rounding is not modelled",
        ))


def run_noisy_gd(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: NoisyGDConfig,
    options: TrialOptions,
    requester: Requester | None = None,
    adaptive_requests: int = 0,
    reference_record: int | None = None,
) -> NoisyGDResult:
    """Noisy-GD learn -> (adaptive requests, then ``request``) -> deletion, and the reference.

    The reference is by default the curator retrained on the final database (every edit in
    place from the start). With ``reference_record`` s (non-adaptive, one fixed request) it is
    Definition 4.1's per-record map pi(D_0 o <ind_s, y_s>): learning on D_0 with only the s-th
    edited record of the request replaced, then the same request's deletion steps. The
    guarantee of Theorem 5.1 is per record, so it does not depend on the request's size r.

    With ``requester`` and ``adaptive_requests`` p,
    the requester issues p requests before the fixed ones, each after seeing the model the
    curator published last; the reference runs the same requester against its own published
    models. On a given device and dtype, trial i's numbers depend only on (seed, i)
    (:class:`TrialOptions`; bit for bit on CPU for the linear models).
    """
    if adaptive_requests < 0 or (adaptive_requests > 0) != (requester is not None):
        raise ValueError("give a requester exactly when adaptive_requests > 0")
    setup = prepare_mechanism(dataset, request, options)
    model = setup.model
    fixed, resolved, versions, sets = setup.requests, setup.device, setup.versions, setup.sets
    unlearn_steps = config.unlearn_steps_for(adaptive_requests + len(fixed))
    n, n_params = dataset.n, model.num_params
    init_std = math.sqrt(config.rho_variance())
    if config.init_variance is None:
        init_std *= config.noise_multiplier_scale
    step_noise_std = config.step_noise_std * config.noise_multiplier_scale
    tensor = setup.tensor
    record_version = None
    if reference_record is not None:
        if adaptive_requests or len(fixed) != 1:
            raise ValueError("reference_record needs one fixed request and no adaptive requests")
        edited = fixed[0]
        if not 0 <= reference_record < len(edited.indices):
            raise ValueError(f"reference_record must index the request's {len(edited.indices)} "
                             f"records, got {reference_record}")
        s = reference_record
        single = UnlearningRequest((edited.indices[s],)) if edited.is_removal else UnlearningRequest(
            (edited.indices[s],), edited.replacement_features[s:s + 1],
            edited.replacement_labels[s:s + 1])
        record_version = tensor_versions(data_versions(dataset, (single,)), tensor)[1]

    def descend(params: torch.Tensor, data: DataVersion, normals: torch.Tensor) -> torch.Tensor:
        """K steps of Algorithm 2 (full batch: every row of the shared or per-trial database),
        step k's noise from the standard normals ``normals[:, k]`` ([N, K, P])."""
        steps = normals.shape[1]
        noise = normals * step_noise_std if step_noise_std > 0 else None
        for k in range(steps):
            gradient = full_batch_gradient(model, params, data, clip=config.clip, l2=config.l2)
            params = noisy_step(params, gradient, step_size=config.step_size,
                                noise=None if noise is None else noise[:, k], radius=None)
        return params

    def per_trial(data: DataVersion, size: int) -> DataVersion:
        """The shared database as one editable copy per trial ([N, n, ...])."""
        return DataVersion(*(t.expand(size, *t.shape).clone() for t in (
            data.features, data.labels, data.weights, data.norms)))

    def apply_batched(data: DataVersion, edit: BatchedRequest, size: int) -> DataVersion:
        trials = torch.arange(size, device=resolved)[:, None].expand_as(edit.indices)
        at = (trials.reshape(-1), edit.indices.reshape(-1))
        features, labels, weights = data.features.clone(), data.labels.clone(), data.weights.clone()
        norms = data.norms.clone()
        if edit.features is None:
            weights[at] = 0.0
        else:
            new = edit.features.reshape(-1, features.shape[-1]).to(features)
            features[at] = new
            labels[at] = edit.labels.reshape(-1).to(labels)
            norms[at] = new.square().sum(-1).sqrt()
        return DataVersion(features, labels, weights, norms)

    def interaction(random: TrialRandom, start: int, prefix: str,
                    outputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """rho -> K_A steps on D_start -> the requests' deletions; returns the final model.

        ``start`` 0 is the curator on D_0; ``start`` = len(fixed) the reference, whose
        database already carries every fixed edit (so the fixed requests change nothing)."""
        size = random.size
        # rho and every step's noise of this run are one draw of its stream (one call per run,
        # whatever the number of phases): the start, then the K_A learning steps, then each
        # request's K_Abar deletion steps in order.
        phases = (config.learn_steps, *unlearn_steps)
        normals = random.normal(f"noise/{prefix}", (1 + sum(phases), n_params))
        params = normals[:, 0] * init_std
        bounds = np.cumsum((1, *phases)).tolist()
        phase_normals = [normals[:, a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        data = versions[start]
        if prefix == "reference" and record_version is not None:
            data = record_version  # pi(D_0 o <ind, y>): only the target record replaced
        params = descend(params, data, phase_normals[0])
        if prefix == "curator":
            outputs.update(evaluate(model, "learned", params, sets))
        position = 0
        if adaptive_requests:
            data = per_trial(data, size)
            chosen = []
            for position in range(adaptive_requests):
                edit = requester(position=position, published=params, random=random)
                chosen.append(edit.indices)
                data = apply_batched(data, edit, size)
                params = descend(params, data, phase_normals[1 + position])
            outputs[f"{prefix}/adaptive_indices"] = torch.stack(chosen, dim=1)
        for offset in range(len(fixed)):
            position = adaptive_requests + offset
            target = versions[max(start, offset + 1)]
            if adaptive_requests:
                edited = fixed[offset]
                indices = torch.as_tensor(edited.indices, device=resolved).expand(size, -1)
                if start == 0:
                    edit = BatchedRequest(indices) if edited.is_removal else BatchedRequest(
                        indices, tensor(edited.replacement_features).expand(size, -1, -1),
                        tensor(edited.replacement_labels).expand(size, -1))
                    data = apply_batched(data, edit, size)
            else:
                data = target
            params = descend(params, data, phase_normals[1 + position])
        return params

    def pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
        outputs: dict[str, torch.Tensor] = {}
        outputs.update(evaluate(model, "unlearned", interaction(random, 0, "curator", outputs),
                                sets))
        start = 0 if record_version is not None else len(fixed)
        outputs.update(evaluate(model, "retrained",
                                interaction(random, start, "reference", outputs), sets))
        return outputs

    itemsize = torch.empty((), dtype=setup.dtype).element_size()
    total_steps = config.learn_steps + sum(unlearn_steps)
    per_trial_data = (dataset.dim + 4) * n if adaptive_requests else 0
    # A step's temporaries are a dozen [n] vectors per trial (the products with the shared rows
    # build no [n, d] temporary); the noise of a whole run is drawn at once, its counter words
    # and scaled copies about four times its size.
    bytes_per_trial = itemsize * (4 * (1 + total_steps) * n_params + 12 * (n + n_params)
                                  + 2 * per_trial_data)
    chunk_size = None
    if options.mode == "batched" and resolved.type == "cpu":
        chunk_size = chunk_size_for(n_trials=options.n_trials, bytes_per_trial=bytes_per_trial,
                                    device=resolved, memory_budget=CPU_CACHE_BUDGET)
    outputs = setup.run(pipeline, bytes_per_trial=bytes_per_trial, chunk_size=chunk_size)
    adaptive = outputs.get("curator/adaptive_indices",
                           np.zeros((options.n_trials, 0, 0), dtype=np.int64))
    return NoisyGDResult(
        config=config,
        model_name=model.name,
        adaptive_indices=adaptive,
        n=n,
        num_params=n_params,
        **result_fields(setup, outputs, NoisyGDResult),
    )
