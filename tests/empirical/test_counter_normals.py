"""Counter-based normals: exact against a Python-integer recomputation, reproducible per trial
whatever the chunk, and standard normal by the usual tests at fixed seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from empirical.engine import counter_normals as module
from empirical.engine.counter_normals import (
    GOLDEN_GAMMA,
    counter_normals,
    mix64,
    stream_key,
    trial_keys,
)
from empirical.engine.trials import TrialRandom, run_trials

CPU = torch.device("cpu")
WORD = 2**64


def _reference_mix(word: int) -> int:
    # Written out from Steele, Lea and Flood's SplitMix64 (variant 13 finaliser).
    word ^= word >> 30
    word = (word * 0xBF58476D1CE4E5B9) % WORD
    word ^= word >> 27
    word = (word * 0x94D049BB133111EB) % WORD
    return word ^ (word >> 31)


def _reference_normals(key: int, offset: int, shape: tuple[int, ...]) -> np.ndarray:
    """The module's definition with Python integers and ``math``."""

    def word(c: int) -> int:
        return _reference_mix(key ^ _reference_mix((c + 1) * GOLDEN_GAMMA % WORD))

    lines, last = math.prod(shape[:-1]), shape[-1]
    values, pair = [], offset // 2
    for _ in range(lines):
        row = []
        for _ in range(-(-last // 2)):
            u1 = ((word(2 * pair) >> 11) + 1) * 2.0**-53
            u2 = (word(2 * pair + 1) >> 11) * 2.0**-53
            radius = math.sqrt(-2.0 * math.log(u1))
            row += [radius * math.cos(2.0 * math.pi * u2), radius * math.sin(2.0 * math.pi * u2)]
            pair += 1
        values.append(row[:last])
    return np.array(values).reshape(shape)


def _signed(word: int) -> int:
    return word - WORD if word >= 2**63 else word


def test_the_mix_is_splitmix64():
    # SplitMix64 seeded with 0 gives 0xE220A8397B1DCDAF first (its published first output).
    assert mix64(GOLDEN_GAMMA) == 0xE220A8397B1DCDAF == _reference_mix(GOLDEN_GAMMA)
    words = [0, 1, 2**63, WORD - 1, 0x0123456789ABCDEF]
    tensor = torch.tensor([_signed(w) for w in words], dtype=torch.int64)
    mixed = module._mix_(tensor.clone())
    assert [w % WORD for w in mixed.tolist()] == [_reference_mix(w) for w in words]


def test_trial_keys_are_mixed_stream_keys():
    keys = trial_keys(seed=5, stream="noise", trials=[-1, 0, 7], device=CPU)
    key = stream_key(seed=5, stream="noise")
    assert [k % WORD for k in keys.tolist()] == [
        _reference_mix((key + (t + 1) * GOLDEN_GAMMA) % WORD) for t in (-1, 0, 7)]
    assert stream_key(seed=5, stream="noise") != stream_key(seed=5, stream="noise/2")
    with pytest.raises(ValueError, match="stream"):
        stream_key(seed=0, stream="")


@pytest.mark.parametrize("shape", [(1,), (2,), (7,), (64,), (3, 5), (2, 40)])
def test_normals_equal_the_python_integer_recomputation(shape):
    keys = [3, WORD - 5, 0x9E3779B97F4A7C15]
    tensor = torch.tensor([_signed(k) for k in keys], dtype=torch.int64)
    pairs = math.prod(shape[:-1]) * -(-shape[-1] // 2)
    for offsets in ([0, 0, 0], [128, 64, 3 * 2**20]):  # cached and hashed counters alike
        values, used = counter_normals(tensor, offsets, shape, dtype=torch.float64)
        assert values.shape == (3, *shape) and used == 2 * pairs
        for row, (key, offset) in enumerate(zip(keys, offsets, strict=True)):
            # libm and torch may round log/cos/sin differently in the last place
            np.testing.assert_allclose(values[row].numpy(), _reference_normals(key, offset, shape),
                                       rtol=1e-14, atol=1e-15)
    single, _ = counter_normals(tensor, [0, 0, 0], shape, dtype=torch.float32)
    expected64, _ = counter_normals(tensor, [0, 0, 0], shape, dtype=torch.float64)
    assert torch.equal(single, expected64.to(torch.float32))


def test_a_longer_draw_begins_with_the_shorter_one():
    keys = torch.tensor([11, -7], dtype=torch.int64)
    for last in (4, 5):
        short, used = counter_normals(keys, [6, 6], (3, last), dtype=torch.float64)
        long, _ = counter_normals(keys, [6, 6], (8, last), dtype=torch.float64)
        after, _ = counter_normals(keys, [6 + used] * 2, (5, last), dtype=torch.float64)
        assert torch.equal(long[:, :3], short)
        assert torch.equal(long[:, 3:], after)


def test_counter_normals_refuses_bad_arguments():
    keys = torch.zeros(2, dtype=torch.int64)
    with pytest.raises(ValueError, match="negative"):
        counter_normals(keys, [0, 0], (-1,), dtype=torch.float64)
    with pytest.raises(ValueError, match="one offset per key"):
        counter_normals(keys, [0], (4,), dtype=torch.float64)
    empty, used = counter_normals(keys, [0, 0], (3, 0), dtype=torch.float64)
    assert empty.shape == (2, 3, 0) and used == 0


def test_a_trial_draws_the_same_numbers_alone_in_any_chunk_and_in_any_rows():
    shapes = [(3,), (2, 33), (64,), (1,)]
    chunk = TrialRandom(seed=11, trial_indices=range(5, 45), device=CPU, dtype=torch.float64)
    together = [chunk.normal("noise", shape) for shape in shapes]
    partial = TrialRandom(seed=11, trial_indices=range(5, 45), device=CPU, dtype=torch.float64)
    picked = partial.normal("noise", shapes[0], rows=torch.tensor([3, 17]))
    rest = partial.normal("noise", shapes[1])
    for row, trial in enumerate(range(5, 45)):
        alone = TrialRandom(seed=11, trial_indices=[trial], device=CPU, dtype=torch.float64)
        mine = [alone.normal("noise", shape)[0] for shape in shapes]
        assert all(torch.equal(a, b[row]) for a, b in zip(mine, together, strict=True))
        if row in (3, 17):  # drew its first draw through rows, then continued
            assert torch.equal(picked[[3, 17].index(row)], mine[0])
            assert torch.equal(rest[row], mine[1])
        else:  # never drew the first draw: its stream starts at the second
            assert torch.equal(rest[row], alone_first(trial, shapes[1]))
    with pytest.raises(ValueError, match="distinct positions"):
        partial.normal("noise", (2,), rows=[1, 1])
    with pytest.raises(ValueError, match="distinct positions"):
        partial.normal("noise", (2,), rows=[40])


def alone_first(trial: int, shape: tuple[int, ...]) -> torch.Tensor:
    return TrialRandom(seed=11, trial_indices=[trial], device=CPU,
                       dtype=torch.float64).normal("noise", shape)[0]


def _noise_pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
    first = random.normal("a", (40,))
    return {"a": torch.cat([first, random.normal("a", (25,))], 1), "b": random.normal("b", (3,))}


def test_chunking_and_resuming_give_the_same_draws():
    whole = run_trials(_noise_pipeline, n_trials=30, seed=4)
    for chunk in (1, 7, 8, 30):
        np.testing.assert_array_equal(run_trials(_noise_pipeline, n_trials=30, seed=4,
                                                 chunk_size=chunk)["a"], whole["a"])
    np.testing.assert_array_equal(run_trials(_noise_pipeline, n_trials=9, seed=4,
                                             first_trial=21)["a"], whole["a"][21:])
    assert not np.array_equal(run_trials(_noise_pipeline, n_trials=30, seed=5)["a"], whole["a"])


@pytest.fixture(scope="module")
def sample() -> torch.Tensor:
    """500 trials x 1000 draws (two calls per trial) of one stream at a fixed seed."""
    random = TrialRandom(seed=2024, trial_indices=range(500), device=CPU, dtype=torch.float64)
    return torch.cat([random.normal("noise", (600,)), random.normal("noise", (400,))], 1)


def test_draws_are_standard_normal_by_moments_tails_and_kolmogorov_smirnov(sample):
    values = sample.flatten().numpy()
    size = values.size
    assert abs(values.mean()) < 5 / math.sqrt(size)
    assert abs(values.var() - 1) < 5 * math.sqrt(2 / size)
    assert abs(stats.kurtosis(values)) < 5 * math.sqrt(24 / size)
    assert stats.kstest(values, "norm").pvalue > 1e-3
    for cut in (1.0, 2.0, 3.0, 4.0):  # two-sided tail masses against a binomial spread
        expected = 2 * stats.norm.sf(cut)
        assert abs((np.abs(values) > cut).mean() - expected) < 5 * math.sqrt(expected / size)
    assert np.abs(values).max() <= math.sqrt(106 * math.log(2))


def test_draws_are_uncorrelated_across_trials_positions_calls_and_streams(sample):
    limit = 5 / math.sqrt(sample.numel())
    matrix = sample.numpy()

    def correlation(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])

    assert abs(correlation(matrix[1:], matrix[:-1])) < limit  # neighbouring trials, same position
    assert abs(correlation(matrix[:, 1:], matrix[:, :-1])) < limit  # neighbouring draws
    assert abs(correlation(matrix[:, 0::2], matrix[:, 1::2])) < limit  # cosine vs sine
    assert abs(correlation(matrix[:, :400], matrix[:, 600:])) < limit  # first vs second call
    assert abs(correlation(matrix[:, :-1] ** 2, matrix[:, 1:] ** 2)) < 2 * limit
    other = TrialRandom(seed=2024, trial_indices=range(500), device=CPU,
                        dtype=torch.float64).normal("noise/other", (1000,)).numpy()
    assert abs(correlation(matrix, other)) < limit


def test_keys_that_differ_in_one_high_bit_give_unrelated_draws():
    # Keys enter through a full mix of key XOR counter hash, so even keys one bit apart (a
    # weak keying would leave their words equal in many bits) draw uncorrelated numbers.
    base = 0x0F1E2D3C4B5A6978
    keys = torch.tensor([_signed(base ^ (1 << bit)) for bit in range(40, 64)] + [base],
                        dtype=torch.int64)
    values, _ = counter_normals(keys, [0] * keys.shape[0], (20000,), dtype=torch.float64)
    reference = values[-1].numpy()
    limit = 5 / math.sqrt(reference.size)
    for row in values[:-1].numpy():
        assert abs(np.corrcoef(row, reference)[0, 1]) < limit
