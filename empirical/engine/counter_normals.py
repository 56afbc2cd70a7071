"""Counter-based standard normals: word c of a trial's stream is a pure function of (key, c).

A per-trial generator object makes a batched draw a loop over trials (one generator call each);
here every draw of every trial in a chunk comes out of the same few tensor operations, on any
device, and trial i's numbers still depend only on its key and on how many words its stream
used before.

The 64-bit word of counter c under key k is ``mix(k XOR mix((c + 1) G))``, where ``mix`` is the
finaliser of SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014; Stafford's variant 13), a bijection of 64-bit words, and
G = 0x9E3779B97F4A7C15, all modulo 2^64. The inner ``mix((c + 1) G)`` is SplitMix64's c-th output
from seed 0; keying it through a second mix, rather than adding the key to the counter, keeps
two keys from giving shifted copies of one sequence. A trial's key is ``mix(s + (t + 1) G)`` for
the stream key s (BLAKE2b of the seed and the stream name, :func:`empirical.engine.seeding.hash_seed`)
and the trial index t.

The stream is a sequence of pairs of words: pair j (words 2j and 2j + 1 from the stream's start)
gives a = word >> 11 (53 bits) of each word, u1 = (a_2j + 1) 2^-53 in (0, 1] and
u2 = a_2j+1 2^-53 in [0, 1), and Box and Muller's transform gives the two normals
sqrt(-2 ln u1) cos(2 pi u2) and sqrt(-2 ln u1) sin(2 pi u2). A draw of shape (..., m) takes the
next ceil(m / 2) pairs for each of its rows, in order (an odd m drops each row's last sine), so
a draw of (a + b, m) begins with the draw of (a, m), whatever follows. Magnitudes are at most
sqrt(106 ln 2) ~ 8.57 (a tail mass of about 1e-17 is cut off); values are computed in float64
and rounded once to the trials' dtype, and the transcendental functions go through
:func:`~empirical.engine.elementwise.elementwise_per_trial` on whole SIMD blocks (the words of a few pairs
past the draw are computed and discarded), so a trial's bits do not depend on the rows beside
it.

Torch has no unsigned 64-bit arithmetic for these operations, so the words live in int64: sums
and products wrap modulo 2^64 (two's complement, on CPU and CUDA alike) and right shifts are
made logical by masking. Trial keys are formed with Python integers. Tests recompute words and
normals with Python integers and ``math``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from empirical.engine.elementwise import SIMD_BLOCK, elementwise_per_trial
from empirical.engine.seeding import hash_seed

__all__ = ["GOLDEN_GAMMA", "MIX_MULTIPLIERS", "counter_normals", "mix64", "stream_key",
           "trial_keys"]

GOLDEN_GAMMA = 0x9E3779B97F4A7C15
MIX_MULTIPLIERS = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
_MIX_SHIFTS = (30, 27, 31)
_WORD = 2**64
_UNIFORM_BITS = 53
# Counter hashes kept per device (words; 8 MiB): longer streams hash their counters per draw.
_CACHED_COUNTERS = 1 << 20
_counter_cache: dict[str, torch.Tensor] = {}


def _signed(word: int) -> int:
    """A 64-bit word as the int64 with the same bits."""
    word %= _WORD
    return word - _WORD if word >= 2**63 else word


_GAMMA = _signed(GOLDEN_GAMMA)
_MULTIPLIERS = tuple(_signed(m) for m in MIX_MULTIPLIERS)


def mix64(word: int) -> int:
    """SplitMix64's finaliser on one 64-bit word (Python integers)."""
    word %= _WORD
    for shift, multiplier in zip(_MIX_SHIFTS, (*MIX_MULTIPLIERS, 1), strict=True):
        word ^= word >> shift
        word = word * multiplier % _WORD
    return word


def _logical_shift_xor_(words: torch.Tensor, shift: int) -> None:
    # int64 right shifts copy the sign bit; masking the top `shift` bits makes them logical.
    words.bitwise_xor_(torch.bitwise_right_shift(words, shift).bitwise_and_((1 << (64 - shift)) - 1))


def _mix_(words: torch.Tensor) -> torch.Tensor:
    """:func:`mix64` on int64 words, in place."""
    _logical_shift_xor_(words, _MIX_SHIFTS[0])
    words.mul_(_MULTIPLIERS[0])
    _logical_shift_xor_(words, _MIX_SHIFTS[1])
    words.mul_(_MULTIPLIERS[1])
    _logical_shift_xor_(words, _MIX_SHIFTS[2])
    return words


