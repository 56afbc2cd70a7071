"""Precomputed scores: arrays, lists and booleans are audited as mappings are, what cannot be
audited is refused in one line saying what to pass, and ``unlearn audit scores FILE.npz`` gives
the same report and exit codes as the library."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from audits.cli import main
from audits.protocols import Certificate
from audits.runner import audit_scores, comparable
from bounds.conversions import best_epsilon

ROOT = Path(__file__).resolve().parents[2]
CERT = Certificate(epsilon=1.0, delta=1e-3)


def _scores(n: int = 300, shift: float = 0.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(shift, 1.0, n), rng.normal(0.0, 1.0, n)


def test_arrays_lists_and_booleans_are_audited_as_a_mapping_of_them_is():
    u, r = _scores()
    as_mapping = audit_scores(unlearned={"score": u}, retrained={"score": r}, certificate=CERT)
    for given in ((u, r), (u.tolist(), r.tolist()), (tuple(u), tuple(r))):
        result = audit_scores(unlearned=given[0], retrained=given[1], certificate=CERT)
        assert comparable(result.report) == comparable(as_mapping.report)
    decisions = audit_scores(unlearned=u > 0, retrained=(r > 0).tolist(), certificate=CERT)
    as_numbers = audit_scores(unlearned=(u > 0).astype(float), retrained=(r > 0).astype(float),
                              certificate=CERT)
    assert comparable(decisions.report) == comparable(as_numbers.report)


@pytest.mark.parametrize(("unlearned", "retrained", "message"), [
    (np.zeros(5), np.zeros(6), "5 unlearned and 6 retrained scores; the audit pairs trial i"),
    ("0.3", [1.0], "unlearned: a str; pass each side as {attack name: scores} or as one array"),
    (0.3, [1.0], "one number, not one score per trial"),
    ([[1.0, 2.0], [3.0]], [1.0, 2.0], "rows of different lengths"),
    (np.array(["a", "b"]), [1.0, 2.0], "dtype <U1 holds no numbers"),
    ({"a": [1.0]}, {"b": [1.0]}, "the sides name different attacks"),
    (np.zeros((3, 2)), np.zeros((3, 4)), "shapes (3, 2) and (3, 4) differ"),
])
def test_what_cannot_be_audited_is_refused_in_one_line_saying_what_to_pass(
        unlearned, retrained, message):
    with pytest.raises(ValueError) as refused:
        audit_scores(unlearned=unlearned, retrained=retrained, certificate=CERT)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def _file(tmp_path: Path, shift: float) -> Path:
    u, r = _scores(shift=shift)
    path = tmp_path / "mine.npz"
    np.savez(path, u=u, r=r, acc_u=np.full(300, 0.9), acc_r=np.full(300, 0.91))
    return path


def test_the_scores_command_gives_the_librarys_report_and_exit_codes(tmp_path, capsys):
    path = _file(tmp_path, shift=0.0)
    out = tmp_path / "out"
    argv = ["audit", "scores", str(path), "--unlearned", "u", "--retrained", "r", "--epsilon",
            "1", "--delta", "1/1000", "--out", str(out), "--json"]
    assert main([*argv, "--unlearned-accuracy", "acc_u", "--retrained-accuracy", "acc_r"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == "CONSISTENT" and printed["n_trials"] == 300
    u, r = _scores()
    library = audit_scores(unlearned={"score": u}, retrained={"score": r}, certificate=CERT,
                           unlearned_accuracy=np.full(300, 0.9),
                           retrained_accuracy=np.full(300, 0.91), name="scores from mine.npz")
    stored = json.loads((out / "report.json").read_text())
    assert comparable(stored)["verdict"] == comparable(library.report)["verdict"]
    assert comparable(stored)["empirical"] == comparable(library.report)["empirical"]

    (tmp_path / "v").mkdir()
    leaking = _file(tmp_path / "v", shift=4.0)
    assert main(["audit", "scores", str(leaking), "--unlearned", "u", "--retrained", "r",
                 "--epsilon", "0.5", "--delta", "1e-3", "--out", str(tmp_path / "v-out"),
                 "--quiet"]) == 3
    assert "VIOLATION" in capsys.readouterr().out


def test_a_bound_id_with_parameters_is_certified_by_the_bound_engine(tmp_path, capsys):
    path = _file(tmp_path, shift=0.0)
    params = {"sigma": "0.05", "eta": "1/L", "m": "0.01", "L": "0.26", "M": "1", "n": "1000",
              "b": "100", "T": "20", "K": "1", "R": "10"}
    assert main(["audit", "scores", str(path), "--unlearned", "u", "--retrained", "r",
                 "--bound", "chien2024:thm3.2", *(f"{k}={v}" for k, v in params.items()),
                 "--delta", "1e-5", "--out", str(tmp_path / "b"), "--json"]) in (0, 4)
    printed = json.loads(capsys.readouterr().out)
    expected = best_epsilon("chien2024:thm3.2", delta=1e-5, **params)
    assert printed["bound"] == "chien2024:thm3.2"
    assert printed["certified_epsilon"] == expected.epsilon


@pytest.mark.parametrize(("extra", "fragment", "code"), [
    (["--unlearned", "nope", "--retrained", "r", "--epsilon", "1"],
     "has no array 'nope' (the unlearned scores); it holds acc_r, acc_u, r, u", 1),
    (["--unlearned", "u", "--retrained", "r"], "give the certificate as --epsilon", 2),
    (["--unlearned", "u", "--retrained", "r", "--epsilon", "1", "--bound", "gaussian:rdp"],
     "one of the two", 2),
])
def test_the_scores_command_refuses_in_one_line(tmp_path, monkeypatch, capsys, extra, fragment,
                                                code):
    monkeypatch.chdir(tmp_path)
    _file(tmp_path, shift=0.0)
    assert main(["audit", "scores", "mine.npz", *extra, "--delta", "1e-3"]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err


def test_the_readme_scores_command_runs_as_written(tmp_path, monkeypatch, capsys):
    from tests.test_cli_readme import readme_commands

    command = next(c for c in readme_commands() if c[:2] == ["audit", "scores"])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    assert main(command) == 0
    assert "Audit verdict: CONSISTENT" in capsys.readouterr().out
    assert (tmp_path / "audit-out" / "scores-pnsgd_demo_scores" / "report.html").is_file()
