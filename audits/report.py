"""Audit reports: write, render and summarise ``report.json`` (schema version 1).

The report is split along its seams, and every name keeps its ``audits.report`` import path:

* :mod:`audits.report_schema`: the report data, its schema constants, validation and reading;
* :mod:`audits.report_text`: numbers as text and the terminal summary (:func:`summary_text`);
* :mod:`audits.report_figures`: the matplotlib figures (Agg canvas, base64 PNG);
* :mod:`audits.report_html`: the self-contained ``report.html`` (:func:`render_html`);
* this module: writing ``report.json`` and ``report.html`` together (:func:`write_report`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from audits import progress
from audits.report_html import render_html
from audits.report_schema import (  # noqa: F401  (re-exported: the old import paths)
    _ABS_TOL,
    _REL_TOL,
    HTML_NAME,
    JSON_NAME,
    KIND_ESTIMATE,
    KIND_LOWER_BOUND,
    SCHEMA_ID,
    SCHEMA_VERSION,
    STATUSES,
    ReportPaths,
    _atomic_write,
    load_report,
    to_json,
    validate_report,
)
from audits.report_text import summary_text

__all__ = ["ReportPaths", "load_report", "render_html", "summary_text", "to_json",
           "validate_report", "write_report"]


# -- files -------------------------------------------------------------------------------------


def write_report(report: Mapping, out_dir: str | Path) -> ReportPaths:
    """Validate ``report`` and write ``report.json`` and ``report.html`` into ``out_dir``.

    Nothing is written when validation fails.
    """
    progress.phase("writing the report (figures, HTML)")
    plain = validate_report(report)
    text = json.dumps(plain, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    page = render_html(plain)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(json_path=out / JSON_NAME, html_path=out / HTML_NAME)
    _atomic_write(paths.json_path, text)
    _atomic_write(paths.html_path, page)
    return paths
