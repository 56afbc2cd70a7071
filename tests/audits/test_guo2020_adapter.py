"""The ``guo2020-newton`` adapter: spec fields, the certificate against the bound engine and an
independent closed form, a reduced audit CONSISTENT at the calibrated sigma and a VIOLATION
when b is shrunk below what the certificate assumes."""

from __future__ import annotations

import math
from pathlib import Path

import mpmath
import pytest

from audits.fields import SpecError
from audits.loader import spec_from_dict, spec_from_toml
from audits.registry import get_adapter
from audits.runner import prepare_audit
from audits.spec import AuditSpec
from audits.testing import assert_consistent, assert_violation

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "guo2020_digits.toml"
ADAPTER = get_adapter("guo2020-newton")


def demo(**changes):
    return ADAPTER.demo_spec().replace(**changes) if changes else ADAPTER.demo_spec()


def test_example_toml_is_the_demo() -> None:
    assert spec_from_toml(EXAMPLE) == ADAPTER.demo_spec()


@pytest.mark.parametrize(("field", "value", "message"), [
    ("lam", 0.0, "spec.algorithm.lam"),
    ("sigma", -1.0, "spec.algorithm.sigma"),
    ("gamma", "loose", "spec.algorithm.gamma"),
    ("removals", 0, "spec.algorithm.removals"),
    ("residual_per_removal", 0, "spec.algorithm.residual_per_removal"),
    ("tolerance", 1.0, "spec.algorithm.tolerance"),
    ("noise_multiplier_scale", -0.5, "spec.algorithm.noise_multiplier_scale"),
    ("bogus", 1, "spec.algorithm.bogus"),
])
def test_bad_fields_name_their_path(field, value, message) -> None:
    data = {**demo().to_dict()}
    data["algorithm"] = {**data["algorithm"], field: value}
    with pytest.raises(SpecError, match=message.replace(".", r"\.")):
        spec_from_dict(data)


def test_cross_field_checks() -> None:
    data = demo().to_dict()
    with pytest.raises(SpecError, match="spec.request.kind"):
        spec_from_dict({**data, "request": {**data["request"], "kind": "replace"}})
    with pytest.raises(SpecError, match="spec.algorithm.sigma"):
        spec_from_dict({**data, "algorithm": {**data["algorithm"], "sigma": 1.0}})
    with pytest.raises(SpecError, match="spec.algorithm.sigma"):
        spec_from_dict({**data, "certificate": {**data["certificate"],
                                                     "target_epsilon": None}})
    with pytest.raises(SpecError, match="spec.dtype"):
        spec_from_dict({**data, "dtype": "float32"})


def test_theorem3_range_is_enforced() -> None:
    """epsilon > 1 is outside Theorem 3 (ii) (Dwork-Roth Thm 3.22): refused, naming the bound."""
    data = demo().to_dict()
    spec = spec_from_dict({**data, "certificate": {**data["certificate"],
                                                        "target_epsilon": 2.0}})
    with pytest.raises(SpecError, match="epsilon <= 1"):
        prepare_audit(spec)


def test_certificate_matches_an_independent_closed_form() -> None:
    """epsilon = sqrt(2 log(1.5/delta)) eps'/sigma at the calibrated sigma, recomputed at 50
    digits without the declaration; the calibrated sigma is the least one (safe side)."""
    prepared = prepare_audit(demo())
    cert = prepared.certificate
    sigma = cert.inputs["sigma"]
    assert cert.bound == "guo2020:thm3ii" and cert.conversion is None and cert.alpha is None
    assert cert.inputs["eps_prime"] == 0.01 and cert.delta == 1e-4
    with mpmath.workdps(50):
        c = mpmath.sqrt(2 * mpmath.log(mpmath.mpf(3) / 2 / mpmath.mpf(1e-4)))
        exact = c * mpmath.mpf(0.01) / mpmath.mpf(sigma)
        least_sigma = c * mpmath.mpf(0.01)
    assert exact <= 1 and cert.epsilon >= exact
    assert math.isclose(cert.epsilon, float(exact), rel_tol=1e-12)
    assert sigma >= least_sigma and math.isclose(sigma, float(least_sigma), rel_tol=1e-12)
    assert prepared.mechanism.config.budget == 0.01
    assert prepared.mechanism.config.sigma == sigma


def test_given_sigma_is_certified_as_is() -> None:
    data = demo().to_dict()
    spec = spec_from_dict({
        **data, "algorithm": {**data["algorithm"], "sigma": 0.5, "removals": 3},
        "certificate": {**data["certificate"], "target_epsilon": None}})
    cert = prepare_audit(spec).certificate
    c = math.sqrt(2 * math.log(1.5 / 1e-4))
    assert math.isclose(cert.epsilon, c * 0.03 / 0.5, rel_tol=1e-12)
    assert cert.calibration is None


def no_figures(spec: AuditSpec, **changes) -> AuditSpec:
    data = spec.to_dict()
    data["algorithm"] = {**data["algorithm"], "report_figures": False}
    return spec_from_dict(data).replace(**changes)


def test_reduced_audit_is_consistent_at_the_calibrated_sigma() -> None:
    result = assert_consistent(no_figures(demo(), trials=400, pilot_trials=100, chunk_size=400))
    assert result.certified_epsilon <= 1.0
    assert "extra" not in result.report["plots"]


def test_audit_catches_noise_below_the_certificate() -> None:
    """b drawn at 1e-6 of the sigma the certificate assumes: the Newton step's residual is no
    longer masked, and unlearned and retrained models separate."""
    data = demo().to_dict()
    spec = spec_from_dict({
        **data, "trials": 400, "pilot_trials": 100, "chunk_size": 400,
        "algorithm": {**data["algorithm"], "noise_multiplier_scale": 1e-6,
                      "report_figures": False}})
    result = assert_violation(spec)
    assert result.max_lower_bound > 2 * result.certified_epsilon


