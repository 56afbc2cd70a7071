"""A small SVG plotter for the report's figures: axes on linear or log scales with ticks and
grid, lines (plain, steps, markers), histograms, horizontal bars, box plots, points, legends.

It draws only what :mod:`audits.report.figures` needs, as plain SVG text that every browser
shows: no fonts embedded, no scripts, no external references, the same bytes for the same data.
Text from a spec (attack names, labels) is XML-escaped. Coordinates are pixels, y downwards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

__all__ = ["Axes", "Figure", "LegendEntry", "Scale"]

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
_GRID = "#b3b3b3"


def _n(value: float) -> str:
    """A coordinate with two decimals, without '-0'."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _text(x: float, y: float, text: str, *, size: float = 10, anchor: str = "start",
          baseline: str = "auto", weight: str = "normal", rotate: bool = False,
          colour: str = "#222") -> str:
    transform = f' transform="rotate(-90 {_n(x)} {_n(y)})"' if rotate else ""
    bold = ' font-weight="bold"' if weight != "normal" else ""
    return (f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}" '
            f'dominant-baseline="{baseline}" fill="{colour}"{bold}{transform}>'
            f"{escape(str(text))}</text>")


def text_width(text: str, size: float) -> float:
    """An estimate of a label's width (sans-serif, average glyph 0.58 em)."""
    return 0.58 * size * len(str(text))


def _tick_label(value: float) -> str:
    if value == 0:
        return "0"
    text = f"{value:.6g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text


@dataclass(frozen=True)
class Scale:
    """A linear or base-10 log map from data [lo, hi] to pixels [start, end]."""

    lo: float
    hi: float
    log: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.hi > self.lo):
            raise ValueError(f"a scale needs finite lo < hi, got [{self.lo}, {self.hi}]")
        if self.log and self.lo <= 0:
            raise ValueError(f"a log scale needs lo > 0, got {self.lo}")

    def fraction(self, value: float) -> float:
        """Where ``value`` falls on the scale: 0 at lo, 1 at hi (NaN outside a log domain)."""
        if self.log:
            if not value > 0:
                return math.nan
            return (math.log10(value) - math.log10(self.lo)) / (math.log10(self.hi)
                                                                 - math.log10(self.lo))
        return (value - self.lo) / (self.hi - self.lo)

    def ticks(self) -> list[float]:
        """Tick values inside [lo, hi]: on a log scale the powers of ten (1, 2 and 5 times them
        when fewer than three fall inside), else about six 'nice' multiples (1, 2, 2.5 or 5
        times a power of ten)."""
        if self.log:
            first = math.floor(math.log10(self.lo))
            last = math.ceil(math.log10(self.hi))
            step = max(1, math.ceil((last - first + 1) / 8))
            decades = [10.0 ** k for k in range(first, last + 1, step)]
            inside = [v for v in decades if self.lo <= v <= self.hi]
            if len(inside) >= 3:
                return inside
            # a short log range: 1, 2 and 5 times each power of ten
            finer = [m * v for v in decades for m in (1.0, 2.0, 5.0)]
            return [v for v in finer if self.lo <= v <= self.hi]
        span = self.hi - self.lo
        raw = span / 6
        power = 10.0 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
        start = math.ceil(self.lo / step - 1e-9)
        values = []
        k = start
        while k * step <= self.hi + 1e-9 * step:
            values.append(k * step)
            k += 1
        return values


@dataclass(frozen=True)
class LegendEntry:
    """One legend row: a line (``dash``, ``marker``) or a filled patch (``patch``)."""

    label: str
    colour: str
    width: float = 1.6
    dash: str | None = None
    marker: str | None = None
    patch: bool = False
    opacity: float = 1.0


