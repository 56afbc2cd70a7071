"""Figure 3 of seed 000 end to end (reduced, on digits): the CLI writes PNG, JSON and HTML, every
point is audited, and the calibrated K and sigma are the bound engine's least answers."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import bounds
from audits.cli import main
from audits.reproductions.chien2024.setting import burn_in_epochs_long
from bounds.calibration import calibrate
from bounds.conversions import best_epsilon
from bounds.papers.chien2024 import sequence_start_distance


def _run(tmp_path, panel: str, capsys) -> dict:
    code = main(["reproduce", f"chien2024:fig3{panel}", "--dataset", "digits", "--trials", "4",
                 "--reduced", "--out", str(tmp_path), "--json"])
    assert code in (0, None)
    result = json.loads(capsys.readouterr().out)
    for kind in ("png", "json", "html"):
        assert (tmp_path / f"chien2024_fig3{panel}.{kind}").stat().st_size > 0
    page = (tmp_path / f"chien2024_fig3{panel}.html").read_text()
    assert "data:image/png;base64," in page and "CIFAR-10" in page
    return result


def _check_audited(rows: list[dict]) -> None:
    ran = [r for r in rows if r["status"] == "run"]
    assert ran, rows
    for row in ran:
        assert row["verdict"] in ("CONSISTENT", "VIOLATION", "INCONCLUSIVE")
        assert row["certified_epsilon"] > 0 and row["trials"] >= 4
        assert row["counted_equals_schedule"]  # the mechanism counted what the schedule says


def _least_k_check(row: dict, *, n: int, lam: float, target: float, T: int, b: int) -> None:
    """Each K_j meets the target and K_j - 1 does not, by the engine (Theorem 3.2 + 3.11)."""
    bound = bounds.get("chien2024:thm3.2+thm3.11/sequence")
    inputs = row["certificate_inputs"]
    eta = Fraction(inputs["eta"])
    m, L = Fraction(lam), Fraction(1, 4) + Fraction(lam)
    fixed = {"sigma": Fraction(row["sigma"] if "sigma" in row else inputs["sigma"]), "eta": eta,
             "m": m, "L": L, "M": Fraction(1), "n": n, "b": b, "T": T, "R": Fraction(100)}
    epochs = row["epochs_per_request"]
    for j, k in enumerate(epochs):
        z = sequence_start_distance(eta=eta, m=m, M=Fraction(1), n=n, b=b, T=T, R=Fraction(100),
                                    sizes=[1] * (j + 1), epochs=[*epochs[:j], 1])
        start = Fraction(int(z.man)) * Fraction(2) ** int(z.exp)
        assert best_epsilon(bound, delta=1 / n, K=k, Z=start, **fixed).epsilon <= target
        if k > 1:
            assert best_epsilon(bound, delta=1 / n, K=k - 1, Z=start, **fixed).epsilon > target


@pytest.mark.parametrize("panel", ["d", pytest.param("c", marks=pytest.mark.slow)])
def test_fig3c_and_fig3d_end_to_end_with_engine_k(tmp_path, capsys, panel):
    result = _run(tmp_path, panel, capsys)
    _check_audited(result["rows"])
    setting = result["setting"]
    n, lam = setting["n"], setting["lambda"]
    for row in result["rows"]:
        if row["status"] != "run":
            continue
        assert row["certified_epsilon"] <= 0.01
        batch = row["batch"]
        b = n if batch == "full" else batch
        _least_k_check(row, n=n, lam=lam, target=0.01, T=setting["burn_in_epochs"][str(batch)],
                       b=b)
        assert row["unlearning_epochs"] == sum(row["epochs_per_request"])
        assert row["retraining_epochs"] == setting["burn_in_epochs"][str(batch)] * 4


@pytest.mark.slow
def test_bound_fig3d_is_kept(capsys):
    assert main(["reproduce", "chien2024:fig3d"]) in (0, None)
    assert "10/10 match" in capsys.readouterr().out


def test_bound_reproduction_refuses_mechanism_options(capsys):
    assert main(["reproduce", "chien2024:table3", "--trials", "4"]) == 1
    assert "bound reproduction" in capsys.readouterr().err


@pytest.mark.slow
def test_fig3a_end_to_end_sigma_is_the_engines(tmp_path, capsys):
    result = _run(tmp_path, "a", capsys)
    _check_audited(result["rows"])
    n, lam = result["setting"]["n"], result["setting"]["lambda"]
    row = next(r for r in result["rows"] if r["label"] == "PNSGD b=n")
    inputs = row["certificate_inputs"]
    direct = calibrate("chien2024:thm3.2", solve="sigma", epsilon=1.0, delta=1 / n,
                       eta=inputs["eta"], m=Fraction(lam), L=Fraction(1, 4) + Fraction(lam),
                       M=1.0, n=n, b=n, T=result["setting"]["burn_in_epochs"]["full"], K=1,
                       R=100.0)
    assert inputs["sigma"] == float(direct.value)
    labels = {r["label"] for r in result["rows"]}
    assert {"LU K=1", "D2D K=1 (internal state)", "D2D K=5 (internal state)"} <= labels


@pytest.mark.slow
def test_fig3b_end_to_end_with_headline(tmp_path, capsys):
    result = _run(tmp_path, "b", capsys)
    _check_audited(result["rows"])
    headline = {h["batch"]: h for h in result["headline"]}
    ran = {r["label"]: r for r in result["rows"] if r["status"] == "run"}
    best = min(r["unlearning_gradients"] for r in ran.values() if r["method"] != "pnsgd")
    for batch, label in ((128, "PNSGD b=128"), ("n", "PNSGD b=n")):
        assert headline[batch]["ratio"] == ran[label]["unlearning_gradients"] / best
        assert headline[batch]["status"] == "not evaluated"  # a reduced run claims nothing
    n, lam = result["setting"]["n"], result["setting"]["lambda"]
    _least_k_check(ran["PNSGD b=n"], n=n, lam=lam, target=1.0,
                   T=result["setting"]["burn_in_epochs"]["full"], b=n)


def test_long_burn_in_is_the_least_t_meeting_its_target():
    """The long burn-in T: the burn-in term alone meets (0.001, 1/n) at sigma = 0.03, at T and
    not at T - 1, by the engine, and it is longer than Table 2's T (erratum E16)."""
    from bounds.numerics import float_down

    n, b, lam = 256, 128, 256e-6
    T = burn_in_epochs_long(n=n, b=b, l2=lam, clip=1.0, radius=100.0)
    m, L = Fraction(lam), Fraction(1, 4) + Fraction(lam)
    fixed = {"sigma": Fraction(3, 100), "eta": float_down(1 / L), "m": m, "L": L,
             "M": Fraction(1), "n": n, "b": b, "K": 1, "R": Fraction(100), "Z": 0}
    bound = bounds.get("chien2024:thm3.2+thm3.11/sequence")
    assert best_epsilon(bound, delta=1 / n, T=T, **fixed).epsilon <= 0.001
    assert best_epsilon(bound, delta=1 / n, T=T - 1, **fixed).epsilon > 0.001
    assert T > 20


