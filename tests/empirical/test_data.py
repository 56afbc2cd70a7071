"""Datasets, file loaders (on tiny files written here) and unlearning requests."""

from __future__ import annotations

import gzip
import pickle
import struct

import numpy as np
import pytest

from empirical.data.datasets import (
    Dataset,
    breast_cancer,
    dataset_names,
    digits_3_vs_8,
    drop_to_multiple,
    load_cifar10,
    load_dataset,
    load_mnist,
    read_idx,
    select_class_pair,
    synthetic_gaussian,
    synthetic_mnist_shape,
    unit_normalize,
)
from empirical.data.requests import (
    RequestSequence,
    UnlearningRequest,
    apply_request,
    random_replacement_request,
    random_request_sequence,
    removal_request,
    replacement_request,
)


def _tiny(n: int = 6, d: int = 3) -> Dataset:
    features = unit_normalize(np.arange(1, n * d + 1, dtype=float).reshape(n, d))
    labels = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return Dataset("tiny", features, labels, features[:2], labels[:2], "hand-made")


# ------------------------------------------------------------------------------------------
# Dataset container and preprocessing.


def test_dataset_is_read_only_and_validated():
    data = _tiny()
    assert (data.n, data.dim, data.n_test) == (6, 3, 2)
    with pytest.raises(ValueError):
        data.features[0, 0] = 5.0
    with pytest.raises(ValueError, match="labels must contain only -1 and \\+1"):
        Dataset("bad", np.ones((2, 2)), np.array([0.0, 1.0]), np.ones((0, 2)), [], "x")
    with pytest.raises(ValueError, match="labels must have shape"):
        Dataset("bad", np.ones((2, 2)), np.array([1.0]), np.ones((0, 2)), [], "x")
    with pytest.raises(ValueError, match="test_features must be"):
        Dataset("bad", np.ones((2, 2)), np.ones(2), np.ones((1, 3)), np.ones(1), "x")
    with pytest.raises(ValueError, match="finite"):
        Dataset("bad", np.array([[np.nan, 1.0]]), np.ones(1), np.ones((0, 2)), [], "x")


def test_unit_normalize_and_class_pair():
    rows = unit_normalize(np.array([[3.0, 4.0], [0.0, 2.0]]))
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.0, 1.0]])
    with pytest.raises(ValueError, match="all-zero"):
        unit_normalize(np.zeros((1, 2)))
    images = np.arange(5 * 4).reshape(5, 2, 2)
    features, labels = select_class_pair(images, np.array([3, 1, 8, 3, 2]), classes=(3, 8))
    np.testing.assert_array_equal(labels, [1.0, -1.0, 1.0])
    np.testing.assert_array_equal(features[1], [8, 9, 10, 11])
    with pytest.raises(ValueError, match="both classes"):
        select_class_pair(images, np.array([3, 3, 3, 3, 3]), classes=(3, 8))


def test_drop_to_multiple_keeps_the_head():
    data = _tiny(n=7)
    kept = drop_to_multiple(data, 3)
    assert kept.n == 6
    np.testing.assert_array_equal(kept.features, data.features[:6])
    assert "first 6 of 7" in kept.provenance
    assert drop_to_multiple(kept, 3) is kept
    with pytest.raises(ValueError, match="exceeds"):
        drop_to_multiple(data, 8)


# ------------------------------------------------------------------------------------------
# Embedded and synthetic data.


def test_digits_3_vs_8():
    data = digits_3_vs_8()
    assert (data.n, data.dim, data.n_test) == (256, 64, 101)
    np.testing.assert_allclose(np.linalg.norm(data.features, axis=1), 1.0)
    np.testing.assert_allclose(np.linalg.norm(data.test_features, axis=1), 1.0)
    # Class counts of scikit-learn's digits, 3 vs 8, first 256 / last 101 in its order.
    assert int((data.labels == 1).sum()) == 131 and int((data.test_labels == 1).sum()) == 52
    assert "load_digits" in data.provenance


def test_breast_cancer():
    data = breast_cancer()
    assert (data.n, data.dim, data.n_test) == (512, 30, 57)
    np.testing.assert_allclose(np.linalg.norm(data.features, axis=1), 1.0)
    assert set(np.unique(data.labels)) == {-1.0, 1.0}


