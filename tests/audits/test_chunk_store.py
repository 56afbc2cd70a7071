"""The SQLite chunk store: exact round trips, keys, atomic chunks, the compute log."""

from __future__ import annotations

import sqlite3
import zlib

import numpy as np
import pytest

from audits.folders import ForeignFolderError, claim_folder
from audits.store import (
    STORE_NAME,
    ChunkStore,
    CorruptChunkError,
    StoreError,
    array_from_bytes,
    array_to_bytes,
    count_stored_chunks,
)


def _store(tmp_path, key="k1"):
    return ChunkStore(tmp_path / STORE_NAME, audit_key=key, spec_json="{}", code_version="v")


def test_arrays_round_trip_bit_exactly():
    rng = np.random.default_rng(0)
    for array in (rng.standard_normal((5, 3)), np.arange(7, dtype=np.int64),
                  rng.standard_normal(4).astype(np.float32), np.array([np.nextafter(1.0, 2.0)])):
        back = array_from_bytes(array_to_bytes(array))
        assert back.dtype == array.dtype and back.shape == array.shape
        assert back.tobytes() == array.tobytes()


def test_put_get_finished_and_counts(tmp_path):
    arrays = {"scores": np.linspace(0, 1, 4), "params": np.ones((4, 2))}
    with _store(tmp_path) as store:
        assert store.finished() == set()
        store.put(phase="audit", chunk=1, first_trial=4, n_trials=4, seed=9, arrays=arrays)
        store.put(phase="pilot", chunk=0, first_trial=0, n_trials=4, seed=3, arrays=arrays)
        assert store.finished() == {("audit", 1), ("pilot", 0)}
        assert store.finished("audit") == {("audit", 1)}
        record = store.get("audit", 1)
        assert (record.first_trial, record.n_trials, record.seed) == (4, 4, 9)
        assert set(record.arrays) == {"scores", "params"}
        np.testing.assert_array_equal(record.arrays["params"], arrays["params"])
        assert [r.chunk for r in store.records("audit")] == [1]
        assert store.compute_counts() == {("audit", 1): 1, ("pilot", 0): 1}
        with pytest.raises(ValueError, match="already stored"):
            store.put(phase="audit", chunk=1, first_trial=4, n_trials=4, seed=9, arrays=arrays)
        with pytest.raises(KeyError):
            store.get("audit", 0)
    # Persisted across connections.
    with _store(tmp_path) as store:
        assert store.finished() == {("audit", 1), ("pilot", 0)}
    assert count_stored_chunks(tmp_path / STORE_NAME) == 2


def test_keys_do_not_mix(tmp_path):
    arrays = {"x": np.zeros(2)}
    with _store(tmp_path, "a") as a:
        a.put(phase="audit", chunk=0, first_trial=0, n_trials=2, seed=0, arrays=arrays)
    with _store(tmp_path, "b") as b:
        assert b.finished() == set()
        b.put(phase="audit", chunk=0, first_trial=0, n_trials=2, seed=1, arrays=arrays)
        assert b.get("audit", 0).seed == 1
        assert b.audit_keys() == ["a", "b"]
    with _store(tmp_path, "a") as a:
        assert a.get("audit", 0).seed == 0
        assert a.compute_counts() == {("audit", 0): 1}


def test_a_failing_chunk_leaves_nothing(tmp_path):
    with _store(tmp_path) as store:
        bad = {"good": np.zeros(3), "bad": np.array([object()] * 3, dtype=object)}
        with pytest.raises(ValueError):  # np.save refuses object arrays without pickle
            store.put(phase="audit", chunk=0, first_trial=0, n_trials=3, seed=0, arrays=bad)
        assert store.finished() == set()
        assert store.compute_counts() == {}
        with pytest.raises(ValueError, match="leading size"):
            store.put(phase="audit", chunk=0, first_trial=0, n_trials=3, seed=0,
                      arrays={"x": np.zeros(2)})
        assert store.finished() == set()


def test_count_stored_chunks_is_read_only(tmp_path):
    path = tmp_path / STORE_NAME
    assert count_stored_chunks(path) == 0
    assert not path.exists()
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=1, seed=0,
                  arrays={"x": np.zeros(1)})
        # A reader sees the committed chunk while the writer's connection is still open.
        assert count_stored_chunks(path) == 1


def test_schema_version_mismatch_is_reported(tmp_path):
    with _store(tmp_path):
        pass
    conn = sqlite3.connect(tmp_path / STORE_NAME)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="chunk-store schema 99"):
        _store(tmp_path)


