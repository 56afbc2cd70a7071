"""Killed audits resume without recomputing finished chunks and give the same report."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from audits.runner import comparable, run_audit
from audits.spec import AuditSpec
from audits.store import STORE_NAME, ChunkStore, count_stored_chunks

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

    from audits.report import load_report

    report = load_report(out)
    assert report["timing"]["chunks"] == CHUNKS
    assert report["timing"]["chunks_resumed"] == stored_at_kill
    # Every chunk was computed exactly once across the killed run and the rerun.
    counts = _counts(out, report)
    assert len(counts) == CHUNKS and set(counts.values()) == {1}

    uninterrupted = run_audit(AuditSpec.from_toml(spec_path), out_dir=tmp_path / "straight")
    assert uninterrupted.report["timing"]["chunks_resumed"] == 0
    assert comparable(report) == comparable(uninterrupted.report)


def test_rerun_reads_everything_back_and_other_specs_do_not_mix(tmp_path):
    spec = AuditSpec.from_dict({"trials": 90, "pilot_trials": 20, "chunk_size": 30,
                                "estimators": ["auc"], "name": "rerun"})
    first = run_audit(spec, out_dir=tmp_path)
    again = run_audit(spec, out_dir=tmp_path)
    assert again.report["timing"]["chunks_resumed"] == again.report["timing"]["chunks"] == 4
    assert comparable(first.report) == comparable(again.report)
    assert set(_counts(tmp_path, again.report).values()) == {1}

    other = run_audit(spec.replace(seed=3), out_dir=tmp_path)
    assert other.report["spec_hash"] != first.report["spec_hash"]
    assert other.report["timing"]["chunks_resumed"] == 0
    assert other.report["plots"]["scores"] != first.report["plots"]["scores"]
    assert count_stored_chunks(tmp_path / STORE_NAME) == 8