def test_synthetic_gaussian_is_reproducible():
    a = synthetic_gaussian(n=40, d=5, seed=3, n_test=10)
    b = synthetic_gaussian(n=40, d=5, seed=3, n_test=10)
    c = synthetic_gaussian(n=40, d=5, seed=4, n_test=10)
    np.testing.assert_array_equal(a.features, b.features)
    assert not np.array_equal(a.features, c.features)
    assert (a.n, a.dim, a.n_test) == (40, 5, 10)
    np.testing.assert_allclose(np.linalg.norm(a.features, axis=1), 1.0)
    with pytest.raises(ValueError):
        synthetic_gaussian(n=0, d=5, seed=0)


def test_synthetic_mnist_shape():
    data = synthetic_mnist_shape(seed=0)
    assert (data.n, data.dim, data.n_test) == (11264, 784, 1984)
    assert data.n % 512 == 0


# ------------------------------------------------------------------------------------------
# MNIST / CIFAR-10 readers on files written by the tests.


def _idx_bytes(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def _mnist_like(seed: int):
    rng = np.random.default_rng(seed)
    x_train = rng.integers(1, 256, size=(12, 4, 4))
    y_train = np.array([3, 8, 1, 3, 8, 3, 0, 8, 3, 8, 3, 8])
    x_test = rng.integers(1, 256, size=(5, 4, 4))
    y_test = np.array([8, 3, 5, 3, 8])
    return x_train, y_train, x_test, y_test


def test_load_mnist_from_idx_files(tmp_path):
    x_train, y_train, x_test, y_test = _mnist_like(0)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(_idx_bytes(x_train))
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(_idx_bytes(y_train)))
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(_idx_bytes(x_test))
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(_idx_bytes(y_test))
    data = load_mnist(tmp_path)
    keep = np.isin(y_train, (3, 8))
    assert (data.n, data.dim, data.n_test) == (int(keep.sum()), 16, 4)
    expected = x_train[keep].reshape(-1, 16).astype(float)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(data.features, expected)
    np.testing.assert_array_equal(data.labels, np.where(y_train[keep] == 3, 1.0, -1.0))
    assert load_mnist(tmp_path, n_train=4).n == 4
    assert load_mnist(tmp_path, classes=(8, 3)).labels[0] == -1.0


def test_load_mnist_from_npz(tmp_path):
    x_train, y_train, x_test, y_test = _mnist_like(1)
    path = tmp_path / "mnist.npz"
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    data = load_dataset("mnist", path=path)
    assert data.n == int(np.isin(y_train, (3, 8)).sum())
    np.testing.assert_allclose(np.linalg.norm(data.features, axis=1), 1.0)
    np.savez(tmp_path / "partial.npz", x_train=x_train)
    with pytest.raises(ValueError, match="lacks arrays"):
        load_mnist(tmp_path / "partial.npz")


def test_read_idx_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x01\x02\x08\x01")
    with pytest.raises(ValueError, match="magic"):
        read_idx(bad)
    short = tmp_path / "short"
    short.write_bytes(_idx_bytes(np.arange(6).reshape(2, 3))[:-1])
    with pytest.raises(ValueError, match="body has"):
        read_idx(short)
    with pytest.raises(ValueError, match="no IDX file"):
        load_mnist(tmp_path)


class _RunsCodeWhenUnpickled:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))  # unpickling would create the marker file


@pytest.mark.parametrize("payload", ["in_the_batch", "as_the_batch"])
def test_a_cifar_batch_that_would_run_code_is_refused_without_running_it(tmp_path, payload):
    marker = tmp_path / "ran"
    evil = _RunsCodeWhenUnpickled(marker)
    batch = ({b"data": np.zeros((2, 48), np.uint8), b"labels": [3, 8], b"extra": evil}
             if payload == "in_the_batch" else evil)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in ("data_batch_1", "test_batch"):
        with open(folder / name, "wb") as handle:
            pickle.dump(batch, handle, protocol=2)
    with pytest.raises(ValueError, match=r"io\.open; .* refused \(nothing in it was run\)"):
        load_cifar10(folder)
    assert not marker.exists()


def test_a_cifar_batch_written_by_numpy_1_under_python_2_is_read(tmp_path):
    # Python 2's cPickle (protocol 2) names numpy 1's array constructor numpy.core.multiarray.
    data = np.arange(96, dtype=np.uint8).reshape(2, 48)
    raw = pickle.dumps({b"data": data, b"labels": [3, 8]}, protocol=2)
    old = raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert old != raw
    folder = tmp_path / "batches"
    folder.mkdir()
    for name in ("data_batch_1", "test_batch"):
        (folder / name).write_bytes(old)
    loaded = load_cifar10(folder)
    assert loaded.n + loaded.n_test == 4 and loaded.dim == 48


