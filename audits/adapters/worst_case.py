"""``[request] forget = "worst-case"`` for mechanisms whose certificate covers every record of a
bounded domain: screen in-domain candidate records on the mechanism's noiseless path and plant
the one whose forgetting moves the noiseless output furthest.

An adapter states its paper's record domain (:class:`RecordDomain`: the feature-norm bound and
the label set its theorem assumes) and calls :func:`plant_worst_case` in ``prepare``; the rule
(:func:`screen_worst_case`) is the same for every such adapter:

1. candidates: ``rows`` rows drawn with a seed derived from the request seed, plus the first
   forgotten row as drawn; each row's features rescaled to the norm bound (never above it in
   floating point), with every label of the domain (and negated too where the domain says a
   negation is a new record: for a loss that reads a record only through y x, (-x, y) is
   (x, -y), already screened);
2. each candidate is planted in every forget slot (the retain set unchanged; a flip
   replacement is rebuilt as the flip of the planted record), and the mechanism runs with its
   noise scaled to 0 (the adapter's ``noise_scale_field``; ``paths`` trials, which differ only
   by their mini-batch partitions);
3. the candidate with the largest distance between the mean unlearned and the mean certifying
   (retrained) parameters wins: that is the mean shift the noise has to hide. Ties go to the
   earlier candidate, so the rule is deterministic given the spec.

Planting changes neither n, nor the dimension, nor the norm bound, so a certificate that
depends on the data only through them is unchanged; a data-dependent certificate is computed
on the planted data because the mechanism reads its data through
:meth:`~audits.adapters.mechanism.SpecMechanism.data`. Generic by rule: no algorithm is named.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from audits.adapters.data import SpecData
from audits.fields import SpecError
from audits.seeds import derived_seed

__all__ = [
    "PlantedRecord",
    "RecordDomain",
    "SCREEN_PATHS",
    "SCREEN_ROWS",
    "at_norm_bound",
    "noiseless_shift",
    "plant_features",
    "plant_worst_case",
    "request_spec",
    "rule_text",
    "screen_worst_case",
]

SCREEN_ROWS = 32  # seeded rows screened besides the first forgotten row
SCREEN_PATHS = 2  # noiseless trials averaged per candidate (they differ by partitions only)


@dataclass(frozen=True)
class RecordDomain:
    """The records a paper's certificate covers: features of norm <= ``norm_bound`` and a label
    in ``labels`` (None: the data's own label set). ``assumption`` names the theorem and its
    condition, for the provenance. ``negations``: screen -x as well (False where the loss reads
    a record only through y x, so that (-x, y) is the record (x, -y), screened already)."""

    norm_bound: float
    assumption: str
    labels: tuple[float, ...] | None = None
    negations: bool = False

    def label_set(self, data: SpecData) -> tuple[float, ...]:
        """The labels a planted record may carry."""
        if self.labels is not None:
            return self.labels
        return tuple(float(v) for v in np.unique(data.dataset.labels))

    def check(self, features: np.ndarray, label: float, data: SpecData) -> None:
        """SpecError naming the assumption if the record (features, label) is outside it."""
        norm = float(np.linalg.norm(features))
        if not norm <= self.norm_bound:
            raise SpecError(f"spec.request.forget: the planted record's feature norm {norm!r} "
                            f"exceeds the bound {self.norm_bound!r} of {self.assumption}")
        if label not in self.label_set(data):
            raise SpecError(f"spec.request.forget: the planted label {label!r} is outside the "
                            f"label set {list(self.label_set(data))} of {self.assumption}")


@dataclass(frozen=True)
class PlantedRecord:
    """The record every forget slot holds: ``features`` (a row's, rescaled to the norm bound,
    ``sign`` -1 when negated), ``label``; ``shift`` its noiseless output shift; ``candidates``
    (row, sign, label, shift) of every screened record, best first; ``drawn_shift`` the shift
    of the forget set as drawn (no record planted)."""

    features: tuple[float, ...]
    label: float
    row: int
    sign: int
    shift: float
    candidates: tuple[tuple[int, int, float, float], ...]
    drawn_shift: float

    @property
    def key(self) -> str:
        """What the chunk store's fingerprint adds for this record (exact floats)."""
        return repr(("worst-case forget", self.row, self.sign, self.label,
                     tuple(float(v).hex() for v in self.features)))

    def describe(self) -> str:
        """One line for the report's notes."""
        return (f"row {self.row}'s features{' negated' if self.sign < 0 else ''} at norm "
                f"{float(np.linalg.norm(self.features)):.17g} with label {self.label:+g} in every "
                f"forget row; noiseless output shift {self.shift:.6g}, the largest of "
                f"{len(self.candidates)} screened (forget set as drawn: {self.drawn_shift:.6g})")


def rule_text(assumption: str, *, negations: bool = False) -> str:
    """The ``worst_case_forget`` statement of an adapter whose certificate covers ``assumption``
    (``negations`` as :class:`RecordDomain`'s)."""
    signs = ("and negated, " if negations else
             "(a negated row is the same record with the other label: the loss reads y x only) ")
    return (f"the certificate assumes {assumption}, and nothing else of the forgotten record. "
            f"Every forget slot holds one record of that domain: among {SCREEN_ROWS} rows drawn "
            "with a seed derived from the request seed and the first forgotten row, each "
            f"rescaled to the norm bound {signs}with every label of the data, the one whose "
            "forgetting moves the mechanism's noiseless output (noise scaled to 0; mean over "
            f"{SCREEN_PATHS} trials) furthest from the noiseless retrained output")


def at_norm_bound(row: np.ndarray, bound: float) -> np.ndarray | None:
    """``row`` rescaled to norm ``bound``, rounded down until its float norm is <= bound."""
    norm = float(np.linalg.norm(row))
    if not norm > 0:
        return None
    scaled = row * (bound / norm)
    while float(np.linalg.norm(scaled)) > bound:
        scaled = scaled * (1.0 - 2.0**-52)
    return scaled


def plant_features(data: SpecData, request: Any, *, features: np.ndarray, label: float,
                   why: str) -> SpecData:
    """``data`` with every forget row holding (features, label) and the requests rebuilt from
    ``request`` (the spec's RequestSpec, so a flip replacement is the planted record's flip);
    the retain set unchanged; ``max_norm`` recomputed. ``why`` goes to the provenance."""
    from audits.datasets import build_requests

    dataset = data.dataset
    rows = list(data.indices)
    planted_x = np.array(dataset.features)
    planted_y = np.array(dataset.labels)
    planted_x[rows] = features
    planted_y[rows] = label
    planted = dataclasses.replace(
        dataset, features=planted_x, labels=planted_y,
        provenance=f"{dataset.provenance}; forget rows {rows} hold the planted record: {why}")
    indices, requests = build_requests(request, planted)
    if tuple(int(i) for i in indices) != data.indices:  # pragma: no cover - same n, same seed
        raise SpecError("spec.request.forget: the planted data changed the forget rows")
    norms = [np.linalg.norm(planted_x, axis=1).max()]
    norms += [np.linalg.norm(r.replacement_features, axis=1).max() for r in requests
              if r.replacement_features is not None]
    return dataclasses.replace(data, dataset=planted, requests=tuple(requests),
                               max_norm=float(max(norms)))


def request_spec(spec_json: str) -> Any:
    """The ``[request]`` of a canonical spec JSON."""
    from audits.loader import spec_from_dict

    return spec_from_dict(json.loads(spec_json)).request


def noiseless_shift(mechanism: Any, noise_field: str, *, seed: int, paths: int = SCREEN_PATHS
                    ) -> float:
    """||mean unlearned - mean certifying parameters|| over ``paths`` trials of ``mechanism``
    with its noise scaled to 0 (the config field ``noise_field``): the mean shift its noise
    has to hide."""
    quiet = dataclasses.replace(
        mechanism, config=dataclasses.replace(mechanism.config, **{noise_field: 0.0}))
    batch = quiet.run_trials(seed=seed, first_trial=0, n_trials=paths)
    unlearned = batch.unlearned.statistics.get("params")
    retrained = batch.retrained.statistics.get("params")
    if unlearned is None or retrained is None:
        raise SpecError("spec.request.forget: 'worst-case' needs the final parameters of the "
                        "mechanism (the model is too large)")
    gap = np.asarray(unlearned, dtype=float).mean(0) - np.asarray(retrained, dtype=float).mean(0)
    shift = float(np.linalg.norm(gap))
    if not math.isfinite(shift):
        raise SpecError(f"spec.request.forget: the noiseless output shift is {shift}")
    return shift


def screen_worst_case(mechanism: Any, data: SpecData, *, domain: RecordDomain,
                      noise_field: str, seed: int, rows: int = SCREEN_ROWS,
                      paths: int = SCREEN_PATHS) -> PlantedRecord:
    """The worst-case record of this module's rule for ``mechanism`` (a
    :class:`~audits.adapters.mechanism.SpecMechanism`) on its spec's ``data``: the screened
    candidate with the largest :func:`noiseless_shift` (``seed``: the screening's own seed,
    derived from the audit's, so that no audit trial is reused)."""
    request = request_spec(mechanism.spec_json)
    if any(r.replacement_features is not None for r in data.requests) \
            and request.replacement != "flip":
        raise SpecError("spec.request.forget: 'worst-case' plants removals or flip "
                        "replacements (a random replacement point is drawn, not planted)")
    n = data.dataset.n
    rng = np.random.default_rng(derived_seed(request.seed, "worst-case/rows"))
    drawn = [int(r) for r in rng.choice(n, size=min(rows, n), replace=False)]
    screened_rows = [data.indices[0], *[r for r in drawn if r != data.indices[0]]]
    labels = domain.label_set(data)
    unplanted = dataclasses.replace(mechanism, planted=None)
    drawn_shift = noiseless_shift(unplanted, noise_field, seed=seed, paths=paths)
    tried: list[tuple[int, int, float, float]] = []
    best: tuple[float, np.ndarray, int, int, float] | None = None
    for row in screened_rows:
        base = at_norm_bound(np.asarray(data.dataset.features[row], dtype=float), domain.norm_bound)
        if base is None:
            continue
        for sign in ((1, -1) if domain.negations else (1,)):
            features = sign * base
            for label in labels:
                domain.check(features, label, data)
                candidate = PlantedRecord(tuple(features.tolist()), label, row, sign, 0.0, (),
                                          drawn_shift)
                shift = noiseless_shift(dataclasses.replace(mechanism, planted=candidate),
                                        noise_field, seed=seed, paths=paths)
                tried.append((row, sign, label, shift))
                if best is None or shift > best[0]:
                    best = (shift, features, row, sign, label)
    if best is None:
        raise SpecError("spec.request.forget: no screened row has non-zero features")
    shift, features, row, sign, label = best
    ranked = tuple(sorted(tried, key=lambda c: -c[3]))  # stable: ties keep screening order
    return PlantedRecord(tuple(features.tolist()), label, row, sign, shift, ranked, drawn_shift)


def plant_worst_case(spec: Any, mechanism: Any, data: SpecData, *, domain: RecordDomain,
                     noise_field: str) -> tuple[Any, SpecData, tuple[str, ...]]:
    """``(mechanism, data, notes)`` for ``spec``: unchanged when ``spec.request.forget`` is
    ``random``; with ``worst-case`` the mechanism plants :func:`screen_worst_case`'s record
    (checked inside ``domain``), its data, and a note stating the rule and the choice."""
    if spec.request.forget != "worst-case":
        return mechanism, data, ()
    # The screening's noiseless trials get a seed of their own: never the audit's trials 0, 1.
    record = screen_worst_case(mechanism, data, domain=domain, noise_field=noise_field,
                               seed=derived_seed(spec.seed, "worst-case/screening"))
    planted = dataclasses.replace(mechanism, planted=record)
    planted_data = planted.data()
    for row in data.indices:
        domain.check(planted_data.dataset.features[row], float(planted_data.dataset.labels[row]),
                     data)
    note = (f"worst-case forget set: {rule_text(domain.assumption, negations=domain.negations)}. "
            f"Chosen: {record.describe()}")
    return planted, planted_data, (note,)
