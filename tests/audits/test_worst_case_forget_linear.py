"""``[request] forget = "worst-case"`` on the linear-model adapters (PNSGD, Noisy-GD, Langevin,
D2D, Guo et al.): the shared noiseless screening (audits.adapters.worst_case) plants a record
inside each paper's record domain that moves the noiseless output at least as far as the
screened alternatives and random forget sets, deterministically per seed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from audits.adapters.worst_case import (
    SCREEN_ROWS,
    RecordDomain,
    at_norm_bound,
    noiseless_shift,
    plant_features,
    request_spec,
)
from audits.fields import SpecError
from audits.loader import spec_from_dict
from audits.registry import get_adapter
from audits.runner import prepare_audit, run_audit
from audits.spec import AuditSpec

LINEAR = ("pnsgd", "noisy-gd", "langevin", "d2d", "guo2020-newton")
NOISE = "noise_multiplier_scale"


def _spec(algorithm: str, *, forget: str = "worst-case", request_seed: int = 0,
          drawn: bool = False, trials: int = 20, **fields: object) -> AuditSpec:
    """The algorithm's demo with the chosen forget mode; ``drawn``: one removal whose row is
    drawn with the request seed (not the demo's row 0); ``fields`` override hyper-parameters."""
    data = get_adapter(algorithm).demo_spec(trials=trials).to_dict()
    # the generic attacks: the mechanism as planted, not wrapped for the likelihood-ratio score
    data["attacks"] = ["loss", "projection"]
    data["request"].update(forget=forget, seed=request_seed)
    if drawn:
        data["request"]["kind"] = "remove"
        data["request"].pop("indices", None)
    data["algorithm"].update(fields)
    return spec_from_dict(data)


@pytest.mark.parametrize("algorithm", LINEAR)
def test_each_linear_adapter_plants_a_record_inside_its_theorems_domain(algorithm):
    adapter = get_adapter(algorithm)
    assert "norm" in adapter.worst_case_forget and "noiseless" in adapter.worst_case_forget
    worst = prepare_audit(_spec(algorithm))
    random = prepare_audit(_spec(algorithm, forget="random"))
    record = worst.mechanism.planted
    assert random.mechanism.planted is None
    planted, original = worst.mechanism.data(), random.mechanism.data()
    rows = list(planted.indices)
    assert rows == list(original.indices)
    x, y = planted.dataset.features, planted.dataset.labels
    # every forget slot holds the record: a data row rescaled to the theorems' bound ||x|| <= 1,
    # with one of the data's labels
    for row in rows:
        np.testing.assert_array_equal(x[row], np.asarray(record.features))
        assert y[row] == record.label
    assert float(np.linalg.norm(record.features)) <= 1.0
    assert float(np.linalg.norm(record.features)) == pytest.approx(1.0, abs=1e-12)
    assert record.label in set(np.unique(original.dataset.labels).tolist()) == {-1.0, 1.0}
    source = original.dataset.features[record.row]
    np.testing.assert_allclose(record.features, record.sign * source / np.linalg.norm(source),
                               rtol=1e-12, atol=1e-15)
    assert planted.max_norm <= max(original.max_norm, 1.0)
    # the retain set is the spec's, untouched
    keep = np.ones(original.dataset.n, dtype=bool)
    keep[rows] = False
    np.testing.assert_array_equal(x[keep], original.dataset.features[keep])
    np.testing.assert_array_equal(y[keep], original.dataset.labels[keep])
    # a flip replacement is the planted record's flip
    for request in planted.requests:
        if request.replacement_features is not None:
            np.testing.assert_array_equal(request.replacement_features,
                                          -np.asarray([record.features] * len(rows)))
    # the certificate reads the data only through n and the domain: unchanged by planting
    assert worst.certificate.epsilon == random.certificate.epsilon
    assert worst.certificate.inputs == random.certificate.inputs
    assert any(note.startswith("worst-case forget set:") for note in worst.notes)
    assert worst.fingerprint != random.fingerprint


@pytest.mark.parametrize(("algorithm", "fields"), [
    ("pnsgd", {"clip": 1.0}), ("d2d", {"clip": 1.0}), ("noisy-gd", {"clip": 1.0}),
    ("guo2020-newton", {})])
def test_planted_record_moves_the_noiseless_output_furthest(algorithm, fields):
    # clip = 1 leaves the unit-norm logistic gradients unclipped, so records differ
    mechanism = prepare_audit(_spec(algorithm, drawn=True, **fields)).mechanism
    record = mechanism.planted
    shifts = [c[3] for c in record.candidates]
    assert record.shift == max(shifts) and len(shifts) == 2 * (SCREEN_ROWS + 1)
    assert len({(c[0], c[2]) for c in record.candidates}) == len(shifts)
    assert noiseless_shift(mechanism, NOISE, seed=0) == record.shift
    assert record.shift >= record.drawn_shift
    # random forget sets of other request seeds (rows the screening may not have seen)
    randoms = [noiseless_shift(prepare_audit(_spec(algorithm, forget="random", request_seed=s,
                                                   drawn=True, **fields)).mechanism,
                               NOISE, seed=0) for s in range(1, 5)]
    assert record.shift >= max(randoms)
    assert record.shift >= 1.05 * float(np.median(randoms))


def test_noiseless_shift_is_the_exact_gap_of_the_two_deterministic_runs():
    # D2D with its internal state from 0: both published models are deterministic descents
    # plus the output noise, so at noise 0 one trial is the gap itself
    mechanism = prepare_audit(_spec("d2d", clip=1.0, drawn=True)).mechanism
    quiet = dataclasses.replace(mechanism,
                                config=dataclasses.replace(mechanism.config, **{NOISE: 0.0}))
    batch = quiet.run_trials(seed=5, first_trial=3, n_trials=1)
    gap = batch.unlearned.statistics["params"][0] - batch.retrained.statistics["params"][0]
    assert noiseless_shift(mechanism, NOISE, seed=0) == pytest.approx(
        float(np.linalg.norm(gap)), rel=1e-12)
    assert float(np.linalg.norm(gap)) > 0


@pytest.mark.parametrize("algorithm", ["pnsgd", "d2d"])
def test_worst_case_record_is_deterministic_given_the_seed(algorithm):
    first = prepare_audit(_spec(algorithm, drawn=True)).mechanism.planted
    again = prepare_audit(_spec(algorithm, drawn=True)).mechanism.planted
    assert first == again
    other = prepare_audit(_spec(algorithm, drawn=True, request_seed=7)).mechanism.planted
    assert {c[0] for c in other.candidates} != {c[0] for c in first.candidates}


def test_the_domain_refuses_a_record_outside_the_assumptions():
    data = prepare_audit(_spec("pnsgd", forget="random")).mechanism.data()
    domain = RecordDomain(norm_bound=1.0, assumption="Theorem X: ||x|| <= 1")
    unit = np.zeros(data.dataset.dim)
    unit[0] = 1.0
    domain.check(unit, 1.0, data)
    with pytest.raises(SpecError, match=r"^spec\.request\.forget: .* exceeds the bound 1\.0 of "
                                        r"Theorem X"):
        domain.check(unit * (1 + 2**-52), 1.0, data)
    with pytest.raises(SpecError, match=r"label 0\.5 is outside the label set \[-1\.0, 1\.0\]"):
        domain.check(unit, 0.5, data)


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=80)
       .filter(lambda v: any(abs(x) > 1e-100 for x in v)),
       st.floats(1e-3, 1e3))