def test_load_cifar10_from_pickle_batches_and_npz(tmp_path):
    rng = np.random.default_rng(2)
    batches = []
    for index in (1, 2):
        data = rng.integers(1, 256, size=(6, 3 * 4 * 4), dtype=np.uint8)
        labels = [3, 8, 0, 3, 8, 1]
        batches.append((data, labels))
        with open(tmp_path / f"data_batch_{index}", "wb") as handle:
            pickle.dump({b"data": data, b"labels": labels}, handle)
    test = rng.integers(1, 256, size=(4, 48), dtype=np.uint8)
    with open(tmp_path / "test_batch", "wb") as handle:
        pickle.dump({b"data": test, b"labels": [8, 8, 3, 2]}, handle)
    data = load_cifar10(tmp_path)
    assert (data.n, data.dim, data.n_test) == (8, 48, 3)
    first = batches[0][0][0].astype(float)
    np.testing.assert_allclose(data.features[0], first / np.linalg.norm(first))
    np.testing.assert_array_equal(data.test_labels, [-1.0, -1.0, 1.0])

    npz = tmp_path / "cifar.npz"
    np.savez(npz, x_train=batches[0][0], y_train=np.array(batches[0][1]), x_test=test,
             y_test=np.array([8, 8, 3, 2]))
    assert load_dataset("cifar10", path=npz).n == 4


def test_load_dataset_registry():
    assert {"digits", "breast-cancer", "synthetic-mnist-shape", "mnist", "cifar10"} <= set(
        dataset_names()
    )
    assert load_dataset("digits").n == 256
    assert load_dataset("synthetic-gaussian", n=8, d=2, seed=0).n == 8
    with pytest.raises(ValueError, match="pass path="):
        load_dataset("mnist")
    with pytest.raises(ValueError, match="takes no path"):
        load_dataset("digits", path="somewhere")
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("imagenet")


# ------------------------------------------------------------------------------------------
# Requests.


def test_replacement_request_draws_unit_gaussian_features():
    data = _tiny(n=6, d=3)
    request = replacement_request(data, [1, 4], seed=5)
    again = replacement_request(data, [1, 4], seed=5)
    np.testing.assert_array_equal(request.replacement_features, again.replacement_features)
    np.testing.assert_allclose(np.linalg.norm(request.replacement_features, axis=1), 1.0)
    assert set(request.replacement_labels) <= {-1.0, 1.0}
    assert request.size == 2 and not request.is_removal

    updated = apply_request(data, request)
    assert updated.n == data.n
    np.testing.assert_array_equal(updated.features[[1, 4]], request.replacement_features)
    np.testing.assert_array_equal(updated.features[[0, 2, 3, 5]], data.features[[0, 2, 3, 5]])
    np.testing.assert_array_equal(updated.labels[[1, 4]], request.replacement_labels)


def test_removal_and_sequences():
    data = _tiny(n=6, d=3)
    removed = apply_request(data, removal_request(2))
    assert removed.n == 5
    np.testing.assert_array_equal(removed.features, data.features[[0, 1, 3, 4, 5]])

    sequence = RequestSequence((replacement_request(data, 0, seed=1), removal_request([3, 5])))
    assert sequence.forget_indices == (0, 3, 5) and len(sequence) == 2
    final = apply_request(data, sequence)
    assert final.n == 4
    np.testing.assert_array_equal(final.features[0], sequence.requests[0].replacement_features[0])
    np.testing.assert_array_equal(final.features[1:], data.features[[1, 2, 4]])

    random_sequence = random_request_sequence(data, length=3, size=2, seed=0)
    assert sorted(random_sequence.forget_indices) == list(range(6))
    single = random_replacement_request(data, size=2, seed=0)
    assert single.size == 2 and max(single.indices) < 6


def test_request_validation():
    data = _tiny(n=6, d=3)
    with pytest.raises(ValueError, match="distinct"):
        removal_request([1, 1])
    with pytest.raises(ValueError, match="at least one"):
        removal_request([])
    with pytest.raises(ValueError, match="out of range"):
        apply_request(data, removal_request(6))
    with pytest.raises(ValueError, match="dimension"):
        apply_request(data, UnlearningRequest((0,), np.ones((1, 2)), np.ones(1)))
    with pytest.raises(ValueError, match="both"):
        UnlearningRequest((0,), np.ones((1, 3)), None)
    with pytest.raises(ValueError, match="at most one request"):
        RequestSequence((removal_request(1), removal_request([2, 1])))
    with pytest.raises(ValueError, match="every record"):
        apply_request(data, removal_request(range(6)))
    with pytest.raises(ValueError):
        random_request_sequence(data, length=4, size=2, seed=0)
