"""The report's charts as SVG text: grouped bars, lines over categories, a radar, a reliability diagram.

A chart is described by plain values (Chart, Panel, Series: titles, category labels, one value or None per
category and series) and drawn by `svg(chart)`, a few kilobytes of text, with no plotting library (matplotlib's
import and rasterising were about half of a small evaluate). The report embeds it as a data: URI in an <img>, so
nothing in it can run in the page; every string from a results file (a model name, a label) is written as
escaped XML text, and characters XML cannot hold are replaced, so that the image always decodes.

Text widths are estimated (wide East Asian characters one em, others ~0.6 em): the layout leaves room by that
estimate, the browser draws the text with the fonts it has (CJK_FONTS first, for Chinese model names).
"""
from __future__ import annotations

import base64
import math
import re
import unicodedata
from dataclasses import dataclass, field

# matplotlib's default colour cycle (tab10), so the charts keep their colours
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "Microsoft YaHei", "SimHei", "DejaVu Sans",
         "Arial", "sans-serif")
# How a series beyond the palette's first cycle is told apart from the one of the same colour before it (the 11th
# result from the 1st): (line dash, marker shape, bar pattern) per cycle. Three cycles, 30 results, are more than a
# chart can show legibly; past that the marks repeat too.
CYCLES = (("", "circle", None), ("6,3", "square", "dots"), ("1.5,2.5", "diamond", "cross"))
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass
class Series:
    """One result (or condition) of a panel: its legend label and one value per category (None: no value, drawn
    as nothing: no bar, a gap in a line)."""
    label: str
    values: list
    hatch: bool = False  # bars drawn hatched (the paper's reported figures)
    fill: bool = False  # radar: the closed line's area shaded (only when no value is missing)
    # its place in the page's palette (see mark): a page gives a result the same one in each of its plots, those
    # leaving other results out too, so that its colour means the same result throughout; None: its index in
    # the panel
    style: int | None = None


@dataclass
class Panel:
    """One plot area. kind: "bars" (a group of bars per category), "lines" (a line per series over the
    categories, markers at each value), "radar" (the categories around a circle, 0-100), "reliability" (bars
    at numeric positions on 0-100: `bins`, with the diagonal of perfect calibration).
    legend: None, "right" (outside, right of the plot), "below", "inside" (top right corner)."""
    kind: str
    title: str
    categories: list = field(default_factory=list)
    series: list = field(default_factory=list)
    y_label: str = ""
    x_label: str = ""
    legend: str | None = None
    rotate: bool = False  # category labels slanted by 30 degrees (long model names)
    headroom: float = 0.0  # share of the value range left free above the highest bar (room for the legend)
    bins: list = field(default_factory=list)  # reliability: the calibration bins (low, high, accuracy, n)
    title_size: float = 12.0
    tick_size: float = 10.0


@dataclass
class Chart:
    """Panels laid out in rows of `columns`; width and height of each panel in pixels."""
    panels: list
    columns: int = 1
    width: float = 600.0
    height: float = 340.0


# ---- text -----------------------------------------------------------------------------------------------------

def xml_text(value) -> str:
    """`value` as XML character data or attribute text: escaped, and characters XML 1.0 cannot hold replaced."""
    text = _NOT_XML.sub("\ufffd", str(value))
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("'", "&#39;"))


def text_width(text: str, size: float) -> float:
    """An estimate of `text`'s width in pixels at font size `size`."""
    return size * sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in str(text))


def _text(x, y, text, size, anchor="middle", extra="") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" text-anchor="{anchor}"{extra}>'
            f"{xml_text(text)}</text>")


def _number(value: float) -> str:
    return f"{value:.10g}" if value != int(value) else str(int(value))


# ---- scales -----------------------------------------------------------------------------------------------------

