"""Data and unlearning requests of a spec, shared by every adapter.

:func:`load_dataset` reads the spec's ``[dataset]`` through :func:`empirical.data.datasets.load_dataset`;
:func:`build_requests` turns ``[request]`` into the trial engine's request objects (flip or
random replacements, or removals served as null records). Errors are :class:`SpecError` naming
the field. Adapters decide what else their algorithm needs (e.g. dropping a tail to a multiple
of the batch size) before calling :func:`build_requests`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audits.fields import SpecError
from audits.seeds import derived_seed

__all__ = ["build_requests", "load_dataset"]


def load_dataset(dataset_spec: Any) -> Any:
    """The :class:`empirical.data.datasets.Dataset` of a :class:`~audits.spec.DatasetSpec`."""
    from empirical.data.datasets import load_dataset as load

    options = dataset_spec.loader_options()
    path = options.pop("path", None)
    try:
        return load(dataset_spec.name, path=path, **options)
    except (OSError, ValueError) as error:
        raise SpecError(f"spec.dataset: cannot load {dataset_spec.name!r}: {error}") from None


def build_requests(request_spec: Any, dataset: Any) -> tuple[tuple[int, ...], list[Any]]:
    """The rows to forget (request order) and one request object per sequential request.

    ``replace`` with ``flip`` puts (-x, y) in place of (x, y); ``random`` draws the paper's
    replacement point with a seed derived from the request seed and the request's position.
    """
    from empirical.data.requests import UnlearningRequest, removal_request, replacement_request

    n = dataset.n
    if request_spec.indices is None:
        if request_spec.total_records > n:
            raise SpecError(f"spec.request: {request_spec.total_records} records requested, "
                            f"the dataset has {n}")
        rng = np.random.default_rng(request_spec.seed)
        indices = tuple(int(i) for i in rng.choice(n, request_spec.total_records, replace=False))
    else:
        indices = request_spec.indices
        bad = [i for i in indices if i >= n]
        if bad:
            raise SpecError(f"spec.request.indices: row {bad[0]} is out of range for the {n} "
                            "training records")
    requests = []
    for position in range(request_spec.requests):
        rows = list(indices[position * request_spec.size:(position + 1) * request_spec.size])
        if request_spec.kind == "remove":
            requests.append(removal_request(rows))
        elif request_spec.replacement == "flip":
            requests.append(UnlearningRequest(tuple(rows), -dataset.features[rows],
                                              dataset.labels[rows]))
        else:
            requests.append(replacement_request(
                dataset, rows, seed=derived_seed(request_spec.seed, f"replacement/{position}")))
    return indices, requests
