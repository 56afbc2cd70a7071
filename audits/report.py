"""Audit reports: write, render and summarise ``report.json`` (schema version 1).

The report data, its schema constants, validation and reading live in
:mod:`audits.report_schema` (re-exported here, so ``audits.report.validate_report`` and
``load_report`` keep working). This module writes ``report.json`` and a self-contained
``report.html`` (inline CSS, figures as base64 PNG drawn with matplotlib's Agg canvas, no
scripts, no external resources), and prints a short terminal summary.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

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

_COLOUR_UNLEARNED = "#d95f02"
_COLOUR_RETRAINED = "#1b9e77"
_COLOUR_CERTIFICATE = "#6a3d9a"
_COLOUR_BOUND = "#1f78b4"
_COLOUR_VIOLATION = "#b3261e"


# -- files -------------------------------------------------------------------------------------


def write_report(report: Mapping, out_dir: str | Path) -> ReportPaths:
    """Validate ``report`` and write ``report.json`` and ``report.html`` into ``out_dir``.

    Nothing is written when validation fails.
    """
    plain = validate_report(report)
    text = json.dumps(plain, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    page = render_html(plain)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(json_path=out / JSON_NAME, html_path=out / HTML_NAME)
    _atomic_write(paths.json_path, text)
    _atomic_write(paths.html_path, page)
    return paths


# -- numbers as text ---------------------------------------------------------------------------


def _value(x: Any) -> float:
    return math.inf if x == "inf" else float(x)


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    value = _value(x)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


_EXACT_CALIBRATION_KEYS = ("certified_epsilon", "neighbour", "neighbour_epsilon", "value")


def _exact(x: Any) -> str:
    """A float as the shortest text that reads back as the same float."""
    return repr(float(x)) if isinstance(x, float) else _fmt(x)


def _percent(x: float) -> str:
    return f"{float(x) * 100:.4g}%"


def _bound_confidence(entry: Mapping) -> str:
    """The confidence of one lower bound: where the level was split over a family of bounds
    (Bonferroni), each holds at the per-bound level and all of them jointly at the stated one."""
    details = entry.get("details") or {}
    each = details.get("confidence_each")
    family = details.get("family_size")
    if each is None or not family or int(family) <= 1:
        return f"{_percent(entry['confidence'])} confidence"
    joint = details.get("overall_confidence", entry["confidence"])
    return f"{_percent(each)} confidence each ({_percent(joint)} jointly over {int(family)} bounds)"


def _each_level(report: Mapping) -> float | None:
    """The per-bound confidence when the level was split over several bounds, else None."""
    levels = {float(e["details"]["confidence_each"]) for e in _lower_bounds(report)
              if (e.get("details") or {}).get("confidence_each") is not None
              and int(e["details"].get("family_size", 1)) > 1}
    return min(levels) if levels else None


def _describe_bound(entry: Mapping) -> str:
    return (f"attack {entry['attack']}, statistic {entry['statistic']}; {entry['method']}; "
            f"{_bound_confidence(entry)}")


def _lower_bounds(report: Mapping) -> list[Mapping]:
    return list(report["empirical"]["lower_bounds"])


def _blind_spot(report: Mapping) -> bool:
    """True when N trials cannot show a lower bound above the certificate at all."""
    cert = _value(report["certificate"]["epsilon"])
    ceiling = _value(report["empirical"]["max_certifiable_epsilon"])
    return ceiling <= cert


def summary_text(report: Mapping) -> str:
    """A few lines for the terminal: verdict, certificate, best lower bound, tightness, utility."""
    report = validate_report(report)
    cert = report["certificate"]
    emp = report["empirical"]
    verdict = report["verdict"]
    conversion = cert["conversion"] or "none (bound is already (epsilon, delta))"
    alpha = "" if cert["alpha"] is None else f", alpha {_fmt(cert['alpha'])}"
    lines = [
        f"Audit verdict: {verdict['status']}",
        f"  certified epsilon   {_fmt(cert['epsilon'])} at delta {_fmt(cert['delta'])} from "
        f"{cert['bound']}, conversion {conversion}{alpha}",
    ]
    best = verdict["best_lower_bound"]
    if best is None:
        lines.append("  best lower bound    none (no attack produced a lower bound)")
    else:
        lines.append(f"  best lower bound    epsilon >= {_fmt(best['epsilon'])} "
                     f"({_describe_bound(best)})")
    lines.append(f"  tightness           {_fmt(verdict['tightness'], 3)} "
                 "(best lower bound / certified epsilon)")
    lines.append(f"  max certifiable     epsilon {_fmt(emp['max_certifiable_epsilon'])} "
                 f"with N = {emp['n_trials']} trials")
    if _blind_spot(report):
        lines.append("  warning             N trials cannot show a lower bound above the "
                     "certificate: this audit cannot detect a violation")
    utility = report["utility"]
    if utility is None:
        lines.append("  utility             not measured")
    else:
        u, r = utility["unlearned_accuracy"], utility["retrained_accuracy"]
        lines.append(f"  utility             accuracy unlearned {_fmt(u['mean'], 3)} +/- "
                     f"{_fmt(u['std'], 2)}, retrained {_fmt(r['mean'], 3)} +/- "
                     f"{_fmt(r['std'], 2)}")
    for test in emp["renyi"]:
        gaps = [lo - c for lo, c in zip(_renyi_lower(test), test["certified"], strict=True)
                if _value(c) != math.inf]
        lines.append(f"  Rényi test          attack {test['attack']}: largest lower bound minus "
                     f"certified eps(alpha) {_fmt(max(gaps, default=-math.inf), 3)} over "
                     f"{len(test['orders'])} orders (confidence {_fmt(test['confidence'], 6)})")
    tests = verdict["tests"]
    lines.append(f"  levels              {tests['family_size']} test(s) at confidence "
                 f"{_fmt(tests['confidence_each'], 6)} each (Bonferroni), "
                 f"{_fmt(tests['overall_confidence'])} together")
    for entry in verdict["violations"]:
        lines.append(f"  VIOLATION           epsilon >= {_fmt(entry['epsilon'])} > certified "
                     f"{_fmt(cert['epsilon'])} ({_describe_bound(entry)})")
    for entry in verdict["renyi_violations"]:
        lines.append(f"  VIOLATION           Rényi lower bound above the certified curve, attack "
                     f"{entry['attack']}, orders {', '.join(_fmt(a, 3) for a in entry['orders'])}")
    if verdict["status"] == "VIOLATION":
        lines.append("  the mechanism as run does not meet its certificate; possible causes:")
        lines.extend(f"    - {cause}" for cause in verdict["possible_causes"])
    if verdict["status"] == "INCONCLUSIVE":
        needed = verdict["trials_needed"]
        lines.append("  INCONCLUSIVE        these trials could not show a violation"
                     + (f"; about {needed} trials per side needed" if needed else ""))
    return "\n".join(lines)


def _renyi_lower(test: Mapping) -> list[float]:
    """Per order, the larger of the tested directions' lower bounds."""
    if test["direction"] == "both":
        return [max(f, b) for f, b in zip(test["lower_forward"], test["lower_backward"],
                                          strict=True)]
    return list(test["lower_forward"])


