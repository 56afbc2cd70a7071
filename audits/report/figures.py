"""The figures of an audit report, drawn as SVG by :mod:`audits.report.svg`.

ROC curves against the certificate's trade-off region, epsilon (and Rényi) lower bounds
against the certified values, score histograms, per-example estimates, utility and an
adapter's extra line plots. Plain SVG text (no plotting library, so the process that ran the
trials needs no more memory for its report); :mod:`audits.report.html` places them in the page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from audits.report.svg import Axes, Figure, LegendEntry, Scale, legend_box, text_width
from audits.report.text import fmt, lower_bound_entries, number_value, renyi_lower

_COLOUR_UNLEARNED = "#d95f02"
_COLOUR_RETRAINED = "#1b9e77"
_COLOUR_CERTIFICATE = "#6a3d9a"
_COLOUR_BOUND = "#1f78b4"
_COLOUR_VIOLATION = "#b3261e"
_COLOUR_CHANCE = "#999999"
_COLOUR_CEILING = "#595959"
# Colours of an axes' own lines, in order (matplotlib's default cycle).
_CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")

# Margins around one plotting area: room for tick labels, axis labels and the title.
_LEFT, _RIGHT, _TOP, _BOTTOM = 80.0, 18.0, 38.0, 58.0


# -- figures -----------------------------------------------------------------------------------


def _certificate_tpr(fpr: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    """Largest TPR any test can reach at ``fpr`` under an (epsilon, delta) guarantee."""
    # e^epsilon may overflow (a user's certificate of epsilon 1e300): inf * 0 at fpr = 0 is 0
    with np.errstate(over="ignore", invalid="ignore"):
        first = np.where(fpr > 0, np.exp(epsilon) * fpr, 0.0) + delta
    second = 1.0 - np.exp(-epsilon) * (1.0 - delta - fpr)
    return np.clip(np.minimum(np.minimum(first, second), 1.0), 0.0, 1.0)


def _single(figure: Figure, x: Scale, y: Scale, *, bottom: float = _BOTTOM) -> Axes:
    return figure.axes(left=_LEFT, top=_TOP, width=figure.width - _LEFT - _RIGHT,
                       height=figure.height - _TOP - bottom, x=x, y=y)


def _figure_roc(report: Mapping, *, log_axes: bool) -> Figure:
    roc = report["plots"]["roc"]
    cert = report["certificate"]
    epsilon, delta = number_value(cert["epsilon"]), float(cert["delta"])
    positive = [v for c in roc.values() for v in c["fpr"] if v > 0]
    floor = max(min(positive) / 2, 1e-7) if positive else 1e-4
    if log_axes:
        figure = Figure(640, 500)
        axes = _single(figure, Scale(floor, 1.0, log=True), Scale(floor, 1.05, log=True))
    else:
        figure = Figure(560, 500)  # square plotting area: equal aspect on linear axes
        side = min(figure.width - _LEFT - _RIGHT, figure.height - _TOP - _BOTTOM)
        axes = figure.axes(left=_LEFT, top=_TOP, width=side, height=side, x=Scale(0.0, 1.0),
                           y=Scale(0.0, 1.01))
    for index, (attack, curve) in enumerate(roc.items()):
        fpr, tpr = np.asarray(curve["fpr"], dtype=float), np.asarray(curve["tpr"], dtype=float)
        if log_axes:
            keep = (fpr > 0) & (tpr > 0)
            fpr, tpr = fpr[keep], tpr[keep]
        axes.line(fpr.tolist(), tpr.tolist(), colour=_CYCLE[index % len(_CYCLE)], steps=True,
                  label=f"{attack} (AUC {fmt(curve['auc'], 3)})")
    grid = np.logspace(math.log10(floor), 0, 400) if log_axes else np.linspace(0, 1, 401)
    if math.isfinite(epsilon):
        axes.line(grid.tolist(), _certificate_tpr(grid, epsilon, delta).tolist(),
                  colour=_COLOUR_CERTIFICATE, dash="6,3",
                  label=f"certificate limit (ε={fmt(epsilon, 3)}, δ={fmt(delta, 2)})")
    axes.line(grid.tolist(), grid.tolist(), colour=_COLOUR_CHANCE, width=1.0, dash="1.5,2.5",
              label="chance")
    axes.frame(title="ROC, log-log axes (low false-positive region)" if log_axes
               else "ROC, linear axes", x_label="false positive rate",
               y_label="true positive rate", grid="xy")
    axes.legend("lower right")
    return figure


def _figure_epsilon(report: Mapping) -> Figure:
    bounds = lower_bound_entries(report)
    certified = number_value(report["certificate"]["epsilon"])
    ceiling = number_value(report["empirical"]["max_certifiable_epsilon"])
    labels = [f"{b['attack']} / {b['statistic']}" for b in bounds]
    values = [float(b["epsilon"]) for b in bounds]
    colours = [_COLOUR_VIOLATION if v > certified else _COLOUR_BOUND for v in values]
    finite = [v for v in [*values, certified, ceiling] if math.isfinite(v)]
    right = max(finite, default=1.0) * 1.18 or 1.0
    legend: list[LegendEntry] = []
    for colour, name in ((_COLOUR_BOUND, "lower bound within the certificate"),
                         (_COLOUR_VIOLATION, "lower bound above the certificate")):
        if colour in colours:
            legend.append(LegendEntry(name, colour, patch=True))
    if math.isfinite(certified):
        legend.append(LegendEntry(f"certified ε = {fmt(certified, 4)}", _COLOUR_CERTIFICATE,
                                  2.2))
    if math.isfinite(ceiling):
        n_trials = report["empirical"]["n_trials"]
        legend.append(LegendEntry(
            f"largest lower bound N = {n_trials} trials could show: {fmt(ceiling, 3)}",
            _COLOUR_CEILING, 1.4, dash="5,3"))
    rows = max(len(bounds), 1)
    legend_rows = math.ceil(len(legend) / 2)
    left = max(_LEFT, 20 + max((text_width(t, 11) for t in labels), default=0.0))
    bottom = _BOTTOM + 8 + 16 * legend_rows
    figure = Figure(780, 120 + 42 * rows + 16 * legend_rows)
    axes = figure.axes(left=left, top=_TOP, width=figure.width - left - _RIGHT,
                       height=figure.height - _TOP - bottom, x=Scale(0.0, right),
                       y=Scale(-0.7, rows - 0.3))
    # Row k from the top: the first bound is the top bar.
    def row_y(k: int) -> float:
        return rows - 1 - k

    for k, (value, colour) in enumerate(zip(values, colours, strict=True)):
        axes.rect(0.0, value, row_y(k) - 0.3, row_y(k) + 0.3, fill=colour)
        axes.label_at(value, row_y(k), fmt(value, 3), dx=3)
    if math.isfinite(certified):
        axes.vline(certified, colour=_COLOUR_CERTIFICATE, width=2.2)
    if math.isfinite(ceiling):
        axes.vline(ceiling, colour=_COLOUR_CEILING, width=1.4, dash="5,3")
    if not bounds:
        axes.centre_note("no empirical lower bounds")
    axes.frame(title="Certified ε (upper bound) vs empirical lower bounds", x_label="ε", grid="x",
               y_ticks=[(row_y(k), label) for k, label in enumerate(labels)], tick_size=11)
    if legend:
        columns = [legend[:legend_rows], legend[legend_rows:]]
        widths = [34 + max(text_width(e.label, 10) for e in c) for c in columns if c]
        x0 = (figure.width - sum(widths) - 12 * (len(widths) - 1)) / 2
        y0 = figure.height - 8 - 16 * legend_rows - 6
        for column, width in zip((c for c in columns if c), widths, strict=True):
            figure.add(legend_box(x0, y0, column, size=10, frame=False))
            x0 += width + 12
    return figure


def _figure_renyi(report: Mapping) -> Figure:
    """Empirical Rényi lower-bound curves against the certified curve (log order axis)."""
    tests = report["empirical"]["renyi"]
    first = tests[0]
    certified = [number_value(c) for c in first["certified"]]
    ceiling = first["ceiling"]
    finite = [v for v in [*certified, *ceiling, *renyi_lower(first)] if math.isfinite(v)]
    orders = [float(a) for t in tests for a in t["orders"]]
    lo, hi = min(orders), max(orders)
    if not hi > lo:
        lo, hi = lo / 1.5, hi * 1.5
    pad = (hi / lo) ** 0.04
    top = max(finite, default=1.0) * 1.1
    figure = Figure(700, 460)
    axes = _single(figure, Scale(lo / pad, hi * pad, log=True), Scale(0.0, top if top > 0 else 1.0))
    axes.line(first["orders"], certified, colour=_COLOUR_CERTIFICATE, width=2.2, marker="o",
              label="certified ε(α) (upper bound)")
    violating_points = []
    for index, test in enumerate(tests):
        lower = renyi_lower(test)
        axes.line(test["orders"], lower, colour=_CYCLE[index % len(_CYCLE)], marker="s",
                  label=f"lower bound, attack {test['attack']}")
        violating_points += [(a, v) for a, v, c in zip(test["orders"], lower, test["certified"],
                                                       strict=True) if v > number_value(c)]
    if violating_points:
        xs, ys = zip(*violating_points, strict=True)
        axes.points(xs, ys, colour=_COLOUR_VIOLATION, radius=4.5)
    axes.line(first["orders"], ceiling, colour=_COLOUR_CEILING, width=1.2, dash="5,3",
              label=f"reach at N = {report['empirical']['n_trials']}: the test on the scores "
                    "pulled apart")
    axes.frame(title="Certified Rényi curve vs empirical lower bounds", x_label="Rényi order α",
               y_label="D_α of the binned attack score", grid="xy")
    axes.legend("upper left")
    return figure


def _histogram_scale(counts: list[np.ndarray]) -> Scale:
    top = max((float(c.max()) for c in counts if c.size), default=1.0)
    return Scale(0.0, max(top, 1.0) * 1.05)


def _padded(lo: float, hi: float) -> Scale:
    if not hi > lo:
        lo, hi = lo - 0.5, hi + 0.5
    pad = 0.05 * (hi - lo)
    return Scale(lo - pad, hi + pad)


def _figure_scores(report: Mapping) -> Figure:
    scores = report["plots"]["scores"]
    count = len(scores)
    columns = min(count, 2)
    rows = math.ceil(count / columns)
    cell_w, cell_h = 440.0, 330.0
    figure = Figure(cell_w * columns + 60, cell_h * rows)
    for index, (attack, pair) in enumerate(scores.items()):
        unlearned = np.asarray(pair["unlearned"], dtype=float)
        retrained = np.asarray(pair["retrained"], dtype=float)
        both = np.concatenate([unlearned, retrained])
        bins = np.histogram_bin_edges(both, bins=min(60, max(10, int(np.sqrt(both.size)))))
        counts = [np.histogram(v, bins=bins)[0] for v in (unlearned, retrained)]
        column, row = index % columns, index // columns
        axes = figure.axes(left=column * cell_w + _LEFT, top=row * cell_h + 28,
                           width=cell_w - _LEFT - 10, height=cell_h - 28 - 48,
                           x=_padded(float(bins[0]), float(bins[-1])),
                           y=_histogram_scale(counts))
        for values, hist, colour, name in ((unlearned, counts[0], _COLOUR_UNLEARNED, "unlearned"),
                                           (retrained, counts[1], _COLOUR_RETRAINED,
                                            "retrained")):
            axes.histogram(bins.tolist(), hist.tolist(), colour=colour,
                           label=f"{name} (n={values.size})")
        axes.frame(title=f"attack: {attack}", title_size=12, x_label="attack score",
                   y_label="models")
        axes.legend("upper right")
    return figure


def _figure_per_example(report: Mapping) -> Figure:
    """Each record's plug-in estimate with its interval, sorted (drawn only with intervals)."""
    per_example = report["plots"]["per_example_epsilon"]
    values = np.asarray(per_example["values"], dtype=float)
    lower = np.asarray(per_example["lower"], dtype=float)
    upper = np.asarray(per_example["upper"], dtype=float)
    order = np.argsort(values, kind="stable")
    finite = [v for v in (*lower.tolist(), *upper.tolist(), *values.tolist()) if math.isfinite(v)]
    figure = Figure(640, 440)
    axes = _single(figure, Scale(-0.5, values.size - 0.5),
                   _padded(min(finite, default=0.0), max(finite, default=1.0)))
    for rank, k in enumerate(order.tolist()):
        axes.line([rank, rank], [lower[k], upper[k]], colour=_COLOUR_BOUND, width=1.2)
    axes.points(list(range(values.size)), values[order].tolist(), colour=_COLOUR_BOUND,
                radius=2.5)
    axes.frame(title=f"Per-example ε estimates with their intervals ({values.size} records)",
               x_label="records, sorted by estimate", y_label=per_example["label"][:40])
    return figure


