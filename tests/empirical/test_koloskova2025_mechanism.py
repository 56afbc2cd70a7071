"""Koloskova et al. 2025 mechanisms: batched = looped, clipping clips, noise placed per eqs.
(1), (3), (4), and the Gaussian ground truth below every accountant."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch

from empirical.data.datasets import load_dataset
from empirical.engine.trials import TrialRandom
from empirical.mechanisms import koloskova2025 as kol


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits")


@pytest.fixture(scope="module")
def mlp_task(digits):
    return kol.build_task(digits, model="mlp")


FORGET = tuple(range(0, 250, 10))  # 25 rows, 10% of the 256 training rows


def _config(method: str, **changes):
    base = dict(method=method, sigma=0.3, unlearn_steps=4, step_size=0.1, l2=0.5, C0=1.5,
                C1=0.2, C2=1.0, learn_steps=20, learn_step_size=1.0, finetune_steps=3)
    if method == "output-perturbation":
        base["unlearn_steps"] = 0
    base.update(changes)
    return kol.KoloskovaConfig(**base)


@pytest.mark.parametrize("method", kol.METHODS)
def test_batched_equals_loop_bit_for_bit(mlp_task, method):
    config = _config(method)
    batched = kol.run_koloskova(mlp_task, forget=FORGET, config=config, n_trials=6, seed=3)
    looped = kol.run_koloskova(mlp_task, forget=FORGET, config=config, n_trials=6, seed=3,
                               mode="loop")
    assert np.array_equal(batched.unlearned_params, looped.unlearned_params)
    assert np.array_equal(batched.reference_params, looped.reference_params)
    assert np.array_equal(batched.unlearned_forget_losses, looped.unlearned_forget_losses)
    # trial i depends only on (seed, i): a later window reproduces the same rows
    window = kol.run_koloskova(mlp_task, forget=FORGET, config=config, n_trials=2, seed=3,
                               first_trial=4)
    assert np.array_equal(window.unlearned_params, batched.unlearned_params[4:6])


def test_head_model_batched_equals_loop(digits):
    task = kol.build_task(digits, model="head")
    config = _config("model-clipping")
    a = kol.run_koloskova(task, forget=FORGET, config=config, n_trials=3, seed=1)
    b = kol.run_koloskova(task, forget=FORGET, config=config, n_trials=3, seed=1, mode="loop")
    assert np.array_equal(a.unlearned_params, b.unlearned_params)


def test_network_sizes_match_the_paper():
    mnist_like = type("D", (), {})()
    mnist_like.features = np.zeros((4, 784))
    mnist_like.test_features = np.zeros((2, 784))
    mnist_like.labels = np.array([1.0, -1.0, 1.0, -1.0])
    mnist_like.test_labels = np.array([1.0, -1.0])
    assert kol.build_task(mnist_like, model="mlp").model.num_params == 784 * 5 + 5 + 5 * 2 + 2
    cifar_like = type("D", (), {})()
    cifar_like.features = np.zeros((4, 3 * 32 * 32))
    cifar_like.test_features = np.zeros((2, 3 * 32 * 32))
    cifar_like.labels = mnist_like.labels
    cifar_like.test_labels = mnist_like.test_labels
    task = kol.build_task(cifar_like, model="cnn")
    assert task.model.input_shape == (3, 32, 32)
    # 3*32*9+32 + 32*64*9+64 + 64*2+2 with two classes
    assert task.model.num_params == 3 * 32 * 9 + 32 + 32 * 64 * 9 + 64 + 64 * 2 + 2


class _ConstantGradient:
    """A stand-in for the network functional whose gradient is a fixed vector c."""

    def __init__(self, c: torch.Tensor) -> None:
        self.c = c

    def gradient(self, params, x, y):
        return self.c.expand_as(params).clone()


def _replay(seed: int, trials: int, stream: str, dim: int, draws: int) -> list[torch.Tensor]:
    random = TrialRandom(seed=seed, trial_indices=range(trials), device=torch.device("cpu"),
                         dtype=torch.float64)
    return [random.normal(stream, (dim,)) for _ in range(draws)]


def _norm_project(v: torch.Tensor, r: float) -> torch.Tensor:
    n = v.norm(dim=-1, keepdim=True)
    return torch.where(n > r, v * (r / n), v)


def test_noise_placement_gradient_clipping():
    """Eq. (3): x_0 = Pi_C0(x_hat); x_{t+1} = x_t - gamma (Pi_C1(g) + lambda x_t) + xi."""
    dim, trials, seed = 5, 3, 11
    c = torch.tensor([3.0, 0.0, 4.0, 0.0, 0.0], dtype=torch.float64)  # ||c|| = 5 > C1
    config = _config("gradient-clipping", C1=0.5, C0=2.0, unlearn_steps=3, finetune_steps=0)
    start = torch.full((trials, dim), 10.0, dtype=torch.float64)  # norm > C0: clipped
    random = TrialRandom(seed=seed, trial_indices=range(trials), device=torch.device("cpu"),
                         dtype=torch.float64)
    out = kol._unlearn(_ConstantGradient(c), start, None, None, config, random, "s")
    noise = _replay(seed, trials, "s", dim, 3)
    x = _norm_project(start, 2.0)
    for xi in noise:
        x = x - 0.1 * (c * (0.5 / 5.0) + 0.5 * x) + 0.3 * xi
    torch.testing.assert_close(out, x, rtol=1e-12, atol=1e-12)


def test_noise_placement_model_clipping_noise_after_projection():
    """Eq. (4): the noise is added after Pi_C2, so x_T - xi_T lies in the C2 ball."""
    dim, trials, seed = 5, 4, 2
    c = torch.full((dim,), 2.0, dtype=torch.float64)
    config = _config("model-clipping", C2=0.25, sigma0=0.7, unlearn_steps=2, finetune_steps=0)
    start = torch.full((trials, dim), 3.0, dtype=torch.float64)
    random = TrialRandom(seed=seed, trial_indices=range(trials), device=torch.device("cpu"),
                         dtype=torch.float64)
    out = kol._unlearn(_ConstantGradient(c), start, None, None, config, random, "s")
    xi0, xi1, xi2 = _replay(seed, trials, "s", dim, 3)
    x = _norm_project(start, 1.5) + 0.7 * xi0
    x = _norm_project(x - 0.1 * (c + 0.5 * x), 0.25) + 0.3 * xi1
    x = _norm_project(x - 0.1 * (c + 0.5 * x), 0.25) + 0.3 * xi2
    torch.testing.assert_close(out, x, rtol=1e-12, atol=1e-12)
    assert torch.all((out - 0.3 * xi2).norm(dim=-1) <= 0.25 + 1e-12)


def test_output_perturbation_is_projection_plus_noise():
    dim, trials, seed = 4, 3, 5
    config = _config("output-perturbation", C0=1.0, finetune_steps=0)
    start = torch.tensor([[3.0, 4.0, 0.0, 0.0]] * trials, dtype=torch.float64)
    random = TrialRandom(seed=seed, trial_indices=range(trials), device=torch.device("cpu"),
                         dtype=torch.float64)
    out = kol._unlearn(_ConstantGradient(torch.zeros(dim, dtype=torch.float64)), start, None,
                       None, config, random, "s")
    (xi,) = _replay(seed, trials, "s", dim, 1)
    torch.testing.assert_close(out, start / 5.0 + 0.3 * xi, rtol=1e-12, atol=1e-12)


def test_clipping_really_clips_on_the_network(mlp_task):
    """Without noise the model-clipped iterate has norm <= C2 and gradient clipping moves each
    step by at most gamma (C1 + lambda ||x||)."""
    config = _config("model-clipping", C2=0.5, sigma=1e-300, finetune_steps=0, unlearn_steps=2)
    run = kol.run_koloskova(mlp_task, forget=FORGET, config=config, n_trials=2, seed=0)
    assert np.all(np.linalg.norm(run.unlearned_params, axis=1) <= 0.5 * (1 + 1e-12))
    one = _config("gradient-clipping", C1=0.01, sigma=1e-300, finetune_steps=0, unlearn_steps=1,
                  l2=0.0, C0=100.0)
    run = kol.run_koloskova(mlp_task, forget=FORGET, config=one, n_trials=1, seed=0)
    fn = kol._Functional(mlp_task.model)
    trained = kol._trained(fn, mlp_task, torch.arange(mlp_task.train_x.shape[0]),
                           steps=one.learn_steps, step_size=one.learn_step_size)
    moved = np.linalg.norm(run.unlearned_params[0] - trained[0].numpy())
    assert moved <= 0.1 * 0.01 * (1 + 1e-9)
    assert moved > 0.1 * 0.01 * 0.999  # the raw gradient is far larger: the clip is active


# ----------------------------------------------------------------------------------------------
# Gaussian ground truth: a linear loss with constant gradient c (||c|| <= C1, so clipping never
# acts) gives Gaussian iterates; the exact hockey-stick delta is N(0,1) vs N(mu,1).


def _exact_epsilon(mu: float, delta: float) -> float:
    """Least epsilon with delta(eps) <= delta for N(0,1) vs N(mu,1), by mpmath bisection."""
    mpmath.mp.dps = 50

    def d(e):
        e = mpmath.mpf(e)
        return (mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu))

    lo, hi = mpmath.mpf(0), mpmath.mpf(100)
    for _ in range(200):
        mid = (lo + hi) / 2
        if d(mid) > delta:
            lo = mid
        else:
            hi = mid
    return float(hi)


def test_ground_truth_gaussian_shift_matches_simulation():
    """The mechanism's own step on a constant-gradient loss: the two runs' means differ by
    rho^T ||x_0 - x_0'|| and the variance is sigma^2 sum rho^(2t) (Monte Carlo check)."""
    dim, trials, steps, gamma, lam, sigma = 1, 4000, 5, 0.2, 0.5, 0.4
    config = kol.KoloskovaConfig(method="gradient-clipping", sigma=sigma, unlearn_steps=steps,
                                 step_size=gamma, l2=lam, C0=1.0, C1=1.0, finetune_steps=0)
    c = torch.tensor([0.3], dtype=torch.float64)
    outs = []
    for side, value in (("a", 1.0), ("b", -1.0)):
        random = TrialRandom(seed=0, trial_indices=range(trials), device=torch.device("cpu"),
                             dtype=torch.float64)
        start = torch.full((trials, dim), value, dtype=torch.float64)
        outs.append(kol._unlearn(_ConstantGradient(c), start, None, None, config, random, side))
    rho = 1 - gamma * lam
    mu = kol.gaussian_ground_truth(method="gradient-clipping", start_distance=2.0, steps=steps,
                                   step_size=gamma, l2=lam, sigma=sigma)
    sd = sigma * math.sqrt(sum(rho ** (2 * t) for t in range(steps)))
    shift = float(outs[0].mean() - outs[1].mean())
    assert abs(shift - 2.0 * rho**steps) < 5 * sd * math.sqrt(2 / trials)
    assert abs(float(outs[0].std()) / sd - 1) < 0.05
    assert mu == pytest.approx(2.0 * rho**steps / sd, rel=1e-12)