# -- figures -----------------------------------------------------------------------------------


def _mpl_text(text: Any) -> str:
    # '$' would start mathtext; a leading '_' hides a legend entry.
    out = str(text).replace("$", r"\$")
    return " " + out if out.startswith("_") else out


def _new_figure(width: float, height: float):
    # The Figure/Agg canvas pair avoids pyplot's global state and any GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _png_base64(figure) -> str:
    buffer = io.BytesIO()
    # No Software tag: the same report renders to the same bytes on every matplotlib version.
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _certificate_tpr(fpr: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    """Largest TPR any test can reach at ``fpr`` under an (epsilon, delta) guarantee."""
    with np.errstate(over="ignore"):
        first = np.exp(epsilon) * fpr + delta
    second = 1.0 - np.exp(-epsilon) * (1.0 - delta - fpr)
    return np.clip(np.minimum(np.minimum(first, second), 1.0), 0.0, 1.0)


def _figure_roc(report: Mapping, *, log_axes: bool):
    roc = report["plots"]["roc"]
    cert = report["certificate"]
    epsilon, delta = _value(cert["epsilon"]), float(cert["delta"])
    figure = _new_figure(6.4, 5.0)
    axes = figure.add_subplot()
    positive = [v for c in roc.values() for v in c["fpr"] if v > 0]
    floor = max(min(positive) / 2, 1e-7) if positive else 1e-4
    for attack, curve in roc.items():
        fpr, tpr = np.asarray(curve["fpr"]), np.asarray(curve["tpr"])
        if log_axes:
            keep = (fpr > 0) & (tpr > 0)
            fpr, tpr = fpr[keep], tpr[keep]
        axes.plot(fpr, tpr, drawstyle="steps-post", linewidth=1.6,
                  label=_mpl_text(f"{attack} (AUC {_fmt(curve['auc'], 3)})"))
    grid = np.logspace(math.log10(floor), 0, 400) if log_axes else np.linspace(0, 1, 401)
    if math.isfinite(epsilon):
        axes.plot(grid, _certificate_tpr(grid, epsilon, delta), color=_COLOUR_CERTIFICATE,
                  linestyle="--", linewidth=1.6,
                  label=f"certificate limit (ε={_fmt(epsilon, 3)}, δ={_fmt(delta, 2)})")
    axes.plot(grid, grid, color="0.6", linestyle=":", linewidth=1.0, label="chance")
    if log_axes:
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(floor, 1)
        axes.set_ylim(floor, 1.05)
        axes.set_title("ROC, log-log axes (low false-positive region)")
    else:
        axes.set_xlim(0, 1)
        axes.set_ylim(0, 1.01)
        axes.set_aspect("equal")
        axes.set_title("ROC, linear axes")
    axes.set_xlabel("false positive rate")
    axes.set_ylabel("true positive rate")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    return figure


def _figure_epsilon(report: Mapping):
    from matplotlib.patches import Patch

    bounds = _lower_bounds(report)
    certified = _value(report["certificate"]["epsilon"])
    ceiling = _value(report["empirical"]["max_certifiable_epsilon"])
    figure = _new_figure(7.5, 1.9 + 0.42 * max(len(bounds), 1))
    axes = figure.add_subplot()
    labels = [_mpl_text(f"{b['attack']} / {b['statistic']}") for b in bounds]
    values = [float(b["epsilon"]) for b in bounds]
    colours = [_COLOUR_VIOLATION if v > certified else _COLOUR_BOUND for v in values]
    positions = np.arange(len(bounds))
    handles = []
    if bounds:
        axes.barh(positions, values, color=colours, height=0.6)
        for colour, name in ((_COLOUR_BOUND, "lower bound within the certificate"),
                             (_COLOUR_VIOLATION, "lower bound above the certificate")):
            if colour in colours:
                handles.append(Patch(color=colour, label=name))
        for y, v in zip(positions, values, strict=True):
            axes.annotate(_fmt(v, 3), (v, y), xytext=(3, 0), textcoords="offset points",
                          va="center", fontsize=8)
        axes.set_yticks(positions, labels, fontsize=8)
        axes.set_ylim(-0.7, len(bounds) - 0.3)
        axes.invert_yaxis()
    else:
        axes.set_yticks([])
        axes.text(0.5, 0.5, "no empirical lower bounds", transform=axes.transAxes,
                  ha="center", va="center")
    finite = [v for v in [*values, certified, ceiling] if math.isfinite(v)]
    right = max(finite, default=1.0) * 1.18 or 1.0
    if math.isfinite(certified):
        handles.append(axes.axvline(certified, color=_COLOUR_CERTIFICATE, linewidth=2.2,
                                    label=f"certified ε = {_fmt(certified, 4)}"))
    if math.isfinite(ceiling):
        n_trials = report["empirical"]["n_trials"]
        handles.append(axes.axvline(
            ceiling, color="0.35", linestyle="--", linewidth=1.4,
            label=f"max certifiable ε with N = {n_trials}: {_fmt(ceiling, 3)}"))
    axes.set_xlim(0, right)
    axes.set_xlabel("ε")
    axes.set_title("Certified ε (upper bound) vs empirical lower bounds")
    axes.grid(True, axis="x", alpha=0.3)
    if handles:
        figure.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8,
                      frameon=False)
    return figure


