"""Audit specs: what to audit, against which certificate, with how many trials.

An :class:`AuditSpec` is a tree of frozen dataclasses, built from a TOML file
(:meth:`AuditSpec.from_toml`), a plain dict (:meth:`AuditSpec.from_dict`) or directly in Python.
Every field is validated on construction; a bad value raises :class:`SpecError` (a
``ValueError``) whose message starts with the field's path, e.g.
``spec.trials: must be a positive integer, got -3``. Unknown fields are rejected.

The canonical form (:meth:`AuditSpec.to_dict`, every field present, ``None`` for "not given")
is what the report records and what :meth:`AuditSpec.digest` hashes to key the chunk store.

Algorithms plug in through :func:`register_algorithm`: a frozen dataclass of hyper-parameters
with a ``name`` class attribute and a ``from_dict(data, path)`` constructor. The runner keeps
the matching certificate and trial code (:mod:`audits.runner`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

__all__ = [
    "ALGORITHMS",
    "ATTACKS",
    "DATASETS",
    "ESTIMATORS",
    "STATISTICS",
    "AuditSpec",
    "CertificateSpec",
    "DatasetSpec",
    "ModelSpec",
    "PNSGDParams",
    "RequestSpec",
    "SpecError",
    "demo_spec",
    "load_spec",
    "register_algorithm",
]


class SpecError(ValueError):
    """A spec field is missing, unknown or invalid; the message starts with its path."""


# Attack scores, lower-bound statistics and plug-in estimators the runner knows.
ATTACKS: dict[str, str] = {
    "loss": "minus the loss of the forgotten record(s) (Yeom et al. 2018)",
    "projection": "final parameters projected on the unlearned-minus-retrained mean difference "
    "of independent pilot trials",
}
STATISTICS: dict[str, str] = {
    "bonferroni-pareto": "Clopper-Pearson epsilon lower bound, every threshold certified at once",
    "sample-split": "Clopper-Pearson epsilon lower bound, threshold chosen on half the trials",
}
ESTIMATORS: dict[str, str] = {
    "plugin-epsilon": "plug-in epsilon at the certificate's delta",
    "auc": "area under the attack's ROC curve",
    "tpr-at-fpr": "true-positive rate at 1% false-positive rate",
    "gaussian-kl": "KL divergence between Gaussians fitted to the attack scores",
}
# Names accepted by empirical.data.load_dataset (kept here so specs validate without numpy).
DATASETS: dict[str, str] = {
    "digits": "scikit-learn digits, 3 vs 8 (embedded)",
    "breast-cancer": "scikit-learn breast cancer (embedded)",
    "synthetic-gaussian": "two Gaussian classes (options n, d, seed, n_test)",
    "synthetic-mnist-shape": "Gaussian data of the MNIST 3-vs-8 shape",
    "mnist": "MNIST class pair from a user-supplied path",
    "cifar10": "CIFAR-10 class pair from a user-supplied path",
}
_DATASET_ALIASES = {"digits-3-vs-8": "digits", "synthetic": "synthetic-gaussian"}
_PATH_DATASETS = ("mnist", "cifar10")
MODELS = ("logistic-regression",)
DEVICES = ("cpu", "cuda", "auto")
DTYPES = ("float64", "float32")


# ----------------------------------------------------------------------------------------------
# Field checks. Each returns the normalised value or raises SpecError naming ``path``.


def _fail(path: str, message: str) -> SpecError:
    return SpecError(f"{path}: {message}")


def _integer(value: Any, path: str, *, minimum: int | None = None, what: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, f"must be {what or 'an integer'}, got {value!r}")
    if minimum is not None and value < minimum:
        raise _fail(path, f"must be {what or f'an integer >= {minimum}'}, got {value!r}")
    return value


def _positive_int(value: Any, path: str) -> int:
    return _integer(value, path, minimum=1, what="a positive integer")


def _number(
    value: Any,
    path: str,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    what: str = "",
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, f"must be {what or 'a number'}, got {value!r}")
    number = float(value)
    bad = not math.isfinite(number)
    if low is not None:
        bad = bad or number < low or (open_low and number == low)
    if high is not None:
        bad = bad or number > high or (open_high and number == high)
    if bad:
        if not what:
            lo = "(" if open_low else "["
            hi = ")" if open_high else "]"
            what = f"a finite number in {lo}{low if low is not None else '-inf'}, "
            what += f"{high if high is not None else 'inf'}{hi}"
        raise _fail(path, f"must be {what}, got {value!r}")
    return number


def _choice(value: Any, path: str, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise _fail(path, f"must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def _names(value: Any, path: str, known: Mapping[str, str], *, allow_empty: bool = False):
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise _fail(path, f"must be a list of names, got {value!r}")
    items = tuple(value)
    if not items and not allow_empty:
        raise _fail(path, f"must name at least one of {', '.join(known)}")
    for i, item in enumerate(items):
        _choice(item, f"{path}[{i}]", tuple(known))
    if len(set(items)) != len(items):
        raise _fail(path, f"lists a name twice: {list(items)}")
    return items


def _check_keys(data: Mapping[str, Any], path: str, known: Sequence[str]) -> None:
    if not isinstance(data, Mapping):
        raise _fail(path, f"must be a table of fields, got {type(data).__name__}")
    for key in data:
        if key not in known:
            raise _fail(f"{path}.{key}", f"unknown field; known fields: {', '.join(known)}")


def _from_fields(cls: type, data: Mapping[str, Any], path: str, **fixed: Any) -> Any:
    names = [f.name for f in dataclasses.fields(cls) if f.name not in fixed]
    _check_keys(data, path, names)
    try:
        return cls(**data, **fixed)
    except TypeError as error:  # a field of the wrong shape, e.g. a table for a number
        raise _fail(path, str(error)) from None


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


# ----------------------------------------------------------------------------------------------
# Algorithms.


@dataclass(frozen=True)
class PNSGDParams:
    """Hyper-parameters of PNSGD (Chien et al. 2024, Algorithm 1) on a linear model.

    ``sigma`` None: calibrated from the certificate's target. ``unlearn_epochs`` (K) is one
    integer, or one per request of a sequence; None means 1, or calibrated when
    ``certificate.calibrate = "K"``. ``batch_size`` is b or ``"full"`` (b = n).
    ``step_size`` is eta, a number <= 1/L or ``"1/L"`` (the largest float not above 1/L).
    ``l2`` is lambda = m, ``clip`` is M, ``radius`` is R. The learning initialisation is the
    point 0 (``init = "zero"``), which lies in C_R as Theorem 3.2 requires.
    ``noise_multiplier_scale`` multiplies every noise draw without changing the certified
    sigma: a deliberately broken mechanism for testing audits (1 = the real algorithm).
    """

    name: ClassVar[str] = "pnsgd"

    sigma: float | None = None
    unlearn_epochs: int | tuple[int, ...] | None = None
    learn_epochs: int = 12
    batch_size: int | str = "full"
    step_size: float | str = "1/L"
    l2: float = 1.0
    clip: float = 0.05
    radius: float = 100.0
    partition: str = "per_trial"
    init: str = "zero"
    noise_multiplier_scale: float = 1.0

    def __post_init__(self) -> None:
        p = "spec.algorithm"
        if self.sigma is not None:
            _number(self.sigma, f"{p}.sigma", low=0, open_low=True,
                    what="a positive number (or left out to calibrate it)")
        epochs = self.unlearn_epochs
        if isinstance(epochs, list | tuple):
            if not epochs:
                raise _fail(f"{p}.unlearn_epochs", "must list at least one K")
            epochs = tuple(
                _positive_int(k, f"{p}.unlearn_epochs[{i}]") for i, k in enumerate(epochs)
            )
            object.__setattr__(self, "unlearn_epochs", epochs)
        elif epochs is not None:
            _positive_int(epochs, f"{p}.unlearn_epochs")
        _integer(self.learn_epochs, f"{p}.learn_epochs", minimum=0,
                 what="a non-negative integer")
        if self.batch_size != "full":
            _positive_int(self.batch_size, f"{p}.batch_size")
        if isinstance(self.step_size, str):
            if self.step_size != "1/L":
                raise _fail(f"{p}.step_size", f"must be a positive number or '1/L', got "
                            f"{self.step_size!r}")
        else:
            _number(self.step_size, f"{p}.step_size", low=0, open_low=True,
                    what="a positive number or '1/L'")
        _number(self.l2, f"{p}.l2", low=0, open_low=True,
                what="a positive number (lambda; the theorem needs m = lambda > 0)")
        _number(self.clip, f"{p}.clip", low=0, open_low=True, what="a positive number (M)")
        _number(self.radius, f"{p}.radius", low=0, open_low=True, what="a positive number (R)")
        _choice(self.partition, f"{p}.partition", ("per_trial", "fixed"))
        if self.init != "zero":
            raise _fail(f"{p}.init", "must be 'zero': Theorem 3.2 needs the learning "
                        f"initialisation supported on C_R, got {self.init!r}")
        _number(self.noise_multiplier_scale, f"{p}.noise_multiplier_scale", low=0,
                what="a number >= 0")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str = "spec.algorithm") -> PNSGDParams:
        return _from_fields(cls, data, path)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **{f.name: _plain(getattr(self, f.name))
                                      for f in dataclasses.fields(self)}}


ALGORITHMS: dict[str, type] = {}


def register_algorithm(params_type: type) -> type:
    """Make an algorithm's hyper-parameter dataclass known to specs (by its ``name``)."""
    name = getattr(params_type, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError("an algorithm's parameter class needs a non-empty 'name' attribute")
    if not callable(getattr(params_type, "from_dict", None)):
        raise ValueError(f"{params_type.__name__} needs a from_dict(data, path) classmethod")
    ALGORITHMS[name] = params_type
    return params_type


register_algorithm(PNSGDParams)


# ----------------------------------------------------------------------------------------------
# Data, model, request, certificate.


@dataclass(frozen=True)
class DatasetSpec:
    """Which data: an embedded set, a synthetic one, or MNIST/CIFAR-10 from ``path``.

    ``classes`` and ``n_train`` apply to the file datasets; ``n``, ``d``, ``n_test`` and
    ``seed`` to ``synthetic-gaussian``.
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
        _choice(name, f"{p}.name", tuple(DATASETS))
        object.__setattr__(self, "name", name)
        file_based = name in _PATH_DATASETS
        if file_based and self.path is None:
            raise _fail(f"{p}.path", f"dataset {name!r} is read from your files: give its path")
        if not file_based and self.path is not None:
            raise _fail(f"{p}.path", f"dataset {name!r} is built in and takes no path")
        if self.path is not None and (not isinstance(self.path, str) or not self.path):
            raise _fail(f"{p}.path", f"must be a non-empty string, got {self.path!r}")
        for key in ("classes", "n_train"):
            if getattr(self, key) is not None and not file_based:
                raise _fail(f"{p}.{key}", "applies to the file datasets (mnist, cifar10) only")
        if self.classes is not None:
            classes = self.classes
            if isinstance(classes, str) or not isinstance(classes, Sequence) or len(classes) != 2:
                raise _fail(f"{p}.classes", f"must be two class labels, got {classes!r}")
            pair = tuple(_integer(c, f"{p}.classes[{i}]", minimum=0, what="a class label >= 0")
                         for i, c in enumerate(classes))
            if pair[0] == pair[1]:
                raise _fail(f"{p}.classes", f"must be two different labels, got {list(pair)}")
            object.__setattr__(self, "classes", pair)
        if self.n_train is not None:
            _positive_int(self.n_train, f"{p}.n_train")
        synthetic = name == "synthetic-gaussian"
        for key in ("n", "d", "n_test", "seed"):
            value = getattr(self, key)
            if value is not None and not synthetic:
                raise _fail(f"{p}.{key}", "applies to the synthetic-gaussian dataset only")
        if synthetic:
            for key in ("n", "d"):
                if getattr(self, key) is None:
                    raise _fail(f"{p}.{key}", "is required for the synthetic-gaussian dataset")
                _positive_int(getattr(self, key), f"{p}.{key}")
            if self.n_test is not None:
                _integer(self.n_test, f"{p}.n_test", minimum=0, what="a non-negative integer")
            if self.seed is not None:
                _integer(self.seed, f"{p}.seed", minimum=0, what="a non-negative integer")

    def loader_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`empirical.data.load_dataset`."""
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
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class ModelSpec:
    """The model trained in every trial (logistic regression on unit-norm features)."""

    name: str = "logistic-regression"

    def __post_init__(self) -> None:
        _choice(self.name, "spec.model.name", MODELS)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


@dataclass(frozen=True)
class RequestSpec:
    """The unlearning request: ``requests`` sequential requests of ``size`` records each.

    single: size 1, requests 1; batch of S: size S; sequence: requests > 1. ``kind`` is
    ``replace`` (the adjacency of Chien et al.) or ``remove`` (served as a null record).
    ``replacement`` ``flip`` puts (-x, y) in place of (x, y), which maximises the difference
    of clipped gradients (2M) and so gives the strongest audit; ``random`` is the paper's
    N(0, I) point with a random label (App. N.3). ``indices`` (size * requests distinct rows,
    in request order) default to rows drawn with ``seed``.
    """

    kind: str = "replace"
    replacement: str = "flip"
    size: int = 1
    requests: int = 1
    indices: tuple[int, ...] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        p = "spec.request"
        _choice(self.kind, f"{p}.kind", ("replace", "remove"))
        _choice(self.replacement, f"{p}.replacement", ("flip", "random"))
        _positive_int(self.size, f"{p}.size")
        _positive_int(self.requests, f"{p}.requests")
        _integer(self.seed, f"{p}.seed", minimum=0, what="a non-negative integer")
        if self.indices is not None:
            if isinstance(self.indices, str) or not isinstance(self.indices, Sequence):
                raise _fail(f"{p}.indices", f"must be a list of row indices, got {self.indices!r}")
            rows = tuple(_integer(i, f"{p}.indices[{k}]", minimum=0, what="a row index >= 0")
                         for k, i in enumerate(self.indices))
            if len(rows) != self.size * self.requests:
                raise _fail(f"{p}.indices", f"must list size * requests = "
                            f"{self.size * self.requests} rows, got {len(rows)}")
            if len(set(rows)) != len(rows):
                raise _fail(f"{p}.indices", f"must be distinct, got {list(rows)}")
            object.__setattr__(self, "indices", rows)

    @property
    def total_records(self) -> int:
        return self.size * self.requests

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


CONVERSIONS = ("mironov", "balle2020")


@dataclass(frozen=True)
class CertificateSpec:
    """The certified side: a target (epsilon, delta) to calibrate, or given parameters.

    ``target_epsilon`` None certifies the algorithm's given sigma and K. ``delta`` is a number
    in (0, 1) or ``"1/n"`` (n = training records after dropping the tail to a multiple of b).
    ``bound`` None picks the theorem for the request (``chien2024:thm3.2`` for PNSGD).
    """

    target_epsilon: float | None = 1.0
    delta: float | str = "1/n"
    calibrate: str = "sigma"
    conversion: str = "mironov"
    bound: str | None = None

    def __post_init__(self) -> None:
        p = "spec.certificate"
        if self.target_epsilon is not None:
            _number(self.target_epsilon, f"{p}.target_epsilon", low=0, open_low=True,
                    what="a positive number")
        if isinstance(self.delta, str):
            if self.delta != "1/n":
                raise _fail(f"{p}.delta", f"must be a number in (0, 1) or '1/n', got "
                            f"{self.delta!r}")
        else:
            _number(self.delta, f"{p}.delta", low=0, high=1, open_low=True, open_high=True,
                    what="a number in (0, 1) or '1/n'")
        _choice(self.calibrate, f"{p}.calibrate", ("sigma", "K"))
        _choice(self.conversion, f"{p}.conversion", CONVERSIONS)
        if self.bound is not None and (not isinstance(self.bound, str) or ":" not in self.bound):
            raise _fail(f"{p}.bound", f"must be a bound id such as 'chien2024:thm3.2', got "
                        f"{self.bound!r}")

    def resolve_delta(self, n: int) -> float:
        return 1.0 / n if self.delta == "1/n" else float(self.delta)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


# ----------------------------------------------------------------------------------------------
# The audit.


@dataclass(frozen=True)
class AuditSpec:
    """Everything an audit needs; see the module docstring and ``docs/audits.md``.

    ``trials`` N pairs (unlearned, retrained) are compared; ``pilot_trials`` further pairs,
    with their own seed, choose data-dependent attack parameters (the projection direction)
    and are never used to certify. ``confidence`` is the probability with which all lower
    bounds of the audit hold simultaneously. ``chunk_size`` trials are stored at a time.
    """

    algorithm: Any = field(default_factory=PNSGDParams)
    dataset: DatasetSpec = field(default_factory=DatasetSpec)
    model: ModelSpec = field(default_factory=ModelSpec)
    request: RequestSpec = field(default_factory=RequestSpec)
    certificate: CertificateSpec = field(default_factory=CertificateSpec)
    trials: int = 1000
    pilot_trials: int = 200
    attacks: tuple[str, ...] = ("loss", "projection")
    statistics: tuple[str, ...] = ("bonferroni-pareto",)
    estimators: tuple[str, ...] = ("plugin-epsilon", "auc", "gaussian-kl")
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
                raise _fail(f"{p}.{key}", f"must be a {kind.__name__}, got "
                            f"{type(getattr(self, key)).__name__}")
        if type(self.algorithm) not in ALGORITHMS.values():
            raise _fail(f"{p}.algorithm", f"must be the parameters of a registered algorithm "
                        f"({', '.join(ALGORITHMS)}), got {type(self.algorithm).__name__}")
        _positive_int(self.trials, f"{p}.trials")
        if self.trials < 2:
            raise _fail(f"{p}.trials", f"must be at least 2, got {self.trials}")
        object.__setattr__(self, "attacks", _names(self.attacks, f"{p}.attacks", ATTACKS))
        object.__setattr__(self, "statistics",
                           _names(self.statistics, f"{p}.statistics", STATISTICS))
        object.__setattr__(self, "estimators",
                           _names(self.estimators, f"{p}.estimators", ESTIMATORS,
                                  allow_empty=True))
        _integer(self.pilot_trials, f"{p}.pilot_trials", minimum=0,
                 what="a non-negative integer")
        if "projection" in self.attacks and self.pilot_trials < 2:
            raise _fail(f"{p}.pilot_trials", "must be at least 2 for the projection attack "
                        f"(its direction comes from pilot trials), got {self.pilot_trials}")
        if "sample-split" in self.statistics and self.trials < 4:
            raise _fail(f"{p}.trials", "must be at least 4 for the sample-split statistic")
        _number(self.confidence, f"{p}.confidence", low=0, high=1, open_low=True,
                open_high=True, what="a number in (0, 1), e.g. 0.95")
        _integer(self.seed, f"{p}.seed", minimum=0, what="a non-negative integer")
        if not isinstance(self.device, str) or not (
            self.device in DEVICES or self.device.startswith("cuda:")
        ):
            raise _fail(f"{p}.device", f"must be 'cpu', 'cuda', 'cuda:N' or 'auto', got "
                        f"{self.device!r}")
        _choice(self.dtype, f"{p}.dtype", DTYPES)
        _positive_int(self.chunk_size, f"{p}.chunk_size")
        if not isinstance(self.name, str) or not self.name.strip():
            raise _fail(f"{p}.name", f"must be a non-empty string, got {self.name!r}")
        self._check_combinations()

    def _check_combinations(self) -> None:
        params, cert = self.algorithm, self.certificate
        if not isinstance(params, PNSGDParams):
            return
        p = "spec.algorithm"
        epochs = params.unlearn_epochs
        if isinstance(epochs, tuple) and len(epochs) != self.request.requests:
            raise _fail(f"{p}.unlearn_epochs", f"lists {len(epochs)} values of K for "
                        f"{self.request.requests} requests (spec.request.requests)")
        if cert.target_epsilon is None:
            if params.sigma is None:
                raise _fail(f"{p}.sigma", "is required when spec.certificate.target_epsilon "
                            "is not given (nothing to calibrate it from)")
            return
        if cert.calibrate == "sigma" and params.sigma is not None:
            raise _fail(f"{p}.sigma", "is calibrated from spec.certificate.target_epsilon: "
                        "leave it out, or leave out the target")
        if cert.calibrate == "K":
            if params.sigma is None:
                raise _fail(f"{p}.sigma", "is required when K is calibrated "
                            "(spec.certificate.calibrate = 'K')")
            if epochs is not None:
                raise _fail(f"{p}.unlearn_epochs", "is calibrated (spec.certificate.calibrate "
                            "= 'K'): leave it out")
            if self.request.requests > 1:
                raise _fail("spec.certificate.calibrate", "K calibration is not supported for "
                            "a sequence of requests; give unlearn_epochs and calibrate sigma")

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditSpec:
        """Build from nested plain data (the shape of the TOML file and of :meth:`to_dict`)."""
        top = [f.name for f in dataclasses.fields(cls)]
        _check_keys(data, "spec", top)
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key == "algorithm":
                values[key] = _algorithm_from_dict(value)
            elif key in ("dataset", "model", "request", "certificate"):
                kind = {"dataset": DatasetSpec, "model": ModelSpec, "request": RequestSpec,
                        "certificate": CertificateSpec}[key]
                values[key] = _from_fields(kind, value, f"spec.{key}")
            else:
                values[key] = value
        return cls(**values)

    @classmethod
    def from_toml(cls, path: str | Path) -> AuditSpec:
        """Read a spec file (TOML); see ``examples/pnsgd_digits.toml``."""
        path = Path(path)
        if not path.is_file():
            raise SpecError(f"spec: no spec file at {path}")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise SpecError(f"spec: {path} is not valid TOML ({error})") from None
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> AuditSpec:
        """A copy with top-level fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    # -- canonical form ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Canonical plain form: every field, tuples as lists, None where not given."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if hasattr(value, "to_dict") else _plain(value)
        return out

    def canonical_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"),
                          allow_nan=False)

    def digest(self, code_version: str) -> str:
        """SHA-256 of the canonical spec and the code version (the chunk store's key)."""
        text = json.dumps({"spec": self.to_dict(), "code_version": code_version},
                          sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()


def _algorithm_from_dict(data: Any) -> Any:
    path = "spec.algorithm"
    if not isinstance(data, Mapping):
        raise _fail(path, f"must be a table with a 'name' field, got {type(data).__name__}")
    name = data.get("name", "pnsgd")
    if name not in ALGORITHMS:
        raise _fail(f"{path}.name", f"unknown algorithm {name!r}; known: {', '.join(ALGORITHMS)}")
    rest = {k: v for k, v in data.items() if k != "name"}
    return ALGORITHMS[name].from_dict(rest, path)


def load_spec(source: AuditSpec | Mapping[str, Any] | str | Path) -> AuditSpec:
    """An :class:`AuditSpec` from itself, a plain dict, or the path of a TOML file."""
    if isinstance(source, AuditSpec):
        return source
    if isinstance(source, Mapping):
        return AuditSpec.from_dict(source)
    if isinstance(source, str | Path):
        return AuditSpec.from_toml(source)
    raise SpecError(f"spec: expected an AuditSpec, a dict or a TOML path, got "
                    f"{type(source).__name__}")


# ----------------------------------------------------------------------------------------------
# The embedded demo (``unlearn audit demo``; ``examples/pnsgd_digits.toml`` is the same spec).

DEMO_TRIALS = 50000


def demo_spec(*, trials: int | None = None, device: str | None = None) -> AuditSpec:
    """PNSGD on digits 3-vs-8 logistic regression, calibrated to (epsilon, delta) = (1, 1/n).

    Full batch, lambda = 1 (contraction c = 0.2 per step) and clipping at M = 0.05 (active on
    every record) keep the mechanism close to the worst case Theorem 3.2 is proved for, and the
    flip replacement makes the two datasets' gradients differ by exactly 2M, so the audit's
    lower bound can approach the certificate. ``trials`` N (default 50000) and one pilot trial
    per ten set the power; the full demo takes under a minute to a few minutes on two
    CPU cores.
    """
    n = DEMO_TRIALS if trials is None else trials
    return AuditSpec(
        algorithm=PNSGDParams(batch_size="full", learn_epochs=12, l2=1.0, clip=0.05,
                              radius=100.0),
        dataset=DatasetSpec(name="digits"),
        request=RequestSpec(kind="replace", replacement="flip", indices=(0,)),
        certificate=CertificateSpec(target_epsilon=1.0, delta="1/n", calibrate="sigma",
                                    conversion="mironov"),
        trials=n,
        pilot_trials=max(2, n // 10) if isinstance(n, int) and not isinstance(n, bool) else n,
        attacks=("loss", "projection"),
        statistics=("bonferroni-pareto", "sample-split"),
        estimators=("plugin-epsilon", "auc", "tpr-at-fpr", "gaussian-kl"),
        confidence=0.95,
        seed=0,
        device="cpu" if device is None else device,
        chunk_size=2500,
        name="demo",
    )
