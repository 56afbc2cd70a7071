"""Datasets for the empirical trials (requests on them: :mod:`empirical.data.requests`).

The conventions follow the PNSGD experiments (Chien et al., NeurIPS 2024, App. N.2-N.3):
binary tasks built from a pair of classes, every feature vector scaled to unit l2 norm,
labels in {-1, +1}; an unlearning request replaces a record by N(0, I) features (scaled to
unit norm, as the authors' code does) and a uniformly random label.

The embedded default is scikit-learn's bundled handwritten digits (no download). MNIST and
CIFAR-10, and users' own arrays (:func:`load_arrays`), are read from files the user supplies;
nothing here touches the network.
"""

from __future__ import annotations

import gzip
import pickle
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from empirical.data.npz import npz_arrays, read_npz

__all__ = [
    "check_labels",
    "frozen_array",
    "Dataset",
    "breast_cancer",
    "dataset_names",
    "digits_3_vs_8",
    "drop_to_multiple",
    "load_arrays",
    "load_cifar10",
    "load_dataset",
    "load_mnist",
    "read_idx",
    "select_class_pair",
    "synthetic_gaussian",
    "synthetic_mnist_shape",
    "unit_normalize",
]


def frozen_array(values: Any, *, dtype: Any) -> np.ndarray:
    """``values`` as a read-only numpy array of ``dtype`` (datasets and requests are immutable)."""
    array = np.array(values, dtype=dtype, copy=True)
    array.setflags(write=False)
    return array


def check_labels(labels: np.ndarray, *, name: str) -> None:
    """Refuse labels outside {-1, +1} (the error names ``name``)."""
    if labels.size and not np.all(np.isin(labels, (-1.0, 1.0))):
        raise ValueError(f"{name} must contain only -1 and +1")


@dataclass(frozen=True, eq=False)
class Dataset:
    """A binary classification dataset with a held-out test split.

    ``features`` is [n, d] (float64), ``labels`` is [n] with values in {-1, +1}; the test
    split has the same feature dimension (it may be empty). ``provenance`` says where the
    numbers came from and how they were processed. Arrays are stored read-only.
    """

    name: str
    features: np.ndarray
    labels: np.ndarray
    test_features: np.ndarray
    test_labels: np.ndarray
    provenance: str

    def __post_init__(self) -> None:
        features = frozen_array(self.features, dtype=np.float64)
        labels = frozen_array(self.labels, dtype=np.float64)
        test_features = frozen_array(self.test_features, dtype=np.float64)
        test_labels = frozen_array(self.test_labels, dtype=np.float64)
        if features.ndim != 2 or features.shape[0] == 0 or features.shape[1] == 0:
            raise ValueError(f"features must be a non-empty [n, d] array, got {features.shape}")
        if labels.shape != (features.shape[0],):
            raise ValueError(
                f"labels must have shape ({features.shape[0]},) to match features, "
                f"got {labels.shape}"
            )
        if test_features.size == 0:
            test_features = np.zeros((0, features.shape[1]))
            test_features.setflags(write=False)
        if test_features.ndim != 2 or test_features.shape[1] != features.shape[1]:
            raise ValueError(
                f"test_features must be [n_test, {features.shape[1]}], got {test_features.shape}"
            )
        if test_labels.shape != (test_features.shape[0],):
            raise ValueError(
                f"test_labels must have shape ({test_features.shape[0]},), got {test_labels.shape}"
            )
        if not (np.all(np.isfinite(features)) and np.all(np.isfinite(test_features))):
            raise ValueError("features must be finite")
        check_labels(labels, name="labels")
        check_labels(test_labels, name="test_labels")
        object.__setattr__(self, "features", features)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "test_features", test_features)
        object.__setattr__(self, "test_labels", test_labels)

    @property
    def n(self) -> int:
        """Number of training records."""
        return int(self.features.shape[0])

    @property
    def dim(self) -> int:
        """Feature dimension d."""
        return int(self.features.shape[1])

    @property
    def n_test(self) -> int:
        """Number of test records."""
        return int(self.test_features.shape[0])


# ---------------------------------------------------------------------------------------------
# Preprocessing shared by the loaders.