def _figure_renyi(report: Mapping):
    """Empirical Rényi lower-bound curves against the certified curve (log order axis)."""
    figure = _new_figure(7.0, 4.6)
    axes = figure.add_subplot()
    tests = report["empirical"]["renyi"]
    first = tests[0]
    certified = [_value(c) for c in first["certified"]]
    axes.plot(first["orders"], certified, color=_COLOUR_CERTIFICATE, linewidth=2.2,
              marker="o", markersize=3, label="certified ε(α) (upper bound)")
    for test in tests:
        lower = _renyi_lower(test)
        axes.plot(test["orders"], lower, linewidth=1.6, marker="s", markersize=3,
                  label=_mpl_text(f"lower bound, attack {test['attack']}"))
        violating = [(a, v) for a, v, c in zip(test["orders"], lower, test["certified"],
                                               strict=True) if v > _value(c)]
        if violating:
            axes.scatter(*zip(*violating, strict=True), color=_COLOUR_VIOLATION, s=40, zorder=5)
    ceiling = first["ceiling"]
    axes.plot(first["orders"], ceiling, color="0.35", linestyle="--", linewidth=1.2,
              label=f"largest lower bound N = {report['empirical']['n_trials']} trials could show")
    finite = [v for v in [*certified, *ceiling, *_renyi_lower(first)] if math.isfinite(v)]
    axes.set_ylim(0, max(finite, default=1.0) * 1.1 or 1.0)
    axes.set_xscale("log")
    axes.set_xlabel("Rényi order α")
    axes.set_ylabel("D_α of the binned attack score")
    axes.set_title("Certified Rényi curve vs empirical lower bounds")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize=8)
    return figure