@pytest.mark.slow
def test_fig3d_long_burn_in_writes_both_panels_with_engine_t(tmp_path, capsys):
    """The long-burn-in variant: T per batch is burn_in_epochs_long's, K is the engine's least,
    and one run writes the files of (c) and (d)."""
    code = main(["reproduce", "chien2024:fig3d/long-burn-in", "--dataset", "digits", "--trials",
                 "4", "--reduced", "--out", str(tmp_path), "--json"])
    assert code in (0, None)
    result = json.loads(capsys.readouterr().out)
    setting = result["setting"]
    assert setting["burn_in_rule"] == "long"
    n, lam = setting["n"], setting["lambda"]
    for batch in (128, "full"):
        b = n if batch == "full" else batch
        assert setting["burn_in_epochs"][str(batch)] == burn_in_epochs_long(
            n=n, b=b, l2=lam, clip=1.0, radius=100.0)
    for row in result["rows"]:
        if row["status"] == "run":
            b = n if row["batch"] == "full" else row["batch"]
            _least_k_check(row, n=n, lam=lam, target=0.01,
                           T=setting["burn_in_epochs"][str(row["batch"])], b=b)
    for panel in "cd":
        assert (tmp_path / f"chien2024_fig3{panel}_long-burn-in.json").stat().st_size > 0


# ----------------------------------------------------------------------------------------------
# Matched constants, the headline under every accounting, reduced runs, the report's notes.