@pytest.mark.parametrize("steps,gamma,lam,sigma,C0,C1", [
    (5, 0.1, 0.5, 0.8, 1.0, 1.0), (20, 0.05, 0.0, 0.5, 1.0, 0.5), (1, 0.1, 2.0, 2.0, 2.0, 1.0),
    (50, 0.02, 1.0, 0.3, 1.0, 0.2),
])
def test_every_gradient_clipping_accountant_is_above_the_exact_divergence(
        steps, gamma, lam, sigma, C0, C1):
    """Worst start (x_0, x_0' at distance 2 C0) and a constant gradient of norm C1: the exact
    epsilon at delta is below Theorem A.9 with either conversion."""
    from bounds.papers.koloskova2025 import gradient_clipping_epsilon

    delta = 1e-5
    mu = kol.gaussian_ground_truth(method="gradient-clipping", start_distance=2 * C0,
                                   steps=steps, step_size=gamma, l2=lam, sigma=sigma)
    exact = _exact_epsilon(mu, delta)
    params = {"T": steps, "gamma": gamma, "sigma": sigma, "C0": C0, "C1": C1}
    if lam:
        params["lam"] = lam
    for conversion in ("mironov", "balle2020"):
        certified = gradient_clipping_epsilon(delta=delta, conversion=conversion, **params)
        assert certified.epsilon >= exact


