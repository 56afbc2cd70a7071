"""A PNSGD audit spec may name any sound certificate of the algorithm (``[certificate] bound``):
the paper's Theorem 3.2 by default, or a tightening the toolkit proves (docs/improved.md), for one
request and for the last of a sequence; the certificate and the report say which was used."""

from __future__ import annotations

import pytest

from audits.adapters.pnsgd import SOUND_BOUNDS
from audits.loader import demo_spec, spec_from_dict
from audits.runner import prepare_audit
from audits.spec import AuditSpec, SpecError
from bounds.conversions import best_epsilon

TIGHTEST = "chien2024:thm3.2/time-shift/exact-noise"
TIGHTEST_SEQUENCE = "chien2024:thm3.2+thm3.11/sequence/time-shift/exact-noise"


def _epsilon(bound_id: str, inputs: dict) -> float:
    """The bound engine's certified epsilon at the certificate's own inputs (delta among them)."""
    params = {k: v for k, v in inputs.items() if k != "delta"}
    return best_epsilon(bound_id, delta=inputs["delta"], **params).epsilon


def _spec(**changes) -> AuditSpec:
    data = demo_spec(trials=200).to_dict()
    data["pilot_trials"] = 40
    for key, value in changes.items():
        data[key] = {**data[key], **value}
    return spec_from_dict(data)


def _given_sigma(**changes) -> AuditSpec:
    """sigma and K given (no calibration), so the certificates compare at the same numbers."""
    return _spec(certificate={"target_epsilon": None, **changes.pop("certificate", {})},
                 algorithm={"sigma": 0.02, "unlearn_epochs": 1, **changes.pop("algorithm", {})},
                 **changes)


def test_every_listed_single_request_id_certifies_at_most_the_papers_epsilon():
    paper = prepare_audit(_given_sigma()).certificate
    assert paper.bound == SOUND_BOUNDS["single"][0] == "chien2024:thm3.2"
    for bound_id in SOUND_BOUNDS["single"][1:]:
        cert = prepare_audit(_given_sigma(certificate={"bound": bound_id})).certificate
        assert cert.bound == bound_id
        assert cert.epsilon == _epsilon(bound_id, cert.inputs) <= paper.epsilon
        assert any(bound_id in line for line in cert.provenance["derivation"])


def test_the_tightest_certificate_calibrates_a_smaller_sigma():
    """(1, 1/n) at the demo's numbers: the time-shift certificate with the algorithm's noise
    variance needs less noise than Theorem 3.2."""
    paper = prepare_audit(_spec()).certificate
    tight = prepare_audit(_spec(certificate={"bound": TIGHTEST})).certificate
    assert tight.bound == TIGHTEST and paper.bound == "chien2024:thm3.2"
    assert tight.epsilon <= 1 and paper.epsilon <= 1
    assert tight.inputs["sigma"] < paper.inputs["sigma"]


def test_a_sequence_can_name_the_time_shift_forms_with_the_earlier_epochs():
    spec = _given_sigma(request={"requests": 3, "indices": [0, 1, 2]},
                        algorithm={"unlearn_epochs": [1, 2, 1], "batch_size": 32, "l2": 0.05})
    default = prepare_audit(spec).certificate
    assert default.bound == SOUND_BOUNDS["sequence"][0]
    for bound_id in SOUND_BOUNDS["sequence"][1:]:
        named = spec.to_dict()
        named["certificate"] = {**named["certificate"], "bound": bound_id}
        cert = prepare_audit(spec_from_dict(named)).certificate
        assert cert.bound == bound_id and cert.inputs["Kprev"] == 3
        assert cert.inputs["Z"] == default.inputs["Z"]
        assert cert.epsilon == _epsilon(bound_id, cert.inputs)
        assert cert.epsilon <= default.epsilon


@pytest.mark.parametrize(("request_change", "bound_id"), [
    ({}, "chien2024:alg5/as-printed"),  # a literal printed form certifies nothing
    ({}, "chien2024:cor3.7"),  # assumes a converged learner, not Theorem 3.2's setting
    ({}, TIGHTEST_SEQUENCE),  # a sequence id for one request
    ({"requests": 2, "indices": [3, 4]}, TIGHTEST),  # a single-request id for a sequence
])
def test_an_id_that_is_not_a_sound_certificate_for_the_request_is_refused(request_change,
                                                                          bound_id):
    algorithm = {"unlearn_epochs": [1, 1]} if request_change else {}
    spec = _spec(request=request_change, algorithm=algorithm, certificate={"bound": bound_id})
    with pytest.raises(SpecError, match=r"^spec\.certificate\.bound: .* does not soundly certify"):
        prepare_audit(spec)
