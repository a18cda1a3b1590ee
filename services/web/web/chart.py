"""A bar chart as server-rendered SVG (no script, no style attribute: the CSP holds).

Each chart has its data table beside it on the page: the SVG carries a title saying
so, each bar a title with its exact amount, and the table is the accessible and
printable form of the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 260, 90, 40, 16
COLOURS = ("#1f5fa8", "#b3541e", "#2e7d32", "#6a1b9a")  # 4.5:1 or more against white


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    label: str


@dataclass(frozen=True)
class BarChart:
    bars: list[Bar]
    x_labels: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    legend: list[tuple[str, str]]
    width: int = WIDTH
    height: int = HEIGHT


def bar_chart(
    categories: list[str],
    series: dict[str, list[Decimal]],
    *,
    category_label: dict[str, str],
    value_label: Callable[[Decimal], str],
    tick_label: Callable[[Decimal], str] | None = None,
) -> BarChart:
    """Grouped bars: one group per category (month), one bar per series (jurisdiction)."""
    values = [v for vs in series.values() for v in vs]
    top = max(values, default=Decimal(0))
    top = top if top > 0 else Decimal(1)
    plot_w, plot_h = WIDTH - LEFT - 10, HEIGHT - BOTTOM - TOP
    group = plot_w / max(len(categories), 1)
    bar_w = group * 0.8 / max(len(series), 1)
    bars: list[Bar] = []
    fmt = value_label
    tick = tick_label or value_label
    for s_index, (name, vs) in enumerate(series.items()):
        for c_index, value in enumerate(vs):
            h = float(value / top) * plot_h
            x = LEFT + c_index * group + group * 0.1 + s_index * bar_w
            bars.append(
                Bar(
                    x,
                    TOP + plot_h - h,
                    bar_w,
                    h,
                    COLOURS[s_index % len(COLOURS)],
                    f"{name} {categories[c_index]}: {fmt(value)}",
                )
            )
    x_labels = [(LEFT + i * group + group / 2, category_label.get(c, c)) for i, c in enumerate(categories)]
    y_ticks = [(TOP + plot_h - plot_h * i / 4, tick(top * i / 4)) for i in range(5)]
    legend = [(name, COLOURS[i % len(COLOURS)]) for i, name in enumerate(series)]
    return BarChart(bars, x_labels, y_ticks, legend)