def test_matched_setting_runs_mnist_lambda_at_nearest_steps_per_epoch():
    """MNIST's lambda value; each paper batch run as the divisor of n with the nearest steps per
    epoch (brute force over every divisor); Table 2's T of the batch it stands for."""
    import math

    from audits.reproductions.chien2024.setting import PAPER_BURN_IN, fig3_setting

    setting = fig3_setting(constants="matched")
    n = 256
    assert setting.l2 == pytest.approx(0.011264, rel=0, abs=1e-15)
    for ours, paper in setting.stands_for:
        if paper == "full":
            assert ours == "full"
            continue
        gaps = {b: abs(math.log((n / b) / (11264 / paper))) for b in range(1, n + 1) if n % b == 0}
        assert gaps[ours] == min(gaps.values())
        assert dict(setting.burn_in)[ours] == PAPER_BURN_IN[paper]
    assert setting.headline_batches == (4, "full") and n // 4 == 64
    with pytest.raises(ValueError, match="lambda"):
        fig3_setting(constants="matched", l2=0.5)


def test_time_shift_never_needs_more_epochs_than_the_runs_certificate():
    """At matched constants (2 removals), the run's schedule function and the engine's
    thm3.2+thm3.11 accounting agree request by request, and the time-shift accounting is never
    longer (its bound is never larger)."""
    from audits.reproductions.chien2024.panels import pnsgd_accountings, pnsgd_sequence_epochs
    from audits.reproductions.chien2024.setting import fig3_setting
    from bounds.numerics import float_down

    setting = dataclasses_replace(fig3_setting(constants="matched"), removals=2)
    lam = 0.011264
    for batch, b in ((4, 4), ("full", 256)):
        acc = pnsgd_accountings(setting, batch, epsilon=1.0, sigma=0.03, removals=2)
        run = pnsgd_sequence_epochs(
            epsilon=1.0, sigma=0.03, eta=float_down(1 / (Fraction(1, 4) + Fraction(lam))),
            l2=lam, clip=1.0, n=256, b=b, T=dict(setting.burn_in)[batch], R=100.0, removals=2)
        assert tuple(acc["thm3.2+thm3.11"]["epochs_per_request"]) == run
        for ours, chain in zip(acc["time-shift"]["epochs_per_request"], run, strict=True):
            assert ours <= chain
        assert {"authors-code", "thm3.11"} <= {k for k, v in acc.items() if "epochs" in v}


def dataclasses_replace(obj, **changes):
    import dataclasses

    return dataclasses.replace(obj, **changes)


def _sequence_rows(setting, pnsgd_epochs: dict, baselines: dict) -> list[dict]:
    from audits.reproductions.chien2024.panels import COUNTED

    rows = []
    for batch, epochs in pnsgd_epochs.items():
        rows.append({"method": "pnsgd", "batch": batch, "label": f"PNSGD {batch}", "status": COUNTED,
                     "unlearning_gradients": sum(epochs) * 256, "unlearning_epochs": sum(epochs),
                     "epochs_per_request": list(epochs)})
    for label, gradients in baselines.items():
        rows.append({"method": label.lower(), "label": label, "status": "run",
                     "unlearning_gradients": gradients})
    return rows


def test_headline_has_a_ratio_per_accounting_and_a_reduced_run_is_not_evaluated():
    """Every accounting's ratio is its epochs over the best counted baseline; a reduced run
    gives no status even where its ratio would 'not hold'; a full one compares with 1.5 x claim."""
    from audits.reproductions.chien2024.panels import headline, pnsgd_accountings
    from audits.reproductions.chien2024.setting import fig3_setting

    reduced = fig3_setting(reduced=True)
    schedules = {batch: pnsgd_accountings(reduced, batch, epsilon=1.0, sigma=0.03, removals=4)
                 for batch in reduced.headline_batches}
    counted = {b: s["thm3.2+thm3.11"]["epochs_per_request"] for b, s in schedules.items()}
    best = sum(counted[128]) * 256  # ratio 1 at b = 128: far above the claimed 2%
    rows = _sequence_rows(reduced, counted, {"D2D": best, "LU": 3 * best})
    for entry, batch in zip(headline(rows, reduced), reduced.headline_batches, strict=True):
        assert entry["status"] == "not evaluated" and "reduced" in entry["reason"]
        assert "T = 40" in entry["reason"]
        assert entry["best_baseline"] == "D2D"
        for name, acc in schedules[batch].items():
            if "epochs" in acc:
                assert entry["ratios"][name] == pytest.approx(acc["epochs"] * 256 / best)
        assert entry["ratio"] == entry["ratios"]["thm3.2+thm3.11"]
        assert "stress_test" in entry  # literal lambda = 1e-6 n... here 0.1 on the digits
    full = dataclasses_replace(reduced, reduced=False)
    statuses = {e["batch"]: e["status"] for e in headline(rows, full)}
    assert statuses[128] == "does not hold"
    cheap = _sequence_rows(full, {128: [1] * 4, "full": [1] * 4}, {"D2D": 10**9})
    assert {e["status"] for e in headline(cheap, full)} == {"holds"}