def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values covering [low, high], about `count` of them (steps of 1, 2, 2.5 or 5 times a power of
    ten). A range an axis cannot show (not finite, empty, or narrower than the values' own precision) is widened
    first, so there are always between 2 and a few more than `count` ticks."""
    low, high = _drawable(low, high)
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    digits = 3 - math.floor(math.log10(step))  # ticks are multiples of the step: round away the float error only
    first = round(math.floor(low / step + 1e-9) * step, digits)
    ticks = [first]
    while ticks[-1] < high - 1e-9 * step and len(ticks) <= 2 * count + 2:
        ticks.append(round(first + len(ticks) * step, digits))
    return ticks


_LARGEST = 1e300  # beyond this a difference of two values overflows; no chart shows such numbers anyway


def _drawable(low: float, high: float) -> tuple[float, float]:
    """[low, high] as a finite range wide enough to be split into ticks at the values' magnitude."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return 0.0, 1.0
    low, high = max(-_LARGEST, min(low, high)), min(_LARGEST, max(low, high))
    scale = max(abs(low), abs(high))
    if not high - low > scale * 1e-9:  # one value, or differences below what a tick label could show
        high = low + max(1.0, scale * 0.1)
    return low, high


def _shown(value: float | None) -> float | None:
    """The value as drawn: None (no mark) for a missing or non-finite one, within +-1e300 otherwise."""
    if value is None or not math.isfinite(value):
        return None
    return max(-_LARGEST, min(_LARGEST, value))


def _value_range(panel: Panel) -> tuple[float, float]:
    values = [v for s in panel.series for v in map(_shown, s.values) if v is not None]
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    if panel.kind == "bars":
        low, high = min(0.0, low), max(0.0, high)
        high += (high - low) * panel.headroom
    else:  # lines: the data's range with a margin, as a plotting library would
        margin = (high - low) * 0.05 or max(1.0, abs(high) * 0.05)
        low, high = low - margin, high + margin
    return low, high


# ---- drawing ------------------------------------------------------------------------------------------------

def mark(series: Series, k: int) -> tuple[str, str, str, str | None]:
    """(colour, line dash, marker shape, bar pattern) of `series`, the k-th of its panel: its style (else k)
    picks the colour, and which cycle through the palette it is in the dash, marker and pattern (CYCLES)."""
    index = k if series.style is None else series.style
    dash, marker, pattern = CYCLES[index // len(COLOURS) % len(CYCLES)]
    return COLOURS[index % len(COLOURS)], dash, marker, pattern


def _marker(shape: str, x: float, y: float, r: float, colour: str, title: str = "") -> str:
    """A line's marker centred on (x, y), about 2r across, with `title` as its tooltip."""
    tip = f"<title>{xml_text(title)}</title>" if title else ""
    if shape == "square":  # a little smaller than the circle's box, so that both look the same size
        r *= 0.9
        return (f'<rect x="{x - r:.2f}" y="{y - r:.2f}" width="{2 * r:.2f}" height="{2 * r:.2f}" fill="{colour}">'
                f"{tip}</rect>")
    if shape == "diamond":
        r *= 1.3
        return (f'<polygon points="{x:.2f},{y - r:.2f} {x + r:.2f},{y:.2f} {x:.2f},{y + r:.2f} {x - r:.2f},{y:.2f}" '
                f'fill="{colour}">{tip}</polygon>')
    return f'<circle cx="{x:.2f}" cy="{y:.2f}" r="{r:g}" fill="{colour}">{tip}</circle>'


def _legend_entries(panel: Panel) -> list[tuple[tuple, Series, str]]:
    return [(mark(s, k), s, panel.kind) for k, s in enumerate(panel.series)]


def _legend_size(panel: Panel, size: float) -> tuple[float, float]:
    entries = _legend_entries(panel)
    if not panel.legend or not entries:
        return 0.0, 0.0
    return 30 + max(text_width(s.label, size) for _, s, _ in entries), 8 + 14 * len(entries)


def _legend(panel: Panel, x: float, y: float, size: float) -> list[str]:
    """The legend's box with its top left corner at (x, y)."""
    width, height = _legend_size(panel, size)
    out = [f'<g class="legend"><rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" '
           'fill="white" fill-opacity="0.85" stroke="#ccc"/>']
    for k, ((colour, dash, marker, pattern), s, kind) in enumerate(_legend_entries(panel)):
        cy = y + 11 + 14 * k
        if kind in ("lines", "radar"):
            dashed = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<line x1="{x + 3:.1f}" y1="{cy:.1f}" x2="{x + 23:.1f}" y2="{cy:.1f}" stroke="{colour}" '
                       f'stroke-width="1.5"{dashed}/>')
            out.append(_marker(marker, x + 13, cy, 2.5, colour))
        else:
            out.append(f'<rect x="{x + 6:.1f}" y="{cy - 5:.1f}" width="14" height="9" fill="{colour}"/>')
            for overlay in filter(None, ("hatch" if s.hatch else None, pattern)):
                out.append(f'<rect x="{x + 6:.1f}" y="{cy - 5:.1f}" width="14" height="9" fill="url(#{overlay})"/>')
        out.append(_text(x + 26, cy + size * 0.35, s.label, size, "start"))
    out.append("</g>")
    return out


def _y_scale(box, low: float, high: float):
    """The y pixel of a value in a panel's `box` whose axis runs from `low` (bottom) to `high` (top)."""
    _, top, _, height = box
    return lambda v: top + height * (high - v) / (high - low)


def _frame(panel: Panel, box, ticks, labels, span=None) -> list[str]:
    """Axes of a bars / lines / reliability panel: title, horizontal grid with the y `ticks` (the axis spans
    `span`, else the ticks' range), axis lines, `labels` ((x, text) pairs) under the axis, axis labels."""
    left, top, width, height = box
    low, high = span or (ticks[0], ticks[-1])
    size = panel.tick_size
    out = [_text(left + width / 2, top - 8, panel.title, panel.title_size)]
    y_of = _y_scale(box, low, high)
    for t in ticks:
        y = y_of(t)
        out.append(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{left + width:.1f}" y2="{y:.1f}" stroke="#b0b0b0" '
                   'stroke-opacity="0.3"/>')
        out.append(_text(left - 5, y + size * 0.35, _number(t), size, "end"))
    out.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" height="{height:.1f}" fill="none" '
               'stroke="#000" stroke-width="0.8"/>')
    for x, label in labels:
        out.append(f'<line x1="{x:.1f}" y1="{top + height:.1f}" x2="{x:.1f}" y2="{top + height + 4:.1f}" '
                   'stroke="#000" stroke-width="0.8"/>')
        if panel.rotate:
            ty = top + height + 8 + size * 0.7
            out.append(_text(x, ty, label, size, "end", f' transform="rotate(-30 {x:.1f} {ty:.1f})"'))
        else:
            out.append(_text(x, top + height + 8 + size, label, size))
    if panel.y_label:
        cx, cy = left - 12 - max(text_width(_number(t), size) for t in ticks), top + height / 2
        out.append(_text(cx, cy, panel.y_label, size + 1, "middle", f' transform="rotate(-90 {cx:.1f} {cy:.1f})"'))
    if panel.x_label:
        out.append(_text(left + width / 2, top + height + 12 + 2 * size + _label_depth(panel), panel.x_label, size))
    return out


