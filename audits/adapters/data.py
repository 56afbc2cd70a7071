"""The dataset and requests of a spec as a mechanism and a certificate see them, cached on the
fields they depend on (a mechanism re-reads them in every chunk)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from audits.datasets import build_requests, load_dataset
from audits.fields import SpecError
from audits.loader import spec_from_dict
from audits.spec import DatasetSpec, RequestSpec

__all__ = [
    "SpecData",
    "plant_record",
    "require_unit_features",
    "spec_data",
]

@dataclass(frozen=True)
class SpecData:
    """The dataset and the requests of a spec, as the mechanism and the certificate see them.

    ``batch_size`` is b when the adapter asked for the tail to be dropped to a multiple of b
    (else None); ``max_norm`` the largest feature norm among the records and the replacements.
    """

    dataset: Any  # empirical.data.datasets.Dataset
    requests: tuple[Any, ...]  # empirical.data.requests.UnlearningRequest, one per request
    indices: tuple[int, ...]
    max_norm: float
    batch_size: int | None = None

    @property
    def request(self) -> Any:
        """The one request, or the :class:`~empirical.data.requests.RequestSequence` of several."""
        from empirical.data.requests import RequestSequence

        return self.requests[0] if len(self.requests) == 1 else RequestSequence(self.requests)


def spec_data(spec_json: str, *, batch_size_field: str | None = None,
              keep_a_record: bool = False) -> SpecData:
    """Dataset and requests of a canonical spec JSON (cached on the fields they depend on).

    ``batch_size_field`` names the algorithm's field holding b (an integer or ``"full"``): the
    tail is dropped to a multiple of b, as a mini-batch algorithm that partitions the records
    needs; ``keep_a_record`` refuses requests that would remove every training record.
    """
    spec = spec_from_dict(json.loads(spec_json))
    batch_size = None if batch_size_field is None else getattr(spec.algorithm, batch_size_field)
    key = json.dumps([spec.dataset.to_dict(), spec.request.to_dict(), batch_size, keep_a_record],
                     sort_keys=True)
    return _spec_data_cached(key)


@functools.lru_cache(maxsize=8)
def _spec_data_cached(key: str) -> SpecData:
    from empirical.data.datasets import drop_to_multiple

    dataset_fields, request_fields, batch_size, keep_a_record = json.loads(key)
    dataset = load_dataset(DatasetSpec(**dataset_fields))
    request_spec = RequestSpec(**request_fields)
    batch = None
    if batch_size == "full":
        batch = dataset.n
    elif batch_size is not None:
        batch = int(batch_size)
        if batch > dataset.n:
            raise SpecError(f"spec.algorithm.batch_size: {batch} exceeds the {dataset.n} "
                            "training records")
        dataset = drop_to_multiple(dataset, batch)
    if keep_a_record and request_spec.total_records >= dataset.n:
        raise SpecError(f"spec.request: {request_spec.total_records} removals leave no training "
                        f"point of the {dataset.n}")
    indices, requests = build_requests(request_spec, dataset)
    norms = [np.linalg.norm(dataset.features, axis=1).max()]
    norms += [np.linalg.norm(r.replacement_features, axis=1).max() for r in requests
              if r.replacement_features is not None]
    return SpecData(dataset, tuple(requests), tuple(int(i) for i in indices), float(max(norms)),
                    batch)


def require_unit_features(data: SpecData, why: str) -> None:
    """The smoothness/Lipschitz constants assume every feature vector has norm <= 1."""
    if data.max_norm > 1.0 + 1e-12:
        raise SpecError(f"spec.dataset: features must have norm <= 1 {why}, found "
                        f"{data.max_norm}")


def plant_record(data: SpecData, *, source_row: int, label: float, why: str) -> SpecData:
    """``data`` with every forgotten row holding the record (features of row ``source_row``,
    ``label``): the retain set is unchanged, the forget set is the planted record (a worst-case
    forget set, ``[request] forget = "worst-case"``). The record's features are a row of the
    data and its label one of the data's labels, so it stays in the data's domain. Removal
    requests only: a replacement would have to be planted too. ``why`` goes to the provenance.
    """
    import dataclasses

    if any(r.replacement_features is not None for r in data.requests):
        raise SpecError("spec.request.forget: 'worst-case' plants the forgotten records of "
                        "removal requests (kind = 'remove')")
    dataset = data.dataset
    labels = np.unique(dataset.labels)
    if label not in labels:
        raise SpecError(f"spec.request.forget: the planted label {label!r} is not a label of the "
                        f"data ({labels.tolist()})")
    if not 0 <= source_row < dataset.n:
        raise SpecError(f"spec.request.forget: row {source_row} is out of range for the "
                        f"{dataset.n} training records")
    features = np.array(dataset.features)
    targets = np.array(dataset.labels)
    rows = list(data.indices)
    features[rows] = dataset.features[source_row]
    targets[rows] = label
    planted = dataclasses.replace(
        dataset, features=features, labels=targets,
        provenance=f"{dataset.provenance}; forget rows {rows} hold the planted record "
                   f"(features of row {source_row}, label {label:+g}): {why}")
    return dataclasses.replace(data, dataset=planted)
