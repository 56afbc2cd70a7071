"""An output folder is written only when the toolkit created it or holds its marker: a user's
own files are never overwritten, ``--replace`` replaces only audits, and the advice a refusal
gives works."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from audits.cli import main
from audits.folders import MARKER_NAME, ForeignFolderError, check_owned, claim_folder
from audits.protocols import Certificate
from audits.report.write import write_report
from audits.runner import audit_scores

SPEC = 'trials = 20\npilot_trials = 0\nchunk_size = 20\nattacks = ["loss"]\nestimators = ["auc"]\n'


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _run(tmp_path: Path, out: Path, *extra: str) -> int:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    return main(["audit", "run", str(spec), "--out", str(out), "--quiet", *extra])


def _scores_audit(out: Path, **kwargs):
    rng = np.random.default_rng(0)
    return audit_scores(unlearned={"loss": rng.normal(size=30)},
                        retrained={"loss": rng.normal(size=30)},
                        certificate=Certificate(epsilon=1.0, delta=1e-5), out_dir=out, **kwargs)


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("name", ["report.html", "report.json", "notes.txt"])
def test_a_folder_holding_the_users_files_is_refused_in_one_line_and_left_as_it_was(
        tmp_path, capsys, monkeypatch, name, replace):
    monkeypatch.chdir(tmp_path)  # a short path: the error line quotes it whole
    out = Path("mine")
    out.mkdir()
    (out / name).write_text('{"my": "own data"}')
    before = _files(out)
    assert _run(tmp_path, out, *(["--replace"] if replace else [])) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert str(out / name) in err and "not marked as this toolkit's" in err
    assert _files(out) == before  # no marker, no store, no report


def test_a_new_or_empty_folder_is_claimed_and_a_rerun_writes_it_again(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (empty, tmp_path / "new" / "nested"):
        assert _run(tmp_path, out) == 0
        assert {MARKER_NAME, "audit.sqlite", "report.json", "report.html"} <= set(_files(out))
        assert _run(tmp_path, out) == 0  # its own folder: resumed and rewritten
    capsys.readouterr()


def test_a_corrupt_store_is_refused_and_replace_as_advised_starts_afresh(tmp_path, capsys):
    out = tmp_path / "audit"
    assert _run(tmp_path, out) == 0
    (out / "audit.sqlite").write_bytes(b"this is not a database at all" * 100)
    capsys.readouterr()
    assert _run(tmp_path, out) == 1
    err = capsys.readouterr().err
    assert "--replace" in err and "audit.sqlite" in err
    assert _run(tmp_path, out, "--replace") == 0
    assert json.loads((out / "report.json").read_text())["empirical"]["n_trials"] == 20


def test_write_report_never_overwrites_a_file_it_did_not_write(tmp_path):
    out = tmp_path / "audit"
    first = _scores_audit(out)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.html").write_text("<p>my page</p>")
    with pytest.raises(ForeignFolderError, match="report.html"):
        write_report(first.report, mine)
    with pytest.raises(ForeignFolderError, match="report.html"):
        _scores_audit(mine, replace=True)
    assert (mine / "report.html").read_text() == "<p>my page</p>"
    assert sorted(p.name for p in mine.iterdir()) == ["report.html"]


def test_a_marker_of_another_kind_or_not_the_toolkits_is_no_licence(tmp_path):
    repro = claim_folder(tmp_path / "repro", kind="reproduction")
    (repro / "fig.png").write_bytes(b"png")
    with pytest.raises(ForeignFolderError, match="reproduction"):
        check_owned(repro, kind="audit")
    forged = tmp_path / "forged"
    forged.mkdir()
    (forged / MARKER_NAME).write_text('{"kind": "audit"}')  # not written by the toolkit
    (forged / "report.json").write_text("{}")
    with pytest.raises(ForeignFolderError, match="report.json"):
        check_owned(forged)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / MARKER_NAME).symlink_to(repro / MARKER_NAME)
    with pytest.raises(ForeignFolderError):
        check_owned(linked, kind="reproduction")
