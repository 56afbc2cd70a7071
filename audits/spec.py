"""Audit specs: what to audit, against which certificate, with how many trials.

An :class:`AuditSpec` is plain data: a tree of frozen dataclasses whose fields are validated on
construction, each on its own; a bad value raises :class:`SpecError` (a ``ValueError``) whose
message starts with the field's path, e.g. ``spec.trials: must be a positive integer, got -3``.

The canonical form (:meth:`AuditSpec.to_dict`, every field present, ``None`` for "not given")
is what the report records and what :meth:`AuditSpec.digest` hashes to key the chunk store.

What depends on the algorithm (parsing its ``[algorithm]`` table, the models and calibrated
parameters it supports, its checks against the rest of the spec) is the algorithm's adapter's
business; :mod:`audits.loader`, above the registry, reads TOML files and plain dicts into
specs and runs those checks. This module imports neither the registry nor any adapter, and
names no algorithm.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from audits.attacks import attack, attack_summaries
from audits.estimators import DEFAULT_ESTIMATORS, SPEC_ESTIMATORS, estimator_summaries
from audits.fields import (
    SpecError,
    choice,
    fail,
    integer,
    names,
    number,
    plain,
    positive_int,
)
from audits.statistics import (
    DEFAULT_STATISTICS,
    ScoreOrientation,
    statistic,
    statistic_summaries,
)
from bounds.conversions import CONVERSIONS

__all__ = [
    "ATTACKS",
    "CONVERSIONS",
    "DATASETS",
    "ESTIMATORS",
    "FORGET_CHOICES",
    "STATISTICS",
    "DIRECTIONS",
    "AuditSettings",
    "AuditSpec",
    "CertificateSpec",
    "DatasetSpec",
    "ModelSpec",
    "RequestSpec",
    "SpecError",
    "check_confidence",
    "check_projection_pilot",
    "check_work",
]


# Attacks, statistics and estimators are declared in audits.attacks, audits.statistics and
# audits.estimators; these are their names and one-line summaries, for validation and help texts.
ATTACKS: dict[str, str] = attack_summaries()
# How the forgotten records are chosen: the rows the request draws, or records the algorithm's
# adapter plants there, chosen adversarially within its paper's assumptions.
FORGET_CHOICES = ("random", "worst-case")
STATISTICS: dict[str, str] = statistic_summaries()
ESTIMATORS: dict[str, str] = estimator_summaries()
# Names accepted by empirical.data.datasets.load_dataset (kept here so specs validate without numpy).
DATASETS: dict[str, str] = {
    "digits": "scikit-learn digits, 3 vs 8 (embedded)",
    "breast-cancer": "scikit-learn breast cancer (embedded)",
    "synthetic-gaussian": "two Gaussian classes (options n, d, seed, n_test)",
    "synthetic-mnist-shape": "Gaussian data of the MNIST 3-vs-8 shape",
    "mnist": "MNIST class pair from a user-supplied path",
    "cifar10": "CIFAR-10 class pair from a user-supplied path",
    "npz": "your own arrays X, y (optionally X_test, y_test) from a .npz path; classes states "
           "the label pair",
}
# Limits checked when a spec is read, before any work: what no audit can finish is refused
# there, naming the field, instead of running out of memory or time after the trials started.
MAX_TRIALS = 10_000_000  # also the CLI's --trials cap
MAX_SEED = 2**63 - 1  # seeds are stored as SQLite INTEGERs (signed 64-bit)
# The audit splits 1 - confidence over its tests (Bonferroni); each test's confidence must
# stay a float below 1, which 1 - 1e-16 / k is not.
MAX_CONFIDENCE = 1 - 1e-9
# e^epsilon must be a finite float (the (epsilon, delta) test region and the ROC plot use it);
# 700 < log(float max) = 709.78. A larger epsilon certifies nothing anyway.
MAX_EPSILON = 700.0
# Multiply-adds of all trials (records x features x passes over the data x models): about a
# day of one GPU, months of one CPU core.
MAX_WORK = 1e16
# (records, features) of the built-in and file datasets, for the estimates (file sizes vary:
# these are the usual class pairs).
_DATA_SHAPES = {"digits": (357, 64), "breast-cancer": (569, 30),
                "synthetic-mnist-shape": (13248, 784), "mnist": (14000, 784),
                "cifar10": (12000, 3072),
                # users' arrays are not read to validate a spec: a large tabular set
                "npz": (100_000, 1_000)}
_STEP_SUFFIXES = ("_epochs", "_iterations", "_steps")
_DATASET_ALIASES = {"digits-3-vs-8": "digits", "synthetic": "synthetic-gaussian"}
_PATH_DATASETS = ("mnist", "cifar10", "npz")
DEVICES = ("cpu", "cuda", "auto")
DTYPES = ("float64", "float32")
# Score orientations the (epsilon, delta) tests may take (audits.statistics.ScoreOrientation):
# "greater" = higher score means "trained on the forgotten data" (the toolkit's score
# convention), "less" the reverse, "both" tests each orientation (Bonferroni) so a reversed
# score is not a false CONSISTENT.
DIRECTIONS = tuple(ScoreOrientation)


# ----------------------------------------------------------------------------------------------
# Data, model, request, certificate.


@dataclass(frozen=True)
class DatasetSpec:
    """Which data: an embedded set, a synthetic one, MNIST/CIFAR-10 or your own arrays
    (``npz``) from ``path``.

    ``classes`` and ``n_train`` apply to the file datasets (``npz`` requires ``classes``, the
    label pair: integers or strings, the first one +1); ``n``, ``d``, ``n_test`` and ``seed``
    to ``synthetic-gaussian``.
    """

    name: str = "digits"
    path: str | None = None
    classes: tuple[int, int] | None = None
    n_train: int | None = None
    n: int | None = None
    d: int | None = None
    n_test: int | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        p = "spec.dataset"
        name = _DATASET_ALIASES.get(self.name, self.name)
        choice(name, f"{p}.name", tuple(DATASETS))
        object.__setattr__(self, "name", name)
        file_based = name in _PATH_DATASETS
        if file_based and self.path is None:
            raise fail(f"{p}.path", f"dataset {name!r} is read from your files: give its path")
        if not file_based and self.path is not None:
            raise fail(f"{p}.path", f"dataset {name!r} is built in and takes no path")
        if self.path is not None and (not isinstance(self.path, str) or not self.path):
            raise fail(f"{p}.path", f"must be a non-empty string, got {self.path!r}")
        for key in ("classes", "n_train"):
            if getattr(self, key) is not None and not file_based:
                raise fail(f"{p}.{key}", "applies to the file datasets (mnist, cifar10, npz) only")
        if name == "npz" and self.classes is None:
            raise fail(f"{p}.classes", "is required for the npz dataset: the two labels of y to "
                       "tell apart, e.g. classes = [0, 1] (the first one is the +1 class)")
        if name == "npz" and self.classes is not None:
            classes = self.classes
            if isinstance(classes, str) or not isinstance(classes, Sequence) or len(classes) != 2:
                raise fail(f"{p}.classes", f"must be two labels, got {classes!r}")
            for i, c in enumerate(classes):
                if isinstance(c, bool) or not isinstance(c, int | str):
                    raise fail(f"{p}.classes[{i}]", f"must be an integer or a string label, got {c!r}")
            if classes[0] == classes[1]:
                raise fail(f"{p}.classes", f"must be two different labels, got {list(classes)}")
            object.__setattr__(self, "classes", tuple(classes))
        elif self.classes is not None:
            classes = self.classes
            if isinstance(classes, str) or not isinstance(classes, Sequence) or len(classes) != 2:
                raise fail(f"{p}.classes", f"must be two class labels, got {classes!r}")
            pair = tuple(integer(c, f"{p}.classes[{i}]", minimum=0, what="a class label >= 0")
                         for i, c in enumerate(classes))
            if pair[0] == pair[1]:
                raise fail(f"{p}.classes", f"must be two different labels, got {list(pair)}")
            object.__setattr__(self, "classes", pair)
        if self.n_train is not None:
            positive_int(self.n_train, f"{p}.n_train")
        synthetic = name == "synthetic-gaussian"
        for key in ("n", "d", "n_test", "seed"):
            value = getattr(self, key)
            if value is not None and not synthetic:
                raise fail(f"{p}.{key}", "applies to the synthetic-gaussian dataset only")
        if synthetic:
            for key in ("n", "d"):
                if getattr(self, key) is None:
                    raise fail(f"{p}.{key}", "is required for the synthetic-gaussian dataset")
                positive_int(getattr(self, key), f"{p}.{key}")
            if self.n_test is not None:
                integer(self.n_test, f"{p}.n_test", minimum=0, what="a non-negative integer")
            if self.seed is not None:
                _seed(self.seed, f"{p}.seed")
            _check_memory(self)

    def shape(self) -> tuple[int, int]:
        """(records, features) for the work estimate: exact for synthetic-gaussian, the usual
        size for the other datasets."""
        if self.name == "synthetic-gaussian":
            return int(self.n) + int(self.n_test or 0), int(self.d)
        records, features = _DATA_SHAPES[self.name]
        if self.n_train is not None:
            records = self.n_train
        return records, features

    def loader_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`empirical.data.datasets.load_dataset`."""
        if self.name in _PATH_DATASETS:
            options: dict[str, Any] = {"path": self.path}
            if self.classes is not None:
                options["classes"] = self.classes
            if self.n_train is not None:
                options["n_train"] = self.n_train
            return options
        if self.name == "synthetic-gaussian":
            options = {"n": self.n, "d": self.d, "seed": 0 if self.seed is None else self.seed}
            if self.n_test is not None:
                options["n_test"] = self.n_test
            return options
        return {}

    def to_dict(self) -> dict[str, Any]:
        """The ``[dataset]`` table as plain data."""
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class ModelSpec:
    """The model trained in every trial; the algorithm's adapter lists the names it supports."""

    name: str = "logistic-regression"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise fail("spec.model.name", f"must be a model name, got {self.name!r}")

    def to_dict(self) -> dict[str, Any]:
        """The ``[model]`` table as plain data."""
        return {"name": self.name}