def _label_depth(panel: Panel) -> float:
    """How far slanted category labels reach below the axis, beyond one line of text."""
    if not panel.rotate or not panel.categories:
        return 0.0
    return max(text_width(c, panel.tick_size) for c in panel.categories) * 0.5


def _margins(panel: Panel) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) room around a panel's plot area for its ticks, labels and title."""
    size = panel.tick_size
    if panel.kind == "radar":
        reach = max((text_width(c, size) for c in panel.categories), default=0) + 10
        return reach, 30 + reach * 0.3, reach, reach * 0.3 + 10
    left = 14 + text_width("-100.0", size) + (size + 8 if panel.y_label else 0)
    bottom = 14 + size + _label_depth(panel) + (size + 8 if panel.x_label else 0)
    right = 12.0
    if panel.rotate and panel.categories:  # a slanted first label reaches left of the axis
        left = max(left, text_width(panel.categories[0], size) * 0.87 - 20)
    return left, 20 + panel.title_size, right, bottom


def _bars(panel: Panel, box) -> list[str]:
    left, top, width, height = box
    low, high = _value_range(panel)
    ticks = nice_ticks(low, high)
    n = max(1, len(panel.categories))
    slot = width / n
    centres = [left + slot * (i + 0.5) for i in range(n)]
    out = _frame(panel, box, ticks, list(zip(centres, panel.categories)))
    bar = 0.8 * slot / max(1, len(panel.series))
    y_of = _y_scale(box, ticks[0], ticks[-1])
    zero = y_of(0.0)
    for k, s in enumerate(panel.series):
        colour, _, _, pattern = mark(s, k)
        for i, v in enumerate(map(_shown, s.values)):
            if v is None:
                continue
            x = centres[i] + (k - (len(panel.series) - 1) / 2) * bar - bar / 2
            y = y_of(v)
            y0, h = min(y, zero), abs(zero - y)
            out.append(f'<rect x="{x:.2f}" y="{y0:.2f}" width="{bar:.2f}" height="{h:.2f}" fill="{colour}">'
                       f"<title>{xml_text(s.label)}: {_number(round(v, 2))}</title></rect>")
            for overlay in filter(None, ("hatch" if s.hatch else None, pattern)):
                out.append(f'<rect x="{x:.2f}" y="{y0:.2f}" width="{bar:.2f}" height="{h:.2f}" '
                           f'fill="url(#{overlay})"/>')
    return out


