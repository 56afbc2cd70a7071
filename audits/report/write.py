"""Writing an audit report: ``report.json`` and ``report.html`` together, validated first."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from audits import progress
from audits.report.html import render_validated_html
from audits.report.schema import (
    HTML_NAME,
    JSON_NAME,
    ReportPaths,
    atomic_write,
    json_pieces,
    validate_report,
)

__all__ = ["write_report"]



def write_report(report: Mapping, out_dir: str | Path) -> ReportPaths:
    """Validate ``report`` and write ``report.json`` and ``report.html`` into ``out_dir``.

    Nothing is written when validation fails.
    """
    progress.phase("writing the report (figures, HTML)")
    plain = validate_report(report)
    page = render_validated_html(plain)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(json_path=out / JSON_NAME, html_path=out / HTML_NAME)
    atomic_write(paths.json_path, json_pieces(plain))
    atomic_write(paths.html_path, page)
    return paths
