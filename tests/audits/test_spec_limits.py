"""Limits checked when a spec is read, before any trial: one line naming the field, nothing
written; names from a spec printed sanitised; the command line's own contract."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from audits.cli import main
from audits.cli.audit import default_out_dir
from audits.loader import spec_from_dict
from audits.options import ExecutionOptions
from audits.protocols import Certificate
from audits.runner import audit_scores, run_audit
from audits.spec import SpecError

_SMALL = 'attacks = ["loss"]\nestimators = ["auc"]\n'


def _refused(tmp_path: Path, capsys, toml: str | bytes, *, name: str = "spec.toml") -> str:
    """Run ``unlearn audit run`` on a spec (in ``tmp_path``, short paths); it must fail with
    one line before writing anything."""
    (tmp_path / name).write_bytes(toml.encode() if isinstance(toml, str) else toml)
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["audit", "run", name, "--out", "out", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not out.exists()
    return err


@pytest.mark.parametrize(("top", "tables", "field"), [
    ("trials = 9223372036854775807\n", "", "spec.trials"),
    ("trials = 20\npilot_trials = 100000000\n", "", "spec.pilot_trials"),
    ("trials = 20\n", '[algorithm]\nname = "pnsgd"\nlearn_epochs = 1000000000\n',
     "spec.algorithm.learn_epochs"),
    ("trials = 20\n", '[dataset]\nname = "synthetic-gaussian"\nn = 1000000000\n'
     "d = 1000000000\n", "spec.dataset.d"),
    ("trials = 20\nseed = 9223372036854775808\n", "", "spec.seed"),
    ("trials = 20\nconfidence = 0.9999999999999999\n", "", "spec.confidence"),
    ("trials = 20\n", "[certificate]\ntarget_epsilon = 1e300\n",
     "spec.certificate.target_epsilon"),
])
def test_what_no_audit_can_finish_is_refused_up_front_naming_the_field(tmp_path, monkeypatch,
                                                                         capsys, top, tables,
                                                                         field):
    monkeypatch.chdir(tmp_path)
    err = _refused(tmp_path, capsys, _SMALL + top + tables)
    assert f"error: {field}:" in err


def test_the_largest_seed_runs_and_is_stored(tmp_path):
    spec = spec_from_dict({"trials": 20, "pilot_trials": 0, "attacks": ["loss"],
                                "estimators": ["auc"], "seed": 2**63 - 1})
    assert run_audit(spec, out_dir=tmp_path).report["seeds"]["seed"] == 2**63 - 1


def test_a_confidence_too_close_to_one_is_refused_for_precomputed_scores_too():
    scores = {"s": np.linspace(0, 1, 20)}
    with pytest.raises(SpecError, match="confidence"):
        audit_scores(unlearned=scores, retrained=scores,
                     certificate=Certificate(epsilon=1.0, delta=1e-5),
                     confidence=0.9999999999999999)


def test_a_spec_that_is_not_utf8_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    err = _refused(tmp_path, capsys, b'name = "caf\xe9"\n', name="latin1.toml")
    assert "latin1.toml" in err and "UTF-8" in err


def test_a_spec_file_named_dots_never_writes_outside_audit_out():
    for name in ("...toml", "..toml", ".toml", "a/../...toml"):
        out = default_out_dir(spec_path=name)
        assert out.parent == Path("audit-out") and out.name not in ("", ".", "..")
        assert not out.name.startswith(".")


def test_a_huge_certificate_draws_its_report_without_warnings(tmp_path):
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = audit_scores(unlearned={"s": rng.standard_normal(200)},
                              retrained={"s": rng.standard_normal(200)},
                              certificate=Certificate(epsilon=1e300, delta=1e-5), out_dir=tmp_path)
    assert result.status == "INCONCLUSIVE"
    assert (tmp_path / "report.html").stat().st_size > 0


def test_spec_names_are_printed_sanitised_and_short(tmp_path, capsys):
    name = "\x1b[31mred\nerror: fake line\r" + "x" * 200_000
    spec = spec_from_dict({"trials": 40, "chunk_size": 20, "pilot_trials": 0,
                                "attacks": ["loss"], "estimators": ["auc"], "name": name})
    capsys.readouterr()
    run_audit(spec, options=ExecutionOptions(progress=True))
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\nerror: fake line" not in err
    assert max(len(line) for line in err.replace("\r", "\n").splitlines()) < 200


# -- the command line ---------------------------------------------------------------------------


def test_version_answers_in_json_with_json(capsys):
    assert main(["--version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["version"]
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("unlearn ")


def test_json_is_accepted_before_the_command(capsys):
    assert main(["--json", "bounds", "list", "--paper", "gaussian"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] >= 1
    assert main(["--debug", "--json", "bounds", "list", "--paper", "gaussian"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] >= 1


def test_with_debug_an_unexpected_error_does_not_ask_for_debug(monkeypatch, capsys):
    import audits.cli as cli

    def broken(args):
        raise AssertionError("boom")

    monkeypatch.setattr(cli, "cmd_bounds_list", broken)  # read when the parser is built
    assert main(["--debug", "--json", "bounds", "list"]) == 1
    captured = capsys.readouterr()
    message = json.loads(captured.out)["error"]["message"]
    assert "rerun with --debug" not in message and "traceback" in message
    assert "Traceback" in captured.err
    assert main(["--json", "bounds", "list"]) == 1
    assert "rerun with --debug" in json.loads(capsys.readouterr().out)["error"]["message"]


@pytest.mark.parametrize("argv", [
    ["bounds", "eval", "gaussian:rdp", "sigma=\u0663", "sensitivity=1", "alpha=2"],
    ["bounds", "epsilon", "gaussian:rdp", "sigma=1", "sensitivity=1", "--delta", "\uff10.1"],
    ["audit", "demo", "--trials", "\uff13\uff10"],
])
def test_digits_of_other_scripts_are_refused_not_read_as_numbers(argv, capsys):
    assert main([*argv, "--json"]) in (1, 2)
    captured = capsys.readouterr()
    assert "ASCII" in json.loads(captured.out)["error"]["message"]
