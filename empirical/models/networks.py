"""The small networks of seed 004 (Koloskova et al., App. B) for batched trials: every
parameter set is one row of an [N, P] tensor.

* :class:`TinyMLP`, :class:`TinyCNN`: ordinary modules, driven through
  :class:`FunctionalClassifier` with ``torch.func`` (functional_call + vmap + grad); their
  logits and mean-loss gradients on shared examples go through their own batched products
  with the gradient written out instead (:class:`StackedNetwork`: the MLP's hidden layer
  through the blocked products of :mod:`empirical.models.linear`, the CNN's layers as im2col
  products, one aligned matrix product per parameter set).

These batched products are bit-identical on CPU to the same code run on one parameter set;
``torch.func`` (per-example gradients, Hessians) agrees to rounding.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import torch
from torch import nn
from torch.func import functional_call, grad, hessian, jvp, vmap

from empirical.engine.elementwise import elementwise_per_trial
from empirical.engine.trials import chunk_size_for
from empirical.models.linear import (
    ROW_ALIGNMENT,
    TRIAL_BLOCK,
    blocked_product,
    check_batched,
    clip_scale,
    padded_table,
)

__all__ = ["FunctionalClassifier", "StackedNetwork", "TinyCNN", "TinyMLP"]

# Bytes of one parameter set's temporaries per block of examples in a stacked network's
# gradient. The examples are cut into blocks by this alone, never by the number of sets, so
# each set's sums run in the same order in a batched call and alone.
_EXAMPLE_BLOCK_BYTES = 64 * 2**20
# Bytes of the temporaries of one call of a stacked network on CPU, so that a call's tensors
# stay near the caches between its dozen elementwise passes (the MLP on digits: 64 to 264 sets
# per call ran alike, all 1,056 sets of a chunk in one call a third slower). The sets per call
# never change a set's bits, only the speed.
_STACKED_CPU_BYTES = 8 * 2**20


class TinyMLP(nn.Module):
    """Seed 004's MNIST "TinyNet": flatten, Dense(5), ReLU, Dense(classes).

    With 784 inputs and 10 classes it has 3,985 parameters (the paper's "about 4,000").

    It is also a :class:`StackedNetwork`: B parameter sets run on shared examples with the
    gradient written out. The hidden layer, nearly all of the arithmetic, is one blocked
    matrix product of the sets' weight rows with the examples (:func:`blocked_product`,
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
        examples' [x | 1] table (:func:`blocked_product`: a fixed number of rows per BLAS
        call, so a set's bits do not depend on how many sets share the call); the small
        output layer is multiplied out and summed over the hidden units in a fixed order."""
        hidden_weight = weights["hidden.weight"]
        batch, hidden, features = hidden_weight.shape
        examples = inputs.shape[0]
        flat = inputs.reshape(examples, features)
        table = padded_table(torch.cat([flat, flat.new_ones((examples, 1))], dim=1))
        rows = torch.cat([hidden_weight, weights["hidden.bias"][..., None]], dim=2)
        z1 = blocked_product(rows.reshape(batch * hidden, features + 1), table.T)
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
        d_rows = blocked_product(d_z1.reshape(batch * hidden, padded), table)
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
    starts on a ``ROW_ALIGNMENT`` boundary; else a copy in that same layout (CPU allocations
    are aligned), so that BLAS sees the same layout either way."""
    if matrix.t().is_contiguous() and not matrix.is_contiguous():
        return _aligned_matrix(matrix.t()).t()
    if matrix.is_contiguous() and matrix.data_ptr() % ROW_ALIGNMENT == 0:
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
        if TRIAL_BLOCK < sets < params.shape[0]:
            sets -= sets % TRIAL_BLOCK  # whole blocks of rows in the blocked products
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
        check_batched(params, features, self.num_params)
        gradients = self._per_trial_gradients(params, features, _labels_to_classes(labels))
        scale = weights * clip_scale(gradients.square().sum(-1).sqrt(), clip)
        return (scale[..., None] * gradients).sum(1)

    def data_hessian_sum(self, params: torch.Tensor, features: torch.Tensor,
                         labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Hessian of sum_i w_i cross-entropy_i by ``torch.func.hessian``: [N, P, P]."""
        check_batched(params, features, self.num_params)
        return self._per_trial_hessians(params, features, _labels_to_classes(labels), weights)

    def data_hvp_sum(self, params: torch.Tensor, vectors: torch.Tensor, features: torch.Tensor,
                     labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Sum_i weights_i * Hessian_i @ vectors, per trial by autograd: [N, P] -> [N, P]."""
        check_batched(params, features, self.num_params)
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
