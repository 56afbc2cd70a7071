"""Langevin unlearning (seed 000 App. P, Theorems P.1/P.2): PNGD with noise in every step, the
LSI initialisation, counted gradients, batched = loop, and the exact Gaussian law.

Ground truth. For f(x; a) = (m/2)||x - a||^2 (no clipping or projection, l2 = 0) one PNGD step
is x <- c x + eta m abar + s W with c = 1 - eta m and s^2 = 2 eta sigma^2, so from
N(mu0, tau0^2 I) after t steps the law is Gaussian with
    mean = c^t mu0 + abar (1 - c^t),   var = c^{2t} tau0^2 + s^2 (1 - c^{2t})/(1 - c^2).
Learning starts from tau0^2 = 2 sigma^2/m (Theorem P.2's LSI start); unlearning continues from
the learned law on D' and retraining restarts on D'.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from empirical.data.datasets import Dataset, digits_3_vs_8
from empirical.data.requests import UnlearningRequest, replacement_request
from empirical.mechanisms.chien2024lu import LangevinConfig, run_langevin
from empirical.mechanisms.common import TrialOptions
from empirical.models.linear import QuadraticLoss
from tests.empirical.hand_data import line_dataset

_line = line_dataset


def test_config_validation():
    base = dict(step_size=0.5, sigma=0.1, learn_iterations=2, unlearn_iterations=1)
    bad = [({"step_size": -1.0}, "step_size"), ({"sigma": math.inf}, "sigma"),
           ({"learn_iterations": 1.5}, "learn_iterations"), ({"unlearn_iterations": []}, "least"),
           ({"radius": 0.0}, "radius"), ({"init_std": -1.0}, "init_std")]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            LangevinConfig(**{**base, **change})
    config = LangevinConfig(**base)
    assert config.step_noise_std == math.sqrt(2 * 0.5 * 0.01)
    assert LangevinConfig(**{**base, "unlearn_iterations": (1, 4)}).iterations_for(2) == (1, 4)
    # Logistic loss without l2 has m = 0: the LSI start N(0, 2 sigma^2/m) does not exist.
    with pytest.raises(ValueError, match="m > 0"):
        run_langevin(_line(), UnlearningRequest((0,)), config=config,
                     options=TrialOptions(n_trials=1, seed=0))


def test_noise_free_hand_case_and_counts():
    # sigma = 0: x <- x/2 + 5/4 on D (m = 1, eta = 1/2), then x <- x/2 + 7/4 on D' (4 -> 8).
    request = UnlearningRequest((3,), np.array([[8.0]]), np.array([1.0]))
    config = LangevinConfig(step_size=0.5, sigma=0.0, learn_iterations=1, unlearn_iterations=2,
                            clip=None, init_std=0.0)
    result = run_langevin(_line(), request, config=config,
                          options=TrialOptions(n_trials=2, seed=0, model=QuadraticLoss(1, curvature=1.0)))
    np.testing.assert_array_equal(result.learned.params, [[1.25]] * 2)
    # 1.25 -> 0.625 + 1.75 = 2.375 -> 1.1875 + 1.75 = 2.9375
    np.testing.assert_array_equal(result.unlearned.params, [[2.9375]] * 2)
    np.testing.assert_array_equal(result.retrained.params, [[1.75]] * 2)
    assert result.gradient_evaluations == {"learn": 4, "unlearn": (8,), "retrain": 4}


def test_batch_requests_count_one_unlearning_run_each():
    # Two requests of S = 2 records: K iterations per request, n = 6 gradients per iteration.
    requests = [UnlearningRequest((0, 1)), UnlearningRequest((2, 3))]
    config = LangevinConfig(step_size=0.5, sigma=0.1, learn_iterations=3,
                            unlearn_iterations=(1, 2), clip=None)
    result = run_langevin(_line(6), requests, config=config,
                          options=TrialOptions(n_trials=3, seed=0, model=QuadraticLoss(1, curvature=1.0),
                                               chunk_size=2))
    assert result.gradient_evaluations == {"learn": 18, "unlearn": (6, 12), "retrain": 18}


def test_batched_loop_and_chunks_are_bit_identical():
    data = digits_3_vs_8()
    small = Dataset("d", data.features[:24], data.labels[:24], data.test_features[:10],
                    data.test_labels[:10], "t")
    request = replacement_request(small, [2], seed=3)
    config = LangevinConfig(step_size=1 / 0.325, sigma=0.05, learn_iterations=4,
                            unlearn_iterations=2, l2=0.075, clip=1.0, radius=2.0)
    whole = run_langevin(small, request, config=config, options=TrialOptions(n_trials=5, seed=9))
    loop = run_langevin(small, request, config=config,
                        options=TrialOptions(n_trials=2, seed=9, mode="loop", first_trial=2))
    chunked = run_langevin(small, request, config=config,
                           options=TrialOptions(n_trials=5, seed=9, chunk_size=3))
    for side in ("learned", "unlearned", "retrained"):
        for name in ("params", "forget_losses", "retain_losses", "test_accuracy"):
            full = getattr(getattr(whole, side), name)
            np.testing.assert_array_equal(full[2:4], getattr(getattr(loop, side), name))
            np.testing.assert_array_equal(full, getattr(getattr(chunked, side), name))
    assert np.linalg.norm(whole.unlearned.params, axis=1).max() <= 2.0 + 1e-12


def test_noise_sits_in_every_step_and_scales_exactly():
    # Quadratic, no clipping: the chain is affine in the noise, so scaling every draw by 1/2
    # (steps and the derived initialisation) halves the deviation from the noiseless run.
    data, request = _line(), UnlearningRequest((3,), np.array([[8.0]]), np.array([1.0]))
    model = QuadraticLoss(1, curvature=1.0)
    base = dict(step_size=0.25, sigma=0.3, learn_iterations=3, unlearn_iterations=2, clip=None)
    full = run_langevin(data, request, config=LangevinConfig(**base),
                        options=TrialOptions(n_trials=4, seed=2, model=model))
    half = run_langevin(data, request, config=LangevinConfig(**base, noise_multiplier_scale=0.5),
                        options=TrialOptions(n_trials=4, seed=2, model=model))
    quiet = run_langevin(data, request,
                         config=LangevinConfig(**{**base, "sigma": 0.0},
                                                              init_std=0.0),
                         options=TrialOptions(n_trials=4, seed=2, model=model))
    np.testing.assert_allclose(half.unlearned.params - quiet.unlearned.params,
                               0.5 * (full.unlearned.params - quiet.unlearned.params), atol=1e-12)
    # One unlearning step more changes the law (noise is added at every step, not once).
    more = run_langevin(data, request, config=LangevinConfig(**{**base, "unlearn_iterations": 3}),
                        options=TrialOptions(n_trials=4, seed=2, model=model))
    assert not np.allclose(more.unlearned.params, full.unlearned.params)


def test_quadratic_laws_match_the_closed_form():
    data, request = _line(), UnlearningRequest((3,), np.array([[8.0]]), np.array([1.0]))
    m, eta, sigma, T, K = 1.0, 0.25, 0.4, 3, 2
    c, s2 = 1 - eta * m, 2 * eta * sigma**2
    tau2 = 2 * sigma**2 / m

    def after(mean0, var0, abar, t):
        return (c**t * mean0 + abar * (1 - c**t),
                c ** (2 * t) * var0 + s2 * (1 - c ** (2 * t)) / (1 - c**2))

    learned = after(0.0, tau2, 2.5, T)
    unlearned = after(*learned, 3.5, K)
    retrained = after(0.0, tau2, 3.5, T)
    config = LangevinConfig(step_size=eta, sigma=sigma, learn_iterations=T, unlearn_iterations=K,
                            clip=None)
    n_trials = 4000
    result = run_langevin(data, request, config=config,
                          options=TrialOptions(n_trials=n_trials, seed=5,
                                               model=QuadraticLoss(1, curvature=m)))
    for side, (mean, var) in (("learned", learned), ("unlearned", unlearned),
                              ("retrained", retrained)):
        sample = getattr(result, side).params[:, 0]
        assert abs(sample.mean() - mean) < 5 * math.sqrt(var / n_trials), side
        assert abs(sample.var() / var - 1) < 5 * math.sqrt(2 / n_trials), side
