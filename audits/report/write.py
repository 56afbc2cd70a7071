"""Writing an audit report: ``report.json`` and ``report.html`` together, validated first."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from audits import progress
from audits.folders import claim_folder
from audits.report.html import render_validated_html
from audits.report.schema import (
    HTML_NAME,
    JSON_NAME,
    ReportPaths,
    atomic_write,
    json_pieces,
    validate_report,
)

__all__ = ["write_report", "write_validated_report"]


def write_report(report: Mapping, out_dir: str | Path) -> ReportPaths:
    """Validate ``report`` and write ``report.json`` and ``report.html`` into ``out_dir``.

    Nothing is written when validation fails, nor into an existing folder that holds files
    the toolkit did not write (:func:`audits.folders.check_owned`).
    """
    return write_validated_report(validate_report(report), out_dir)


def write_validated_report(plain: dict, out_dir: str | Path) -> ReportPaths:
    """:func:`write_report` of what :func:`~audits.report.schema.validate_report` returned
    (validated once, not copied again while the page is drawn)."""
    progress.phase("writing the report (figures, HTML)")
    page = render_validated_html(plain)
    out = claim_folder(out_dir)  # never a folder holding files the toolkit did not write
    paths = ReportPaths(json_path=out / JSON_NAME, html_path=out / HTML_NAME)
    atomic_write(paths.json_path, json_pieces(plain))
    atomic_write(paths.html_path, page)
    return paths
