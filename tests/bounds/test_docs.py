"""The documentation tells the truth about the declarations.

* ``docs/theorems/*.md`` equal what ``docs/generate.py`` makes from the registry now;
* every example command on those pages runs (in-process, through ``audits.cli.main``);
* every ``$ unlearn ...`` / ``$ python -c ...`` block in the hand-written pages (errata,
  improved bounds, conventions) runs and still prints the output quoted under it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import pathlib
import re
import shlex
import subprocess
import sys
from types import ModuleType

import pytest
import sympy as sp

from audits.cli import main as cli_main
from bounds import registry
from bounds.declarations import Bound, Citation, Guarantee, Parameter, Precondition
from bounds.registry import list_bounds, list_reproductions
from bounds.values import symbols

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HAND_WRITTEN = ("index.md", "conventions.md", "errata.md", "improved.md")
HINT = "the theorem reference is out of date: run `python docs/generate.py`"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None, "docs/generate.py is missing"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generator = load_generator()


# ------------------------------------------------------------------------------------------
# Console blocks: "$ cmd" starts a command, "> ..." continues it, other lines are its output
# ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Example:
    source: str
    command: str
    expected: tuple[str, ...]
    slow: bool

    def __str__(self) -> str:
        return f"{self.source}: {self.command.splitlines()[0][:90]}"


_FENCE = re.compile(r"(?P<slow><!-- slow -->\n)?```console\n(?P<body>.*?)```", re.DOTALL)


def console_examples(text: str, source: str) -> list[Example]:
    examples: list[Example] = []
    for block in _FENCE.finditer(text):
        command: list[str] = []
        output: list[str] = []
        for line in block.group("body").splitlines():
            if line.startswith("$ "):
                if command:
                    examples.append(Example(source, "\n".join(command), tuple(output),
                                            bool(block.group("slow"))))
                command, output = [line[2:]], []
            elif line.startswith("> ") and command and not output:
                command.append(line[2:])
            elif command:
                output.append(line)
        if command:
            examples.append(Example(source, "\n".join(command), tuple(output),
                                    bool(block.group("slow"))))
    return examples


def generated_examples() -> list[Example]:
    out = []
    for path in sorted((DOCS / "theorems").glob("*.md")):
        out += console_examples(path.read_text(encoding="utf-8"), f"theorems/{path.name}")
    return out


def hand_written_examples() -> list[Example]:
    out = []
    for name in HAND_WRITTEN:
        path = DOCS / name
        if path.exists():
            out += console_examples(path.read_text(encoding="utf-8"), name)
    return out


def as_params(examples: list[Example], *, reproduce_is_slow: bool = False) -> list:
    params = []
    for ex in examples:
        slow = ex.slow or (reproduce_is_slow and ex.command.startswith("unlearn reproduce"))
        params.append(pytest.param(ex, id=str(ex), marks=[pytest.mark.slow] if slow else []))
    return params


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def same_line(expected: str, actual: str) -> bool:
    """Equal text and numbers equal to 1e-9 relative (last float digits may vary by platform)."""
    if _NUMBER.sub("#", expected).rstrip() != _NUMBER.sub("#", actual).rstrip():
        return False
    pairs = zip(_NUMBER.findall(expected), _NUMBER.findall(actual), strict=True)
    return all(math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-300) for a, b in pairs)


def check_output(expected: tuple[str, ...], actual: list[str]) -> None:
    """The quoted lines must open the actual output; a line ``...`` skips any number of lines."""
    position = 0
    skipping = False
    for line in expected:
        if line.strip() == "...":
            skipping = True
            continue
        while skipping and position < len(actual) and not same_line(line, actual[position]):
            position += 1
        assert position < len(actual), f"missing output line {line!r}; got:\n" + "\n".join(actual)
        assert same_line(line, actual[position]), (
            f"quoted {line!r} but the command now prints {actual[position]!r}"
        )
        position += 1
        skipping = False


def run_example(example: Example, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    argv = shlex.split(example.command)
    if argv[0] == "unlearn":
        capsys.readouterr()
        try:
            status = cli_main(argv[1:])
        except SystemExit as exc:  # `reproduce` exits 1 on a mismatch
            status = int(exc.code or 0)
        captured = capsys.readouterr()
        return status, (captured.out + captured.err).splitlines()
    assert argv[:2] == ["python", "-c"], f"only unlearn and python -c commands run: {argv[:2]}"
    proc = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    return proc.returncode, (proc.stdout + proc.stderr).splitlines()


# ------------------------------------------------------------------------------------------
# The generated pages are in sync with the registry
# ------------------------------------------------------------------------------------------


def test_generated_pages_match_the_declarations() -> None:
    problems = generator.out_of_sync(DOCS)
    assert not problems, f"{HINT}\n" + "\n".join(problems)


def test_every_bound_and_reproduction_has_its_section() -> None:
    pages = generator.generate()
    for bound in list_bounds(plugins=False):
        page = pages[f"theorems/{bound.paper}.md"]
        assert f"### `{bound.id}`:" in page, f"{bound.id} has no section; {HINT}"
        if bound.example:
            assert f"$ {generator.example_command(bound)}\n" in page
    for repro in list_reproductions(plugins=False):
        page = pages[f"theorems/{repro.id.split(':', 1)[0]}.md"]
        assert f"$ unlearn reproduce {repro.id}\n" in page


def test_generation_is_deterministic() -> None:
    assert generator.generate() == generator.generate()


def test_generator_follows_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A paper added to bounds/papers gets its own page, listed in the index, with its example;
    a plug-in's bound (registered after the built-ins) gets none."""
    x, y = symbols("x y")
    extra = Bound(
        id="zzdocs:thm1",
        aliases=("chien2024:zzalias",),
        title="A test bound with a | pipe and a*b",
        citation=Citation("zzdocs", "Doe. A test paper. 2099", "none.txt", "Theorem 1"),
        parameters=(Parameter("x", "first input", lower=0, lower_open=True),
                    Parameter("y", "second input", lower=0)),
        expression=x**2 / (1 + y),
        guarantee=Guarantee("renyi_unlearning", "test guarantee", renyi_order="x"),
        preconditions=(Precondition(sp.Le(y, x), "y at most x"),),
        monotone={"y": "decreasing"},
        example={"x": 3, "y": "1/2"},
    )
    monkeypatch.setattr(registry, "_REGISTRY", {**registry._REGISTRY, extra.id: extra})
    monkeypatch.setattr(registry, "_ALIASES", {**registry._ALIASES, "chien2024:zzalias": extra.id})
    assert "theorems/zzdocs.md" not in generator.generate()
    monkeypatch.setattr(registry, "_BUILTINS", {*registry._BUILTINS, extra.id})
    pages = generator.generate()
    page = pages["theorems/zzdocs.md"]
    assert "$ unlearn bounds eval zzdocs:thm1 x=3 y=1/2\n" in page
    assert "`6.00000000000`" in page or "`6.0`" in page  # 3^2/(1 + 1/2), in mpmath
    assert r"A test bound with a \| pipe and a\*b" in page  # escaped for Markdown tables
    assert "[zzdocs](zzdocs.md)" in pages["theorems/index.md"]
    assert "| `chien2024:zzalias` | `zzdocs:thm1` |" in pages["theorems/chien2024.md"]