def test_figure_1_shape_more_noise_or_regularisation_serves_more_removals() -> None:
    from audits.reproductions.guo2020 import removals_before_retraining
    from empirical.data.datasets import load_dataset

    grid = removals_before_retraining(load_dataset("digits"), lams=(0.01, 0.1),
                                      sigmas=(0.1, 10.0), removals=15, trials=2)
    counts = grid["counts"]
    assert counts.shape == (2, 2) and counts.min() >= 0 and counts.max() <= 15
    assert counts[1, 1] >= counts[1, 0] and counts[1, 1] >= counts[0, 1]
    assert counts[1, 1] > counts[0, 0]


def test_fig2_reproduction_orders_the_three_residuals() -> None:
    from audits.reproductions.guo2020 import reproduce_fig2

    result = reproduce_fig2(removals=10)
    assert result["total"] == 2 and result["matches"] == 2  # checkpoints 1 and 10
    for row in result["rows"]:
        assert row["true"] <= row["data_dependent"] <= row["worst_case_corrected"]
        # The corrected worst case exceeds the printed one once b != 0 (erratum G3).
        assert row["worst_case_corrected"] > row["worst_case_printed"]
    with pytest.raises(SpecError, match="--path"):
        reproduce_fig2(dataset="mnist")


def test_cli_lists_adapter_reproductions_and_rejects_dataset_for_bound_ones(capsys) -> None:
    from audits.cli import main

    assert main(["reproduce"]) == 0
    assert "guo2020:fig2" in capsys.readouterr().out
    assert main(["reproduce", "chien2024:table3", "--dataset", "digits"]) != 0


def test_report_hook_validates_and_draws_extra_line_plots(tmp_path) -> None:
    from audits.report.schema import validate_report
    from audits.report.write import write_report

    result = assert_consistent(no_figures(demo(), trials=100, pilot_trials=20, chunk_size=100))
    report = dict(result.report)
    plot = {"id": "demo-lines", "title": "t", "caption": "c", "x_label": "x", "y_label": "y",
            "log_x": False, "log_y": True,
            "series": [{"label": "a", "x": [1, 2, 3], "y": [1.0, 2.0, 4.0]}]}
    report["plots"] = {**report["plots"], "extra": [plot]}
    validate_report(report)
    paths = write_report(report, tmp_path)
    assert "fig-extra-demo-lines" in Path(paths.html_path).read_text(encoding="utf-8")
    broken = {**plot, "series": [{"label": "a", "x": [1, 2], "y": [1.0]}]}
    with pytest.raises(ValueError, match=r"plots\.extra\[0\]\.series\[0\]"):
        validate_report({**report, "plots": {**report["plots"], "extra": [broken]}})


def test_corrected_worst_case_curve_adds_the_accumulated_residual_to_b() -> None:
    """Removal k's perturbation is b + u_k: the corrected bound at ||b|| + (sum so far),
    recomputed at 60 digits from gamma m^2 (2C + ||b||/n)^2/(lam^2 (n - m)) with m = 1, C = 1."""
    from audits.reproductions.guo2020 import corrected_worst_case_curve

    lam, sigma, d, tau = 0.05, 2.0, 5, 1e-4
    n_before = [40 - k for k in range(6)]
    curve = corrected_worst_case_curve(gamma="1/4", lam=lam, n_before=n_before, sigma=sigma, d=d,
                                       tau=tau)
    with mpmath.workdps(60):
        b = mpmath.mpf(sigma) * (mpmath.sqrt(d) + mpmath.sqrt(2 * mpmath.log(1 / mpmath.mpf(tau))))
        total, expected, at_b_only = mpmath.mpf(0), [], mpmath.mpf(0)
        for n in n_before:
            total += (2 + (b + total) / n) ** 2 / (4 * mpmath.mpf(lam) ** 2 * (n - 1))
            at_b_only += (2 + b / n) ** 2 / (4 * mpmath.mpf(lam) ** 2 * (n - 1))
            expected.append(total)
    for got, want in zip(curve, expected, strict=True):
        assert abs(got / want - 1) < 1e-12
    assert curve[-1] > at_b_only * (1 + 1e-3)  # ||b|| alone would understate it


def test_demo_report_draws_the_corrected_worst_case_only_while_it_is_finite(tmp_path: Path) -> None:
    """At the demo's lambda the erratum-corrected sum leaves the float range within Figure 2's
    removals; the report must still be written (finite numbers only) and say where it stops."""
    from audits.runner import run_audit

    result = run_audit(demo(trials=200, pilot_trials=50, chunk_size=200), out_dir=tmp_path)
    fig2 = next(p for p in result.report["plots"]["extra"] if p["id"] == "guo2020-residuals")
    corrected = next(s for s in fig2["series"] if "corrected" in s["label"])
    assert all(math.isfinite(v) for v in corrected["y"])
    assert len(corrected["x"]) == len(corrected["y"])
    printed = next(s for s in fig2["series"] if "as printed" in s["label"])
    if len(corrected["y"]) < len(printed["y"]):
        assert f"After {len(corrected['y'])} removals" in fig2["caption"]
    assert (tmp_path / "report.json").exists()


def test_bench_trials_reports_the_looped_trials_bit_identical_to_the_batched_ones() -> None:
    from audits.cli.bench import trials_benchmark

    row = trials_benchmark(algorithm="guo2020-newton", n_trials=12)
    assert row["loop_trials_timed"] == 12
    assert row["loop_matches_batched"] is True and row["max_abs_param_difference"] == 0.0
    assert row["batched_trials_per_s"] > 0 and row["loop_trials_per_s"] > 0
