"""Elementwise functions whose bits per trial do not depend on the rows beside it (CPU).

Shared by the models (:mod:`empirical.models.linear`) and the counter-based normals
(:mod:`empirical.engine.counter_normals`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

__all__ = ["SIMD_BLOCK", "elementwise_per_trial"]

# Vector width in elements of the widest CPU kernels (2 x AVX-512 registers of float32) and
# PyTorch's intra-op grain size; see elementwise_per_trial.
SIMD_BLOCK = 32
_SERIAL_ELEMENTS = 32768


def elementwise_per_trial(
    function: Callable[[torch.Tensor], torch.Tensor], values: torch.Tensor
) -> torch.Tensor:
    """Apply an elementwise ``function`` so that each trial's row gets the same bits whatever
    the number of rows.

    On CPU, PyTorch computes the elements that do not fill a whole vector block (at the end of
    a tensor, or of a thread's share of it) with scalar code, whose exp/log can differ from the
    vectorised code in the last bit. Padding the last axis to whole blocks and handing over at
    most ``_SERIAL_ELEMENTS`` elements per call (so one thread runs each call; with one
    intra-op thread every call is serial) keeps every row on the vectorised path. CUDA
    computes every element alike, so it is called directly.
    """
    if values.device.type != "cpu" or values.ndim == 0 or values.numel() == 0:
        return function(values)
    width = values.shape[-1]
    # One intra-op thread runs a whole call serially, so no thread's share ends mid-block.
    serial = torch.get_num_threads() == 1
    if (width % SIMD_BLOCK == 0 and (serial or values.numel() <= _SERIAL_ELEMENTS)
            and values.stride(-1) == 1 and (values.ndim == 2 or values.is_contiguous())):
        return function(values)  # already whole blocks in one serial piece
    padded_width = max(SIMD_BLOCK, -(-width // SIMD_BLOCK) * SIMD_BLOCK)
    rows = values.reshape(-1, width)
    if padded_width != width:
        rows = nn.functional.pad(rows, (0, padded_width - width))
    step = rows.shape[0] if serial else max(1, _SERIAL_ELEMENTS // padded_width)
    pieces = [function(rows[start:start + step]) for start in range(0, rows.shape[0], step)]
    joined = torch.cat(pieces) if len(pieces) > 1 else pieces[0]
    if padded_width != width:
        # A compact copy: a view would keep the padded block alive with the result (for one
        # loss per trial, 32 times its size, in every chunk's outputs).
        joined = joined[:, :width].contiguous()
    return joined.reshape(values.shape)