def _figure_scores(report: Mapping):
    scores = report["plots"]["scores"]
    count = len(scores)
    columns = min(count, 2)
    rows = math.ceil(count / columns)
    figure = _new_figure(4.4 * columns + 0.6, 3.3 * rows)
    for index, (attack, pair) in enumerate(scores.items()):
        axes = figure.add_subplot(rows, columns, index + 1)
        unlearned = np.asarray(pair["unlearned"], dtype=float)
        retrained = np.asarray(pair["retrained"], dtype=float)
        both = np.concatenate([unlearned, retrained])
        bins = np.histogram_bin_edges(both, bins=min(60, max(10, int(np.sqrt(both.size)))))
        for values, colour, name in ((unlearned, _COLOUR_UNLEARNED, "unlearned"),
                                     (retrained, _COLOUR_RETRAINED, "retrained")):
            axes.hist(values, bins=bins, color=colour, alpha=0.45, histtype="stepfilled",
                      label=f"{name} (n={values.size})")
            axes.hist(values, bins=bins, color=colour, histtype="step", linewidth=1.2)
        axes.set_title(_mpl_text(f"attack: {attack}"), fontsize=10)
        axes.set_xlabel("attack score")
        axes.set_ylabel("models")
        axes.legend(fontsize=8)
    return figure


