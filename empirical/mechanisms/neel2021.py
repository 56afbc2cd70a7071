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

A descent from a start that is the same in every trial (``init_std`` 0: the point 0) is the same
in every trial: the learning and retraining descents, and with ``internal_state`` the
fine-tuning too, are then computed once (as one trial, so loop and batched runs agree bit for
bit) and shared; only the publication noise is drawn per trial.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from empirical.data.datasets import Dataset
from empirical.data.requests import RequestSequence, UnlearningRequest
from empirical.divergences.gaussian_laws import GaussianLaws
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
    noisy_step,
    prepare_mechanism,
    result_fields,
)
from empirical.mechanisms.counting import CountingModel, phase_counts

__all__ = ["D2DConfig", "D2DResult", "d2d_contraction", "d2d_gaussian_laws", "d2d_step_size",
           "full_batch_gradient", "run_d2d"]


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
        check_config(self, counts=("learn_iterations",),
                     per_request=(("unlearn_iterations", "value"),),
                     positive=("step_size", "clip", "radius"), optional=("clip", "radius"),
                     non_negative=("noise_std", "l2", "init_std", "noise_multiplier_scale"))
        if not isinstance(self.internal_state, bool):
            raise ValueError(f"internal_state must be True or False, got {self.internal_state!r}")

    def iterations_for(self, n_requests: int) -> tuple[int, ...]:
        """The fine-tuning length of each of ``n_requests`` sequential requests."""
        return counts_for(self.unlearn_iterations, n_requests, "unlearn_iterations")


@dataclass(frozen=True, eq=False)
class D2DResult(TrialResult):
    """``n_trials`` runs of D2D learn -> unlearn and of retraining on the final D'.

    ``learned``, ``unlearned``, ``retrained`` are the published (noisy) models;
    ``unlearned_clean`` [N, P] the noiseless fine-tuned parameters before the last publication
    (the internal state, when the variant keeps one). ``gradient_evaluations`` counts per-example
    gradients of one trial: ``learn``, ``unlearn`` (one count per request) and ``retrain``.
    """

    config: D2DConfig
    model_name: str
    learned: ModelSamples
    unlearned_clean: np.ndarray
    gradient_evaluations: dict[str, int | tuple[int, ...]]
    n: int
    num_params: int


