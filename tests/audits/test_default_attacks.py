"""The attacks of a spec that names none: resolved when the audit is prepared to the loss attack
and the most powerful white-box attack the adapter gives (the likelihood-ratio test of the exact
Gaussian output laws where it knows them, else the projection); an explicit list is run as
written. The resolved list is what the plan, the analysis, the report and the chunk store use,
while the spec's identity (the report's ``spec``, the store's spec) keeps ``attacks`` null."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from audits.attacks import DEFAULT_ATTACKS, DEFAULT_EXACT_ATTACKS
from audits.exact_loss import LikelihoodRatioMechanism
from audits.fields import SpecError
from audits.loader import load_spec
from audits.options import ExecutionOptions
from audits.plan import spec_plan
from audits.report.html import render_html
from audits.report.schema import validate_report
from audits.report.text import summary_text
from audits.runner import prepare_audit, run_audit
from audits.store import StoreError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
D2D = EXAMPLES / "d2d_exact.toml"
NOISY_GD_LOGISTIC = EXAMPLES / "noisy_gd_digits.toml"


def _d2d(**changes):
    return load_spec(D2D).replace(**{"trials": 400, "pilot_trials": 0, "chunk_size": 200,
                                      **changes})


def test_the_exact_examples_name_no_attacks_and_leave_them_to_the_default():
    for name in ("d2d_exact", "noisy_gd_linear_exact", "output_perturbation_exact"):
        spec = load_spec(EXAMPLES / f"{name}.toml")
        assert spec.attacks is None
        assert spec.to_dict()["attacks"] is None
        assert json.loads(spec.canonical_json())["attacks"] is None


def test_the_default_attack_of_a_spec_with_exact_laws_is_the_likelihood_ratio_test():
    prepared = prepare_audit(_d2d())
    assert DEFAULT_EXACT_ATTACKS == ("likelihood-ratio",)
    assert prepared.attacks == DEFAULT_EXACT_ATTACKS
    assert prepared.attacks_rule.startswith("the default")
    assert "exactly Gaussian" in prepared.attacks_rule
    assert isinstance(prepared.mechanism, LikelihoodRatioMechanism)
    plan = spec_plan(_d2d(), prepared, started=0.0)
    assert plan.settings.attacks == DEFAULT_EXACT_ATTACKS
    assert plan.project is False  # no projection attack: main chunks store no projection
    assert plan.spec["attacks"] is None


def test_the_report_runs_and_shows_the_default_likelihood_ratio_attack(tmp_path):
    report = run_audit(_d2d(), out_dir=tmp_path).report
    emp = report["empirical"]
    assert emp["attacks"] == ["likelihood-ratio"]
    assert emp["attacks_rule"].startswith("the default")
    assert {entry["attack"] for entry in emp["lower_bounds"]} == {"likelihood-ratio"}
    assert report["verdict"]["best_lower_bound"]["attack"] == "likelihood-ratio"
    assert report["spec"]["attacks"] is None  # the spec as written: its identity
    assert "  attacks             likelihood-ratio (the default" in summary_text(report)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<td>likelihood-ratio (the default" in page
    stored = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert stored["empirical"]["attacks"] == ["likelihood-ratio"]


def test_a_spec_without_exact_laws_keeps_the_projection_by_default():
    spec = load_spec(NOISY_GD_LOGISTIC).replace(attacks=None, trials=200, pilot_trials=20)
    prepared = prepare_audit(spec)
    assert prepared.exact_privacy_loss is None
    assert prepared.attacks == DEFAULT_ATTACKS == ("loss", "projection")
    assert "not known exactly" in prepared.attacks_rule
    assert not isinstance(prepared.mechanism, LikelihoodRatioMechanism)
    report = run_audit(spec).report
    assert report["empirical"]["attacks"] == ["loss", "projection"]
    assert "  attacks             loss, projection (the default" in summary_text(report)


def test_the_default_projection_without_pilot_trials_is_refused_naming_the_field():
    spec = load_spec(NOISY_GD_LOGISTIC).replace(attacks=None, trials=200, pilot_trials=0)
    with pytest.raises(SpecError, match=r"^spec\.pilot_trials: must be at least 2 for the "
                                        r"projection attack, the default white-box attack"):
        prepare_audit(spec)
    # with exact laws the default needs no pilot at all
    assert prepare_audit(_d2d()).attacks == DEFAULT_EXACT_ATTACKS


def test_the_cli_refuses_the_default_projection_without_pilot_trials_in_one_line(
        tmp_path, capsys):
    from audits.cli import main

    path = tmp_path / "spec.toml"
    text = NOISY_GD_LOGISTIC.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("attacks")]
    lines = [("pilot_trials = 0" if line.startswith("pilot_trials") else line) for line in lines]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["audit", "run", str(path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: spec.pilot_trials: must be at least 2") and "\n" not in err
    assert not (tmp_path / "out" / "audit.sqlite").exists()


@pytest.mark.parametrize("attacks", [("projection",), ("loss",), ("likelihood-ratio",),
                                     ("projection", "likelihood-ratio", "loss")])
def test_an_explicit_attack_list_is_run_as_written(attacks):
    spec = _d2d(attacks=attacks, pilot_trials=40)
    prepared = prepare_audit(spec)
    assert prepared.attacks == attacks
    assert prepared.attacks_rule == "named by the spec"
    assert isinstance(prepared.mechanism, LikelihoodRatioMechanism) == (
        "likelihood-ratio" in attacks)
    report = run_audit(spec).report
    assert report["empirical"]["attacks"] == list(attacks)
    assert report["spec"]["attacks"] == list(attacks)
    assert {entry["attack"] for entry in report["empirical"]["lower_bounds"]} == set(attacks)


def test_the_audit_key_covers_the_resolved_attacks_and_an_unresolved_plan_is_refused():
    spec = _d2d()
    prepared = prepare_audit(spec)
    key = spec_plan(spec, prepared, started=0.0).cache_key
    assert spec_plan(spec, prepared, started=0.0).cache_key == key
    other = dataclasses.replace(prepared, attacks=("loss",))
    assert spec_plan(spec, other, started=0.0).cache_key != key
    with pytest.raises(ValueError, match="attacks are not resolved"):
        spec_plan(spec, dataclasses.replace(prepared, attacks=None), started=0.0)


def test_a_default_audit_folder_resumes_and_refuses_the_same_attacks_written_out(tmp_path):
    first = run_audit(_d2d(), out_dir=tmp_path)
    again = run_audit(_d2d(), out_dir=tmp_path)
    assert again.report["timing"]["chunks_resumed"] == again.report["timing"]["chunks"] == 2
    assert again.report["empirical"] == first.report["empirical"]
    assert again.report["spec_hash"] == first.report["spec_hash"]
    # the spec's identity is the spec as written: the same attacks named explicitly are
    # another spec, refused unless replaced
    explicit = _d2d(attacks=DEFAULT_EXACT_ATTACKS)
    with pytest.raises(StoreError, match="holds the audit of a different spec"):
        run_audit(explicit, out_dir=tmp_path)
    replaced = run_audit(explicit, out_dir=tmp_path, options=ExecutionOptions(replace=True))
    assert replaced.report["timing"]["chunks_resumed"] == 0
    assert replaced.report["empirical"]["lower_bounds"] == first.report["empirical"]["lower_bounds"]


def test_the_schema_checks_the_reported_attacks():
    report = run_audit(_d2d(trials=100)).report
    with pytest.raises(ValueError, match=r"empirical\.attacks\[0\]"):
        validate_report({**report, "empirical": {**report["empirical"], "attacks": [3]}})
    with pytest.raises(ValueError, match=r"empirical\.attacks_rule"):
        validate_report({**report, "empirical": {**report["empirical"], "attacks_rule": ""}})
    older = {k: v for k, v in report["empirical"].items() if k not in ("attacks", "attacks_rule")}
    assert "attacks" not in summary_text({**report, "empirical": older}).split("best lower")[0]
    assert render_html({**report, "empirical": older})
