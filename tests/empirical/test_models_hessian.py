"""TrialModel's batched Hessians and Hessian-vector products against torch.func autograd."""

from __future__ import annotations

import pytest
import torch
from torch.func import hessian

from empirical.models.linear import LogisticRegression, QuadraticLoss
from empirical.models.networks import FunctionalClassifier, TinyMLP

torch.set_default_dtype(torch.float64)


def _batch(n_trials: int, batch: int, dim: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    params = torch.randn(n_trials, dim, generator=g, dtype=torch.float64)
    features = torch.randn(n_trials, batch, dim, generator=g, dtype=torch.float64)
    features = features / features.norm(dim=-1, keepdim=True)
    labels = torch.where(torch.rand(n_trials, batch, generator=g) < 0.5, -1.0, 1.0).double()
    weights = torch.rand(n_trials, batch, generator=g, dtype=torch.float64)
    weights[:, 0] = 0.0  # a removed record contributes nothing
    vectors = torch.randn(n_trials, dim, generator=g, dtype=torch.float64)
    return params, features, labels, weights, vectors


def _logistic_loss(w, x, y, weight):
    # Written from the definition, log(1 + exp(-y w.x)), independently of the model class.
    return (weight * torch.nn.functional.softplus(-y * (x @ w))).sum()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_logistic_hessian_and_hvp_match_autograd(seed):
    params, x, y, weights, v = _batch(4, 7, 5, seed)
    model = LogisticRegression(5)
    got = model.data_hessian_sum(params, x, y, weights)
    want = torch.stack([hessian(_logistic_loss)(params[i], x[i], y[i], weights[i])
                        for i in range(4)])
    assert got.shape == (4, 5, 5)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(model.data_hvp_sum(params, v, x, y, weights),
                               torch.einsum("nij,nj->ni", want, v), rtol=1e-12, atol=1e-14)
    # sigmoid' <= 1/4 and ||x|| = 1: the Hessian's norm is at most sum_i w_i / 4 (L = 1/4).
    top = torch.linalg.eigvalsh(got)[:, -1]
    assert torch.all(top <= weights.sum(1) / 4 + 1e-12)


def test_quadratic_hessian_is_m_times_total_weight():
    params, x, y, weights, v = _batch(3, 6, 4, 3)
    model = QuadraticLoss(4, 0.7)

    def loss(w, centres, weight):
        return (weight * 0.35 * (w - centres).square().sum(-1)).sum()

    want = torch.stack([hessian(loss)(params[i], x[i], weights[i]) for i in range(3)])
    torch.testing.assert_close(model.data_hessian_sum(params, x, y, weights), want)
    torch.testing.assert_close(model.data_hvp_sum(params, v, x, y, weights),
                               torch.einsum("nij,nj->ni", want, v))


def test_network_hessian_matches_finite_differences_of_its_gradient():
    torch.manual_seed(0)
    model = FunctionalClassifier(TinyMLP(3, hidden=2).double(), input_shape=(3,), name="mlp")
    P = model.num_params
    g = torch.Generator().manual_seed(5)
    params = torch.randn(2, P, generator=g, dtype=torch.float64) * 0.5
    x = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    y = torch.tensor([[1.0, -1.0, 1.0, -1.0]] * 2, dtype=torch.float64)
    weights = torch.tensor([[1.0, 0.5, 0.0, 2.0]] * 2, dtype=torch.float64)
    got = model.data_hessian_sum(params, x, y, weights)
    assert got.shape == (2, P, P)
    torch.testing.assert_close(got, got.transpose(1, 2), rtol=1e-10, atol=1e-12)
    # Central differences of the model's own per-example gradients (unclipped), column by column.
    h = 1e-5
    columns = []
    for j in range(P):
        step = torch.zeros(P, dtype=torch.float64)
        step[j] = h
        up = model.data_gradient_sum(params + step, x, y, weights, clip=None)
        down = model.data_gradient_sum(params - step, x, y, weights, clip=None)
        columns.append((up - down) / (2 * h))
    numeric = torch.stack(columns, dim=-1)
    torch.testing.assert_close(got, numeric, rtol=1e-5, atol=1e-7)
    v = torch.randn(2, P, generator=g, dtype=torch.float64)
    torch.testing.assert_close(model.data_hvp_sum(params, v, x, y, weights),
                               torch.einsum("nij,nj->ni", got, v), rtol=1e-10, atol=1e-12)
