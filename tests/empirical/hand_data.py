"""Tiny hand-made datasets shared by the mechanism tests (no download, values known by hand)."""

from __future__ import annotations

import numpy as np

from empirical.data.datasets import Dataset


def line_dataset(n: int = 4) -> Dataset:
    """n one-dimensional records 1, 2, ..., n, all labelled 1, with no test split."""
    points = np.arange(1.0, n + 1.0)[:, None]
    return Dataset("line", points, np.ones(n), np.zeros((0, 1)), [], "hand")
