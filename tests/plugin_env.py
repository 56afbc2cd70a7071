"""Plug-ins for subprocesses: :func:`install` puts a package (its own ``pyproject.toml``) into a
folder with pip, offline; :func:`entry_point_path` registers entry points without installing
anything (a ``<name>.dist-info`` folder with METADATA and entry_points.txt on the subprocess's
``PYTHONPATH`` is what :func:`importlib.metadata.entry_points` reads for an installed
distribution)."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tomllib
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


def install(source: pathlib.Path, site: pathlib.Path, *, pip_args: Sequence[str] = ()) -> None:
    """``pip install --no-deps --no-build-isolation --no-index --target SITE SOURCE`` (plus
    ``pip_args``); where setuptools is missing (pip could not build offline), the same layout by
    hand: the packages ``[tool.setuptools] packages`` lists, and a dist-info with the
    ``[project.entry-points]`` of ``pyproject.toml``."""
    if importlib.util.find_spec("setuptools") is not None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--no-build-isolation", "--no-index", *pip_args, "--target", str(site),
                        str(source)], check=True, capture_output=True, timeout=120)
        return
    project = tomllib.loads((source / "pyproject.toml").read_text())
    for package in project["tool"]["setuptools"]["packages"]:
        shutil.copytree(source / package, site / package)
    entry_point_path(site, name=project["project"]["name"].replace("-", "_"),
                     groups=project["project"]["entry-points"])
