"""Honest statuses (issue 10): VIOLATION, CONSISTENT, INCONCLUSIVE, their exit codes, the trials
an INCONCLUSIVE audit would need, and both score directions by default."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from audits.analysis import POSSIBLE_CAUSES
from audits.cli import main as cli_main
from audits.protocols import Certificate, ModelOutputs, TrialBatch
from audits.report.schema import EXIT_CODES, STATUSES
from audits.runner import audit_scores
from audits.testing import assert_consistent
from empirical.statistics import BonferroniPareto, max_certifiable_epsilon

DOCS = Path(__file__).resolve().parents[2] / "docs" / "audits.md"


def _separated(n: int) -> dict:
    """Perfectly separated scores: the strongest evidence n trials can carry."""
    return {"unlearned": {"s": np.linspace(10.0, 11.0, n)},
            "retrained": {"s": np.linspace(0.0, 1.0, n)}}


def test_each_status_has_its_own_documented_exit_code():
    assert set(EXIT_CODES) == set(STATUSES)
    assert EXIT_CODES["CONSISTENT"] == 0
    codes = list(EXIT_CODES.values())
    assert len(set(codes)) == len(codes)
    assert not {1, 2} & {EXIT_CODES["VIOLATION"], EXIT_CODES["INCONCLUSIVE"]}  # CLI errors
    text = DOCS.read_text(encoding="utf-8")
    for status, code in EXIT_CODES.items():
        assert f"| {status} | {code} |" in text


def test_twenty_trials_are_inconclusive_and_say_how_many_are_needed():
    cert = Certificate(epsilon=3.0, delta=1e-5)
    result = audit_scores(**_separated(20), certificate=cert)
    verdict = result.report["verdict"]
    assert result.status == "INCONCLUSIVE" and verdict["exit_code"] == EXIT_CODES["INCONCLUSIVE"]
    # Even perfectly separated scores cannot show more than the ceiling, below the certificate.
    alpha_each = verdict["tests"]["alpha_each"]
    ceiling = max_certifiable_epsilon(n_positive=20, n_negative=20, delta=1e-5, alpha=alpha_each,
                                      strategy=BonferroniPareto()).epsilon
    assert result.report["empirical"]["max_certifiable_epsilon"] == pytest.approx(ceiling)
    assert ceiling < 3.0
    needed = verdict["trials_needed"]
    assert isinstance(needed, int) and needed > 20
    assert f"About {needed} trials" in verdict["explanation"]
    # The number is right: perfectly separated scores refute the claim at `needed` trials and
    # cannot a few percent below it.
    assert audit_scores(**_separated(needed), certificate=cert).status == "VIOLATION"
    below = int(needed * 0.94)
    assert audit_scores(**_separated(below), certificate=cert).status == "INCONCLUSIVE"


def test_a_violation_blames_the_run_and_lists_the_causes():
    rng = np.random.default_rng(0)
    result = audit_scores(unlearned={"s": rng.normal(4.0, 1.0, 2000)},
                          retrained={"s": rng.normal(0.0, 1.0, 2000)},
                          certificate=Certificate(epsilon=1.0, delta=1e-5))
    verdict = result.report["verdict"]
    assert result.status == "VIOLATION" and verdict["exit_code"] == EXIT_CODES["VIOLATION"]
    assert verdict["explanation"].startswith("The mechanism as run does not meet the certificate")
    assert verdict["possible_causes"] == list(POSSIBLE_CAUSES)
    assert [c.split()[1].strip(",") for c in POSSIBLE_CAUSES] == ["implementation", "assumption", "theorem"]
    summary = result.summary()
    assert "possible causes" in summary and "implementation" in summary


def test_a_reversed_score_is_caught_by_the_default_two_direction_test():
    """Lower score = member: a "score >= t" test alone sees nothing."""
    rng = np.random.default_rng(1)
    scores = {"unlearned": {"s": rng.normal(-4.0, 1.0, 2000)},
              "retrained": {"s": rng.normal(0.0, 1.0, 2000)}}
    cert = Certificate(epsilon=1.0, delta=1e-5)
    one_way = audit_scores(**scores, certificate=cert, direction="greater")
    assert one_way.status == "CONSISTENT"
    both = audit_scores(**scores, certificate=cert)
    assert both.status == "VIOLATION"
    caught = both.report["verdict"]["violations"]
    assert caught and all(e["details"]["score_direction"] == "lower score = unlearned"
                          for e in caught)
    # Bonferroni over both orientations: each test at half the level.
    assert both.report["verdict"]["tests"]["family_size"] == 2
    assert both.report["verdict"]["tests"]["alpha_each"] == pytest.approx(0.025)
    assert audit_scores(**scores, certificate=cert, direction="less").status == "VIOLATION"
    with pytest.raises(ValueError, match="direction"):
        audit_scores(**scores, certificate=cert, direction="up")


@dataclass(frozen=True)
class _Shift:
    shift: float

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        rng = [np.random.default_rng([seed, i]) for i in range(first_trial, first_trial + n_trials)]
        u = np.array([g.normal(self.shift, 1.0) for g in rng])
        r = np.array([g.normal(0.0, 1.0) for g in rng])
        return TrialBatch(ModelOutputs(scores={"s": u}), ModelOutputs(scores={"s": r}))


def test_assert_consistent_fails_on_inconclusive_unless_allowed():
    mechanism = _Shift(0.0)
    with pytest.raises(AssertionError, match="INCONCLUSIVE"):
        assert_consistent(mechanism, certified_epsilon=3.0, delta=1e-5, trials=20)
    result = assert_consistent(mechanism, certified_epsilon=3.0, delta=1e-5, trials=20,
                               allow_inconclusive=True)
    assert result.status == "INCONCLUSIVE"
    assert assert_consistent(mechanism, certified_epsilon=3.0, delta=1e-5,
                             trials=400).status == "CONSISTENT"


@pytest.mark.slow  # a 16-trial PNSGD audit and the trials-needed search: ~10-40 s on one core
def test_cli_exit_code_of_an_inconclusive_audit(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text('trials = 16\npilot_trials = 4\nattacks = ["loss"]\nestimators = []\n')
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["audit", "run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert exit_info.value.code == EXIT_CODES["INCONCLUSIVE"] == 4
    assert "INCONCLUSIVE" in capsys.readouterr().out


def test_inconclusive_needs_no_power_at_all():
    """A claim no audit of up to 10^7 trials can refute says so instead of a number."""
    result = audit_scores(**_separated(50), certificate=Certificate(epsilon=60.0, delta=1e-5))
    assert result.status == "INCONCLUSIVE"
    assert result.report["verdict"]["trials_needed"] is None
    assert math.isfinite(result.report["empirical"]["max_certifiable_epsilon"])
