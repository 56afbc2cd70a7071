"""The figures of an audit report, drawn with matplotlib's Agg canvas as base64 PNGs.

ROC curves against the certificate's trade-off region, epsilon (and Rényi) lower bounds
against the certified values, score histograms, per-example estimates, utility and an
adapter's extra line plots. No pyplot global state, no GUI backend; :mod:`audits.report.html`
places them in the page.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from audits.report.text import fmt, lower_bound_entries, number_value, renyi_lower

_COLOUR_UNLEARNED = "#d95f02"
_COLOUR_RETRAINED = "#1b9e77"
_COLOUR_CERTIFICATE = "#6a3d9a"
_COLOUR_BOUND = "#1f78b4"
_COLOUR_VIOLATION = "#b3261e"


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
    # e^epsilon may overflow (a user's certificate of epsilon 1e300): inf * 0 at fpr = 0 is 0
    with np.errstate(over="ignore", invalid="ignore"):
        first = np.where(fpr > 0, np.exp(epsilon) * fpr, 0.0) + delta
    second = 1.0 - np.exp(-epsilon) * (1.0 - delta - fpr)
    return np.clip(np.minimum(np.minimum(first, second), 1.0), 0.0, 1.0)


def _figure_roc(report: Mapping, *, log_axes: bool):
    roc = report["plots"]["roc"]
    cert = report["certificate"]
    epsilon, delta = number_value(cert["epsilon"]), float(cert["delta"])
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
                  label=_mpl_text(f"{attack} (AUC {fmt(curve['auc'], 3)})"))
    grid = np.logspace(math.log10(floor), 0, 400) if log_axes else np.linspace(0, 1, 401)
    if math.isfinite(epsilon):
        axes.plot(grid, _certificate_tpr(grid, epsilon, delta), color=_COLOUR_CERTIFICATE,
                  linestyle="--", linewidth=1.6,
                  label=f"certificate limit (ε={fmt(epsilon, 3)}, δ={fmt(delta, 2)})")
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

    bounds = lower_bound_entries(report)
    certified = number_value(report["certificate"]["epsilon"])
    ceiling = number_value(report["empirical"]["max_certifiable_epsilon"])
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
            axes.annotate(fmt(v, 3), (v, y), xytext=(3, 0), textcoords="offset points",
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
                                    label=f"certified ε = {fmt(certified, 4)}"))
    if math.isfinite(ceiling):
        n_trials = report["empirical"]["n_trials"]
        handles.append(axes.axvline(
            ceiling, color="0.35", linestyle="--", linewidth=1.4,
            label=f"largest lower bound N = {n_trials} trials could show: {fmt(ceiling, 3)}"))
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
    certified = [number_value(c) for c in first["certified"]]
    axes.plot(first["orders"], certified, color=_COLOUR_CERTIFICATE, linewidth=2.2,
              marker="o", markersize=3, label="certified ε(α) (upper bound)")
    for test in tests:
        lower = renyi_lower(test)
        axes.plot(test["orders"], lower, linewidth=1.6, marker="s", markersize=3,
                  label=_mpl_text(f"lower bound, attack {test['attack']}"))
        violating = [(a, v) for a, v, c in zip(test["orders"], lower, test["certified"],
                                               strict=True) if v > number_value(c)]
        if violating:
            axes.scatter(*zip(*violating, strict=True), color=_COLOUR_VIOLATION, s=40, zorder=5)
    ceiling = first["ceiling"]
    axes.plot(first["orders"], ceiling, color="0.35", linestyle="--", linewidth=1.2,
              label=f"reach at N = {report['empirical']['n_trials']}: the test on the scores "
                    "pulled apart")
    finite = [v for v in [*certified, *ceiling, *renyi_lower(first)] if math.isfinite(v)]
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
    certified = number_value(report["certificate"]["epsilon"])
    figure = _new_figure(6.4, 4.4)
    axes = figure.add_subplot()
    axes.hist(values, bins=min(50, max(10, int(np.sqrt(values.size)))), color=_COLOUR_BOUND,
              alpha=0.8)
    if math.isfinite(certified):
        axes.axvline(certified, color=_COLOUR_CERTIFICATE, linewidth=2.0,
                     label=f"certified ε = {fmt(certified, 4)}")
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
class ReportFigure:
    """One rendered figure of the HTML report: a base64 PNG with its title, alt text and caption."""

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


def report_figures_of(report: Mapping) -> tuple[list[ReportFigure], list[str]]:
    """The figures the report has data for, and a note for each one it has not."""
    figures: list[ReportFigure] = []
    notes: list[str] = []
    plots = report["plots"]
    n_trials = report["empirical"]["n_trials"]

    def add(fig_id, title, alt, caption, build, *, half=False):
        figure = build()
        figures.append(ReportFigure(fig_id, title, alt, caption, _png_base64(figure), half))

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
