"""The Ray backend: chunks as Ray tasks, written to the same store, same numbers as local."""

from __future__ import annotations

import os

import pytest

from audits.loader import spec_from_dict, spec_from_toml
from audits.options import ExecutionOptions
from audits.runner import comparable, run_audit
from audits.store import STORE_NAME, ChunkStore

if os.environ.get("UNLEARN_REQUIRE_RAY") == "1":
    import ray  # CI sets UNLEARN_REQUIRE_RAY=1: a missing ray must fail, not skip
else:
    ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


SPEC = {"trials": 240, "pilot_trials": 60, "chunk_size": 60, "estimators": ["auc"],
        "name": "ray-test", "seed": 11}


def test_ray_and_local_agree(local_ray, tmp_path):
    spec = spec_from_dict(SPEC)
    on_ray = run_audit(spec, options=ExecutionOptions(backend="ray"), out_dir=tmp_path / "ray")
    local = run_audit(spec, options=ExecutionOptions(backend="local"), out_dir=tmp_path / "local")
    assert comparable(on_ray.report) == comparable(local.report)
    assert on_ray.report["timing"]["chunks"] == 5
    with ChunkStore(tmp_path / "ray" / STORE_NAME, audit_key=on_ray.report["spec_hash"],
                    spec_json="", code_version="") as store:
        assert set(store.compute_counts().values()) == {1}
        workers = {row[0] for row in store._conn.execute("SELECT worker FROM compute_log")}
    assert all(w.startswith("ray ") for w in workers)
    # The Ray run's store resumes locally: same key, nothing recomputed.
    resumed = run_audit(spec, options=ExecutionOptions(backend="local"), out_dir=tmp_path / "ray")
    assert resumed.report["timing"]["chunks_resumed"] == 5
    assert comparable(resumed.report) == comparable(local.report)


def test_ray_resumes_a_local_store(local_ray, tmp_path):
    spec = spec_from_dict({**SPEC, "trials": 120, "pilot_trials": 0,
                                "attacks": ["loss"]})
    local = run_audit(spec, out_dir=tmp_path)
    on_ray = run_audit(spec, options=ExecutionOptions(backend="ray"), out_dir=tmp_path)
    assert on_ray.report["timing"]["chunks_resumed"] == 2
    assert comparable(on_ray.report) == comparable(local.report)


@pytest.mark.slow
def test_cli_ray_backend_starts_its_own_instance(tmp_path):
    """``unlearn audit run SPEC --backend ray`` with no running Ray: starts and stops one."""
    import subprocess
    import sys
    from pathlib import Path

    from audits.report.schema import load_report

    spec = tmp_path / "spec.toml"
    spec.write_text('trials = 120\npilot_trials = 0\nchunk_size = 40\nattacks = ["loss"]\n'
                    'estimators = []\n')
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "audits", "audit", "run", str(spec), "--out",
                           str(tmp_path / "ray"), "--backend", "ray", "--quiet"], cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    local = run_audit(spec_from_toml(spec))
    assert comparable(load_report(tmp_path / "ray")) == comparable(local.report)
