"""Audits in your CI: copy this file into your tests and adapt it.

Run with ``python -m pytest examples/test_my_unlearning.py``. Each test runs a reduced audit
(a few hundred trials, seconds on a laptop CPU) and fails with the audit's summary when an
empirical lower bound exceeds the certified epsilon. See docs/audits.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audits.loader import demo_spec
from audits.protocols import ModelOutputs, TrialBatch
from audits.testing import assert_consistent, assert_violation


def test_pnsgd_keeps_its_certificate():
    """PNSGD's demo (on digits, certified (1, 1/n)), reduced to 300 trials. Your own spec file
    goes here as its path, e.g. ``assert_consistent("audits/my_algorithm.toml", trials=300)``."""
    result = assert_consistent(demo_spec(algorithm="pnsgd"), trials=300)
    # A pass is only as strong as the audit: check that it could have seen a violation.
    ceiling = result.report["empirical"]["max_certifiable_epsilon"]
    assert ceiling > result.certified_epsilon


def test_the_audit_catches_a_broken_noise_scale():
    """The same algorithm with 10x too little noise must be caught."""
    broken = {"trials": 600, "pilot_trials": 0, "attacks": ["loss"], "estimators": [],
              "algorithm": {"name": "pnsgd", "noise_multiplier_scale": 0.1}}
    assert_violation(broken)


@dataclass(frozen=True)
class MyNoisyMean:
    """A toy "unlearning" mechanism: release the mean of the data plus Gaussian noise.

    The unlearned model saw the deleted record (the released value is shifted by
    ``sensitivity``); the retrained one did not. A real mechanism would train and unlearn
    models here and score the forgotten records (e.g. minus their loss).
    """

    sensitivity: float = 0.1
    noise: float = 0.5

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        # Trial i draws from its own generator, so chunking never changes its numbers.
        noise = np.array([np.random.default_rng([seed, i]).standard_normal(2)
                          for i in range(first_trial, first_trial + n_trials)]) * self.noise
        unlearned = ModelOutputs(scores={"release": self.sensitivity + noise[:, 0]})
        retrained = ModelOutputs(scores={"release": noise[:, 1]})
        return TrialBatch(unlearned, retrained)


def test_my_mechanism_meets_its_claim():
    # Gaussian mechanism: mu = sensitivity / noise = 0.2, whose exact epsilon at delta = 1e-3
    # is about 0.45; claiming 1.0 is honest and the audit must not object.
    assert_consistent(MyNoisyMean(), certified_epsilon=1.0, delta=1e-3, trials=2000)
