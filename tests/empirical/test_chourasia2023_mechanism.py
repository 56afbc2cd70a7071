"""Noisy-GD (seed 001, Algorithm 2, Definition 5.1): exact Gaussian ground truth, Theorem 5.1's
deletion guarantee against the closed-form divergence, batched = looped trials, the requester hook.

Ground truth. Under the linear loss l(theta; x, y) = -y <theta, x> (convex, ||x||-Lipschitz,
beta-smooth for every beta > 0) one step of Algorithm 2 is theta <- c theta + eta s_D + sqrt(2 eta)
sigma W with c = 1 - eta lam and s_D = (1/n) sum_i y_i x_i, so every iterate is Gaussian with
covariance v I. Started from Theorem 5.1's rho (v0 = sigma^2/(lam (1 - eta lam/2))) the variance
stays v0 (1 - c^2 = eta lam (2 - eta lam)), and the mean after k steps on D from m is
c^k m + (1 - c^k) s_D/lam. Curator and reference therefore differ only in their means, by
c^{K_Abar} (1 - c^{K_A}) (s_D - s_D')/lam, and R_q = q ||gap||^2/(2 v0) exactly.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from bounds.papers import chourasia2023 as paper
from empirical.data.datasets import Dataset, digits_3_vs_8
from empirical.data.requests import UnlearningRequest, removal_request
from empirical.mechanisms.chourasia2023 import (
    BatchedRequest,
    LinearLoss,
    NoisyGDConfig,
    run_noisy_gd,
    stationary_init_variance,
)
from empirical.mechanisms.common import TrialOptions, data_versions

SIDES = ("learned", "unlearned", "retrained")


def _replace(index: int, features, labels) -> UnlearningRequest:
    return UnlearningRequest((index,), np.asarray(features, dtype=float),
                             np.asarray(labels, dtype=float))


def _dataset(n: int = 12, d: int = 3, seed: int = 3) -> Dataset:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, d))
    features /= np.linalg.norm(features, axis=1, keepdims=True)  # ||x|| = 1 = L
    labels = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return Dataset("unit", features, labels, features[:4], labels[:4], "test fixture")


def _theorem51_config(*, q: float, lam: float, beta: float, eps_dp: float, n: int, K_A: int,
                      K_Abar: int, scale: float = 1.0) -> NoisyGDConfig:
    # sigma and eta exactly as Theorem 5.1 prescribes (L = 1), computed independently of the
    # declarations: sigma^2 = 4 q L^2/(lam eps_dp n^2), eta = 1/(2 (lam + beta)).
    sigma = math.sqrt(4 * q / (lam * eps_dp * n**2))
    return NoisyGDConfig(step_size=1 / (2 * (lam + beta)), sigma=sigma, learn_steps=K_A,
                         unlearn_steps=K_Abar, l2=lam, noise_multiplier_scale=scale)


def _mean_gap(dataset: Dataset, request, config: NoisyGDConfig) -> np.ndarray:
    versions = data_versions(dataset, (request,))
    c = 1 - config.step_size * config.l2
    s = [(w * y) @ x / dataset.n for x, y, w in versions]
    K_A, K_Abar = config.learn_steps, config.unlearn_steps
    return c**K_Abar * (1 - c**K_A) * (s[0] - s[1]) / config.l2


# ------------------------------------------------------------------------------------------
# Configuration and the noise convention.


def test_config_validation_and_noise_convention():
    config = NoisyGDConfig(step_size=0.2, sigma=0.5, learn_steps=3, unlearn_steps=2, l2=1.0)
    # Algorithm 2: sqrt(2 eta) N(0, sigma^2 I), i.e. standard deviation sqrt(2 eta) sigma
    assert config.step_noise_std == pytest.approx(math.sqrt(0.4) * 0.5, rel=1e-15)
    assert config.rho_variance() == pytest.approx(0.25 / (1 - 0.1), rel=1e-15)
    assert config.unlearn_steps_for(3) == (2, 2, 2)
    for bad in (dict(step_size=0), dict(sigma=-1), dict(learn_steps=-1), dict(unlearn_steps=()),
                dict(unlearn_steps=1.5), dict(clip=0), dict(noise_multiplier_scale=-1)):
        with pytest.raises(ValueError):
            NoisyGDConfig(**{**dict(step_size=0.2, sigma=0.5, learn_steps=3, unlearn_steps=2,
                                    l2=1.0), **bad})
    with pytest.raises(ValueError, match="eta \\* lam < 2"):
        stationary_init_variance(sigma=1, step_size=2.5, l2=1)
    with pytest.raises(ValueError, match="lists 2 values for 1 requests"):
        NoisyGDConfig(step_size=0.2, sigma=0.5, learn_steps=3, unlearn_steps=(1, 2),
                      l2=1.0).unlearn_steps_for(1)


def test_rho_matches_the_declared_theorem51_initialisation():
    q, L, lam, beta, eps_dp, n = 2.0, 1.0, 0.5, 1.5, 1.0, 40
    config = _theorem51_config(q=q, lam=lam, beta=beta, eps_dp=eps_dp, n=n, K_A=1, K_Abar=1)
    declared = float(paper.THM51_RHO.evaluate(precision="mp", q=q, L=L, lam=lam, beta=beta,
                                              epsilon_dp=eps_dp, n=n).value)
    assert math.sqrt(config.rho_variance()) == pytest.approx(declared, rel=1e-13)
    sigma = float(paper.THM51_SIGMA.evaluate(precision="mp", q=q, L=L, lam=lam,
                                             epsilon_dp=eps_dp, n=n).value)
    assert config.sigma == pytest.approx(sigma, rel=1e-13)


# ------------------------------------------------------------------------------------------
# Exact Gaussian law of the iterates under the linear loss.


@pytest.fixture(scope="module")
def linear_run():
    dataset = _dataset()
    request = _replace(0, -dataset.features[:1], dataset.labels[:1])
    config = _theorem51_config(q=2.0, lam=0.5, beta=0.5, eps_dp=1.0, n=dataset.n, K_A=25,
                               K_Abar=3)
    result = run_noisy_gd(dataset, request, config=config,
                          options=TrialOptions(n_trials=2500, seed=11, model=LinearLoss(dataset.dim),
                                               chunk_size=1250))
    return dataset, request, config, result


def _z_scores(samples: np.ndarray, mean: np.ndarray, var: float) -> tuple[np.ndarray, float]:
    n = samples.shape[0]
    z_mean = (samples.mean(0) - mean) / math.sqrt(var / n)
    # per-coordinate sample variance: approx normal with sd var sqrt(2/(n-1))
    z_var = (samples.var(0, ddof=1) - var) / (var * math.sqrt(2 / (n - 1)))
    return z_mean, float(np.abs(z_var).max())


def test_iterates_follow_the_exact_gaussian_law(linear_run):
    dataset, request, config, result = linear_run
    versions = data_versions(dataset, (request,))
    c = 1 - config.step_size * config.l2
    s = [(w * y) @ x / dataset.n for x, y, w in versions]
    v0 = config.sigma**2 / (config.l2 * (1 - config.step_size * config.l2 / 2))
    K_A, K_Abar = config.learn_steps, config.unlearn_steps
    learned_mean = (1 - c**K_A) * s[0] / config.l2
    unlearned_mean = c**K_Abar * learned_mean + (1 - c**K_Abar) * s[1] / config.l2
    reference_mean = (1 - c ** (K_A + K_Abar)) * s[1] / config.l2
    for side, mean in (("learned", learned_mean), ("unlearned", unlearned_mean),
                       ("retrained", reference_mean)):
        z_mean, z_var = _z_scores(getattr(result, side).params, mean, v0)
        # fixed seed: deterministic; 5 standard errors would be a 1-in-10^6 event per coordinate
        assert np.abs(z_mean).max() < 5, (side, z_mean)
        assert z_var < 5, (side, z_var)
    # the variance stays rho's: Theorem 5.1's rho is stationary for every step
    np.testing.assert_allclose(result.unlearned.params.var(0), v0, rtol=0.1)


def test_linear_loss_law_helper_agrees_with_the_hand_derivation(linear_run):
    from empirical.mechanisms.chourasia2023 import linear_loss_law

    dataset, request, config, _ = linear_run
    versions = data_versions(dataset, (request,))
    mean, var = linear_loss_law(dataset_versions=versions, steps=(config.learn_steps, 3),
                                config=config)
    c = 1 - config.step_size * config.l2
    s = [(w * y) @ x / dataset.n for x, y, w in versions]
    hand = c**3 * (1 - c**config.learn_steps) * s[0] / config.l2 + (1 - c**3) * s[1] / config.l2
    np.testing.assert_allclose(mean, hand, rtol=1e-12, atol=1e-15)
    assert var == pytest.approx(config.rho_variance(), rel=1e-12)


# ------------------------------------------------------------------------------------------
# Theorem 5.1(2): the deletion guarantee against the closed-form divergence.


@pytest.mark.parametrize("K_Abar", [0, 1, 4, 12, 40])
@pytest.mark.parametrize("q", [1.5, 2.0, 8.0])
def test_theorem51_deletion_guarantee_holds_against_the_closed_form(K_Abar, q):
    dataset = _dataset(n=20, d=3)
    # the worst single replacement for the linear loss: y x -> -y x moves s_D by 2L/n
    request = _replace(5, -dataset.features[5:6], dataset.labels[5:6])
    lam, beta, eps_dp = 0.5, 1.5, 1.0
    config = _theorem51_config(q=q, lam=lam, beta=beta, eps_dp=eps_dp, n=dataset.n, K_A=60,
                               K_Abar=K_Abar)
    gap = _mean_gap(dataset, request, config)
    assert np.linalg.norm(gap) == pytest.approx(
        (1 - config.step_size * lam) ** K_Abar * (1 - (1 - config.step_size * lam) ** 60)
        * 2 / (lam * dataset.n), rel=1e-12)
    exact = q * gap @ gap / (2 * config.rho_variance())
    certified = paper.THM51_EPSILON.evaluate(precision="interval", lam=lam, beta=beta,
                                             epsilon_dp=eps_dp, K_Abar=K_Abar).certified_upper
    assert exact <= certified
    # with sigma^2 = 4 q L^2/(lam eps_dp n^2) the exact value is eps_dp (1 - eta lam/2)/2 times
    # c^{2 K_Abar} (1 - c^{K_A})^2: q cancels, and the bound's e^{-K_Abar eta lam/2} decays
    # more slowly than c^{2 K_Abar} <= e^{-2 K_Abar eta lam}
    eta = config.step_size
    c = 1 - eta * lam
    assert exact == pytest.approx(eps_dp * (1 - eta * lam / 2) / 2 * c ** (2 * K_Abar)
                                  * (1 - c**60) ** 2, rel=1e-10)


def test_mechanism_divergence_estimate_agrees_with_the_closed_form(linear_run):
    # The Gaussian plug-in q ||mean difference||^2/(2 v) from the samples (an estimate) against
    # the exact divergence and against Theorem 5.1's bound at the same numbers.
    dataset, request, config, result = linear_run
    q = 2.0
    gap = _mean_gap(dataset, request, config)
    exact = q * gap @ gap / (2 * config.rho_variance())
    diff = result.unlearned.params.mean(0) - result.retrained.params.mean(0)
    se = math.sqrt(2 * config.rho_variance() / result.n_trials)
    assert np.abs(diff - gap).max() < 5 * se
    certified = paper.THM51_EPSILON.evaluate(precision="interval", lam=config.l2, beta=0.5,
                                             epsilon_dp=1.0, K_Abar=3).certified_upper
    assert exact <= certified


def test_shrunk_noise_breaks_the_guarantee_in_closed_form():
    # noise_multiplier_scale < 1 keeps the declared sigma but draws less noise: the divergence
    # scales by 1/scale^2 and leaves the certified region, which the audit tests rely on.
    dataset = _dataset(n=20)
    request = _replace(5, -dataset.features[5:6], dataset.labels[5:6])
    config = _theorem51_config(q=2.0, lam=0.5, beta=0.5, eps_dp=1.0, n=20, K_A=60, K_Abar=0,
                               scale=0.3)
    gap = _mean_gap(dataset, request, config)
    exact = 2.0 * gap @ gap / (2 * config.rho_variance() * 0.3**2)
    assert exact > 1.0  # above epsilon_dp, the K_Abar = 0 certificate


# ------------------------------------------------------------------------------------------
# Clipping (Remark 5.3).


def test_clipping_scales_the_linear_gradient_to_norm_L():
    dataset = _dataset(n=10, d=2)
    big = Dataset("big", dataset.features * 3.0, dataset.labels, dataset.test_features,
                  dataset.test_labels, "scaled")
    config = NoisyGDConfig(step_size=0.25, sigma=0.0, learn_steps=7, unlearn_steps=0, l2=1.0,
                           clip=1.0, init_variance=0.0)
    clipped = run_noisy_gd(big, removal_request(0), config=config,
                           options=TrialOptions(n_trials=2, seed=0, model=LinearLoss(2)))
    unclipped = run_noisy_gd(dataset, removal_request(0), config=config,
                             options=TrialOptions(n_trials=2, seed=0, model=LinearLoss(2)))
    # ||3x|| = 3 clipped to 1 is the unit-norm record: identical noiseless trajectories
    np.testing.assert_allclose(clipped.learned.params, unclipped.learned.params, rtol=1e-14)
    # and without clipping the scaled data move the model three times as far
    free = run_noisy_gd(big, removal_request(0),
                        config=NoisyGDConfig(
        step_size=0.25, sigma=0.0, learn_steps=7, unlearn_steps=0, l2=1.0, init_variance=0.0),
                        options=TrialOptions(n_trials=1, seed=0, model=LinearLoss(2)))
    np.testing.assert_allclose(free.learned.params[0], 3 * unclipped.learned.params[0],
                               rtol=1e-13)


# ------------------------------------------------------------------------------------------
# Batched = looped (CPU, bit for bit) and seeds.


def _assert_identical(a, b, rows=slice(None)) -> None:
    for side in SIDES:
        for name in ("params", "forget_losses", "retain_losses", "test_accuracy"):
            np.testing.assert_array_equal(getattr(getattr(a, side), name)[rows],
                                          getattr(getattr(b, side), name), err_msg=f"{side}.{name}")


@pytest.fixture(scope="module")
def digits_small() -> Dataset:
    full = digits_3_vs_8()
    return Dataset("digits-small", full.features[:40], full.labels[:40], full.test_features[:30],
                   full.test_labels[:30], "first 40 rows of digits 3-vs-8")


def test_batched_equals_loop_bit_for_bit_on_cpu(digits_small):
    config = NoisyGDConfig(step_size=0.4, sigma=0.05, learn_steps=6, unlearn_steps=2, l2=0.5,
                           clip=0.5)
    request = _replace(3, digits_small.features[7:8], [-1.0])
    batched = run_noisy_gd(digits_small, request, config=config, options=TrialOptions(n_trials=5, seed=4))
    loop = run_noisy_gd(digits_small, request, config=config,
                        options=TrialOptions(n_trials=5, seed=4, mode="loop"))
    _assert_identical(batched, loop)
    tail = run_noisy_gd(digits_small, request, config=config,
                        options=TrialOptions(n_trials=2, seed=4, chunk_size=1, first_trial=3))
    _assert_identical(batched, tail, rows=slice(3, 5))
    other = run_noisy_gd(digits_small, request, config=config, options=TrialOptions(n_trials=5, seed=5))
    assert not np.array_equal(other.unlearned.params, batched.unlearned.params)


# ------------------------------------------------------------------------------------------
# The adaptive requester hook.


class FlipTheSignRequester:
    """Replaces record ``1 + position`` by a record aligned with the published model's sign of
    its first coordinate: the request depends on what was published."""

    def __call__(self, *, position, published, random):
        size = published.shape[0]
        indices = torch.full((size, 1), 1 + position, dtype=torch.long)
        direction = torch.zeros(size, 1, published.shape[1], dtype=published.dtype)
        direction[:, 0, 0] = torch.where(published[:, 0] > 0, 1.0, -1.0)
        labels = torch.ones(size, 1, dtype=published.dtype)
        return BatchedRequest(indices, direction, labels)


def test_requester_sees_the_published_model_and_stays_batched(digits_small):
    config = NoisyGDConfig(step_size=0.4, sigma=0.05, learn_steps=4, unlearn_steps=1, l2=0.5,
                           clip=0.5)
    args = dict(config=config, requester=FlipTheSignRequester(), adaptive_requests=2)
    options = TrialOptions(n_trials=6, seed=8, model=LinearLoss(digits_small.dim))
    batched = run_noisy_gd(digits_small, removal_request(0), options=options, **args)
    loop = run_noisy_gd(digits_small, removal_request(0), options=replace(options, mode="loop"),
                        **args)
    _assert_identical(batched, loop)
    np.testing.assert_array_equal(batched.adaptive_indices[:, :, 0], [[1, 2]] * 6)
    # replay one trial by hand: the published sign decides the record, the record moves the
    # model along coordinate 0 by eta/n per step relative to the removal-free run
    fixed = run_noisy_gd(digits_small, removal_request(0), config=config,
                         options=TrialOptions(n_trials=6, seed=8, model=LinearLoss(digits_small.dim)))
    np.testing.assert_array_equal(fixed.learned.params, batched.learned.params)
    assert not np.array_equal(fixed.unlearned.params, batched.unlearned.params)


def test_requester_without_count_is_refused(digits_small):
    config = NoisyGDConfig(step_size=0.4, sigma=0.05, learn_steps=1, unlearn_steps=1, l2=0.5)
    with pytest.raises(ValueError, match="requester exactly when"):
        run_noisy_gd(digits_small, removal_request(0), config=config, requester=FlipTheSignRequester(),
                     options=TrialOptions(n_trials=1, seed=0))


def test_reference_under_a_requester_replays_the_interaction_from_the_edited_database():
    # Noiseless linear-loss runs are deterministic, so both interactions can be replayed by
    # hand: the reference learns on D'_0 (target already replaced), its requester copies the
    # direction of *that* release into row 7, and it then runs the 2 + 3 deletion steps.
    from empirical.mechanisms.chourasia2023 import PublishedDirectionRequester, linear_loss_law

    dataset = _dataset(n=12, d=3)
    request = _replace(2, -dataset.features[2:3], dataset.labels[2:3])
    lam, eta = 0.8, 0.3
    config = NoisyGDConfig(step_size=eta, sigma=0.0, learn_steps=5, unlearn_steps=(2, 3), l2=lam,
                           init_variance=0.0)
    result = run_noisy_gd(dataset, request, config=config, requester=PublishedDirectionRequester((7,)),
                          adaptive_requests=1,
                          options=TrialOptions(n_trials=2, seed=0, model=LinearLoss(3)))
    (x0, y0, w0), (x1, y1, w1) = data_versions(dataset, (request,))
    c = 1 - eta * lam

    def after(theta: np.ndarray, x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
        return c**k * theta + (1 - c**k) * (y @ x) / 12 / lam

    def replay(x_start: np.ndarray, y_start: np.ndarray, x_target: np.ndarray) -> tuple:
        learned, _ = linear_loss_law(dataset_versions=[(x_start, y_start, w0)], steps=[5],
                                     config=config)
        x_a, y_a = x_start.copy(), y_start.copy()
        x_a[7], y_a[7] = learned / np.linalg.norm(learned), 1.0
        theta = after(learned, x_a, y_a, 2)
        x_b = x_a.copy()
        x_b[2] = x_target[2]
        return learned, after(theta, x_b, y_a, 3)

    learned, curator = replay(x0, y0, x1)
    _, reference = replay(x1, y1, x1)
    np.testing.assert_allclose(result.learned.params[0], learned, rtol=1e-12)
    np.testing.assert_allclose(result.unlearned.params, np.stack([curator, curator]), rtol=1e-12)
    np.testing.assert_allclose(result.retrained.params, np.stack([reference, reference]),
                               rtol=1e-12)
    assert not np.allclose(curator, reference)  # the target's trace through the requester


# ------------------------------------------------------------------------------------------
# Several records per request: Definition 4.1's per-record reference.


def _aligned_request(dataset: Dataset, r: int) -> UnlearningRequest:
    """r records with the same (x, y), each replaced by (x, -y): the gradients align."""
    return UnlearningRequest(tuple(range(r)), dataset.features[:r].copy(), -dataset.labels[:r])


def _aligned_dataset(n: int = 16, d: int = 3) -> Dataset:
    features = np.tile(np.eye(d)[:1], (n, 1))
    features[8:] = _dataset(n=n - 8, d=d).features  # 8 aligned records, then generic ones
    labels = np.ones(n)
    return Dataset("aligned", features, labels, features[:4], labels[:4], "test fixture")


@pytest.mark.parametrize("r", [1, 2, 4, 8])
def test_per_record_reference_divergence_does_not_grow_with_the_request_size(r):
    """Without noise the outputs are the means; R_q = q ||gap||^2/(2 v0) of the Gaussian laws.

    Per record (eq. 9: only the target replaced in the reference's database) the gap is that
    of one record, c^K_Abar (1 - c^K_A) 2L/(lam n), for every r; against the reference that
    retrains on the whole edited database it is r times larger (group privacy)."""
    dataset = _aligned_dataset()
    request = _aligned_request(dataset, r)
    q = 2.0
    base = _theorem51_config(q=q, lam=0.5, beta=0.5, eps_dp=1.0, n=dataset.n, K_A=25, K_Abar=3)
    silent = NoisyGDConfig(step_size=base.step_size, sigma=base.sigma, learn_steps=25,
                           unlearn_steps=3, l2=0.5, noise_multiplier_scale=0.0)
    v0 = base.rho_variance()
    c = 1 - base.step_size * base.l2
    one_record = c**3 * (1 - c**25) * 2 / (base.l2 * dataset.n)  # ||(s_D - s_D')/lam||, L = 1
    expected = q * one_record**2 / (2 * v0)

    def renyi(reference_record):
        result = run_noisy_gd(dataset, request, config=silent, reference_record=reference_record,
                              options=TrialOptions(n_trials=1, seed=5, model=LinearLoss(dataset.dim)))
        gap = result.unlearned.params[0] - result.retrained.params[0]
        return q * float(gap @ gap) / (2 * v0)

    assert renyi(0) == pytest.approx(expected, rel=1e-9)
    assert renyi(None) == pytest.approx(r**2 * expected, rel=1e-9)
