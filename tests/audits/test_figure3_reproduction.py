"""Figure 3 of seed 000 end to end (reduced, on digits): the CLI writes PNG, JSON and HTML, every
point is audited, and the calibrated K and sigma are the bound engine's least answers."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import bounds
from audits.cli import main
from audits.reproductions.chien2024 import burn_in_epochs_long
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
        assert headline[batch]["status"] in ("holds", "does not hold")
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
