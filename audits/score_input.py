"""Precomputed attack scores as :func:`audits.runner.audit_scores` takes them, checked once.

Each side is a mapping ``{attack name: scores}`` or, for one attack, the scores themselves
(named ``score``); scores are a NumPy array, a list or a tuple of numbers, ``[n]`` or ``[n, E]``
(E per-example columns). Booleans are scores too (an attack that outputs a yes/no decision):
they become 1.0 and 0.0. Anything else is refused in one line that says what to pass.

The audit pairs trial ``i`` of the unlearned side with trial ``i`` of the retrained side (both
come from the same trial's randomness), so both sides must hold the same number of trials.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["SINGLE_ATTACK", "score_sides"]

SINGLE_ATTACK = "score"  # the attack name of scores given without one
_WHAT = ("pass each side as {attack name: scores} or as one array or list of scores, [n] or "
         "[n, E] numbers or booleans")


def _array(value: Any, where: str) -> np.ndarray:
    if isinstance(value, np.ndarray | list | tuple):
        try:
            array = np.asarray(value)
        except ValueError:  # ragged nested lists
            raise ValueError(f"{where}: rows of different lengths; {_WHAT}") from None
    elif isinstance(value, np.generic | int | float | bool):
        raise ValueError(f"{where}: one number, not one score per trial; {_WHAT}")
    else:
        raise ValueError(f"{where}: a {type(value).__name__}; {_WHAT}")
    if array.dtype == np.bool_:
        return array.astype(np.float64)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{where}: dtype {array.dtype} holds no numbers; {_WHAT}")
    if array.ndim not in (1, 2) or array.shape[0] == 0:
        raise ValueError(f"{where}: shape {array.shape}; {_WHAT} (at least one trial)")
    return array.astype(np.float64, copy=False)


def _side(value: Any, side: str) -> dict[str, np.ndarray]:
    if isinstance(value, Mapping):
        if not value:
            raise ValueError(f"{side}: no attack; {_WHAT}")
        return {str(name): _array(scores, f"{side}[{str(name)!r}]")
                for name, scores in value.items()}
    return {SINGLE_ATTACK: _array(value, side)}


def score_sides(unlearned: Any, retrained: Any) -> tuple[dict[str, np.ndarray],
                                                         dict[str, np.ndarray]]:
    """Both sides as ``{attack: float64 array}``, refused in one line when they cannot be
    audited (see the module docstring)."""
    u, r = _side(unlearned, "unlearned"), _side(retrained, "retrained")
    if set(u) != set(r):
        raise ValueError(f"the sides name different attacks: unlearned {sorted(u)}, retrained "
                         f"{sorted(r)}; pass the same attack names on both sides")
    for name in u:
        n_u, n_r = u[name].shape[0], r[name].shape[0]
        if n_u != n_r:
            raise ValueError(
                f"attack {name!r}: {n_u} unlearned and {n_r} retrained scores; the audit pairs "
                "trial i of one side with trial i of the other, so pass one score per trial on "
                f"each side (the same number, e.g. the first {min(n_u, n_r)} of each)")
        if u[name].shape[1:] != r[name].shape[1:]:
            raise ValueError(f"attack {name!r}: shapes {u[name].shape} and {r[name].shape} "
                             "differ beyond the trial count; pass [n] or [n, E] on both sides")
    return u, r
