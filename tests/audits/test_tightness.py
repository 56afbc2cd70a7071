"""``unlearn bench tightness`` and the adapters' noise-scale hook behind it.

The hook must really change the noise (the trials' spread scales by 1/factor) and must leave
the certificate as certified for the undivided noise; the benchmark's JSON must say what it ran
and decide each factor by the stated rule; a large noise reduction of a cheap algorithm must be
flagged, the honest mechanism must not be.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from audits.cli import main
from audits.registry import adapter_names, get_adapter
from audits.runner import prepare_audit
from audits.tightness import TightnessSettings, tightness_benchmark

# Three network algorithms train a network before their trials (tens of seconds on a shared CPU).
NETWORK_ALGORITHMS = ("koloskova-gradient-clipping", "koloskova-model-clipping",
                      "output-perturbation")
FACTOR = 8.0


def _spread(spec, *, trials: int = 12) -> tuple[float, float, object]:
    """Mean per-coordinate standard deviation of the unlearned and retrained parameters over
    ``trials`` trials (seed 0), and the prepared audit's certificate."""
    prepared = prepare_audit(spec)
    batch = prepared.mechanism.run_trials(seed=0, first_trial=0, n_trials=trials)
    spreads = [float(np.asarray(side.statistics["params"], dtype=float).std(axis=0).mean())
               for side in (batch.unlearned, batch.retrained)]
    return spreads[0], spreads[1], prepared.certificate


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.slow) if name in NETWORK_ALGORITHMS else name
    for name in adapter_names()])
def test_reducing_the_noise_shrinks_the_spread_by_the_factor_and_keeps_the_certificate(
        name: str) -> None:
    adapter = get_adapter(name)
    spec = adapter.demo_spec(trials=12)
    reduced = adapter.with_noise_reduced(spec, factor=FACTOR)
    assert reduced.algorithm != spec.algorithm
    unlearned, retrained, certificate = _spread(spec)
    unlearned_r, retrained_r, certificate_r = _spread(reduced)
    # The certificate is the one certified for the undivided noise, number for number.
    assert certificate_r.epsilon == certificate.epsilon
    assert certificate_r.delta == certificate.delta
    assert certificate_r.bound == certificate.bound
    assert certificate_r.renyi_curve == certificate.renyi_curve
    # Every demo mechanism is close to linear in its noise (model clipping projects, so its
    # spread shrinks a little less); a hook that missed a noise would leave the spread far above.
    for honest, less in ((unlearned, unlearned_r), (retrained, retrained_r)):
        assert 0.95 <= less * FACTOR / honest <= 1.25, (name, honest, less)


