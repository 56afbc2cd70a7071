"""The audit runner: certificates from the bound engine, verdicts, reports, own mechanisms."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

import bounds
from audits.adapters.pnsgd import PNSGDMechanism
from audits.allocation import FLOOR_EPS, KIND_EPS
from audits.cli import main as cli_main
from audits.loader import demo_spec, spec_from_dict
from audits.protocols import Certificate, ModelOutputs, TrialBatch, TrialMechanism
from audits.report.schema import load_report, validate_report
from audits.runner import (
    audit_mechanism,
    audit_scores,
    comparable,
    prepare_audit,
    run_audit,
)
from audits.spec import AuditSpec, SpecError
from audits.statistics import DEFAULT_STATISTICS
from bounds.conversions import best_epsilon, gaussian_epsilon

ETA = 0.7999999999999999  # the largest float not above 1/L = 4/5 (L = 1/4 + lambda, lambda = 1)


def _spec(**changes) -> AuditSpec:
    """The demo with a few trials and any top-level or nested changes."""
    data = demo_spec(trials=changes.pop("trials", 200)).to_dict()
    data["pilot_trials"] = changes.pop("pilot_trials", 40)
    data["chunk_size"] = changes.pop("chunk_size", 250)
    for key, value in changes.items():
        if isinstance(value, dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return spec_from_dict(data)


# ----------------------------------------------------------------------------------------------
# Certificates


def test_demo_certificate_is_the_bound_engines_theorem_3_2():
    prepared = prepare_audit(demo_spec())
    cert = prepared.certificate
    assert cert.bound == "chien2024:thm3.2"
    sigma = cert.inputs["sigma"]
    assert Fraction(ETA) <= Fraction(4, 5) < Fraction(np.nextafter(ETA, 1.0))
    expected = best_epsilon("chien2024:thm3.2", delta=1 / 256, conversion="mironov",
                            sigma=sigma, eta=ETA, m=1.0, L="5/4", M=0.05, n=256, b=256, T=12,
                            K=1, R=100.0)
    assert cert.epsilon == expected.epsilon
    assert cert.alpha == pytest.approx(expected.alpha)
    assert cert.delta == 1 / 256
    assert cert.epsilon <= 1.0
    # Calibration: the least sigma; one tolerance step less fails the target.
    assert cert.calibration["parameter"] == "sigma"
    assert cert.calibration["value"] == sigma
    assert cert.calibration["neighbour"] < sigma
    assert cert.calibration["neighbour_epsilon"] > 1.0
    assert isinstance(prepared.mechanism, PNSGDMechanism)
    assert prepared.mechanism.config.sigma == sigma
    assert prepared.mechanism.config.init_std == 0.0  # learning starts at 0, inside C_R
    assert prepared.mechanism.config.radius == 100.0
    assert any("C_R" in line for line in cert.provenance["assumptions"])


def test_given_sigma_and_calibrated_K():
    spec = _spec(certificate={"target_epsilon": None},
                 algorithm={"sigma": 0.001, "unlearn_epochs": 2})
    cert = prepare_audit(spec).certificate
    expected = best_epsilon("chien2024:thm3.2", delta=1 / 256, sigma=0.001, eta=ETA, m=1.0,
                            L="5/4", M=0.05, n=256, b=256, T=12, K=2, R=100.0)
    assert cert.epsilon == expected.epsilon and cert.calibration is None
    spec = _spec(certificate={"calibrate": "K"}, algorithm={"sigma": 0.0003})
    prepared = prepare_audit(spec)
    cert = prepared.certificate
    assert cert.calibration["parameter"] == "K"
    k = cert.calibration["value"]
    assert isinstance(k, int) and prepared.mechanism.config.unlearn_epochs == k == cert.inputs["K"]
    assert cert.epsilon <= 1.0 and cert.calibration["neighbour_epsilon"] > 1.0


def test_batch_request_multiplies_M_by_S():
    spec = _spec(request={"size": 3, "indices": [0, 1, 2]})
    cert = prepare_audit(spec).certificate
    assert cert.inputs["M"] == pytest.approx(0.15)
    assert cert.bound == "chien2024:thm3.2"
    expected = best_epsilon("chien2024:thm3.2", delta=1 / 256, sigma=cert.inputs["sigma"],
                            eta=ETA, m=1.0, L="5/4", M=cert.inputs["M"], n=256, b=256, T=12,
                            K=1, R=100.0)
    assert cert.epsilon == expected.epsilon
    assert any("Corollary J.1" in line for line in cert.provenance["derivation"])


def _sequence_distance_by_hand(*, c, P, T, R, zb, epochs):
    z = min(2 * R * c ** (T * P) + min(zb, 2 * R), 2 * R)
    for k in epochs[:-1]:
        z = min(c ** (k * P) * z + min(zb, 2 * R), 2 * R)
    return z


def test_sequence_certificate_recursion_and_comparison_with_theorem_3_2():
    spec = _spec(request={"requests": 3, "indices": [0, 1, 2]},
                 algorithm={"unlearn_epochs": [1, 2, 1], "batch_size": 32, "l2": 0.05})
    cert = prepare_audit(spec).certificate
    assert cert.bound == "chien2024:thm3.2+thm3.11/sequence"
    eta = cert.inputs["eta"]
    c, P = 1 - eta * 0.05, 256 // 32
    zb = 2 * eta * 0.05 / (32 * (1 - c**P))
    z_hand = _sequence_distance_by_hand(c=c, P=P, T=12, R=100.0, zb=zb, epochs=[1, 2, 1])
    z = float(Fraction(cert.inputs["Z"]) if "/" in str(cert.inputs["Z"]) else cert.inputs["Z"])
    assert z >= z_hand * (1 - 1e-12) and z == pytest.approx(z_hand, rel=1e-10)
    assert cert.inputs["K"] == 1
    # One request: the composition's distance is at least Theorem 3.2's Z, so its certificate is
    # never smaller than the paper's theorem at the same numbers (soundness cross-check).
    single = _spec(request={"requests": 1, "indices": [0]},
                   certificate={"target_epsilon": None},
                   algorithm={"sigma": 0.01, "unlearn_epochs": 1, "batch_size": 32, "l2": 0.05})
    from bounds.papers.chien2024 import THM32_SEQUENCE, sequence_start_distance

    z1 = sequence_start_distance(eta=eta, m=Fraction(0.05), M=0.05, n=256, b=32, T=12,
                                 R=100.0, sizes=[1], epochs=[1])
    params = dict(sigma=0.01, eta=eta, m=0.05, L=Fraction(1, 4) + Fraction(0.05), M=0.05,
                  n=256, b=32, T=12, K=1, R=100.0)
    composed = best_epsilon(THM32_SEQUENCE, delta=1 / 256, Z=z1, **params).epsilon
    paper = prepare_audit(single).certificate.epsilon
    assert paper == best_epsilon("chien2024:thm3.2", delta=1 / 256, **params).epsilon
    assert composed >= paper


def test_runtime_spec_errors_name_the_field():
    with pytest.raises(SpecError, match=r"^spec\.algorithm\.batch_size: 1000 exceeds the 256"):
        prepare_audit(_spec(algorithm={"batch_size": 1000}))
    with pytest.raises(SpecError, match=r"^spec\.request\.indices: row 300 is out of range"):
        prepare_audit(_spec(request={"indices": [300]}))
    with pytest.raises(SpecError, match=r"^spec\.algorithm\.step_size: must be at most 1/L"):
        prepare_audit(_spec(algorithm={"step_size": 0.9}))
    with pytest.raises(SpecError, match=r"^spec\.certificate\.bound: chien2024:cor3\.7 does not"):
        prepare_audit(_spec(certificate={"bound": "chien2024:cor3.7"}))


# ----------------------------------------------------------------------------------------------
# End-to-end PNSGD audits


def test_reduced_demo_is_consistent_and_writes_a_valid_report(tmp_path):
    result = run_audit(demo_spec(trials=600).replace(pilot_trials=120), out_dir=tmp_path)
    report = result.report
    assert result.status == "CONSISTENT"
    assert load_report(tmp_path) == validate_report(report)
    assert (tmp_path / "report.html").stat().st_size > 10_000
    assert report["certificate"]["bound"] == "chien2024:thm3.2"
    assert report["certificate"]["epsilon"] <= 1.0
    lower = report["empirical"]["lower_bounds"]
    # One test per attack of the default statistic (both score orientations in one event, the
    # one it tested reported), plus one Rényi test per attack.
    assert [(e["attack"], e["statistic"]) for e in lower] == [
        ("loss", DEFAULT_STATISTICS[0]), ("projection", DEFAULT_STATISTICS[0])]
    assert all(e["details"]["orientation_chosen_by_statistic"] for e in lower)
    assert [t["attack"] for t in report["empirical"]["renyi"]] == ["loss", "projection"]
    # Weighted Bonferroni with weights from the allocation pilot: its normal fits predict that
    # the threshold tests cannot show more than the certified epsilon, so the 2 of them share
    # FLOOR_EPS of the 5% and the 2 Rényi tests the rest.
    assert report["verdict"]["tests"]["allocation"]["ruled_out"] == [KIND_EPS]
    alpha_eps = 0.05 * FLOOR_EPS / 2
    assert all(t["alpha_each"] == pytest.approx(0.05 * (1 - FLOOR_EPS) / 2)
               for t in report["empirical"]["renyi"])
    for entry in lower:
        # The label states the per-test level, not the overall 95%.
        assert entry["kind"] == "lower bound"
        assert entry["confidence"] == pytest.approx(1 - alpha_eps)
        assert entry["details"]["family_size"] == 4
        assert entry["details"]["alpha_each"] == pytest.approx(alpha_eps)
        assert entry["details"]["overall_confidence"] == 0.95
        assert 0 <= entry["epsilon"] <= report["empirical"]["max_certifiable_epsilon"]
    assert all(e["kind"] == "estimate" for e in report["empirical"]["estimates"])
    verdict = report["verdict"]
    assert verdict["max_lower_bound"] == max(e["epsilon"] for e in lower)
    assert verdict["tightness"] == pytest.approx(
        verdict["max_lower_bound"] / report["certificate"]["epsilon"])
    assert verdict["violations"] == []
    assert report["empirical"]["max_certifiable_epsilon"] > 1.0  # the audit had power
    utility = report["utility"]
    assert 0.8 < utility["unlearned_accuracy"]["mean"] <= 1.0
    assert len(utility["accuracies"]["retrained"]) == 600
    assert report["seeds"]["seed"] == 0 and report["seeds"]["pilot_seed"] != 0
    assert report["timing"]["chunks"] == 2 and report["timing"]["chunks_resumed"] == 0


def test_broken_mechanism_is_a_violation():
    """Noise scaled down 10x while the certificate keeps the declared sigma."""
    broken = _spec(trials=600, pilot_trials=0, attacks=["loss"], statistics=["bonferroni-pareto"],
                   estimators=[], algorithm={"noise_multiplier_scale": 0.1})
    honest = prepare_audit(_spec()).certificate
    result = run_audit(broken)
    cert = result.report["certificate"]
    assert cert["epsilon"] == honest.epsilon
    assert cert["inputs"]["sigma"] == honest.inputs["sigma"]
    assert "deliberately_broken" in cert["provenance"]
    assert result.status == "VIOLATION"
    violations = result.report["verdict"]["violations"]
    assert violations and all(v["epsilon"] > cert["epsilon"] for v in violations)
    assert result.tightness > 1.0
    assert "VIOLATION" in result.summary()


def test_same_seed_same_report_and_chunking_does_not_matter():
    spec = _spec(trials=150, pilot_trials=30, chunk_size=60)
    first, second = run_audit(spec), run_audit(spec)
    assert comparable(first.report) == comparable(second.report)
    rechunked = run_audit(spec.replace(chunk_size=37))
    assert rechunked.report["plots"]["scores"] == first.report["plots"]["scores"]
    assert rechunked.report["empirical"] == first.report["empirical"]
    other_seed = run_audit(spec.replace(seed=1))
    assert other_seed.report["plots"]["scores"] != first.report["plots"]["scores"]


@pytest.mark.parametrize("request_change", [
    {"kind": "remove"},
    {"replacement": "random"},
    {"size": 2, "indices": [3, 4]},
    {"requests": 2, "indices": [3, 4]},
])
def test_request_kinds_run(request_change):
    algorithm = {"unlearn_epochs": [1, 1]} if request_change.get("requests") else {}
    result = run_audit(_spec(trials=16, pilot_trials=4, request=request_change,
                             algorithm=algorithm, estimators=["auc"]))
    # 16 trials cannot refute an epsilon-1 certificate: the honest status is INCONCLUSIVE.
    assert result.status == "INCONCLUSIVE"
    assert result.report["verdict"]["trials_needed"] > 16
    validate_report(result.report)
    per_example = result.report["plots"]["per_example_epsilon"]
    if "indices" in request_change:  # two forgotten records: one estimate each
        assert len(per_example["values"]) == 2 and "estimate" in per_example["label"]
    else:
        assert per_example is None


# ----------------------------------------------------------------------------------------------
# Own mechanisms and precomputed scores: Gaussian ground truth


@dataclass(frozen=True)
class GaussianShift:
    """Unlearned scores N(shift, 1), retrained N(0, 1); statistics shifted along e_1."""

    shift: float
    dim: int = 3
    description: str = "Gaussian shift (test)"

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int) -> TrialBatch:
        draws = np.array([np.random.default_rng([seed, i]).standard_normal(2 + 2 * self.dim)
                          for i in range(first_trial, first_trial + n_trials)])
        mean = np.zeros(self.dim)
        mean[0] = self.shift
        unlearned = ModelOutputs(scores={"score": draws[:, 0] + self.shift},
                                 statistics={"stat": draws[:, 2:2 + self.dim] + mean},
                                 accuracy=np.full(n_trials, 0.9))
        retrained = ModelOutputs(scores={"score": draws[:, 1]},
                                 statistics={"stat": draws[:, 2 + self.dim:]},
                                 accuracy=np.full(n_trials, 0.91))
        return TrialBatch(unlearned, retrained)


def test_gaussian_mechanism_ground_truth_and_chunk_invariance():
    delta = 1e-3
    mechanism = GaussianShift(1.0)
    assert isinstance(mechanism, TrialMechanism)
    cert = Certificate(epsilon=10.0, delta=delta, bound="test:loose")
    a = audit_mechanism(mechanism, certificate=cert, trials=1500, pilot_trials=200,
                        chunk_size=400, estimators=["plugin-epsilon", "gaussian-kl"])
    b = audit_mechanism(mechanism, certificate=cert, trials=1500, pilot_trials=200,
                        chunk_size=333, estimators=["plugin-epsilon", "gaussian-kl"])
    assert a.report["empirical"] == b.report["empirical"]
    truth = gaussian_epsilon(delta=delta, mu=1.0)
    lower: dict[str, float] = {}
    for entry in a.report["empirical"]["lower_bounds"]:  # best over both score orientations
        lower[entry["attack"]] = max(lower.get(entry["attack"], 0.0), entry["epsilon"])
    assert set(lower) == {"score", "projection"}
    assert 0 < lower["score"] <= truth and 0 < lower["projection"] <= truth
    kl = [e for e in a.report["empirical"]["estimates"]
          if e["attack"] == "score" and "KL" in e["name"]][0]
    assert kl["value"] == pytest.approx(0.5, abs=0.15)  # KL(N(1,1)||N(0,1)) = 1/2
    # epsilon 10 cannot be refuted by 1500 trials (ceiling below it): honestly INCONCLUSIVE.
    assert a.status == "INCONCLUSIVE"
    assert a.report["empirical"]["max_certifiable_epsilon"] < 10.0
    assert a.report["verdict"]["trials_needed"] > 1500
    assert a.report["utility"]["retrained_accuracy"]["mean"] == pytest.approx(0.91)


def test_a_claim_below_the_truth_is_refuted():
    # Gaussian shift 3: the true epsilon at delta 1e-3 is about 7.5; claiming 1 must fail.
    result = audit_mechanism(GaussianShift(3.0), trials=800,
                             certificate=Certificate(epsilon=1.0, delta=1e-3))
    assert gaussian_epsilon(delta=1e-3, mu=3.0) > 5
    assert result.status == "VIOLATION"
    assert result.report["certificate"]["provenance"]["source"].startswith("given by the caller")


def test_audit_scores_precomputed_and_per_example(tmp_path):
    rng = np.random.default_rng(5)
    unlearned = rng.standard_normal((400, 3)) + np.array([0.0, 0.5, 4.0])
    retrained = rng.standard_normal((400, 3))
    cert = Certificate.from_bound("chien2024:thm3.2", delta=1e-3, sigma="0.05", eta="1/L",
                                  m="0.011264", L="0.261264", M=1, n=11264, b=128, T=20, K=1,
                                  R=100)
    assert cert.epsilon == best_epsilon("chien2024:thm3.2", delta=1e-3, sigma="0.05",
                                        eta="1/L", m="0.011264", L="0.261264", M=1, n=11264,
                                        b=128, T=20, K=1, R=100).epsilon
    result = audit_scores(unlearned={"logit": unlearned}, retrained={"logit": retrained},
                          certificate=cert, out_dir=tmp_path)
    report = load_report(tmp_path)
    assert report["utility"] is None
    per_example = report["plots"]["per_example_epsilon"]["values"]
    assert len(per_example) == 3 and per_example[2] > per_example[0]
    assert report["timing"]["chunks"] == 0
    assert result.report["certificate"]["inputs"]["sigma"] == "0.05"
    with pytest.raises(ValueError, match="3 unlearned and 4 retrained scores"):
        audit_scores(unlearned={"s": np.zeros(3)}, retrained={"s": np.zeros(4)},
                     certificate=cert)
    with pytest.raises(ValueError, match="NaN"):
        audit_scores(unlearned={"s": np.array([0.0, np.nan])}, retrained={"s": np.zeros(2)},
                     certificate=cert)


def test_cached_mechanism_audit_resumes(tmp_path):
    cert = Certificate(epsilon=10.0, delta=1e-3)
    first = audit_mechanism(GaussianShift(0.5), certificate=cert, trials=300, chunk_size=100,
                            out_dir=tmp_path, cache_key="gaussian-0.5")
    again = audit_mechanism(GaussianShift(0.5), certificate=cert, trials=300, chunk_size=100,
                            out_dir=tmp_path, cache_key="gaussian-0.5")
    assert again.report["timing"]["chunks_resumed"] == 3
    assert comparable(first.report) == comparable(again.report)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("seed", -1, "seed: must be a non-negative integer, got -1"),
    ("confidence", 1.0, "confidence: must be a number in (0, 1), e.g. 0.95, got 1.0"),
    ("statistics", ["bonferroni-pareto", "bonferroni-pareto"],
     "statistics: lists a name twice: ['bonferroni-pareto', 'bonferroni-pareto']"),
    ("estimators", ["median"], "estimators[0]: must be one of"),
])
def test_every_entry_point_refuses_bad_settings_with_one_message(field, value, message):
    cert = Certificate(epsilon=1.0, delta=1e-3)
    scores = {"s": np.arange(10.0)}
    with pytest.raises(SpecError) as from_spec:
        spec_from_dict({"algorithm": {"name": "pnsgd"}, field: value})
    with pytest.raises(SpecError) as from_mechanism:
        audit_mechanism(GaussianShift(1.0), certificate=cert, trials=10, **{field: value})
    with pytest.raises(SpecError) as from_scores:
        audit_scores(unlearned=scores, retrained=scores, certificate=cert, **{field: value})
    assert str(from_spec.value) == f"spec.{str(from_mechanism.value)}"
    assert str(from_mechanism.value) == str(from_scores.value)
    assert str(from_mechanism.value).startswith(message)


def test_bad_mechanism_inputs():
    cert = Certificate(epsilon=1.0, delta=1e-3)
    with pytest.raises(ValueError, match="run_trials"):
        audit_mechanism(object(), certificate=cert, trials=10)
    with pytest.raises(ValueError, match="^trials: must be at least 2, got 1$"):
        audit_mechanism(GaussianShift(1.0), certificate=cert, trials=1)
    with pytest.raises(ValueError, match=r"^statistics\[0\]: must be one of .*got 'gdp'$"):
        audit_mechanism(GaussianShift(1.0), certificate=cert, trials=10, statistics=["gdp"])
    with pytest.raises(ValueError, match="not produced by the mechanism"):
        audit_mechanism(GaussianShift(1.0), certificate=cert, trials=10, attacks=["loss"])
    with pytest.raises(ValueError, match="certificate epsilon must be a number >= 0"):
        Certificate(epsilon=math.nan, delta=0.1)
    with pytest.raises(ValueError, match="delta"):
        Certificate(epsilon=1.0, delta=1.0)


# ----------------------------------------------------------------------------------------------
# Command line


def test_cli_demo_run_and_report(tmp_path, capsys):
    out = tmp_path / "demo"
    assert cli_main(["audit", "demo", "--trials", "120", "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == "CONSISTENT" and printed["bound"] == "chien2024:thm3.2"
    assert printed["n_trials"] == 120 and (out / "audit.sqlite").exists()
    assert cli_main(["audit", "report", str(out)]) == 0
    assert "Audit verdict: CONSISTENT" in capsys.readouterr().out

    spec = tmp_path / "broken.toml"
    spec.write_text('trials = 400\npilot_trials = 0\nattacks = ["loss"]\nestimators = []\n'
                    '[algorithm]\nnoise_multiplier_scale = 0.1\n')
    # A VIOLATION fails the command (for CI) with its own code; errors exit 1 (usage errors 2).
    assert cli_main(["audit", "run", str(spec), "--out", str(tmp_path / "b"), "--quiet"]) == 3
    assert "VIOLATION" in capsys.readouterr().out

    assert cli_main(["audit", "report", str(tmp_path / "nowhere")]) == 1
    assert cli_main(["audit", "run", str(tmp_path / "missing.toml")]) == 1
    bad = tmp_path / "bad.toml"
    bad.write_text("trials = -3\n")
    assert cli_main(["audit", "run", str(bad), "--out", str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "error: spec.trials: must be a positive integer, got -3"


def test_bounds_engine_provenance_is_in_the_report():
    spec = _spec(trials=8, pilot_trials=2, estimators=[])
    report = run_audit(spec).report
    provenance = report["certificate"]["provenance"]
    assert provenance["bound"] == "chien2024:thm3.2"
    assert provenance["label"] == bounds.get("chien2024:thm3.2").citation.label
    assert any("C_R" in line for line in provenance["audit_assumptions"])
    assert provenance["conversion"].startswith("Mironov")


@pytest.mark.slow
def test_full_demo(tmp_path):
    """``unlearn audit demo`` as shipped: CONSISTENT, a certificate from the bound engine, and
    a positive lower bound (the audit sees leakage, just far less than certified)."""
    assert cli_main(["audit", "demo", "--out", str(tmp_path), "--quiet"]) == 0
    report = load_report(tmp_path)
    assert report["verdict"]["status"] == "CONSISTENT"
    assert report["empirical"]["n_trials"] == 50000
    cert = report["certificate"]
    assert cert["bound"] == "chien2024:thm3.2" and cert["epsilon"] <= 1.0
    assert cert["epsilon"] == best_epsilon(
        "chien2024:thm3.2", delta=1 / 256, sigma=cert["inputs"]["sigma"], eta=ETA, m=1.0,
        L="5/4", M=0.05, n=256, b=256, T=12, K=1, R=100.0).epsilon
    assert 0.02 < report["verdict"]["max_lower_bound"] < cert["epsilon"]
    assert 0.02 < report["verdict"]["tightness"] < 1.0


def test_a_report_of_other_scores_is_not_overwritten(tmp_path):
    rng = np.random.default_rng(11)
    cert = Certificate(epsilon=10.0, delta=1e-3)
    first = {"s": rng.standard_normal(200)}, {"s": rng.standard_normal(200)}
    audit_scores(unlearned=first[0], retrained=first[1], certificate=cert, out_dir=tmp_path)
    kept = (tmp_path / "report.json").read_bytes()
    # The same scores again: the same audit, rewritten in place.
    audit_scores(unlearned=first[0], retrained=first[1], certificate=cert, out_dir=tmp_path)
    other = {"s": rng.standard_normal(200) + 1.0}, {"s": rng.standard_normal(200)}
    with pytest.raises(ValueError, match="another audit.*replace=True"):
        audit_scores(unlearned=other[0], retrained=other[1], certificate=cert, out_dir=tmp_path)
    assert load_report(tmp_path)["spec_hash"] == json.loads(kept)["spec_hash"]
    audit_scores(unlearned=other[0], retrained=other[1], certificate=cert, out_dir=tmp_path,
                 replace=True)
    assert load_report(tmp_path)["spec_hash"] != json.loads(kept)["spec_hash"]
    # An unreadable report.json is not silently replaced either.
    (tmp_path / "report.json").write_text("{not json")
    with pytest.raises(ValueError, match="another audit"):
        audit_mechanism(GaussianShift(0.5), certificate=cert, trials=100, out_dir=tmp_path)


def test_a_foreign_report_is_refused_before_any_trial_runs(tmp_path):
    class MustNotRun:
        def run_trials(self, *, seed, first_trial, n_trials):
            raise AssertionError("trials ran before the out_dir was checked")

    (tmp_path / "report.json").write_text(json.dumps({"spec_hash": "someone else's"}))
    with pytest.raises(ValueError, match="report.json: .* is not marked as this toolkit's"):
        audit_mechanism(MustNotRun(), certificate=Certificate(epsilon=1.0, delta=1e-3),
                        trials=100, out_dir=tmp_path)
