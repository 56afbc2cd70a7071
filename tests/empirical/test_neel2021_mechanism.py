"""Delete-to-Descent (seed 000 App. N.3 Algorithms 2-3, Theorems O.1/O.2): hand cases, exact
Gaussian laws, step size, noise placement, internal state, counted gradients, batched = loop.

Ground truth. For f(x; a) = (m/2)||x - a||^2 (no clipping, no projection, l2 = 0) one full-batch
descent step is x <- c x + eta m abar with c = 1 - eta m and abar the mean of the centres (null
records contribute 0 and count in n), so after t steps from x0 the iterate is the deterministic
c^t x0 + eta m abar (1 - c^t)/(1 - c); every publication adds N(0, sigma^2 I). Hence the published
models are exactly N(mean, sigma^2 I) with internal state, and with noise carried forward,
N(mean, sigma^2 (1 + c^{2I}) I) after one request without internal state.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from empirical.data.datasets import Dataset, digits_3_vs_8
from empirical.data.requests import UnlearningRequest, replacement_request
from empirical.mechanisms.common import TrialOptions, tensor_versions
from empirical.mechanisms.neel2021 import (
    D2DConfig,
    d2d_contraction,
    d2d_step_size,
    full_batch_gradient,
    run_d2d,
)
from empirical.models.linear import LogisticRegression, QuadraticLoss
from tests.empirical.hand_data import line_dataset

_line = line_dataset


def _config(**change) -> D2DConfig:
    base = dict(step_size=0.5, noise_std=0.0, learn_iterations=1, unlearn_iterations=1,
                internal_state=True, clip=None)
    return D2DConfig(**{**base, **change})


def test_config_validation_and_step_size():
    bad = [({"step_size": 0.0}, "step_size"), ({"noise_std": -1.0}, "noise_std"),
           ({"learn_iterations": -1}, "learn_iterations"),
           ({"unlearn_iterations": ()}, "at least one"), ({"unlearn_iterations": -1}, "integers"),
           ({"internal_state": 1}, "internal_state"), ({"clip": 0.0}, "clip"),
           ({"noise_multiplier_scale": math.nan}, "noise_multiplier_scale")]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            _config(**change)
    assert _config(unlearn_iterations=[2, 3]).iterations_for(2) == (2, 3)
    with pytest.raises(ValueError, match="2 values for 3"):
        _config(unlearn_iterations=[2, 3]).iterations_for(3)
    assert d2d_step_size(smoothness=0.75, strong_convexity=0.25) == 2.0
    assert d2d_contraction(smoothness=0.75, strong_convexity=0.25) == 0.5
    with pytest.raises(ValueError, match="0 < m < L"):
        d2d_step_size(smoothness=0.25, strong_convexity=0.25)


def test_noise_free_hand_case_both_variants():
    # Centres 1..4, m = 1, eta = 1/2: x <- x/2 + 5/4 on D (abar = 5/2). Replace 4 by 8: abar' =
    # 7/2, x <- x/2 + 7/4. From 0: learned 5/4, unlearned (I=1) 5/8 + 7/4 = 19/8, retrained 7/4.
    request = UnlearningRequest((3,), np.array([[8.0]]), np.array([1.0]))
    for internal in (True, False):
        result = run_d2d(_line(), request, config=_config(internal_state=internal),
                         options=TrialOptions(n_trials=2, seed=0, model=QuadraticLoss(1, curvature=1.0)))
        np.testing.assert_array_equal(result.learned.params, [[1.25]] * 2)
        np.testing.assert_array_equal(result.unlearned.params, [[19 / 8]] * 2)
        np.testing.assert_array_equal(result.retrained.params, [[1.75]] * 2)
        assert result.gradient_evaluations == {"learn": 4, "unlearn": (4,), "retrain": 4}


def test_counted_gradient_evaluations_follow_the_iterations():
    request = [UnlearningRequest((0,)), UnlearningRequest((1,))]
    config = _config(learn_iterations=3, unlearn_iterations=(2, 5))
    result = run_d2d(_line(), request, config=config,
                     options=TrialOptions(n_trials=3, seed=0, model=QuadraticLoss(1, curvature=1.0),
                                          chunk_size=2))
    # n = 4 per-example gradients per full-batch step, removals still evaluated (null records).
    assert result.gradient_evaluations == {"learn": 12, "unlearn": (8, 20), "retrain": 12}


def test_step_size_contracts_by_gamma_on_logistic():
    # Theorems O.1/O.2 rest on one step with eta = 2/(L + m) being gamma-contractive.
    data = digits_3_vs_8()
    small = Dataset("d", data.features[:40], data.labels[:40], np.zeros((0, data.dim)), [], "t")
    l2 = 0.05
    smooth, convex = 0.25 + l2, l2
    eta, gamma = d2d_step_size(smoothness=smooth, strong_convexity=convex), \
        d2d_contraction(smoothness=smooth, strong_convexity=convex)
    model = LogisticRegression(data.dim)
    version = tensor_versions([(small.features, small.labels, np.ones(40))], torch.tensor)[0]
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, data.dim, generator=generator, dtype=torch.float64) * 3
    y = torch.randn(64, data.dim, generator=generator, dtype=torch.float64) * 3

    def step(p):
        return p - eta * full_batch_gradient(model, p, version, clip=None, l2=l2)

    ratio = (step(x) - step(y)).norm(dim=1) / (x - y).norm(dim=1)
    assert float(ratio.max()) <= gamma + 1e-12
    # Half the step (1/(L + m)) contracts flat directions only by 1 - eta m = L/(L + m) > gamma:
    # the check can fail.
    half = x - eta / 2 * full_batch_gradient(model, x, version, clip=None, l2=l2)
    half_y = y - eta / 2 * full_batch_gradient(model, y, version, clip=None, l2=l2)
    assert float(((half - half_y).norm(dim=1) / (x - y).norm(dim=1)).max()) > gamma


def test_internal_state_and_noise_placement():
    # With internal state the fine-tuned clean parameters ignore every published noise; without
    # it they carry the learning publication's noise through the fine-tuning.
    data = digits_3_vs_8()
    small = Dataset("d", data.features[:32], data.labels[:32], data.test_features[:20],
                    data.test_labels[:20], "t")
    request = replacement_request(small, [3], seed=1)
    common = dict(step_size=2 / 0.4, learn_iterations=5, unlearn_iterations=2, l2=0.075, clip=1.0)
    quiet = run_d2d(small, request, config=D2DConfig(noise_std=0.0, internal_state=True, **common),
                    options=TrialOptions(n_trials=3, seed=4))
    kept = run_d2d(small, request, config=D2DConfig(noise_std=0.5, internal_state=True, **common),
                   options=TrialOptions(n_trials=3, seed=4))
    dropped = run_d2d(small, request, config=D2DConfig(noise_std=0.5, internal_state=False, **common),
                      options=TrialOptions(n_trials=3, seed=4))
    np.testing.assert_array_equal(kept.unlearned_clean, quiet.unlearned_clean)
    assert not np.allclose(dropped.unlearned_clean, quiet.unlearned_clean)
    # The published model is the clean one plus one draw of N(0, sigma^2 I) (output noise only).
    assert not np.array_equal(kept.unlearned.params, kept.unlearned_clean)
    # Same seed, same output noise streams: both variants publish clean + the same last draw.
    np.testing.assert_allclose(kept.unlearned.params - kept.unlearned_clean,
                               dropped.unlearned.params - dropped.unlearned_clean, atol=1e-12)
    # noise_multiplier_scale scales exactly the drawn output noise.
    half = run_d2d(small, request,
                   config=D2DConfig(noise_std=0.5, internal_state=True,
                                                    noise_multiplier_scale=0.5, **common),
                   options=TrialOptions(n_trials=3, seed=4))
    np.testing.assert_allclose(half.unlearned.params - half.unlearned_clean,
                               0.5 * (kept.unlearned.params - kept.unlearned_clean), atol=1e-12)


@pytest.mark.parametrize("internal", [True, False])
def test_batched_loop_and_chunks_are_bit_identical(internal):
    data = digits_3_vs_8()
    small = Dataset("d", data.features[:24], data.labels[:24], data.test_features[:10],
                    data.test_labels[:10], "t")
    request = replacement_request(small, [2], seed=3)
    config = D2DConfig(step_size=2 / 0.4, noise_std=0.3, learn_iterations=4, unlearn_iterations=2,
                       internal_state=internal, l2=0.075, clip=1.0, radius=2.0, init_std=0.5)
    whole = run_d2d(small, request, config=config, options=TrialOptions(n_trials=5, seed=9))
    loop = run_d2d(small, request, config=config,
                   options=TrialOptions(n_trials=2, seed=9, mode="loop", first_trial=2))
    chunked = run_d2d(small, request, config=config, options=TrialOptions(n_trials=5, seed=9, chunk_size=2))
    for side in ("learned", "unlearned", "retrained"):
        for name in ("params", "forget_losses", "retain_losses", "test_accuracy"):
            full = getattr(getattr(whole, side), name)
            np.testing.assert_array_equal(full[2:4], getattr(getattr(loop, side), name))
            np.testing.assert_array_equal(full, getattr(getattr(chunked, side), name))
    np.testing.assert_array_equal(whole.unlearned_clean[2:4], loop.unlearned_clean)
    # Projection onto C_R: every published clean state lies in the ball of radius 2.
    assert np.linalg.norm(whole.unlearned_clean, axis=1).max() <= 2.0 + 1e-12


def test_quadratic_published_laws_are_exact_gaussians():
    # Internal state: unlearned ~ N(mean_I, sigma^2); without: N(mean_I, sigma^2 (1 + c^{2I})).
    data = _line()
    request = UnlearningRequest((3,), np.array([[8.0]]), np.array([1.0]))
    m, eta, sigma, steps = 1.0, 0.25, 0.7, 2
    c = 1 - eta * m
    learned_mean = eta * m * 2.5 * (1 - c**3) / (1 - c)          # 3 steps from 0 on abar = 5/2
    unlearned_mean = c**steps * learned_mean + eta * m * 3.5 * (1 - c**steps) / (1 - c)
    n_trials = 4000
    for internal, variance in ((True, sigma**2), (False, sigma**2 * (1 + c ** (2 * steps)))):
        config = _config(step_size=eta, noise_std=sigma, learn_iterations=3,
                         unlearn_iterations=steps, internal_state=internal)
        result = run_d2d(data, request, config=config,
                         options=TrialOptions(n_trials=n_trials, seed=11,
                                              model=QuadraticLoss(1, curvature=m)))
        sample = result.unlearned.params[:, 0]
        # z-test of the mean and chi-square-type test of the variance at ~5 standard errors.
        assert abs(sample.mean() - unlearned_mean) < 5 * math.sqrt(variance / n_trials)
        assert abs(sample.var() / variance - 1) < 5 * math.sqrt(2 / n_trials)
