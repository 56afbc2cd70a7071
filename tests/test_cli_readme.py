"""Every ``unlearn ...`` command quoted in README.md and docs/audits.md runs as written
(commands with placeholders such as ``DIR`` or ``[--algorithm NAME]`` fail when pasted).

Each command is parsed by the real parser (a placeholder or an optional written in brackets is
a usage error); the cheap ones (no trials, no benchmark, no reproduction) also run in-process
and must exit 0. docs/audits.md's audit commands run in the order written, in one folder, as a
reader pastes them, with the trial counts scaled down (N -> max(4, N // 1000)), which keeps
different counts different, so a second line refused after the first fails here too.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

import audits.runner
from audits.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
AUDITS_DOC = ROOT / "docs" / "audits.md"
CHEAP = (("bounds",), ("calibrate",), ("audit", "algorithms"))


def quoted_commands(page: Path) -> list[list[str]]:
    """``unlearn`` commands in a page's shell blocks: continuation lines joined, environment
    assignments before the command, redirections and a trailing ``&`` left out."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                    words = words[1:]
                if words[:1] != ["unlearn"]:
                    continue
                if ">" in words:
                    words = words[: words.index(">")]
                if words[-1:] == ["&"]:
                    words = words[:-1]
                commands.append(words[1:])
    return commands


def readme_commands() -> list[list[str]]:
    return quoted_commands(README)


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
        assert (ROOT / args.spec).is_file(), args.spec
    if any(tuple(argv[: len(c)]) == c for c in CHEAP):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        assert code == 0, err.getvalue()
        assert out.getvalue().strip()


DOC_COMMANDS = quoted_commands(AUDITS_DOC)


def test_docs_audits_quotes_its_commands() -> None:
    firsts = {tuple(c[:2]) for c in DOC_COMMANDS}
    assert {("audit", "demo"), ("audit", "report"), ("audit", "run"), ("bench", "power")} <= firsts


@pytest.mark.parametrize("argv", DOC_COMMANDS, ids=[" ".join(c)[:60] for c in DOC_COMMANDS])
def test_docs_audits_command_parses(argv: list[str]) -> None:
    test_readme_command_parses_and_cheap_ones_run(argv)


def _runs_here(argv: list[str]) -> bool:
    """Audit commands on this machine (a Ray cluster or a benchmark is not run in CI)."""
    return argv[0] == "audit" and argv[1] in ("demo", "run", "report") and "ray" not in argv


def test_docs_audits_commands_run_in_the_order_written(tmp_path, monkeypatch, capsys) -> None:
    def small(n: int) -> int:
        return max(4, n // 1000)

    real = audits.runner.run_audit

    def scaled(spec, **options):
        spec = audits.runner.load_spec(spec)
        spec = spec.replace(trials=small(spec.trials), pilot_trials=min(spec.pilot_trials, 4),
                            chunk_size=min(spec.chunk_size, 25))
        return real(spec, **options)

    monkeypatch.setattr(audits.runner, "run_audit", scaled)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    ran = [argv for argv in DOC_COMMANDS if _runs_here(argv)]
    assert [a[:2] for a in ran[:3]] == [["audit", "demo"], ["audit", "report"], ["audit", "demo"]]
    for argv in ran:
        code = main(argv)
        captured = capsys.readouterr()
        assert code in (0, 4), f"{' '.join(argv)} exited {code}: {captured.err.strip()}"
        assert "Audit verdict" in captured.out, captured.out


def _papers_section() -> str:
    text = README.read_text()
    return text[text.index("## Papers"):]


def test_readme_papers_section_lists_what_each_paper_brings() -> None:
    import bounds
    from audits.registry import adapter_names
    from audits.reproductions.registry import empirical_reproductions
    from bounds.registry import list_reproductions

    section = _papers_section()
    assert "planned" not in section
    for prefix in {b.id.split(":")[0] for b in bounds.list_bounds()}:
        assert f"`{prefix}:*`" in section, prefix
    for name in adapter_names():
        assert f"`{name}`" in section, name
    reproductions = [r.id for r in list_reproductions()] + list(empirical_reproductions())
    for rid in reproductions:
        assert f"`{rid.split('/')[0]}`" in section or rid.startswith("chien2024:fig3"), rid
    assert "`chien2024:fig3a` to `chien2024:fig3d`" in section
    for page in sorted((ROOT / "docs").glob("errata*.md")):
        assert f"`docs/{page.name}`" in section, page.name


def test_readme_states_the_verdicts_exit_codes() -> None:
    from audits.report.schema import EXIT_CODES

    text = " ".join(README.read_text().split())
    assert (f"{EXIT_CODES['CONSISTENT']} when the verdict is CONSISTENT, "
            f"{EXIT_CODES['VIOLATION']} on a VIOLATION and {EXIT_CODES['INCONCLUSIVE']} when it is "
            "INCONCLUSIVE") in text


@pytest.mark.parametrize("page", ["index.md", "errata.md", "errata-guo2020.md",
                                  "errata-chourasia2023.md", "errata-koloskova2025.md"])
def test_docs_index_and_errata_name_papers_not_other_numberings(page: str) -> None:
    text = (ROOT / "docs" / page).read_text()
    prose = re.sub(r"`[^`\n]*`", "", text)  # file paths in commands may hold any name
    found = re.findall(r"(?i)\bseeds? \d{3}\b|\bissues? #?\d+|\btickets?\b|\bphase \d+|"
                       r"(?<![\w.,/-])00[0-4](?![\w.])|\bthe seeds?\b", prose)
    assert not found, found
