"""Newton removal with loss perturbation (Guo et al. 2020): the batched torch core against
per-trial numpy, exactness for least squares, Corollary 2 above the true residual, Algorithm 2."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from empirical.mechanisms import guo2020 as g


def problem(n: int = 40, d: int = 5, *, seed: int = 0, loss: g.Loss = "logistic"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= rng.uniform(0.3, 1.0, size=(n, 1))  # ||x_i|| <= 1
    y = rng.choice([-1.0, 1.0], size=n) if loss == "logistic" else rng.normal(size=n)
    return torch.tensor(X), torch.tensor(y)


def noise(trials: int, d: int, sigma: float, seed: int = 1) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return sigma * torch.randn(trials, d, generator=gen, dtype=torch.float64)


def test_gamma_constants() -> None:
    z = torch.linspace(-10, 10, 200001, dtype=torch.float64)
    s = torch.sigmoid(z)
    third = (s * (1 - s) * (1 - 2 * s)).abs().max()  # |d/dz l''| for the logistic loss
    assert math.isclose(float(third), g.LOGISTIC_GAMMA_TIGHT, rel_tol=1e-8)
    assert g.gamma_of("logistic") == 0.25 and g.gamma_of("least_squares") == 0.0


@pytest.mark.parametrize("loss", ["logistic", "least_squares"])
def test_training_reaches_the_stated_tolerance(loss: g.Loss) -> None:
    X, y = problem(loss=loss)
    b = noise(6, X.shape[1], 5.0)
    trained = g.train(X, y, lam=0.05, b=b, loss=loss, tol=1e-11)
    assert bool((trained.residual <= 1e-11 * (1 + b.norm(dim=1))).all())
    recomputed = g.gradient(trained.w, X, y, lam=0.05, b=b, loss=loss).norm(dim=1)
    assert torch.allclose(recomputed, trained.residual)


def test_least_squares_removal_is_exact() -> None:
    """gamma = 0: the Newton step lands on the new minimiser; residual 0 to rounding."""
    X, y = problem(loss="least_squares")
    b = noise(4, X.shape[1], 10.0)
    trained = g.train(X, y, lam=0.1, b=b, loss="least_squares")
    step = g.newton_removal(trained.w, X, y, torch.tensor([3, 17, 30]), lam=0.1, b=b,
                            loss="least_squares")
    assert bool((step.true_residual <= 1e-11 * (1 + b.norm(dim=1))).all())
    assert bool((step.corollary2 == 0).all())


def _numpy_removal(w, X, y, removed, lam, b):
    """One trial of the logistic batch Newton removal, written independently in numpy."""
    keep = np.setdiff1d(np.arange(len(y)), removed)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    gone = removed
    delta = len(gone) * lam * w + X[gone].T @ ((sig(y[gone] * (X[gone] @ w)) - 1) * y[gone])
    s = sig(y[keep] * (X[keep] @ w))
    H = (X[keep].T * (s * (1 - s))) @ X[keep] + lam * len(keep) * np.eye(X.shape[1])
    v = np.linalg.solve(H, delta)
    w_new = w + v
    grad = X[keep].T @ ((sig(y[keep] * (X[keep] @ w_new)) - 1) * y[keep]) + lam * len(keep) * w_new + b
    x_norm = np.linalg.svd(X[keep], compute_uv=False)[0]
    return w_new, 0.25 * x_norm * np.linalg.norm(v) * np.linalg.norm(X[keep] @ v), np.linalg.norm(grad)


def test_batched_removal_matches_a_per_trial_numpy_loop_and_corollary2_holds() -> None:
    X, y = problem(n=30, d=4, seed=3)
    b = noise(5, 4, 30.0, seed=4)
    lam = 0.02
    trained = g.train(X, y, lam=lam, b=b, loss="logistic")
    removed = torch.tensor([2, 9, 21])
    step = g.newton_removal(trained.w, X, y, removed, lam=lam, b=b, loss="logistic")
    for t in range(5):
        w_new, cor2, residual = _numpy_removal(trained.w[t].numpy(), X.numpy(), y.numpy(),
                                               removed.numpy(), lam, b[t].numpy())
        np.testing.assert_allclose(step.w[t].numpy(), w_new, rtol=1e-10, atol=1e-12)
        assert math.isclose(float(step.corollary2[t]), cor2, rel_tol=1e-9)
        assert math.isclose(float(step.true_residual[t]), residual, rel_tol=1e-6, abs_tol=1e-12)
    assert bool((step.true_residual <= step.corollary2 + 1e-12).all())
    # Corollary 2 <= Theorem 4's middle term gamma (n - m) ||H^{-1} Delta||^2
    middle = 0.25 * (X.shape[0] - 3) * step.update_norm**2
    assert bool((step.corollary2 <= middle * (1 + 1e-12)).all())


def test_exact_spectral_norm_not_power_iteration() -> None:
    X, y = problem(n=25, d=6, seed=5)
    b = noise(2, 6, 1.0)
    trained = g.train(X, y, lam=0.1, b=b, loss="logistic")
    step = g.newton_removal(trained.w, X, y, torch.tensor([0]), lam=0.1, b=b, loss="logistic")
    exact = np.linalg.svd(X.numpy()[1:], compute_uv=False)[0]
    assert math.isclose(step.X_norm, exact, rel_tol=1e-12)


def test_algorithm2_accumulates_and_retrains() -> None:
    X, y = problem(n=40, d=4, seed=6)
    batches = [torch.tensor([i]) for i in range(6)]
    gen = torch.Generator().manual_seed(0)
    generous = g.algorithm2(X, y, batches, lam=0.05, sigma=1.0, budget=1e6, loss="logistic",
                            generator=gen, trials=3)
    assert bool((generous.retrains == 0).all())
    increments = torch.diff(generous.beta_history, dim=0)
    assert bool((increments >= 0).all())  # beta only grows without a retrain
    assert bool((generous.true_residual_history <= generous.beta_history + 1e-12).all())
    gen = torch.Generator().manual_seed(0)
    tight = g.algorithm2(X, y, batches[:3], lam=0.05, sigma=1.0, budget=1e-9, loss="logistic",
                         generator=gen, trials=2)
    assert bool((tight.retrains == 3).all())  # every removal exceeds a tiny budget
    assert bool((tight.beta <= 1e-9).all())  # reset to the retrain's optimiser residual