def test_d2d_published_noise_is_divided_exactly() -> None:
    # D2D publishes a noiseless descent from the point 0 plus N(0, sigma^2 I): with the same
    # seeds the reduced trial's deviation from the across-trial mean is the honest one / factor.
    adapter = get_adapter("d2d")
    spec = adapter.demo_spec(trials=8)
    batches = [prepare_audit(s).mechanism.run_trials(seed=3, first_trial=0, n_trials=8)
               for s in (spec, adapter.with_noise_reduced(spec, factor=4.0))]
    for side in ("unlearned", "retrained"):
        honest, less = (np.asarray(getattr(b, side).statistics["params"], dtype=float)
                        for b in batches)
        np.testing.assert_allclose((less - less.mean(0)) * 4.0, honest - honest.mean(0),
                                   rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("factor", [0.5, 0.0, -2.0, math.nan, math.inf, True, "2"])
def test_a_noise_reduction_below_one_or_not_a_number_is_refused(factor: object) -> None:
    adapter = get_adapter("pnsgd")
    with pytest.raises(ValueError, match="factor"):
        adapter.with_noise_reduced(adapter.demo_spec(trials=4), factor=factor)


def test_an_adapter_without_a_noise_scale_parameter_cannot_be_reduced() -> None:
    from audits.adapters.base import AdapterBase

    class Quiet(AdapterBase):
        name = "quiet"

    with pytest.raises(ValueError, match="names no noise-scale parameter"):
        Quiet().with_noise_reduced(get_adapter("pnsgd").demo_spec(trials=4), factor=2.0)


def test_bench_tightness_json_reports_each_factor_by_the_stated_rule(
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "tightness", "--json", "--algorithm", "pnsgd", "--trials", "200", "--seeds", "2",
            "--factors", "1,1000"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    assert res["benchmark"] == "tightness"
    assert res["settings"] == {"algorithms": ["pnsgd"], "sizes": [200], "seeds": 2,
                               "required": 2, "factors": [1.0, 1000.0], "early_stop": True}
    (row,) = res["rows"]
    assert row["algorithm"] == "pnsgd" and row["n_trials"] == 200
    certified = prepare_audit(get_adapter("pnsgd").demo_spec(trials=200)).certificate
    assert row["certificate"]["epsilon"] == certified.epsilon
    assert row["certificate"]["delta"] == certified.delta
    assert row["certificate"]["bound"] == certified.bound
    assert row["scaled_noise"] == get_adapter("pnsgd").scaled_noise
    assert set(row["exact"]) >= {"epsilon", "note"}
    assert 0 <= row["lower_bound"] <= row["largest_showable_epsilon"]
    # Factor 1 is the honest mechanism: not flagged, and with 2 of 2 required one non-flag
    # decides it. Each factor's verdicts decide it by the rule, and the scan stops at a flag.
    assert [scan["factor"] for scan in row["factors"]][0] == 1.0
    for scan in row["factors"]:
        assert len(scan["statuses"]) == len(scan["lower_bounds"]) == scan["seeds_run"] <= 2
        assert scan["violations"] == scan["statuses"].count("VIOLATION")
        assert 0 <= scan["renyi_only_violations"] <= scan["violations"]
        assert scan["flagged"] == (scan["violations"] >= 2)
    honest = row["factors"][0]
    assert honest["flagged"] is False and honest["statuses"][0] == row["honest_status"]
    assert honest["lower_bounds"][0] == row["lower_bound"]
    # A thousandfold noise reduction leaves the two worlds apart: both seeds flag it.
    reduced = row["factors"][1]
    assert reduced["factor"] == 1000.0 and reduced["statuses"] == ["VIOLATION", "VIOLATION"]
    assert reduced["flagged"] and row["smallest_flagged_factor"] == 1000.0
    assert row["largest_factor_run"] == 1000.0
    assert row["largest_unflagged_factor"] == 1.0
    assert "pnsgd N=200 factor 1 seed 0" in captured.err  # progress on stderr under --json too


@pytest.mark.slow
def test_bench_tightness_flags_a_thousandfold_noise_reduction_of_pnsgd_and_not_the_honest_noise(
        ) -> None:
    settings = TightnessSettings(algorithms=("pnsgd",), sizes=(1000,), seeds=3,
                                 factors=(1.0, 1000.0))
    lines: list[str] = []
    (row,) = tightness_benchmark(settings, progress=lines.append)["rows"]
    honest, reduced = row["factors"]
    assert honest["violations"] == 0 and not honest["flagged"]
    assert reduced["flagged"] and reduced["violations"] == 3
    assert row["smallest_flagged_factor"] == 1000.0
    assert len(lines) >= 6


def test_a_hook_that_changes_the_certificate_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = get_adapter("pnsgd")
    original = type(adapter).with_noise_reduced

    def loosened(self, spec, *, factor):
        spec = original(self, spec, factor=factor)
        return dataclasses.replace(spec, certificate=dataclasses.replace(
            spec.certificate, target_epsilon=2.0))

    monkeypatch.setattr(type(adapter), "with_noise_reduced", loosened)
    settings = TightnessSettings(algorithms=("pnsgd",), sizes=(50,), seeds=1, factors=(2.0,))
    lines: list[str] = []
    with pytest.raises(RuntimeError, match="reducing the noise by 2 changed the certificate"):
        tightness_benchmark(settings, progress=lines.append)
    assert lines == ["pnsgd N=50"]  # refused before any audit ran


@pytest.mark.parametrize(("extra", "message"), [
    (["--factors", "0.5"], "factors must be finite numbers from 1"),
    (["--factors", "1,nan"], "factors must be finite numbers from 1"),
    (["--factors", "2,,3"], "--factors: expected a comma-separated list"),
    (["--trials", "1"], "trial counts must be integers >= 2"),
    (["--trials", "1e3"], "--trials: cannot read '1e3'"),
    (["--algorithm", "nope"], "unknown algorithm 'nope'"),
    (["--seeds", "2", "--required", "3"], "required must be an integer from 1 to seeds = 2"),
])
def test_bench_tightness_refuses_bad_options_in_one_line(capsys: pytest.CaptureFixture[str],
                                                         extra: list[str], message: str) -> None:
    assert main(["bench", "tightness", "--json", *extra]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("error:") and message in line
    assert message in json.loads(captured.out)["error"]["message"]


def test_the_exact_column_reads_the_reports_exact_privacy_loss(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import audits.runner

    real = audits.runner.run_audit
    laws = iter([{"epsilon": 0.625, "delta": 0.00390625, "gaussian_mu": 0.5, "renyi": None,
                  "method": "two Gaussian laws", "assumptions": []}, None])

    def with_exact_loss(spec, **kwargs):
        result = real(spec, **kwargs)
        result.report["exact_privacy_loss"] = next(laws)
        return result

    monkeypatch.setattr(audits.runner, "run_audit", with_exact_loss)
    settings = TightnessSettings(algorithms=("pnsgd",), sizes=(200, 201), seeds=1, factors=(1.0,))
    gaussian, other = tightness_benchmark(settings)["rows"]
    assert gaussian["exact"]["epsilon"] == 0.625 and gaussian["exact"]["delta"] == 0.00390625
    assert gaussian["exact"]["method"] == "two Gaussian laws"
    assert other["exact"]["epsilon"] is None and "not computable" in other["exact"]["note"]
    assert gaussian["factors"][0]["exact"] == gaussian["exact"]