def _lines(panel: Panel, box) -> list[str]:
    left, top, width, height = box
    low, high = _value_range(panel)
    ticks = nice_ticks(low, high)
    n = max(1, len(panel.categories))
    slot = width / n  # every category has its place on the axis, those without a value too
    xs = [left + slot * (i + 0.5) for i in range(n)]
    out = _frame(panel, box, ticks, list(zip(xs, panel.categories)))

    y_of = _y_scale(box, ticks[0], ticks[-1])
    markers = []
    for k, (s, dx) in enumerate(zip(panel.series, dodge(len(panel.series), slot))):
        colour, dash, marker, _ = mark(s, k)
        values = list(map(_shown, s.values))
        points = [(xs[i] + dx, y_of(v)) if v is not None else None for i, v in enumerate(values)]
        out += _polyline(points, colour, closed=False, dash=dash)
        markers += [_marker(marker, p[0], p[1], 3, colour, f"{s.label}, {c}: {_number(round(v, 2))}")
                    for p, c, v in zip(points, panel.categories, values) if p is not None]
    return out + markers  # every line first: no result's line is drawn over another's markers


def dodge(n: int, slot: float) -> list[float]:
    """Horizontal offsets of a lines panel's n series around each category's place (a slot wide): results with
    equal scores would otherwise be drawn on one another, the last one drawn hiding the rest. Only where a mark
    sits within its category moves, never its height or its tooltip; markers 6 px apart while they fit in half
    the slot."""
    if n < 2:
        return [0.0] * n
    step = min(6.0, 0.5 * slot / (n - 1))
    return [(k - (n - 1) / 2) * step for k in range(n)]


def _polyline(points, colour: str, closed: bool, dash: str = "") -> list[str]:
    """Line pieces through consecutive points; None is a gap (a lone point between two gaps is a marker only)."""
    sequence = points + points[:1] if closed else points
    runs, run = [], []
    for p in sequence:
        if p is None:
            runs.append(run)
            run = []
        else:
            run.append(p)
    runs.append(run)
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return [f'<polyline points="{" ".join(f"{x:.2f},{y:.2f}" for x, y in r)}" fill="none" stroke="{colour}" '
            f'stroke-width="1.5"{dashed}/>' for r in runs if len(r) > 1]


def _radar(panel: Panel, box) -> list[str]:
    left, top, width, height = box
    radius = min(width, height) / 2
    cx, cy = left + width / 2, top + height / 2
    n = max(1, len(panel.categories))
    angles = [2 * math.pi * i / n for i in range(n)]  # the first category east, then counter-clockwise
    size = panel.tick_size
    out = [_text(cx, top - 24, panel.title, panel.title_size)]

    def point(angle, value):
        r = radius * value / 100
        return cx + r * math.cos(angle), cy - r * math.sin(angle)

    for ring in (20, 40, 60, 80, 100):  # the radial scale is fixed: 0 at the centre, 100 on the outer circle
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius * ring / 100:.2f}" fill="none" '
                   f'stroke="#b0b0b0" stroke-opacity="{0.9 if ring == 100 else 0.5}"/>')
        x, y = point(math.pi / n, ring)  # ring values between the first two axes
        out.append(_text(x + 2, y - 2, str(ring), size - 2, "start", ' fill="#555"'))
    for angle, label in zip(angles, panel.categories):
        x, y = point(angle, 100)
        out.append(f'<line x1="{cx:.1f}" y1="{cy:.1f}" x2="{x:.2f}" y2="{y:.2f}" stroke="#b0b0b0" '
                   'stroke-opacity="0.5"/>')
        lx, ly = point(angle, 100 + 1200 / radius)
        cos = math.cos(angle)
        anchor = "start" if cos > 0.2 else "end" if cos < -0.2 else "middle"
        out.append(_text(lx, ly + size * 0.35, label, size, anchor))
    for k, s in enumerate(panel.series):
        colour, dash, marker, _ = mark(s, k)
        points = [point(a, v) if v is not None else None for a, v in zip(angles, map(_shown, s.values))]
        if s.fill and all(p is not None for p in points):
            out.append(f'<polygon points="{" ".join(f"{x:.2f},{y:.2f}" for x, y in points)}" fill="{colour}" '
                       'fill-opacity="0.08"/>')
        out += _polyline(points, colour, closed=True, dash=dash)
        out += [_marker(marker, p[0], p[1], 2.5, colour, f"{s.label}, {c}: {_number(round(v, 2))}")
                for p, c, v in zip(points, panel.categories, map(_shown, s.values)) if p is not None]
    return out


