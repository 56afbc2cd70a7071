"""The self-contained HTML page of an audit report (inline CSS, base64 SVG figures, no scripts,
no external resources). The data it shows is validated by :mod:`audits.report.schema`; the
figures come from :mod:`audits.report.figures`.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from audits.report.figures import ReportFigure, report_figures_of
from audits.report.next_steps import next_steps
from audits.report.schema import SCHEMA_ID, SCHEMA_VERSION, validate_report
from audits.report.text import (
    EXACT_CALIBRATION_KEYS,
    blind_spot,
    bound_confidence,
    describe_bound,
    each_level,
    exact_ratio,
    exact_text,
    fmt,
    lower_bound_entries,
    number_value,
    percent_text,
    score_direction,
    tested_point,
)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


# Shared by every page the toolkit writes (audit reports, reproduction pages).
PAGE_CSS = """
:root { --ok: #1b7f3b; --bad: #b3261e; --ink: #1d1d1f; --muted: #5f6368; --line: #d9dce1; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial,
       sans-serif; color: var(--ink); background: #f4f5f7; }
main { max-width: 1120px; margin: 0 auto; padding: 0 24px 48px; }
header.verdict { color: #fff; padding: 28px 32px; margin: 0 0 24px; }
header.verdict.consistent { background: var(--ok); }
header.verdict.violation { background: var(--bad); }
header.verdict.inconclusive { background: #7a5c00; }
header.verdict.reproduction { background: #17508a; }
header.verdict .inner { max-width: 1072px; margin: 0 auto; }
header.verdict h1 { margin: 0 0 6px; font-size: 30px; letter-spacing: .02em; }
header.verdict p { margin: 6px 0; max-width: 900px; }
header.verdict .status { font-weight: 800; padding: 2px 10px; border: 2px solid #fff;
                         border-radius: 6px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px;
          padding: 18px 24px; margin: 0 0 20px; }
h2 { font-size: 20px; margin: 0 0 12px; }
h3 { font-size: 16px; margin: 18px 0 8px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { flex: 1 1 180px; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px;
        background: #fafbfc; }
.card .label { color: var(--muted); font-size: 13px; font-weight: 600; }
.card .number { font-size: 22px; font-weight: 700; }
.card .sub { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px;
         border-bottom: 1px solid var(--line); }
th { background: #f0f2f5; font-weight: 600; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.violation td { background: #fdecea; }
table.kv th { width: 230px; background: transparent; color: var(--muted); font-weight: 600; }
.estimates { border-left: 5px solid #e0a800; padding-left: 14px; }
.tag { display: inline-block; font-size: 12px; padding: 1px 8px; border-radius: 10px;
       background: #fff3cd; color: #7a5b00; font-weight: 600; }
.tag.bound { background: #e1eefb; color: #17508a; }
.warning { background: #fff3cd; border: 1px solid #e0a800; border-radius: 6px; padding: 8px 12px; }
.figures { display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: flex-start; }
figure { margin: 12px 0; flex: 1 1 100%; }
figure.half { flex: 1 1 460px; max-width: calc(50% - 12px); }
header.verdict ul { margin: 6px 0; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid var(--line);
             border-radius: 4px; background: #fff; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 6px; max-width: 900px; }
figcaption strong { color: var(--ink); }
pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 10px;
      overflow-x: auto; font-size: 12.5px; white-space: pre-wrap; word-break: break-word; }
ul { margin: 0; padding-left: 20px; }
details summary { cursor: pointer; color: var(--muted); }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 12px; }
"""


def _render_value(value: Any) -> str:
    """Any JSON value as escaped HTML: scalars as text, lists as bullets, objects as tables."""
    if isinstance(value, Mapping):
        if not value:
            return "<em>none</em>"
        rows = "".join(f"<tr><th>{_e(k)}</th><td>{_render_value(v)}</td></tr>"
                       for k, v in value.items())
        return f'<table class="kv">{rows}</table>'
    if isinstance(value, list):
        if not value:
            return "<em>none</em>"
        if all(not isinstance(v, Mapping | list) for v in value) and len(value) > 12:
            return f"<code>{_e(json.dumps(value))}</code>"
        return "<ul>" + "".join(f"<li>{_render_value(v)}</li>" for v in value) + "</ul>"
    if value is None:
        return "<em>null</em>"
    if isinstance(value, float):
        return _e(fmt(value, 6))
    return _e(value)


def _kv_table(rows: Sequence[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _plain_explanation(report: Mapping) -> list[str]:
    cert, emp, verdict = report["certificate"], report["empirical"], report["verdict"]
    eps, delta = fmt(cert["epsilon"]), fmt(cert["delta"])
    confidence = percent_text(emp["confidence"])
    n = emp["n_trials"]
    intro = (f"The certificate ({cert['bound']}) promises that the unlearned model is "
             f"statistically almost indistinguishable from a model retrained without the deleted "
             f"data: privacy loss at most ε = {eps} with δ = {delta}. The audit ran {n} trials "
             f"and attacked the resulting models; each attack gives a lower bound on the true "
             f"ε, and all of them hold together with confidence {confidence}"
             + (f" (each on its own at {percent_text(each)})" if (each := each_level(report))
                else "") + ".")
    best = verdict["best_lower_bound"]
    best_text = ("No attack produced a lower bound." if best is None else
                 f"The strongest attack shows ε ≥ {fmt(best['epsilon'])} "
                 f"(tightness {fmt(verdict['tightness'], 3)}: lower bound / certificate).")
    tested_epsilon, tested_delta = tested_point(report)
    if tested_delta != cert["delta"]:
        best_text += (f" The (ε, δ) tests ran at another point of the privacy profile the "
                      f"certificate's Rényi curve implies, ε = {fmt(tested_epsilon)}"
                      f" at δ = {fmt(tested_delta)}, where the allocation pilot forecast more.")
    if verdict["status"] == "CONSISTENT":
        outcome = ("No lower bound exceeds the certificate, so this experiment found no evidence "
                   "against it. This does not prove the certificate; it means the attacks could "
                   "not refute it.")
    elif verdict["status"] == "INCONCLUSIVE":
        needed = verdict["trials_needed"]
        outcome = ("These trials are too few to ever show a lower bound above the certificate, "
                   "so the audit says nothing either way"
                   + (f"; about {needed} trials per side would be needed." if needed else "."))
    elif not verdict["violations"]:
        outcome = ("The empirical Rényi curve exceeds the certified curve: the mechanism as run "
                   "does not meet its certificate. Possible causes: "
                   + "; ".join(verdict["possible_causes"]) + ".")
    else:
        count = len(verdict["violations"])
        subject = "1 lower bound exceeds" if count == 1 else f"{count} lower bounds exceed"
        outcome = (f"{subject} the certified ε: the mechanism as run does not meet its "
                   "certificate. Possible causes: " + "; ".join(verdict["possible_causes"])
                   + ". The violating numbers are listed below.")
    return [intro, f"{best_text} {outcome}"]


def _header(report: Mapping) -> str:
    verdict = report["verdict"]
    status = verdict["status"]
    certified, at = (fmt(x) for x in tested_point(report))
    violations = "".join(
        "<li>" + _e(f"ε ≥ {fmt(v['epsilon'])} > certified ε = {certified} at δ = {at}: ")
        + _e(describe_bound(v)) + "</li>" for v in verdict["violations"])
    violations = f"<ul>{violations}</ul>" if violations else ""
    return (
        f'<header class="verdict {status.lower()}" id="verdict"><div class="inner">'
        f'<h1>Unlearning audit: <span class="status">{_e(status)}</span></h1>'
        + "".join(f"<p>{_e(p)}</p>" for p in _plain_explanation(report))
        + violations
        + f"<p><strong>Runner's explanation:</strong> {_e(verdict['explanation'])}</p>"
        + "</div></header>"
    )


def _cards(report: Mapping) -> str:
    cert, emp, verdict = report["certificate"], report["empirical"], report["verdict"]
    utility = report["utility"]
    cards = [
        ("certified ε (upper bound)", fmt(cert["epsilon"]),
         f"δ = {fmt(cert['delta'])}, {cert['bound']}"),
        ("best empirical lower bound", fmt(verdict["max_lower_bound"]),
         f"{percent_text(emp['confidence'])} confidence"),
        ("tightness", fmt(verdict["tightness"], 3), "lower bound / certificate"),
        *_exact_card(report),
        ("largest lower bound N trials could show", fmt(emp["max_certifiable_epsilon"]),
         f"with N = {emp['n_trials']} trials"),
    ]
    if utility is not None:
        cards.append(("accuracy unlearned / retrained",
                      f"{fmt(utility['unlearned_accuracy']['mean'], 3)} / "
                      f"{fmt(utility['retrained_accuracy']['mean'], 3)}", "mean test accuracy"))
    body = "".join(
        f'<div class="card"><div class="label">{_e(label)}</div>'
        f'<div class="number">{_e(number)}</div><div class="sub">{_e(sub)}</div></div>'
        for label, number, sub in cards)
    warning = ""
    if blind_spot(report):
        warning = ('<p class="warning">With this many trials no lower bound can exceed '
                   f"{_e(fmt(emp['max_certifiable_epsilon']))}, which is not above the "
                   "certified ε: this audit could not have detected a violation. Run more "
                   "trials for a meaningful test.</p>")
    return (f'<section id="summary"><h2>Summary</h2><div class="cards">{body}</div>{warning}'
            "</section>")


_PROVENANCE_ORDER = ("bound", "title", "label", "citation", "paper", "guarantee",
                     "guarantee_description", "variant", "assumptions", "preconditions")


def _certificate_section(report: Mapping) -> str:
    cert = report["certificate"]
    rows = [
        ("bound (theorem id)", f"<code>{_e(cert['bound'])}</code>"),
        ("certified ε (interval upper end)", _e(fmt(cert["epsilon"], 8))),
        ("δ", _e(fmt(cert["delta"], 8))),
        ("Rényi order α", _e(fmt(cert["alpha"], 8)) if cert["alpha"] is not None
         else "<em>not applicable</em>"),
        ("conversion", _e(cert["conversion"]) if cert["conversion"]
         else "<em>none: the bound is already an (ε, δ) guarantee</em>"),
    ]
    calibration = cert["calibration"]
    if calibration is None:
        rows.append(("calibration", "<em>none: parameters given by the spec</em>"))
    else:
        rows.append(("calibrated parameter",
                     f"<code>{_e(calibration['parameter'])}</code> = "
                     f"{_e(exact_text(calibration['value']))} for target ε = "
                     f"{_e(exact_text(calibration['target_epsilon']))}"))
        # Calibrated values and their epsilons in full (repr): at 6 digits the neighbour's
        # epsilon, just above the target, printed as the target itself.
        extra = {k: repr(v) if isinstance(v, float) and k in EXACT_CALIBRATION_KEYS else v
                 for k, v in calibration.items()
                 if k not in ("parameter", "value", "target_epsilon")}
        if extra:
            rows.append(("calibration details", _render_value(extra)))
    provenance = cert["provenance"]
    ordered = [k for k in _PROVENANCE_ORDER if k in provenance]
    ordered += [k for k in provenance if k not in _PROVENANCE_ORDER]
    prov_rows = [(k, _render_value(provenance[k])) for k in ordered]
    return (
        '<section id="certificate"><h2>Certificate (upper bound)</h2>'
        + _kv_table(rows)
        + "<h3>Provenance</h3>" + _kv_table(prov_rows)
        + "<h3>Inputs to the bound</h3>" + _render_value(cert["inputs"])
        + "</section>"
    )


def _lower_bound_rows(entries: Sequence[Mapping], certified: float) -> str:
    rows = []
    for entry in entries:
        eps = float(entry["epsilon"])
        klass = ' class="violation"' if eps > certified else ""
        flag = " (exceeds certificate)" if eps > certified else ""
        details = (f"<details><summary>details</summary>"
                   f"<pre>{_e(json.dumps(entry['details'], indent=1, sort_keys=True))}</pre>"
                   "</details>") if entry["details"] else ""
        rows.append(
            f"<tr{klass}><td>{_e(entry['attack'])}</td><td>{_e(entry['statistic'])}</td>"
            f"<td>{_e(score_direction(entry) or '—')}</td>"
            f"<td>{_e(entry['method'])}{details}</td>"
            f'<td class="num">{_e(bound_confidence(entry))}</td>'
            f'<td class="num"><strong>{_e(fmt(eps, 6))}</strong>{_e(flag)}</td></tr>'
        )
    return "".join(rows)


def _empirical_section(report: Mapping) -> str:
    emp, verdict = report["empirical"], report["verdict"]
    certified = number_value(report["certificate"]["epsilon"])
    head = ("<tr><th>attack</th><th>statistic</th><th>scores</th><th>method</th>"
            "<th>confidence</th><th>ε (lower bound)</th></tr>")
    bounds = lower_bound_entries(report)
    table = (f"<table>{head}{_lower_bound_rows(bounds, certified)}</table>" if bounds
             else "<p><em>No lower bounds.</em></p>")
    violations = ""
    if verdict["violations"]:
        violations = ('<h3 id="violations">Violations: lower bounds above the certificate</h3>'
                      f"<table>{head}{_lower_bound_rows(verdict['violations'], certified)}"
                      "</table>")
    estimate_rows = "".join(
        f"<tr><td>{_e(x['name'])}</td><td>{_e(x['attack'] if x['attack'] is not None else '—')}"
        f'</td><td class="num">{_e(fmt(x["value"], 6))}</td><td class="num">'
        + (_e(f"[{fmt(x['interval'][0])}, {fmt(x['interval'][1])}]")
           if x["interval"] is not None else "—")
        + f"</td><td>{_e(x['method'])}</td></tr>"
        for x in emp["estimates"])
    estimates = (
        '<div class="estimates" id="estimates">'
        '<h3>Plug-in estimates (not bounds) <span class="tag">estimate</span></h3>'
        "<p>These numbers are computed directly from the observed rates, with no confidence "
        "correction. They are often biased (upwards, when maximised over thresholds) and are "
        "<strong>not bounds</strong>: they are never compared with the certificate.</p>"
        + (f"<table><tr><th>name</th><th>attack</th><th>estimate</th><th>interval</th>"
           f"<th>method</th></tr>{estimate_rows}</table>" if emp["estimates"]
           else "<p><em>No estimates.</em></p>")
        + "</div>"
    )
    facts = _kv_table([
        ("trials N", _e(emp["n_trials"])),
        *([("attacks", _e(f"{', '.join(emp['attacks']) or 'none'} ({emp['attacks_rule']})"))]
          if emp.get("attacks") is not None else []),
        ("joint confidence of all lower bounds", _e(percent_text(emp["confidence"]))),
        *([("confidence of each lower bound (level split, Bonferroni)",
            _e(percent_text(each)))] if (each := each_level(report)) else []),
        ("device", _e(emp["device"])),
        ("largest lower bound N trials could show", _e(fmt(emp["max_certifiable_epsilon"], 6))),
    ])
    return (
        '<section id="empirical"><h2>Empirical evidence</h2>' + facts
        + '<h3 id="lower-bounds">Empirical lower bounds on ε '
        '<span class="tag bound">lower bound</span></h3>'
        "<p>Each row is a lower bound on the true ε that holds with at least the stated "
        "confidence. Any row above the certified ε is a violation.</p>"
        + table + violations + estimates + "</section>"
    )


def _base64(svg: str) -> str:
    # An <img> per figure (not inline <svg>): each picture keeps its own clip-path ids and alt
    # text, and the page itself still holds no url() reference.
    return base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _figures_section(figures: Sequence[ReportFigure], notes: Sequence[str]) -> str:
    parts = ['<section id="figures"><h2>Figures</h2><div class="figures">']
    for fig in figures:
        klass = ' class="half"' if fig.half else ""
        parts.append(
            f'<figure id="{_e(fig.id)}"{klass}><img alt="{_e(fig.alt)}" '
            f'src="data:image/svg+xml;base64,{_base64(fig.svg)}">'
            f"<figcaption><strong>{_e(fig.title)}.</strong> {_e(fig.caption)}</figcaption>"
            "</figure>"
        )
    parts.append("</div>")
    parts.extend(f'<p class="note">{_e(note)}</p>' for note in notes)
    parts.append("</section>")
    return "".join(parts)


def _utility_section(report: Mapping) -> str:
    utility = report["utility"]
    if utility is None:
        return ('<section id="utility"><h2>Utility</h2><p><em>Not measured.</em></p></section>')
    rows = []
    for name, key, side in (("unlearned", "unlearned_accuracy", "unlearned"),
                            ("retrained", "retrained_accuracy", "retrained")):
        summary = utility[key]
        rows.append((f"{name} models", _e(f"{fmt(summary['mean'], 4)} ± {fmt(summary['std'], 3)}"
                                          f" (n = {len(utility['accuracies'][side])})")))
    return '<section id="utility"><h2>Utility (test accuracy)</h2>' + _kv_table(rows) + "</section>"


def _inputs_section(report: Mapping) -> str:
    timing = report["timing"]
    rows = [
        ("created", _e(report["created"])),
        ("code version", f"<code>{_e(report['code_version'])}</code>"),
        ("toolkit version", _e(report["toolkit_version"])),
        ("spec hash", f"<code>{_e(report['spec_hash'])}</code>"),
        ("seeds", _render_value(report["seeds"])),
        ("wall time", _e(f"{fmt(timing['wall_seconds'], 4)} s")),
        ("chunks (resumed from store)", _e(f"{timing['chunks']} ({timing['chunks_resumed']})")),
        ("schema", _e(f"{report['schema']} version {report['schema_version']}")),
    ]
    spec = json.dumps(report["spec"], indent=2, sort_keys=True, ensure_ascii=False)
    return ('<section id="inputs"><h2>Inputs, seeds and code version</h2>' + _kv_table(rows)
            + f"<h3>Audit spec</h3><pre>{_e(spec)}</pre></section>")


def _exact_card(report: Mapping) -> list[tuple[str, str, str]]:
    exact = report.get("exact_privacy_loss")
    if exact is None:
        return []
    best = report["verdict"]["max_lower_bound"]
    ratio = exact_ratio(best, exact["epsilon"])
    return [("exact ε of the mechanism as run", fmt(exact["epsilon"]),
             f"δ = {fmt(exact['delta'])}, Gaussian laws at μ = {fmt(exact['gaussian_mu'])}; "
             f"lower bound / exact = {ratio}")]


def _exact_section(report: Mapping) -> str:
    exact = report.get("exact_privacy_loss")
    if exact is None:
        return ""
    rows = [("ε at δ", _e(f"{fmt(exact['epsilon'], 6)} at δ = {fmt(exact['delta'])}")),
            ("Mahalanobis distance μ", _e(fmt(exact["gaussian_mu"], 6))),
            ("Rényi curve (α, D_α)", _e(", ".join(f"({fmt(a)}, {fmt(v)})"
                                                   for a, v in exact["renyi"]))),
            ("method", _e(exact["method"])),
            ("assumptions", _render_value(exact["assumptions"]))]
    return ('<section id="exact-loss"><h2>Exact privacy loss of the mechanism as run</h2>'
            "<p>Both output laws are known Gaussians, so the true ε is computed, not estimated: "
            "every valid lower bound lies at or below it, every valid certificate at or above "
            "it (a certified ε below it is wrong).</p>"
            f"{_kv_table(rows)}</section>")


def _next_steps_section(report: Mapping) -> str:
    """The page's last section: what the verdict means and what to do next
    (:mod:`audits.report.next_steps`; ``verdict.detectable`` shown when the verdict has it)."""
    paragraphs = "".join(f"<p>{_e(p)}</p>" for p in next_steps(report))
    return ('<section id="next-steps"><h2>What the verdict means and what to do next</h2>'
            f"{paragraphs}</section>")


def render_html(report: Mapping) -> str:
    """A self-contained HTML page for ``report``: inline CSS, base64 SVG figures, no scripts."""
    return render_validated_html(validate_report(report))


def render_validated_html(report: Mapping) -> str:
    """:func:`render_html` of a report :func:`~audits.report.schema.validate_report` returned
    (not checked again: the report's number lists are long)."""
    figures, notes = report_figures_of(report)
    status = report["verdict"]["status"]
    title = f"Unlearning audit: {status} ({report['certificate']['bound']})"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{PAGE_CSS}</style></head><body>",
        _header(report),
        "<main>",
        _cards(report),
        _exact_section(report),
        _certificate_section(report),
        _empirical_section(report),
        _figures_section(figures, notes),
        _utility_section(report),
        _inputs_section(report),
        _next_steps_section(report),
        "</main>",
        f"<footer>{_e(SCHEMA_ID)} v{SCHEMA_VERSION}, generated by unlearn-verify "
        f"{_e(report['toolkit_version'])}</footer>",
        "</body></html>",
        "",
    ])
