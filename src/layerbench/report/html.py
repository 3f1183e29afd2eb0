"""The self-contained HTML report: one file, figures inlined as SVG, no CDN."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
import yaml
from markupsafe import Markup, escape

from layerbench.analysis import explain, flame
from layerbench.analysis.overhead import BYTE_METRICS, UNITS, CellResult
from layerbench.analysis.verdicts import FASTER, MARKS, SLOWER, bounds_text
from layerbench.core.version import VERSION
from layerbench.report import flamegraph
from layerbench.report.view import RunView


@dataclass(frozen=True)
class Figure:
    name: str
    caption: str
    svg: str


@dataclass(frozen=True)
class Drawn:
    """A figure as the report writes it: its SVG (inlined and written) and its PNG."""

    name: str
    caption: str
    svg: str
    png: bytes


# Each figure: its name, the function that draws it (module.function: matplotlib is imported only to draw),
# what it draws (_inputs) and its caption.
FIGURES = (
    (
        "normalized",
        "figures.normalized_bars",
        "results",
        "Each stack relative to the baseline, per workload (log scale; error bars: 95% CI of the ratio).",
    ),
    (
        "latency-breakdown",
        "figures.latency_breakdown",
        "frame",
        "Mean submission (slat) and completion (clat) latency: where the time goes, as in the paper's Fig. 4.",
    ),
    (
        "surfaces",
        "figures.surfaces",
        "surfaces",
        "Ratio to the baseline over file size x record size, per operation and layer (seed 004's surfaces).",
    ),
    (
        "percentiles",
        "figures.percentile_profile",
        "percentiles",
        "Completion-latency percentiles per cell, from fio's histograms merged over jobs and trials (log scale).",
    ),
    (
        "qd-jobs-heatmap",
        "sweep_figures.qd_jobs_heatmaps",
        "heatmap",
        "IOPS and p99 completion latency over queue depth x job count, per swept workload and stack (IOPS of all "
        "jobs, mean over trials; p99 of the slower direction, from fio's histograms merged over trials).",
    ),
    (
        "bandwidth-block-size",
        "sweep_figures.bandwidth_by_block_size",
        "bandwidth",
        "Bandwidth against block size, per swept workload and stack (mean over trials; bars: lowest and highest).",
    ),
    (
        "latency-over-time",
        "sweep_figures.latency_over_time",
        "timelines",
        "Mean latency per interval over each cell's first trial, from fio's latency log (write_lat_log with "
        "log_avg_msec): what the trial's mean hides, such as a cache filling or a device's write cliff.",
    ),
    (
        "recovery-over-time",
        "cluster_figures.recovery_over_time",
        "recovery",
        "Each Ceph cell's first trial: fio's mean latency per interval (latency_log: true) above; the cluster's "
        "degraded objects and recovery rate below (`ceph status` every 5 s). Both clocks start with the trial, "
        "within a second of each other.",
    ),
    (
        "scaling",
        "figures.scaling_curves",
        "scaling",
        "Database instances at once (seed 000's Fig. 6-7): aggregate throughput (95% CI) and p99 latency of all "
        "clients merged, and what the host gave; the dotted line marks the peak.",
    ),
)


# Figures draw this many workloads unless told otherwise: each is a panel or a group of bars, and matplotlib
# took 120 s to lay out a 500-point sweep's (the tables still show every cell).
FIGURE_WORKLOADS = 12


def render(
    v: RunView,
    out_dir: Path,
    workloads: int | None = FIGURE_WORKLOADS,
    draw: Callable[[RunView, int | None], list[Drawn]] | None = None,
) -> Path:
    """Write report.html and every figure as PNG and SVG into ``out_dir``; return the HTML path.
    ``workloads``: how many of the run's workloads (the first, in its order) the figures draw; None for all.
    ``draw``: how the figures are had (the CLI's reads them from the run's cache); ``drawn`` without."""
    out_dir.mkdir(parents=True, exist_ok=True)
    made = (draw or drawn)(v, workloads)
    for d in made:
        (out_dir / "figures").mkdir(parents=True, exist_ok=True)
        (out_dir / "figures" / f"{d.name}.png").write_bytes(d.png)
        (out_dir / "figures" / f"{d.name}.svg").write_text(d.svg, encoding="utf-8")
    path = out_dir / "report.html"
    path.write_text(page(v, made, workloads))
    return path


def page(
    v: RunView,
    made: list[Drawn],
    workloads: int | None = FIGURE_WORKLOADS,
    template: jinja2.Template | None = None,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """The report's page of ``v`` with the figures ``made`` inlined: what `report --html` writes, and what
    `layerbench serve` sends for the run (``template``: its page, which extends this one's; ``extra``: what
    that page adds to the report's context)."""
    every = list(dict.fromkeys(r.workload for r in v.results))
    shown = len(every[:workloads] if workloads is not None else every)
    figs = [Figure(d.name, d.caption, _strip_xml_header(d.svg)) for d in made]
    context = _context(v, figs) | {"figures_left_out": left_out(len(every), shown)} | dict(extra or {})
    return (template or _template()).render(**context)


def drawn(v: RunView, workloads: int | None = FIGURE_WORKLOADS) -> list[Drawn]:
    """Every figure the run has, drawing the first ``workloads`` of its workloads (None: all)."""
    import matplotlib.pyplot as plt  # here: 0.3-0.5 s to import, and a report whose figures are cached never draws

    from layerbench.report import cluster_figures, figures, sweep_figures

    modules = {"figures": figures, "sweep_figures": sweep_figures, "cluster_figures": cluster_figures}
    every = list(dict.fromkeys(r.workload for r in v.results))
    shown = set(every[:workloads] if workloads is not None else every)
    inputs = _inputs(v, shown)  # once: each filters the run's million samples
    out = []
    for name, function, source, caption in FIGURES:
        module, attribute = function.split(".")
        fig = getattr(modules[module], attribute)(*inputs[source])
        if fig is None:
            continue
        svg, png = io.StringIO(), io.BytesIO()
        fig.savefig(svg, format="svg", bbox_inches="tight")
        fig.savefig(png, format="png", bbox_inches="tight")
        plt.close(fig)
        out.append(Drawn(name, caption, svg.getvalue(), png.getvalue()))
    return out


def _inputs(v: RunView, shown: set[str]) -> dict[str, tuple[Any, ...]]:
    """What each figure draws, cut to the workloads ``shown``."""
    samples = v.data.samples
    cells = {c.cell_id for c in v.data.cells if c.workload in shown}
    pct = v.fio_latency if v.fio_latency is not None else pd.DataFrame()
    return {
        "results": ([r for r in v.results if r.workload in shown],),
        "frame": (samples[samples["workload"].isin(shown)] if not samples.empty else samples,),
        "percentiles": (pct[pct["cell_id"].isin(cells)] if not pct.empty else pct, v.data.cells),
        "surfaces": (v.results, v.data.cells, v.points),  # panels per operation and layer: not per workload
        "scaling": (v.scalings,),
        # Sweeps are drawn whole (one panel per workload and stack, not per point), as surfaces are.
        "heatmap": (samples, pct, v.data.cells),
        "bandwidth": (samples, v.data.cells),
        "timelines": (tuple(t for t in v.data.timelines if t.cell_id in cells), v.data.cells),
        "recovery": (_of_cells(v.data.monitor, cells), v.data.timelines, v.data.cells),
    }


def _of_cells(frame: pd.DataFrame, cells: set[str]) -> pd.DataFrame:
    return frame[frame["cell_id"].isin(cells)] if not frame.empty else frame


def left_out(total: int, shown: int) -> str | None:
    """What the report says when its figures leave workloads out, and how to have them all."""
    if shown >= total:
        return None
    return (
        f"The figures draw the first {shown} of the run's {total} workloads (the tables above have them all); "
        "layerbench report RUN --html DIR --figures all draws every one, slowly (minutes for hundreds), "
        "and --figures N the first N."
    )


def _context(v: RunView, figs: list[Figure]) -> dict[str, Any]:
    run, results = v.data.run, v.results
    label = {c.cell_id: c.label for c in v.data.cells}
    return {
        "run": run,
        "started": dt.datetime.fromtimestamp(run.started_at).strftime("%Y-%m-%d %H:%M"),
        "n_ok": sum(r.summary.n for r in results),
        "n_failed": sum(r.failed for r in results),
        "workloads": list(dict.fromkeys(r.workload for r in results)),
        "stacks": list(dict.fromkeys(r.stack_label for r in results)),
        "units": {r.workload: UNITS[r.metric] for r in results},
        "grid": {(r.stack_label, r.workload): r for r in results},
        "fmt": cell_html,
        "figures": figs,
        "flags": [(f"{r.stack_label} · {r.workload}", f) for r in results for f in r.flags],
        "ratios": v.ratios,
        "refused": v.data.refused,
        "job_options": v.job_options,
        "cluster_states": v.cluster_states,
        "scalings": v.scalings,
        "remote_latency": v.remote_latency,
        "findings": v.finding_lines,
        "advice": v.advice,
        "profiles": _profiles(v),
        "cpu_per_io": [(label[k.cell_id], k) for k in v.cpu_per_io],
        "client_latency": [
            {**row, "label": label.get(row["cell_id"], row["cell_id"])} for row in v.client_latency.to_dict("records")
        ],
        "host": _host(run.host),
        "spec_yaml": yaml.safe_dump(run.spec, sort_keys=False),
        "version": VERSION,
    }


@dataclass(frozen=True)
class ProfileFigure:
    title: str
    svg: Markup
    lines: list[str]  # what grew, in plain words (differential graphs)
    frames: list[flame.FrameGrowth] = field(default_factory=list)  # the frames whose share grew most


TOP_FRAMES = 10


def _profiles(v: RunView) -> dict[str, Any]:
    """The profiled run's graphs: a differential one per finding whose cells were both profiled (coloured by
    growth against the layer beneath), then each cell's own; and each cell's costs per I/O."""
    if not v.data.profiles:
        return {}
    label = {c.cell_id: c.label for c in v.data.cells}
    profiles = v.data.profiles
    shown = {c.cell_id: explain.profile_of(profiles[c.cell_id]) for c in v.data.cells if c.cell_id in profiles}
    pairs, drawn = [], set()
    for p in v.profiled:
        if (p.subject, p.reference) in drawn:
            continue  # IOzone's operations share their cells' profiles: one graph per pair of cells
        drawn.add((p.subject, p.reference))
        base, other = shown[p.reference], shown[p.subject]
        grown = [g for g in flame.diff(base, other) if g.points > 0][:TOP_FRAMES]
        title = f"{p.finding.subject} against {p.finding.reference} · {p.finding.workload.split(' ')[0]}"
        pairs.append(ProfileFigure(title, Markup(flamegraph.svg(other, label[p.subject], base=base)), p.lines, grown))
    cells = [ProfileFigure(label[cid], Markup(flamegraph.svg(prof, label[cid])), []) for cid, prof in shown.items()]
    counters = [(label[k.cell_id], k) for k in v.counters]
    return {"pairs": pairs, "cells": cells, "counters": counters, "categorize": flame.categorize}


def cell_html(r: CellResult) -> Markup:
    s, q = r.summary, r.ratio
    value = s.mean / 2**20 if r.metric in BYTE_METRICS else s.mean
    parts = [f"{value:,.0f}"]
    if s.n >= 2:
        parts.append(f'<span class="ci">±{s.ci_halfwidth_pct:.1f}%</span>')
    if r.is_baseline:
        parts.append('<span class="base">baseline</span>')
    elif q.ratio == q.ratio:
        cls = {SLOWER: "bad", FASTER: "good"}.get(r.verdict, "")
        ci = f' <span class="ci">[{bounds_text(q.ci_low, q.ci_high, sep="–")}]</span>' if q.ci_low == q.ci_low else ""
        parts.append(f'<span class="{cls}" title="{r.verdict}">×{q.ratio:.2f}{MARKS.get(r.verdict, "")}</span>{ci}')
    if r.flags:
        names = ", ".join(str(escape(f.name)) for f in r.flags)
        parts.append(f'<span class="flag" title="{names}">⚑</span>')
    if r.failed:
        parts.append(f'<span class="failed">+{r.failed} failed</span>')
    return Markup(" ".join(parts))


def _host(host: dict[str, Any]) -> dict[str, str]:
    flat = {k: v for k, v in host.items() if k != "tools"}
    flat.update({f"tool {k}": v for k, v in (host.get("tools") or {}).items() if v})
    return {k: str(v) for k, v in flat.items()}


def _strip_xml_header(svg: str) -> str:
    return svg[svg.index("<svg") :]


TEMPLATES = jinja2.PackageLoader("layerbench.report", "templates")  # serve's pages extend report.html.j2


def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=TEMPLATES, autoescape=jinja2.select_autoescape(["html", "j2"]))
    return env.get_template("report.html.j2")