def _per_example_note(per_example: Mapping, n_trials: int) -> str:
    """Why per-example estimates without intervals are not drawn, and what they are."""
    count = len(per_example["values"])
    return (f"The {count} per-example plug-in ε estimates ({per_example['label']}) are not drawn: "
            "they come without their uncertainty. Each is a point estimate from the same "
            f"{n_trials} trials, not a lower bound; with that few trials a plug-in estimate "
            "scatters widely around its true value, and the largest of many lies above it by "
            "chance, so estimates above the certified ε are no evidence of a violation (only the "
            "lower bounds above are). They are kept in report.json (plots.per_example_epsilon).")


def _box(values: np.ndarray) -> tuple[float, float, float, float, float]:
    """Tukey's box: quartiles, median and whiskers at the last points within 1.5 IQR."""
    q1, median, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
    reach = 1.5 * (q3 - q1)
    inside = values[(values >= q1 - reach) & (values <= q3 + reach)]
    low = float(inside.min()) if inside.size else q1
    high = float(inside.max()) if inside.size else q3
    return low, q1, median, q3, high


# The utility figure marks at most this many models per side (the first ones; trials are
# independent): an SVG point each, so a 50,000-trial audit's picture stays small.
UTILITY_POINTS = 400


def _points_note(utility: Mapping) -> str:
    counts = [len(utility["accuracies"][side]) for side in ("unlearned", "retrained")]
    if max(counts) <= UTILITY_POINTS:
        return ""
    return (f" The points are the first {UTILITY_POINTS} models of each side (a random sample, "
            "as trials are independent); the boxes use all of them.")


