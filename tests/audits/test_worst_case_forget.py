"""``[request] forget = "worst-case"``: the spec option, its refusal where an adapter states no
worst case, the Koloskova et al. 2025 rule (a data-domain record pushing the two runs' clipped
starts apart), the white-box ``stated-direction`` attack and an audit with both."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from audits.adapters.data import spec_data
from audits.adapters.koloskova_mechanism import KoloskovaMechanism, worst_case_record
from audits.fields import SpecError
from audits.loader import load_spec, spec_from_dict
from audits.registry import get_adapter
from audits.runner import prepare_audit, run_audit
from audits.spec import AuditSpec, RequestSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GRADIENT_CLIPPING = "koloskova-gradient-clipping"


def _spec(*, forget: str = "worst-case", trials: int = 40, seed: int = 0, learn_steps: int = 60,
          noise_scale: float = 1.0, request_seed: int = 0) -> AuditSpec:
    """The demo's gradient clipping with the tables' noise at test speed (fewer training and
    fine-tuning steps), the white-box attack and the chosen forget mode."""
    spec = get_adapter(GRADIENT_CLIPPING).demo_spec(trials=trials)
    params = dataclasses.replace(spec.algorithm, noise="paper-table", learn_steps=learn_steps,
                                 finetune_steps=2, report_figures=False,
                                 noise_multiplier_scale=noise_scale)
    return load_spec(spec.replace(
        algorithm=params, seed=seed, pilot_trials=max(2, trials // 10),
        attacks=("loss", "projection", "stated-direction"),
        request=dataclasses.replace(spec.request, forget=forget, seed=request_seed)))


def _start(spec: AuditSpec) -> tuple[np.ndarray, float]:
    from empirical.mechanisms.koloskova2025 import start_direction

    mechanism = prepare_audit(spec).mechanism
    return start_direction(mechanism.task(), forget=mechanism.forget, config=mechanism.config)


def test_forget_defaults_to_random_and_unknown_choices_are_refused():
    assert RequestSpec().forget == "random"
    assert RequestSpec(forget="worst-case").to_dict()["forget"] == "worst-case"
    with pytest.raises(SpecError, match=r"^spec\.request\.forget: .*'adversarial'"):
        RequestSpec(forget="adversarial")
    spec = _spec()
    assert spec_from_dict(spec.to_dict()) == spec


def test_worst_case_is_refused_by_an_algorithm_that_states_no_rule(monkeypatch):
    monkeypatch.setattr(get_adapter("pnsgd"), "worst_case_forget", None)
    spec = get_adapter("pnsgd").demo_spec(trials=10)
    data = spec.to_dict()
    data["request"]["forget"] = "worst-case"
    with pytest.raises(SpecError, match=r"^spec\.request\.forget: 'worst-case' is not available "
                                        r"for algorithm 'pnsgd'"):
        spec_from_dict(data)


def test_cli_refuses_worst_case_for_such_an_algorithm_in_one_line(tmp_path, capsys, monkeypatch):
    from audits.cli import main

    monkeypatch.setattr(get_adapter("pnsgd"), "worst_case_forget", None)
    text = (EXAMPLES / "pnsgd_digits.toml").read_text(encoding="utf-8")
    path = tmp_path / "spec.toml"
    path.write_text(text.replace("[request]\n", "[request]\nforget = \"worst-case\"\n"),
                    encoding="utf-8")
    status = main(["audit", "run", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert status == 1
    assert err.count("\n") == 0 and err.startswith("error: spec.request.forget:")


def test_stated_direction_attack_is_refused_where_no_mechanism_gives_it():
    data = get_adapter("pnsgd").demo_spec(trials=10).to_dict()
    data["attacks"] = ["loss", "stated-direction"]
    with pytest.raises(SpecError, match=r"^spec\.attacks: 'stated-direction' is not given"):
        spec_from_dict(data)


def test_every_network_adapter_states_its_worst_case():
    for name in (GRADIENT_CLIPPING, "koloskova-model-clipping", "output-perturbation"):
        adapter = get_adapter(name)
        assert "2 C0" in adapter.worst_case_forget
        assert adapter.extra_attacks[0] == "stated-direction"


def test_worst_case_record_is_a_data_row_the_retain_model_gets_wrong_at_the_largest_start():
    spec = _spec()
    mechanism = prepare_audit(spec).mechanism
    record = worst_case_record(mechanism.spec_json, mechanism.model, mechanism.device,
                               mechanism.dtype)
    original = spec_data(mechanism.spec_json)
    planted = mechanism.data()
    rows = list(planted.indices)
    # in the data's domain: a row's own features (range and normalisation) and one of its labels
    np.testing.assert_array_equal(planted.dataset.features[rows],
                                  np.repeat(original.dataset.features[[record.row]], len(rows), 0))
    assert set(planted.dataset.labels[rows]) == {record.label} and record.label in (-1.0, 1.0)
    retain = np.ones(original.dataset.n, dtype=bool)
    retain[rows] = False
    np.testing.assert_array_equal(planted.dataset.features[retain],
                                  original.dataset.features[retain])
    # the label is the one A(D_r) does not predict there (the largest gradient disagreement)
    from empirical.mechanisms.koloskova2025 import _Functional, _trained

    task = mechanism.task()
    fn = _Functional(task.model)
    import torch

    with torch.no_grad():
        retain_model = _trained(fn, task, torch.as_tensor(np.flatnonzero(retain)),
                                steps=spec.algorithm.learn_steps,
                                step_size=spec.algorithm.learn_step_size)
        predicted = int(fn.logits(retain_model, task.train_x[[rows[0]]])[0].argmax(-1)[0])
    assert predicted != record.label_class
    # the start distance is the largest of the screened records, within the assumed 2 C0,
    # and it is the distance the audit's own training gives
    distances = [d for _, _, d in record.candidates]
    assert record.start_distance == max(distances) <= record.bound == 2 * spec.algorithm.C0
    assert len(record.candidates) == record.screened == 16
    _, distance = _start(spec)
    assert distance == pytest.approx(record.start_distance, rel=1e-9)
    _, random_distance = _start(_spec(forget="random"))
    assert distance > 5 * random_distance


def test_worst_case_record_is_deterministic_given_the_seed():
    spec = _spec()
    mechanism = prepare_audit(spec).mechanism
    first = worst_case_record(mechanism.spec_json, mechanism.model, mechanism.device,
                              mechanism.dtype)
    worst_case_record.cache_clear()
    again = worst_case_record(mechanism.spec_json, mechanism.model, mechanism.device,
                              mechanism.dtype)
    assert first == again
    other = prepare_audit(_spec(request_seed=1)).mechanism
    assert other.forget != mechanism.forget
    assert KoloskovaMechanism.fingerprint(other) != KoloskovaMechanism.fingerprint(mechanism)
    random = prepare_audit(_spec(forget="random")).mechanism
    assert random.fingerprint() != mechanism.fingerprint()


def test_stated_direction_scores_are_the_parameters_on_the_unit_start_difference():
    spec = _spec()
    mechanism = prepare_audit(spec).mechanism
    batch = mechanism.run_trials(seed=3, first_trial=0, n_trials=5)
    raw = mechanism.run(seed=3, first_trial=0, n_trials=5)
    unit, _ = _start(spec)
    assert np.linalg.norm(unit) == pytest.approx(1.0)
    np.testing.assert_allclose(batch.unlearned.scores["stated-direction"],
                               raw.unlearned_params @ unit, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(batch.retrained.scores["stated-direction"],
                               raw.reference_params @ unit, rtol=1e-12, atol=1e-12)


def _separation(spec: AuditSpec, n: int) -> float:
    """Standardised mean difference of the stated-direction scores (unlearned minus certifying)."""
    batch = prepare_audit(spec).mechanism.run_trials(seed=11, first_trial=0, n_trials=n)
    u = batch.unlearned.scores["stated-direction"]
    r = batch.retrained.scores["stated-direction"]
    return float((u.mean() - r.mean()) / np.sqrt((u.var() + r.var()) / 2))


def test_worst_case_record_gives_a_larger_attack_signal_than_random_forgetting():
    # a cheap setting: the noise scaled down (not the certified mechanism) so 300 trials see it
    worst = _separation(_spec(noise_scale=0.25), 300)
    random = _separation(_spec(forget="random", noise_scale=0.25), 300)
    assert worst > 0.3 > 0.1 > random


def test_small_worst_case_audit_runs_end_to_end(tmp_path):
    result = run_audit(_spec(trials=60), out_dir=tmp_path / "audit")
    report = result.report
    assert result.status in ("CONSISTENT", "INCONCLUSIVE", "VIOLATION")
    assert report["spec"]["request"]["forget"] == "worst-case"
    attacks = {row["attack"] for row in report["empirical"]["lower_bounds"]}
    assert {"loss", "stated-direction"} <= attacks
    assert any("worst-case forget set" in note for note in report["notes"])


@pytest.mark.slow
def test_worst_case_example_spec_runs_reduced():
    spec = load_spec(EXAMPLES / "koloskova_worst_case_digits_mlp.toml")
    assert spec.request.forget == "worst-case" and spec.algorithm.noise == "paper-table"
    result = run_audit(spec.replace(trials=400, pilot_trials=40, chunk_size=400))
    assert result.status in ("CONSISTENT", "INCONCLUSIVE")
    assert result.certified_epsilon == 1.0
