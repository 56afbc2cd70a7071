"""The "Audits in your CI" file of docs/audits.md runs as written in another project: copied
into a temporary folder outside the repository and run there by pytest, with the toolkit
importable (as when installed) but none of the repository's files at hand."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _snippet() -> str:
    text = (ROOT / "docs" / "audits.md").read_text(encoding="utf-8")
    section = text[text.index("## Audits in your CI"):]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


@pytest.mark.slow  # about 11 s: a fresh interpreter's imports and three small audits
def test_the_ci_snippet_runs_as_written_in_a_project_outside_the_repository(tmp_path):
    project = tmp_path / "their-project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_unlearning.py").write_text(_snippet(), encoding="utf-8")
    # the toolkit as an installed package would be: importable, its files elsewhere
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(project), "-c", os.devnull, "tests"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout, done.stdout[-2000:]
    assert not (project / "examples").exists()
