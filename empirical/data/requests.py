"""Unlearning requests on a :class:`~empirical.data.datasets.Dataset`: which records leave or change.

A replacement request (the adjacency of seed 000, Chien et al. 2024, App. N.2) turns records into
N(0, I) features scaled to unit norm, as the authors' code does, with uniformly random labels; a
removal request takes records out. A :class:`RequestSequence` is the requests of a sequential
audit, in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from empirical.data.datasets import Dataset, check_labels, frozen_array, unit_normalize

__all__ = [
    "RequestSequence",
    "UnlearningRequest",
    "apply_request",
    "random_replacement_request",
    "random_request_sequence",
    "removal_request",
    "replacement_request",
]


def _as_indices(indices: int | Iterable[int]) -> tuple[int, ...]:
    if isinstance(indices, (int, np.integer)):
        values = (int(indices),)
    else:
        values = tuple(int(i) for i in indices)
    if not values:
        raise ValueError("a request needs at least one index")
    if len(set(values)) != len(values):
        raise ValueError(f"request indices must be distinct, got {values}")
    if min(values) < 0:
        raise ValueError(f"request indices must be >= 0, got {values}")
    return values


@dataclass(frozen=True, eq=False)
class UnlearningRequest:
    """One request on S >= 1 records (a batch request when S > 1).

    Replacement (the adjacency of seed 000): record ``indices[s]`` becomes
    (``replacement_features[s]``, ``replacement_labels[s]``). Removal: both replacement fields
    are None and the records leave the dataset. Indices refer to rows of the dataset the
    request is applied to.
    """

    indices: tuple[int, ...]
    replacement_features: np.ndarray | None = None
    replacement_labels: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "indices", _as_indices(self.indices))
        if (self.replacement_features is None) != (self.replacement_labels is None):
            raise ValueError("give both replacement_features and replacement_labels, or neither")
        if self.replacement_features is None:
            return
        features = frozen_array(self.replacement_features, dtype=np.float64)
        labels = frozen_array(self.replacement_labels, dtype=np.float64)
        if features.ndim != 2 or features.shape[0] != len(self.indices):
            raise ValueError(
                f"replacement_features must be [{len(self.indices)}, d], got {features.shape}"
            )
        if labels.shape != (len(self.indices),):
            raise ValueError(
                f"replacement_labels must have shape ({len(self.indices)},), got {labels.shape}"
            )
        if not np.all(np.isfinite(features)):
            raise ValueError("replacement_features must be finite")
        check_labels(labels, name="replacement_labels")
        object.__setattr__(self, "replacement_features", features)
        object.__setattr__(self, "replacement_labels", labels)

    @property
    def is_removal(self) -> bool:
        """Whether the request removes its records (no replacements)."""
        return self.replacement_features is None

    @property
    def size(self) -> int:
        """Number of records S the request touches."""
        return len(self.indices)


@dataclass(frozen=True)
class RequestSequence:
    """Requests served one after another (seed 000, Thm 3.11); indices never repeat."""

    requests: tuple[UnlearningRequest, ...]

    def __post_init__(self) -> None:
        requests = tuple(self.requests)
        if not requests:
            raise ValueError("a request sequence needs at least one request")
        if not all(isinstance(r, UnlearningRequest) for r in requests):
            raise ValueError("a request sequence holds UnlearningRequest items only")
        seen: set[int] = set()
        for request in requests:
            if seen.intersection(request.indices):
                raise ValueError("a record may appear in at most one request of a sequence")
            seen.update(request.indices)
        object.__setattr__(self, "requests", requests)

    def __len__(self) -> int:
        return len(self.requests)

    @property
    def forget_indices(self) -> tuple[int, ...]:
        """All touched indices in the order they are requested."""
        return tuple(i for request in self.requests for i in request.indices)


def _check_request_fits(dataset: Dataset, request: UnlearningRequest) -> None:
    if max(request.indices) >= dataset.n:
        raise ValueError(
            f"request index {max(request.indices)} is out of range for n={dataset.n}"
        )
    if request.replacement_features is not None and (
        request.replacement_features.shape[1] != dataset.dim
    ):
        raise ValueError(
            f"replacement features have dimension {request.replacement_features.shape[1]}, "
            f"dataset has {dataset.dim}"
        )


def replacement_request(
    dataset: Dataset, indices: int | Sequence[int], *, seed: int
) -> UnlearningRequest:
    """Replace the given records by N(0, I_d) features scaled to unit norm and random labels.

    This is the request of seed 000 App. N.3 (the unit scaling is what the authors' code does,
    so the replacement obeys the same ||x|| = 1 convention as the data).
    """
    index_tuple = _as_indices(indices)
    rng = np.random.default_rng(seed)
    features = unit_normalize(rng.standard_normal((len(index_tuple), dataset.dim)))
    labels = rng.choice(np.array([-1.0, 1.0]), size=len(index_tuple))
    request = UnlearningRequest(index_tuple, features, labels)
    _check_request_fits(dataset, request)
    return request


def removal_request(indices: int | Sequence[int]) -> UnlearningRequest:
    """Remove the given records."""
    return UnlearningRequest(_as_indices(indices))


def random_replacement_request(dataset: Dataset, *, size: int = 1, seed: int) -> UnlearningRequest:
    """Replacement of ``size`` distinct records drawn uniformly at random."""
    if size < 1 or size > dataset.n:
        raise ValueError(f"size must be in [1, {dataset.n}], got {size}")
    rng = np.random.default_rng(seed)
    indices = rng.choice(dataset.n, size=size, replace=False)
    return replacement_request(dataset, [int(i) for i in indices], seed=seed + 1)


def random_request_sequence(
    dataset: Dataset, *, length: int, size: int = 1, seed: int, removal: bool = False
) -> RequestSequence:
    """``length`` requests of ``size`` records each, all indices distinct, drawn at random."""
    if length < 1 or size < 1 or length * size > dataset.n:
        raise ValueError(
            f"need length >= 1, size >= 1 and length * size <= n={dataset.n}; "
            f"got length={length}, size={size}"
        )
    rng = np.random.default_rng(seed)
    chosen = rng.choice(dataset.n, size=length * size, replace=False)
    requests = []
    for position in range(length):
        indices = [int(i) for i in chosen[position * size:(position + 1) * size]]
        if removal:
            requests.append(removal_request(indices))
        else:
            requests.append(replacement_request(dataset, indices, seed=seed + 1 + position))
    return RequestSequence(tuple(requests))


def apply_request(dataset: Dataset, request: UnlearningRequest | RequestSequence) -> Dataset:
    """The updated dataset D' after a request (or a whole sequence).

    Replacements keep n and the row order. Removals delete rows, so the result has fewer
    records; in a sequence all indices refer to rows of ``dataset`` (the original).
    """
    requests = request.requests if isinstance(request, RequestSequence) else (request,)
    features = np.array(dataset.features)
    labels = np.array(dataset.labels)
    removed: list[int] = []
    for item in requests:
        _check_request_fits(dataset, item)
        if item.is_removal:
            removed.extend(item.indices)
        else:
            features[list(item.indices)] = item.replacement_features
            labels[list(item.indices)] = item.replacement_labels
    keep = np.ones(dataset.n, dtype=bool)
    keep[removed] = False
    if not keep.any():
        raise ValueError("the request removes every record")
    kinds = ", ".join(
        f"{'removal' if item.is_removal else 'replacement'} of {list(item.indices)}"
        for item in requests
    )
    return Dataset(
        name=dataset.name,
        features=features[keep],
        labels=labels[keep],
        test_features=dataset.test_features,
        test_labels=dataset.test_labels,
        provenance=f"{dataset.provenance}; after {kinds}",
    )