def _figure_utility(report: Mapping) -> Figure:
    utility = report["utility"]
    unlearned = np.asarray(utility["accuracies"]["unlearned"], dtype=float)
    retrained = np.asarray(utility["accuracies"]["retrained"], dtype=float)
    names = ["unlearned", "retrained"]
    colours = [_COLOUR_UNLEARNED, _COLOUR_RETRAINED]
    figure = Figure(640, 440)
    if unlearned.size and retrained.size:
        both = np.concatenate([unlearned, retrained])
        axes = _single(figure, Scale(0.5, 2.5), _padded(float(both.min()), float(both.max())))
        # Fixed-seed jitter so the same report always renders to the same picture.
        jitter = np.random.default_rng(0)
        for position, values, colour in zip((1, 2), (unlearned, retrained), colours, strict=True):
            low, q1, median, q3, high = _box(values)
            axes.rect(position - 0.225, position + 0.225, q1, q3, fill=colour, opacity=0.35,
                      stroke="#222")
            axes.line([position - 0.225, position + 0.225], [median, median], colour="black",
                      width=1.6)
            for end, edge in ((low, q1), (high, q3)):
                axes.line([position, position], [end, edge], colour="#222", width=1.0)
                axes.line([position - 0.11, position + 0.11], [end, end], colour="#222",
                          width=1.0)
            shown = values[:UTILITY_POINTS]
            xs = position + jitter.uniform(-0.16, 0.16, size=shown.size)
            axes.points(xs.tolist(), shown.tolist(), colour=colour, radius=1.5, opacity=0.55)
        ticks = [(float(p), f"{n} (n={v.size})") for p, n, v in
                 zip((1, 2), names, (unlearned, retrained), strict=True)]
    else:
        means = [utility["unlearned_accuracy"]["mean"], utility["retrained_accuracy"]["mean"]]
        stds = [utility["unlearned_accuracy"]["std"], utility["retrained_accuracy"]["std"]]
        top = max((m + s for m, s in zip(means, stds, strict=True)), default=1.0)
        axes = _single(figure, Scale(0.5, 2.5), Scale(0.0, max(top, 1e-9) * 1.05))
        for position, mean, std, colour in zip((1, 2), means, stds, colours, strict=True):
            axes.rect(position - 0.4, position + 0.4, 0.0, mean, fill=colour, opacity=0.7)
            axes.line([position, position], [mean - std, mean + std], colour="#222", width=1.2)
            for end in (mean - std, mean + std):
                axes.line([position - 0.06, position + 0.06], [end, end], colour="#222",
                          width=1.2)
        ticks = [(1.0, names[0]), (2.0, names[1])]
    axes.frame(title="Utility: test accuracy of unlearned vs retrained models",
               y_label="test accuracy", grid="y", x_ticks=ticks)
    return figure


