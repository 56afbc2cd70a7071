"""The machinery shared by the trial mechanisms (empirical/mechanisms/common.py, counting.py)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from empirical.data.datasets import Dataset, digits_3_vs_8
from empirical.data.requests import UnlearningRequest, replacement_request
from empirical.engine.trials import TrialRandom, run_trials
from empirical.mechanisms.chien2024 import PNSGDConfig, run_pnsgd
from empirical.mechanisms.common import (
    ModelSamples,
    TrialOptions,
    TrialResult,
    batch_gradient,
    check_config,
    counts_for,
    full_batch_gradient,
    learn_unlearn_retrain,
    lsi_init_std,
    noisy_step,
    one_cpu_thread,
    per_request_counts,
    prepare_mechanism,
    result_fields,
    tensor_versions,
)
from empirical.mechanisms.counting import CountingModel, phase_counts
from empirical.mechanisms.neel2021 import D2DConfig, run_d2d
from empirical.models.linear import LinearModel, LogisticRegression, QuadraticLoss
from tests.empirical.hand_data import line_dataset

_line = line_dataset


def _small_digits(rows: int = 24) -> Dataset:
    data = digits_3_vs_8()
    return Dataset("d", data.features[:rows], data.labels[:rows], data.test_features[:10],
                   data.test_labels[:10], "t")


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.tensor(np.asarray(array), dtype=torch.float64)


def test_full_batch_gradient_is_the_quadratic_closed_form_and_the_gathered_batch():
    # f(x; a) = (m/2)(x - a)^2 on a = 1..4 with one null record: the mean gradient over n = 4
    # rows is m (3 x - (1 + 2 + 4))/4 + lambda x, exactly.
    data = _line()
    weights = np.array([1.0, 1.0, 0.0, 1.0])
    version = tensor_versions([(data.features, data.labels, weights)], _tensor)[0]
    model = QuadraticLoss(1, curvature=2.0)
    params = torch.tensor([[0.5], [-3.0]], dtype=torch.float64)
    got = full_batch_gradient(model, params, version, clip=None, l2=0.25)
    expected = [[2.0 * (3 * x - 7.0) / 4 + 0.25 * x] for x in (0.5, -3.0)]
    np.testing.assert_array_equal(got.numpy(), expected)
    # Logistic loss with clipping: the broadcast rows (one BLAS product per trial) give the
    # gathered batch's sum (multiplied and summed per trial) up to rounding.
    digits = _small_digits()
    version = tensor_versions([(digits.features, digits.labels, np.ones(digits.n))], _tensor)[0]
    logistic = LogisticRegression(digits.dim)
    params = torch.randn(3, digits.dim, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    rows = torch.arange(digits.n).expand(3, digits.n)
    gathered = batch_gradient(logistic, params, version, rows, batch_size=digits.n, clip=0.05,
                              l2=0.1)
    torch.testing.assert_close(full_batch_gradient(logistic, params, version, clip=0.05, l2=0.1),
                               gathered, rtol=1e-12, atol=1e-15)


def test_noisy_step_projects_onto_the_ball():
    params = torch.tensor([[3.0, 4.0], [0.3, 0.4]], dtype=torch.float64)
    out = noisy_step(params, torch.zeros_like(params), step_size=1.0, noise=None, radius=1.0)
    np.testing.assert_allclose(out.numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=0, atol=1e-15)


def test_prepare_mechanism_rows_versions_and_score_sets():
    data = _small_digits()
    request = [UnlearningRequest((3,)), replacement_request(data, [5, 7], seed=0)]
    options = TrialOptions(n_trials=2, seed=4, first_trial=7, retain_scores=6, score_seed=2,
                           device="cpu", dtype=torch.float32)
    setup = prepare_mechanism(data, request, options)
    assert setup.forget == (3, 5, 7)
    assert len(setup.versions) == 3 and setup.versions[0].features.dtype == torch.float32
    assert setup.retained.size == 6 and np.all(np.diff(setup.retained) > 0)
    assert not set(setup.retained) & {3, 5, 7}
    # The removal keeps the row with weight 0; the replacement changes features, not weights.
    assert setup.versions[1].weights[3] == 0 and setup.versions[0].weights[3] == 1
    np.testing.assert_array_equal(setup.versions[2].features[5].numpy(),
                                  request[1].replacement_features[0].astype(np.float32))
    np.testing.assert_array_equal(setup.sets.forget_features.numpy(),
                                  data.features[[3, 5, 7]].astype(np.float32))
    def retaining(count: int) -> TrialOptions:
        return TrialOptions(n_trials=1, seed=0, retain_scores=count, device="cpu")

    assert prepare_mechanism(data, request, retaining(100)).retained.size == data.n - 3
    assert prepare_mechanism(data, request, retaining(0), least_retain_scores=1).retained.size == 1
    with pytest.raises(ValueError, match="retain_scores"):
        prepare_mechanism(data, request, retaining(-1))
    with pytest.raises(ValueError, match="out of range"):
        prepare_mechanism(data, UnlearningRequest((data.n,)), retaining(1))
    outputs = {f"{side}/{name}": np.zeros((2, 1)) for side in ("unlearned", "retrained")
               for name in ("params", "forget_losses", "retain_losses", "test_accuracy")}
    fields = result_fields(setup, outputs)
    assert fields["dtype"] == "float32" and fields["device"] == "cpu" and fields["seed"] == 4
    np.testing.assert_array_equal(fields["trial_indices"], [7, 8])
    assert "learned" not in fields and fields["retrained"].params.shape == (2, 1)
    TrialResult(**fields)  # the base result's fields are exactly what result_fields fills

    @dataclass(frozen=True)
    class WithLearned(TrialResult):
        learned: ModelSamples

    outputs.update({f"learned/{name}": np.ones((2, 1)) for name in
                    ("params", "forget_losses", "retain_losses", "test_accuracy")})
    with_learned = WithLearned(**result_fields(setup, outputs, WithLearned))
    assert with_learned.learned.params.tolist() == [[1.0], [1.0]]
    assert with_learned.unlearned.params.tolist() == [[0.0], [0.0]]


@dataclass(frozen=True)
class _Config:
    rate: float
    clip: float | None
    steps: int
    per: int | tuple[int, ...]


def test_config_checks_name_the_field():
    def check(**change):
        values = {"rate": 0.5, "clip": None, "steps": 2, "per": [1, 2], **change}
        config = _Config(**values)
        check_config(config, counts=("steps",), per_request=(("per", "K"),),
                     positive=("rate", "clip"), optional=("clip",))
        return config

    assert check().per == (1, 2) and check(clip=1.0).clip == 1.0
    for change, message in [({"rate": 0.0}, "rate must be finite and > 0"),
                            ({"rate": math.nan}, "rate"), ({"clip": -1.0}, "clip"),
                            ({"steps": 1.5}, "steps must be an integer"), ({"steps": -1}, "steps"),
                            ({"per": []}, "per must list at least one K"),
                            ({"per": -1}, "per must be integers")]:
        with pytest.raises(ValueError, match=message):
            check(**change)
    assert per_request_counts(3, "k") == 3 and per_request_counts((0, 4), "k") == (0, 4)
    assert counts_for(3, 2, "k") == (3, 3) and counts_for((1, 2), 2, "k") == (1, 2)
    with pytest.raises(ValueError, match="k lists 2 values for 3 requests"):
        counts_for((1, 2), 3, "k")


def test_lsi_init_std_is_sqrt_two_sigma_squared_over_m():
    assert lsi_init_std(None, sigma=0.3, strong_convexity=0.5, scale=1.0, remedy="") == \
        math.sqrt(2 * 0.09 / 0.5)
    assert lsi_init_std(None, sigma=0.3, strong_convexity=0.5, scale=0.5, remedy="") == \
        math.sqrt(2 * 0.09 / 0.5) * 0.5
    assert lsi_init_std(0.7, sigma=0.3, strong_convexity=0.0, scale=9.0, remedy="") == 0.7
    with pytest.raises(ValueError, match=r"m > 0 \(set l2\)"):
        lsi_init_std(None, sigma=0.3, strong_convexity=0.0, scale=1.0, remedy="set l2")


def test_one_cpu_thread_is_restored_even_after_an_error():
    before = torch.get_num_threads()
    with one_cpu_thread(torch.device("cpu")):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), one_cpu_thread(torch.device("cpu")):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_cpu_trial_threads_can_be_changed_or_left_alone(monkeypatch):
    import empirical.mechanisms.common as common

    before = torch.get_num_threads()
    monkeypatch.setattr(common, "CPU_TRIAL_THREADS", 2)
    with one_cpu_thread(torch.device("cpu")):
        assert torch.get_num_threads() == 2
    monkeypatch.setattr(common, "CPU_TRIAL_THREADS", None)
    torch.set_num_threads(3)
    try:
        with one_cpu_thread(torch.device("cpu")):
            assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_skeleton_counts_each_phase_and_evaluates_the_published_models():
    # QuadraticLoss with clip None on the line data: each step counts n = 4 per-example
    # gradients; learn 2 steps, requests 1 and 3 steps, retrain 2 steps.
    data = _line()
    model = CountingModel(QuadraticLoss(1, curvature=1.0))
    setup = prepare_mechanism(data, [UnlearningRequest((0,)), UnlearningRequest((1,))],
                              TrialOptions(n_trials=1, seed=0, retain_scores=2, device="cpu"))

    def steps(params, version, count):
        for _ in range(count):
            params = noisy_step(params, full_batch_gradient(model, params, version, clip=None,
                                                            l2=0.0),
                                step_size=0.5, noise=None, radius=None)
        return params

    def start(random: TrialRandom) -> torch.Tensor:
        return torch.zeros(random.size, 1, dtype=torch.float64)

    def learn(random):
        params = steps(start(random), setup.versions[0], 2)
        return params, params

    def unlearn(random, position, params):
        params = steps(params, setup.versions[position + 1], (1, 3)[position])
        return params, params

    def pipeline(random):
        return learn_unlearn_retrain(random, model=model, sets=setup.sets, n_requests=2,
                                     learn=learn, unlearn=unlearn,
                                     retrain=lambda r: steps(start(r), setup.versions[-1], 2))[0]

    outputs = run_trials(pipeline, n_trials=3, seed=0, chunk_size=2)
    assert phase_counts(outputs, 2) == {"learn": 8, "unlearn": (4, 12), "retrain": 8}
    assert not any(key.startswith("evaluations/") for key in outputs)
    # x <- x/2 + mean(a)/2 from 0 on D = (1, 2, 3, 4): 1.25, then 1.875.
    np.testing.assert_array_equal(outputs["learned/params"], [[1.875]] * 3)
    # Retraining without rows 0 and 1 (null records, the divisor stays 4): the gradient is
    # (2 x - 7)/4, so x <- 3 x/4 + 7/8: 0.875, then 1.53125.
    np.testing.assert_array_equal(outputs["retrained/params"], [[1.53125]] * 3)
    np.testing.assert_array_equal(outputs["retrained/forget_losses"],
                                  [[0.5 * 0.53125**2, 0.5 * 0.46875**2]] * 3)


@pytest.mark.parametrize("internal", [True, False])
def test_d2d_shared_descents_from_zero_match_the_loop_and_a_hand_descent(internal):
    # init_std = 0: the noiseless descents from x_0 = 0 are computed once and shared; the
    # published noise stays per trial and the loop, chunks and one batch agree bit for bit.
    small = _small_digits()
    request = replacement_request(small, [2], seed=3)
    config = D2DConfig(step_size=2 / 0.4, noise_std=0.3, learn_iterations=4, unlearn_iterations=2,
                       internal_state=internal, l2=0.075, clip=1.0, radius=2.0, init_std=0.0)
    whole = run_d2d(small, request, config=config, options=TrialOptions(n_trials=5, seed=9))
    loop = run_d2d(small, request, config=config,
                   options=TrialOptions(n_trials=2, seed=9, mode="loop", first_trial=2))
    chunked = run_d2d(small, request, config=config, options=TrialOptions(n_trials=5, seed=9, chunk_size=2))
    for side in ("learned", "unlearned", "retrained"):
        for name in ("params", "forget_losses", "retain_losses", "test_accuracy"):
            full = getattr(getattr(whole, side), name)
            np.testing.assert_array_equal(full[2:4], getattr(getattr(loop, side), name))
            np.testing.assert_array_equal(full, getattr(getattr(chunked, side), name))
        # Independent noise: no two trials publish the same model.
        params = getattr(whole, side).params
        assert len({row.tobytes() for row in params}) == 5
    np.testing.assert_array_equal(whole.unlearned_clean[2:4], loop.unlearned_clean)
    assert whole.gradient_evaluations == chunked.gradient_evaluations == {
        "learn": 4 * 24, "unlearn": (2 * 24,), "retrain": 4 * 24}
    # The descent by hand, one trial from 0 (Algorithm 2 with projection onto C_2).
    setup = prepare_mechanism(small, request,
                              TrialOptions(n_trials=1, seed=0, retain_scores=0, device="cpu"))
    model = LogisticRegression(small.dim)

    def descend(params, version, count):
        for _ in range(count):
            gradient = full_batch_gradient(model, params, version, clip=1.0, l2=0.075)
            params = noisy_step(params, gradient, step_size=2 / 0.4, noise=None, radius=2.0)
        return params

    learned = descend(torch.zeros(1, small.dim, dtype=torch.float64), setup.versions[0], 4)
    quiet = run_d2d(small, request, config=D2DConfig(**{**config.__dict__, "noise_std": 0.0}),
                    options=TrialOptions(n_trials=3, seed=9))
    np.testing.assert_array_equal(quiet.learned.params, learned.expand(3, -1).numpy())
    if internal:
        clean = descend(learned, setup.versions[1], 2)
        np.testing.assert_array_equal(whole.unlearned_clean, clean.expand(5, -1).numpy())
    else:
        # Without internal state each trial fine-tunes its own published (noisy) model.
        assert len({row.tobytes() for row in whole.unlearned_clean}) == 5


def test_pnsgd_counts_its_gradient_evaluations():
    # Every epoch touches each of the n rows once (b per step, n/b steps).
    data = _small_digits(24)
    config = PNSGDConfig(step_size=0.5, sigma=0.1, batch_size=8, learn_epochs=3,
                         unlearn_epochs=(1, 2), l2=0.1)
    result = run_pnsgd(data, [UnlearningRequest((0,)), UnlearningRequest((4,))], config=config,
                       options=TrialOptions(n_trials=3, seed=0, chunk_size=2))
    assert result.gradient_evaluations == {"learn": 72, "unlearn": (24, 48), "retrain": 72}


def test_linear_models_share_the_base():
    for model in (LogisticRegression(3), QuadraticLoss(3, curvature=1.0)):
        assert isinstance(model, LinearModel) and model.num_params == 3
    with pytest.raises(ValueError, match="dim"):
        LogisticRegression(0)
    with pytest.raises(ValueError, match="dim"):
        QuadraticLoss(0, curvature=1.0)
    # Sign agreement without intercept: w = (1, -1) classifies (2, 1) as +1 and (0, 3) as -1.
    params = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    features = torch.tensor([[2.0, 1.0], [0.0, 3.0]], dtype=torch.float64)
    accuracy = LogisticRegression(2).accuracy(params, features, torch.tensor([1.0, 1.0]))
    assert accuracy.tolist() == [0.5]
    assert math.isnan(QuadraticLoss(2, curvature=1.0).accuracy(params, features,
                                                               torch.ones(2)).item())


def test_every_mechanism_entry_point_takes_the_one_options_object() -> None:
    import inspect

    from empirical.mechanisms import chien2024, chien2024lu, chourasia2023, guo2020, neel2021

    for run in (chien2024.run_pnsgd, chourasia2023.run_noisy_gd, chien2024lu.run_langevin,
                guo2020.run_guo, neel2021.run_d2d):
        parameters = inspect.signature(run).parameters
        assert list(parameters)[:4] == ["dataset", "request", "config", "options"], run.__name__
        assert not set(parameters) & {f.name for f in dataclasses.fields(TrialOptions)}, run.__name__
