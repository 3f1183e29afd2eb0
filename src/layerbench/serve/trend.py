"""The history's trend figure as geometry for an inline SVG: each run's ratio on a log scale with its interval,
the material band around 1, and a mark where the verdict changed.

Drawn by a template rather than matplotlib: a handful of points, in milliseconds and a few kB, every text
escaped by the page's own autoescaping.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass

from layerbench.analysis.verdicts import MATERIAL, bounds_text
from layerbench.serve.history import Point

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 20, 60  # margins: the y axis' labels, the x axis' run labels
TICKS = (0.1, 0.2, 0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 10.0)
TICK_GAP = 16  # pixels between two ticks' labels


@dataclass(frozen=True)
class Mark:
    x: float
    y: float
    low: float | None  # the interval's ends, in pixels; None without an interval
    high: float | None
    verdict: str
    changed: bool
    label: str  # under the axis: the run's start (month, day, time)
    title: str  # on hover: the run, its ratio and interval, its verdict


@dataclass(frozen=True)
class Trend:
    width: int
    height: int
    left: int
    right: int  # the plot's right edge, in pixels
    top: int
    bottom: int  # the plot's bottom edge
    marks: list[Mark]
    ticks: list[tuple[float, str]]  # (y, label)
    one: float  # y of a ratio of 1
    band: tuple[float, float]  # y of 1 + MATERIAL and of 1 / (1 + MATERIAL)


def trend(points: list[Point]) -> Trend | None:
    """None where no point has a ratio to draw."""
    drawn = [p for p in points if _finite(p.ratio.ratio)]
    if not drawn:
        return None
    values = [v for p in drawn for v in (p.ratio.ratio, p.ratio.ci_low, p.ratio.ci_high) if _finite(v)]
    low = math.log(min([*values, 1 / (1 + 2 * MATERIAL)]))
    high = math.log(max([*values, 1 + 2 * MATERIAL]))
    pad = (high - low) * 0.08
    low, high = low - pad, high + pad
    plot_h, plot_w = HEIGHT - TOP - BOTTOM, WIDTH - LEFT - RIGHT

    def y(v: float) -> float:
        return round(TOP + (high - math.log(v)) / (high - low) * plot_h, 1)

    step = plot_w / len(drawn)
    marks = [_mark(p, round(LEFT + (i + 0.5) * step, 1), y) for i, p in enumerate(drawn)]
    ticks: list[tuple[float, str]] = []
    for t in sorted((t for t in TICKS if low <= math.log(t) <= high), key=lambda t: abs(math.log(t))):
        if all(abs(y(t) - at) >= TICK_GAP for at, _ in ticks):  # from 1 outwards, none on top of another
            ticks.append((y(t), f"×{t:g}"))
    return Trend(WIDTH, HEIGHT, LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM, marks, ticks, y(1.0),
                 (y(1 + MATERIAL), y(1 / (1 + MATERIAL))))  # fmt: skip


def _mark(p: Point, x: float, y: Callable[[float], float]) -> Mark:
    r = p.ratio
    has_ci = _finite(r.ci_low) and _finite(r.ci_high)
    ci = f" [{bounds_text(r.ci_low, r.ci_high, sep='–')}]" if has_ci else ""
    day = dt.datetime.fromtimestamp(p.run.started_at, dt.UTC).strftime("%Y-%m-%d %H:%M")
    title = f"run {p.run.id} ({p.run.name}, {day} UTC): ×{r.ratio:.2f}{ci}, {p.verdict}"
    return Mark(x, y(r.ratio), y(r.ci_low) if has_ci else None, y(r.ci_high) if has_ci else None,
                p.verdict, p.changed, day[5:], title)  # fmt: skip


def _finite(v: float) -> bool:
    return v == v and not math.isinf(v) and v > 0