def test_rescaled_row_never_exceeds_the_norm_bound(values, bound):
    scaled = at_norm_bound(np.asarray(values), bound)
    assert scaled is not None
    assert float(np.linalg.norm(scaled)) <= bound
    assert float(np.linalg.norm(scaled)) >= bound * (1 - 1e-12)


def test_random_replacements_are_not_planted():
    data = get_adapter("pnsgd").demo_spec(trials=20).to_dict()
    data["request"].update(forget="worst-case", replacement="random")
    with pytest.raises(SpecError, match=r"^spec\.request\.forget: 'worst-case' plants removals "
                                        r"or flip replacements"):
        prepare_audit(spec_from_dict(data))


def test_planting_keeps_the_forget_rows_and_rebuilds_a_flip():
    mechanism = prepare_audit(_spec("pnsgd", forget="random")).mechanism
    data = mechanism.data()
    features = np.full(data.dataset.dim, 0.1)
    planted = plant_features(data, request_spec(mechanism.spec_json), features=features,
                             label=-1.0, why="test")
    assert planted.indices == data.indices
    np.testing.assert_array_equal(planted.requests[0].replacement_features, [-features])
    assert planted.max_norm == pytest.approx(max(data.max_norm, np.linalg.norm(features)))
    assert "test" in planted.dataset.provenance


def test_small_worst_case_audit_of_d2d_reports_the_rule_and_its_exact_loss(tmp_path):
    spec = _spec("d2d", trials=60, clip=1.0, drawn=True)
    result = run_audit(spec, out_dir=tmp_path / "a")
    report = result.report
    assert report["spec"]["request"]["forget"] == "worst-case"
    assert any("worst-case forget set" in note for note in report["notes"])
    random = run_audit(_spec("d2d", forget="random", trials=60, clip=1.0, drawn=True),
                       out_dir=tmp_path / "b")
    # the exact Gaussian laws of the mechanism as run (computed apart from the screening) put
    # the two means the planted record's noiseless shift apart, in units of the output noise
    prepared = prepare_audit(spec)
    sigma = prepared.certificate.inputs["sigma"]
    worst_mu = report["exact_privacy_loss"]["gaussian_mu"]
    assert worst_mu == pytest.approx(prepared.mechanism.planted.shift / sigma, rel=1e-9)
    assert worst_mu > random.report["exact_privacy_loss"]["gaussian_mu"] > 0