def _figure_per_example(report: Mapping):
    per_example = report["plots"]["per_example_epsilon"]
    values = np.asarray(per_example["values"], dtype=float)
    certified = _value(report["certificate"]["epsilon"])
    figure = _new_figure(6.4, 4.4)
    axes = figure.add_subplot()
    axes.hist(values, bins=min(50, max(10, int(np.sqrt(values.size)))), color=_COLOUR_BOUND,
              alpha=0.8)
    if math.isfinite(certified):
        axes.axvline(certified, color=_COLOUR_CERTIFICATE, linewidth=2.0,
                     label=f"certified ε = {_fmt(certified, 4)}")
        axes.legend(fontsize=8)
    axes.set_xlabel(_mpl_text(per_example["label"]))
    axes.set_ylabel("examples")
    axes.set_title(f"Per-example ε ({values.size} examples)")
    return figure


def _figure_utility(report: Mapping):
    utility = report["utility"]
    unlearned = np.asarray(utility["accuracies"]["unlearned"], dtype=float)
    retrained = np.asarray(utility["accuracies"]["retrained"], dtype=float)
    figure = _new_figure(6.4, 4.4)
    axes = figure.add_subplot()
    names = ["unlearned", "retrained"]
    colours = [_COLOUR_UNLEARNED, _COLOUR_RETRAINED]
    if unlearned.size and retrained.size:
        boxes = axes.boxplot([unlearned, retrained], widths=0.45, showfliers=False,
                             patch_artist=True, medianprops={"color": "black"})
        for patch, colour in zip(boxes["boxes"], colours, strict=True):
            patch.set_facecolor(colour)
            patch.set_alpha(0.35)
        # Fixed-seed jitter so the same report always renders to the same picture.
        jitter = np.random.default_rng(0)
        for position, values, colour in zip((1, 2), (unlearned, retrained), colours, strict=True):
            xs = position + jitter.uniform(-0.16, 0.16, size=values.size)
            axes.scatter(xs, values, s=7, color=colour, alpha=0.55, linewidths=0)
        axes.set_xticks([1, 2], [f"{n} (n={v.size})" for n, v in
                                 zip(names, (unlearned, retrained), strict=True)])
    else:
        means = [utility["unlearned_accuracy"]["mean"], utility["retrained_accuracy"]["mean"]]
        stds = [utility["unlearned_accuracy"]["std"], utility["retrained_accuracy"]["std"]]
        axes.bar([1, 2], means, yerr=stds, color=colours, alpha=0.7, capsize=6)
        axes.set_xticks([1, 2], names)
    axes.set_ylabel("test accuracy")
    axes.set_title("Utility: test accuracy of unlearned vs retrained models")
    axes.grid(True, axis="y", alpha=0.3)
    return figure


def _figure_lines(plot: Mapping):
    """An adapter's line plot (report ``plots.extra``): one line per series."""
    figure = _new_figure(6.4, 4.4)
    axes = figure.add_subplot()
    for line in plot["series"]:
        axes.plot(line["x"], line["y"], marker="o", markersize=3, linewidth=1.4,
                  label=_mpl_text(line["label"]))
    if plot["log_x"]:
        axes.set_xscale("log")
    if plot["log_y"]:
        axes.set_yscale("log")
    axes.set_xlabel(_mpl_text(plot["x_label"]))
    axes.set_ylabel(_mpl_text(plot["y_label"]))
    axes.set_title(_mpl_text(plot["title"]))
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    return figure


@dataclass(frozen=True)
class _Figure:
    id: str
    title: str
    alt: str
    caption: str
    png_base64: str
    half: bool = False


def _subsample_note(scores: Mapping, n_trials: int) -> str:
    """Say so when the histograms show fewer trials than the audit ran (plots.scores keeps a
    prefix of the trials, which are independent; bounds and estimates use all of them)."""
    shown = max((len(pair["unlearned"]) for pair in scores.values()), default=0)
    if not 0 < shown < n_trials:
        return ""
    return (f" Subsampled: the histograms show the first {shown} of the {n_trials} trials (a "
            "random sample, as trials are independent); every bound and estimate uses all "
            f"{n_trials}.")


