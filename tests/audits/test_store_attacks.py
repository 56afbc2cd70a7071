"""Adversarial use of an audit folder: concurrent writers, symbolic links, refused runs, chunks
copied or deleted inside the store, and what the store keeps."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from audits.loader import spec_from_dict
from audits.options import ExecutionOptions
from audits.protocols import (
    Certificate,
    ModelOutputs,
    TrialBatch,
    direction_from_sums,
    exact_column_sums,
    project_rows,
)
from audits.runner import audit_mechanism, comparable, run_audit
from audits.spec import AuditSpec
from audits.store import STORE_NAME, ChunkStore, CorruptChunkError, FolderLock, StoreError


def _spec(**changes) -> AuditSpec:
    base = {"trials": 60, "pilot_trials": 0, "chunk_size": 20, "attacks": ["loss"],
            "estimators": ["auc", "plugin-epsilon"], "name": "attacks"}
    return spec_from_dict({**base, **changes})


def _projection_spec(**changes) -> AuditSpec:
    return _spec(pilot_trials=20, attacks=["loss", "projection"], **changes)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _side_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(STORE_NAME + "-"))


def _rows(store_path: Path, table: str) -> int:
    conn = sqlite3.connect(f"file:{store_path}?mode=ro&immutable=1", uri=True)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


# -- one writer per folder ----------------------------------------------------------------------


class _Gate:
    """A mechanism whose first chunk waits until the test lets it go (an audit 'running')."""

    def __init__(self) -> None:
        self.started, self.go = threading.Event(), threading.Event()

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        self.started.set()
        assert self.go.wait(60)
        rng = np.random.default_rng([seed, first_trial])
        return TrialBatch(ModelOutputs({"s": rng.standard_normal(n_trials)}),
                          ModelOutputs({"s": rng.standard_normal(n_trials)}))


def test_a_second_audit_of_a_folder_in_use_is_refused_and_the_first_report_survives(tmp_path):
    gate = _Gate()
    certificate = Certificate(epsilon=1.0, delta=1e-5)
    results: dict[str, object] = {}

    def first() -> None:
        results["first"] = audit_mechanism(gate, certificate=certificate, trials=40,
                                           chunk_size=20, out_dir=tmp_path, cache_key="a",
                                           name="first")

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert gate.started.wait(60)
        with pytest.raises(StoreError, match="in use by another audit") as info:
            run_audit(_spec(), out_dir=tmp_path)
        assert "\n" not in str(info.value)
    finally:
        gate.go.set()
        thread.join(60)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["spec"]["name"] == "first"
    assert report["spec_hash"] == results["first"].report["spec_hash"]


def test_the_cli_refuses_a_folder_in_use_with_one_line(tmp_path, capsys):
    from audits.cli import main

    spec_path = tmp_path / "s.toml"
    spec_path.write_text('trials = 20\npilot_trials = 0\nattacks = ["loss"]\n')
    out = tmp_path / "out"
    with FolderLock(out):
        assert main(["audit", "run", str(spec_path), "--out", str(out), "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "in use by another audit" in captured.err
    assert json.loads(captured.out)["error"]["type"] == "store"
    # the refused run wrote nothing: the folder holds only the lock holder's marker
    assert [p.name for p in out.iterdir()] == [".unlearn-verify"]


# -- symbolic links -----------------------------------------------------------------------------


def test_replace_never_follows_a_symlinked_store_into_another_folder(tmp_path):
    victim = tmp_path / "victim"
    run_audit(_spec(), out_dir=victim)
    before = _digest(victim / STORE_NAME)
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    (attacker / STORE_NAME).symlink_to(victim / STORE_NAME)
    with pytest.raises(StoreError, match="symbolic link"):
        run_audit(_spec(seed=5), out_dir=attacker, options=ExecutionOptions(replace=True))
    assert _digest(victim / STORE_NAME) == before
    assert _rows(victim / STORE_NAME, "chunks") == 3
    assert _side_files(victim) == []


def test_a_dangling_symlinked_store_is_refused_and_nothing_is_created(tmp_path):
    elsewhere = tmp_path / "elsewhere" / "created.sqlite"
    elsewhere.parent.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / STORE_NAME).symlink_to(elsewhere)
    with pytest.raises(StoreError, match="symbolic link"):
        run_audit(_spec(), out_dir=out)
    assert list(elsewhere.parent.iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == [STORE_NAME]


def test_a_symlinked_report_is_refused(tmp_path):
    target = tmp_path / "precious.json"
    target.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").symlink_to(target)
    with pytest.raises(StoreError, match="symbolic link"):
        run_audit(_spec(), out_dir=out, options=ExecutionOptions(replace=True))
    assert target.read_text() == "keep me"


# -- a refused run writes nothing ---------------------------------------------------------------


def test_a_run_refused_for_another_spec_leaves_the_store_untouched(tmp_path):
    run_audit(_spec(), out_dir=tmp_path)
    before = _digest(tmp_path / STORE_NAME)
    with pytest.raises(StoreError, match="different spec"):
        run_audit(_spec(seed=7), out_dir=tmp_path)
    assert _digest(tmp_path / STORE_NAME) == before  # no audits row added
    assert _side_files(tmp_path) == []  # no -wal / -shm left behind
    assert _rows(tmp_path / STORE_NAME, "audits") == 1


# -- checksums bound to their chunk -------------------------------------------------------------


def _copy_chunk(store_path: Path, *, source: int, target: int) -> None:
    """Copy one chunk's score blobs and their checksums over another chunk's (trial indices
    left alone, so that only the checksums can notice)."""
    conn = sqlite3.connect(store_path)
    rows = conn.execute("SELECT name, data, sha256 FROM arrays WHERE phase = 'audit' AND "
                        "chunk = ? AND name != 'trial_index'", (source,)).fetchall()
    for name, data, digest in rows:
        conn.execute("UPDATE arrays SET data = ?, sha256 = ? WHERE phase = 'audit' AND chunk = ? "
                     "AND name = ?", (data, digest, target, name))
    conn.commit()
    conn.close()


def test_a_chunk_copied_over_another_is_named_and_resume_restores_the_report(tmp_path):
    first = run_audit(_spec(), out_dir=tmp_path)
    _copy_chunk(tmp_path / STORE_NAME, source=0, target=1)
    with pytest.raises(CorruptChunkError, match=r"audit/1 \(array 'retrained\.accuracy'\)"):
        run_audit(_spec(), out_dir=tmp_path)
    repaired = run_audit(_spec(), out_dir=tmp_path, options=ExecutionOptions(resume=True))
    assert repaired.report["timing"]["chunks_resumed"] == 2
    assert comparable({**repaired.report, "notes": None}) == comparable(
        {**first.report, "notes": None})


def test_a_changed_trial_range_is_named(tmp_path):
    run_audit(_spec(), out_dir=tmp_path)
    conn = sqlite3.connect(tmp_path / STORE_NAME)
    conn.execute("UPDATE chunks SET seed = seed + 1 WHERE phase = 'audit' AND chunk = 2")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptChunkError, match=r"audit/2 \(chunk record\)"):
        run_audit(_spec(), out_dir=tmp_path)


def test_a_deleted_array_row_names_the_chunk_and_resume_recomputes_it(tmp_path):
    first = run_audit(_spec(), out_dir=tmp_path)
    conn = sqlite3.connect(tmp_path / STORE_NAME)
    conn.execute("DELETE FROM arrays WHERE phase = 'audit' AND chunk = 1 AND "
                 "name = 'unlearned.scores.loss'")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptChunkError,
                       match=r"audit/1 \(array 'unlearned\.scores\.loss' missing\).*--resume"):
        run_audit(_spec(), out_dir=tmp_path)
    repaired = run_audit(_spec(), out_dir=tmp_path, options=ExecutionOptions(resume=True))
    assert comparable({**repaired.report, "notes": None}) == comparable(
        {**first.report, "notes": None})
    with ChunkStore(tmp_path / STORE_NAME, audit_key=first.report["spec_hash"], spec_json="",
                    code_version="") as store:
        assert store.compute_counts()[("audit", 1)] == 2 and store.verify() == []


# -- what the store keeps -----------------------------------------------------------------------


def _array_names(store_path: Path, phase: str) -> set[str]:
    conn = sqlite3.connect(f"file:{store_path}?mode=ro&immutable=1", uri=True)
    try:
        return {n for (n,) in conn.execute("SELECT name FROM arrays WHERE phase = ?", (phase,))}
    finally:
        conn.close()


def test_the_store_keeps_projections_and_sums_not_parameter_vectors(tmp_path):
    light = run_audit(_projection_spec(), out_dir=tmp_path / "light")
    main_names = _array_names(tmp_path / "light" / STORE_NAME, "audit")
    pilot_names = _array_names(tmp_path / "light" / STORE_NAME, "pilot")
    assert not any(".statistics." in n for n in main_names | pilot_names)
    assert {"unlearned.projection.params", "retrained.projection.params"} <= main_names
    assert {"unlearned.column_sums.params", "retrained.column_sums.params"} <= pilot_names

    full = run_audit(_projection_spec(), out_dir=tmp_path / "full",
                     options=ExecutionOptions(keep_statistics=True))
    for phase in ("audit", "pilot"):
        assert "unlearned.statistics.params" in _array_names(tmp_path / "full" / STORE_NAME, phase)
    in_memory = run_audit(_projection_spec())
    assert comparable(light.report) == comparable(full.report) == comparable(in_memory.report)
    assert (tmp_path / "light" / STORE_NAME).stat().st_size < \
        (tmp_path / "full" / STORE_NAME).stat().st_size


def test_projection_scores_do_not_depend_on_how_rows_are_grouped():
    rng = np.random.default_rng(3)
    rows, unit = rng.standard_normal((1001, 65)), rng.standard_normal(65)
    whole = project_rows(rows, unit)
    for size in (1, 7, 250, 777):
        parts = [project_rows(rows[i:i + size], unit) for i in range(0, len(rows), size)]
        assert np.array_equal(np.concatenate(parts), whole)
    assert np.array_equal(project_rows(np.asfortranarray(rows), unit), whole)
    dot = [math.fsum(r * unit) for r in rows]  # the correctly rounded sum of the products
    assert np.allclose(whole, dot, rtol=1e-13, atol=1e-13)


def test_the_lock_is_released_after_an_audit(tmp_path):
    run_audit(_spec(), out_dir=tmp_path)
    with FolderLock(tmp_path):
        pass
    assert os.path.isdir(tmp_path)


def test_exact_column_sums_add_up_over_any_chunking_and_equal_fractions():
    from fractions import Fraction

    rng = np.random.default_rng(4)
    rows = rng.standard_normal((300, 5)) * np.array([1e-300, 1e-3, 1.0, 1e100, 1.0])
    rows[0, 0], rows[1, 4] = 5e-324, -0.0  # a subnormal and a negative zero
    whole = exact_column_sums(rows)
    for j in range(5):
        assert Fraction(whole[j], 2**1074) == sum(Fraction(x) for x in rows[:, j])
    parts = [exact_column_sums(rows[i:i + 37]) for i in range(0, 300, 37)]
    assert [sum(col) for col in zip(*parts, strict=True)] == whole
    # the direction: the exact difference of the means, rounded once
    u, r = rows[:150], rows[150:]
    unit, norm = direction_from_sums(exact_column_sums(u), 150, exact_column_sums(r), 150)
    exact = [float(sum(map(Fraction, u[:, j])) / 150 - sum(map(Fraction, r[:, j])) / 150)
             for j in range(5)]
    assert norm == float(np.linalg.norm(exact))
    assert np.array_equal(unit, np.array(exact) / norm)


def test_a_store_of_another_schema_is_refused_untouched_and_replaced_on_request(tmp_path):
    first = run_audit(_spec(), out_dir=tmp_path)
    conn = sqlite3.connect(tmp_path / STORE_NAME)
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    before = _digest(tmp_path / STORE_NAME)
    with pytest.raises(StoreError, match="schema 2.*--replace"):
        run_audit(_spec(), out_dir=tmp_path)
    assert _digest(tmp_path / STORE_NAME) == before and _side_files(tmp_path) == []
    again = run_audit(_spec(), out_dir=tmp_path, options=ExecutionOptions(replace=True))
    assert again.report["timing"]["chunks_resumed"] == 0
    assert comparable(again.report) == comparable(first.report)
