"""Long commands are never silent: a line per phase, a heartbeat when a phase is quiet, and a
line when a rerun reuses stored chunks (audits.progress and its callers)."""

from __future__ import annotations

import io
import threading

from audits import progress
from audits.cli import main as cli_main
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
                   cache_key="gaussian-progress", progress=True)
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


def test_cli_audits_print_progress_unless_json_or_quiet(tmp_path, capsys) -> None:
    from audits.cli import _long_running, build_parser

    def long(*argv: str) -> bool:
        return _long_running(build_parser().parse_known_args(list(argv))[0])

    assert long("audit", "demo") and long("audit", "run", "x.toml") and long("bench", "power")
    assert long("reproduce", "chien2024:table3") and not long("reproduce")
    assert not long("audit", "demo", "--json") and not long("audit", "demo", "--quiet")
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
