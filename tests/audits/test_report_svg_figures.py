"""The report's SVG figures: marks at the data's coordinates, ticks, escaping, size."""

from __future__ import annotations

import math
from xml.etree import ElementTree

import pytest

from audits.report.figures import _figure_roc, report_figures_of
from audits.report.svg import Figure, Scale

NS = "{http://www.w3.org/2000/svg}"


def _points(element: ElementTree.Element) -> list[tuple[float, float]]:
    return [tuple(float(v) for v in pair.split(",")) for pair in element.get("points").split()]


def _flat(points) -> list[float]:
    return [float(v) for point in points for v in point]


def _plot_area(svg: ElementTree.Element) -> tuple[float, float, float, float]:
    rect = svg.find(f"{NS}clipPath/{NS}rect")
    return tuple(float(rect.get(k)) for k in ("x", "y", "width", "height"))


def _roc_report(fpr: list[float], tpr: list[float]) -> dict:
    return {"plots": {"roc": {"loss": {"fpr": fpr, "tpr": tpr, "auc": 0.75}}},
            "certificate": {"epsilon": 1.0, "delta": 0.01}}


def _curve(svg: ElementTree.Element) -> list[tuple[float, float]]:
    # the attack's curve is the first polyline in the plotting area (then the certificate's)
    return _points(next(svg.iter(f"{NS}polyline")))


def test_linear_roc_curve_steps_through_the_data_points():
    fpr, tpr = [0.0, 0.25, 0.5, 1.0], [0.0, 0.5, 1.0, 1.0]
    svg = ElementTree.fromstring(_figure_roc(_roc_report(fpr, tpr), log_axes=False).svg())
    x0, y0, width, height = _plot_area(svg)
    assert width == height  # equal aspect on linear axes
    # steps-post: each TPR holds until the next FPR; the y axis runs to 1.01
    stepped = [(0, 0), (0.25, 0), (0.25, 0.5), (0.5, 0.5), (0.5, 1), (1, 1), (1, 1)]
    expected = [(x0 + f * width, y0 + height - t / 1.01 * height) for f, t in stepped]
    assert _flat(_curve(svg)) == pytest.approx(_flat(expected), abs=0.006)


def test_log_roc_curve_places_points_by_decade_and_drops_zeros():
    fpr, tpr = [0.0, 1e-3, 1e-2, 1.0], [0.0, 1e-2, 0.1, 1.0]
    svg = ElementTree.fromstring(_figure_roc(_roc_report(fpr, tpr), log_axes=True).svg())
    x0, y0, width, height = _plot_area(svg)
    floor = 1e-3 / 2  # half the smallest positive FPR

    def px(v: float) -> float:
        return x0 + (math.log10(v) - math.log10(floor)) / -math.log10(floor) * width

    def py(v: float) -> float:
        span = math.log10(1.05) - math.log10(floor)
        return y0 + height - (math.log10(v) - math.log10(floor)) / span * height

    stepped = [(1e-3, 1e-2), (1e-2, 1e-2), (1e-2, 0.1), (1, 0.1), (1, 1)]
    assert _flat(_curve(svg)) == pytest.approx(_flat((px(f), py(t)) for f, t in stepped), abs=0.006)
    ticks = [e.text for e in svg.iter(f"{NS}text")]
    for decade in ("0.001", "0.01", "0.1", "1"):
        assert decade in ticks


def test_histogram_outline_follows_the_bin_counts():
    figure = Figure(400, 300)
    axes = figure.axes(left=10, top=10, width=300, height=200, x=Scale(0.0, 3.0),
                       y=Scale(0.0, 4.0))
    axes.histogram([0.0, 1.0, 2.0, 3.0], [1, 3, 2], colour="#000000")
    svg = ElementTree.fromstring(figure.svg())
    polygon = next(svg.iter(f"{NS}polygon"))
    # 50 px per count, 100 px per bin, baseline at y = 210
    assert _points(polygon) == [(10, 210), (10, 160), (110, 160), (110, 60), (210, 60),
                                (210, 110), (310, 110), (310, 210)]


@pytest.mark.parametrize(("scale", "ticks"), [
    (Scale(0.0, 1.01), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    (Scale(0.0, 13.65), [0.0, 2.5, 5.0, 7.5, 10.0, 12.5]),
    (Scale(1e-5, 1.05, log=True), [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]),
    (Scale(0.9, 35.0, log=True), [1.0, 2.0, 5.0, 10.0, 20.0]),
])
def test_scale_ticks_are_round_numbers_inside_the_range(scale, ticks):
    assert scale.ticks() == pytest.approx(ticks, rel=1e-12, abs=1e-15)


def test_scale_refuses_an_empty_or_nonpositive_log_range():
    with pytest.raises(ValueError, match="lo < hi"):
        Scale(1.0, 1.0)
    with pytest.raises(ValueError, match="lo > 0"):
        Scale(0.0, 1.0, log=True)


def test_figure_text_from_a_spec_is_escaped_and_every_figure_parses():
    name = 'a<b>&"c"'
    report = _roc_report([0.0, 0.5, 1.0], [0.0, 0.7, 1.0])
    report["plots"]["roc"] = {name: report["plots"]["roc"]["loss"]}
    markup = _figure_roc(report, log_axes=False).svg()
    assert "a&lt;b&gt;&amp;" in markup and "<b>" not in markup
    texts = [e.text for e in ElementTree.fromstring(markup).iter(f"{NS}text")]
    assert f"{name} (AUC 0.75)" in texts


def test_demo_report_figures_are_small(tmp_path):
    # 50,000 trials' accuracies must not become 100,000 SVG points
    accuracies = [0.5 + (k % 100) / 1000 for k in range(50_000)]
    report = {"plots": {"roc": {}, "scores": {}, "per_example_epsilon": None},
              "certificate": {"epsilon": 1.0, "delta": 0.01},
              "empirical": {"n_trials": 50_000, "renyi": [], "max_certifiable_epsilon": 8.0,
                            "lower_bounds": []},
              "verdict": {},
              "utility": {"accuracies": {"unlearned": accuracies, "retrained": accuracies},
                          "unlearned_accuracy": {"mean": 0.55, "std": 0.03},
                          "retrained_accuracy": {"mean": 0.55, "std": 0.03}}}
    figures, _ = report_figures_of(report)
    utility = next(f for f in figures if f.id == "fig-utility")
    assert len(utility.svg) < 200_000
    assert utility.svg.count("<circle") == 2 * 400
    assert "first 400 models of each side" in utility.caption