@pytest.mark.parametrize("epsilon,C,sigma", [(1.0, 1.0, 2.0), (0.5, 1.0, 4.0), (2.0, 3.0, 2.5)])
def test_model_clipping_and_output_perturbation_accountants_above_exact(epsilon, C, sigma):
    """One step of eq. (4) from two deterministic points 2 C2 apart (after Pi_C2) is exactly
    the Gaussian mechanism N(0,1) vs N(2C2/sigma,1); Theorem 4.2 (both accountants, T = 1,
    sigma0 = 0 so delta_0 = 1) and output perturbation's theta must be >= its exact delta."""
    from bounds.hockey_stick import model_clipping_log_deltas, theta

    mu = kol.gaussian_ground_truth(method="output-perturbation", start_distance=2 * C,
                                   steps=0, step_size=1.0, l2=0.0, sigma=sigma)
    exact = kol.exact_gaussian_delta(epsilon=epsilon, mu=mu)
    mpmath.mp.dps = 50
    independent = (mpmath.ncdf(mu / 2 - epsilon / mu)
                   - mpmath.exp(epsilon) * mpmath.ncdf(-mu / 2 - epsilon / mu))
    assert exact == pytest.approx(float(independent), rel=1e-9)
    for adaptive in (False, True):
        log_d = model_clipping_log_deltas(epsilon=epsilon, C0=C, C2=C, sigma0=0.0, sigma=sigma,
                                          T=1, adaptive=adaptive)[-1]
        assert math.exp(log_d) >= exact * (1 - 1e-9)
    assert float(theta(epsilon=epsilon, r=2 * C / sigma)) >= exact * (1 - 1e-9)
