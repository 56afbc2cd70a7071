"""The SQLite chunk store: exact round trips, keys, atomic chunks, the compute log."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from audits.store import (
    STORE_NAME,
    ChunkStore,
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
    with pytest.raises(ValueError, match="chunk-store schema 99"):
        _store(tmp_path)
