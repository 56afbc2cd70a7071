"""The CNN's batched products (im2col + bmm, gradient written out): the same numbers as
autograd through ``nn.Conv2d``, and each parameter set's bits independent of how many sets
share the call, so batched and per-trial Koloskova runs of the CNN agree bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.func import functional_call, grad

from empirical.data.datasets import Dataset
from empirical.mechanisms import koloskova2025 as kol
from empirical.models import networks
from empirical.models.networks import FunctionalClassifier, StackedNetwork, TinyCNN

# The batched products sum in another order than PyTorch's convolution kernels. Every
# gradient entry is a sum of at most E * H * W * 9 * 64 products of float64 numbers (about 10^5
# here), each rounded once, so the two agree to a few hundred units of 2^-53 of the largest
# entry; 1e-12 of it leaves room and still catches any wrong term (those are O(1) of it).
RELATIVE_TOLERANCE = 1e-12


def _classifier(shape: tuple[int, int, int], *, seed: int = 0) -> FunctionalClassifier:
    torch.manual_seed(seed)
    return FunctionalClassifier(TinyCNN(shape[0]).double(), input_shape=shape, name="cnn")


def _data(shape: tuple[int, int, int], examples: int, *, seed: int = 1
          ) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(examples, int(np.prod(shape)), dtype=torch.float64,
                           generator=generator)
    classes = torch.randint(0, 2, (examples,), generator=generator)
    return features, classes


def _parameter_sets(net: FunctionalClassifier, count: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(2)
    base = net.initial_params()
    noise = torch.randn(count, base.numel(), dtype=torch.float64, generator=generator)
    return base + 0.3 * noise


def _autograd_gradient(net: FunctionalClassifier, flat: torch.Tensor, features: torch.Tensor,
                       classes: torch.Tensor) -> torch.Tensor:
    def mean_loss(params: torch.Tensor) -> torch.Tensor:
        images = features.reshape(features.shape[0], *net.input_shape)
        logits = functional_call(net.module, net.unflatten(params), (images,))
        return nn.functional.cross_entropy(logits, classes)

    return grad(mean_loss)(flat)


def test_the_cnn_offers_batched_products_and_a_plain_module_does_not():
    assert isinstance(TinyCNN(3), StackedNetwork)
    assert not isinstance(nn.Sequential(nn.Linear(4, 2)), StackedNetwork)


# Square and CIFAR-shaped (3 channels), odd sides (the pooling drops the last row and column)
# and a non-square image.
SHAPES = [(1, 8, 8), (3, 6, 6), (3, 5, 5), (2, 7, 4)]


@pytest.mark.parametrize("shape", SHAPES)
def test_mean_loss_gradient_equals_autograd_through_conv2d(shape):
    net = _classifier(shape)
    features, classes = _data(shape, 9)
    params = _parameter_sets(net, 3)
    batched = net.mean_loss_gradient(params, features, classes)
    for index in range(3):
        expected = _autograd_gradient(net, params[index], features, classes)
        scale = float(expected.abs().max())
        assert scale > 0
        assert float((batched[index] - expected).abs().max()) <= RELATIVE_TOLERANCE * scale


@pytest.mark.parametrize("shape", SHAPES[:2])
def test_logits_equal_the_module_forward(shape):
    net = _classifier(shape)
    features, _ = _data(shape, 7)
    params = _parameter_sets(net, 4)
    logits = net.logits(params, features)
    for index in range(4):
        images = features.reshape(features.shape[0], *shape)
        expected = functional_call(net.module, net.unflatten(params[index]), (images,))
        torch.testing.assert_close(logits[index], expected, rtol=RELATIVE_TOLERANCE, atol=0)


def test_examples_in_blocks_sum_to_the_same_gradient(monkeypatch):
    shape = (3, 6, 6)
    net = _classifier(shape)
    features, classes = _data(shape, 10)
    params = _parameter_sets(net, 2)
    whole = net.mean_loss_gradient(params, features, classes)
    # A budget of one byte puts every example in a block of its own.
    monkeypatch.setattr(networks, "_EXAMPLE_BLOCK_BYTES", 1)
    assert net._blocks(net.module, params, 10)[1] == 1
    blocked = net.mean_loss_gradient(params, features, classes)
    scale = float(whole.abs().max())
    assert float((blocked - whole).abs().max()) <= RELATIVE_TOLERANCE * scale
    torch.testing.assert_close(net.logits(params, features), net.logits(params, features[:10]))


def test_a_parameter_sets_bits_do_not_depend_on_how_many_sets_share_the_call():
    shape = (3, 6, 6)
    net = _classifier(shape)
    features, classes = _data(shape, 11)
    params = _parameter_sets(net, 6)
    # tiny inputs: all six sets fit in one call of the batched products
    assert net._blocks(net.module, params, 11)[0] == 6
    together = net.mean_loss_gradient(params, features, classes)
    logits = net.logits(params, features)
    for index in range(6):
        alone = net.mean_loss_gradient(params[index:index + 1], features, classes)
        assert torch.equal(alone[0], together[index])
        assert torch.equal(net.logits(params[index:index + 1], features)[0], logits[index])
    pair = net.mean_loss_gradient(params[2:4], features, classes)
    assert torch.equal(pair, together[2:4])


def _cifar_shaped(rows: int, *, side: int = 6, seed: int = 3) -> Dataset:
    rng = np.random.default_rng(seed)
    labels = np.where(np.arange(rows) % 2 == 0, 1.0, -1.0)
    features = rng.normal(size=(rows, 3 * side * side)) + 0.5 * labels[:, None]
    test = rng.normal(size=(6, 3 * side * side))
    return Dataset("cifar-shaped", features, labels, test, np.array([1.0, -1.0] * 3),
                   "random CIFAR-shaped test images")


@pytest.mark.parametrize("method", kol.METHODS)
def test_koloskova_cnn_batched_equals_loop_bit_for_bit(method):
    task = kol.build_task(_cifar_shaped(16), model="cnn")
    assert task.model.input_shape == (3, 6, 6)
    config = kol.KoloskovaConfig(
        method=method, sigma=0.2, unlearn_steps=0 if method == "output-perturbation" else 3,
        step_size=0.1, l2=0.1, C0=5.0, C1=0.5, C2=5.0, sigma0=0.1, learn_steps=4,
        learn_step_size=0.5, finetune_steps=2)
    forget = (1, 6)
    batched = kol.run_koloskova(task, forget=forget, config=config, n_trials=5, seed=4)
    looped = kol.run_koloskova(task, forget=forget, config=config, n_trials=5, seed=4,
                               mode="loop")
    for field in ("unlearned_params", "reference_params", "unlearned_forget_losses",
                  "reference_forget_losses", "unlearned_accuracy", "reference_accuracy"):
        assert np.array_equal(getattr(batched, field), getattr(looped, field)), field
    # the trials differ (the noise is per trial) and later chunks repeat the same trials
    assert not np.array_equal(batched.unlearned_params[0], batched.unlearned_params[1])
    tail = kol.run_koloskova(task, forget=forget, config=config, n_trials=2, seed=4,
                             first_trial=3)
    assert np.array_equal(tail.unlearned_params, batched.unlearned_params[3:])
