"""Killed audits resume without recomputing finished chunks and give the same report."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audits.loader import spec_from_dict, spec_from_toml
from audits.options import ExecutionOptions
from audits.runner import comparable, run_audit
from audits.store import STORE_NAME, ChunkStore, CorruptChunkError, StoreError, count_stored_chunks

ROOT = Path(__file__).resolve().parents[2]

SPEC = """
name = "resume-test"
trials = 480
pilot_trials = 0
chunk_size = 20
attacks = ["loss"]
statistics = ["bonferroni-pareto"]
estimators = ["auc"]
seed = 7
"""
CHUNKS = 24


def _counts(out_dir: Path, report: dict) -> dict:
    with ChunkStore(out_dir / STORE_NAME, audit_key=report["spec_hash"], spec_json="",
                    code_version="") as store:
        return store.compute_counts()


def test_kill_mid_run_then_resume(tmp_path):
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SPEC)
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "audits", "audit", "run", str(spec_path), "--out",
               str(out), "--quiet"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while count_stored_chunks(out / STORE_NAME) < 1:
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "no chunk was stored in time"
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    stored_at_kill = count_stored_chunks(out / STORE_NAME)
    assert 1 <= stored_at_kill < CHUNKS, "the run finished before it could be killed"
    assert not (out / "report.json").exists()

    resumed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr

    from audits.report.schema import load_report

    report = load_report(out)
    assert report["timing"]["chunks"] == CHUNKS
    assert report["timing"]["chunks_resumed"] == stored_at_kill
    # Every chunk was computed exactly once across the killed run and the rerun.
    counts = _counts(out, report)
    assert len(counts) == CHUNKS and set(counts.values()) == {1}

    uninterrupted = run_audit(spec_from_toml(spec_path), out_dir=tmp_path / "straight")
    assert uninterrupted.report["timing"]["chunks_resumed"] == 0
    assert comparable(report) == comparable(uninterrupted.report)


def test_rerun_reads_everything_back_and_another_spec_is_refused_unless_replaced(tmp_path):
    spec = spec_from_dict({"trials": 90, "pilot_trials": 20, "chunk_size": 30,
                                "estimators": ["auc"], "name": "rerun"})
    first = run_audit(spec, out_dir=tmp_path)
    again = run_audit(spec, out_dir=tmp_path)
    assert again.report["timing"]["chunks_resumed"] == again.report["timing"]["chunks"] == 4
    assert comparable(first.report) == comparable(again.report)
    assert set(_counts(tmp_path, again.report).values()) == {1}

    # Issue 10: a different spec used to overwrite this folder's report silently.
    report_before = (tmp_path / "report.json").read_bytes()
    with pytest.raises(StoreError, match="holds the audit of a different spec.*--replace"):
        run_audit(spec.replace(seed=3), out_dir=tmp_path)
    assert (tmp_path / "report.json").read_bytes() == report_before
    assert count_stored_chunks(tmp_path / STORE_NAME) == 4
    # The refused attempt left nothing that blocks the folder's own spec.
    assert run_audit(spec, out_dir=tmp_path).report["timing"]["chunks_resumed"] == 4

    other = run_audit(spec.replace(seed=3), out_dir=tmp_path, options=ExecutionOptions(replace=True))
    assert other.report["spec_hash"] != first.report["spec_hash"]
    assert other.report["timing"]["chunks_resumed"] == 0
    assert other.report["plots"]["scores"] != first.report["plots"]["scores"]
    assert count_stored_chunks(tmp_path / STORE_NAME) == 4  # the old audit's chunks are gone


def _flip_a_byte(store_path: Path, *, phase: str, chunk: int) -> str:
    """Change one byte in the middle of one stored blob of a chunk; returns the array's name."""
    conn = sqlite3.connect(store_path)
    name, data = conn.execute("SELECT name, data FROM arrays WHERE phase = ? AND chunk = ? "
                              "ORDER BY name DESC LIMIT 1", (phase, chunk)).fetchone()
    middle = len(data) - 3  # inside the array payload, after the .npy header
    changed = data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1:]
    conn.execute("UPDATE arrays SET data = ? WHERE phase = ? AND chunk = ? AND name = ?",
                 (changed, phase, chunk, name))
    conn.commit()
    conn.close()
    return name


def test_a_flipped_byte_is_named_and_recomputed_on_resume(tmp_path):
    spec = spec_from_dict({"trials": 60, "pilot_trials": 0, "chunk_size": 20, "attacks": ["loss"],
                                "estimators": ["auc"], "name": "tamper"})
    first = run_audit(spec, out_dir=tmp_path)
    name = _flip_a_byte(tmp_path / STORE_NAME, phase="audit", chunk=1)

    with pytest.raises(CorruptChunkError, match=f"audit/1 \\(array '{name}'\\).*--resume"):
        run_audit(spec, out_dir=tmp_path)

    repaired = run_audit(spec, out_dir=tmp_path, options=ExecutionOptions(resume=True))
    assert repaired.report["timing"]["chunks_resumed"] == 2  # chunks 0 and 2 were fine
    assert comparable({**repaired.report, "notes": None}) == comparable(
        {**first.report, "notes": None})
    assert any("audit/1" in note and "checksum" in note for note in repaired.report["notes"])
    counts = _counts(tmp_path, repaired.report)
    assert counts[("audit", 1)] == 2 and counts[("audit", 0)] == counts[("audit", 2)] == 1


def test_the_cli_names_the_bad_chunk_and_resume_repairs_it(tmp_path, capsys):
    from audits.cli import main

    spec_path = tmp_path / "spec.toml"
    spec_path.write_text('name = "cli-tamper"\ntrials = 40\npilot_trials = 0\nchunk_size = 20\n'
                         'attacks = ["loss"]\nestimators = ["auc"]\n')
    out = tmp_path / "out"
    argv = ["audit", "run", str(spec_path), "--out", str(out), "--quiet"]
    assert main(argv) == 0
    _flip_a_byte(out / STORE_NAME, phase="audit", chunk=0)
    capsys.readouterr()
    assert main([*argv, "--json"]) == 1
    captured = capsys.readouterr()
    line = captured.err.strip()
    assert line.startswith("error:") and "\n" not in line and "audit/0" in line
    assert json.loads(captured.out)["error"]["type"] == "store"
    assert main([*argv, "--resume"]) == 0
    assert "audit/0" in capsys.readouterr().err  # the warning names what was recomputed