def _figures(report: Mapping) -> tuple[list[_Figure], list[str]]:
    """The figures the report has data for, and a note for each one it has not."""
    figures: list[_Figure] = []
    notes: list[str] = []
    plots = report["plots"]
    n_trials = report["empirical"]["n_trials"]

    def add(fig_id, title, alt, caption, build, *, half=False):
        figure = build()
        figures.append(_Figure(fig_id, title, alt, caption, _png_base64(figure), half))

    if plots["roc"]:
        attacks = ", ".join(plots["roc"])
        caption = ("Each curve is one attack telling unlearned from retrained models. The dashed "
                   "line is the most any test can achieve if the certificate holds; a curve far "
                   "above it is evidence against the certificate (up to sampling noise).")
        add("fig-roc-linear", "ROC curves (linear axes)",
            f"ROC curves on linear axes for attacks {attacks}, with the certificate's limit",
            caption, lambda: _figure_roc(report, log_axes=False), half=True)
        add("fig-roc-log", "ROC curves (log-log axes)",
            f"ROC curves on log-log axes for attacks {attacks}, with the certificate's limit",
            "The same curves on log-log axes, where attacks that are confident on a few "
            "models (low false-positive rate) show up.",
            lambda: _figure_roc(report, log_axes=True), half=True)
    else:
        notes.append("No ROC curves in this report (plots.roc is empty).")
    add("fig-epsilon", "Certified vs empirical ε",
        "Bar chart of every empirical lower bound on epsilon against the certified epsilon "
        "and the largest epsilon the trials could certify",
        f"Bars are lower bounds on ε (red if above the certificate). The solid line is the "
        f"certified ε; the dashed line is the largest lower bound {n_trials} trials could "
        f"ever show, however strong the attack.",
        lambda: _figure_epsilon(report))
    if report["empirical"]["renyi"]:
        add("fig-renyi", "Certified Rényi curve vs empirical lower bounds",
            "Line plot of the certified Rényi curve and the empirical lower-bound curve of each "
            "attack against the Rényi order",
            "The certificate bounds D_α of every post-processing of the models, in particular of "
            "the attack score binned on pilot trials. Each attack's curve is a lower confidence "
            "bound on that binned D_α at every order at once; a point above the certified "
            "curve (red) is a violation. The dashed curve is the most these trials could show.",
            lambda: _figure_renyi(report))
    if plots["scores"]:
        add("fig-scores", "Attack scores",
            f"Histograms of the attack score for unlearned and retrained models, attacks "
            f"{', '.join(plots['scores'])}",
            "If unlearning works, the two histograms of each attack overlap; the more they "
            "separate, the more the unlearned model leaks about the deleted data."
            + _subsample_note(plots["scores"], n_trials),
            lambda: _figure_scores(report))
    else:
        notes.append("No attack scores in this report (plots.scores is empty).")
    if plots["per_example_epsilon"] is not None:
        add("fig-per-example-epsilon", "Per-example ε",
            f"Histogram of per-example epsilon: {plots['per_example_epsilon']['label']}",
            f"One value per example ({plots['per_example_epsilon']['label']}); the vertical "
            "line is the certified ε.",
            lambda: _figure_per_example(report), half=True)
    else:
        notes.append("No per-example ε in this report (plots.per_example_epsilon is null).")
    if report["utility"] is not None:
        add("fig-utility", "Utility",
            "Box plot of the test accuracy of unlearned and retrained models",
            "Test accuracy of every unlearned model and every model retrained from scratch "
            "without the deleted data.",
            lambda: _figure_utility(report), half=True)
    else:
        notes.append("Utility was not measured (utility is null).")
    for plot in plots.get("extra", []):
        add(f"fig-extra-{plot['id']}", plot["title"],
            f"Line plot: {plot['y_label']} against {plot['x_label']}", plot["caption"],
            lambda plot=plot: _figure_lines(plot))
    return figures, notes


# -- HTML --------------------------------------------------------------------------------------


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