def _flip(path, *, name, chunk=0):
    """Flip a bit of the last value of a stored array, written back as plain ``np.save`` bytes
    (which the store reads as well as its compressed blobs)."""
    conn = sqlite3.connect(path)
    (data,) = conn.execute("SELECT data FROM arrays WHERE chunk = ? AND name = ?",
                           (chunk, name)).fetchone()
    if not data.startswith(b"\x93NUMPY"):
        data = zlib.decompress(data)
    conn.execute("UPDATE arrays SET data = ? WHERE chunk = ? AND name = ?",
                 (data[:-1] + bytes([data[-1] ^ 0x80]), chunk, name))
    conn.commit()
    conn.close()


def test_every_read_checks_the_blob_checksum(tmp_path):
    arrays = {"scores": np.linspace(0, 1, 4), "params": np.ones((4, 2))}
    with _store(tmp_path) as store:
        store.put(phase="audit", chunk=0, first_trial=0, n_trials=4, seed=1, arrays=arrays)
        store.put(phase="audit", chunk=1, first_trial=4, n_trials=4, seed=1, arrays=arrays)
    _flip(tmp_path / STORE_NAME, name="scores", chunk=1)
    # The flipped byte is in the last float: np.load would read it without complaint.
    raw = sqlite3.connect(tmp_path / STORE_NAME).execute(
        "SELECT data FROM arrays WHERE chunk = 1 AND name = 'scores'").fetchone()[0]
    assert array_from_bytes(raw)[-1] != 1.0
    with _store(tmp_path) as store:
        np.testing.assert_array_equal(store.get("audit", 0).arrays["scores"], arrays["scores"])
        with pytest.raises(CorruptChunkError, match=r"audit/1 \(array 'scores'\)") as info:
            store.get("audit", 1)
        assert info.value.bad == [("audit", 1, "array 'scores'")]
        assert store.verify() == [("audit", 1, "array 'scores'")]
        store.drop({("audit", 1)})
        assert store.verify() == [] and store.finished() == {("audit", 0)}


def test_a_file_that_is_not_a_store_is_one_clear_error(tmp_path):
    # In the toolkit's own folder (its marker written) a broken store is named as such.
    claim_folder(tmp_path)
    (tmp_path / STORE_NAME).write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(StoreError, match="cannot use the chunk store"):
        _store(tmp_path)


def test_a_store_file_in_a_folder_the_toolkit_did_not_mark_is_left_alone(tmp_path):
    (tmp_path / STORE_NAME).write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(ForeignFolderError, match="not marked"):
        _store(tmp_path)
    assert (tmp_path / STORE_NAME).read_bytes() == b"this is not SQLite" * 100


def test_other_specs_and_replacing_them(tmp_path):
    arrays = {"x": np.zeros(2)}
    with ChunkStore(tmp_path / STORE_NAME, audit_key="a", spec_json='{"seed": 1}',
                    code_version="v1") as a:
        a.put(phase="audit", chunk=0, first_trial=0, n_trials=2, seed=0, arrays=arrays)
    # Same spec under another code version is not another spec (the key keeps them apart).
    with ChunkStore(tmp_path / STORE_NAME, audit_key="a2", spec_json='{"seed": 1}',
                    code_version="v2") as same:
        assert same.other_specs() == []
        same.put(phase="audit", chunk=0, first_trial=0, n_trials=2, seed=0, arrays=arrays)
    # An audit that computed nothing (e.g. refused) does not make its spec's folder "other".
    with ChunkStore(tmp_path / STORE_NAME, audit_key="c", spec_json='{"seed": 3}',
                    code_version="v1"):
        pass
    with ChunkStore(tmp_path / STORE_NAME, audit_key="b", spec_json='{"seed": 2}',
                    code_version="v1") as b:
        assert b.other_specs() == ["a", "a2"]
        b.drop_other_audits()
        assert b.other_specs() == [] and b.audit_keys() == ["b"]
    assert count_stored_chunks(tmp_path / STORE_NAME) == 0


def test_a_locked_store_is_one_clear_error(tmp_path):
    with _store(tmp_path):
        pass
    holder = sqlite3.connect(tmp_path / STORE_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked"):
            ChunkStore(tmp_path / STORE_NAME, audit_key="k1", spec_json="{}", code_version="v",
                       timeout=0.1)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