@dataclass(frozen=True)
class RequestSpec:
    """The unlearning request: ``requests`` sequential requests of ``size`` records each.

    single: size 1, requests 1; batch of S: size S; sequence: requests > 1. ``kind`` is
    ``replace`` (replacement adjacency) or ``remove`` (served as a null record).
    ``replacement`` ``flip`` puts (-x, y) in place of (x, y), which maximises the difference
    of clipped gradients (2M) and so gives the strongest audit; ``random`` is the paper's
    N(0, I) point with a random label (App. N.3). ``indices`` (size * requests distinct rows,
    in request order) default to rows drawn with ``seed``.

    ``forget``: ``random`` forgets those rows as they are; ``worst-case`` has the algorithm's
    adapter put in those rows the record(s) its paper's assumptions allow that leak the most
    (the adapter states its rule; an adapter that states none refuses the spec). The retain set
    is the same either way.
    """

    kind: str = "replace"
    replacement: str = "flip"
    size: int = 1
    requests: int = 1
    indices: tuple[int, ...] | None = None
    seed: int = 0
    forget: str = "random"

    def __post_init__(self) -> None:
        p = "spec.request"
        choice(self.kind, f"{p}.kind", ("replace", "remove"))
        choice(self.forget, f"{p}.forget", FORGET_CHOICES)
        choice(self.replacement, f"{p}.replacement", ("flip", "random"))
        positive_int(self.size, f"{p}.size")
        positive_int(self.requests, f"{p}.requests")
        _seed(self.seed, f"{p}.seed")
        if self.indices is not None:
            if isinstance(self.indices, str) or not isinstance(self.indices, Sequence):
                raise fail(f"{p}.indices", f"must be a list of row indices, got {self.indices!r}")
            rows = tuple(integer(i, f"{p}.indices[{k}]", minimum=0, what="a row index >= 0")
                         for k, i in enumerate(self.indices))
            if len(rows) != self.size * self.requests:
                raise fail(f"{p}.indices", f"must list size * requests = "
                            f"{self.size * self.requests} rows, got {len(rows)}")
            if len(set(rows)) != len(rows):
                raise fail(f"{p}.indices", f"must be distinct, got {list(rows)}")
            object.__setattr__(self, "indices", rows)

    @property
    def total_records(self) -> int:
        """Records changed over all requests (size times requests)."""
        return self.size * self.requests

    def to_dict(self) -> dict[str, Any]:
        """The ``[request]`` table as plain data."""
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class CertificateSpec:
    """The certified side: a target (epsilon, delta) to calibrate, or given parameters.

    ``target_epsilon`` None certifies the algorithm's given sigma and K. ``delta`` is a number
    in (0, 1) or ``"1/n"`` (n = training records after dropping the tail to a multiple of b).
    ``calibrate`` names the parameter solved for (the adapter lists the ones it supports).
    ``bound`` None lets the adapter pick the theorem for the request (the paper's); a named id
    must be one of the sound certificates the adapter lists for its algorithm and request (for
    instance a tighter one the toolkit proves), and the report names the one used.
    """

    target_epsilon: float | None = 1.0
    delta: float | str = "1/n"
    calibrate: str = "sigma"
    conversion: str = "mironov"
    bound: str | None = None

    def __post_init__(self) -> None:
        p = "spec.certificate"
        if self.target_epsilon is not None:
            number(self.target_epsilon, f"{p}.target_epsilon", low=0, open_low=True,
                   what="a positive number")
            if self.target_epsilon > MAX_EPSILON:
                raise fail(f"{p}.target_epsilon", f"must be at most {MAX_EPSILON:g} (e^epsilon "
                           "must be a finite float; a larger epsilon certifies nothing), got "
                           f"{self.target_epsilon!r}")
        if isinstance(self.delta, str):
            if self.delta != "1/n":
                raise fail(f"{p}.delta", f"must be a number in (0, 1) or '1/n', got "
                            f"{self.delta!r}")
        else:
            number(self.delta, f"{p}.delta", low=0, high=1, open_low=True, open_high=True,
                    what="a number in (0, 1) or '1/n'")
        if not isinstance(self.calibrate, str) or not self.calibrate:
            raise fail(f"{p}.calibrate", f"must be a parameter name, got {self.calibrate!r}")
        choice(self.conversion, f"{p}.conversion", CONVERSIONS)
        if self.bound is not None and (not isinstance(self.bound, str) or ":" not in self.bound):
            raise fail(f"{p}.bound", f"must be a bound id such as 'paper:theorem', got "
                        f"{self.bound!r}")

    def resolve_delta(self, n: int) -> float:
        """delta as a number: 1/n for ``"1/n"``, else the given value."""
        return 1.0 / n if self.delta == "1/n" else float(self.delta)

    def to_dict(self) -> dict[str, Any]:
        """The ``[certificate]`` table as plain data."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


# ----------------------------------------------------------------------------------------------
# The audit.


# ----------------------------------------------------------------------------------------------
# How an audit is run and tested, whatever gives the trials.


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    """The settings every audit has, from a spec, a mechanism of yours or precomputed scores.

    ``trials`` pairs are tested and ``pilot_trials`` more choose data-dependent attack
    parameters; ``attacks`` None means every score the trials give (plus the projection attack
    when there are pilot trials). ``confidence`` is the probability with which all tests hold
    together; ``direction`` the score orientation tested ("both": each, Bonferroni).
    ``path`` prefixes the field names in error messages (``"spec"`` for a spec's fields).
    """

    name: str = "audit"
    trials: int
    pilot_trials: int = 0
    confidence: float = 0.95
    seed: int = 0
    attacks: tuple[str, ...] | None = None
    statistics: tuple[str, ...] = DEFAULT_STATISTICS
    estimators: tuple[str, ...] = DEFAULT_ESTIMATORS
    chunk_size: int = 250
    direction: ScoreOrientation = ScoreOrientation.BOTH
    path: dataclasses.InitVar[str] = ""

    def __post_init__(self, path: str) -> None:
        def at(name: str) -> str:
            return f"{path}.{name}" if path else name

        positive_int(self.trials, at("trials"))
        if self.trials < 2:
            raise fail(at("trials"), f"must be at least 2, got {self.trials}")
        integer(self.pilot_trials, at("pilot_trials"), minimum=0, what="a non-negative integer")
        if self.attacks is not None:
            if isinstance(self.attacks, str) or not isinstance(self.attacks, Sequence) or not all(
                    isinstance(item, str) for item in self.attacks):
                raise fail(at("attacks"), f"must be a list of names, got {self.attacks!r}")
            object.__setattr__(self, "attacks", tuple(self.attacks))
        object.__setattr__(self, "statistics",
                           names(self.statistics, at("statistics"), STATISTICS))
        object.__setattr__(self, "estimators",
                           names(self.estimators, at("estimators"), ESTIMATORS,
                                 allow_empty=True))
        check_confidence(self.confidence, at("confidence"))
        _seed(self.seed, at("seed"))
        positive_int(self.chunk_size, at("chunk_size"))
        choice(self.direction, at("direction"), DIRECTIONS)
        object.__setattr__(self, "direction", ScoreOrientation(self.direction))
        if not isinstance(self.name, str) or not self.name.strip():
            raise fail(at("name"), f"must be a non-empty string, got {self.name!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain form (tuples as lists): what the report records as the audit's settings."""
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


# ----------------------------------------------------------------------------------------------
# The spec.


@dataclass(frozen=True)
class AuditSpec:
    """Everything an audit needs; see the module docstring and ``docs/audits.md``.

    ``algorithm`` is the frozen parameter dataclass of one algorithm (with ``name`` and
    ``to_dict()``; :func:`audits.loader.check_spec` checks it against its adapter).
    ``trials`` N pairs (unlearned, retrained) are compared; ``pilot_trials`` further pairs,
    with their own seed, choose data-dependent attack parameters (the projection direction)
    and are never used to certify. ``attacks`` None (the canonical form's ``null``) leaves the
    attacks to the default, resolved when the audit is prepared:
    :data:`audits.attacks.DEFAULT_EXACT_ATTACKS` where the adapter knows the mechanism's exact
    output laws, else :data:`audits.attacks.DEFAULT_ATTACKS`
    (:func:`audits.exact_loss.resolve_attacks`); a list is run as written. ``confidence`` is
    the probability with which all lower bounds of the audit hold simultaneously.
    ``chunk_size`` trials are stored at a time.
    """

    algorithm: Any
    dataset: DatasetSpec = field(default_factory=DatasetSpec)
    model: ModelSpec = field(default_factory=ModelSpec)
    request: RequestSpec = field(default_factory=RequestSpec)
    certificate: CertificateSpec = field(default_factory=CertificateSpec)
    trials: int = 1000
    pilot_trials: int = 200
    attacks: tuple[str, ...] | None = None
    statistics: tuple[str, ...] = DEFAULT_STATISTICS
    estimators: tuple[str, ...] = SPEC_ESTIMATORS
    confidence: float = 0.95
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float64"
    chunk_size: int = 250
    name: str = "audit"

    def __post_init__(self) -> None:
        p = "spec"
        for key, kind in (("dataset", DatasetSpec), ("model", ModelSpec),
                          ("request", RequestSpec), ("certificate", CertificateSpec)):
            if not isinstance(getattr(self, key), kind):
                raise fail(f"{p}.{key}", f"must be a {kind.__name__}, got "
                            f"{type(getattr(self, key)).__name__}")
        if (not dataclasses.is_dataclass(self.algorithm) or isinstance(self.algorithm, type)
                or not isinstance(getattr(self.algorithm, "name", None), str)):
            raise fail(f"{p}.algorithm", "must be the parameters of an algorithm (a dataclass "
                       f"with a name), got {type(self.algorithm).__name__}")
        settings = self.settings  # the checks every audit shares
        object.__setattr__(self, "statistics", settings.statistics)
        object.__setattr__(self, "estimators", settings.estimators)
        if self.trials > MAX_TRIALS:
            raise fail(f"{p}.trials", f"must be at most {MAX_TRIALS}, got {self.trials}")
        if self.attacks is not None:
            object.__setattr__(self, "attacks", names(self.attacks, f"{p}.attacks", ATTACKS))
        if self.pilot_trials > MAX_TRIALS:
            raise fail(f"{p}.pilot_trials", f"must be at most {MAX_TRIALS}, got "
                       f"{self.pilot_trials}")
        if self.attacks is not None and any(attack(a).needs_pilot for a in self.attacks):
            check_projection_pilot(self.pilot_trials, why="")
        for name in self.statistics:
            least = statistic(name).min_trials
            if self.trials < least:
                raise fail(f"{p}.trials", f"must be at least {least} for the {name} statistic")
        if not isinstance(self.device, str) or not (
            self.device in DEVICES or self.device.startswith("cuda:")
        ):
            raise fail(f"{p}.device", f"must be 'cpu', 'cuda', 'cuda:N' or 'auto', got "
                        f"{self.device!r}")
        choice(self.dtype, f"{p}.dtype", DTYPES)

    @property
    def settings(self) -> AuditSettings:
        """The spec's :class:`AuditSettings` (its scores tested in both orientations), with the
        attacks as the spec names them (None: left to the default, see :meth:`settings_with`)."""
        return self.settings_with(self.attacks)

    def settings_with(self, attacks: tuple[str, ...] | None) -> AuditSettings:
        """The spec's :class:`AuditSettings` running ``attacks``: the plan of an audit passes
        the attacks resolved when it was prepared (:func:`audits.exact_loss.resolve_attacks`)."""
        return AuditSettings(name=self.name, trials=self.trials, pilot_trials=self.pilot_trials,
                             confidence=self.confidence, seed=self.seed, attacks=attacks,
                             statistics=self.statistics, estimators=self.estimators,
                             chunk_size=self.chunk_size, path="spec")

    def replace(self, **changes: Any) -> AuditSpec:
        """A copy with top-level fields changed (each field validated again; the adapter's
        checks are :func:`audits.loader.check_spec`'s)."""
        return dataclasses.replace(self, **changes)

    # -- canonical form ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Canonical plain form: every field, tuples as lists, None where not given."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if hasattr(value, "to_dict") else plain(value)
        return out

    def canonical_json(self) -> str:
        """The spec as canonical JSON (sorted keys): what hashes and caches key on."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"),
                          allow_nan=False)

    def digest(self, code_version: str) -> str:
        """SHA-256 of the canonical spec and the code version (the chunk store's key)."""
        text = json.dumps({"spec": self.to_dict(), "code_version": code_version},
                          sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()


def _seed(value: Any, path: str) -> int:
    integer(value, path, minimum=0, what="a non-negative integer")
    if value > MAX_SEED:
        raise fail(path, f"must be at most 2**63 - 1 (stored as a signed 64-bit integer), got "
                   f"{value}")
    return value


def check_projection_pilot(pilot_trials: int, *, why: str) -> None:
    """The projection attack takes its direction from pilot trials: at least 2 of them
    (``why`` says how the attack was chosen, e.g. as the default)."""
    if pilot_trials < 2:
        advice = "; name the attacks (e.g. attacks = [\"loss\"]) or add pilot trials" if why else ""
        raise fail("spec.pilot_trials", f"must be at least 2 for the projection attack{why} "
                   f"(its direction comes from pilot trials), got {pilot_trials}{advice}")


def check_confidence(value: Any, path: str) -> float:
    """A joint confidence in (0, 1 - 1e-9]: see :data:`MAX_CONFIDENCE`."""
    number(value, path, low=0, high=1, open_low=True, open_high=True,
           what="a number in (0, 1), e.g. 0.95")
    if value > MAX_CONFIDENCE:
        raise fail(path, f"must be at most 1 - 1e-9 (it is split over the audit's tests, and "
                   f"each test's confidence must stay below 1 as a float), got {value!r}")
    return float(value)


def _memory_bytes() -> float:
    """Physical memory of this machine (inf when the platform does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return math.inf


def _check_memory(dataset: DatasetSpec) -> None:
    """A synthetic dataset must fit in memory (float64 features, train and test rows)."""
    if dataset.name != "synthetic-gaussian":
        return
    records, features = dataset.shape()
    need = 8.0 * records * features
    have = _memory_bytes()
    if need > have:
        field_name = "d" if dataset.d >= dataset.n else "n"
        raise fail(f"spec.dataset.{field_name}", f"synthetic-gaussian with {records} records of "
                   f"{features} features needs at least {need:.3g} bytes of memory, more than "
                   f"this machine's {have:.3g}; lower n or d")


def _step_fields(params: Any) -> list[tuple[str, int]]:
    """The algorithm's passes over the data per model: its ``*_epochs``, ``*_iterations`` and
    ``*_steps`` fields (a list counts its sum; a field left to calibration counts 1)."""
    out = []
    for f in dataclasses.fields(params):
        if not f.name.endswith(_STEP_SUFFIXES):
            continue
        value = getattr(params, f.name)
        if isinstance(value, tuple | list):
            value = sum(v for v in value if isinstance(v, int))
        if isinstance(value, int) and not isinstance(value, bool):
            out.append((f.name, max(1, value)))
    return out


def check_work(spec: AuditSpec) -> None:
    """Refuse an audit whose work (multiply-adds: trials x models x passes x records x features)
    is beyond :data:`MAX_WORK`, naming the field that makes it so."""
    records, features = spec.dataset.shape()
    steps = _step_fields(spec.algorithm)
    passes = sum(v for _, v in steps) * spec.request.requests if steps else 1
    trials = spec.trials + spec.pilot_trials
    work = 2.0 * trials * passes * records * features  # two models per trial
    if work <= MAX_WORK:
        return
    # the factor furthest above its usual size is named
    usual = [("spec.trials", trials / 1e4), ("spec.dataset", records * features / 1e6)]
    usual += [(f"spec.algorithm.{name}", value / 1e2) for name, value in steps]
    blamed = max(usual, key=lambda item: item[1])[0]
    raise fail(blamed, f"the audit would take about {work:.2g} multiply-adds ({trials} trials x 2 "
               f"models x {passes} passes over {records} records x {features} features), more "
               f"than the {MAX_WORK:g} an audit may ask for; lower it")
