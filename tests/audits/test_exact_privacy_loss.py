"""The exact privacy loss of mechanisms whose output laws are known Gaussians: the adapters'
``exact_laws`` hook, the report field ``exact_privacy_loss`` (JSON, text, HTML), the
likelihood-ratio attack, and the audit's lower bounds against the exact epsilon.

Ground truth for Noisy-GD on the linear loss with the flip replacement of a record whose clipped
gradient has norm L (every digits record has norm 1 > L): the two means differ by
c^K (1 - c^K_A) (s_0 - s_1) / lam with ||s_0 - s_1|| = 2 L / n and c = 1 - eta lam, and both
variances are rho's sigma^2 / (lam (1 - eta lam / 2)).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from audits.fields import SpecError
from audits.loader import adapter_of, load_spec
from audits.protocols import CURVE_ORDERS
from audits.report.html import render_html
from audits.report.schema import validate_report
from audits.report.text import summary_text
from audits.runner import prepare_audit, run_audit
from audits.spec import ModelSpec
from bounds.conversions import gaussian_epsilon
from empirical.statistics.pilot import single_threshold_limit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOISY_GD = EXAMPLES / "noisy_gd_linear_exact.toml"
D2D = EXAMPLES / "d2d_exact.toml"
OUTPUT_PERTURBATION = EXAMPLES / "output_perturbation_exact.toml"


def _small(path: Path, *, trials: int, seed: int = 0):
    spec = load_spec(path)
    return spec.replace(trials=trials, pilot_trials=max(2, trials // 10), seed=seed)


def _noisy_gd_mu(prepared) -> float:
    config = prepared.mechanism.inner.config
    eta, lam, clip = config.step_size, config.l2, config.clip
    c = 1 - eta * lam
    n = prepared.certificate.inputs["n"]
    gap = c**config.unlearn_steps * (1 - c**config.learn_steps) * 2 * clip / (n * lam)
    return gap / math.sqrt(config.sigma**2 / (lam * (1 - eta * lam / 2)))


def test_noisy_gd_linear_exact_loss_is_the_closed_form_gaussian_pair():
    prepared = prepare_audit(load_spec(NOISY_GD))
    exact = prepared.exact_privacy_loss
    mu = _noisy_gd_mu(prepared)
    assert exact["gaussian_mu"] == pytest.approx(mu, rel=1e-9)
    assert exact["epsilon"] == pytest.approx(gaussian_epsilon(delta=0.1, mu=mu), rel=1e-9)
    assert exact["delta"] == prepared.certificate.delta == 0.1
    orders = [a for a, _ in prepared.certificate.renyi_curve]
    assert [a for a, _ in exact["renyi"]] == orders
    for order, value in exact["renyi"]:
        assert value == pytest.approx(order * mu**2 / 2, rel=1e-9)
    # an exact loss lies under every valid certificate, at every order too
    assert exact["epsilon"] <= prepared.certificate.epsilon
    for (_, value), (_, certified) in zip(exact["renyi"], prepared.certificate.renyi_curve,
                                          strict=True):
        assert value <= certified
    assert "Balle and Wang 2018, Theorem 8" in exact["method"] and exact["assumptions"]


def test_report_shows_the_exact_privacy_loss_beside_certificate_and_lower_bound(tmp_path):
    result = run_audit(_small(D2D, trials=600), out_dir=tmp_path)
    report = result.report
    exact = report["exact_privacy_loss"]
    assert set(exact) == {"epsilon", "delta", "gaussian_mu", "renyi", "method", "assumptions"}
    assert validate_report(report)["exact_privacy_loss"] == exact
    text = summary_text(report)
    assert f"exact epsilon       {exact['epsilon']:.4g} at delta 0.1" in text
    assert [a for a, _ in exact["renyi"]] == list(CURVE_ORDERS)  # an (epsilon, delta) certificate
    page = render_html(report)
    assert "Exact privacy loss of the mechanism as run" in page
    assert "exact ε of the mechanism as run" in page
    assert (tmp_path / "report.html").read_text(encoding="utf-8").count("exact-loss") == 1
    broken = {**report, "exact_privacy_loss": {**exact, "renyi": [[0.5, 1.0]]}}
    with pytest.raises(ValueError, match=r"exact_privacy_loss.renyi\[0\]"):
        validate_report(broken)
    broken = {**report, "exact_privacy_loss": {**exact, "gaussian_mu": -1.0}}
    with pytest.raises(ValueError, match="exact_privacy_loss.gaussian_mu"):
        validate_report(broken)


def test_a_mechanism_without_exact_laws_reports_none_and_refuses_the_likelihood_ratio():
    spec = load_spec(EXAMPLES / "noisy_gd_digits.toml")  # logistic loss: not Gaussian
    report = run_audit(spec.replace(trials=200, pilot_trials=20)).report
    assert report["exact_privacy_loss"] is None
    assert "exact epsilon" not in summary_text(report)
    assert "exact-loss" not in render_html(report)
    with pytest.raises(SpecError, match=r"^spec.attacks: 'likelihood-ratio' needs the exact"):
        prepare_audit(spec.replace(attacks=("likelihood-ratio",)))
    pnsgd = load_spec(EXAMPLES / "pnsgd_digits.toml")
    assert prepare_audit(pnsgd.replace(trials=100, pilot_trials=10)).exact_privacy_loss is None


@pytest.mark.parametrize(("path", "seed"), [(NOISY_GD, 0), (D2D, 0), (D2D, 1), (D2D, 2)])
def test_lower_bounds_never_exceed_the_exact_epsilon(path, seed):
    report = run_audit(_small(path, trials=1500, seed=seed)).report
    exact = report["exact_privacy_loss"]["epsilon"]
    assert 0 < report["verdict"]["max_lower_bound"] <= exact
    assert report["verdict"]["status"] != "VIOLATION"


def test_output_perturbation_laws_match_monte_carlo_means_and_variance():
    spec = load_spec(EXAMPLES / "output_perturbation_digits_mlp.toml")
    params = dataclasses.replace(spec.algorithm, finetune_steps=0, report_figures=False)
    spec = spec.replace(algorithm=params, trials=100, pilot_trials=10)
    prepared = prepare_audit(spec)
    assert prepared.exact_privacy_loss is not None
    laws = adapter_of(spec).exact_laws(spec, prepared)
    batch = prepared.mechanism.run_trials(seed=4, first_trial=0, n_trials=1500)
    for side, mean in ((batch.unlearned, laws.unlearned_mean),
                       (batch.retrained, laws.retrained_mean)):
        samples = side.statistics["params"]
        n = samples.shape[0]
        z_mean = (samples.mean(0) - mean) / math.sqrt(laws.variance / n)
        z_var = (samples.var(0, ddof=1) - laws.variance) / (laws.variance * math.sqrt(2 / (n - 1)))
        assert np.abs(z_mean).max() < 6 and np.abs(z_var).max() < 6
    # fine-tuning after the noise passes it through the network: no exact law
    tuned = dataclasses.replace(params, finetune_steps=3)
    assert prepare_audit(spec.replace(algorithm=tuned, trials=100,
                                      pilot_trials=10)).exact_privacy_loss is None


@pytest.mark.parametrize(("path", "change"), [
    (EXAMPLES / "d2d_digits.toml", {}),
    (EXAMPLES / "noisy_gd_digits.toml", {"model": ModelSpec(name="linear")}),
])
def test_at_the_demo_targets_no_single_threshold_reaches_eight_tenths_of_the_exact_epsilon(
        path, change):
    # At (1, 1/n) the mechanisms are far more private than certified: even the best single
    # threshold at the expected counts of N = 10^4 trials stays below 0.8 of the exact epsilon.
    spec = load_spec(path).replace(**change)
    if "model" in change:
        spec = spec.replace(algorithm=dataclasses.replace(spec.algorithm, beta=0.25))
    prepared = prepare_audit(spec)
    exact = prepared.exact_privacy_loss
    limit = single_threshold_limit(mu=exact["gaussian_mu"], delta=exact["delta"], n=10_000)
    assert limit < 0.8 * exact["epsilon"]


def test_cli_json_gives_the_exact_epsilon_beside_the_certified_one(tmp_path, capsys):
    import json

    from audits.cli import main

    # exit 4: INCONCLUSIVE, as N = 10^4 cannot show epsilon near the certified 100
    assert main(["audit", "run", str(D2D), "--out", str(tmp_path / "out"), "--json"]) == 4
    out = json.loads(capsys.readouterr().out)
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert out["exact_epsilon"] == report["exact_privacy_loss"]["epsilon"]
    assert out["max_lower_bound"] <= out["exact_epsilon"] <= out["certified_epsilon"]


@pytest.mark.parametrize("path", [pytest.param(NOISY_GD, marks=pytest.mark.slow), D2D,
                                  pytest.param(OUTPUT_PERTURBATION, marks=pytest.mark.slow)])
def test_default_attacks_reach_eight_tenths_of_the_exact_epsilon_at_ten_thousand_trials(path):
    # The example names no attacks: the default resolves to the likelihood-ratio test of the
    # exact laws. A lower bound at one seed scatters by a few hundredths of the exact epsilon
    # around what the design reaches (Noisy-GD: 0.82, 0.85 and 0.89 of it at seeds 0, 1, 2),
    # so the claim is the median of three audits; every bound stays valid (at most the exact
    # epsilon).
    spec = load_spec(path)
    assert spec.attacks is None
    fractions = []
    for seed in (0, 1, 2):
        report = run_audit(spec.replace(seed=seed), extra_figures=False).report
        exact = report["exact_privacy_loss"]["epsilon"]
        best = report["verdict"]["max_lower_bound"]
        assert report["empirical"]["n_trials"] == 10_000
        assert report["empirical"]["attacks"] == ["likelihood-ratio"]
        assert report["verdict"]["best_lower_bound"]["attack"] == "likelihood-ratio"
        assert best <= exact
        fractions.append(best / exact)
    assert sorted(fractions)[1] >= 0.8


def test_likelihood_ratio_score_is_the_log_density_ratio_of_each_models_parameters():
    from scipy import stats

    from audits.exact_loss import LikelihoodRatioMechanism
    from audits.protocols import ModelOutputs, TrialBatch

    prepared = prepare_audit(_small(D2D, trials=50))
    mechanism = prepared.mechanism
    assert isinstance(mechanism, LikelihoodRatioMechanism)
    laws = mechanism.laws
    batch = mechanism.run_trials(seed=3, first_trial=0, n_trials=20)
    cov = laws.variance * np.eye(laws.unlearned_mean.shape[0])
    for side in (batch.unlearned, batch.retrained):
        x = side.statistics["params"]
        expected = (stats.multivariate_normal(laws.unlearned_mean, cov).logpdf(x)
                    - stats.multivariate_normal(laws.retrained_mean, cov).logpdf(x))
        np.testing.assert_allclose(side.scores["likelihood-ratio"], expected, rtol=1e-8,
                                   atol=1e-8)

    class NoParameters:
        def run_trials(self, *, seed, first_trial, n_trials):
            side = ModelOutputs(scores={"loss": np.zeros(n_trials)})
            return TrialBatch(side, side)

    with pytest.raises(ValueError, match="needs the final parameters"):
        LikelihoodRatioMechanism(NoParameters(), laws).run_trials(seed=0, first_trial=0,
                                                                  n_trials=2)