def test_report_notes_state_reduced_t_stress_test_and_uneven_standards(tmp_path):
    """A reduced run's notes give its own T (40), never 'Table 2'; the literal digits run is
    labelled a stress test, the matched one says its constants; every report states that LU is
    certified from a stationary start while PNSGD is held to finite T (HTML included)."""
    from audits.reproductions.chien2024 import _panel_result
    from audits.reproductions.chien2024.setting import fig3_setting

    reduced = fig3_setting(reduced=True)
    result = _panel_result("d", reduced, [], seconds=0.0, out_dir=tmp_path)
    burn = next(x for x in result["notes"] if x.startswith("burn-in T"))
    assert "T = 40 at b=128" in burn and "T = 40 at b=n" in burn and "REDUCED" in burn
    assert not burn.endswith("Table 2 of the paper")
    assert any(x.startswith("STRESS TEST") for x in result["notes"])
    assert "stationary" in result["standards"] and "finite burn-in T" in result["standards"]
    page = (tmp_path / "chien2024_fig3d.html").read_text()
    assert "<h2>Standards</h2>" in page and "stationary law" in page
    matched = _panel_result("d", fig3_setting(constants="matched"), [], seconds=0.0,
                            out_dir=tmp_path)
    assert matched["reproduction"] == "chien2024:fig3d/matched"
    assert any(x.startswith("MATCHED") and "0.011264" in x for x in matched["notes"])
    assert not any(x.startswith("STRESS TEST") for x in matched["notes"])
    burn = next(x for x in matched["notes"] if x.startswith("burn-in T"))
    assert "T = 20 at b=4 (as b=128)" in burn and "T = 1000 at b=n" in burn


