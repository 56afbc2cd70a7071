"""Untrusted ``.npz`` files: every array's declared shape and dtype are checked before any data
is inflated, and a file that is not an npz is called what it is (never advice to unpickle)."""

from __future__ import annotations

import io
import os
import time
import tracemalloc
import zipfile

import numpy as np
import numpy.lib.format as npformat
import pytest

from empirical.data.datasets import load_arrays, load_mnist
from empirical.data.npz import MAX_RATIO, npz_arrays, read_npz


def _bomb(path, rows: int, cols: int = 1000) -> None:
    """A savez_compressed-like file whose X is all zeros: about 1000:1 under zlib."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("X.npy", "w", force_zip64=True) as fp:
            npformat.write_array_header_1_0(
                fp, {"descr": "<f8", "fortran_order": False, "shape": (rows, cols)})
            block = bytes(8 * cols * 100)
            for _ in range(rows // 100):
                fp.write(block)
        buffer = io.BytesIO()
        np.save(buffer, np.arange(rows) % 2)
        archive.writestr("y.npy", buffer.getvalue())


def test_a_zip_bomb_is_refused_from_its_header_fast_and_small_naming_file_and_array(tmp_path):
    path = tmp_path / "bomb.npz"
    _bomb(path, rows=4000)  # 32 MB of zeros in about 32 kB
    declared = 4000 * 1000 * 8
    assert declared > MAX_RATIO * os.path.getsize(path)
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(ValueError) as refused:
        load_arrays(path, classes=(1, 0))
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    message = str(refused.value)
    assert str(path) in message and "array 'X'" in message and "(4000, 1000)" in message
    assert seconds < 2 and peak < declared / 10, (seconds, peak)


def test_real_compressed_data_of_the_same_size_is_read(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(4000, 100)), np.arange(4000) % 2
    np.savez_compressed(tmp_path / "real.npz", X=X, y=y)
    data = load_arrays(tmp_path / "real.npz", classes=(1, 0))
    assert data.n + data.n_test == 4000
    arrays = read_npz(tmp_path / "real.npz")
    assert np.array_equal(arrays["X"], X) and np.array_equal(arrays["y"], y)


def test_a_header_declaring_more_than_its_entry_holds_is_refused_unread(tmp_path):
    path = tmp_path / "liar.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        with archive.open("X.npy", "w") as fp:
            npformat.write_array_header_1_0(
                fp, {"descr": "<f8", "fortran_order": False, "shape": (10**9, 10)})
            fp.write(bytes(80))
    with pytest.raises(ValueError, match=r"liar.npz: array 'X' declares shape \(1000000000, 10\)"
                                         r".*zip entry holds"):
        npz_arrays(path)


def test_the_total_declared_size_has_a_ceiling(tmp_path):
    np.savez(tmp_path / "big.npz", X=np.zeros((100, 100)), y=np.zeros(100))
    with pytest.raises(ValueError, match=r"big.npz: its arrays declare .*array 'X'"):
        read_npz(tmp_path / "big.npz", max_bytes=50_000)


def test_object_arrays_are_refused_without_unpickling(tmp_path):
    np.savez(tmp_path / "objects.npz", X=np.array([{"a": 1}, None], dtype=object), y=np.ones(2))
    with pytest.raises(ValueError, match=r"objects.npz: array 'X' has dtype object") as refused:
        load_arrays(tmp_path / "objects.npz", classes=(1, 0))
    assert "allow_pickle" not in str(refused.value)


@pytest.mark.parametrize("kind", ["text", "link", "missing", "folder", "plain-zip"])
def test_what_is_not_an_npz_is_called_so_never_advice_to_unpickle(tmp_path, kind):
    path = tmp_path / "data.npz"
    expected = {"text": "not a zip/npz file", "link": "not a zip/npz file",
                "missing": "not found", "folder": "is a folder",
                "plain-zip": "zip file without .npy arrays"}[kind]
    if kind == "text":
        path.write_text("x,y\n1,2\n")
    elif kind == "link":
        path.symlink_to(os.__file__)  # a system file, not an archive
    elif kind == "folder":
        path.mkdir()
    elif kind == "plain-zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("notes.txt", "hello")
    loaders = [lambda p: load_arrays(p, classes=(1, 0)), read_npz]
    for load in loaders + ([] if kind == "folder" else [load_mnist]):  # a folder of IDX files
        with pytest.raises(ValueError) as refused:
            load(path)
        message = str(refused.value)
        assert str(path) in message and expected in message, message
        assert "pickle" not in message


def test_a_zip_directory_claiming_more_compressed_bytes_than_the_file_holds_is_refused(tmp_path):
    import struct

    buffer = io.BytesIO()
    np.savez_compressed(buffer, X=np.zeros((2000, 1000)))  # 16 MB of zeros, about 1000:1
    data = bytearray(buffer.getvalue())
    entry = data.rfind(b"PK\x01\x02")  # the central directory's record of X.npy
    struct.pack_into("<I", data, entry + 20, 10**9)  # a compressed size the ratio check passes
    path = tmp_path / "forged.npz"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"forged.npz: array 'X': its zip entry claims more bytes"):
        read_npz(path)