def unit_normalize(features: np.ndarray) -> np.ndarray:
    """Scale every row to unit l2 norm (the seeds' ``||x|| = 1`` convention)."""
    features = np.asarray(features, dtype=np.float64)
    if features.ndim != 2:
        raise ValueError(f"features must be 2-D, got shape {features.shape}")
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    if np.any(norms == 0.0):
        raise ValueError("cannot scale an all-zero feature row to unit norm")
    return features / norms


def select_class_pair(
    features: np.ndarray, labels: np.ndarray, *, classes: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Keep the records of two classes, flattened, with label +1 for ``classes[0]``, -1 else."""
    first, second = classes
    if first == second:
        raise ValueError(f"classes must be two different labels, got {classes}")
    labels = np.asarray(labels).reshape(-1)
    features = np.asarray(features)
    if features.shape[0] != labels.shape[0]:
        raise ValueError(
            f"features and labels disagree on the number of records: "
            f"{features.shape[0]} vs {labels.shape[0]}"
        )
    keep = (labels == first) | (labels == second)
    if not np.any(labels[keep] == first) or not np.any(labels[keep] == second):
        raise ValueError(f"both classes {classes} must occur in the labels")
    flat = features[keep].reshape(int(keep.sum()), -1).astype(np.float64)
    return flat, np.where(labels[keep] == first, 1.0, -1.0)


def drop_to_multiple(dataset: Dataset, batch_size: int) -> Dataset:
    """Keep the first ``floor(n / b) * b`` training records.

    PNSGD partitions [n] into n/b batches of equal size b, so n must be a multiple of b. Like
    the paper (App. N.2, which drops points to reach a multiple of 512), we drop the tail of
    the training set; the test split is untouched.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    keep = (dataset.n // batch_size) * batch_size
    if keep == 0:
        raise ValueError(f"batch_size {batch_size} exceeds the number of records {dataset.n}")
    if keep == dataset.n:
        return dataset
    return Dataset(
        name=dataset.name,
        features=dataset.features[:keep],
        labels=dataset.labels[:keep],
        test_features=dataset.test_features,
        test_labels=dataset.test_labels,
        provenance=f"{dataset.provenance}; first {keep} of {dataset.n} records kept "
        f"(multiple of batch size {batch_size})",
    )


def _take_first(
    features: np.ndarray, labels: np.ndarray, count: int | None, *, what: str
) -> tuple[np.ndarray, np.ndarray]:
    if count is None:
        return features, labels
    if count < 1 or count > features.shape[0]:
        raise ValueError(f"{what} must be in [1, {features.shape[0]}], got {count}")
    return features[:count], labels[:count]


# ---------------------------------------------------------------------------------------------
# Embedded and synthetic datasets.

DIGITS_TRAIN_SIZE = 256


def _bundled_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits (features, target), read from its bundled ``digits.csv.gz`` the
    way ``load_digits`` reads it, without importing scikit-learn (its import alone holds tens
    of MB that an audit would keep to the end); ``load_digits`` where the file is elsewhere."""
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    locations = [] if spec is None else list(spec.submodule_search_locations or [])
    path = Path(locations[0]) / "datasets" / "data" / "digits.csv.gz" if locations else None
    if path is None or not path.is_file():
        from sklearn.datasets import load_digits

        bunch = load_digits()
        return bunch.data, bunch.target
    with gzip.open(path, mode="rt", encoding="utf-8") as text:
        table = np.loadtxt(text, delimiter=",")
    return table[:, :-1], table[:, -1].astype(int, copy=False)


def digits_3_vs_8() -> Dataset:
    """scikit-learn's bundled 8x8 digits, classes 3 (+1) vs 8 (-1), rows at unit l2 norm.

    The 357 records of the pair are split without randomness: the first 256 in scikit-learn's
    order train (256 is a multiple of every power-of-two batch size up to 256), the other 101
    test.
    """
    data, target = _bundled_digits()
    features, labels = select_class_pair(data, target, classes=(3, 8))
    features = unit_normalize(features)
    cut = DIGITS_TRAIN_SIZE
    return Dataset(
        name="digits-3-vs-8",
        features=features[:cut],
        labels=labels[:cut],
        test_features=features[cut:],
        test_labels=labels[cut:],
        provenance="sklearn.datasets.load_digits, classes 3 (+1) vs 8 (-1), rows scaled to unit "
        f"l2 norm; first {cut} records train, remaining {features.shape[0] - cut} test",
    )


BREAST_CANCER_TRAIN_SIZE = 512


def breast_cancer() -> Dataset:
    """scikit-learn's bundled breast-cancer set: malignant (+1) vs benign (-1).

    The 30 raw features span several orders of magnitude, so they are standardised with the
    training split's mean and standard deviation before rows are scaled to unit norm. The first
    512 records train, the other 57 test.
    """
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    features = np.asarray(bunch.data, dtype=np.float64)
    labels = np.where(bunch.target == 0, 1.0, -1.0)
    cut = BREAST_CANCER_TRAIN_SIZE
    mean = features[:cut].mean(axis=0)
    scale = features[:cut].std(axis=0)
    features = unit_normalize((features - mean) / scale)
    return Dataset(
        name="breast-cancer",
        features=features[:cut],
        labels=labels[:cut],
        test_features=features[cut:],
        test_labels=labels[cut:],
        provenance="sklearn.datasets.load_breast_cancer, malignant (+1) vs benign (-1), "
        "standardised with training statistics, rows scaled to unit l2 norm; "
        f"first {cut} records train, remaining {features.shape[0] - cut} test",
    )


def synthetic_gaussian(
    *, n: int, d: int, seed: int, n_test: int = 0, separation: float = 2.0
) -> Dataset:
    """Two Gaussian classes: label y uniform in {-1, +1}, x = y * mu + N(0, I_d), unit-normed.

    ``mu`` has norm ``separation / 2`` along the all-ones direction, so the class means are
    ``separation`` apart before normalisation.
    """
    if n < 1 or d < 1 or n_test < 0:
        raise ValueError(f"need n >= 1, d >= 1, n_test >= 0; got n={n}, d={d}, n_test={n_test}")
    if not np.isfinite(separation) or separation < 0:
        raise ValueError(f"separation must be finite and >= 0, got {separation}")
    rng = np.random.default_rng(seed)
    mean = np.full(d, separation / (2.0 * np.sqrt(d)))
    labels = rng.choice(np.array([-1.0, 1.0]), size=n + n_test)
    features = labels[:, None] * mean + rng.standard_normal((n + n_test, d))
    features = unit_normalize(features)
    return Dataset(
        name="synthetic-gaussian",
        features=features[:n],
        labels=labels[:n],
        test_features=features[n:],
        test_labels=labels[n:],
        provenance=f"synthetic Gaussian classes, n={n}, d={d}, n_test={n_test}, "
        f"separation={separation}, numpy seed {seed}; rows scaled to unit l2 norm",
    )


MNIST_SHAPE = {"n": 11264, "d": 784, "n_test": 1984}


def synthetic_mnist_shape(*, seed: int = 0) -> Dataset:
    """Synthetic Gaussian data of the MNIST 3-vs-8 experiment's shape (11264 x 784, 1984 test).

    For GPU-scale benchmarks when the real files are not at hand (seed 000, App. N.2 sizes).
    """
    base = synthetic_gaussian(seed=seed, **MNIST_SHAPE)
    return Dataset(
        name="synthetic-mnist-shape",
        features=base.features,
        labels=base.labels,
        test_features=base.test_features,
        test_labels=base.test_labels,
        provenance=base.provenance + " (shape of the MNIST 3-vs-8 experiment of seed 000)",
    )


# ---------------------------------------------------------------------------------------------
# File readers: MNIST (IDX or .npz) and CIFAR-10 (.npz or python pickle batches).

_IDX_DTYPES = {
    0x08: np.uint8,
    0x09: np.int8,
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def _open_maybe_gzip(path: Path):
    with open(path, "rb") as handle:
        magic = handle.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (the MNIST distribution format), optionally gzip-compressed."""
    path = Path(path)
    with _open_maybe_gzip(path) as handle:
        raw = handle.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    type_code, ndim = raw[2], raw[3]
    if type_code not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX element type 0x{type_code:02x}")
    header_end = 4 + 4 * ndim
    if len(raw) < header_end:
        raise ValueError(f"{path}: truncated IDX header")
    shape = struct.unpack(f">{ndim}I", raw[4:header_end])
    dtype = np.dtype(_IDX_DTYPES[type_code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header_end != expected:
        raise ValueError(
            f"{path}: IDX body has {len(raw) - header_end} bytes, header implies {expected}"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header_end).reshape(shape)


_MNIST_IDX_NAMES = {
    "x_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "x_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}


def _find_idx_file(directory: Path, stem: str) -> Path:
    for candidate in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem + ".idx"):
        if (directory / candidate).is_file():
            return directory / candidate
    raise ValueError(f"{directory} has no IDX file named {stem} (or {stem}.gz)")


def _read_npz_splits(path: Path) -> dict[str, np.ndarray]:
    keys = ("x_train", "y_train", "x_test", "y_test")
    arrays = read_npz(path, keys)  # headers checked before any data is inflated
    missing = set(keys) - set(arrays)
    if missing:
        raise ValueError(f"{path} lacks arrays {sorted(missing)}; expected x_train, "
                         "y_train, x_test, y_test")
    return arrays


def _class_pair_dataset(
    splits: dict[str, np.ndarray],
    *,
    name: str,
    classes: tuple[int, int],
    n_train: int | None,
    source: str,
) -> Dataset:
    features, labels = select_class_pair(splits["x_train"], splits["y_train"], classes=classes)
    test_features, test_labels = select_class_pair(
        splits["x_test"], splits["y_test"], classes=classes
    )
    if features.shape[1] != test_features.shape[1]:
        raise ValueError(
            f"train and test feature sizes differ: {features.shape[1]} vs {test_features.shape[1]}"
        )
    features, labels = _take_first(features, labels, n_train, what="n_train")
    return Dataset(
        name=name,
        features=unit_normalize(features),
        labels=labels,
        test_features=unit_normalize(test_features),
        test_labels=test_labels,
        provenance=f"{source}; classes {classes[0]} (+1) vs {classes[1]} (-1), flattened, rows "
        f"scaled to unit l2 norm; {features.shape[0]} train, {test_features.shape[0]} test",
    )


def load_mnist(
    path: str | Path, *, classes: tuple[int, int] = (3, 8), n_train: int | None = None
) -> Dataset:
    """MNIST class pair from a directory of IDX files or a ``.npz`` (x_train, y_train, ...).

    ``n_train`` keeps the first records of the pair (seed 000 keeps 11264 of the 3-vs-8 set).
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: not found")
    if path.is_dir():
        splits = {key: read_idx(_find_idx_file(path, stem))
                  for key, stem in _MNIST_IDX_NAMES.items()}
        source = f"MNIST IDX files in {path}"
    elif path.suffix == ".npz":  # a file that is not a zip is named as such (empirical.data.npz)
        splits = _read_npz_splits(path)
        source = f"MNIST arrays from {path}"
    else:
        raise ValueError(f"{path} is neither a directory of IDX files nor a .npz file")
    return _class_pair_dataset(splits, name="mnist", classes=classes, n_train=n_train,
                               source=source)


# The only globals a CIFAR-10 python batch refers to: a dict of lists, bytes and numpy arrays.
# numpy 1.x wrote its array constructor under numpy.core, numpy 2 under numpy._core; Python 3
# writes bytes at protocol 2 as _codecs.encode(text, "latin1") (a codec lookup, no code of the
# file's choosing).
_CIFAR_PICKLE_GLOBALS = {
    ("_codecs", "encode"): ("_codecs", "encode"),
    ("numpy.core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"): ("numpy", "ndarray"),
    ("numpy", "dtype"): ("numpy", "dtype"),
}


class _CifarBatchUnpickler(pickle.Unpickler):
    """Unpickles a CIFAR-10 batch and nothing else: any other global (the way a pickle runs
    code) is refused before it is looked up, so an untrusted file cannot execute anything."""

    def find_class(self, module: str, name: str) -> Any:
        allowed = _CIFAR_PICKLE_GLOBALS.get((module, name))
        if allowed is None:
            raise pickle.UnpicklingError(
                f"refers to {module}.{name}; a CIFAR-10 batch holds only dicts, lists, bytes and "
                "numpy arrays, so the file is refused (nothing in it was run)")
        return super().find_class(*allowed)


def _read_cifar_pickle(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as handle:
        try:
            batch = _CifarBatchUnpickler(handle, encoding="bytes").load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as error:
            raise ValueError(f"{path} is not a CIFAR-10 python batch: {error}") from None
    if not isinstance(batch, dict):
        raise ValueError(f"{path} is not a CIFAR-10 python batch (not a dict)")
    data = batch.get(b"data", batch.get("data"))
    labels = batch.get(b"labels", batch.get("labels"))
    if data is None or labels is None:
        raise ValueError(f"{path} is not a CIFAR-10 python batch (no data/labels entries)")
    return np.asarray(data), np.asarray(labels)


def load_cifar10(
    path: str | Path, *, classes: tuple[int, int] = (3, 8), n_train: int | None = None
) -> Dataset:
    """CIFAR-10 class pair (default cat 3 vs ship 8) from a ``.npz`` or the python batches.

    ``path`` is either a ``.npz`` with x_train, y_train, x_test, y_test (raw pixels or any
    precomputed features, e.g. the ResNet-18 embeddings seed 000 uses), or the extracted
    ``cifar-10-batches-py`` directory (data_batch_1..5, test_batch; unpickled with only numpy's
    array constructor allowed, so a file that would run code is refused). Raw pixels are used
    as given; seed 000's ResNet-18 features are not computed here.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: not found")
    if path.is_dir():
        batch_files = sorted(path.glob("data_batch_*"))
        if not batch_files or not (path / "test_batch").is_file():
            raise ValueError(f"{path} lacks data_batch_* and test_batch files")
        parts = [_read_cifar_pickle(batch_file) for batch_file in batch_files]
        test_x, test_y = _read_cifar_pickle(path / "test_batch")
        splits = {
            "x_train": np.concatenate([x for x, _ in parts]),
            "y_train": np.concatenate([y for _, y in parts]),
            "x_test": test_x,
            "y_test": test_y,
        }
        source = f"CIFAR-10 python batches in {path}"
    elif path.suffix == ".npz":  # a file that is not a zip is named as such (empirical.data.npz)
        splits = _read_npz_splits(path)
        source = f"CIFAR-10 arrays from {path}"
    else:
        raise ValueError(f"{path} is neither a CIFAR-10 batch directory nor a .npz file")
    return _class_pair_dataset(splits, name="cifar10", classes=classes, n_train=n_train,
                               source=source)


ARRAY_TEST_FRACTION = 5  # without X_test and y_test, the last ceil(n / 5) records are the test split


def _label_text(value: Any) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def _user_split(archive: Mapping[str, np.ndarray], path: Path, x_key: str, y_key: str,
                classes: tuple[Any, Any]) -> tuple[np.ndarray, np.ndarray]:
    """X as float64 [n, d] and y mapped to +1 (``classes[0]``) / -1 (``classes[1]``), checked."""
    features, labels = np.asarray(archive[x_key]), np.asarray(archive[y_key])
    if features.ndim != 2 or 0 in features.shape:
        raise ValueError(f"{path}: {x_key} must be a non-empty [n, d] array (one row per record), "
                         f"got shape {features.shape}")
    if labels.ndim != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError(f"{path}: {y_key} must be a [n] array with one label per row of "
                         f"{x_key} (n = {features.shape[0]}), got shape {labels.shape}")
    if features.dtype.kind not in "biuf":
        raise ValueError(f"{path}: {x_key} must hold numbers, got dtype {features.dtype}")
    features = features.astype(np.float64)
    bad_rows = np.flatnonzero(~np.all(np.isfinite(features), axis=1))
    if bad_rows.size:
        raise ValueError(f"{path}: {x_key} has NaN or infinite values in {bad_rows.size} row(s), "
                         f"the first at row {int(bad_rows[0])}")
    if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
        raise ValueError(f"{path}: {y_key} has NaN or infinite labels")
    first, second = classes
    outside = np.flatnonzero((labels != first) & (labels != second))
    if outside.size:
        seen = sorted({_label_text(v) for v in labels[outside][:1000]})[:5]
        raise ValueError(f"{path}: {y_key} has {outside.size} label(s) outside the stated pair "
                         f"({first!r}, {second!r}), e.g. {', '.join(seen)} (first at row "
                         f"{int(outside[0])}); keep only the pair's rows, or state the pair")
    return features, np.where(labels == first, 1.0, -1.0)


def load_arrays(path: str | Path, *, classes: tuple[Any, Any], n_train: int | None = None) -> Dataset:
    """Users' own binary task from a ``.npz`` file (``numpy.savez``; read without pickle).

    Arrays: ``X`` [n, d] numbers and ``y`` [n] labels, and optionally ``X_test`` [m, d] and
    ``y_test`` [m]. ``classes`` states the label pair: ``classes[0]`` becomes +1 and
    ``classes[1]`` -1; any other label, a NaN or infinite value, or a wrong shape is refused
    with the array and row named. Without a test split the last ceil(n / 5) records of X are
    held out as one (said in the provenance). Rows are scaled to unit l2 norm, as the other
    loaders do (the certificates assume ||x|| <= 1); ``n_train`` keeps the first records.
    Every array's declared shape and dtype are checked before its data is inflated
    (:mod:`empirical.data.npz`: a zip bomb or an object array is refused, naming file and array).
    """
    path = Path(path)
    if len(classes) != 2 or classes[0] == classes[1]:
        raise ValueError(f"classes must be two different labels, got {classes!r}")
    # every array's header is checked before any data is inflated (empirical.data.npz)
    files = set(npz_arrays(path))
    missing = {"X", "y"} - files
    if missing:
        raise ValueError(f"{path} lacks array(s) {', '.join(sorted(missing))}; expected X and "
                         f"y (and optionally X_test, y_test), found {sorted(files) or 'none'}")
    if ("X_test" in files) != ("y_test" in files):
        raise ValueError(f"{path} has only one of X_test and y_test: give both or neither")
    archive = read_npz(path, ("X", "y", "X_test", "y_test"))
    features, labels = _user_split(archive, path, "X", "y", classes)
    if "X_test" in files:
        test_features, test_labels = _user_split(archive, path, "X_test", "y_test", classes)
        held_out = f"test split X_test, y_test ({test_features.shape[0]} records)"
    else:
        n_test = -(-features.shape[0] // ARRAY_TEST_FRACTION)
        if features.shape[0] - n_test < 1:
            raise ValueError(f"{path}: X has {features.shape[0]} record(s), too few to hold "
                             "out a test split; add X_test and y_test")
        test_features, test_labels = features[-n_test:], labels[-n_test:]
        features, labels = features[:-n_test], labels[:-n_test]
        held_out = f"no X_test: the last {n_test} records of X held out as the test split"
    del archive
    if test_features.shape[1] != features.shape[1]:
        raise ValueError(f"{path}: X has {features.shape[1]} features per row, X_test "
                         f"{test_features.shape[1]}")
    if not (np.any(labels == 1.0) and np.any(labels == -1.0)):
        raise ValueError(f"{path}: y must contain both labels of the pair {classes!r} in the "
                         "training records")
    features, labels = _take_first(features, labels, n_train, what="n_train")
    return Dataset(
        name="npz",
        features=unit_normalize(features),
        labels=labels,
        test_features=unit_normalize(test_features),
        test_labels=test_labels,
        provenance=f"arrays X, y from {path}; label {classes[0]!r} (+1) vs {classes[1]!r} (-1); "
        f"{held_out}; rows scaled to unit l2 norm; {features.shape[0]} train, "
        f"{test_features.shape[0]} test",
    )


# ---------------------------------------------------------------------------------------------
# Registry.

_NO_PATH_LOADERS: dict[str, Callable[..., Dataset]] = {
    "digits": digits_3_vs_8,
    "digits-3-vs-8": digits_3_vs_8,
    "breast-cancer": breast_cancer,
    "synthetic-gaussian": synthetic_gaussian,
    "synthetic-mnist-shape": synthetic_mnist_shape,
}
_PATH_LOADERS: dict[str, Callable[..., Dataset]] = {
    "mnist": load_mnist,
    "cifar10": load_cifar10,
    "npz": load_arrays,
}


def dataset_names() -> tuple[str, ...]:
    """Names accepted by :func:`load_dataset`."""
    return tuple(sorted({**_NO_PATH_LOADERS, **_PATH_LOADERS}))


def load_dataset(name: str, *, path: str | Path | None = None, **options: Any) -> Dataset:
    """Load a dataset by name; ``mnist``, ``cifar10`` and ``npz`` need ``path``, the others
    refuse it."""
    if name in _PATH_LOADERS:
        if path is None:
            raise ValueError(f"dataset {name!r} is read from a user-supplied file: pass path=")
        return _PATH_LOADERS[name](path, **options)
    if name in _NO_PATH_LOADERS:
        if path is not None:
            raise ValueError(f"dataset {name!r} is built in and takes no path")
        return _NO_PATH_LOADERS[name](**options)
    raise ValueError(f"unknown dataset {name!r}; known: {', '.join(dataset_names())}")
