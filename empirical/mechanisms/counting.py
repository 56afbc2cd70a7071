"""Counted gradient evaluations: a :class:`~empirical.models.linear.TrialModel` wrapper.

Seed 000's headline comparison ("PNSGD needs about 2% and 10% of the gradient computations of
the best baselines", Section 4) is a ratio of gradient computations. The mechanisms count them
as they run instead of restating a formula: :class:`CountingModel` forwards every call to the
wrapped model and adds, for each call of ``data_gradient_sum``, the number of per-example
gradients one trial evaluated (the batch axis of the features, null records included, as they
are computed too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from empirical.models.linear import TrialModel

__all__ = ["CountingModel", "phase_counts"]


@dataclass(eq=False)
class CountingModel:
    """``model`` with a per-trial tally of per-example gradient evaluations.

    ``evaluations`` is what one trial has evaluated since the last :meth:`reset` (all trials of
    a batched call evaluate the same number, so the count does not depend on the chunk size).
    """

    model: TrialModel
    evaluations: int = field(default=0)

    def reset(self) -> None:
        """Set the gradient-evaluation count back to 0."""
        self.evaluations = 0

    def take(self, size: int) -> torch.Tensor:
        """The tally as a pipeline output (one int64 per trial of a chunk of ``size``), then
        reset: the evaluations of the phase that just ended."""
        value = torch.full((size,), self.evaluations, dtype=torch.int64)
        self.reset()
        return value

    def data_gradient_sum(self, params: torch.Tensor, features: torch.Tensor,
                          labels: torch.Tensor, weights: torch.Tensor, *,
                          clip: float | None,
                          feature_norms: torch.Tensor | None = None) -> torch.Tensor:
        """The wrapped model's gradient sum, counting one evaluation per example."""
        # features: [N, B, ...]; each trial evaluates B per-example gradients.
        self.evaluations += int(features.shape[1])
        return self.model.data_gradient_sum(params, features, labels, weights, clip=clip,
                                            feature_norms=feature_norms)

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes not defined here: name, num_params, losses, ...
        if name == "model":
            raise AttributeError(name)
        return getattr(self.model, name)


def _pop_count(outputs: dict[str, np.ndarray], key: str) -> int:
    values = outputs.pop(key)
    if not np.all(values == values[0]):  # pragma: no cover - every trial runs the same steps
        raise RuntimeError(f"trials disagree on {key}")
    return int(values[0])


def phase_counts(outputs: dict[str, np.ndarray], n_requests: int) -> dict[str, int | tuple[int, ...]]:
    """Pops the ``evaluations/...`` outputs of :meth:`CountingModel.take`: per-example gradients
    of one trial in ``learn``, ``unlearn`` (one count per request) and ``retrain``."""
    return {"learn": _pop_count(outputs, "evaluations/learn"),
            "unlearn": tuple(_pop_count(outputs, f"evaluations/unlearn/{p}")
                             for p in range(n_requests)),
            "retrain": _pop_count(outputs, "evaluations/retrain")}