_CSS = """
:root { --ok: #1b7f3b; --bad: #b3261e; --ink: #1d1d1f; --muted: #5f6368; --line: #d9dce1; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial,
       sans-serif; color: var(--ink); background: #f4f5f7; }
main { max-width: 1120px; margin: 0 auto; padding: 0 24px 48px; }
header.verdict { color: #fff; padding: 28px 32px; margin: 0 0 24px; }
header.verdict.consistent { background: var(--ok); }
header.verdict.violation { background: var(--bad); }
header.verdict.inconclusive { background: #7a5c00; }
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
        return _e(_fmt(value, 6))
    return _e(value)


def _kv_table(rows: Sequence[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _plain_explanation(report: Mapping) -> list[str]:
    cert, emp, verdict = report["certificate"], report["empirical"], report["verdict"]
    eps, delta = _fmt(cert["epsilon"]), _fmt(cert["delta"])
    confidence = _percent(emp["confidence"])
    n = emp["n_trials"]
    intro = (f"The certificate ({cert['bound']}) promises that the unlearned model is "
             f"statistically almost indistinguishable from a model retrained without the deleted "
             f"data: privacy loss at most ε = {eps} with δ = {delta}. The audit ran {n} trials "
             f"and attacked the resulting models; each attack gives a lower bound on the true "
             f"ε, and all of them hold together with confidence {confidence}"
             + (f" (each on its own at {_percent(each)})" if (each := _each_level(report))
                else "") + ".")
    best = verdict["best_lower_bound"]
    best_text = ("No attack produced a lower bound." if best is None else
                 f"The strongest attack shows ε ≥ {_fmt(best['epsilon'])} "
                 f"(tightness {_fmt(verdict['tightness'], 3)}: lower bound / certificate).")
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
    certified = _fmt(report["certificate"]["epsilon"])
    violations = "".join(
        "<li>" + _e(f"ε ≥ {_fmt(v['epsilon'])} > certified ε = {certified}: ")
        + _e(_describe_bound(v)) + "</li>" for v in verdict["violations"])
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
        ("certified ε (upper bound)", _fmt(cert["epsilon"]),
         f"δ = {_fmt(cert['delta'])}, {cert['bound']}"),
        ("best empirical lower bound", _fmt(verdict["max_lower_bound"]),
         f"{_percent(emp['confidence'])} confidence"),
        ("tightness", _fmt(verdict["tightness"], 3), "lower bound / certificate"),
        ("max certifiable ε", _fmt(emp["max_certifiable_epsilon"]),
         f"with N = {emp['n_trials']} trials"),
    ]
    if utility is not None:
        cards.append(("accuracy unlearned / retrained",
                      f"{_fmt(utility['unlearned_accuracy']['mean'], 3)} / "
                      f"{_fmt(utility['retrained_accuracy']['mean'], 3)}", "mean test accuracy"))
    body = "".join(
        f'<div class="card"><div class="label">{_e(label)}</div>'
        f'<div class="number">{_e(number)}</div><div class="sub">{_e(sub)}</div></div>'
        for label, number, sub in cards)
    warning = ""
    if _blind_spot(report):
        warning = ('<p class="warning">With this many trials no lower bound can exceed '
                   f"{_e(_fmt(emp['max_certifiable_epsilon']))}, which is not above the "
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
        ("certified ε (interval upper end)", _e(_fmt(cert["epsilon"], 8))),
        ("δ", _e(_fmt(cert["delta"], 8))),
        ("Rényi order α", _e(_fmt(cert["alpha"], 8)) if cert["alpha"] is not None
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
                     f"{_e(_exact(calibration['value']))} for target ε = "
                     f"{_e(_exact(calibration['target_epsilon']))}"))
        # Calibrated values and their epsilons in full (repr): at 6 digits the neighbour's
        # epsilon, just above the target, printed as the target itself.
        extra = {k: repr(v) if isinstance(v, float) and k in _EXACT_CALIBRATION_KEYS else v
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
            f"<td>{_e(entry['method'])}{details}</td>"
            f'<td class="num">{_e(_bound_confidence(entry))}</td>'
            f'<td class="num"><strong>{_e(_fmt(eps, 6))}</strong>{_e(flag)}</td></tr>'
        )
    return "".join(rows)


def _empirical_section(report: Mapping) -> str:
    emp, verdict = report["empirical"], report["verdict"]
    certified = _value(report["certificate"]["epsilon"])
    head = ("<tr><th>attack</th><th>statistic</th><th>method</th><th>confidence</th>"
            "<th>ε (lower bound)</th></tr>")
    bounds = _lower_bounds(report)
    table = (f"<table>{head}{_lower_bound_rows(bounds, certified)}</table>" if bounds
             else "<p><em>No lower bounds.</em></p>")
    violations = ""
    if verdict["violations"]:
        violations = ('<h3 id="violations">Violations: lower bounds above the certificate</h3>'
                      f"<table>{head}{_lower_bound_rows(verdict['violations'], certified)}"
                      "</table>")
    estimate_rows = "".join(
        f"<tr><td>{_e(x['name'])}</td><td>{_e(x['attack'] if x['attack'] is not None else '—')}"
        f'</td><td class="num">{_e(_fmt(x["value"], 6))}</td><td class="num">'
        + (_e(f"[{_fmt(x['interval'][0])}, {_fmt(x['interval'][1])}]")
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
        ("joint confidence of all lower bounds", _e(_percent(emp["confidence"]))),
        *([("confidence of each lower bound (level split, Bonferroni)",
            _e(_percent(each)))] if (each := _each_level(report)) else []),
        ("device", _e(emp["device"])),
        ("largest lower bound N trials could show", _e(_fmt(emp["max_certifiable_epsilon"], 6))),
    ])
    return (
        '<section id="empirical"><h2>Empirical evidence</h2>' + facts
        + '<h3 id="lower-bounds">Empirical lower bounds on ε '
        '<span class="tag bound">lower bound</span></h3>'
        "<p>Each row is a lower bound on the true ε that holds with at least the stated "
        "confidence. Any row above the certified ε is a violation.</p>"
        + table + violations + estimates + "</section>"
    )


def _figures_section(figures: Sequence[_Figure], notes: Sequence[str]) -> str:
    parts = ['<section id="figures"><h2>Figures</h2><div class="figures">']
    for fig in figures:
        klass = ' class="half"' if fig.half else ""
        parts.append(
            f'<figure id="{_e(fig.id)}"{klass}><img alt="{_e(fig.alt)}" '
            f'src="data:image/png;base64,{fig.png_base64}">'
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
        rows.append((f"{name} models", _e(f"{_fmt(summary['mean'], 4)} ± {_fmt(summary['std'], 3)}"
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
        ("wall time", _e(f"{_fmt(timing['wall_seconds'], 4)} s")),
        ("chunks (resumed from store)", _e(f"{timing['chunks']} ({timing['chunks_resumed']})")),
        ("schema", _e(f"{report['schema']} version {report['schema_version']}")),
    ]
    spec = json.dumps(report["spec"], indent=2, sort_keys=True, ensure_ascii=False)
    return ('<section id="inputs"><h2>Inputs, seeds and code version</h2>' + _kv_table(rows)
            + f"<h3>Audit spec</h3><pre>{_e(spec)}</pre></section>")


def render_html(report: Mapping) -> str:
    """A self-contained HTML page for ``report``: inline CSS, base64 PNG figures, no scripts."""
    report = validate_report(report)
    figures, notes = _figures(report)
    status = report["verdict"]["status"]
    title = f"Unlearning audit: {status} ({report['certificate']['bound']})"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        _header(report),
        "<main>",
        _cards(report),
        _certificate_section(report),
        _empirical_section(report),
        _figures_section(figures, notes),
        _utility_section(report),
        _inputs_section(report),
        "</main>",
        f"<footer>{_e(SCHEMA_ID)} v{SCHEMA_VERSION}, generated by unlearn-verify "
        f"{_e(report['toolkit_version'])}</footer>",
        "</body></html>",
        "",
    ])
