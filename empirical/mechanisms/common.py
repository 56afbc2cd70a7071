"""Machinery shared by the trial mechanisms (noisy (S)GD, Newton removal, fine-tuning, ...).

A mechanism module (one per paper) combines these pieces instead of copying them:

* :func:`as_requests`, :func:`data_versions`, :class:`DataVersion`: the dataset before and after
  each request of a sequence (a removal keeps the row with weight 0, a "null record"), as
  tensors on the trial device;
* :func:`gather`: per-trial rows of a shared table (mini-batches);
* :func:`noisy_step`: one step x <- Pi_R(x - eta * g + noise) with the projection onto the ball
  C_R and the (already scaled) Gaussian noise of noisy projected (S)GD;
* :func:`batch_gradient`: the mean clipped data gradient of a mini-batch plus the l2 term;
* :class:`ScoreSets` and :func:`evaluate`, :func:`model_samples`: the losses and accuracies an
  audit reads, and the per-side :class:`ModelSamples`.

Everything is batched over trials (leading dimension N) and keeps the order of floating-point
operations of the original PNSGD code, so batched and per-trial runs stay bit-identical on CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from empirical.data import Dataset, RequestSequence, UnlearningRequest
from empirical.models import TrialModel, clip_scale

__all__ = [
    "DataVersion",
    "ModelSamples",
    "ScoreSets",
    "as_requests",
    "batch_gradient",
    "data_versions",
    "evaluate",
    "gather",
    "model_samples",
    "noisy_step",
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