def _counter_hashes(start: int, stop: int, device: torch.device) -> torch.Tensor:
    """``mix((c + 1) G)`` for c in [start, stop), as int64 words: [stop - start]."""
    if stop <= _CACHED_COUNTERS:
        cached = _counter_cache.get(str(device))
        if cached is None or cached.shape[0] < stop:
            size = min(_CACHED_COUNTERS, max(stop, 2 * (0 if cached is None else cached.shape[0])))
            cached = _counter_hashes_of(torch.arange(size, dtype=torch.int64, device=device))
            _counter_cache[str(device)] = cached
        return cached[start:stop]
    return _counter_hashes_of(torch.arange(start, stop, dtype=torch.int64, device=device))


def _counter_hashes_of(counters: torch.Tensor) -> torch.Tensor:
    return _mix_(counters.add_(1).mul_(_GAMMA))


def stream_key(*, seed: int, stream: str) -> int:
    """The 64-bit key of a named normal stream under ``seed`` (BLAKE2b, shared by all trials)."""
    if not isinstance(stream, str) or not stream:
        raise ValueError("stream must be a non-empty string")
    return hash_seed(int(seed), "normal", stream)


def trial_keys(*, seed: int, stream: str, trials: Sequence[int],
               device: torch.device) -> torch.Tensor:
    """Each trial's key ``mix(s + (t + 1) G)`` of the stream key s, as int64 words: [N]."""
    key = stream_key(seed=seed, stream=stream)
    return torch.tensor([_signed(mix64(key + (int(t) + 1) * GOLDEN_GAMMA)) for t in trials],
                        dtype=torch.int64, device=device)


def counter_normals(keys: torch.Tensor, offsets: Sequence[int] | np.ndarray,
                    shape: Sequence[int], *, dtype: torch.dtype) -> tuple[torch.Tensor, int]:
    """Standard normals of ``shape`` per key, each stream from word ``offsets[r]`` on:
    [R, *shape], and the number of words the draw used (the same for every key, see the module
    notes)."""
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"shape must not be negative, got {shape}")
    rows, device = keys.shape[0], keys.device
    used = np.asarray(offsets, dtype=np.int64).reshape(-1)
    if used.size != rows:
        raise ValueError(f"give one offset per key ({rows}), got {used.size}")
    last = shape[-1] if shape else 1
    lines, half = math.prod(shape[:-1]), -(-last // 2)
    pairs = lines * half
    if rows == 0 or pairs == 0:
        return torch.empty((rows, *shape), dtype=dtype, device=device), 0
    width = -(-pairs // SIMD_BLOCK) * SIMD_BLOCK
    if (used == used[0]).all():  # one counter row shared by every key
        inner = _counter_hashes(int(used[0]), int(used[0]) + 2 * width, device)[None, :]
    else:
        steps = torch.arange(2 * width, dtype=torch.int64, device=device)
        inner = _counter_hashes_of(torch.as_tensor(used, device=device)[:, None] + steps)
    words = _mix_(torch.bitwise_xor(keys[:, None], inner))
    uniform = torch.empty((rows, 2, width), dtype=torch.float64, device=device)
    uniform.copy_(torch.bitwise_right_shift(words, 64 - _UNIFORM_BITS)
                  .bitwise_and_((1 << _UNIFORM_BITS) - 1).view(rows, width, 2).transpose(1, 2))
    log_u1 = elementwise_per_trial(torch.log, uniform[:, 0].add_(1.0).mul_(2.0**-_UNIFORM_BITS))
    radius = log_u1.mul_(-2.0).sqrt_()
    angle = uniform[:, 1].mul_(2.0 * math.pi * 2.0**-_UNIFORM_BITS)
    # each product written straight into its place in the pairs (no stacked copy first)
    pair = torch.empty((rows, width, 2), dtype=torch.float64, device=device)
    torch.mul(elementwise_per_trial(torch.cos, angle), radius, out=pair[:, :, 0])
    torch.mul(elementwise_per_trial(torch.sin, angle), radius, out=pair[:, :, 1])
    out = pair[:, :pairs].reshape(rows, lines, 2 * half)
    if 2 * half != last:
        out = out[:, :, :last]
    out = out.reshape(rows, *shape)
    return (out if dtype == torch.float64 else out.to(dtype)), 2 * pairs