class Axes:
    """A plotting area at (left, top, width, height) with an x and a y scale."""

    def __init__(self, *, left: float, top: float, width: float, height: float, x: Scale,
                 y: Scale, clip_id: str) -> None:
        self.left, self.top, self.width, self.height = left, top, width, height
        self.x, self.y, self.clip_id = x, y, clip_id
        self._body: list[str] = []
        self._frame: list[str] = []
        self.legend_entries: list[LegendEntry] = []

    # -- coordinates ---------------------------------------------------------------------------

    def px(self, value: float) -> float:
        """The pixel column of the data value ``value``."""
        return self.left + self.x.fraction(value) * self.width

    def py(self, value: float) -> float:
        """The pixel row of the data value ``value`` (larger values higher up)."""
        return self.top + (1.0 - self.y.fraction(value)) * self.height

    def _points(self, xs: Sequence[float], ys: Sequence[float]) -> list[tuple[float, float]]:
        out = []
        for a, b in zip(xs, ys, strict=True):
            u, v = self.px(float(a)), self.py(float(b))
            if math.isfinite(u) and math.isfinite(v):
                # far outside the area only the clip sees it; keep coordinates short
                out.append((min(max(u, -1e5), 1e5), min(max(v, -1e5), 1e5)))
        return out

    # -- marks ---------------------------------------------------------------------------------

    def line(self, xs: Sequence[float], ys: Sequence[float], *, colour: str, width: float = 1.6,
             dash: str | None = None, steps: bool = False, marker: str | None = None,
             marker_size: float = 3.0, label: str | None = None, opacity: float = 1.0) -> None:
        """A polyline through (xs, ys); ``steps`` holds each y until the next x (steps-post);
        ``marker`` "o" or "s" marks every point."""
        points = self._points(xs, ys)
        if steps and points:
            stepped = [points[0]]
            for (_, v0), (u1, v1) in zip(points, points[1:], strict=False):
                stepped += [(u1, v0), (u1, v1)]
            drawn = stepped
        else:
            drawn = points
        if len(drawn) >= 2:
            dashes = f' stroke-dasharray="{dash}"' if dash else ""
            alpha = f' stroke-opacity="{opacity}"' if opacity < 1 else ""
            path = " ".join(f"{_n(u)},{_n(v)}" for u, v in drawn)
            self._body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                              f'stroke-width="{_n(width)}"{dashes}{alpha} '
                              'stroke-linejoin="round"/>')
        if marker:
            self._body.extend(_marker(u, v, marker, marker_size, colour) for u, v in points)
        if label is not None:
            self.legend_entries.append(LegendEntry(label, colour, width, dash, marker,
                                                   opacity=opacity))

    def points(self, xs: Sequence[float], ys: Sequence[float], *, colour: str, radius: float,
               opacity: float = 1.0) -> None:
        """A dot of ``radius`` pixels at each (x, y)."""
        alpha = f' fill-opacity="{opacity}"' if opacity < 1 else ""
        self._body.extend(f'<circle cx="{_n(u)}" cy="{_n(v)}" r="{_n(radius)}" '
                          f'fill="{colour}"{alpha}/>' for u, v in self._points(xs, ys))

    def rect(self, x0: float, x1: float, y0: float, y1: float, *, fill: str = "none",
             stroke: str | None = None, opacity: float = 1.0, width: float = 1.0) -> None:
        """The data-space rectangle [x0, x1] x [y0, y1]."""
        u0, u1 = sorted((self.px(x0), self.px(x1)))
        v0, v1 = sorted((self.py(y0), self.py(y1)))
        alpha = f' fill-opacity="{opacity}"' if opacity < 1 and fill != "none" else ""
        edge = f' stroke="{stroke}" stroke-width="{_n(width)}"' if stroke else ""
        self._body.append(f'<rect x="{_n(u0)}" y="{_n(v0)}" width="{_n(u1 - u0)}" '
                          f'height="{_n(v1 - v0)}" fill="{fill}"{alpha}{edge}/>')

    def histogram(self, edges: Sequence[float], counts: Sequence[float], *, colour: str,
                  label: str | None = None) -> None:
        """Counts over bins as a filled, outlined step area (matplotlib's "stepfilled" plus
        "step")."""
        base = self.py(0.0)
        outline = [(self.px(float(edges[0])), base)]
        for k, count in enumerate(counts):
            v = self.py(float(count))
            outline += [(self.px(float(edges[k])), v), (self.px(float(edges[k + 1])), v)]
        outline.append((self.px(float(edges[-1])), base))
        path = " ".join(f"{_n(u)},{_n(v)}" for u, v in outline)
        self._body.append(f'<polygon points="{path}" fill="{colour}" fill-opacity="0.45" '
                          'stroke="none"/>')
        self._body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                          'stroke-width="1.2"/>')
        if label is not None:
            self.legend_entries.append(LegendEntry(label, colour, patch=True, opacity=0.45))

    def vline(self, x: float, *, colour: str, width: float, dash: str | None = None,
              label: str | None = None) -> None:
        """A vertical line across the axes at data x."""
        u = self.px(x)
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        self._body.append(f'<line x1="{_n(u)}" y1="{_n(self.top)}" x2="{_n(u)}" '
                          f'y2="{_n(self.top + self.height)}" stroke="{colour}" '
                          f'stroke-width="{_n(width)}"{dashes}/>')
        if label is not None:
            self.legend_entries.append(LegendEntry(label, colour, width, dash))

    def label_at(self, x: float, y: float, text: str, *, dx: float = 0.0, size: float = 10,
                 anchor: str = "start") -> None:
        """Text at data (x, y), shifted ``dx`` pixels, centred vertically."""
        self._body.append(_text(self.px(x) + dx, self.py(y), text, size=size, anchor=anchor,
                                baseline="central"))

    def centre_note(self, text: str) -> None:
        """A note in the middle of an axes with nothing to plot."""
        self._frame.append(_text(self.left + self.width / 2, self.top + self.height / 2, text,
                                 size=11, anchor="middle", baseline="central"))

    # -- frame ---------------------------------------------------------------------------------

    def frame(self, *, title: str = "", x_label: str = "", y_label: str = "",
              grid: str = "", x_ticks: Sequence[tuple[float, str]] | None = None,
              y_ticks: Sequence[tuple[float, str]] | None = None, title_size: float = 14,
              tick_size: float = 11) -> None:
        """Axes box, ticks with labels (given, or the scales' own), grid lines ("x", "y" or
        "xy"), axis labels and title."""
        right, bottom = self.left + self.width, self.top + self.height
        xs = x_ticks if x_ticks is not None else [(v, _tick_label(v)) for v in self.x.ticks()]
        ys = y_ticks if y_ticks is not None else [(v, _tick_label(v)) for v in self.y.ticks()]
        parts = []
        for value, text in xs:
            u = self.px(value)
            if "x" in grid:
                parts.append(f'<line x1="{_n(u)}" y1="{_n(self.top)}" x2="{_n(u)}" '
                             f'y2="{_n(bottom)}" stroke="{_GRID}" stroke-opacity="0.6" '
                             'stroke-width="0.8"/>')
            parts.append(f'<line x1="{_n(u)}" y1="{_n(bottom)}" x2="{_n(u)}" '
                         f'y2="{_n(bottom + 4)}" stroke="#222" stroke-width="0.8"/>')
            parts.append(_text(u, bottom + 7, text, size=tick_size, anchor="middle",
                               baseline="hanging"))
        for value, text in ys:
            v = self.py(value)
            if "y" in grid:
                parts.append(f'<line x1="{_n(self.left)}" y1="{_n(v)}" x2="{_n(right)}" '
                             f'y2="{_n(v)}" stroke="{_GRID}" stroke-opacity="0.6" '
                             'stroke-width="0.8"/>')
            parts.append(f'<line x1="{_n(self.left - 4)}" y1="{_n(v)}" x2="{_n(self.left)}" '
                         f'y2="{_n(v)}" stroke="#222" stroke-width="0.8"/>')
            parts.append(_text(self.left - 7, v, text, size=tick_size, anchor="end",
                               baseline="central"))
        parts.append(f'<rect x="{_n(self.left)}" y="{_n(self.top)}" width="{_n(self.width)}" '
                     f'height="{_n(self.height)}" fill="none" stroke="#222" stroke-width="0.8"/>')
        if title:
            parts.append(_text(self.left + self.width / 2, self.top - 9, title, size=title_size,
                               anchor="middle"))
        if x_label:
            parts.append(_text(self.left + self.width / 2, bottom + 26, x_label, size=12,
                               anchor="middle", baseline="hanging"))
        if y_label:
            width = max((text_width(t, tick_size) for _, t in ys), default=0.0)
            parts.append(_text(self.left - width - 16, self.top + self.height / 2, y_label,
                               size=12, anchor="middle", rotate=True))
        self._frame = parts + self._frame

    def legend(self, where: str = "lower right", *, size: float = 10) -> None:
        """The legend of the labelled marks, inside the axes at ``where`` ("lower right",
        "upper right", "upper left")."""
        entries = self.legend_entries
        if not entries:
            return
        box_w = 34 + max(text_width(e.label, size) for e in entries)
        box_h = 8 + 1.55 * size * len(entries)
        x0 = self.left + 8 if "left" in where else self.left + self.width - 8 - box_w
        y0 = self.top + 8 if "upper" in where else self.top + self.height - 8 - box_h
        self._frame.append(legend_box(x0, y0, entries, size=size))

    def svg(self) -> str:
        """The axes' markup: the marks clipped to the plotting area, then the frame."""
        right, bottom = self.left + self.width, self.top + self.height
        clip = (f'<clipPath id="{self.clip_id}"><rect x="{_n(self.left)}" y="{_n(self.top)}" '
                f'width="{_n(right - self.left)}" height="{_n(bottom - self.top)}"/></clipPath>')
        body = "".join(self._body)
        return f'{clip}<g clip-path="url(#{self.clip_id})">{body}</g>{"".join(self._frame)}'


