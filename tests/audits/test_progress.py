"""Long commands are never silent: a line per phase, a heartbeat when a phase is quiet, and a
line when a rerun reuses stored chunks (audits.progress and its callers)."""

from __future__ import annotations

import io
import json
import threading
import time

from audits import progress
from audits.cli import main as cli_main
from audits.options import ExecutionOptions
from audits.protocols import Certificate
from audits.runner import audit_mechanism
from tests.audits.test_audit_pipeline import GaussianShift


def test_a_quiet_phase_gets_heartbeat_lines_naming_it() -> None:
    stream = io.StringIO()
    released = threading.Event()
    with progress.reporting("job", interval=0.05, stream=stream, heartbeat=True):
        progress.phase("crunching")
        released.wait(0.4)  # a phase that prints nothing for eight intervals
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3 and all(line.startswith("job: crunching ... ") for line in lines)


def test_phases_print_as_they_start_once_the_command_has_printed() -> None:
    stream = io.StringIO()
    with progress.reporting("job", stream=stream):
        progress.phase("silent, nothing printed yet")  # a command failing here prints one line
        progress.announce("news")
        progress.phase("next")
        progress.line("a line of its own")
    assert stream.getvalue().splitlines() == ["job: news", "job: next", "job: a line of its own"]


def test_no_progress_outside_reporting_or_when_disabled(capsys) -> None:
    progress.phase("nobody listens")
    with progress.reporting("job", enabled=False):
        progress.phase("still nobody")
        assert not progress.active()
    assert capsys.readouterr().err == ""


def test_nested_reporting_keeps_the_outer_label() -> None:
    stream = io.StringIO()
    with progress.reporting("outer", stream=stream):
        with progress.reporting("inner", stream=stream):
            progress.announce("step")
    assert stream.getvalue().splitlines() == ["outer: step"]


def test_an_audit_names_its_phases_and_a_rerun_says_it_reuses_stored_chunks(tmp_path, capsys):
    cert = Certificate(epsilon=10.0, delta=1e-3)
    options = dict(certificate=cert, trials=40, pilot_trials=0, chunk_size=20, out_dir=tmp_path,
                   cache_key="gaussian-progress", options=ExecutionOptions(progress=True))
    audit_mechanism(GaussianShift(0.5), **options)
    first = capsys.readouterr().err
    # the chunk lines come first, then each later phase as it starts
    for expected in ("audit: 2/2 chunks", "audit: analysing the scores",
                     "audit: writing the report"):
        assert expected in first, first
    assert "..." not in first  # heartbeats go to terminals only, not to this captured stream
    assert "reusing" not in first and "already stored" not in first
    again = audit_mechanism(GaussianShift(0.5), **options)
    second = capsys.readouterr().err
    assert again.report["timing"]["chunks_resumed"] == 2
    assert f"all 2 chunks already stored in {tmp_path / 'audit.sqlite'}: nothing to compute" in second
    assert "computing 2 chunks" not in second


def test_cli_audits_print_progress_unless_quiet(tmp_path, capsys) -> None:
    from audits.cli import _long_running, build_parser

    def long(*argv: str) -> bool:
        return _long_running(build_parser().parse_known_args(list(argv))[0])

    assert long("audit", "demo") and long("audit", "run", "x.toml") and long("bench", "power")
    assert long("reproduce", "chien2024:table3") and not long("reproduce")
    assert long("audit", "demo", "--json") and not long("audit", "demo", "--quiet")
    assert not long("bounds", "list") and not long("audit", "report", "d")
    out = str(tmp_path / "d")
    assert cli_main(["audit", "demo", "--trials", "4", "--out", out]) in (0, 4)
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("audit demo: 1/") and "chunks" in line for line in err), err
    assert "audit demo: analysing the scores (lower bounds, estimates, Rényi tests)" in err
    assert main_error_is_one_line(capsys)


def main_error_is_one_line(capsys) -> bool:
    """A long command failing at once prints its error line only (no progress before it)."""
    assert cli_main(["reproduce", "nobody:table1"]) == 1
    return capsys.readouterr().err.strip().startswith("error: no reproduction")


def test_counted_work_gives_the_time_left_in_lines_and_heartbeats() -> None:
    stream = io.StringIO()
    with progress.reporting("job", interval=0.05, stream=stream, heartbeat=True):
        progress.counted(0, 4, "work ahead: 4 chunks", began=0.0)
        progress.counted(1, 4, "1/4 chunks", began=time.monotonic() - 10.0)  # 10 s a chunk
        threading.Event().wait(0.2)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "job: work ahead: 4 chunks, time left unknown until the first chunk is done"
    assert lines[1] == "job: 1/4 chunks, about 30 s left"
    beats = [line for line in lines[2:] if " ... " in line]
    assert beats and all(line.endswith(("about 30 s left", "about 29 s left")) for line in beats)


def test_json_progress_lines_are_one_object_each_with_the_time_left() -> None:
    stream = io.StringIO()
    with progress.reporting("job", stream=stream, as_json=True):
        progress.counted(0, 2, "work ahead")
        progress.counted(1, 2, "1/2")
        progress.phase("writing")
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [r["message"] for r in records] == ["work ahead", "1/2", "writing"]
    assert records[0]["eta_s"] is None and records[1]["eta_s"] >= 0 and records[1]["total"] == 2
    assert all(r["progress"] == "job" and r["elapsed_s"] >= 0 for r in records)
    assert "eta_s" not in records[2]  # a new phase: the counted work is over


def test_an_audit_under_json_reports_its_work_and_chunks_on_stderr(tmp_path, capsys) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('trials = 40\npilot_trials = 0\nchunk_size = 20\nattacks = ["loss"]\n'
                    'estimators = ["auc"]\n[algorithm]\nlearn_epochs = 5\n')
    assert cli_main(["audit", "run", str(spec), "--out", str(tmp_path / "o"), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n_trials"] == 40  # stdout: the one result object
    records = [json.loads(line) for line in captured.err.splitlines()]
    first = records[0]
    assert first["message"].startswith("work ahead: 40 trials in 2 chunk(s); each trial about 11 "
                                       "epochs over the data (2 x learn_epochs + unlearn_epochs)")
    assert first["done"] == 0 and first["eta_s"] is None
    chunks = [r for r in records if r["message"].startswith(("1/2 chunks", "2/2 chunks"))]
    assert [r["done"] for r in chunks] == [1, 2] and chunks[0]["eta_s"] is not None
