"""The langevin adapter: fields, certificate = the bound engine's calibration, sequences, audits."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from audits.fields import SpecError
from audits.loader import spec_from_toml
from audits.registry import get_adapter
from audits.runner import prepare_audit
from audits.testing import assert_consistent, assert_violation
from bounds.calibration import calibrate
from bounds.papers.chien2024lu import lu_sequence_certificate, lu_sequential_iterations

ADAPTER = get_adapter("langevin")


def test_example_spec_is_the_demo():
    assert spec_from_toml("examples/langevin_digits.toml") == ADAPTER.demo_spec()


@pytest.mark.parametrize("field, value, message", [
    ("sigma", 0.0, "spec.algorithm.sigma"),
    ("unlearn_iterations", [], "spec.algorithm.unlearn_iterations"),
    ("learn_iterations", -1, "spec.algorithm.learn_iterations"),
    ("clip", -0.1, "spec.algorithm.clip"),
])
def test_bad_fields_name_their_path(field, value, message):
    with pytest.raises(SpecError, match=message):
        ADAPTER.parse_params({field: value}, "spec.algorithm")


def test_calibrated_sigma_is_the_bound_engines():
    prepared = prepare_audit(ADAPTER.demo_spec(trials=10))
    cert, config = prepared.certificate, prepared.mechanism.config
    eta = config.step_size
    assert Fraction(eta) <= Fraction(4, 5) and eta == pytest.approx(0.8, rel=1e-15)
    direct = calibrate("chien2024lu:eq98", solve="sigma", epsilon=1.0, delta=1 / 256,
                       eta=eta, m=1, L=Fraction(5, 4), M=0.05, n=256, S=1, K=1)
    assert cert.bound == "chien2024lu:eq98" and cert.epsilon <= 1.0
    assert config.sigma == float(direct.value)
    assert config.unlearn_iterations == (1,)


def test_calibrated_k_is_the_bound_engines():
    spec = ADAPTER.demo_spec(trials=10)
    spec = spec.replace(algorithm=dataclasses.replace(spec.algorithm, sigma=0.001),
                        certificate=dataclasses.replace(spec.certificate, calibrate="K"))
    config = prepare_audit(spec).mechanism.config
    direct = calibrate("chien2024lu:eq98", solve="K", epsilon=1.0, delta=1 / 256,
                       eta=config.step_size, m=1, L=Fraction(5, 4), M=0.05, n=256, S=1,
                       sigma=0.001)
    assert config.unlearn_iterations == (int(direct.value),) and direct.value > 1


def test_sequence_uses_the_derived_chain():
    spec = ADAPTER.demo_spec(trials=10)
    spec = spec.replace(algorithm=dataclasses.replace(spec.algorithm, sigma=0.004),
                        request=dataclasses.replace(spec.request, size=2, requests=3,
                                                    indices=(0, 1, 2, 3, 4, 5)))
    prepared = prepare_audit(spec)
    config, cert = prepared.mechanism.config, prepared.certificate
    eta = Fraction(config.step_size)
    plan = lu_sequential_iterations(requests=3, epsilon=1.0, delta=1 / 256, sigma=Fraction(0.004),
                                    eta=eta, m=1, L=Fraction(5, 4), M=Fraction(0.05), n=256, S=2)
    assert config.unlearn_iterations == plan["iterations"]
    assert cert.bound == "chien2024lu:thm3.2+thm3.3/sequence-step" and cert.epsilon <= 1.0
    again = lu_sequence_certificate(alpha=cert.alpha, epochs=list(plan["iterations"]),
                                    delta=1 / 256, sigma=Fraction(0.004), eta=eta, m=1,
                                    L=Fraction(5, 4), M=Fraction(0.05), n=256, S=2)
    assert again.epsilon == cert.epsilon
    assert any("DERIVED" in line for line in cert.provenance["derivation"])


@pytest.mark.slow
def test_reduced_audit_is_consistent_and_catches_a_broken_mechanism():
    spec = ADAPTER.demo_spec(trials=400)
    assert_consistent(spec, trials=400)
    broken = spec.replace(algorithm=dataclasses.replace(spec.algorithm,
                                                        noise_multiplier_scale=0.02))
    assert_violation(broken, trials=400)