def run_d2d(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: D2DConfig,
    options: TrialOptions,
) -> D2DResult:
    """Run D2D learn -> unlearn (each request of a sequence in turn) and retraining.

    Trial i's numbers depend only on (seed, i) (:class:`TrialOptions`; bit for bit for the
    linear models on CPU). Losses of the forget records use the original records.
    """
    setup = prepare_mechanism(dataset, request, options)
    base = setup.model
    counted = CountingModel(base)
    iterations = config.iterations_for(len(setup.requests))
    versions, n_params = setup.versions, base.num_params
    noise_std = config.noise_std * config.noise_multiplier_scale
    # The start x_0 = 0 is the same in every trial, and so is every noiseless descent from it.
    shared_start = config.init_std == 0
    # Descents shared by all trials: key -> (parameters [1, P], evaluations of one trial).
    shared: dict[tuple[str, int], tuple[torch.Tensor, int]] = {}

    def descend(params: torch.Tensor, data: DataVersion, steps: int) -> torch.Tensor:
        # Noiseless projected gradient descent (Algorithm 2, line 4; Algorithm 3, line 5).
        for _ in range(steps):
            gradient = full_batch_gradient(counted, params, data, clip=config.clip, l2=config.l2)
            params = noisy_step(params, gradient, step_size=config.step_size, noise=None,
                                radius=config.radius)
        return params

    def descend_once(key: tuple[str, int], begin, data: DataVersion, steps: int) -> torch.Tensor:
        """The descent shared by every trial, computed as one trial ([1, P]) on first use."""
        if key not in shared:
            before = counted.evaluations
            params = descend(begin(), data, steps)
            shared[key] = (params, counted.evaluations - before)
        else:
            counted.evaluations += shared[key][1]
        return shared[key][0]

    def start(random: TrialRandom, stream: str) -> torch.Tensor:
        return random.normal(stream, (n_params,)) * config.init_std

    def zero() -> torch.Tensor:
        return torch.zeros((1, n_params), dtype=setup.dtype, device=setup.device)

    def trained(random: TrialRandom, phase: str, data: DataVersion) -> torch.Tensor:
        """The learning descent from x_0 ([1, P] when shared, else [N, P])."""
        if shared_start:
            return descend_once((phase, 0), zero, data, config.learn_iterations)
        return descend(start(random, f"init/{phase}"), data, config.learn_iterations)

    def publish(params: torch.Tensor, random: TrialRandom, stream: str) -> torch.Tensor:
        # Output perturbation N(0, sigma^2 I_d) (Algorithm 3, lines 8-9): once per publication.
        if noise_std == 0:
            return params.expand(random.size, n_params).clone()
        return params + random.normal(stream, (n_params,)) * noise_std

    def learn(random: TrialRandom) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
        clean = trained(random, "learn", versions[0])
        published = publish(clean, random, "noise/learn")
        return (clean, published), published

    def unlearn(random: TrialRandom, position: int, state):
        clean, published = state
        data, steps = versions[position + 1], iterations[position]
        if config.internal_state and shared_start:
            # The shared internal state fine-tunes alike in every trial (Theorem O.1's variant).
            clean = descend_once(("unlearn", position), lambda: clean, data, steps)
        else:
            begin = clean if config.internal_state else published
            clean = descend(begin, data, steps)
        published = publish(clean, random, f"noise/unlearn/{position}")
        return (clean, published), published

    def retrain(random: TrialRandom) -> torch.Tensor:
        return publish(trained(random, "retrain", versions[-1]), random, "noise/retrain")

    def pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
        outputs, (clean, _) = learn_unlearn_retrain(
            random, model=counted, sets=setup.sets, n_requests=len(iterations), learn=learn,
            unlearn=unlearn, retrain=retrain)
        outputs["unlearned_clean"] = clean.expand(random.size, n_params).clone()
        return outputs

    bytes_per_trial = full_batch_bytes_per_trial(base, n=dataset.n, dtype=setup.dtype)
    outputs = setup.run(pipeline, bytes_per_trial=bytes_per_trial)
    evaluations = phase_counts(outputs, len(iterations))
    return D2DResult(
        config=config,
        model_name=base.name,
        unlearned_clean=outputs["unlearned_clean"],
        gradient_evaluations=evaluations,
        n=dataset.n,
        num_params=n_params,
        **result_fields(setup, outputs, D2DResult),
    )


def d2d_gaussian_laws(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: D2DConfig,
    options: TrialOptions,
) -> GaussianLaws | None:
    """The exact laws of the published models of :func:`run_d2d`, or None where they are not
    Gaussian with one covariance.

    With the internal state (Theorem O.1's variant) from the deterministic start 0, every
    descent is the same in every trial, so the last publication is the final noiseless
    fine-tuned parameters plus N(0, (scale sigma)^2 I), and retraining the retrained descent
    plus fresh noise of the same law. The means are those descents exactly as the mechanism
    computes them (same model, device and dtype, one trial with the noise switched off).
    Without the internal state the fine-tuning starts from a noisy model and passes through a
    nonlinear descent (None); a random start, or no noise, gives None too.
    """
    scale = config.noise_multiplier_scale
    if not config.internal_state or config.init_std != 0 or config.noise_std * scale <= 0:
        return None
    quiet = dataclasses.replace(config, noise_multiplier_scale=0.0)
    run = run_d2d(dataset, request, config=quiet,
                  options=dataclasses.replace(options, n_trials=1, first_trial=0))
    variance = (config.noise_std * scale) ** 2
    return GaussianLaws(
        unlearned_mean=np.asarray(run.unlearned.params[0], dtype=np.float64),
        retrained_mean=np.asarray(run.retrained.params[0], dtype=np.float64),
        variance=variance,
        method=("D2D with internal state from the point 0: the published models are the "
                "deterministic descents (computed as the mechanism computes them) plus "
                f"N(0, sigma^2 I), sigma = {config.noise_std!r} x {scale!r}"),
        assumptions=(
            "the descents are deterministic: learning starts at the point 0 and the internal "
            "state is fine-tuned without noise, so only the publication noise is random",
            "the publication noise is added in exact arithmetic (the float rounding of x + "
            "sigma z in the trial engine is not modelled)",
        ))
