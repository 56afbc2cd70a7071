"""Trial engine (per-trial streams, chunking, loop mode) and the models it drives."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from empirical.engine.elementwise import elementwise_per_trial
from empirical.engine.trials import (
    DEFAULT_CPU_MEMORY_BUDGET,
    TrialRandom,
    chunk_size_for,
    resolve_device,
    run_trials,
    trial_seed,
)
from empirical.models.linear import (
    LogisticRegression,
    QuadraticLoss,
    TrialModel,
    clip_scale,
    pairwise_dot,
    rows_dot,
    weighted_rows_sum,
)
from empirical.models.networks import FunctionalClassifier, TinyCNN, TinyMLP

CPU = torch.device("cpu")


# ------------------------------------------------------------------------------------------
# Streams.


def test_trial_seed_is_a_pure_function_of_its_key():
    assert trial_seed(seed=1, trial=2, stream="a") == trial_seed(seed=1, trial=2, stream="a")
    keys = {trial_seed(seed=s, trial=t, stream=k) for s in (0, 1) for t in (-1, 0, 1)
            for k in ("a", "b")}
    assert len(keys) == 12
    assert 0 <= trial_seed(seed=0, trial=0, stream="a") < 2**64
    with pytest.raises(ValueError, match="stream"):
        trial_seed(seed=0, trial=0, stream="")


def test_batched_draws_are_stacks_of_per_trial_draws():
    chunk = TrialRandom(seed=7, trial_indices=range(3, 9), device=CPU, dtype=torch.float64)
    first = chunk.normal("noise", (4, 2))
    second = chunk.normal("noise", (5,))
    order = chunk.permutation("perm", 10)
    for row, trial in enumerate(range(3, 9)):
        alone = TrialRandom(seed=7, trial_indices=[trial], device=CPU, dtype=torch.float64)
        assert torch.equal(alone.normal("noise", (4, 2))[0], first[row])
        assert torch.equal(alone.normal("noise", (5,))[0], second[row])  # stream continues
        assert torch.equal(alone.permutation("perm", 10)[0], order[row])
        generator = torch.Generator().manual_seed(trial_seed(seed=7, trial=trial, stream="perm"))
        assert torch.equal(torch.randperm(10, generator=generator), order[row])
    assert sorted(order[0].tolist()) == list(range(10))
    # Different trials and different streams are different numbers.
    assert not torch.equal(first[0], first[1])
    assert not torch.equal(chunk.normal("other", (4, 2))[0], first[0])
    with pytest.raises(ValueError):
        TrialRandom(seed=0, trial_indices=[], device=CPU, dtype=torch.float64)


def _toy_pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
    # A noisy contraction with a per-trial permutation: enough to expose any mix-up of streams.
    order = random.permutation("order", 6).to(random.dtype)
    x = random.normal("init", (3,))
    for _ in range(4):
        x = 0.5 * x + random.normal("noise", (3,)) + order[:, :3] / 10
    return {"x": x, "order": order, "trial": torch.tensor(random.trial_indices)}


def test_results_do_not_depend_on_chunk_size_mode_or_offset():
    reference = run_trials(_toy_pipeline, n_trials=10, seed=3)
    np.testing.assert_array_equal(reference["trial"], np.arange(10))
    for chunk in (1, 3, 4, 10):
        chunked = run_trials(_toy_pipeline, n_trials=10, seed=3, chunk_size=chunk)
        np.testing.assert_array_equal(chunked["x"], reference["x"])
        np.testing.assert_array_equal(chunked["order"], reference["order"])
    looped = run_trials(_toy_pipeline, n_trials=10, seed=3, mode="loop")
    np.testing.assert_array_equal(looped["x"], reference["x"])
    tail = run_trials(_toy_pipeline, n_trials=4, seed=3, first_trial=6)
    np.testing.assert_array_equal(tail["x"], reference["x"][6:])
    other_seed = run_trials(_toy_pipeline, n_trials=10, seed=4)
    assert not np.array_equal(other_seed["x"], reference["x"])


def test_run_trials_validates_inputs_and_outputs():
    with pytest.raises(ValueError, match="n_trials"):
        run_trials(_toy_pipeline, n_trials=0, seed=0)
    with pytest.raises(ValueError, match="mode"):
        run_trials(_toy_pipeline, n_trials=2, seed=0, mode="parallel")
    with pytest.raises(ValueError, match="chunk_size"):
        run_trials(_toy_pipeline, n_trials=2, seed=0, chunk_size=0)
    with pytest.raises(ValueError, match="leading size"):
        run_trials(lambda r: {"x": torch.zeros(r.size + 1)}, n_trials=2, seed=0)


def test_chunk_sizes_follow_the_memory_budget():
    assert chunk_size_for(n_trials=100, bytes_per_trial=10, device=CPU, memory_budget=250) == 25
    assert chunk_size_for(n_trials=10, bytes_per_trial=10, device=CPU, memory_budget=10**6) == 10
    assert chunk_size_for(n_trials=10, bytes_per_trial=10**9, device=CPU) == 1
    assert chunk_size_for(n_trials=10**9, bytes_per_trial=1, device=CPU) == (
        DEFAULT_CPU_MEMORY_BUDGET
    )
    with pytest.raises(ValueError, match="bytes_per_trial"):
        chunk_size_for(n_trials=1, bytes_per_trial=0, device=CPU)
    # An automatic chunk size gives the same numbers as one chunk.
    auto = run_trials(_toy_pipeline, n_trials=7, seed=1, bytes_per_trial=DEFAULT_CPU_MEMORY_BUDGET
                      // 3)
    np.testing.assert_array_equal(auto["x"], run_trials(_toy_pipeline, n_trials=7, seed=1)["x"])


@pytest.mark.parametrize("text", ["bogus", "cuda:x", "", "cpu:"])
def test_malformed_device_text_is_refused_with_the_accepted_forms(text):
    with pytest.raises(ValueError, match=r"'cpu', 'cuda', 'cuda:N' or 'auto', got"):
        resolve_device(text)


def test_resolve_device():
    assert resolve_device("cpu") == CPU
    assert resolve_device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            resolve_device("cuda")
    with pytest.raises(ValueError, match="unsupported"):
        resolve_device("meta")


# ------------------------------------------------------------------------------------------
# Models.


def test_clip_scale_projects_onto_the_ball():
    norms = torch.tensor([0.0, 0.5, 2.0, 8.0], dtype=torch.float64)
    torch.testing.assert_close(clip_scale(norms, 2.0), torch.tensor([1.0, 1.0, 1.0, 0.25],
                                                                     dtype=torch.float64))
    torch.testing.assert_close(clip_scale(norms, None), torch.ones(4, dtype=torch.float64))


def test_elementwise_per_trial_gives_each_row_the_same_bits():
    torch.manual_seed(0)
    for dtype in (torch.float64, torch.float32):
        # 9000 rows of 5: longer than one serial block and not a whole number of SIMD blocks.
        values = 10 * torch.randn(9000, 5, dtype=dtype)
        together = elementwise_per_trial(torch.sigmoid, values)
        torch.testing.assert_close(together, torch.sigmoid(values))
        for row in (0, 1, 4095, 6553, 8999):
            alone = elementwise_per_trial(torch.sigmoid, values[row:row + 1])
            assert torch.equal(alone[0], together[row])
    assert elementwise_per_trial(torch.exp, torch.zeros(2, 3, 4)).shape == (2, 3, 4)
    assert elementwise_per_trial(torch.exp, torch.zeros(4, 0)).shape == (4, 0)


def test_pairwise_dot_matches_matmul():
    params = torch.randn(5, 7, dtype=torch.float64)
    features = torch.randn(11, 7, dtype=torch.float64)
    torch.testing.assert_close(pairwise_dot(params, features), params @ features.T)


def test_logistic_gradient_matches_autograd_and_hand_clipping():
    model = LogisticRegression(3)
    assert isinstance(model, TrialModel)
    params = torch.tensor([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    features = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 3.0, 4.0]]] * 2, dtype=torch.float64)
    labels = torch.tensor([[1.0, -1.0]] * 2, dtype=torch.float64)
    weights = torch.tensor([[1.0, 1.0], [1.0, 0.0]], dtype=torch.float64)

    leaf = params.clone().requires_grad_(True)
    margins = (features * leaf[:, None, :]).sum(-1) * labels
    (torch.nn.functional.softplus(-margins) * weights).sum().backward()
    unclipped = model.data_gradient_sum(params, features, labels, weights, clip=None)
    torch.testing.assert_close(unclipped, leaf.grad)

    # Trial 1 at w = 0: each logistic gradient is -y x / 2; the second has norm 5/2 and a
    # weight of 0. Clipping at 1 leaves the first (norm 1/2) alone.
    clipped = model.data_gradient_sum(params, features, labels, weights, clip=1.0)
    torch.testing.assert_close(clipped[1], torch.tensor([-0.5, 0.0, 0.0], dtype=torch.float64))
    # Trial 0: the second example's logistic part has norm 5 * sigmoid(-y w.x) with
    # y w.x = -(-3 + 8) = -5, so norm 5 sigmoid(5); clip at 1 rescales it to unit norm.
    second = torch.tensor([0.0, 3.0, 4.0], dtype=torch.float64) * torch.sigmoid(
        torch.tensor(5.0, dtype=torch.float64)
    )
    first = -torch.sigmoid(torch.tensor(-0.5, dtype=torch.float64)) * torch.tensor(
        [1.0, 0.0, 0.0], dtype=torch.float64
    )
    torch.testing.assert_close(clipped[0], first + second / second.norm())

    shared = features[0]
    losses = model.losses(params, shared, labels[0])
    torch.testing.assert_close(losses[1], torch.full((2,), math.log(2.0), dtype=torch.float64))
    torch.testing.assert_close(model.accuracy(params[:1], shared, labels[0]),
                               torch.tensor([0.5], dtype=torch.float64))


def test_quadratic_gradient_loss_and_constants():
    model = QuadraticLoss(2, curvature=2.0)
    assert (model.strong_convexity, model.smoothness) == (2.0, 2.0)
    params = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    points = torch.tensor([[[0.0, 1.0], [4.0, 5.0]]], dtype=torch.float64)
    ones = torch.ones(1, 2, dtype=torch.float64)
    grad = model.data_gradient_sum(params, points, ones, ones, clip=None)
    torch.testing.assert_close(grad, torch.tensor([[2.0 - 6.0, -8.0]], dtype=torch.float64))
    # Second gradient 2 * (-3, -4) has norm 10: clipping at 5 halves it.
    clipped = model.data_gradient_sum(params, points, ones, ones, clip=5.0)
    torch.testing.assert_close(clipped, torch.tensor([[2.0 - 3.0, -4.0]], dtype=torch.float64))
    torch.testing.assert_close(model.losses(params, points[0], ones[0]),
                               torch.tensor([[1.0, 25.0]], dtype=torch.float64))
    assert math.isnan(model.accuracy(params, points[0], ones[0]).item())
    with pytest.raises(ValueError, match="curvature"):
        QuadraticLoss(2, curvature=0.0)


def test_seed_004_network_sizes():
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    assert count(TinyMLP(784, num_classes=10)) == 3985
    assert count(TinyCNN(3, num_classes=10)) == 20042


def _manual_clipped_sum(module, flat, features, labels, weights, clip):
    adapter = FunctionalClassifier(module, input_shape=(features.shape[-1],), name="m")
    total = torch.zeros_like(flat)
    for x, y, w in zip(features, labels, weights, strict=True):
        leaf = flat.clone().requires_grad_(True)
        logits = torch.func.functional_call(module, adapter.unflatten(leaf), (x[None],))
        loss = torch.nn.functional.cross_entropy(logits, (y < 0).long()[None])
        (gradient,) = torch.autograd.grad(loss, leaf)
        total += w * gradient * min(1.0, clip / gradient.norm().item())
    return total


def test_functional_mlp_per_example_clipped_gradients():
    torch.manual_seed(0)
    module = TinyMLP(6, hidden=4).double()
    model = FunctionalClassifier(module, input_shape=(6,), name="mlp")
    assert model.num_params == 6 * 4 + 4 + 4 * 2 + 2
    base = model.initial_params()
    params = torch.stack([base, base + 0.1 * torch.randn_like(base)])
    features = torch.randn(2, 5, 6, dtype=torch.float64)
    labels = torch.tensor([[1.0, -1.0, 1.0, -1.0, 1.0]] * 2, dtype=torch.float64)
    weights = torch.tensor([[1.0, 1.0, 0.0, 1.0, 1.0]] * 2, dtype=torch.float64)
    batched = model.data_gradient_sum(params, features, labels, weights, clip=0.3)
    for trial in range(2):
        manual = _manual_clipped_sum(module, params[trial], features[trial], labels[trial],
                                     weights[trial], 0.3)
        torch.testing.assert_close(batched[trial], manual)
    shared = features[0]
    losses = model.losses(params, shared, labels[0])
    assert losses.shape == (2, 5) and torch.all(losses > 0)
    accuracy = model.accuracy(params, shared, labels[0])
    assert accuracy.shape == (2,) and torch.all((accuracy >= 0) & (accuracy <= 1))


def test_functional_cnn_runs_batched_on_flat_records():
    torch.manual_seed(1)
    model = FunctionalClassifier(TinyCNN(1).double(), input_shape=(1, 8, 8), name="cnn")
    base = model.initial_params()
    params = torch.stack([base, base * 0.5, base * 2.0])
    features = torch.randn(3, 4, 64, dtype=torch.float64)
    labels = torch.tensor([[1.0, -1.0, -1.0, 1.0]] * 3, dtype=torch.float64)
    gradient = model.data_gradient_sum(params, features, labels, torch.ones_like(labels),
                                       clip=1.0)
    assert gradient.shape == (3, model.num_params)
    # Each clipped per-example gradient has norm <= 1, so the sum has norm <= 4.
    assert torch.all(gradient.norm(dim=1) <= 4.0 + 1e-9)
    single = model.data_gradient_sum(params[1:2], features[1:2], labels[1:2],
                                     torch.ones_like(labels[1:2]), clip=1.0)
    torch.testing.assert_close(single[0], gradient[1])
    assert model.logits(params, features[0]).shape == (3, 4, 2)


@pytest.fixture
def one_intra_op_thread():
    """Trials compute on one intra-op thread (``one_cpu_thread``); the bit-identity of the
    blocked products is promised there, not under any thread count (a multi-threaded BLAS may
    split one product's reduction between threads)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", [(256, 64), (33, 17), (17, 33), (1000, 10), (7, 100), (1, 1)])
def test_blas_row_products_are_exact_sums_with_bits_independent_of_the_trial_count(
        shape, dtype, one_intra_op_thread):
    # Odd shapes are the ones where MKL's products in other layouts (or on unaligned rows) gave
    # a trial's bits that depended on how many trials shared the call.
    # Shared records go through blocks of 8 trials: 20 trials fill two blocks and part of a
    # third, and a chunk of 3 puts each trial at other places in its block.
    n, d = shape
    trials = 20
    generator = torch.Generator().manual_seed(n * 1000 + d)
    table = torch.randn(n, d, dtype=dtype, generator=generator)
    vectors = torch.randn(trials, d, dtype=dtype, generator=generator)
    coefficients = torch.randn(trials, n, dtype=dtype, generator=generator)
    per_trial = table.repeat(trials, 1, 1)
    pairwise = pairwise_dot(vectors, table)
    for records in (table.expand(trials, n, d), per_trial):
        dots = rows_dot(records, vectors)
        sums = weighted_rows_sum(coefficients, records)
        for trial in range(trials):
            one = slice(trial, trial + 1)
            # a trial alone (as loop mode runs it) and in a chunk of 3 get the same bits
            chunk = slice(trial - trial % 3, trial - trial % 3 + 3)
            at = trial % 3
            assert torch.equal(rows_dot(records[one], vectors[one])[0], dots[trial])
            assert torch.equal(weighted_rows_sum(coefficients[one], records[one])[0], sums[trial])
            assert torch.equal(rows_dot(records[chunk], vectors[chunk])[at], dots[trial])
            assert torch.equal(weighted_rows_sum(coefficients[chunk], records[chunk])[at],
                               sums[trial])
            assert torch.equal(pairwise_dot(vectors[one], table)[0], pairwise[trial])
            assert torch.equal(pairwise_dot(vectors[chunk], table)[at], pairwise[trial])
        # the values are the sums (float64 reference from the same inputs)
        exact_dots = vectors.double() @ table.double().T
        exact_sums = coefficients.double() @ table.double()
        tolerance = 1e-12 if dtype == torch.float64 else 1e-4
        torch.testing.assert_close(dots.double(), exact_dots, rtol=tolerance, atol=tolerance * d)
        torch.testing.assert_close(pairwise.double(), exact_dots, rtol=tolerance,
                                   atol=tolerance * d)
        torch.testing.assert_close(sums.double(), exact_sums, rtol=tolerance, atol=tolerance * n)
