"""PNSGD (seed 000, Algorithm 1): equivalences, hand cases and exact Gaussian ground truth.

Ground truth (catalog section 3.3). For f(x; a) = (m/2)||x - a||^2 without clipping or
projection one step on batch B^j is x <- c x + (eta m / b) sum_{i in B^j} a_i + s W with
c = 1 - eta m and s^2 = 2 eta sigma^2. With a fixed partition into J = n/b batches, one epoch
maps x to c^J x + u(D) + noise, u(D) = sum_j c^{J-1-j} (eta m / b) sum_{i in B^j} a_i, so after
E epochs from N(mu0, tau0^2 I):
    mean = c^{JE} mu0 + u(D) (1 - c^{JE}) / (1 - c^J),
    var  = c^{2JE} tau0^2 + s^2 (1 - c^{2JE}) / (1 - c^2)   (per coordinate).
Unlearning continues from the learned law on D'; retraining starts afresh on D'.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from empirical.data.datasets import Dataset, digits_3_vs_8
from empirical.data.requests import RequestSequence, UnlearningRequest, removal_request, replacement_request
from empirical.mechanisms.chien2024 import (
    PAPER_BURN_IN_EPOCHS,
    PNSGDConfig,
    PNSGDResult,
    paper_logistic_config,
    run_pnsgd,
)
from empirical.mechanisms.common import TrialOptions
from empirical.models.linear import QuadraticLoss
from empirical.models.networks import FunctionalClassifier, TinyCNN, TinyMLP

SIDES = ("learned", "unlearned", "retrained")


@pytest.fixture(scope="module")
def digits() -> Dataset:
    return digits_3_vs_8()


def _assert_identical(a: PNSGDResult, b: PNSGDResult, rows=slice(None)) -> None:
    for side in SIDES:
        left, right = getattr(a, side), getattr(b, side)
        for name in ("params", "forget_losses", "retain_losses", "test_accuracy"):
            np.testing.assert_array_equal(getattr(left, name)[rows], getattr(right, name),
                                          err_msg=f"{side}.{name}")
    np.testing.assert_array_equal(a.forget_batch[rows], b.forget_batch)


# ------------------------------------------------------------------------------------------
# Configuration.


def test_config_validation():
    base = dict(step_size=0.1, sigma=1.0, batch_size=4, learn_epochs=2, unlearn_epochs=1)
    PNSGDConfig(**base)
    bad = [
        ({"step_size": 0.0}, "step_size"),
        ({"sigma": -1.0}, "sigma"),
        ({"batch_size": 0}, "batch_size"),
        ({"learn_epochs": -1}, "learn_epochs"),
        ({"unlearn_epochs": -2}, "unlearn_epochs"),
        ({"unlearn_epochs": ()}, "at least one"),
        ({"clip": 0.0}, "clip"),
        ({"radius": -1.0}, "radius"),
        ({"l2": math.inf}, "l2"),
        ({"partition": "random"}, "partition"),
        ({"noise_multiplier_scale": -0.5}, "noise_multiplier_scale"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            PNSGDConfig(**{**base, **change})
    config = PNSGDConfig(**{**base, "unlearn_epochs": [3, 1]})
    assert config.unlearn_epochs == (3, 1)
    assert config.unlearn_epochs_for(2) == (3, 1)
    with pytest.raises(ValueError, match="2 values for 3 requests"):
        config.unlearn_epochs_for(3)
    assert PNSGDConfig(**base).unlearn_epochs_for(3) == (1, 1, 1)
    assert PNSGDConfig(**base).noise_std == pytest.approx(math.sqrt(0.2))


def test_paper_constants():
    # Seed 000 App. N.3 with the MNIST size: lambda = 1e-6 n, eta = 1/L, c = 1 - eta lambda.
    config = paper_logistic_config(n=11264, sigma=0.1, batch_size=128)
    assert config.l2 == pytest.approx(0.011264)
    assert config.step_size == pytest.approx(3.827546, abs=1e-6)
    assert 1 - config.step_size * config.l2 == pytest.approx(0.95688652, abs=1e-8)
    assert config.learn_epochs == PAPER_BURN_IN_EPOCHS[128] == 20
    assert paper_logistic_config(n=1024, sigma=1.0, batch_size=512).learn_epochs == 50
    assert paper_logistic_config(n=1024, sigma=1.0, batch_size=1024).learn_epochs == 1000
    with pytest.raises(ValueError, match="Table 2"):
        paper_logistic_config(n=1024, sigma=1.0, batch_size=64)


def test_run_rejects_bad_inputs(digits):
    config = PNSGDConfig(step_size=1.0, sigma=0.1, batch_size=30, learn_epochs=1,
                         unlearn_epochs=1, l2=0.01)
    request = removal_request(0)
    with pytest.raises(ValueError, match="drop_to_multiple"):
        run_pnsgd(digits, request, config=config, options=TrialOptions(n_trials=2, seed=0))
    no_m = PNSGDConfig(step_size=1.0, sigma=0.1, batch_size=32, learn_epochs=1,
                       unlearn_epochs=1)
    with pytest.raises(ValueError, match="init_std"):
        run_pnsgd(digits, request, config=no_m, options=TrialOptions(n_trials=2, seed=0))
    with pytest.raises(ValueError, match="out of range"):
        run_pnsgd(digits, removal_request(400),
                  config=config.__class__(
            **{**config.__dict__, "batch_size": 32}),
                  options=TrialOptions(n_trials=2, seed=0))


# ------------------------------------------------------------------------------------------
# Batched == loop, independence of chunk size, on digits logistic regression.


def _digits_config(**changes) -> PNSGDConfig:
    settings = dict(step_size=1.0 / (0.25 + 256e-6), sigma=0.05, batch_size=32, learn_epochs=2,
                    unlearn_epochs=1, l2=256e-6, clip=1.0, radius=None)
    return PNSGDConfig(**{**settings, **changes})


@pytest.mark.parametrize("batch_size", [32, 4])
def test_batched_loop_and_chunks_are_bit_identical(digits, batch_size):
    request = replacement_request(digits, [7, 100], seed=3)
    config = _digits_config(radius=50.0, batch_size=batch_size)
    reference = run_pnsgd(digits, request, config=config, options=TrialOptions(n_trials=9, seed=11))
    looped = run_pnsgd(digits, request, config=config, options=TrialOptions(n_trials=9, seed=11, mode="loop"))
    _assert_identical(reference, looped)
    for chunk in (2, 4):
        _assert_identical(reference, run_pnsgd(digits, request, config=config,
                                               options=TrialOptions(n_trials=9, seed=11, chunk_size=chunk)))
    tail = run_pnsgd(digits, request, config=config, options=TrialOptions(n_trials=3, seed=11, first_trial=6))
    _assert_identical(reference, tail, rows=slice(6, 9))
    np.testing.assert_array_equal(tail.trial_indices, [6, 7, 8])
    other = run_pnsgd(digits, request, config=config, options=TrialOptions(n_trials=9, seed=12))
    assert not np.array_equal(other.unlearned.params, reference.unlearned.params)


def test_result_shapes_and_scores(digits):
    request = replacement_request(digits, [5], seed=0)
    result = run_pnsgd(digits, request, config=_digits_config(),
                       options=TrialOptions(n_trials=4, seed=0, retain_scores=10))
    assert result.n_trials == 4 and result.n == 256 and result.num_params == 64
    assert result.forget_indices == (5,)
    assert result.retain_indices.shape == (10,) and 5 not in result.retain_indices
    for side in SIDES:
        samples = getattr(result, side)
        assert samples.params.shape == (4, 64)
        assert samples.forget_losses.shape == (4, 1)
        assert samples.retain_losses.shape == (4, 10)
        assert samples.test_accuracy.shape == (4,)
    # Scores are the logistic losses of the original record (not the replacement).
    x, y = digits.features[5], digits.labels[5]
    margin = result.unlearned.params @ x * y
    np.testing.assert_allclose(result.unlearned.forget_losses[:, 0], np.logaddexp(0, -margin))
    assert result.strong_convexity == pytest.approx(256e-6)
    assert result.smoothness == pytest.approx(0.25 + 256e-6)
    assert result.fixed_partition is None and result.dtype == "float64"
    bare = run_pnsgd(digits, request, config=_digits_config(),
                     options=TrialOptions(n_trials=2, seed=0, retain_scores=0))
    assert bare.unlearned.retain_losses.shape == (2, 0) and bare.retain_indices.size == 0


def test_partitions_per_trial_or_fixed(digits):
    request = replacement_request(digits, [3], seed=0)
    per_trial = run_pnsgd(digits, request, config=_digits_config(learn_epochs=0),
                          options=TrialOptions(n_trials=64, seed=0))
    assert set(np.unique(per_trial.forget_batch)) == set(range(8))
    fixed = run_pnsgd(digits, request, config=_digits_config(learn_epochs=0, partition="fixed"),
                      options=TrialOptions(n_trials=8, seed=0))
    assert len(np.unique(fixed.forget_batch)) == 1
    batches = fixed.fixed_partition
    assert batches.shape == (8, 32) and sorted(batches.ravel().tolist()) == list(range(256))
    assert int(np.argwhere(batches == 3)[0, 0]) == fixed.forget_batch[0, 0]


def test_projection_clipping_and_accuracy(digits):
    request = replacement_request(digits, [0], seed=1)
    projected = run_pnsgd(digits, request, config=_digits_config(radius=0.5, sigma=0.5),
                          options=TrialOptions(n_trials=6, seed=0))
    for side in SIDES:
        norms = np.linalg.norm(getattr(projected, side).params, axis=1)
        assert np.all(norms <= 0.5 * (1 + 1e-12))
    # Unit-norm features keep the logistic gradient inside the unit ball: M = 1 is a no-op
    # (seed 000 App. N.3), while a smaller M changes the run.
    clipped = run_pnsgd(digits, request, config=_digits_config(), options=TrialOptions(n_trials=3, seed=0))
    unclipped = run_pnsgd(digits, request, config=_digits_config(clip=None),
                          options=TrialOptions(n_trials=3, seed=0))
    np.testing.assert_array_equal(clipped.unlearned.params, unclipped.unlearned.params)
    tight = run_pnsgd(digits, request, config=_digits_config(clip=0.05),
                      options=TrialOptions(n_trials=3, seed=0))
    assert not np.array_equal(tight.unlearned.params, clipped.unlearned.params)
    trained = run_pnsgd(digits, request, config=_digits_config(learn_epochs=10, sigma=0.01),
                        options=TrialOptions(n_trials=8, seed=0))
    assert trained.retrained.test_accuracy.mean() > 0.8
    assert trained.unlearned.test_accuracy.mean() > 0.8


def _network_run(module, input_shape, digits, *, mode):
    torch.manual_seed(0)
    model = FunctionalClassifier(module.double(), input_shape=input_shape, name="net")
    config = PNSGDConfig(step_size=0.5, sigma=0.01, batch_size=32, learn_epochs=1,
                         unlearn_epochs=1, l2=0.01, clip=1.0, init_std=0.3)
    return run_pnsgd(digits, replacement_request(digits, [4], seed=0), config=config,
                     options=TrialOptions(n_trials=3, seed=0, model=model, mode=mode))


def test_pnsgd_drives_the_mlp_through_torch_func(digits):
    batched = _network_run(TinyMLP(64, hidden=5), (64,), digits, mode="batched")
    looped = _network_run(TinyMLP(64, hidden=5), (64,), digits, mode="loop")
    assert batched.num_params == 64 * 5 + 5 + 5 * 2 + 2 and batched.smoothness is None
    np.testing.assert_allclose(batched.unlearned.params, looped.unlearned.params, rtol=0,
                               atol=1e-12)
    assert np.all(batched.retrained.forget_losses > 0)


@pytest.mark.slow
def test_pnsgd_drives_the_cnn_through_torch_func(digits):
    batched = _network_run(TinyCNN(1), (1, 8, 8), digits, mode="batched")
    looped = _network_run(TinyCNN(1), (1, 8, 8), digits, mode="loop")
    np.testing.assert_allclose(batched.unlearned.params, looped.unlearned.params, rtol=0,
                               atol=1e-12)


# ------------------------------------------------------------------------------------------
# Quadratic loss: hand cases and exact Gaussian laws.


def _points(n: int, d: int, seed: int) -> Dataset:
    points = np.random.default_rng(seed).normal(size=(n, d))
    return Dataset("points", points, np.ones(n), np.zeros((0, d)), np.zeros(0), "test points")


def test_noise_free_quadratic_hand_case():
    # a = (1, 3), m = 1, eta = 1/2, full batch: x <- x/2 + 1 on D; D' replaces 3 by 5,
    # x <- x/2 + 3/2. From 0: learned 1, unlearned (K=1) 2, retrained (T=1) 3/2.
    data = Dataset("two", np.array([[1.0], [3.0]]), np.ones(2), np.zeros((0, 1)), [], "hand")
    request = UnlearningRequest((1,), np.array([[5.0]]), np.array([1.0]))
    config = PNSGDConfig(step_size=0.5, sigma=0.0, batch_size=2, learn_epochs=1,
                         unlearn_epochs=1, clip=None, init_std=0.0)
    result = run_pnsgd(data, request, config=config,
                       options=TrialOptions(n_trials=2, seed=0, model=QuadraticLoss(1, curvature=1.0)))
    np.testing.assert_array_equal(result.learned.params, [[1.0], [1.0]])
    np.testing.assert_array_equal(result.unlearned.params, [[2.0], [2.0]])
    np.testing.assert_array_equal(result.retrained.params, [[1.5], [1.5]])
    # Losses (1/2)(x - a)^2 on the original forget record a = 3 and the retained a = 1.
    np.testing.assert_array_equal(result.unlearned.forget_losses, [[0.5], [0.5]])
    np.testing.assert_array_equal(result.retrained.retain_losses, [[0.125], [0.125]])
    assert np.isnan(result.retrained.test_accuracy).all()


def _epoch_offset(points, weights, partition, *, eta, m, b):
    """u(D) of the docstring, and the per-epoch contraction, by direct iteration (weights 0
    mark removed records, whose gradient vanishes)."""
    offset = np.zeros(points.shape[1])
    contraction = 1.0
    for rows in partition:
        present = weights[rows].sum()
        factor = 1.0 - eta * m * present / b
        offset = factor * offset + eta * m / b * (weights[rows, None] * points[rows]).sum(0)
        contraction *= factor
    return offset, contraction


def _exact_law(start_mean, start_var, versions, partition, *, eta, m, b, noise_var):
    """Mean and per-coordinate variance after running each (points, weights, epochs)."""
    mean, var = np.array(start_mean, dtype=float), float(start_var)
    for points, weights, epochs in versions:
        for _ in range(epochs):
            for rows in partition:
                factor = 1.0 - eta * m * weights[rows].sum() / b
                mean = factor * mean + eta * m / b * (weights[rows, None] * points[rows]).sum(0)
                var = factor**2 * var + noise_var
    return mean, var


def _closed_form(points, new_points, partition, *, eta, m, b, sigma, T, K, tau0_sq):
    c = 1.0 - eta * m
    J = len(partition)
    ones = np.ones(len(points))
    u, _ = _epoch_offset(points, ones, partition, eta=eta, m=m, b=b)
    u_new, _ = _epoch_offset(new_points, ones, partition, eta=eta, m=m, b=b)
    s2 = 2 * eta * sigma**2
    geometric = lambda E: (1 - c ** (J * E)) / (1 - c**J)  # noqa: E731
    variance = lambda E: c ** (2 * J * E) * tau0_sq + s2 * (1 - c ** (2 * J * E)) / (1 - c**2)  # noqa: E731
    learned = u * geometric(T)
    unlearned = c ** (J * K) * learned + u_new * geometric(K)
    retrained = u_new * geometric(T)
    return (unlearned, variance(T + K)), (retrained, variance(T))


QUAD = dict(n=8, d=2, b=2, eta=0.3, m=1.0, sigma=0.4, T=3, K=2)


def _quadratic_run(request, *, n_trials, init_std=None, scale=1.0, unlearn_epochs=None):
    data = _points(QUAD["n"], QUAD["d"], seed=0)
    config = PNSGDConfig(step_size=QUAD["eta"], sigma=QUAD["sigma"], batch_size=QUAD["b"],
                         learn_epochs=QUAD["T"], unlearn_epochs=unlearn_epochs or QUAD["K"],
                         clip=None, radius=None, init_std=init_std, partition="fixed",
                         noise_multiplier_scale=scale)
    model = QuadraticLoss(QUAD["d"], curvature=QUAD["m"])
    return data, run_pnsgd(data, request, config=config,
                           options=TrialOptions(n_trials=n_trials, seed=5, model=model))


def _check_gaussian(samples, mean, var, *, width=4.5):
    count = samples.shape[0]
    error = np.abs(samples.mean(axis=0) - mean)
    assert np.all(error <= width * math.sqrt(var / count)), (samples.mean(axis=0), mean)
    pooled = samples.var(axis=0, ddof=1).mean()
    dof = samples.shape[1] * (count - 1)
    assert abs(pooled / var - 1) <= width * math.sqrt(2 / dof), (pooled, var)


def test_quadratic_closed_form_matches_exact_iteration():
    data = _points(8, 2, seed=0)
    partition = np.arange(8).reshape(4, 2)
    new_points = np.array(data.features)
    new_points[5] += [2.0, -1.0]
    eta, m, b, sigma = 0.3, 1.0, 2, 0.4
    (mu_u, var_u), (mu_r, var_r) = _closed_form(
        data.features, new_points, partition, eta=eta, m=m, b=b, sigma=sigma, T=3, K=2,
        tau0_sq=0.32)
    ones = np.ones(8)
    exact_u = _exact_law(np.zeros(2), 0.32, [(data.features, ones, 3), (new_points, ones, 2)],
                         partition, eta=eta, m=m, b=b, noise_var=2 * eta * sigma**2)
    exact_r = _exact_law(np.zeros(2), 0.32, [(new_points, ones, 3)], partition, eta=eta, m=m,
                         b=b, noise_var=2 * eta * sigma**2)
    np.testing.assert_allclose(mu_u, exact_u[0], rtol=1e-12)
    np.testing.assert_allclose(var_u, exact_u[1], rtol=1e-12)
    np.testing.assert_allclose(mu_r, exact_r[0], rtol=1e-12)
    np.testing.assert_allclose(var_r, exact_r[1], rtol=1e-12)


def test_quadratic_unlearned_and_retrained_laws_match_closed_form():
    data = _points(QUAD["n"], QUAD["d"], seed=0)
    new_features = data.features[[5]] + np.array([[2.0, -1.0]])
    request = UnlearningRequest((5,), new_features, np.ones(1))
    data, result = _quadratic_run(request, n_trials=4000)
    new_points = np.array(data.features)
    new_points[5] = new_features[0]
    # Default initialisation N(0, 2 sigma^2 / m I) of App. N.3.
    (mu_u, var_u), (mu_r, var_r) = _closed_form(
        data.features, new_points, result.fixed_partition, eta=QUAD["eta"], m=QUAD["m"],
        b=QUAD["b"], sigma=QUAD["sigma"], T=QUAD["T"], K=QUAD["K"],
        tau0_sq=2 * QUAD["sigma"] ** 2 / QUAD["m"])
    _check_gaussian(result.unlearned.params, mu_u, var_u)
    _check_gaussian(result.retrained.params, mu_r, var_r)
    # The check has power: halving the noise variance (the N(0, eta sigma^2) reading of the
    # proofs) would be far outside the tolerance.
    with pytest.raises(AssertionError):
        _check_gaussian(result.retrained.params, mu_r, 0.5 * var_r)


def test_quadratic_sequence_batch_and_removal_means():
    data = _points(QUAD["n"], QUAD["d"], seed=0)
    shift = np.array([[1.5, 0.5], [-1.0, 2.0]])
    batch = UnlearningRequest((1, 6), data.features[[1, 6]] + shift, np.ones(2))
    sequence = RequestSequence((batch, removal_request(3)))
    data, result = _quadratic_run(sequence, n_trials=3000, unlearn_epochs=(2, 1))
    partition = result.fixed_partition
    d1 = np.array(data.features)
    d1[[1, 6]] += shift
    ones, without_3 = np.ones(8), np.ones(8)
    without_3[3] = 0.0
    kw = dict(eta=QUAD["eta"], m=QUAD["m"], b=QUAD["b"], noise_var=2 * QUAD["eta"] * 0.16)
    tau0_sq = 2 * QUAD["sigma"] ** 2 / QUAD["m"]
    mu_u, var_u = _exact_law(np.zeros(2), tau0_sq,
                             [(data.features, ones, 3), (d1, ones, 2), (d1, without_3, 1)],
                             partition, **kw)
    mu_r, var_r = _exact_law(np.zeros(2), tau0_sq, [(d1, without_3, 3)], partition, **kw)
    _check_gaussian(result.unlearned.params, mu_u, var_u)
    _check_gaussian(result.retrained.params, mu_r, var_r)
    assert result.forget_indices == (1, 6, 3)


def test_noise_multiplier_scale_shrinks_all_noise_exactly():
    request = removal_request(2)
    _, plain = _quadratic_run(request, n_trials=50)
    _, quiet = _quadratic_run(request, n_trials=50, scale=0.1)
    _, silent = _quadratic_run(request, n_trials=50, scale=0.0)
    # The chain is affine in its noise and the draws are shared, so the random part of every
    # iterate scales by exactly the knob; the deterministic part is the noiseless run.
    for side in SIDES:
        centre = getattr(silent, side).params
        np.testing.assert_allclose(getattr(quiet, side).params - centre,
                                   0.1 * (getattr(plain, side).params - centre), atol=1e-12)
    assert np.ptp(silent.retrained.params, axis=0).max() == 0.0
    assert quiet.config.sigma == plain.config.sigma == QUAD["sigma"]


def test_quadratic_renyi_divergence_matches_gaussian_fit():
    divergence = pytest.importorskip("empirical.divergences.estimators")
    eta, m, sigma = QUAD["eta"], QUAD["m"], QUAD["sigma"]
    c = 1 - eta * m
    stationary_var = 2 * eta * sigma**2 / (1 - c**2)
    data = _points(QUAD["n"], QUAD["d"], seed=0)
    new_features = data.features[[5]] + np.array([[16.0, -8.0]])
    request = UnlearningRequest((5,), new_features, np.ones(1))
    # Start at the stationary variance so both laws share covariance s^2/(1-c^2) I and the
    # divergence is a pure mean shift: D_alpha = alpha ||Delta||^2 / (2 var).
    data, result = _quadratic_run(request, n_trials=16000, init_std=math.sqrt(stationary_var),
                                  unlearn_epochs=1)
    new_points = np.array(data.features)
    new_points[5] = new_features[0]
    (mu_u, var_u), (mu_r, var_r) = _closed_form(
        data.features, new_points, result.fixed_partition, eta=eta, m=m, b=QUAD["b"],
        sigma=sigma, T=QUAD["T"], K=1, tau0_sq=stationary_var)
    assert var_u == pytest.approx(stationary_var) and var_r == pytest.approx(stationary_var)
    shift = mu_u - mu_r
    order = 2.0
    truth = order * shift @ shift / (2 * stationary_var)
    # Projecting on the shift direction keeps the whole divergence (isotropic covariances).
    direction = shift / np.linalg.norm(shift)
    estimate = divergence.gaussian_renyi_divergence(
        result.unlearned.params @ direction, result.retrained.params @ direction, order=order,
        n_bootstrap=300, interval_level=0.99, seed=0)
    low, high = estimate.interval
    assert 0.5 < truth < 2.0
    assert low <= truth <= high, (estimate.value, truth, estimate.interval)
    # Relative standard error of the plug-in here is about 3%.
    assert abs(estimate.value - truth) < 0.15 * truth


# ------------------------------------------------------------------------------------------
# Benchmark function behind ``unlearn bench trials``.


def test_trials_benchmark_reports_rates_and_identity():
    from empirical.benchmarks.trials import trials_benchmark

    report = trials_benchmark(n_trials=12, loop_trials=3, learn_epochs=1)
    assert report["dataset"] == "digits-3-vs-8" and report["n"] == 256
    assert (report["batch_size"], report["learn_epochs"], report["unlearn_epochs"]) == (32, 1, 1)
    assert report["steps_per_trial"] == (2 * 1 + 1) * 8
    assert report["loop_matches_batched"] is True
    assert report["loop_rate_extrapolated"] is True
    assert report["batched_trials_per_s"] > 0 and report["loop_trials_per_s"] > 0
    assert report["speedup"] == pytest.approx(
        report["batched_trials_per_s"] / report["loop_trials_per_s"])
    assert report["torch_threads"] == 1  # the CPU default
    threads = torch.get_num_threads()
    double = trials_benchmark(n_trials=2, loop_trials=1, learn_epochs=0, num_threads=2)
    assert double["torch_threads"] == 2 and torch.get_num_threads() == threads
    with pytest.raises(ValueError, match="loop_trials"):
        trials_benchmark(n_trials=2, loop_trials=3)
    with pytest.raises(ValueError, match="dtype"):
        trials_benchmark(n_trials=2, dtype="float16")


@pytest.mark.slow
def test_trials_benchmark_at_mnist_shape():
    from empirical.benchmarks.trials import trials_benchmark

    report = trials_benchmark(n_trials=4, loop_trials=1, dataset="synthetic-mnist-shape",
                              learn_epochs=2)
    assert (report["n"], report["dim"], report["batch_size"]) == (11264, 784, 128)
    assert report["loop_matches_batched"] is True


def test_zero_burn_in_retrains_to_the_initial_point_mass(digits):
    """With T = 0 and a fixed start the retrained model never moves: its law is a point mass,
    at infinite Rényi divergence from the noisy unlearned law, so no finite certificate holds
    (Theorem 3.2 needs T >= 1; tests/bounds/test_chien2024.py)."""
    request = replacement_request(digits, [0], seed=0)
    result = run_pnsgd(digits, request, config=_digits_config(learn_epochs=0, init_std=0.0),
                       options=TrialOptions(n_trials=4, seed=0))
    assert np.all(result.retrained.params == 0.0)
    assert np.all(np.linalg.norm(result.unlearned.params, axis=1) > 0)
