"""Honest statuses: VIOLATION, CONSISTENT, INCONCLUSIVE, their exit codes, the trials
an INCONCLUSIVE audit would need, and both score directions by default."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from audits.cli import main as cli_main
from audits.protocols import Certificate, ModelOutputs, TrialBatch
from audits.report.schema import EXIT_CODES, STATUSES
from audits.runner import audit_scores
from audits.testing import assert_consistent
from audits.verdict import POSSIBLE_CAUSES
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
    # Twenty trials are too few for the default statistic's pilot: it certifies every threshold
    # of both orientations in its one test.
    alpha_each = verdict["tests"]["alpha_each"]
    ceiling = max_certifiable_epsilon(n_positive=20, n_negative=20, delta=1e-5, alpha=alpha_each,
                                      strategy=BonferroniPareto(),
                                      two_sided_threshold=True).epsilon
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
    # The default statistic covers both orientations in one simultaneous event: one test at the
    # full level, its orientation chosen by its pilot.
    assert both.report["verdict"]["tests"]["family_size"] == 1
    assert both.report["verdict"]["tests"]["alpha_each"] == pytest.approx(0.05)
    assert all(e["details"]["orientation_chosen_by_statistic"] for e in caught)
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
    code = cli_main(["audit", "run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert code == EXIT_CODES["INCONCLUSIVE"] == 4
    assert "INCONCLUSIVE" in capsys.readouterr().out


def test_inconclusive_needs_no_power_at_all():
    """A claim no audit of up to 10^7 trials can refute says so instead of a number."""
    result = audit_scores(**_separated(50), certificate=Certificate(epsilon=60.0, delta=1e-5))
    assert result.status == "INCONCLUSIVE"
    assert result.report["verdict"]["trials_needed"] is None
    assert math.isfinite(result.report["empirical"]["max_certifiable_epsilon"])


def _forward_certificate(epsilon: float, delta: float, divergence) -> Certificate:
    orders = (1.5, 2.0, 4.0, 8.0, 32.0)
    return Certificate(epsilon=epsilon, delta=delta, renyi_direction="forward",
                       renyi_curve=tuple((a, divergence(a)) for a in orders))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_exactly_right_forward_certificate_is_not_refuted_by_the_reverse_direction(seed):
    """Unlearned ~ Bernoulli(a), retrained ~ Bernoulli(b): the forward curve and the forward
    (eps, delta) are exact; only the reverse direction (not certified) is large."""
    a, b, delta = 0.001, 0.1, 1e-5

    def divergence(order: float) -> float:
        return math.log(a**order * b ** (1 - order)
                        + (1 - a) ** order * (1 - b) ** (1 - order)) / (order - 1)

    cert = _forward_certificate(math.log((1 - a - delta) / (1 - b)), delta, divergence)
    rng = np.random.default_rng(100 + seed)
    result = audit_scores(unlearned={"s": (rng.random(10_000) < a).astype(float)},
                          retrained={"s": (rng.random(10_000) < b).astype(float)},
                          certificate=cert, seed=seed)
    assert result.status != "VIOLATION", result.summary()
    assert result.max_lower_bound <= cert.epsilon
    entries = result.report["empirical"]["lower_bounds"]
    assert {e["details"]["certificate_direction"] for e in entries} == {"forward"}


def test_a_point_mass_only_in_the_retrained_world_does_not_refute_a_forward_certificate():
    """Retrained = 0.99 N(0, 1) + 0.01 at 12: D_alpha(unlearned || retrained) = log(1/0.99) at
    every order and the forward (eps, delta) is (log(1/0.99), 0); the atom only breaks the
    reverse direction, which the certificate does not state."""
    w, delta = 0.01, 1e-5
    value = -math.log(1 - w)
    cert = _forward_certificate(value, delta, lambda order: value)
    rng = np.random.default_rng(7)
    n = 10_000
    retrained = np.where(rng.random(n) < w, 12.0, rng.normal(0.0, 1.0, n))
    result = audit_scores(unlearned={"s": rng.normal(0.0, 1.0, n)}, retrained={"s": retrained},
                          certificate=cert)
    assert result.status != "VIOLATION", result.summary()
    # The same scores refute the symmetric claim: the atom is visible in the reverse direction.
    both = Certificate(epsilon=value, delta=delta,
                       renyi_curve=tuple((a, value) for a in (1.5, 2.0, 4.0, 8.0, 32.0)))
    assert audit_scores(unlearned={"s": rng.normal(0.0, 1.0, n)}, retrained={"s": retrained},
                        certificate=both).status == "VIOLATION"


_GAUSSIAN_RDP = {"delta": 1e-5, "sensitivity": 1, "sigma": 1}


def _no_privacy(n: int, seed: int) -> dict:
    """Unlearned N(50, 1) against retrained N(0, 1): a mechanism with no privacy at all."""
    rng = np.random.default_rng(seed)
    return {"unlearned": {"s": rng.normal(50.0, 1.0, n)},
            "retrained": {"s": rng.normal(0.0, 1.0, n)}}


@pytest.mark.parametrize(("n", "seed"), [(30, 11), (50, 12), (100, 13), (200, 14), (200, 15)])
def test_a_mechanism_with_no_privacy_is_never_consistent(n, seed):
    """The design's reach is its tests run on the two worlds pulled apart; scores already apart
    are their own reference, so they are refuted or the audit is INCONCLUSIVE, at any N."""
    cert = Certificate.from_bound("gaussian:rdp", **_GAUSSIAN_RDP)
    result = audit_scores(**_no_privacy(n, seed), certificate=cert, seed=seed, estimators=[])
    assert result.status in ("VIOLATION", "INCONCLUSIVE"), result.summary()
    assert result.report["verdict"]["could_show_violation"] == (result.status == "VIOLATION")
    if result.status == "INCONCLUSIVE":
        assert result.report["verdict"]["trials_needed"] > n


@pytest.mark.slow  # 12 audits of a few hundred trials with their reach: ~1 min on one core
def test_trials_needed_suffices_to_refute_a_mechanism_with_no_privacy():
    cert = Certificate.from_bound("gaussian:rdp", **_GAUSSIAN_RDP)
    # The directed Rényi test refutes such a mechanism from about 40 trials per side, so the
    # audit that plans the size is a 20-trial one.
    small = audit_scores(**_no_privacy(20, 0), certificate=cert, estimators=[])
    assert small.status == "INCONCLUSIVE"
    needed = small.report["verdict"]["trials_needed"]
    statuses = [audit_scores(**_no_privacy(needed, 100 + s), certificate=cert, seed=s,
                             estimators=[]).status for s in range(12)]
    assert statuses == ["VIOLATION"] * 12


@dataclass(frozen=True)
class _NoPrivacy:
    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        rng = [np.random.default_rng([seed, i]) for i in range(first_trial, first_trial + n_trials)]
        u = np.array([g.normal(50.0, 1.0) for g in rng])
        r = np.array([g.normal(0.0, 1.0) for g in rng])
        return TrialBatch(ModelOutputs(scores={"s": u}), ModelOutputs(scores={"s": r}))


def test_assert_consistent_does_not_pass_a_mechanism_with_no_privacy():
    cert = Certificate.from_bound("gaussian:rdp", **_GAUSSIAN_RDP)
    with pytest.raises(AssertionError, match="INCONCLUSIVE|VIOLATION"):
        assert_consistent(_NoPrivacy(), certificate=cert, trials=50)


@pytest.mark.parametrize("n", [4, 12, 29])
def test_pilot_threshold_gives_a_verdict_below_thirty_trials(n):
    """Its pilot is 5% of the trials but at least 2 per side, so small audits still run."""
    rng = np.random.default_rng(n)
    result = audit_scores(unlearned={"s": rng.normal(3.0, 1.0, n)},
                          retrained={"s": rng.normal(0.0, 1.0, n)},
                          certificate=Certificate(epsilon=1.0, delta=1e-5),
                          statistics=["pilot-threshold"], estimators=[])
    assert result.status in STATUSES
    entry, = result.report["empirical"]["lower_bounds"]
    assert entry["details"]["n_positive (unlearned)"] == n - 2


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_second_attack_cannot_make_a_mechanism_with_no_privacy_consistent(seed):
    """One attack separates the worlds, a second sees noise: the second attack's reference
    would be refuted, but the design could not refute what the first attack shows, so the
    audit is not CONSISTENT."""
    cert = Certificate.from_bound("gaussian:rdp", **_GAUSSIAN_RDP)
    rng = np.random.default_rng(seed)
    n = 200
    result = audit_scores(
        unlearned={"apart": rng.normal(50.0, 1.0, n), "noise": rng.normal(0.0, 1.0, n)},
        retrained={"apart": rng.normal(0.0, 1.0, n), "noise": rng.normal(0.0, 1.0, n)},
        certificate=cert, seed=seed, estimators=[])
    assert result.status != "CONSISTENT", result.summary()
