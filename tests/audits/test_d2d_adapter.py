"""The d2d adapter: fields, certificate = the bound engine's sigma, demo spec, audits."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

import bounds
from audits.fields import SpecError
from audits.loader import check_spec, spec_from_toml
from audits.registry import get_adapter
from audits.runner import prepare_audit
from audits.testing import assert_consistent, assert_violation

ADAPTER = get_adapter("d2d")


def dataclass_replace(params, **changes):
    import dataclasses

    return dataclasses.replace(params, **changes)


def test_example_spec_is_the_demo():
    assert spec_from_toml("examples/d2d_digits.toml") == ADAPTER.demo_spec()


@pytest.mark.parametrize("field, value, message", [
    ("variant", "clean", "spec.algorithm.variant"),
    ("noise_std", -1.0, "spec.algorithm.noise_std"),
    ("unlearn_iterations", 0, "spec.algorithm.unlearn_iterations"),
    ("l2", 0.0, "spec.algorithm.l2"),
    ("adjacency", "any", "spec.algorithm.adjacency"),
])
def test_bad_fields_name_their_path(field, value, message):
    with pytest.raises(SpecError, match=message):
        ADAPTER.parse_params({field: value}, "spec.algorithm")


def test_replacement_needs_the_paper_reading():
    spec = ADAPTER.demo_spec(trials=10)
    request = dataclass_replace(spec.request, kind="replace")
    with pytest.raises(SpecError, match="spec.request.kind"):
        check_spec(spec.replace(request=request))
    paper = spec.replace(request=request,
                         algorithm=dataclass_replace(spec.algorithm, adjacency="paper"))
    prepared = prepare_audit(paper)
    assert any("NOT CERTIFIED" in a for a in prepared.certificate.provenance["audit_assumptions"])


@pytest.mark.parametrize("variant, bound_id", [("internal-state", "neel2021:thm9"),
                                                ("no-internal-state", "neel2021:thm28")])
def test_certificate_is_the_bound_engines_sigma(variant, bound_id):
    spec = ADAPTER.demo_spec(trials=10)
    # the generic attacks: the likelihood-ratio attack of the demo needs the exact laws, which
    # only the internal-state variant has
    spec = spec.replace(algorithm=dataclass_replace(spec.algorithm, variant=variant),
                        attacks=("loss", "projection"))
    prepared = prepare_audit(spec)
    cert, config = prepared.certificate, prepared.mechanism.config
    n, d = 256, 64
    lam = Fraction(1)
    L = Fraction(1, 4) + lam
    common = {"epsilon": 1, "delta": Fraction(1.0 / n), "M": Fraction(0.05), "m": lam, "L": L}
    if variant == "no-internal-state":
        least_i = math.ceil(bounds.get("neel2021:thm28/iterations").evaluate(
            precision="mp", epsilon=1, delta=common["delta"], m=lam, L=L, d=d).value)
    else:
        least_i = 1
    least_t = math.ceil(bounds.get("neel2021:thm9/learning-iterations").evaluate(
        precision="mp", M=common["M"], m=lam, L=L, n=n, I=least_i, R=100).value)
    params = {**common, "n": n, "I": least_i, "T": least_t, "R": 100}
    if variant == "no-internal-state":
        params["d"] = d
    sigma = bounds.get(bound_id).evaluate(precision="mp", digits=60, **params).value
    assert cert.bound == bound_id and cert.epsilon == 1.0
    assert config.learn_iterations == least_t
    assert config.noise_std >= sigma and config.noise_std <= sigma * (1 + 1e-12)
    assert config.step_size == pytest.approx(2 / float(L + lam), rel=1e-15)
    assert config.internal_state is (variant == "internal-state")
    if variant == "no-internal-state":
        extra = math.log(math.log(4 * d * 1 * n)) / math.log(1 / ((L - lam) / (L + lam)))
        assert config.unlearn_iterations == (math.ceil(least_i + extra),)


def test_given_noise_below_the_theorem_is_refused():
    spec = ADAPTER.demo_spec(trials=10)
    small = spec.replace(algorithm=dataclass_replace(spec.algorithm, noise_std=1e-6))
    with pytest.raises(SpecError, match="noise_std.*needs sigma"):
        prepare_audit(small)
    short = spec.replace(algorithm=dataclass_replace(spec.algorithm, learn_iterations=2))
    with pytest.raises(SpecError, match="learn_iterations"):
        prepare_audit(short)


@pytest.mark.slow
def test_reduced_audit_is_consistent_and_catches_a_broken_mechanism():
    spec = ADAPTER.demo_spec(trials=400)
    result = assert_consistent(spec, trials=400)
    assert result.status == "CONSISTENT"
    broken = spec.replace(algorithm=dataclass_replace(spec.algorithm,
                                                      noise_multiplier_scale=0.02))
    assert_violation(broken, trials=400)
