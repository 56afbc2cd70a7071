"""The audit report: ``report.json`` (its schema), the terminal summary, figures and ``report.html``.

:mod:`~audits.report.schema` holds the data and its validation, :mod:`~audits.report.text` numbers
as text and the summary, :mod:`~audits.report.figures` the SVG figures,
:mod:`~audits.report.html` the self-contained page and :mod:`~audits.report.write` writes both files.
"""