def _marker(u: float, v: float, kind: str, size: float, colour: str) -> str:
    if kind == "s":
        return (f'<rect x="{_n(u - size)}" y="{_n(v - size)}" width="{_n(2 * size)}" '
                f'height="{_n(2 * size)}" fill="{colour}"/>')
    return f'<circle cx="{_n(u)}" cy="{_n(v)}" r="{_n(size)}" fill="{colour}"/>'


def legend_box(x0: float, y0: float, entries: Sequence[LegendEntry], *, size: float = 8,
               frame: bool = True) -> str:
    """Legend rows from (x0, y0): a short line or a patch, then the label."""
    row = 1.55 * size
    width = 34 + max(text_width(e.label, size) for e in entries)
    parts = []
    if frame:
        parts.append(f'<rect x="{_n(x0)}" y="{_n(y0)}" width="{_n(width)}" '
                     f'height="{_n(8 + row * len(entries))}" fill="white" fill-opacity="0.85" '
                     'stroke="#ccc" stroke-width="0.8" rx="3"/>')
    for k, entry in enumerate(entries):
        y = y0 + 4 + row * (k + 0.5)
        if entry.patch:
            alpha = f' fill-opacity="{entry.opacity}"' if entry.opacity < 1 else ""
            parts.append(f'<rect x="{_n(x0 + 6)}" y="{_n(y - size / 2)}" width="20" '
                         f'height="{_n(size)}" fill="{entry.colour}"{alpha}/>')
        else:
            dashes = f' stroke-dasharray="{entry.dash}"' if entry.dash else ""
            parts.append(f'<line x1="{_n(x0 + 6)}" y1="{_n(y)}" x2="{_n(x0 + 26)}" y2="{_n(y)}" '
                         f'stroke="{entry.colour}" stroke-width="{_n(entry.width)}"{dashes}/>')
            if entry.marker:
                parts.append(_marker(x0 + 16, y, entry.marker, 3.0, entry.colour))
        parts.append(_text(x0 + 30, y, entry.label, size=size, baseline="central"))
    return "".join(parts)


class Figure:
    """An SVG picture of ``width`` x ``height`` pixels holding axes and free text."""

    def __init__(self, width: float, height: float, *, title: str = "") -> None:
        self.width, self.height, self.title = width, height, title
        self._parts: list[str | Axes] = []
        self._count = 0

    def axes(self, *, left: float, top: float, width: float, height: float, x: Scale,
             y: Scale) -> Axes:
        """A new plotting area of the figure (pixels from its top left corner)."""
        self._count += 1
        axes = Axes(left=left, top=top, width=width, height=height, x=x, y=y,
                    clip_id=f"plot{self._count}")
        self._parts.append(axes)
        return axes

    def add(self, markup: str) -> None:
        """Free SVG markup (a legend outside the axes), drawn after what came before."""
        self._parts.append(markup)

    def svg(self) -> str:
        """The whole picture as one standalone SVG document."""
        inner = "".join(p.svg() if isinstance(p, Axes) else p for p in self._parts)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(self.width)}" '
                f'height="{_n(self.height)}" viewBox="0 0 {_n(self.width)} {_n(self.height)}" '
                f'font-family="{FONT}"><rect width="100%" height="100%" fill="white"/>'
                f"{inner}</svg>")
