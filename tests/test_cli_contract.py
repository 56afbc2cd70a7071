"""The CLI's error contract, checked on every subcommand with hostile arguments.

Contract: exit status 0, 1 (an error) or 2 (a malformed command line); on failure stderr is one
line starting ``error:`` and never a traceback; with ``--json`` stdout is one JSON object, on
failure ``{"error": {"type": ..., "message": ...}}``; messages stay short however long the input.

Everything runs in-process through :func:`audits.cli.main` with captured streams (no
subprocesses), and commands that would do real work (audits, benchmarks, reproductions that run
a mechanism) only ever get a malformed option, so every example fails or finishes quickly.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audits.cli import build_parser, main
from audits.cli.common import MESSAGE_CHARS

CANARY = Path(os.environ.get("TMPDIR", "/tmp")) / "unlearn-cli-contract-canary"


def run_cli(argv: list[str]) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - start


def check_contract(argv: list[str], code: int, out: str, err: str) -> None:
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if code != 0:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err)
        assert len(lines[0]) <= len("error: ") + MESSAGE_CHARS, (argv, len(lines[0]))
    options = argv[: argv.index("--")] if "--" in argv else argv  # after "--", only operands
    if "--json" in options and "--help" not in options and "-h" not in options:
        payload = json.loads(out)
        if code != 0:
            assert set(payload) == {"error"}, (argv, out)
            assert isinstance(payload["error"]["type"], str)
            assert payload["error"]["message"] == lines[0][len("error: "):]


HOSTILE_VALUES = [
    "", " ", "-", "--", "=", "x=", "=1", "k=v", "sigma=1", "alpha=nan", "alpha=inf", "alpha=-inf",
    "n=1e400", "sigma=1e99999999", "sigma=9**9**9**9", "sigma=2**2**2**2**2**2",
    "sigma=" + "(" * 400 + "1" + ")" * 400, "sigma=" + "(" * 5000, "sigma=factorial(10**9)",
    f"sigma=__import__('os').system('touch {CANARY}')", "sigma=lambda: 0",
    "sigma=[x for x in ()]", "sigma=f'{1}'", "sigma=().__class__.__base__",
    "a" * 5000, "sigma=" + "1" * 5000, "é=1", "\x00", "\x1b[31mred", "line\nbreak", "1/0",
    "eta=1/0", "chien2024:thm3.2", "chien2024:cor3.7", "chien2024:nope", "nobody:x", "../../etc",
    "--json", "--json", "--precision", "interval", "mp", "--digits", "-1", "0", "100000", "x",
    "--delta", "2", "1e-5", "1/0", "--epsilon", "-1", "1e9999", "--solve", "K", "sigma",
    "--conversion", "bogus", "--alpha-min", "5", "--alpha-max", "2", "--paper", "--help-me",
    "--unknown", "-x",
]

# (command path, malformed option always appended so that no real work can start)
COMMANDS: list[tuple[list[str], list[str]]] = [
    (["bounds", "list"], []),
    (["bounds", "show"], []),
    (["bounds", "eval"], []),
    (["bounds", "epsilon"], []),
    (["calibrate"], []),
    (["reproduce"], ["--dataset", "x"]),
    (["audit", "algorithms"], []),
    (["audit", "report"], []),
    (["bench", "bounds"], ["--points", "10"]),
    (["bench", "trials"], ["--trials", "-4"]),
    (["bench", "tightness"], ["--seeds", "0"]),
    (["bench", "exact"], ["--algorithm", "nobody"]),
    (["audit", "demo"], ["--trials", "0"]),
    (["audit", "run"], ["--trials", "1e99"]),
    ([], []),
    (["bounds"], []),
    (["audit"], []),
    (["bench"], []),
]


@st.composite
def hostile_argv(draw: st.DrawFn) -> list[str]:
    path, forced = draw(st.sampled_from(COMMANDS))
    tokens = draw(st.lists(st.one_of(st.sampled_from(HOSTILE_VALUES),
                                     st.text(min_size=0, max_size=30)), max_size=6))
    if forced:
        at = draw(st.integers(0, len(tokens)))
        tokens = [*tokens[:at], *forced, *tokens[at:]]
    if path[:1] == ["reproduce"] and tokens and not tokens[0].startswith("-"):
        # Never a real reproduction id: some run a mechanism for minutes.
        tokens[0] = "nobody:" + tokens[0][:10]
    tokens = [t for t in tokens if t not in ("--debug", "-h", "--help")]
    return [*path, *tokens]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argv=hostile_argv(), as_json=st.booleans())
def test_hostile_argv_keeps_the_contract(argv: list[str], as_json: bool) -> None:
    if as_json:
        argv = [*argv, "--json"]
    code, out, err, seconds = run_cli(argv)
    check_contract(argv, code, out, err)
    assert seconds < 20, (argv, seconds)
    assert not CANARY.exists(), "user text executed code"


def _all_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _all_parsers(sub, (*path, name))


def test_every_subcommand_has_a_description_and_help_exits_0() -> None:
    parsers = list(_all_parsers(build_parser()))
    assert len(parsers) >= 15
    for path, parser in parsers:
        assert parser.description, f"unlearn {' '.join(path)} has no description"
        code, out, err, _ = run_cli([*path, "--help"])
        assert code == 0 and parser.description.split()[0] in out and not err


def test_version() -> None:
    code, out, err, _ = run_cli(["--version"])
    assert code == 0 and out.startswith("unlearn ") and out.split()[1][0].isdigit()


@pytest.mark.parametrize("argv, code, fragment, kind", [
    # Issue 10 finding: IndexError traceback.
    (["bench", "bounds", "--points", "10"], 2, "--points: must be in [20000", "usage"),
    # Unbounded work: refused at once, one line.
    (["bounds", "eval", "chien2024:cor3.7", "alpha=2", "sigma=9**9**9**9", "eta=1", "m=0.5",
      "L=1", "M=1", "n=10", "b=5", "K=1", "R=10"], 1, "sigma", "input"),
    (["bounds", "eval", "chien2024:cor3.7", "alpha=2", "sigma=1e99999999", "eta=1", "m=0.5",
      "L=1", "M=1", "n=10", "b=5", "K=1", "R=10"], 1, "exponent above 400", "input"),
    (["bounds", "eval", "chien2024:cor3.7", "alpha=2", "sigma=" + "(" * 100_000 + "1"
      + ")" * 100_000, "eta=1", "m=0.5", "L=1", "M=1", "n=10", "b=5", "K=1", "R=10"], 1, "sigma",
     "input"),
    (["calibrate", "chien2024:cor3.7", "--solve", "K", "--epsilon", "1e999999999"], 2,
     "too long or too large", "usage"),
    (["bounds", "epsilon", "chien2024:cor3.7", "--delta", "1e-5", "--alpha-min", "9",
      "--alpha-max", "2"], 1, "alpha", "input"),
    (["bounds", "nope"], 2, "invalid choice", "usage"),
    # An abbreviation must not stand for a destructive option (--rep for --replace).
    (["audit", "run", "--rep", "missing.toml"], 2, "unrecognized arguments: --rep", "usage"),
    (["calibrate", "chien2024:cor3.7", "--solve", "K", "--eps", "1"], 2, "--epsilon", "usage"),
    (["bench", "trials", "--device", "cuda:x", "--trials", "2"], 1, "'cuda:N' or 'auto', got",
     "input"),
    (["bounds", "eval", "x" * 10_000], 1, "'" + "x" * 20, "input"),
    (["bounds", "show", "y" * 10_000 + "\n"], 1, "'" + "y" * 20, "input"),
])
def test_findings_are_one_line_errors(argv: list[str], code: int, fragment: str,
                                      kind: str) -> None:
    for as_json in (False, True):
        args = [*argv, "--json"] if as_json else argv
        got, out, err, seconds = run_cli(args)
        check_contract(args, got, out, err)
        assert got == code and fragment in err, err
        assert seconds < 5, seconds
        assert len(err) < 300, err  # a long input is shortened, not echoed whole
        if as_json:
            assert json.loads(out)["error"]["type"] == kind


def test_unreadable_and_unwritable_paths(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "report.json").write_bytes(b"\xff\xfe{not json")
    binary_spec = tmp_path / "spec.toml"
    binary_spec.write_bytes(b"\x00\x01\x02 = = [[")
    cases = [
        ["audit", "report", str(tmp_path / "missing")],
        ["audit", "report", str(garbage)],
        ["audit", "report", str(blocker)],
        ["audit", "run", str(tmp_path / "missing.toml")],
        ["audit", "run", str(tmp_path)],
        ["audit", "run", str(binary_spec)],
    ]
    for argv in cases:
        for args in (argv, [*argv, "--json"]):
            code, out, err, _ = run_cli(args)
            check_contract(args, code, out, err)
            assert code == 1, (args, err)


@pytest.mark.slow
def test_unwritable_out_folder_and_corrupt_store(tmp_path: Path) -> None:
    spec = Path(__file__).resolve().parents[1] / "examples" / "pnsgd_digits.toml"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "audit.sqlite").write_bytes(b"not a database" * 1000)
    for out_dir, fragment in ((blocker / "sub", "cannot create the output folder"),
                              (corrupt, "cannot read the chunk store")):
        argv = ["audit", "run", str(spec), "--out", str(out_dir), "--quiet", "--json"]
        code, out, err, _ = run_cli(argv)
        check_contract(argv, code, out, err)
        assert code == 1 and fragment in err
        assert json.loads(out)["error"]["type"] == "store"


def test_memory_and_recursion_errors_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import audits.cli as cli

    for error, fragment in ((MemoryError(), "out of memory"),
                            (RecursionError("maximum recursion depth exceeded"), "nested"),
                            (RuntimeError("boom\nsecond line"), "RuntimeError: boom second")):
        def explode(_args: argparse.Namespace, error: BaseException = error) -> None:
            raise error

        monkeypatch.setattr(cli, "cmd_bounds_list", explode)
        for argv in (["bounds", "list"], ["bounds", "list", "--json"]):
            code, out, err, _ = run_cli(argv)
            check_contract(argv, code, out, err)
            assert code == 1 and fragment in err
        # --debug (anywhere) shows the traceback as well as the error line.
        code, out, err, _ = run_cli(["bounds", "list", "--debug"])
        assert code == 1 and "Traceback" in err and err.strip().splitlines()[-1].startswith("error:")


def test_ray_failing_to_start_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    from audits.ray_runner import run_on_ray

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise ConnectionError("could not reach 10.0.0.1:6379\nmore detail")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(RuntimeError, match=r"^Ray could not start \(ConnectionError: could not "
                                           r"reach 10\.0\.0\.1:6379\); check --ray-address") as info:
        run_on_ray(object(), [], None, None, address="10.0.0.1:6379")
    assert "\n" not in str(info.value)


def test_demo_of_each_algorithm_and_each_example_have_their_own_folder() -> None:
    from audits.cli.audit import default_out_dir
    from audits.registry import adapters, default_adapter

    examples = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))
    folders = [default_out_dir(algorithm=name) for name in adapters()]
    folders += [default_out_dir(spec_path=path) for path in examples]
    assert len(examples) >= 2 and len(set(folders)) == len(folders)
    assert default_out_dir() == default_out_dir(algorithm=default_adapter().name)
