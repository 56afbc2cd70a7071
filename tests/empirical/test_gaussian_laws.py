"""Exact Gaussian output laws computed from a mechanism's dynamics (empirical.divergences.gaussian_laws and
the per-paper law functions), against hand derivations and against Monte Carlo trials.

Monte Carlo checks: with N trials of N(m, v I), each coordinate's sample mean has z-score
(mean - m) / sqrt(v / N) ~ N(0, 1), its sample variance z-score (s^2 - v) / (v sqrt(2/(N-1)))
is approximately N(0, 1), and each off-diagonal sample covariance has standard deviation about
v / sqrt(N). Over 64 coordinates a bound of 5.5 on |z| fails by chance with probability
below 1e-5 per check.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from empirical.data.datasets import digits_3_vs_8
from empirical.data.requests import UnlearningRequest, removal_request
from empirical.divergences.gaussian_laws import GaussianLaws
from empirical.mechanisms.chourasia2023 import (
    LinearLoss,
    NoisyGDConfig,
    noisy_gd_gaussian_laws,
    run_noisy_gd,
)
from empirical.mechanisms.common import TrialOptions
from empirical.mechanisms.neel2021 import D2DConfig, d2d_gaussian_laws, run_d2d
from empirical.models.linear import QuadraticLoss
from tests.empirical.hand_data import line_dataset

Z_LIMIT = 5.5


def _assert_follows(samples: np.ndarray, mean: np.ndarray, variance: float) -> None:
    n = samples.shape[0]
    z_mean = (samples.mean(0) - mean) / math.sqrt(variance / n)
    assert np.abs(z_mean).max() < Z_LIMIT, np.abs(z_mean).max()
    z_var = (samples.var(0, ddof=1) - variance) / (variance * math.sqrt(2 / (n - 1)))
    assert np.abs(z_var).max() < Z_LIMIT, np.abs(z_var).max()
    covariance = np.cov(samples, rowvar=False)
    off = covariance[~np.eye(covariance.shape[0], dtype=bool)]
    assert np.abs(off).max() < 1.5 * Z_LIMIT * variance / math.sqrt(n)


def test_gaussian_laws_mahalanobis_and_likelihood_ratio_are_the_multivariate_normal_ones():
    rng = np.random.default_rng(3)
    m1, m0 = rng.normal(size=5), rng.normal(size=5)
    laws = GaussianLaws(m1, m0, 0.7, method="hand")
    x = rng.normal(size=(9, 5))
    expected = (stats.multivariate_normal(m1, 0.7 * np.eye(5)).logpdf(x)
                - stats.multivariate_normal(m0, 0.7 * np.eye(5)).logpdf(x))
    np.testing.assert_allclose(laws.log_likelihood_ratio(x), expected, rtol=1e-10, atol=1e-10)
    assert laws.mahalanobis() == pytest.approx(math.sqrt(((m1 - m0) ** 2).sum() / 0.7), rel=1e-14)
    for bad in ({"variance": 0.0}, {"variance": math.nan}, {"retrained_mean": np.zeros(4)}):
        with pytest.raises(ValueError):
            GaussianLaws(**{"unlearned_mean": m1, "retrained_mean": m0, "variance": 1.0,
                            "method": "hand", **bad})


def test_d2d_laws_are_the_hand_derived_quadratic_descents():
    # f(x; a) = (m/2)(x - a)^2 on the records 1..4, no clipping or projection: the full-batch
    # gradient is (m/n) sum_i w_i (x - a_i), so one step is x <- c x + eta m b with
    # c = 1 - eta m W/n and b = (1/n) sum_i w_i a_i (a null record has weight 0, n is kept).
    dataset = line_dataset(4)
    m, eta, T, I, sigma = 1.0, 0.25, 5, 3, 0.3
    config = D2DConfig(step_size=eta, noise_std=sigma, learn_iterations=T, unlearn_iterations=I,
                       internal_state=True, clip=None)
    options = TrialOptions(n_trials=1, seed=0, model=QuadraticLoss(1, curvature=m))
    laws = d2d_gaussian_laws(dataset, removal_request(0), config=config, options=options)

    def descend(x0: float, weight: float, b: float, steps: int) -> float:
        c = 1 - eta * m * weight
        return c**steps * x0 + eta * m * b * (1 - c**steps) / (1 - c)

    learned = descend(0, 1, 10 / 4, T)
    assert laws.unlearned_mean[0] == pytest.approx(descend(learned, 3 / 4, 9 / 4, I), rel=1e-13)
    assert laws.retrained_mean[0] == pytest.approx(descend(0, 3 / 4, 9 / 4, T), rel=1e-13)
    assert laws.variance == sigma**2
    # not Gaussian with one covariance: without the internal state, or from a random start
    for change in ({"internal_state": False}, {"init_std": 0.1}, {"noise_multiplier_scale": 0.0}):
        assert d2d_gaussian_laws(dataset, removal_request(0),
                                 config=dataclasses.replace(config, **change),
                                 options=options) is None


def test_d2d_laws_match_monte_carlo_means_and_covariance():
    dataset = digits_3_vs_8()
    config = D2DConfig(step_size=2 / (1.25 + 1.0 + 1.0), noise_std=0.01, learn_iterations=6,
                       unlearn_iterations=2, internal_state=True, l2=1.0, clip=0.05,
                       radius=100.0, noise_multiplier_scale=0.5)
    request = removal_request(0)
    laws = d2d_gaussian_laws(dataset, request, config=config,
                             options=TrialOptions(n_trials=1, seed=0))
    run = run_d2d(dataset, request, config=config,
                  options=TrialOptions(n_trials=4000, seed=5, retain_scores=1))
    assert laws.variance == pytest.approx((0.01 * 0.5) ** 2, rel=1e-15)
    _assert_follows(run.unlearned.params, laws.unlearned_mean, laws.variance)
    _assert_follows(run.retrained.params, laws.retrained_mean, laws.variance)
    assert laws.mahalanobis() > 0


def _noisy_gd_config(**change) -> NoisyGDConfig:
    base = dict(step_size=0.4, sigma=0.002, learn_steps=6, unlearn_steps=2, l2=1.0, clip=0.05)
    return NoisyGDConfig(**{**base, **change})


def test_noisy_gd_laws_include_the_clipping_of_the_linear_gradient():
    # Hand derivation: s_D = (1/n) sum_i w_i y_i min(1, L/||x_i||) x_i, mean after k steps from
    # mean0 is c^k mean0 + (1 - c^k) s_D / lam, and rho's variance is stationary.
    dataset = digits_3_vs_8()
    config = _noisy_gd_config()
    request = UnlearningRequest((3,), -dataset.features[3:4], dataset.labels[3:4])
    laws = noisy_gd_gaussian_laws(dataset, request, config=config)
    c = 1 - 0.4
    x, y = dataset.features, dataset.labels
    scale = np.minimum(1.0, 0.05 / np.linalg.norm(x, axis=1))
    s0 = (y * scale) @ x / dataset.n
    x1 = x.copy()
    x1[3] = -x[3]
    s1 = (y * scale) @ x1 / dataset.n
    unlearned = c**2 * (1 - c**6) * s0 + (1 - c**2) * s1
    np.testing.assert_allclose(laws.unlearned_mean, unlearned, rtol=1e-12, atol=1e-17)
    np.testing.assert_allclose(laws.retrained_mean, (1 - c**8) * s1, rtol=1e-12, atol=1e-17)
    assert laws.variance == pytest.approx(0.002**2 / (1.0 * (1 - 0.4 / 2)), rel=1e-12)
    assert noisy_gd_gaussian_laws(dataset, request, config=_noisy_gd_config(sigma=0.0)) is None


@pytest.mark.parametrize("records", [1, 2])
def test_noisy_gd_laws_match_monte_carlo_means_and_covariance(records):
    dataset = digits_3_vs_8()
    config = _noisy_gd_config(noise_multiplier_scale=0.7)
    rows = tuple(range(records))
    request = UnlearningRequest(rows, -dataset.features[list(rows)], dataset.labels[list(rows)])
    reference = 0 if records > 1 else None
    laws = noisy_gd_gaussian_laws(dataset, request, config=config, reference_record=reference)
    run = run_noisy_gd(dataset, request, config=config, reference_record=reference,
                       options=TrialOptions(n_trials=4000, seed=9, model=LinearLoss(dataset.dim),
                                            retain_scores=1))
    _assert_follows(run.unlearned.params, laws.unlearned_mean, laws.variance)
    _assert_follows(run.retrained.params, laws.retrained_mean, laws.variance)
