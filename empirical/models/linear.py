"""Models for batched trials: every parameter set is one row of an [N, P] tensor.

* :class:`LogisticRegression`: the logistic loss of seed 000 (App. N.3, eqs. 88-92); the l2
  term lambda * w is added by the optimiser, after clipping the logistic part at M.
* :class:`QuadraticLoss`: f(x; a) = (m/2) ||x - a||^2, whose noisy-SGD iterates are exactly
  Gaussian (ground truth of catalog section 3.3).
* The small networks of seed 004 live in :mod:`empirical.models.networks`; they build on the blocked
  products here.

All models implement :class:`TrialModel`. Labels are +1 / -1. Linear models compute their dot
products with records shared by all trials (:func:`broadcast_rows`) as BLAS matrix products of
a fixed number of trials on aligned rows (:func:`rows_dot`, :func:`weighted_rows_sum`,
:func:`blocked_product`), whose bits do not depend on how many trials share the call (one
matrix product over all trials would: BLAS picks kernels by shape), and with per-trial records
(gathered mini-batches) as multiply-and-sum along an axis; they apply exp/log through
:func:`elementwise_per_trial`; together these keep batched and per-trial runs of the linear
models bit-identical on CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, runtime_checkable

import torch
from torch import nn

from empirical.engine.elementwise import elementwise_per_trial

__all__ = [
    "ROW_ALIGNMENT",
    "TRIAL_BLOCK",
    "blocked_product",
    "broadcast_rows",
    "check_batched",
    "LinearModel",
    "LogisticRegression",
    "QuadraticLoss",
    "TrialModel",
    "clip_scale",
    "logistic_constants",
    "padded_table",
    "pairwise_dot",
    "rows_dot",
    "weighted_rows_sum",
]

# Largest [N, E, P] temporary built by the blocked products below (elements): 4 MiB in float64,
# so that evaluating a chunk of trials adds little to its memory peak (the block only splits
# the examples, so every product is the same whatever its size).
_BLOCK_ELEMENTS = 1 << 19


@runtime_checkable
class TrialModel(Protocol):
    """What a noisy-SGD pipeline needs from a model with flat parameters [N, P]."""

    name: str

    @property
    def num_params(self) -> int:
        """P, the length of one trial's flat parameter vector."""
        ...

    @property
    def strong_convexity(self) -> float:
        """m of every per-example loss, before any l2 term the optimiser adds."""
        ...

    @property
    def smoothness(self) -> float | None:
        """L of every per-example loss (None when unknown, as for neural networks)."""
        ...

    def data_gradient_sum(
        self,
        params: torch.Tensor,
        features: torch.Tensor,
        labels: torch.Tensor,
        weights: torch.Tensor,
        *,
        clip: float | None,
        feature_norms: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Sum_i weights_i * Pi_{C_clip}(grad loss(params; x_i, y_i)): [N,B,...] -> [N, P].

        ``feature_norms`` [N, B] may carry precomputed ||x_i|| (models may ignore it).
        """
        ...

    def losses(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """Per-example data loss of each trial on shared examples: [N, P], [E, ...] -> [N, E]."""
        ...

    def accuracy(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """Fraction of shared examples classified correctly, per trial: [N] (NaN if undefined)."""
        ...

    def workspace_elements(self, batch_size: int) -> int:
        """Rough count of tensor elements one trial needs for one step (for chunk sizing)."""
        ...

    def full_batch_workspace_elements(self, n: int) -> int:
        """The same for a full-batch step on ``n`` records shared by the trials
        (:func:`broadcast_rows`)."""
        ...

    def data_hessian_sum(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor,
        weights: torch.Tensor,
    ) -> torch.Tensor:
        """Sum_i weights_i * Hessian of the (unclipped) data loss: [N, B, ...] -> [N, P, P].

        What Newton-type removal (e.g. one Newton step on the remaining data) needs.
        """
        ...

    def data_hvp_sum(
        self, params: torch.Tensor, vectors: torch.Tensor, features: torch.Tensor,
        labels: torch.Tensor, weights: torch.Tensor,
    ) -> torch.Tensor:
        """Sum_i weights_i * Hessian_i @ vectors, per trial: [N, P] -> [N, P] (no [P, P] built)."""
        ...


def clip_scale(norms: torch.Tensor, clip: float | None) -> torch.Tensor:
    """Factor min(1, clip / ||g||) that projects a gradient onto the ball of radius ``clip``."""
    if clip is None:
        return torch.ones_like(norms)
    return clip_scale_(norms.clone(), clip)


def clip_scale_(norms: torch.Tensor, clip: float) -> torch.Tensor:
    """:func:`clip_scale` in place on ``norms`` (the same operations, so the same bits)."""
    return norms.clamp_(min=torch.finfo(norms.dtype).tiny).reciprocal_().mul_(clip).clamp_(max=1.0)


# Bytes to which the rows handed to BLAS products are aligned (see rows_dot).
ROW_ALIGNMENT = 64
# Trials per matrix product on records shared by the trials (see blocked_product). Eight rows
# reuse each cached table row eight times, and a lone trial's padded product measured no slower
# than its vector product.
TRIAL_BLOCK = 8


def _aligned_rows(values: torch.Tensor) -> torch.Tensor:
    """``values`` contiguous, its last axis zero-padded to whole ``ROW_ALIGNMENT`` blocks and
    its start aligned, so that every row starts on such a block (CPU allocations are aligned)."""
    block = max(1, ROW_ALIGNMENT // values.element_size())
    pad = -values.shape[-1] % block
    if pad:
        return nn.functional.pad(values, (0, pad))
    if not values.is_contiguous() or values.data_ptr() % ROW_ALIGNMENT:
        return values.clone(memory_format=torch.contiguous_format)
    return values


def broadcast_rows(table: torch.Tensor, trials: int) -> torch.Tensor:
    """One [B, ...] table as the records of ``trials`` trials: a view with stride 0 over the
    trials, for one trial too (what :func:`rows_dot` reads as "shared")."""
    return table.as_strided((trials, *table.shape), (0, *table.stride()))


def _shared(features: torch.Tensor) -> bool:
    return features.stride(0) == 0


def _record_rows(values: torch.Tensor) -> torch.Tensor:
    """[N, B] per-record values: their one row as [1, B] when the trials share it (a stride-0
    view), so that arithmetic on them is done once per record rather than once per trial."""
    return values[:1] if values.ndim == 2 and values.stride(0) == 0 else values


def padded_table(table: torch.Tensor) -> torch.Tensor:
    """A [B, d] table contiguous, aligned and zero-padded on both axes to whole 64-byte
    blocks (:func:`_aligned_rows` on its rows and on its transpose)."""
    table = _aligned_rows(table)
    block = max(1, ROW_ALIGNMENT // table.element_size())
    extra = -table.shape[0] % block
    return nn.functional.pad(table, (0, 0, 0, extra)) if extra else table


def blocked_product(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """``left @ right`` for [N, K'] x [K, M] (K' <= K; ``right`` a :func:`padded_table` or its
    transpose) as matrix products of ``TRIAL_BLOCK`` rows each: [N, M].

    ``left`` is zero-padded to K columns and to whole blocks of rows; one batched call
    multiplies every block by the same ``right``. Every BLAS call then has the same shape and
    aligned operands whatever N, and no edge of the matrices falls inside a vector register,
    so a row's bits depend neither on how many trials share the call nor on the row's place
    in its block (with unpadded edges, MKL gave odd rows other bits on small shapes). That holds
    on one intra-op thread, as trials compute (:func:`empirical.mechanisms.common.one_cpu_thread`):
    with several, a BLAS may split one product's reduction between threads by the call's size. Each
    block reuses ``right`` from cache, where a vector product per trial streams all of it once
    per trial.
    """
    rows = left.shape[0]
    extra = -rows % TRIAL_BLOCK
    if extra or left.shape[1] != right.shape[0]:
        padded = left.new_zeros((rows + extra, right.shape[0]))
        padded[:rows, :left.shape[1]] = left
        left = padded
    else:
        left = _aligned_rows(left)
    blocks = left.view(-1, TRIAL_BLOCK, left.shape[1])
    products = torch.bmm(blocks, right.expand(blocks.shape[0], *right.shape))
    return products.view(-1, right.shape[1])[:rows]


def rows_dot(features: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """[N, B, d] x [N, d] -> [N, B]: each trial's records dotted with its own vector.

    Records shared by the trials (:func:`broadcast_rows`, as in full-batch descent) go
    through matrix products of a fixed number of trials against the table
    (:func:`blocked_product`), whose bits do not depend on how many trials share the call.
    (MKL's products over all trials at once gave trial-count-dependent bits on some shapes:
    BLAS picks kernels by shape.) No [N, B, d] temporary is built. Per-trial records
    (gathered mini-batches) are multiplied and summed along the feature axis.
    """
    if not _shared(features):
        return (features * vectors[:, None, :]).sum(-1)
    return blocked_product(vectors, padded_table(features[0]).T)[:, :features.shape[1]]


def weighted_rows_sum(coefficients: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """[N, B] x [N, B, d] -> [N, d]: sum_i c_i x_i per trial. Shared records: matrix products of
    a fixed number of trials against the table (see :func:`rows_dot`); per-trial records:
    multiplied and summed along the record axis."""
    if not _shared(features):
        return (coefficients[..., None] * features).sum(1)
    return blocked_product(coefficients, padded_table(features[0]))[:, :features.shape[2]]


def pairwise_dot(params: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """[N, P] x [E, P] -> [N, E] inner products: matrix products of a fixed number of trials
    against the examples (:func:`blocked_product`), bits independent of N."""
    if features.shape[0] == 0:
        return params.new_zeros((params.shape[0], 0))
    return blocked_product(params, padded_table(features).T)[:, :features.shape[0]]


def _pairwise_squared_distance(params: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    n_trials, dim = params.shape
    block = max(1, _BLOCK_ELEMENTS // max(1, n_trials * dim))
    parts = [
        (params[:, None, :] - points[None, start:start + block, :]).square().sum(-1)
        for start in range(0, points.shape[0], block)
    ]
    if not parts:
        return params.new_zeros((n_trials, 0))
    return torch.cat(parts, dim=1)


def check_batched(params: torch.Tensor, features: torch.Tensor, num_params: int) -> None:
    """ValueError unless ``params`` is [N, num_params] and ``features`` has one leading row per
    trial."""
    if params.ndim != 2 or params.shape[1] != num_params:
        raise ValueError(f"params must be [N, {num_params}], got {tuple(params.shape)}")
    if features.shape[0] != params.shape[0]:
        raise ValueError(
            f"features must have one leading row per trial ({params.shape[0]}), "
            f"got {tuple(features.shape)}"
        )


# Smoothness of the logistic loss on unit-norm features: sigmoid' <= 1/4 (seed 000, App. N.3).
LOGISTIC_SMOOTHNESS = Fraction(1, 4)


def logistic_constants(l2: float | Fraction) -> tuple[Fraction, Fraction, Fraction]:
    """(m, L, 1/L) of l2-regularised logistic regression on features of norm <= 1, exactly.

    m = lambda (strong convexity from the l2 term), L = 1/4 + lambda (seed 000, App. N.3: the
    logistic Hessian sigmoid'(w.x) x x^T has norm <= ||x||^2 / 4), and eta = 1/L is the
    largest step size Theorem 3.2 allows. ``l2`` is converted exactly (Fraction of the float).
    """
    m = Fraction(l2)
    if not m > 0:
        raise ValueError(f"l2 must be > 0 for a strongly convex loss, got {l2}")
    smoothness = LOGISTIC_SMOOTHNESS + m
    return m, smoothness, 1 / smoothness


@dataclass(frozen=True)
class LinearModel:
    """What the models with one weight per feature share: parameters [N, d] with d = ``dim``,
    sign-agreement accuracy (a linear classifier without intercept) and the workspace estimate
    of a step on [N, B, d] records. Subclasses give the loss; m is 0 unless they say otherwise.
    """

    dim: int

    def __post_init__(self) -> None:
        if self.dim < 1:
            raise ValueError(f"dim must be >= 1, got {self.dim}")

    @property
    def num_params(self) -> int:
        """P = d, one weight per feature."""
        return self.dim

    @property
    def strong_convexity(self) -> float:
        """m = 0 before the optimiser's l2 term."""
        return 0.0

    def accuracy(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """Fraction of examples with y <w, x> > 0, per trial: [N] (NaN on no examples)."""
        if features.shape[0] == 0:
            return params.new_full((params.shape[0],), math.nan)
        correct = (pairwise_dot(params, features) * labels[None, :]) > 0
        return correct.to(params.dtype).mean(dim=1)

    def workspace_elements(self, batch_size: int) -> int:
        """Tensor elements one trial needs for one step (for chunk sizing)."""
        return 3 * batch_size * self.dim + 4 * self.dim

    def full_batch_workspace_elements(self, n: int) -> int:
        """A full-batch step on shared records: a dozen [n] margins and coefficients per trial
        (the products with the records build no [n, d] temporary, :func:`rows_dot`)."""
        return 12 * n + 4 * self.dim


@dataclass(frozen=True)
class LogisticRegression(LinearModel):
    """Logistic loss l(w; x, y) = log(1 + exp(-y w.x)) without intercept (seed 000, eq. 88).

    The gradient is -y sigmoid(-y w.x) x (eq. 89 without lambda w); clipping projects this
    logistic part onto the ball of radius M (eq. 91). With ||x|| <= 1 the loss is 1/4-smooth
    and convex; the optimiser's l2 term makes it lambda-strongly convex.
    """

    name: str = "logistic-regression"

    @property
    def smoothness(self) -> float:
        """L = 1/4 on unit-norm features."""
        # Hessian sigmoid'(.) x x^T has norm <= ||x||^2 / 4; the data are unit-norm.
        return float(LOGISTIC_SMOOTHNESS)

    def data_gradient_sum(
        self,
        params: torch.Tensor,
        features: torch.Tensor,
        labels: torch.Tensor,
        weights: torch.Tensor,
        *,
        clip: float | None,
        feature_norms: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Sum_i weights_i * Pi_{C_clip}(grad logistic loss_i): [N, B, d] -> [N, d]."""
        check_batched(params, features, self.dim)
        # In place on the [N, B] margins: each pass over them is a pass through memory. With
        # y in {-1, +1} the coefficient -y s w, s = sigmoid(-y w.x), has |.| = s w, and a sign
        # commutes with rounding, so multiplying s by the clip factor and then by -y w (formed
        # once per record when the records are shared) gives the bits of -y s, times the
        # factor, times w.
        labels, weights = _record_rows(labels), _record_rows(weights)
        scores = elementwise_per_trial(torch.sigmoid, rows_dot(features, params).mul_(labels.neg()))
        if clip is not None:
            if feature_norms is None:
                feature_norms = features.square().sum(-1).sqrt()
            scores.mul_(clip_scale_(scores * _record_rows(feature_norms), clip))
        return weighted_rows_sum(scores.mul_(labels.mul(weights).neg_()), features)

    def _curvature(self, params: torch.Tensor, features: torch.Tensor,
                   labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        # d^2/dm^2 log(1 + exp(-m)) = sigmoid(m) sigmoid(-m) at the margin m = y w.x (y^2 = 1).
        check_batched(params, features, self.dim)
        margins = (features * params[:, None, :]).sum(-1) * labels
        return (elementwise_per_trial(torch.sigmoid, margins)
                * elementwise_per_trial(torch.sigmoid, -margins) * weights)

    def data_hessian_sum(self, params: torch.Tensor, features: torch.Tensor,
                         labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Sum_i w_i sigmoid'(y_i w.x_i) x_i x_i^T (seed 000 eq. 88 differentiated twice)."""
        scale = self._curvature(params, features, labels, weights)
        return torch.einsum("nb,nbi,nbj->nij", scale, features, features)

    def data_hvp_sum(self, params: torch.Tensor, vectors: torch.Tensor, features: torch.Tensor,
                     labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Sum_i weights_i * sigmoid'(y_i <w, x_i>) x_i x_i^T v, per trial: [N, d] -> [N, d]."""
        scale = self._curvature(params, features, labels, weights)
        projections = (features * vectors[:, None, :]).sum(-1)
        return ((scale * projections)[..., None] * features).sum(1)

    def losses(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """Per-example logistic losses log(1 + exp(-y <w, x>)): [N, E]."""
        margins = labels[None, :] * pairwise_dot(params, features)
        return elementwise_per_trial(nn.functional.softplus, -margins)


@dataclass(frozen=True)
class QuadraticLoss(LinearModel):
    """f(x; a) = (m/2) ||x - a||^2 with the record's features as the centre ``a``.

    Gradient m (x - a): m-smooth and m-strongly convex. Without clipping or projection the
    noisy-SGD chain is linear-Gaussian, so the laws of its iterates are known exactly.
    Labels are ignored and accuracy is undefined (NaN).
    """

    curvature: float
    name: str = "quadratic"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (math.isfinite(self.curvature) and self.curvature > 0):
            raise ValueError(f"curvature must be finite and > 0, got {self.curvature}")

    @property
    def strong_convexity(self) -> float:
        """m = the curvature."""
        return float(self.curvature)

    @property
    def smoothness(self) -> float:
        """L = the curvature."""
        return float(self.curvature)

    def full_batch_workspace_elements(self, n: int) -> int:
        """As for any batch: the gradients w - a_i are built for shared records too."""
        return self.workspace_elements(n)

    def data_gradient_sum(
        self,
        params: torch.Tensor,
        features: torch.Tensor,
        labels: torch.Tensor,
        weights: torch.Tensor,
        *,
        clip: float | None,
        feature_norms: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Sum_i weights_i * Pi_{C_clip}(curvature (w - a_i)): [N, B, d] -> [N, d]."""
        check_batched(params, features, self.dim)
        gradients = self.curvature * (params[:, None, :] - features)
        scale = weights
        if clip is not None:
            scale = scale * clip_scale(gradients.square().sum(-1).sqrt(), clip)
        return (scale[..., None] * gradients).sum(1)

    def data_hessian_sum(self, params: torch.Tensor, features: torch.Tensor,
                         labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """m (sum_i w_i) I: every record's Hessian is m I."""
        check_batched(params, features, self.dim)
        eye = torch.eye(self.dim, dtype=params.dtype, device=params.device)
        return self.curvature * weights.sum(1)[:, None, None] * eye

    def data_hvp_sum(self, params: torch.Tensor, vectors: torch.Tensor, features: torch.Tensor,
                     labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Sum_i weights_i * curvature * v, per trial: [N, d] -> [N, d]."""
        check_batched(params, features, self.dim)
        return self.curvature * weights.sum(1)[:, None] * vectors

    def losses(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """Per-example losses (curvature / 2) ||w - a||^2: [N, E]."""
        return 0.5 * self.curvature * _pairwise_squared_distance(params, features)

    def accuracy(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """NaN per trial: a quadratic loss classifies nothing."""
        return params.new_full((params.shape[0],), math.nan)
