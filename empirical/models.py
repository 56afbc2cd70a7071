"""Models for batched trials: every parameter set is one row of an [N, P] tensor.

* :class:`LogisticRegression`: the logistic loss of seed 000 (App. N.3, eqs. 88-92); the l2
  term lambda * w is added by the optimiser, after clipping the logistic part at M.
* :class:`QuadraticLoss`: f(x; a) = (m/2) ||x - a||^2, whose noisy-SGD iterates are exactly
  Gaussian (ground truth of catalog section 3.3).
* :class:`TinyMLP`, :class:`TinyCNN`: the small networks of seed 004 (App. B), driven through
  :class:`FunctionalClassifier` with ``torch.func`` (functional_call + vmap + grad); their
  logits and mean-loss gradients on shared examples go through their own batched products
  with the gradient written out instead (:class:`StackedNetwork`: the MLP's blocked products
  with the examples, the CNN's im2col products).

All models implement :class:`TrialModel`. Labels are +1 / -1. Linear models compute their dot
products with records shared by all trials (:func:`broadcast_rows`) as BLAS matrix products of
a fixed number of trials on aligned rows (:func:`rows_dot`, :func:`weighted_rows_sum`), whose
bits do not depend on how many trials share the call (one matrix product over all trials would:
BLAS picks kernels by shape), and with per-trial records (gathered mini-batches) as
multiply-and-sum along an axis; they apply exp/log through :func:`elementwise_per_trial`; together these keep
batched and per-trial runs of the linear models bit-identical on CPU. The networks' batched
products are bit-identical on CPU too (the MLP's hidden layer through the same blocked products
as the linear models, the CNN's layers as one aligned matrix product per parameter set);
``torch.func`` (per-example gradients, Hessians) agrees to rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, runtime_checkable

import torch
from torch import nn
from torch.func import functional_call, grad, hessian, jvp, vmap

from empirical.elementwise import elementwise_per_trial
from empirical.trials import chunk_size_for

__all__ = [
    "broadcast_rows",
    "FunctionalClassifier",
    "LinearModel",
    "LogisticRegression",
    "QuadraticLoss",
    "StackedNetwork",
    "TinyCNN",
    "TinyMLP",
    "TrialModel",
    "clip_scale",
    "logistic_constants",
    "pairwise_dot",
    "rows_dot",
    "weighted_rows_sum",
]

# Largest [N, E, P] temporary built by the blocked products below (elements): 4 MiB in float64,
# so that evaluating a chunk of trials adds little to its memory peak (the block only splits
# the examples, so every product is the same whatever its size).
_BLOCK_ELEMENTS = 1 << 19
# Bytes of one parameter set's temporaries per block of examples in a stacked network's
# gradient. The examples are cut into blocks by this alone, never by the number of sets, so
# each set's sums run in the same order in a batched call and alone.
_EXAMPLE_BLOCK_BYTES = 64 * 2**20
# Bytes of the temporaries of one call of a stacked network on CPU, so that a call's tensors
# stay near the caches between its dozen elementwise passes (the MLP on digits: 64 to 264 sets
# per call ran alike, all 1,056 sets of a chunk in one call a third slower). The sets per call
# never change a set's bits, only the speed.
_STACKED_CPU_BYTES = 8 * 2**20


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
    return torch.clamp(clip / torch.clamp(norms, min=torch.finfo(norms.dtype).tiny), max=1.0)


# Bytes to which the rows handed to BLAS products are aligned (see rows_dot).
_ROW_ALIGNMENT = 64
# Trials per matrix product on records shared by the trials (see _blocked_product). Eight rows
# reuse each cached table row eight times, and a lone trial's padded product measured no slower
# than its vector product.
_TRIAL_BLOCK = 8


def _aligned_rows(values: torch.Tensor) -> torch.Tensor:
    """``values`` contiguous, its last axis zero-padded to whole ``_ROW_ALIGNMENT`` blocks and
    its start aligned, so that every row starts on such a block (CPU allocations are aligned)."""
    block = max(1, _ROW_ALIGNMENT // values.element_size())
    pad = -values.shape[-1] % block
    if pad:
        return nn.functional.pad(values, (0, pad))
    if not values.is_contiguous() or values.data_ptr() % _ROW_ALIGNMENT:
        return values.clone(memory_format=torch.contiguous_format)
    return values


def broadcast_rows(table: torch.Tensor, trials: int) -> torch.Tensor:
    """One [B, ...] table as the records of ``trials`` trials: a view with stride 0 over the
    trials, for one trial too (what :func:`rows_dot` reads as "shared")."""
    return table.as_strided((trials, *table.shape), (0, *table.stride()))


def _shared(features: torch.Tensor) -> bool:
    return features.stride(0) == 0


def _padded_table(table: torch.Tensor) -> torch.Tensor:
    """A [B, d] table contiguous, aligned and zero-padded on both axes to whole 64-byte
    blocks (:func:`_aligned_rows` on its rows and on its transpose)."""
    table = _aligned_rows(table)
    block = max(1, _ROW_ALIGNMENT // table.element_size())
    extra = -table.shape[0] % block
    return nn.functional.pad(table, (0, 0, 0, extra)) if extra else table


def _blocked_product(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """``left @ right`` for [N, K'] x [K, M] (K' <= K; ``right`` a :func:`_padded_table` or its
    transpose) as matrix products of ``_TRIAL_BLOCK`` rows each: [N, M].

    ``left`` is zero-padded to K columns and to whole blocks of rows; one batched call
    multiplies every block by the same ``right``. Every BLAS call then has the same shape and
    aligned operands whatever N, and no edge of the matrices falls inside a vector register,
    so a row's bits depend neither on how many trials share the call nor on the row's place
    in its block (with unpadded edges, MKL gave odd rows other bits on small shapes). Each
    block reuses ``right`` from cache, where a vector product per trial streams all of it once
    per trial.
    """
    rows = left.shape[0]
    extra = -rows % _TRIAL_BLOCK
    if extra or left.shape[1] != right.shape[0]:
        padded = left.new_zeros((rows + extra, right.shape[0]))
        padded[:rows, :left.shape[1]] = left
        left = padded
    else:
        left = _aligned_rows(left)
    blocks = left.view(-1, _TRIAL_BLOCK, left.shape[1])
    products = torch.bmm(blocks, right.expand(blocks.shape[0], *right.shape))
    return products.view(-1, right.shape[1])[:rows]


def rows_dot(features: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """[N, B, d] x [N, d] -> [N, B]: each trial's records dotted with its own vector.

    Records shared by the trials (:func:`broadcast_rows`, as in full-batch descent) go
    through matrix products of a fixed number of trials against the table
    (:func:`_blocked_product`), whose bits do not depend on how many trials share the call.
    (MKL's products over all trials at once gave trial-count-dependent bits on some shapes:
    BLAS picks kernels by shape.) No [N, B, d] temporary is built. Per-trial records
    (gathered mini-batches) are multiplied and summed along the feature axis.
    """
    if not _shared(features):
        return (features * vectors[:, None, :]).sum(-1)
    return _blocked_product(vectors, _padded_table(features[0]).T)[:, :features.shape[1]]


def weighted_rows_sum(coefficients: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """[N, B] x [N, B, d] -> [N, d]: sum_i c_i x_i per trial. Shared records: matrix products of
    a fixed number of trials against the table (see :func:`rows_dot`); per-trial records:
    multiplied and summed along the record axis."""
    if not _shared(features):
        return (coefficients[..., None] * features).sum(1)
    return _blocked_product(coefficients, _padded_table(features[0]))[:, :features.shape[2]]


def pairwise_dot(params: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """[N, P] x [E, P] -> [N, E] inner products: matrix products of a fixed number of trials
    against the examples (:func:`_blocked_product`), bits independent of N."""
    if features.shape[0] == 0:
        return params.new_zeros((params.shape[0], 0))
    return _blocked_product(params, _padded_table(features).T)[:, :features.shape[0]]


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


def _check_batched(params: torch.Tensor, features: torch.Tensor, num_params: int) -> None:
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
        _check_batched(params, features, self.dim)
        # In place on the [N, B] margins: each pass over them is a pass through memory.
        coefficient = elementwise_per_trial(torch.sigmoid, rows_dot(features, params)
                                            .mul_(labels).neg_()).mul_(labels).neg_()
        if clip is not None:
            if feature_norms is None:
                feature_norms = features.square().sum(-1).sqrt()
            coefficient.mul_(clip_scale(coefficient.abs().mul_(feature_norms), clip))
        return weighted_rows_sum(coefficient.mul_(weights), features)

    def _curvature(self, params: torch.Tensor, features: torch.Tensor,
                   labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        # d^2/dm^2 log(1 + exp(-m)) = sigmoid(m) sigmoid(-m) at the margin m = y w.x (y^2 = 1).
        _check_batched(params, features, self.dim)
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
        _check_batched(params, features, self.dim)
        gradients = self.curvature * (params[:, None, :] - features)
        scale = weights
        if clip is not None:
            scale = scale * clip_scale(gradients.square().sum(-1).sqrt(), clip)
        return (scale[..., None] * gradients).sum(1)

    def data_hessian_sum(self, params: torch.Tensor, features: torch.Tensor,
                         labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """m (sum_i w_i) I: every record's Hessian is m I."""
        _check_batched(params, features, self.dim)
        eye = torch.eye(self.dim, dtype=params.dtype, device=params.device)
        return self.curvature * weights.sum(1)[:, None, None] * eye

    def data_hvp_sum(self, params: torch.Tensor, vectors: torch.Tensor, features: torch.Tensor,
                     labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Sum_i weights_i * curvature * v, per trial: [N, d] -> [N, d]."""
        _check_batched(params, features, self.dim)
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


# ---------------------------------------------------------------------------------------------
# Small networks of seed 004 (App. B), as ordinary modules plus a torch.func adapter.


class TinyMLP(nn.Module):
    """Seed 004's MNIST "TinyNet": flatten, Dense(5), ReLU, Dense(classes).

    With 784 inputs and 10 classes it has 3,985 parameters (the paper's "about 4,000").

    It is also a :class:`StackedNetwork`: B parameter sets run on shared examples with the
    gradient written out. The hidden layer, nearly all of the arithmetic, is one blocked
    matrix product of the sets' weight rows with the examples (:func:`_blocked_product`,
    fixed 8-row BLAS calls, so a set's bits do not depend on how many sets share the call);
    ``vmap(grad(.))`` of the module cost about 1 ms of dispatch per call for one set and ran
    the hidden layer as per-set products of five columns.
    """

    def __init__(self, in_features: int = 784, *, hidden: int = 5, num_classes: int = 2) -> None:
        super().__init__()
        if in_features < 1 or hidden < 1 or num_classes < 2:
            raise ValueError("need in_features >= 1, hidden >= 1 and num_classes >= 2")
        self.hidden = nn.Linear(in_features, hidden)
        self.output = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of a batch of flattened inputs."""
        return self.output(torch.relu(self.hidden(x.flatten(1))))

    def bytes_per_example(self, input_shape: tuple[int, ...], element_size: int) -> int:
        """Bytes of the temporaries of :meth:`stacked_loss_gradient` per set and example:
        the hidden layer's inputs, activations and adjoints, and the output layer's products
        (classes x (hidden + 1) per example) besides a few logit-sized tensors."""
        hidden, classes = self.hidden.out_features, self.output.out_features
        return element_size * (4 * hidden + 3 * classes * (hidden + 1) + 6 * classes)

    def _stacked_forward(self, weights: dict[str, torch.Tensor], inputs: torch.Tensor
                         ) -> dict[str, torch.Tensor]:
        """The forward pass of B parameter sets on E shared examples, with the examples on
        the last axis, zero-padded to E' (whole 64-byte rows; a padded example has zero
        inputs, so zero hidden pre-activations).

        The hidden layer is one blocked product of every set's [weight | bias] rows with the
        examples' [x | 1] table (:func:`_blocked_product`: a fixed number of rows per BLAS
        call, so a set's bits do not depend on how many sets share the call); the small
        output layer is multiplied out and summed over the hidden units in a fixed order."""
        hidden_weight = weights["hidden.weight"]
        batch, hidden, features = hidden_weight.shape
        examples = inputs.shape[0]
        flat = inputs.reshape(examples, features)
        table = _padded_table(torch.cat([flat, flat.new_ones((examples, 1))], dim=1))
        rows = torch.cat([hidden_weight, weights["hidden.bias"][..., None]], dim=2)
        z1 = _blocked_product(rows.reshape(batch * hidden, features + 1), table.T)
        z1 = z1.reshape(batch, hidden, table.shape[0])  # [B, H, E']
        activations = torch.relu(z1)
        products = weights["output.weight"][..., None] * activations[:, None]  # [B, C, H, E']
        logits = products[:, :, 0] + weights["output.bias"][..., None]
        for unit in range(1, hidden):  # a fixed order of summation
            logits += products[:, :, unit]
        return {"table": table, "z1": z1, "activations": activations, "logits": logits}

    def stacked_logits(self, weights: dict[str, torch.Tensor], inputs: torch.Tensor
                       ) -> torch.Tensor:
        """Logits of every parameter set on every example: [B, E, classes]."""
        logits = self._stacked_forward(weights, inputs)["logits"][..., :inputs.shape[0]]
        return logits.transpose(1, 2).contiguous()

    def stacked_loss_gradient(self, weights: dict[str, torch.Tensor], inputs: torch.Tensor,
                              classes: torch.Tensor, *, count: int) -> dict[str, torch.Tensor]:
        """Gradient of sum_i cross-entropy_i / ``count``, per parameter set, by the chain rule
        written out: softmax - one-hot on the logits, the output layer's adjoint summed over
        the examples and the hidden units in a fixed order, the ReLU's adjoint, and the
        hidden layer's adjoint as one blocked product with the examples' [x | 1] table."""
        f = self._stacked_forward(weights, inputs)
        logits, activations, table = f["logits"], f["activations"], f["table"]
        batch, num_classes, padded = logits.shape
        examples, hidden = inputs.shape[0], activations.shape[1]
        shifted = logits - logits.amax(dim=1, keepdim=True)
        exps = elementwise_per_trial(torch.exp, shifted.reshape(batch, -1)).reshape(shifted.shape)
        total = exps[:, 0]
        for index in range(1, num_classes):  # a fixed order of summation
            total = total + exps[:, index]
        target = logits.new_zeros((num_classes, padded))
        target[classes, torch.arange(examples, device=classes.device)] = 1.0
        d_logits = (exps / total[:, None] - target) / count
        d_logits[..., examples:] = 0.0  # the padded examples are not in the sum
        # The output layer's gradients: sums over the examples, each row of a contiguous
        # tensor reduced alone in a fixed order by ATen on CPU (a set's bits do not depend on
        # how many sets share the call; tested), in one pass instead of a product with ones.
        d_output_weight = (d_logits[:, :, None] * activations[:, None]).sum(-1)
        d_output_bias = d_logits.sum(-1)
        output_weight = weights["output.weight"]
        d_activations = output_weight[:, 0, :, None] * d_logits[:, 0, None]
        for index in range(1, num_classes):  # a fixed order of summation
            d_activations += output_weight[:, index, :, None] * d_logits[:, index, None]
        d_z1 = _relu_adjoint(d_activations, f["z1"])
        d_rows = _blocked_product(d_z1.reshape(batch * hidden, padded), table)
        features = weights["hidden.weight"].shape[2]
        d_rows = d_rows[:, :features + 1].reshape(batch, hidden, features + 1)
        return {"hidden.weight": d_rows[..., :features], "hidden.bias": d_rows[..., features],
                "output.weight": d_output_weight, "output.bias": d_output_bias}


@runtime_checkable
class StackedNetwork(Protocol):
    """A module that also runs B parameter sets at once on shared examples, by explicit
    batched matrix products instead of ``vmap`` over its layers (what
    :class:`FunctionalClassifier` uses when its module offers it).

    ``weights`` maps each parameter name to a [B, *shape] tensor; ``inputs`` are the module's
    own input shape, [E, *input].
    """

    def stacked_logits(self, weights: dict[str, torch.Tensor], inputs: torch.Tensor
                       ) -> torch.Tensor:
        """Logits of every parameter set on every example: [B, E, classes]."""
        ...

    def stacked_loss_gradient(self, weights: dict[str, torch.Tensor], inputs: torch.Tensor,
                              classes: torch.Tensor, *, count: int) -> dict[str, torch.Tensor]:
        """Gradient of sum_i cross-entropy_i / ``count`` over these examples, per parameter
        set: the [B, *shape] tensors of ``weights``'s names."""
        ...

    def bytes_per_example(self, input_shape: tuple[int, ...], element_size: int) -> int:
        """Bytes of the temporaries one parameter set needs per example in a gradient."""
        ...


def _shifted_windows(values: torch.Tensor) -> torch.Tensor:
    """[..., C, E, H, W] -> [..., 9 C, E H W]: the 3x3 window around each pixel (zero padding
    1), offsets (row, column) outermost: im2col of a 3x3, padding-1 convolution with the
    window's entries as rows, so that the products put the output channels first."""
    height, width = values.shape[-2], values.shape[-1]
    padded = nn.functional.pad(values, (1, 1, 1, 1))
    windows = torch.stack([padded[..., i:i + height, j:j + width]
                           for i in range(3) for j in range(3)], dim=-5)
    return windows.reshape(*values.shape[:-4], 9 * values.shape[-4], -1)


def _add_windows(windows: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Adjoint of :func:`_shifted_windows` (col2im): [..., 9 C, E H W] -> ``shape``
    [..., C, E, H, W], each window's entries added back onto the pixels they came from, in a
    fixed order."""
    height, width = shape[-2], shape[-1]
    parts = windows.reshape(*shape[:-4], 9, *shape[-4:])
    padded = windows.new_zeros((*shape[:-2], height + 2, width + 2))
    for index in range(9):
        i, j = divmod(index, 3)
        padded[..., i:i + height, j:j + width] += parts[..., index, :, :, :, :]
    return padded[..., 1:height + 1, 1:width + 1]


def _pool_quarters(values: torch.Tensor) -> list[torch.Tensor]:
    """The four corners of every 2x2 block of [..., H, W] (an odd last row and column
    dropped, as ``avg_pool2d`` does)."""
    rows, cols = 2 * (values.shape[-2] // 2), 2 * (values.shape[-1] // 2)
    return [values[..., i:rows:2, j:cols:2] for i in range(2) for j in range(2)]


def _average_pool(values: torch.Tensor) -> torch.Tensor:
    """2x2 average pooling, stride 2, of [..., H, W], summed in a fixed order."""
    a, b, c, d = _pool_quarters(values)
    return (((a + b) + c) + d) * 0.25


def _average_pool_adjoint(gradient: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Gradient of :func:`_average_pool` for an input of ``shape``: a quarter of each
    block's gradient on each of its four pixels (zero on a dropped odd row or column)."""
    quarter = gradient * 0.25
    if shape[-2] % 2 == 0 and shape[-1] % 2 == 0:  # one copy: each value spread over 2 x 2
        spread = quarter[..., :, None, :, None].expand(*quarter.shape[:-1], 2,
                                                       quarter.shape[-1], 2)
        return spread.reshape(shape)
    out = gradient.new_zeros(shape)
    for part in _pool_quarters(out):
        part.copy_(quarter)
    return out


def _aligned_matrix(matrix: torch.Tensor) -> torch.Tensor:
    """``matrix`` itself when it is contiguous, or the transpose of a contiguous matrix, and
    starts on a ``_ROW_ALIGNMENT`` boundary; else a copy in that same layout (CPU allocations
    are aligned), so that BLAS sees the same layout either way."""
    if matrix.t().is_contiguous() and not matrix.is_contiguous():
        return _aligned_matrix(matrix.t()).t()
    if matrix.is_contiguous() and matrix.data_ptr() % _ROW_ALIGNMENT == 0:
        return matrix
    return matrix.clone(memory_format=torch.contiguous_format)


def _set_products(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """[B, M, K] x [B, K, N] -> [B, M, N]: one matrix product per parameter set.

    On CPU each set's product is one ``torch.mm`` on operands whose storage starts on a
    64-byte boundary: MKL's batched products, and its products on operands at other offsets,
    gave a set bits that depended on how many sets shared the call for some shapes (e.g.
    32 x 396 x 27). On other devices one ``torch.bmm``.
    """
    if left.device.type != "cpu":
        return torch.bmm(left, right)
    if left.shape[0] == 1:
        return torch.mm(_aligned_matrix(left[0]), _aligned_matrix(right[0]))[None]
    return torch.stack([torch.mm(_aligned_matrix(one), _aligned_matrix(other))
                        for one, other in zip(left, right, strict=True)])


def _relu_adjoint(gradient: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """Gradient of ReLU at ``inputs``: ``gradient`` where an input is > 0, else 0 (autograd's
    own rule, one fused pass)."""
    return torch.ops.aten.threshold_backward(gradient, inputs, 0)


def _column_sums(values: torch.Tensor) -> torch.Tensor:
    """[B, R, M] -> [B, R]: each row summed, as a product with a column of ones (the same
    per-set products as the rest, so the sums' bits do not depend on B either)."""
    ones = values.new_ones((values.shape[0], values.shape[2], 1))
    return _set_products(values, ones)[..., 0]


def _conv_weight_rows(weight: torch.Tensor) -> torch.Tensor:
    """[B, O, C, 3, 3] -> [B, O, 9 C] in the (row, column, channel) order of the windows."""
    return weight.permute(0, 1, 3, 4, 2).reshape(weight.shape[0], weight.shape[1], -1)


def _conv_weight_gradient(rows: torch.Tensor, channels: int) -> torch.Tensor:
    """Inverse of :func:`_conv_weight_rows`: [B, O, 9 C] -> [B, O, C, 3, 3]."""
    batch, out = rows.shape[:2]
    return rows.reshape(batch, out, 3, 3, channels).permute(0, 1, 4, 2, 3)


class TinyCNN(nn.Module):
    """Seed 004's CIFAR-10 net: two 3x3 conv blocks (32, 64 channels, ReLU, 2x2 average
    pooling), global average pooling, Dense(classes).

    With 3 input channels and 10 classes it has 20,042 parameters (the paper's "20,000").

    It is also a :class:`StackedNetwork`: B parameter sets run on shared examples through
    im2col matrix products (one ``torch.bmm`` per layer, or on CPU one aligned ``torch.mm``
    per set) with the gradient written out by hand, so every set's products have the same
    shapes whatever B is and, on CPU, a set's bits do not depend on how many sets share the
    call. (``vmap`` over ``conv2d`` ran float64 convolutions through PyTorch's per-image
    fallback, about 15 GFLOP/s on one core here against about 20 for these products.)
    """

    def __init__(self, in_channels: int = 3, *, num_classes: int = 2) -> None:
        super().__init__()
        if in_channels < 1 or num_classes < 2:
            raise ValueError("need in_channels >= 1 and num_classes >= 2")
        self.conv1 = nn.Conv2d(in_channels, 32, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3, padding=1)
        self.output = nn.Linear(64, num_classes)
        for conv in (self.conv1, self.conv2):
            nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")  # seed 004's he_normal
        nn.init.kaiming_normal_(self.output.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of a batch of images [B, C, H, W]."""
        x = nn.functional.avg_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        return self.output(x.mean(dim=(2, 3)))

    def bytes_per_example(self, input_shape: tuple[int, ...], element_size: int) -> int:
        """Bytes of the largest temporaries of :meth:`stacked_loss_gradient` per example."""
        channels, height, width = input_shape
        full, half = height * width, (height // 2) * (width // 2)
        elements = (full * (3 * 32 + 9 * channels) + half * (3 * 32 + 2 * 9 * 32 + 3 * 64)
                    + 4 * 64)
        return elements * element_size

    def _stacked_forward(self, weights: dict[str, torch.Tensor], inputs: torch.Tensor
                         ) -> dict[str, torch.Tensor]:
        """The forward pass of B parameter sets, keeping what the gradient needs. Activations
        are [B, channels, E, H, W] and every product puts the output channels first (the
        faster orientation of MKL's float64 products here: about 43 against 22 GFLOP/s)."""
        batch = weights["conv1.weight"].shape[0]
        examples = inputs.shape[0]
        # The first layer's windows are the same for every set: built once, read by all.
        windows1 = _shifted_windows(inputs.transpose(0, 1))[None]
        rows1 = _conv_weight_rows(weights["conv1.weight"])
        z1 = (_set_products(rows1, windows1.expand(batch, -1, -1))
              + weights["conv1.bias"][:, :, None])
        z1 = z1.reshape(batch, -1, examples, *inputs.shape[2:])
        pooled1 = _average_pool(torch.relu(z1))
        windows2 = _shifted_windows(pooled1)
        rows2 = _conv_weight_rows(weights["conv2.weight"])
        z2 = _set_products(rows2, windows2) + weights["conv2.bias"][:, :, None]
        z2 = z2.reshape(batch, -1, *pooled1.shape[2:])
        pooled2 = _average_pool(torch.relu(z2))
        height, width = pooled2.shape[-2], pooled2.shape[-1]
        total = pooled2[..., 0, 0]
        for index in range(1, height * width):  # a fixed order of summation
            total = total + pooled2[..., index // width, index % width]
        features = total / (height * width)  # [B, 64, E]
        logits = (_set_products(features.transpose(1, 2),
                                weights["output.weight"].transpose(1, 2))
                  + weights["output.bias"][:, None, :])
        return {"windows1": windows1, "z1": z1, "pooled1": pooled1, "windows2": windows2,
                "z2": z2, "features": features, "logits": logits, "rows2": rows2}

    def stacked_logits(self, weights: dict[str, torch.Tensor], inputs: torch.Tensor
                       ) -> torch.Tensor:
        """Logits of every parameter set on every example: [B, E, classes]."""
        return self._stacked_forward(weights, inputs)["logits"]

    def stacked_loss_gradient(self, weights: dict[str, torch.Tensor], inputs: torch.Tensor,
                              classes: torch.Tensor, *, count: int) -> dict[str, torch.Tensor]:
        """Gradient of sum_i cross-entropy_i / ``count``, per parameter set, by the chain rule
        written out (softmax - one-hot, then each layer's adjoint)."""
        f = self._stacked_forward(weights, inputs)
        logits = f["logits"]
        batch = logits.shape[0]
        shifted = logits - logits.max(dim=-1, keepdim=True).values
        exps = elementwise_per_trial(torch.exp, shifted.reshape(batch, -1)).reshape(shifted.shape)
        probabilities = exps / exps.sum(dim=-1, keepdim=True)
        one_hot = nn.functional.one_hot(classes, logits.shape[-1]).to(logits.dtype)
        d_logits = (probabilities - one_hot[None]) / count  # [B, E, classes]
        out = {"output.weight": _set_products(d_logits.transpose(1, 2),
                                              f["features"].transpose(1, 2)),
               "output.bias": _column_sums(d_logits.transpose(1, 2))}
        d_features = _set_products(weights["output.weight"].transpose(1, 2),
                                   d_logits.transpose(1, 2))  # [B, 64, E]
        z2 = f["z2"]
        height, width = z2.shape[-2] // 2, z2.shape[-1] // 2  # after the second pooling
        d_pooled2 = (d_features / (height * width))[..., None, None]
        d_pooled2 = d_pooled2.expand(*d_pooled2.shape[:3], height, width)
        d_z2 = _relu_adjoint(_average_pool_adjoint(d_pooled2, z2.shape), z2).reshape(
            batch, z2.shape[1], -1)
        out["conv2.weight"] = _conv_weight_gradient(
            _set_products(d_z2, f["windows2"].transpose(1, 2)), f["z1"].shape[1])
        out["conv2.bias"] = _column_sums(d_z2)
        d_windows2 = _set_products(f["rows2"].transpose(1, 2), d_z2)
        d_pooled1 = _add_windows(d_windows2, f["pooled1"].shape)
        z1 = f["z1"]
        d_z1 = _relu_adjoint(_average_pool_adjoint(d_pooled1, z1.shape), z1).reshape(
            batch, z1.shape[1], -1)
        out["conv1.weight"] = _conv_weight_gradient(
            _set_products(d_z1, f["windows1"].expand(batch, -1, -1).transpose(1, 2)),
            inputs.shape[1])
        out["conv1.bias"] = _column_sums(d_z1)
        return out


def _labels_to_classes(labels: torch.Tensor) -> torch.Tensor:
    # +1 is the first class of the pair (index 0), -1 the second (index 1).
    return (labels < 0).to(torch.long)


class FunctionalClassifier:
    """Runs a binary classifier module on flat parameters [N, P] with ``torch.func``.

    Records are stored flat ([.., prod(input_shape)]) and reshaped to ``input_shape`` (e.g.
    (3, 32, 32) for the CNN). The data loss is the cross-entropy of seed 004; per-example
    gradients come from ``vmap(grad(.))`` over examples, then over trials. A module that is a
    :class:`StackedNetwork` (the MLP, the CNN) computes logits and mean-loss gradients of
    shared examples through its own batched products instead.
    """

    def __init__(self, module: nn.Module, *, input_shape: tuple[int, ...], name: str) -> None:
        if not input_shape or any(size < 1 for size in input_shape):
            raise ValueError(f"input_shape must be positive sizes, got {input_shape}")
        self.module = module
        self.input_shape = tuple(input_shape)
        self.name = name
        self._names = [key for key, _ in module.named_parameters()]
        self._shapes = [value.shape for _, value in module.named_parameters()]
        self._sizes = [value.numel() for _, value in module.named_parameters()]

        def example_loss(flat: torch.Tensor, x: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
            logits = self._logits_one(flat, x[None])
            return nn.functional.cross_entropy(logits, label[None])

        per_example = vmap(grad(example_loss), in_dims=(None, 0, 0))
        self._per_trial_gradients = vmap(per_example, in_dims=(0, 0, 0))

        def weighted_loss(flat: torch.Tensor, x: torch.Tensor, label: torch.Tensor,
                          weight: torch.Tensor) -> torch.Tensor:
            return (vmap(example_loss, in_dims=(None, 0, 0))(flat, x, label) * weight).sum()

        self._per_trial_hessians = vmap(hessian(weighted_loss), in_dims=(0, 0, 0, 0))

        def hvp_one(flat: torch.Tensor, vector: torch.Tensor, x: torch.Tensor,
                    label: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
            # Forward-over-reverse: the directional derivative of the gradient along vector.
            return jvp(lambda w: grad(weighted_loss)(w, x, label, weight), (flat,), (vector,))[1]

        self._per_trial_hvps = vmap(hvp_one, in_dims=(0, 0, 0, 0, 0))
        self._shared_logits = vmap(self._logits_one, in_dims=(0, None))

        def mean_loss(flat: torch.Tensor, x: torch.Tensor, classes: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(self._logits_one(flat, x), classes)

        self._mean_loss_gradient = vmap(grad(mean_loss), in_dims=(0, None, None))
        self._stacked = module if isinstance(module, StackedNetwork) else None

    @property
    def num_params(self) -> int:
        """P, the number of the network's parameters."""
        return int(sum(self._sizes))

    @property
    def strong_convexity(self) -> float:
        """m = 0: a network's loss is not strongly convex."""
        return 0.0

    @property
    def smoothness(self) -> None:
        """None: a network's smoothness is unknown."""
        return None

    def initial_params(self, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """The module's own initial parameters as one flat [P] vector."""
        return torch.cat([p.detach().reshape(-1) for p in self.module.parameters()]).to(dtype)

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """The network's named parameter tensors from one flat [P] vector."""
        pieces = torch.split(flat, self._sizes)
        return {
            key: piece.reshape(shape)
            for key, piece, shape in zip(self._names, pieces, self._shapes, strict=True)
        }

    def unflatten_stacked(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        """The named parameter tensors of B flat parameter sets [B, P], each [B, *shape]."""
        pieces = torch.split(params, self._sizes, dim=1)
        return {
            key: piece.reshape(params.shape[0], *shape)
            for key, piece, shape in zip(self._names, pieces, self._shapes, strict=True)
        }

    def _blocks(self, network: StackedNetwork, params: torch.Tensor, examples: int
                ) -> tuple[int, int]:
        """(sets, examples) per call of the stacked network: the example block is fixed by
        the network and input shape alone; the sets per call fill the device's budget (on
        CPU a cache-sized one, ``_STACKED_CPU_BYTES``)."""
        per_example = network.bytes_per_example(self.input_shape, params.element_size())
        block = max(1, min(examples, _EXAMPLE_BLOCK_BYTES // max(1, per_example)))
        sets = chunk_size_for(n_trials=params.shape[0], bytes_per_trial=block * per_example,
                              device=params.device,
                              memory_budget=_STACKED_CPU_BYTES if params.device.type == "cpu"
                              else None)
        if _TRIAL_BLOCK < sets < params.shape[0]:
            sets -= sets % _TRIAL_BLOCK  # whole blocks of rows in the blocked products
        return sets, block

    def mean_loss_gradient(self, params: torch.Tensor, features: torch.Tensor,
                           classes: torch.Tensor) -> torch.Tensor:
        """Gradient of the mean cross-entropy over shared examples, per parameter set:
        [N, P], [E, ...], class indices [E] -> [N, P].

        A :class:`StackedNetwork` module runs the sets through its batched products, in
        blocks of sets (the device's memory budget) and of examples (summed in order);
        other modules go through ``vmap(grad(.))``.
        """
        network = self._stacked
        if network is None:
            return self._mean_loss_gradient(params, features, classes)
        count = features.shape[0]
        images = features.reshape((count, *self.input_shape))
        sets, block = self._blocks(network, params, count)
        parts = []
        for first in range(0, params.shape[0], sets):
            weights = self.unflatten_stacked(params[first:first + sets])
            total = None
            for start in range(0, count, block):
                pieces = network.stacked_loss_gradient(
                    weights, images[start:start + block], classes[start:start + block],
                    count=count)
                flat = torch.cat([pieces[key].reshape(pieces[key].shape[0], -1)
                                  for key in self._names], dim=1)
                total = flat if total is None else total + flat
            parts.append(total)
        return torch.cat(parts) if len(parts) > 1 else parts[0]

    def _logits_one(self, flat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        inputs = x.reshape((x.shape[0], *self.input_shape))
        return functional_call(self.module, self.unflatten(flat), (inputs,))

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
        """Sum_i weights_i * Pi_{C_clip}(grad cross-entropy_i), per trial: [N, B, ...] -> [N, P]."""
        _check_batched(params, features, self.num_params)
        gradients = self._per_trial_gradients(params, features, _labels_to_classes(labels))
        scale = weights * clip_scale(gradients.square().sum(-1).sqrt(), clip)
        return (scale[..., None] * gradients).sum(1)

    def data_hessian_sum(self, params: torch.Tensor, features: torch.Tensor,
                         labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Hessian of sum_i w_i cross-entropy_i by ``torch.func.hessian``: [N, P, P]."""
        _check_batched(params, features, self.num_params)
        return self._per_trial_hessians(params, features, _labels_to_classes(labels), weights)

    def data_hvp_sum(self, params: torch.Tensor, vectors: torch.Tensor, features: torch.Tensor,
                     labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Sum_i weights_i * Hessian_i @ vectors, per trial by autograd: [N, P] -> [N, P]."""
        _check_batched(params, features, self.num_params)
        return self._per_trial_hvps(params, vectors, features, _labels_to_classes(labels),
                                    weights)

    def logits(self, params: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """Logits of every trial on shared examples: [N, P], [E, ...] -> [N, E, classes]."""
        network = self._stacked
        count = features.shape[0]
        if network is None or count == 0:
            return self._shared_logits(params, features)
        images = features.reshape((count, *self.input_shape))
        sets, block = self._blocks(network, params, count)
        rows = []
        for first in range(0, params.shape[0], sets):
            weights = self.unflatten_stacked(params[first:first + sets])
            rows.append(torch.cat([network.stacked_logits(weights, images[s:s + block])
                                   for s in range(0, count, block)], dim=1))
        return torch.cat(rows) if len(rows) > 1 else rows[0]

    def losses(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """Per-example cross-entropy losses of each trial: [N, E]."""
        logits = self.logits(params, features)
        classes = _labels_to_classes(labels)
        log_probs = torch.log_softmax(logits, dim=-1)
        return -log_probs.gather(-1, classes.expand(params.shape[0], -1)[..., None])[..., 0]

    def accuracy(
        self, params: torch.Tensor, features: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """Fraction of examples whose largest logit is their class, per trial: [N]."""
        if features.shape[0] == 0:
            return params.new_full((params.shape[0],), math.nan)
        predicted = self.logits(params, features).argmax(dim=-1)
        return (predicted == _labels_to_classes(labels)[None, :]).to(params.dtype).mean(dim=1)

    def workspace_elements(self, batch_size: int) -> int:
        """Tensor elements one trial needs for one step (for chunk sizing)."""
        return 4 * batch_size * self.num_params + 4 * self.num_params

    def full_batch_workspace_elements(self, n: int) -> int:
        """As for any batch: per-example gradients are built for shared records too."""
        return self.workspace_elements(n)
