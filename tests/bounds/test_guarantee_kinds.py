"""Guarantee kinds are one enum: every declared bound names a member, every member knows its
safe end, and a string that names no kind is refused."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import bounds
from bounds.declarations import Bound, Citation, Guarantee, GuaranteeKind, Parameter
from bounds.values import real_symbol


def test_every_declared_bound_names_a_guarantee_kind():
    for bound in bounds.list_bounds():
        assert isinstance(bound.guarantee.kind, GuaranteeKind), bound.id
        assert bound.guarantee.safe_end in ("upper", "lower", "both"), bound.id


def test_a_kind_is_its_string_in_comparisons_and_in_json():
    guarantee = Guarantee("renyi_dp", "RDP")
    assert guarantee.kind is GuaranteeKind.RENYI_DP
    assert guarantee.kind == "renyi_dp" and f"{guarantee.kind}" == "renyi_dp"
    assert json.dumps({"kind": guarantee.kind}) == '{"kind": "renyi_dp"}'


def test_unknown_kinds_are_refused_with_the_known_ones_named():
    with pytest.raises(ValueError, match="unknown guarantee kind 'privacy'.*sensitivity"):
        Guarantee("privacy", "?")


@pytest.mark.parametrize("kind,end", [
    (GuaranteeKind.SENSITIVITY, "upper"), (GuaranteeKind.W_INFINITY, "upper"),
    (GuaranteeKind.NOISE_SCALE, "upper"), (GuaranteeKind.STEP_SIZE, "lower"),
    (GuaranteeKind.RESIDUAL_BUDGET, "lower"), (GuaranteeKind.EXACT_DIVERGENCE, "both"),
])
def test_each_kind_errs_on_its_safe_end(kind, end):
    assert kind.safe_end == end


def test_a_sensitivity_bound_is_certified_at_its_upper_end():
    # The L2 sensitivity 2 M / n of a mean of n vectors clipped to norm M: an upper bound on a
    # distance, so the interval's upper end is the certificate (here 2/3 is not a float).
    M, n = real_symbol("M"), real_symbol("n")
    bound = Bound(
        id="test:sensitivity", title="sensitivity of a clipped mean",
        citation=Citation("test", "a textbook fact", "", "Lemma"),
        parameters=(Parameter("M", "clipping norm", lower=0, lower_open=True),
                    Parameter("n", "records", lower=1)),
        expression=2 * M / n,
        guarantee=Guarantee("sensitivity", "L2 distance between the two clipped means"))
    evaluation = bound.evaluate(precision="interval", M=1, n=3)
    assert evaluation.certified_safe == evaluation.certified_upper
    assert Fraction(evaluation.certified_upper) >= Fraction(2, 3)
    assert evaluation.to_dict()["guarantee"] == "sensitivity"
