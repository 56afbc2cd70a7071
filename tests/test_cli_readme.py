"""Every ``unlearn ...`` command quoted in README.md runs as written (a command with a
placeholder such as ``DIR`` or ``[--algorithm NAME]`` fails when pasted, so none may have one).

Each command is parsed by the real parser (a placeholder or an optional written in brackets is
a usage error); the cheap ones (no trials, no benchmark, no reproduction) also run in-process
and must exit 0.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from audits.cli import build_parser, main

README = Path(__file__).resolve().parents[1] / "README.md"
CHEAP = (("bounds",), ("calibrate",), ("audit", "algorithms"))


def readme_commands() -> list[list[str]]:
    """``unlearn`` commands in the README's shell blocks, continuation lines joined."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words[:1] == ["unlearn"]:
                    commands.append(words[1:])
    return commands


COMMANDS = readme_commands()


def test_the_readme_quotes_every_command() -> None:
    firsts = {tuple(c[:2]) if c[0] in ("bounds", "audit", "bench") else (c[0],) for c in COMMANDS}
    assert {("bounds", "list"), ("bounds", "show"), ("bounds", "eval"), ("bounds", "epsilon"),
            ("calibrate",), ("reproduce",), ("bench", "bounds"), ("bench", "trials"),
            ("audit", "algorithms"), ("audit", "demo"), ("audit", "run"),
            ("audit", "report")} <= firsts


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c)[:60] for c in COMMANDS])
def test_readme_command_parses_and_cheap_ones_run(argv: list[str]) -> None:
    for word in argv:
        assert not re.fullmatch(r"\[.*|.*\]|[A-Z]{2,}|<.*>", word), f"placeholder {word!r}"
    args, extra = build_parser().parse_known_args(argv)
    assert all("=" in e and not e.startswith("-") for e in extra), extra
    if hasattr(args, "spec"):  # a spec path is relative to the repository root
        assert (README.parent / args.spec).is_file(), args.spec
    if any(tuple(argv[: len(c)]) == c for c in CHEAP):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        assert code == 0, err.getvalue()
        assert out.getvalue().strip()
