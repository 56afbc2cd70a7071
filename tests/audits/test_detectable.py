"""What a CONSISTENT audit could have seen (audits/detectable.py): the figures are the design's
own, the Gaussian equivalent meets the certificate and no more, and a claimed detection holds
on fresh draws."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audits.detectable import Design, detectable, gaussian_equivalent_mu
from audits.protocols import Certificate
from audits.runner import audit_scores
from audits.verdict import DETECTABLE_VARIABLE
from empirical.statistics.gdp import gaussian_delta, gaussian_epsilon

RDP = Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1, sigma=1)


@pytest.fixture
def simulated(monkeypatch):
    monkeypatch.setenv(DETECTABLE_VARIABLE, "1")


def test_the_gaussian_equivalent_meets_the_certificate_and_no_more():
    # Its Rényi curve alpha / 2 is exactly the Gaussian pair's at mu = 1.
    assert gaussian_equivalent_mu(RDP) == pytest.approx(1.0, abs=1e-9)
    plain = Certificate(epsilon=gaussian_epsilon(mu=0.7, delta=1e-5), delta=1e-5)
    mu = gaussian_equivalent_mu(plain)
    # the pair at mu meets the certificate (its hockey-stick divergence at the certified
    # epsilon is at most delta); a slightly larger mu does not
    assert gaussian_delta(mu=mu, epsilon=plain.epsilon) <= 1e-5
    assert gaussian_delta(mu=mu * (1 + 1e-9), epsilon=plain.epsilon) > 1e-5 * (1 - 1e-6)
    assert mu == pytest.approx(0.7, rel=1e-6)


def test_a_consistent_report_says_what_it_could_have_seen(simulated):
    rng = np.random.default_rng(3)
    result = audit_scores(unlearned={"s": rng.normal(1.0, 1.0, 2000)},
                          retrained={"s": rng.normal(0.0, 1.0, 2000)}, certificate=RDP,
                          estimators=[])
    verdict = result.report["verdict"]
    assert result.status == "CONSISTENT"
    seen = verdict["detectable"]
    assert [f["family"] for f in seen["families"]] == ["noise shortfall", "point-mass leak",
                                                       "tail leak"]
    assert seen["summary"] in verdict["explanation"]
    for family in seen["families"]:
        if family["smallest_detected"] is not None:
            assert family["refutations"] >= 8


def test_the_simulation_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(DETECTABLE_VARIABLE, "0")
    rng = np.random.default_rng(3)
    result = audit_scores(unlearned={"s": rng.normal(1.0, 1.0, 400)},
                          retrained={"s": rng.normal(0.0, 1.0, 400)}, certificate=RDP,
                          estimators=[])
    assert result.report["verdict"]["detectable"] is None
    assert "not simulated" in result.report["verdict"]["explanation"]


def test_the_figures_depend_only_on_the_design():
    design = Design(n=600, statistics=("pilot-regions",), direction="both", miss=0.05,
                    n_eps=1, n_renyi=1, n_attacks=1)
    first, second = detectable(RDP, design), detectable(RDP, design)
    assert first == second
    shortfall = first.families[0]
    assert shortfall.family == "noise shortfall"
    # a larger design never sees less in this family
    larger = detectable(RDP, Design(**{**design.__dict__, "n": 2400}))
    if shortfall.smallest_detected is not None:
        assert larger.families[0].smallest_detected is not None
        assert larger.families[0].smallest_detected <= shortfall.smallest_detected


@pytest.mark.slow  # 20 fresh audits at the claimed shortfall
def test_a_claimed_noise_shortfall_is_caught_on_fresh_draws(simulated):
    design = Design(n=2000, statistics=("pilot-regions",), direction="both", miss=0.05,
                    n_eps=1, n_renyi=1, n_attacks=1)
    claimed = detectable(RDP, design).families[0].smallest_detected
    assert claimed is not None and math.isfinite(claimed)
    caught = 0
    for seed in range(20):
        rng = np.random.default_rng([424242, seed])
        result = audit_scores(unlearned={"s": rng.normal(claimed, 1.0, 2000)},
                              retrained={"s": rng.normal(0.0, 1.0, 2000)}, certificate=RDP,
                              seed=seed, estimators=[])
        caught += result.status == "VIOLATION"
    # 80% claimed on 10 draws; on 20 fresh ones at least 12 (below that, the claim would be
    # off by more than its own sampling error allows: P(Bin(20, 0.8) <= 11) < 1%)
    assert caught >= 12
