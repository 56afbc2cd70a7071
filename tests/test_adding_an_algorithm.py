"""docs/adding-an-algorithm.md is complete: its plug-in steps, followed literally (the files
taken from the page, its install command, its commands), give a toy algorithm that every
command serves: ``bounds list``, ``audit algorithms``, ``audit demo``, ``bench trials`` and
``bench tightness``."""

from __future__ import annotations

import pathlib
import re
import shlex

import pytest

from tests.plugin_env import ROOT, install, run_unlearn

GUIDE = ROOT / "docs" / "adding-an-algorithm.md"
STEPS = GUIDE.read_text().split("## The steps, as a plug-in", 1)[1].split("\n## ", 1)[0]
FILES = re.findall(r"```\w+ file=(\S+)\n(.*?)```", STEPS, re.DOTALL)
COMMANDS = [line[2:] for block in re.findall(r"```console\n(.*?)```", STEPS, re.DOTALL)
            for line in block.splitlines() if line.startswith("$ ")]
# What each command must print about the toy (the guide's commands, in its order).
EXPECTED = {
    "unlearn bounds list": "toy:centroid  renyi_unlearning",
    "unlearn audit algorithms": "toy-centroid: the guide's toy",
    "unlearn audit demo": "Audit verdict: CONSISTENT",
    "unlearn bench trials": "algorithm=toy-centroid, device=cpu",
    "unlearn bench tightness": "toy-centroid",
}


def test_the_guide_lists_three_files_an_install_and_the_five_commands() -> None:
    assert [name for name, _ in FILES] == ["toy/toy_unlearning/bound.py",
                                           "toy/toy_unlearning/algorithm.py", "toy/pyproject.toml"]
    assert COMMANDS[0].startswith("python -m pip install ")
    assert [next(k for k in EXPECTED if c.startswith(k)) for c in COMMANDS[1:]] == list(EXPECTED)


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The guide's files written out, and its install command run (offline, into SITE)."""
    tmp = tmp_path_factory.mktemp("guide")
    for name, text in FILES:
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    (tmp / "toy" / "toy_unlearning" / "__init__.py").write_text("")  # the guide's empty file
    command = shlex.split(COMMANDS[0])  # python -m pip install --no-deps ... ./toy
    assert command[:4] == ["python", "-m", "pip", "install"] and command[-1] == "./toy"
    install(tmp / "toy", tmp / "site", pip_args=[a for a in command[4:-1] if a not in (
        "--no-deps", "--no-build-isolation")])
    return tmp


@pytest.mark.parametrize("command", COMMANDS[1:], ids=lambda c: " ".join(c.split()[:3]))
def test_every_command_of_the_guide_serves_the_toy(toy: pathlib.Path, command: str) -> None:
    args = shlex.split(command)
    assert args[0] == "unlearn"
    out = run_unlearn(args[1:], paths=[toy / "site"], cwd=toy)
    assert out.returncode == 0, out.stderr
    assert "note: plug-in" not in out.stderr and "Traceback" not in out.stderr
    expected = next(v for k, v in EXPECTED.items() if command.startswith(k))
    assert expected in out.stdout, out.stdout
    if command.startswith("unlearn bench trials"):
        assert "loop_matches_batched=True" in out.stdout
    if command.startswith("unlearn bench tightness"):
        assert re.search(r"toy-centroid .* CONSISTENT .*100 \(1/1 VIOLATION\)", out.stdout)