def _reliability(panel: Panel, box) -> list[str]:
    left, top, width, height = box
    ticks = [0, 20, 40, 60, 80, 100]

    def x_of(v):
        return left + width * v / 100

    y_of = _y_scale(box, 0, 108)

    out = _frame(panel, box, ticks, [(x_of(t), str(t)) for t in ticks], span=(0, 108))  # 100-108: room for n=
    for low, high, accuracy, n in panel.bins:
        if not n or _shown(accuracy) is None:  # an empty bin, or one without an accuracy, has no bar
            continue
        middle, bar = (low + high) / 2, (high - low) * 0.9
        out.append(f'<rect x="{x_of(middle - bar / 2):.2f}" y="{y_of(accuracy):.2f}" '
                   f'width="{x_of(bar) - left:.2f}" height="{y_of(0) - y_of(accuracy):.2f}" fill="#4c72b0"/>')
        out.append(_text(x_of(middle), y_of(accuracy) - 3, f"n={n}", panel.tick_size - 2))
    out.append(f'<line x1="{x_of(0):.1f}" y1="{y_of(0):.1f}" x2="{x_of(100):.1f}" y2="{y_of(100):.1f}" '
               'stroke="#888" stroke-dasharray="5,3"/>')
    return out


DRAW = {"bars": _bars, "lines": _lines, "radar": _radar, "reliability": _reliability}
LEGEND_SIZE = 9.0


def svg(chart: Chart) -> str:
    """The chart as a standalone SVG document."""
    body = []
    rows = math.ceil(len(chart.panels) / chart.columns) or 1
    # a right-hand legend widens its column, a legend below lengthens its row (and widens it when it is wider)
    extra_right = [_legend_size(p, LEGEND_SIZE)[0] + 10 if p.legend == "right" else
                   max(0.0, _legend_size(p, LEGEND_SIZE)[0] + 20 - chart.width) if p.legend == "below" else 0
                   for p in chart.panels]
    extra_below = [_legend_size(p, LEGEND_SIZE)[1] + 10 if p.legend == "below" else 0 for p in chart.panels]
    column_widths = [chart.width + max((extra_right[i] for i in range(c, len(chart.panels), chart.columns)),
                                       default=0) for c in range(chart.columns)]
    row_heights = [chart.height + max(extra_below[r * chart.columns:(r + 1) * chart.columns], default=0)
                   for r in range(rows)]
    for index, panel in enumerate(chart.panels):
        row, column = divmod(index, chart.columns)
        x0, y0 = sum(column_widths[:column]), sum(row_heights[:row])
        left, top, right, bottom = _margins(panel)
        width = max(40.0, chart.width - left - right)
        height = max(40.0, chart.height - top - bottom)
        if panel.kind == "radar":
            side = min(width, height)
            left, width = left + (width - side) / 2, side
            top, height = top + (height - side) / 2, side
        box = (x0 + left, y0 + top, width, height)
        body += DRAW[panel.kind](panel, box)
        if panel.legend and panel.series:
            legend_width, _ = _legend_size(panel, LEGEND_SIZE)
            if panel.legend == "right":
                lx, ly = box[0] + width + 10, box[1]
            elif panel.legend == "below":
                lx, ly = x0 + max(10.0, chart.width / 2 - legend_width / 2), box[1] + height + bottom
            else:
                lx, ly = box[0] + width - legend_width - 4, box[1] + 4
            body += _legend(panel, lx, ly, LEGEND_SIZE)
    total_width, total_height = sum(column_widths), sum(row_heights)
    return ("<svg xmlns=\"http://www.w3.org/2000/svg\" "
            f'width="{math.ceil(total_width)}" height="{math.ceil(total_height)}" '
            f'viewBox="0 0 {math.ceil(total_width)} {math.ceil(total_height)}" '
            f'font-family="{xml_text(", ".join(FONTS))}">'
            '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#000" stroke-width="1"/>'
            "</pattern>"
            # the bars of a second and third cycle through the palette (CYCLES)
            '<pattern id="dots" width="5" height="5" patternUnits="userSpaceOnUse">'
            '<circle cx="2.5" cy="2.5" r="1.1" fill="#fff"/></pattern>'
            '<pattern id="cross" width="6" height="6" patternUnits="userSpaceOnUse">'
            '<line x1="0" y1="3" x2="6" y2="3" stroke="#fff"/><line x1="3" y1="0" x2="3" y2="6" stroke="#fff"/>'
            "</pattern>"
            "</defs>"
            f'<rect width="100%" height="100%" fill="white"/>{"".join(body)}</svg>')


def data_uri(chart: Chart) -> str:
    """The chart as a data: URI of an SVG image, for an <img src>."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg(chart).encode("utf-8")).decode("ascii")
