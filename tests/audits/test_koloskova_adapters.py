"""The three Koloskova et al. 2025 adapters: fields, certificates against the bound engine,
example specs, reduced audits (CONSISTENT at the certified noise, VIOLATION below it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import mpmath
import pytest

from audits.adapters.koloskova import _tables_sigma
from audits.fields import SpecError
from audits.loader import spec_from_dict, spec_from_toml
from audits.protocols import ModelOutputs, TrialBatch
from audits.registry import get_adapter
from audits.runner import prepare_audit
from audits.spec import AuditSpec
from audits.testing import assert_consistent, assert_violation
from empirical.mechanisms.koloskova2025_params import (
    GradientClippingParams,
    ModelClippingParams,
    OutputPerturbationParams,
)
from empirical.mechanisms.parameters import ParameterError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = ("koloskova-gradient-clipping", "koloskova-model-clipping", "output-perturbation")


def _fast(spec: AuditSpec, **algorithm) -> AuditSpec:
    """Fewer training and fine-tuning steps: the same mechanism at test speed."""
    params = spec.algorithm
    fields = {**params.to_dict(), "learn_steps": 60, "finetune_steps": 2,
              "report_figures": False, **algorithm}
    fields.pop("name")
    return spec.replace(algorithm=type(params)(**fields))


@pytest.mark.parametrize("name,file", [
    ("koloskova-gradient-clipping", "koloskova_digits_mlp.toml"),
    ("koloskova-model-clipping", "koloskova_model_clipping_digits_mlp.toml"),
    ("output-perturbation", "output_perturbation_digits_mlp.toml"),
])
def test_example_toml_is_the_demo(name, file):
    assert spec_from_toml(EXAMPLES / file) == get_adapter(name).demo_spec()


@pytest.mark.parametrize("field,value", [
    ("step_size", -1.0), ("clip", 0.0), ("C0", "x"), ("noise", "loose"), ("learn_steps", -2),
])
def test_bad_fields_name_their_path(field, value):
    with pytest.raises(SpecError, match=rf"^spec\.algorithm\.{field}: must be"):
        get_adapter("koloskova-gradient-clipping").parse_params({field: value}, "spec.algorithm")
    with pytest.raises(ParameterError, match=rf"^{field}: must be"):
        GradientClippingParams(**{field: value})


def test_model_and_request_checks():
    adapter = get_adapter("koloskova-model-clipping")
    spec = adapter.demo_spec(trials=10)
    with pytest.raises(SpecError, match="spec.model.name"):
        spec_from_dict({**spec.to_dict(), "model": {"name": "logistic-regression"}})
    request = {**spec.to_dict()["request"], "kind": "replace"}
    with pytest.raises(SpecError, match="spec.request"):
        spec_from_dict({**spec.to_dict(), "request": request})
    with pytest.raises(SpecError, match="^spec.algorithm.accountant: must be one of"):
        spec_from_dict({**spec.to_dict(), "algorithm": {**spec.to_dict()["algorithm"],
                                                        "accountant": "guess"}})
    with pytest.raises(ParameterError, match="^accountant: must be one of"):
        ModelClippingParams(accountant="guess")
    with pytest.raises(ParameterError, match="^noise: must be one of 'analytic', 'eq1'"):
        OutputPerturbationParams(noise="loose")


def test_gradient_clipping_certificate_equals_the_engine():
    from bounds.conversions import best_epsilon

    spec = get_adapter("koloskova-gradient-clipping").demo_spec(trials=10)
    prepared = prepare_audit(spec)
    cert, config = prepared.certificate, prepared.mechanism.config
    assert config.unlearn_steps == math.ceil(2.0 / (0.05 * 1.0))  # T* = C0/(gamma C1)
    again = best_epsilon("koloskova2025:thmA.9/lambda0", delta=1e-5, conversion="balle2020",
                         T=config.unlearn_steps, gamma=0.05, sigma=config.sigma, C0=2.0, C1=1.0)
    assert cert.epsilon == again.epsilon <= 1.0
    assert cert.bound == "koloskova2025:thmA.9/lambda0"


def test_paper_table_noise_claims_epsilon_but_certifies_far_more():
    """Erratum K1: the tables' sigma (zCDP slope = epsilon) certifies about 7 at delta = 1e-5,
    while the certificate records the claimed epsilon = 1 (an audit tests the claim)."""
    spec = get_adapter("koloskova-gradient-clipping").demo_spec(trials=10)
    spec = spec.replace(algorithm=GradientClippingParams(noise="paper-table"))
    prepared = prepare_audit(spec)
    cert, config = prepared.certificate, prepared.mechanism.config
    assert cert.epsilon == 1.0
    true_eps = cert.provenance["engine_certified_epsilon"]
    assert 5.0 < true_eps < 9.0
    # Independent: Theorem A.9 with lambda = 0 gives rho_z = 2 (C0 + gamma C1 T)^2 / (T sigma^2)
    T = config.unlearn_steps
    rho = 2 * (2.0 + 0.05 * 1.0 * T) ** 2 / (T * config.sigma**2)
    assert rho == pytest.approx(1.0, rel=1e-12)
    assert config.sigma == pytest.approx(_tables_sigma(T=T, gamma=0.05, lam=0.0, C0=2.0, C1=1.0,
                                                       epsilon=1.0))
    correct = prepare_audit(get_adapter("koloskova-gradient-clipping").demo_spec(trials=10))
    assert correct.mechanism.config.sigma > 2 * config.sigma


def test_model_clipping_certificate_rechecks_delta():
    from bounds.hockey_stick import model_clipping_log_deltas

    prepared = prepare_audit(get_adapter("koloskova-model-clipping").demo_spec(trials=10))
    cert, config = prepared.certificate, prepared.mechanism.config
    assert cert.bound == "koloskova2025:thm4.2/adaptive"
    logs = model_clipping_log_deltas(epsilon=1.0, C0=2.0, C2=2.0, sigma0=0.0, sigma=2.0,
                                     T=config.unlearn_steps, adaptive=True)
    assert logs[-1] <= math.log(1e-5) < logs[-2]  # least T
    paper = model_clipping_log_deltas(epsilon=1.0, C0=2.0, C2=2.0, sigma0=0.0, sigma=2.0,
                                      T=config.unlearn_steps, adaptive=False)
    assert paper[-1] > math.log(1e-5)  # Theorem 4.2's recursion needs more steps (erratum K4)


def _gaussian_delta_mp(epsilon: float, mu: float):
    mpmath.mp.dps = 60
    e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
    return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)


def test_output_perturbation_sigma_is_the_exact_gaussian():
    """sigma of eq. (1) analytic: the exact delta (60-digit mpmath, sensitivity 2 C0 = 4) is
    at most 1e-5 at sigma and above it 0.1% lower."""
    prepared = prepare_audit(get_adapter("output-perturbation").demo_spec(trials=10))
    sigma = prepared.mechanism.config.sigma
    assert _gaussian_delta_mp(1.0, 4 / mpmath.mpf(sigma)) <= mpmath.mpf("1e-5")
    assert _gaussian_delta_mp(1.0, 4 / (mpmath.mpf(sigma) * 0.999)) > mpmath.mpf("1e-5")
    with pytest.raises(SpecError, match="epsilon < 1"):
        spec = get_adapter("output-perturbation").demo_spec(trials=10)
        prepare_audit(spec.replace(algorithm=OutputPerturbationParams(noise="eq1")))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_reduced_audit_is_consistent_at_the_certified_noise(name):
    spec = _fast(get_adapter(name).demo_spec(trials=300))
    assert_consistent(spec, trials=300, pilot_trials=30)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["koloskova-model-clipping", "output-perturbation"])
def test_noise_shrunk_below_the_certificate_is_a_violation(name):
    spec = _fast(get_adapter(name).demo_spec(trials=200), noise_multiplier_scale=1e-4)
    assert_violation(spec, trials=200, pilot_trials=20)


@pytest.mark.slow
def test_accuracy_budget_plot_shape():
    from audits.adapters.koloskova import prepare_koloskova
    from audits.reproductions.koloskova2025 import accuracy_budget_plot

    spec = _fast(get_adapter("koloskova-model-clipping").demo_spec(trials=10))
    _, mechanism = prepare_koloskova(spec, device="cpu")
    plot = accuracy_budget_plot(mechanism.task(), config=mechanism.config, forget=mechanism.forget,
                                model=mechanism.model, seed=spec.seed, name=spec.algorithm.name,
                                budgets=(10, 40), trials=2)
    labels = [s["label"] for s in plot["series"]]
    assert labels == ["model-clipping", "retrain from scratch"]
    for series in plot["series"]:
        assert len(series["x"]) == len(series["y"]) and all(0 <= y <= 1 for y in series["y"])


# ----------------------------------------------------------------------------------------------
# Erratum K1 on a worst case of eq. (3): the tables' noise is caught, the correct noise is not.


@dataclass(frozen=True)
class _WorstCase:
    config: object

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        from empirical.mechanisms.koloskova2025 import run_worst_case_gradient_clipping

        a, b = run_worst_case_gradient_clipping(config=self.config, n_trials=n_trials, seed=seed,
                                                first_trial=first_trial)
        return TrialBatch(ModelOutputs(scores={"x": a}), ModelOutputs(scores={"x": b}))


def _worst_case(sigma: float):
    from empirical.mechanisms.koloskova2025 import KoloskovaConfig

    return _WorstCase(KoloskovaConfig(method="gradient-clipping", sigma=sigma, unlearn_steps=40,
                                      step_size=0.05, C0=2.0, C1=1.0))


@pytest.mark.slow
def test_k1_tables_noise_is_a_violation_on_the_worst_case():
    """The demo's (T, gamma, C0, C1) with the tables' sigma (zCDP slope = 1): the audit refutes
    the claimed (1, 1e-5) with N = 4000 pairs (at N = 1000 it is still CONSISTENT)."""
    sigma = _tables_sigma(T=40, gamma=0.05, lam=0.0, C0=2.0, C1=1.0, epsilon=1.0)
    assert_violation(_worst_case(sigma), certified_epsilon=1.0, delta=1e-5, trials=4000)


@pytest.mark.slow
def test_correct_noise_is_consistent_on_the_worst_case():
    prepared = prepare_audit(get_adapter("koloskova-gradient-clipping").demo_spec(trials=10))
    assert_consistent(_worst_case(prepared.mechanism.config.sigma),
                      certificate=prepared.certificate, trials=4000)


def test_network_bench_prints_progress_lines_on_stderr_under_json(capsys):
    import json

    from audits.cli import main

    assert main(["bench", "trials", "--algorithm", "koloskova-model-clipping", "--model", "head",
                 "--trials", "4", "--json"]) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)  # stdout stays one JSON object
    assert res["n_trials"] == 4 and res["loop_matches_batched"] is True
    assert 0 < res["batched_cpu_seconds"] and 0 < res["loop_cpu_seconds"]
    # under --json each progress line is one JSON object
    records = [json.loads(line) for line in captured.err.splitlines()]
    assert all(r["progress"] == "bench trials" for r in records)
    lines = [r["message"] for r in records]
    assert lines[0] == "head on digits: training A(D) and A(D_r) once, then one warm-up trial"
    assert any(line.startswith("batched: 4/4 trials (8 models) in ") for line in lines)
    assert lines[-1].startswith("one at a time: 4/4 trials (8 models) in ")


def test_bench_trials_takes_the_model():
    from audits.cli.bench import trials_benchmark

    res = trials_benchmark(algorithm="koloskova-model-clipping", n_trials=4, model="head")
    assert res["model"] == "head" and res["loop_matches_batched"]
    assert res["num_params"] == 64 * 32 + 32 + 32 * 16 + 16 + 16 * 2 + 2
    with pytest.raises(ValueError, match="--model"):
        trials_benchmark(algorithm="pnsgd", n_trials=2, model="mlp")
