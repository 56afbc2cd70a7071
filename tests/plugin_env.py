"""Register entry points for a subprocess without installing anything: a ``<name>.dist-info``
folder (METADATA and entry_points.txt) on the subprocess's ``PYTHONPATH`` is what
:func:`importlib.metadata.entry_points` reads for an installed distribution."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections.abc import Mapping, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]


def entry_point_path(folder: pathlib.Path, *, name: str,
                     groups: Mapping[str, Mapping[str, str]]) -> pathlib.Path:
    """``folder`` holding ``<name>-0.dist-info`` with ``groups`` as its entry points."""
    info = folder / f"{name}-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0\n")
    lines = []
    for group, points in groups.items():
        lines += [f"[{group}]", *(f"{key} = {value}" for key, value in points.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    return folder


def run_unlearn(args: Sequence[str], *, paths: Sequence[pathlib.Path], cwd: pathlib.Path,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m audits ARGS`` with the toolkit and ``paths`` on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *map(str, paths)])}
    return subprocess.run([sys.executable, "-m", "audits", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)
