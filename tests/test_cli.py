"""The ``unlearn`` command line: JSON output, exit codes, one-line errors, no tracebacks.

The error contract across every subcommand (hostile argv, --json errors) is in
tests/test_cli_contract.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from audits.cli import main

THM32 = ["alpha=10", "sigma=0.05", "eta=1/L", "m=0.011264", "L=0.261264", "M=1", "n=11264",
         "b=128", "T=20", "K=1", "R=100"]


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_bounds_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    listing = run_json(capsys, "bounds", "list", "--paper", "chien2024")
    ids = {row["id"] for row in listing["bounds"]}
    assert {"chien2024:thm3.2", "chien2024:cor3.7", "chien2024:cor3.8", "chien2024:thm3.11",
            "chien2024:corJ.1", "chien2024:propN.2", "chien2024:prop3.9"} <= ids
    shown = run_json(capsys, "bounds", "show", "chien2024sglu:cor3.8")
    assert shown["bound"] == "chien2024:cor3.7"
    assert "Corollary 3.7" in shown["citation"]
    assert shown["assumptions"]


@pytest.mark.parametrize("precision", ["float", "mp", "interval"])
def test_bounds_eval_precisions_agree(capsys: pytest.CaptureFixture[str], precision: str) -> None:
    out = run_json(capsys, "bounds", "eval", "chien2024:thm3.2", *THM32, "--precision", precision)
    assert out["value"] == pytest.approx(0.0017607444222819903, rel=1e-12)
    if precision == "interval":
        assert out["certified_upper"] >= 0.0017607444222819903


def test_key_value_pairs_may_follow_options(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "calibrate", "chien2024:cor3.7", "--solve", "K", "--epsilon", "1",
                   "--delta", "1e-5", "sigma=0.01", "eta=1/L", "m=0.01", "L=0.26", "M=1",
                   "n=1000", "b=100", "R=10")
    assert out["value"] == 11
    assert out["certified_epsilon"] <= 1 < out["neighbour_epsilon"]


def test_reproduce_table3_json(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "reproduce", "chien2024:table3")
    assert (out["matches"], out["total"]) == (24, 24)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["bounds", "show", "chien2024:nope"], "no bound 'chien2024:nope'"),
        (["bounds", "eval", "chien2024:thm3.2", *THM32[:-1], "R=-1"], "R > 0"),
        (["bounds", "eval", "chien2024:thm3.2", *THM32[:2], "eta=5", *THM32[3:]], "eta <= 1/L"),
        (["bounds", "eval", "chien2024:thm3.2", "alpha=2"], "needs"),
        (["bounds", "eval", "chien2024:thm3.2", *THM32[1:], "alpha=nan"], "alpha"),
        (["bounds", "eval", "chien2024:thm3.2", *THM32, "zeta=1"], "does not take"),
        (["bounds", "eval", "chien2024:thm3.2", "garbage"], "key=value"),
        (["calibrate", "chien2024:lem3.3", "--solve", "T", "--epsilon", "1", "eta=1"], "not a privacy"),
        (["bounds", "list", "--paper", "nobody"], "no paper"),
        (["reproduce", "nobody:table1"], "no reproduction"),
    ],
)
def test_bad_input_gives_one_line_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:")
    assert "\n" not in err and "Traceback" not in err
    assert fragment in err


def test_python_dash_m_audits_is_the_same_program() -> None:
    out = subprocess.run([sys.executable, "-m", "audits", "bounds", "eval", "chien2024:cor3.7",
                          "alpha=2", "sigma=1", "eta=1", "m=0.5", "L=1", "M=1", "n=10", "b=5",
                          "K=1", "R=10", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    value = json.loads(out.stdout)["value"]
    # Cor 3.7 by hand: c = 1/2, N = 2, Z = min(2*1*1/(5*(1 - 1/4)), 20) = 8/15.
    assert value == pytest.approx(2 * (8 / 15) ** 2 * 0.5**4 / 2, rel=1e-14)


def test_audit_algorithms_lists_pnsgd_with_its_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "audit", "algorithms")
    names = [row["name"] for row in out["algorithms"]]
    assert "pnsgd" in names and out["count"] == len(names)
    pnsgd = out["algorithms"][names.index("pnsgd")]
    assert pnsgd["default"] is True and pnsgd["description"]
    params = {p["name"]: p["default"] for p in pnsgd["parameters"]}
    assert params["clip"] == 0.05 and params["batch_size"] == "full" and params["sigma"] is None
    assert pnsgd["calibrate"] == ["sigma", "K"]


@pytest.mark.parametrize("argv", [["audit", "demo", "--algorithm", "nope", "--trials", "2"],
                                  ["bench", "trials", "--algorithm", "nope", "--trials", "2"]])
def test_unknown_algorithm_is_a_one_line_error(capsys: pytest.CaptureFixture[str],
                                               argv: list[str]) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "unknown algorithm 'nope'" in err
    assert "pnsgd" in err  # names the known ones


def test_calibration_prints_the_neighbour_epsilon_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 10: the neighbour's epsilon printed with 10 digits could read as the target itself.
    argv = ["calibrate", "chien2024:thm3.2", "--solve", "sigma", "--epsilon", "1", "--delta",
            "8.8778e-5", "eta=1/L", "m=0.011264", "L=0.261264", "M=1", "n=11264", "b=128", "T=20",
            "K=1", "R=100"]
    record = run_json(capsys, *argv)
    assert main(argv) == 0
    text = capsys.readouterr().out
    certified = re.search(r"certified epsilon (\S+) <= (\S+)", text)
    neighbour = re.search(r"gives epsilon (\S+) > target (\S+)", text)
    assert certified and neighbour, text
    # The neighbour's epsilon is printed exactly, so it visibly fails the target.
    assert float(certified.group(1)) <= float(certified.group(2))
    assert record["certified_epsilon"] <= 1.0
    assert float(neighbour.group(1)) == record["neighbour_epsilon"] > float(neighbour.group(2))
    assert float(neighbour.group(2)) == record["target_epsilon"] == 1.0


def test_bench_trials_all_prints_one_row_per_algorithm(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import audits.cli.bench

    # two cheap algorithms stand for the registry: one with its own benchmark, one generic
    monkeypatch.setattr(audits.cli.bench, "adapter_names", lambda: ("noisy-gd", "d2d"))
    out = run_json(capsys, "bench", "trials", "--algorithm", "all", "--trials", "4")
    assert [row["algorithm"] for row in out["rows"]] == ["noisy-gd", "d2d"]
    for row in out["rows"]:
        assert row["loop_matches_batched"] is True
        assert row["batched_trials_per_s"] > 0 and row["loop_trials_per_s"] > 0
    assert "loop: run_trials(mode='loop')" in out["rows"][1]["note"]
    assert main(["bench", "trials", "--algorithm", "all", "--trials", "4"]) == 0
    captured = capsys.readouterr()
    table = captured.out.splitlines()
    assert table[1].split()[:2] == ["algorithm", "batched/s"]
    assert [line.split()[0] for line in table[2:]] == ["noisy-gd", "d2d"]
    assert all(line.split()[-1] == "yes" for line in table[2:])
    assert "bench trials: noisy-gd" in captured.err


def _mnist_npz(folder) -> str:
    import numpy as np

    rng = np.random.default_rng(0)
    path = folder / "mnist.npz"
    np.savez(path, x_train=rng.integers(0, 256, size=(120, 6, 6)),
             y_train=rng.choice([3, 8], size=120), x_test=rng.integers(0, 256, size=(20, 6, 6)),
             y_test=rng.choice([3, 8], size=20))
    return str(path)


@pytest.mark.parametrize("algorithm", ["noisy-gd", "guo2020-newton"])
def test_bench_trials_runs_on_a_dataset_read_from_the_users_files(
        tmp_path, capsys: pytest.CaptureFixture[str], algorithm: str) -> None:
    out = run_json(capsys, "bench", "trials", "--algorithm", algorithm, "--dataset", "mnist",
                   "--path", _mnist_npz(tmp_path), "--trials", "4")
    assert out["dataset"] == "mnist" and out["loop_matches_batched"] is True


@pytest.mark.parametrize("argv, fragment", [
    (["--path", "x.npz"], "give --dataset too"),
    (["--algorithm", "all", "--dataset", "mnist", "--path", "x.npz"], "leave --dataset, --path"),
    (["--algorithm", "d2d", "--dataset", "mnist", "--path", "x.npz"], "runs on its demo data"),
])
def test_bench_trials_path_needs_a_dataset_and_an_algorithm_that_takes_one(
        capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    assert main(["bench", "trials", *argv, "--trials", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and fragment in err


def test_bench_trials_all_refuses_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "trials", "--algorithm", "all", "--trials", "2", "--model", "cnn"]) == 1
    assert capsys.readouterr().err.strip().startswith("error:")