def _line_scale(values: list[float], log: bool) -> Scale:
    finite = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    if not finite:
        return Scale(1.0, 10.0, log=True) if log else Scale(0.0, 1.0)
    lo, hi = min(finite), max(finite)
    if log:
        if not hi > lo:
            lo, hi = lo / 2, hi * 2
        pad = (hi / lo) ** 0.05
        return Scale(lo / pad, hi * pad, log=True)
    return _padded(lo, hi)


def _figure_lines(plot: Mapping) -> Figure:
    """An adapter's line plot (report ``plots.extra``): one line per series."""
    series = plot["series"]
    figure = Figure(640, 440)
    axes = _single(figure, _line_scale([float(x) for s in series for x in s["x"]], plot["log_x"]),
                   _line_scale([float(y) for s in series for y in s["y"]], plot["log_y"]))
    for index, line in enumerate(series):
        axes.line(line["x"], line["y"], colour=_CYCLE[index % len(_CYCLE)], width=1.4,
                  marker="o", label=str(line["label"]))
    axes.frame(title=str(plot["title"]), x_label=str(plot["x_label"]),
               y_label=str(plot["y_label"]), grid="xy")
    axes.legend("upper right")
    return figure


@dataclass(frozen=True)
class ReportFigure:
    """One rendered figure of the HTML report: SVG markup with its title, alt text and caption."""

    id: str
    title: str
    alt: str
    caption: str
    svg: str
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
        figures.append(ReportFigure(fig_id, title, alt, caption, build().svg(), half))

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
            "the attack score binned on pilot trials. The purple curve is the certified ε(α); "
            "each attack's curve is a lower confidence bound on that binned D_α at every order "
            "at once, and a point of it above the purple curve, marked by a red dot, is a "
            "violation. The dashed grey curve is the most these trials could show.",
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
    per_example = plots["per_example_epsilon"]
    if per_example is not None and per_example.get("lower") is not None:
        add("fig-per-example-epsilon", "Per-example ε",
            f"Per-example epsilon estimates with their intervals: {per_example['label']}",
            f"One point per record ({per_example['label']}) with its interval. These are "
            "estimates, not lower bounds: the verdict never compares them with the "
            "certificate, and the largest of many estimates lies above its true value by "
            "chance.",
            lambda: _figure_per_example(report), half=True)
    elif per_example is not None:
        notes.append(_per_example_note(per_example, n_trials))
    else:
        notes.append("No per-example ε in this report (plots.per_example_epsilon is null).")
    if report["utility"] is not None:
        add("fig-utility", "Utility",
            "Box plot of the test accuracy of unlearned and retrained models",
            "Test accuracy of every unlearned model and every model retrained from scratch "
            "without the deleted data." + _points_note(report["utility"]),
            lambda: _figure_utility(report), half=True)
    else:
        notes.append("Utility was not measured (utility is null).")
    for plot in plots.get("extra", []):
        add(f"fig-extra-{plot['id']}", plot["title"],
            f"Line plot: {plot['y_label']} against {plot['x_label']}", plot["caption"],
            lambda plot=plot: _figure_lines(plot))
    return figures, notes


# -- HTML --------------------------------------------------------------------------------------