def test_cli_setting_is_checked_before_anything_runs(capsys):
    assert main(["reproduce", "chien2024:fig3b", "--setting", "bogus"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "literal, matched" in err
    assert main(["reproduce", "guo2020:fig2", "--setting", "matched"]) == 1
    assert "offers none" in capsys.readouterr().err
    assert main(["reproduce", "chien2024:table3", "--setting", "matched"]) == 1
    assert "bound reproduction" in capsys.readouterr().err
    listing = json.loads((main(["reproduce", "--json"]), capsys.readouterr().out)[1])
    offered = {r["id"]: r.get("settings") for r in listing["reproductions"]}
    assert offered["chien2024:fig3b"] == ["literal", "matched"]


def test_a_device_that_cannot_run_is_one_error_before_any_point(tmp_path, capsys):
    code = main(["reproduce", "chien2024:fig3a", "--device", "cuda:x", "--reduced", "--out",
                 str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and err.count("\n") == 0 and "'cuda:N' or 'auto', got 'cuda:x'" in err
    assert not (tmp_path / "out").exists()  # no figure of "not certifiable" points is written


def test_a_failure_that_is_not_the_theorems_is_not_called_not_certifiable(tmp_path, monkeypatch):
    import audits.runner
    from audits.reproductions.registry import get_empirical_reproduction

    def broken(spec, **_):
        raise TypeError("a programming error, not a refusal of the theorem")

    monkeypatch.setattr(audits.runner, "prepare_audit", broken)
    with pytest.raises(TypeError, match="programming error"):
        get_empirical_reproduction("chien2024:fig3a").run(
            dataset=("digits", None), trials=4, device="cpu", out_dir=str(tmp_path),
            reduced=True)


# ----------------------------------------------------------------------------------------------
# Plots (rendered, then inspected through matplotlib's own geometry).


def _lines(figure):
    return {line.get_label(): line for line in figure.axes[0].get_lines()}


def _cd_rows(statuses: tuple[str, ...], sigmas=(0.5,)) -> list[dict]:
    rows = []
    for sigma in sigmas:
        for status in statuses:
            row = {"method": "pnsgd", "batch": 128, "sigma": sigma, "label": "b=128",
                   "status": status, "epochs_per_request": [3, 3],
                   "retraining_epochs_planned": 80}
            if status == "run":
                row.update(accuracy_mean=0.4805, accuracy_std=0.0004, unlearning_epochs=6,
                           retraining_epochs=80)
            elif status == "counted, not audited":
                row.update(unlearning_epochs=6, retraining_epochs=80)
            else:
                row.update(unlearning_epochs_planned=6)
            rows.append(row)
    return rows


def test_panel_d_shows_retraining_with_one_sigma():
    from audits.reproductions.chien2024.plots import panel_figure

    line = _lines(panel_figure("d", _cd_rows(("run",))))["retrain, b=128"]
    assert len(line.get_xdata()) == 1
    assert line.get_marker() not in (None, "None", "", " ") and line.get_markersize() > 0


@pytest.mark.parametrize("panel", ["c", "d"])
def test_panel_y_label_and_title_lie_inside_the_image(panel):
    from audits.reproductions.chien2024.plots import panel_figure

    figure = panel_figure(panel, _cd_rows(("run",), sigmas=(0.05, 0.5, 1.0)))
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    width, height = figure.canvas.get_width_height()
    ax = figure.axes[0]
    for artist in (ax.yaxis.label, ax.xaxis.label, ax.title):
        box = artist.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, artist


def test_panel_c_has_error_bars_on_the_accuracy_scale():
    from matplotlib.container import ErrorbarContainer

    from audits.reproductions.chien2024.plots import panel_figure

    ax = panel_figure("c", _cd_rows(("run",), sigmas=(0.05, 0.5))).axes[0]
    assert any(isinstance(c, ErrorbarContainer) for c in ax.containers)
    low, high = ax.get_ylim()
    assert low <= 0.0 and high >= 1.0


def test_cost_panels_mark_counted_and_planned_points():
    """(d) draws counted-not-audited and planned points, each labelled; (c) marks the points it
    has no accuracy for; (b) draws a baseline known only from its schedule (LU over the caps)."""
    from audits.reproductions.chien2024.plots import panel_figure

    rows = _cd_rows(("counted, not audited",), sigmas=(0.1,)) + _cd_rows(("not run",),
                                                                         sigmas=(0.5,))
    lines = _lines(panel_figure("d", rows))
    assert list(lines["b=128 (counted, not audited)"].get_ydata()) == [6]
    assert list(lines["b=128 (planned)"].get_ydata()) == [6]
    assert list(lines["retrain, b=128 (planned)"].get_ydata()) == [80, 80]
    marks = _lines(panel_figure("c", rows))
    assert list(marks["b=128: certified, not audited (no accuracy)"].get_xdata()) == [0.1, 0.5]
    stored = json.loads(open("docs/reproductions/chien2024-fig3/chien2024_fig3b_long-burn-in.json")
                        .read())
    lu = _lines(panel_figure("b", stored["rows"]))["LU (S=10) (planned)"]
    assert lu.get_ydata()[-1] == pytest.approx(1053790)


def test_reproduction_pages_look_like_audit_reports_and_own_their_folder(tmp_path, monkeypatch):
    from audits.folders import ForeignFolderError
    from audits.report.html import PAGE_CSS
    from audits.reproductions.chien2024 import _panel_result
    from audits.reproductions.chien2024.setting import fig3_setting

    monkeypatch.chdir(tmp_path)
    result = _panel_result("d", fig3_setting(reduced=True), [], seconds=0.0, out_dir=None)
    folder = tmp_path / "reproduce-out" / "chien2024_fig3d"  # named as audits name theirs
    assert result["files"]["html"] == str(Path("reproduce-out") / "chien2024_fig3d"
                                          / "chien2024_fig3d.html")
    page = (folder / "chien2024_fig3d.html").read_text()
    assert PAGE_CSS in page and '<header class="verdict reproduction"' in page
    assert '<section id="points">' in page and "<footer>" in page
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "chien2024_fig3d.html").write_text("my page")
    with pytest.raises(ForeignFolderError, match="not marked as this toolkit's"):
        _panel_result("d", fig3_setting(reduced=True), [], seconds=0.0, out_dir=mine)
    assert (mine / "chien2024_fig3d.html").read_text() == "my page"
