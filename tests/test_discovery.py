"""Papers and adapters are found without a list to edit; third-party ones come through entry
points, and a broken one is a one-line note that leaves the built-ins working."""

from __future__ import annotations

import pathlib

import pytest

from audits.cli import main
from audits.registry import adapters, builtin_modules
from bounds.papers import PAPER_MODULES
from bounds.registry import list_bounds
from tests.plugin_env import ROOT, entry_point_path, run_unlearn


def readme_papers() -> str:
    text = (ROOT / "README.md").read_text()
    assert "\n## Papers\n" in text, "README.md lost its '## Papers' section"
    return text.split("\n## Papers\n", 1)[1].split("\n## ", 1)[0]


def test_every_module_under_bounds_papers_is_imported() -> None:
    on_disk = {p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".").removesuffix(
        ".__init__") for p in (ROOT / "bounds" / "papers").rglob("*.py")} - {"bounds.papers"}
    assert set(PAPER_MODULES) == on_disk


def test_every_module_under_audits_adapters_is_imported_before_a_look_up() -> None:
    on_disk = {f"audits.adapters.{p.stem}" for p in (ROOT / "audits" / "adapters").glob("*.py")
               if p.stem != "__init__"}
    assert set(builtin_modules()) == on_disk
    assert {"pnsgd", "guo2020-newton", "langevin"} <= set(adapters())


def test_readme_names_every_paper_and_algorithm() -> None:
    section = readme_papers()
    missing = [f"paper {p!r} (its ids `{p}:...`)" for p in
               sorted({b.paper for b in list_bounds(plugins=False)}) if f"`{p}:" not in section]
    missing += [f"algorithm `{a}`" for a in adapters() if f"`{a}`" not in section]
    assert not missing, ("README.md's '## Papers' section must name " + ", ".join(missing) +
                         " (see docs/adding-an-algorithm.md)")


BROKEN = {
    "unlearn_verify.bounds": {"raises": "zz_broken_plugin:nothing",
                              "clash": "zz_clash_plugin"},
    "unlearn_verify.algorithms": {"notadapter": "zz_clash_plugin:NOT_AN_ADAPTER",
                                  "missing": "zz_no_such_module"},
}


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    folder = tmp_path_factory.mktemp("broken")
    (folder / "zz_broken_plugin.py").write_text("raise RuntimeError('boom\\nsecond line')\n")
    (folder / "zz_clash_plugin.py").write_text(
        "from bounds.papers.gaussian import RDP\nfrom bounds.registry import register\n"
        "NOT_AN_ADAPTER = 3\nregister(RDP)\n")
    return entry_point_path(folder, name="zz_broken", groups=BROKEN)


@pytest.mark.parametrize("args", [["bounds", "list"], ["audit", "algorithms"],
                                  ["bounds", "eval", "gaussian:rdp", "sensitivity=1", "sigma=1",
                                   "alpha=2", "--json"]])
def test_a_broken_plugin_is_one_note_per_entry_point_and_the_builtins_still_run(
        broken: pathlib.Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = run_unlearn(args, paths=[broken], cwd=broken)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    notes = [line for line in out.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == len(out.stderr.splitlines())
    expected = (["raises", "clash"] if args[0] == "bounds" else
                ["raises", "clash", "notadapter", "missing"])
    for name in expected:
        group = "unlearn_verify.bounds" if name in BROKEN["unlearn_verify.bounds"] else \
            "unlearn_verify.algorithms"
        assert sum(f"'{name} = " in n and f"(group {group})" in n for n in notes) == 1, notes
    assert any("RuntimeError: boom second line" in n for n in notes)
    assert any("already registered" in n for n in notes)
    assert main(args) == 0  # the same command without the plug-ins, in this process
    clean = capsys.readouterr()
    assert out.stdout == clean.out and clean.err == ""
