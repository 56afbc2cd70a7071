"""audits.testing: reduced audits that fail tests on VIOLATION; the users' example file."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import audits.testing as testing
import bounds
import bounds.strategies as strategies
from audits.protocols import Certificate, ModelOutputs, TrialBatch
from audits.spec import demo_spec
from bounds.papers.chien2024 import THM32_SEQUENCE, sequence_start_distance

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Shift:
    mu: float

    def run_trials(self, *, seed, first_trial, n_trials):
        z = np.array([np.random.default_rng([seed, i]).standard_normal(2)
                      for i in range(first_trial, first_trial + n_trials)])
        return TrialBatch(ModelOutputs(scores={"s": z[:, 0] + self.mu}),
                          ModelOutputs(scores={"s": z[:, 1]}))


def test_assert_consistent_passes_and_fails_with_the_summary():
    result = testing.assert_consistent(Shift(0.2), certified_epsilon=2.0, delta=1e-3, trials=400)
    assert result.status == "CONSISTENT" and result.report["empirical"]["n_trials"] == 400
    with pytest.raises(AssertionError) as info:
        testing.assert_consistent(Shift(4.0), certified_epsilon=1.0, delta=1e-3, trials=400)
    message = str(info.value)
    assert "VIOLATION" in message and "Audit verdict: VIOLATION" in message
    assert "certified epsilon   1 at delta 0.001" in message


def test_assert_violation():
    testing.assert_violation(Shift(4.0), certificate=Certificate(epsilon=1.0, delta=1e-3),
                             trials=300)
    with pytest.raises(AssertionError, match="did not detect a violation"):
        testing.assert_violation(Shift(0.0), certified_epsilon=1.0, delta=1e-3, trials=100)


def test_reduced_spec_audit_overrides():
    result = testing.run_reduced_audit(demo_spec(), trials=60, seed=2, confidence=0.9)
    spec = result.report["spec"]
    assert spec["trials"] == 60 and spec["pilot_trials"] == 12
    assert spec["seed"] == 2 and result.report["empirical"]["confidence"] == 0.9
    assert result.report["certificate"]["bound"] == "chien2024:thm3.2"
    assert testing.DEFAULT_TEST_TRIALS == 500


def test_argument_errors():
    with pytest.raises(ValueError, match="comes from the bound engine"):
        testing.assert_consistent(demo_spec(), certified_epsilon=1.0, trials=10)
    with pytest.raises(ValueError, match="needs certified_epsilon and delta"):
        testing.assert_consistent(Shift(0.0), trials=10)
    with pytest.raises(ValueError, match="not both"):
        testing.assert_consistent(Shift(0.0), certificate=Certificate(epsilon=1, delta=0.1),
                                  certified_epsilon=1.0, trials=10)


def test_example_file_passes():
    """examples/test_my_unlearning.py, the file users copy, passes as shipped."""
    path = ROOT / "examples" / "test_my_unlearning.py"
    spec = importlib.util.spec_from_file_location("example_test_my_unlearning", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    tests = [getattr(module, name) for name in dir(module) if name.startswith("test_")]
    assert len(tests) == 3
    for test in tests:
        test()


@settings(max_examples=40, deadline=None)
@given(setting=strategies.pnsgd_setting(well_conditioned=True),
       T=st.integers(0, 30), K=st.integers(1, 5),
       sigma=st.floats(0.01, 10.0), alpha=st.floats(1.5, 50.0))
def test_sequence_composition_against_theorem_3_2(setting, T, K, sigma, alpha):
    """The audit's composed certificate for one request against the paper's theorem.

    Its distance (Lemma 3.4 burn-in plus the stationary Lemma 3.3 distance, capped at 2R, the
    diameter of C_R) is at least Theorem 3.2's Z_B capped at 2R; so wherever the theorem's Z_B
    is at most 2R the composed Rényi bound is at least the theorem's at every order.
    """
    z = float(sequence_start_distance(eta=Fraction(setting["eta"]), m=Fraction(setting["m"]),
                                       M=Fraction(setting["M"]), n=int(setting["n"]),
                                       b=int(setting["b"]), T=T, R=Fraction(setting["R"]),
                                       sizes=[1], epochs=[K]))
    f = strategies.as_floats(setting)
    c, per_epoch = 1 - f["eta"] * f["m"], f["n"] / f["b"]
    geometric = (1 - c ** (T * per_epoch)) / (1 - c**per_epoch)
    z_paper = 2 * f["R"] * c ** (T * per_epoch) + min(geometric * 2 * f["eta"] * f["M"] / f["b"],
                                                     2 * f["R"])
    assert z >= min(z_paper, 2 * f["R"]) * (1 - 1e-9)
    assert z <= 2 * f["R"] * (1 + 1e-9)
    if z_paper <= 2 * f["R"]:
        params = {**f, "sigma": sigma, "T": T, "K": K, "alpha": alpha, "Z": z}
        paper, composed = bounds.get("chien2024:thm3.2"), THM32_SEQUENCE
        value_paper = paper.float_function(*[params[p] for p in paper.parameter_names])
        value_composed = composed.float_function(*[params[p] for p in composed.parameter_names])
        assert value_composed >= value_paper * (1 - 1e-9)
