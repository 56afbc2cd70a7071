"""The MLP's batched products (blocked hidden-layer products, gradient written out): the same
numbers as autograd through ``nn.Linear``, and each parameter set's bits independent of how
many sets share the call, so batched and per-trial Koloskova runs of the MLP agree bit for bit
(tests/empirical/test_koloskova2025_mechanism.py runs the three methods end to end)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad

from empirical.models import networks
from empirical.models.networks import FunctionalClassifier, StackedNetwork, TinyMLP

# Every gradient entry is a sum of at most E * (d + 1) products of float64 numbers, each
# rounded once, summed in another order than autograd's; 1e-12 of the largest entry leaves
# room for that and still catches any wrong term (those are O(1) of it).
RELATIVE_TOLERANCE = 1e-12

# (inputs, hidden, classes, examples): the seed's 5 hidden units on digits-sized input, more
# classes than two, example counts that are and are not whole 64-byte rows, a single example.
SHAPES = [(64, 5, 2, 231), (7, 3, 3, 9), (5, 4, 2, 8), (12, 2, 4, 1)]


def _classifier(inputs: int, hidden: int, classes: int, *, seed: int = 0) -> FunctionalClassifier:
    torch.manual_seed(seed)
    module = TinyMLP(inputs, hidden=hidden, num_classes=classes).double()
    return FunctionalClassifier(module, input_shape=(inputs,), name="mlp")


def _data(inputs: int, classes: int, examples: int, *, seed: int = 1
          ) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(examples, inputs, dtype=torch.float64, generator=generator)
    labels = torch.arange(examples) % classes  # every class present where it can be
    return features, labels[torch.randperm(examples, generator=generator)]


def _parameter_sets(net: FunctionalClassifier, count: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(2)
    base = net.initial_params()
    noise = torch.randn(count, base.numel(), dtype=torch.float64, generator=generator)
    return base + 0.5 * noise


def _autograd_gradient(net: FunctionalClassifier, flat: torch.Tensor, features: torch.Tensor,
                       classes: torch.Tensor) -> torch.Tensor:
    def mean_loss(params: torch.Tensor) -> torch.Tensor:
        logits = functional_call(net.module, net.unflatten(params), (features,))
        return nn.functional.cross_entropy(logits, classes)

    return grad(mean_loss)(flat)


def test_the_mlp_offers_batched_products():
    assert isinstance(TinyMLP(4), StackedNetwork)


@pytest.mark.parametrize("shape", SHAPES)
def test_mlp_mean_loss_gradient_equals_autograd_through_linear(shape):
    inputs, hidden, classes, examples = shape
    net = _classifier(inputs, hidden, classes)
    features, labels = _data(inputs, classes, examples)
    params = _parameter_sets(net, 5)
    batched = net.mean_loss_gradient(params, features, labels)
    for index in range(5):
        expected = _autograd_gradient(net, params[index], features, labels)
        scale = float(expected.abs().max())
        assert scale > 0
        assert float((batched[index] - expected).abs().max()) <= RELATIVE_TOLERANCE * scale


def test_mlp_gradient_has_the_dead_units_and_every_parameter_right():
    # a hidden unit that is off on every example gets exactly zero gradient, as autograd says;
    # the other entries still match (no parameter's slot is mixed up with another's)
    net = _classifier(6, 3, 2)
    features, labels = _data(6, 2, 10)
    params = _parameter_sets(net, 2)
    weights = net.unflatten_stacked(params)
    weights["hidden.weight"][:, 1] = 0.0
    weights["hidden.bias"][:, 1] = -1.0
    batched = net.mean_loss_gradient(params, features, labels)
    pieces = net.unflatten_stacked(batched)
    assert torch.equal(pieces["hidden.weight"][:, 1], torch.zeros_like(pieces["hidden.weight"][:, 1]))
    assert torch.equal(pieces["hidden.bias"][:, 1], torch.zeros_like(pieces["hidden.bias"][:, 1]))
    for index in range(2):
        expected = _autograd_gradient(net, params[index], features, labels)
        torch.testing.assert_close(batched[index], expected, rtol=0,
                                   atol=RELATIVE_TOLERANCE * float(expected.abs().max()))


@pytest.mark.parametrize("shape", SHAPES[:2])
def test_mlp_logits_equal_the_module_forward(shape):
    inputs, hidden, classes, examples = shape
    net = _classifier(inputs, hidden, classes)
    features, _ = _data(inputs, classes, examples)
    params = _parameter_sets(net, 4)
    logits = net.logits(params, features)
    assert logits.shape == (4, examples, classes)
    for index in range(4):
        expected = functional_call(net.module, net.unflatten(params[index]), (features,))
        torch.testing.assert_close(logits[index], expected, rtol=RELATIVE_TOLERANCE, atol=0)


@pytest.mark.parametrize("sets", [1, 3, 8, 13, 40])
def test_an_mlp_parameter_sets_bits_do_not_depend_on_how_many_sets_share_the_call(sets):
    net = _classifier(64, 5, 2)
    features, labels = _data(64, 2, 231)
    params = _parameter_sets(net, 41)
    assert net._blocks(net.module, params, 231)[0] >= 41  # one call holds all the sets
    together = net.mean_loss_gradient(params, features, labels)
    logits = net.logits(params, features)
    for first in range(0, 41, sets):
        part = slice(first, first + sets)
        assert torch.equal(net.mean_loss_gradient(params[part], features, labels), together[part])
        assert torch.equal(net.logits(params[part], features), logits[part])


def test_mlp_sets_split_over_calls_give_the_same_bits(monkeypatch):
    net = _classifier(64, 5, 2)
    features, labels = _data(64, 2, 231)
    params = _parameter_sets(net, 41)
    together = net.mean_loss_gradient(params, features, labels)
    logits = net.logits(params, features)
    # a budget of about twenty sets per call: rounded down to whole 8-row blocks (16 sets)
    per_set = net.module.bytes_per_example((64,), 8) * 231
    monkeypatch.setattr(networks, "_STACKED_CPU_BYTES", 20 * per_set)
    assert net._blocks(net.module, params, 231)[0] == 16
    assert torch.equal(net.mean_loss_gradient(params, features, labels), together)
    assert torch.equal(net.logits(params, features), logits)