def test_console_parser_reads_commands_continuations_and_output() -> None:
    text = "x\n<!-- slow -->\n```console\n$ python -c \"a\n> b\"\nout 1\n$ unlearn x\n```\n"
    examples = console_examples(text, "t")
    assert [e.command for e in examples] == ['python -c "a\nb"', "unlearn x"]
    assert examples[0].expected == ("out 1",) and examples[0].slow
    check_output(("a = 1.0000000000001",), ["a = 1.0", "more"])
    with pytest.raises(AssertionError):
        check_output(("a = 1.1",), ["a = 1.0"])
    with pytest.raises(AssertionError):
        check_output(("b = 1.0",), ["a = 1.0"])


# ------------------------------------------------------------------------------------------
# Every command in the docs runs
# ------------------------------------------------------------------------------------------

GENERATED = generated_examples()
HAND = hand_written_examples()


def test_the_pages_have_example_commands() -> None:
    assert len(GENERATED) >= len([b for b in list_bounds(plugins=False) if b.example])
    for name in HAND_WRITTEN:
        assert (DOCS / name).exists(), f"docs/{name} is missing"
    assert {e.source for e in HAND} >= {"errata.md", "improved.md", "conventions.md"}


@pytest.mark.parametrize("example", as_params(GENERATED, reproduce_is_slow=True))
def test_generated_example_runs(example: Example, capsys: pytest.CaptureFixture[str]) -> None:
    status, output = run_example(example, capsys)
    assert status == 0, f"`{example.command}` exited {status}:\n" + "\n".join(output)


@pytest.mark.parametrize("example", as_params(HAND))
def test_documented_command_prints_what_the_page_quotes(
    example: Example, capsys: pytest.CaptureFixture[str]
) -> None:
    status, output = run_example(example, capsys)
    expect_error = bool(example.expected) and example.expected[0].startswith("error:")
    assert (status != 0) == expect_error, (
        f"`{example.command}` exited {status}:\n" + "\n".join(output)
    )
    check_output(example.expected, output)
