"""Terminal tables (Rich) and the JSON twin of `show`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, fields, is_dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from layerbench.analysis.advice import Advised
from layerbench.analysis.compare import Comparison
from layerbench.analysis.overhead import BYTE_METRICS, UNITS, CellResult
from layerbench.analysis.ratio_table import RatioTable
from layerbench.analysis.remote import AddedLatency
from layerbench.analysis.scaling import Scaling
from layerbench.analysis.verdicts import EQUIVALENT, FASTER, LEGEND, MARKS, SLOWER, bounds_text, legend, shown
from layerbench.records.checks import MEANINGS
from layerbench.report.view import CellOptions, RunComparison, RunView, TrialState
from layerbench.store.db import RefusedRow
from layerbench.store.read import StoredCell

if TYPE_CHECKING:
    import pandas as pd

    from layerbench.records.run import RunRow


def fmt_value(r: CellResult, mark_single: bool = False) -> str:
    """``86.2k ±3% ×0.99``: mean, CI half-width (n ≥ 2), ratio to the baseline.

    ``mark_single`` says ``n=1`` where a cell has no interval while others do,
    so a missing ± is not read as a precise number.
    """
    s = r.summary
    if s.n == 0:
        return f"[red]failed ({r.failure})[/]" if r.failed else "[dim]—[/]"
    text = _si(s.mean / 2**20 if r.metric in BYTE_METRICS else s.mean)
    if s.n >= 2 and math.isfinite(s.ci_halfwidth_pct):
        text += f" [dim]±{s.ci_halfwidth_pct:.0f}%[/]"
    elif s.n == 1 and mark_single:
        text += " [dim]n=1[/]"
    if r.is_baseline:
        text += " [dim]base[/]"
    elif r.ratio.ratio == r.ratio.ratio:
        style = VERDICT_STYLE.get(r.verdict, "dim")
        text += f" [{style}]×{r.ratio.ratio:.2f}{MARKS.get(r.verdict, '')}[/]"
    if r.failed:
        text += f" [red]+{r.failed} failed[/]"
    if r.flags:
        text += " [yellow]⚑[/]"
    return text


VERDICT_STYLE = {SLOWER: "bold red", FASTER: "bold green", EQUIVALENT: "bold"}  # undecided: dim
RATIO_CAPTION = "×: ratio to the baseline, paired by round (the findings' interval and verdict); "


def _si(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e4:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}"


# More workloads than this and the table turns: one row per workload, one column per stack.
WIDE = 6


def results_table(results: list[CellResult], title: str = "", sequential: bool = False) -> Table:
    """``sequential``: a budget run's, whose verdicts its legend reads off their intervals."""
    caption = RATIO_CAPTION + legend(sequential)
    if len({r.workload for r in results}) > WIDE:
        return _by_workload(results, title, caption)
    return _by_stack(results, title, caption)


def _by_workload(results: list[CellResult], title: str, caption: str) -> Table:
    stacks = list(dict.fromkeys(r.stack_label for r in results))
    table = Table(title=title or None, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("workload", style="cyan", no_wrap=True)
    one_device = len({s.split("/", 1)[0] for s in stacks}) == 1
    for s in stacks:
        label = s.split("/", 1)[1] if one_device else s
        table.add_column(escape(label.replace("/", "/\n")), justify="right")
    grid = {(r.workload, r.stack_label): r for r in results}
    for w in dict.fromkeys(r.workload for r in results):
        unit = next(UNITS[r.metric] for r in results if r.workload == w)
        table.add_row(f"{w} [dim]{unit}[/]", *[fmt_value(grid[(w, s)]) if (w, s) in grid else "" for s in stacks])
    return table


def _by_stack(results: list[CellResult], title: str, caption: str) -> Table:
    workloads = list(dict.fromkeys(r.workload for r in results))
    metric = {r.workload: r.metric for r in results}
    most = max((r.summary.n for r in results), default=0)
    caption += "; ±: CI half-width of the mean" if most >= 2 else "; one trial per cell, no CI"
    table = Table(title=title or None, caption=caption, title_justify="left", caption_justify="left")
    table.add_column("stack: device/fs/engine/placement", style="cyan", no_wrap=True)
    for w in workloads:
        table.add_column(f"{w} {UNITS[metric[w]]}", justify="right", no_wrap=True)
    devices = {r.stack_label.split("/", 1)[0] for r in results}
    one_device = len(devices) == 1
    if one_device:
        table.columns[0].header = f"{devices.pop()} device: fs/engine/placement"
    for stack in dict.fromkeys(r.stack_label for r in results):
        row = {r.workload: fmt_value(r, mark_single=most >= 2) for r in results if r.stack_label == stack}
        label = stack.split("/", 1)[1] if one_device else stack
        table.add_row(escape(label), *[row.get(w, "") for w in workloads])
    return table


def flag_lines(results: list[CellResult], run_id: str) -> list[str]:
    """The first screen's flags: one line per kind, with how many cells it touched and what it means; each
    cell's own detail is for `show --checks` and the report (an explanation per cell flooded the screen)."""
    cells: dict[str, list[str]] = {}
    for r in results:
        for f in r.flags:
            cells.setdefault(f.name, []).append(f"{r.stack_label} · {r.workload}")
    if not cells:
        return []
    width = max(map(len, cells))
    flagged = sum(1 for r in results if r.flags)
    # One line on an 80-column terminal: `make run`'s whole summary fits in 40 (tests/unit/test_first_screen.py).
    lines = [f"⚑ flags in {flagged} of {len(results)} cells (detail: show {run_id} --checks)"]
    for name, where in sorted(cells.items(), key=lambda kv: -len(kv[1])):
        count = f"{len(where):>3} {'cell ' if len(where) == 1 else 'cells'}"
        lines.append(f"  {name:<{width}}  {count}  {MEANINGS.get(name, 'see --checks')}")
    return lines


def flags_table(results: list[CellResult]) -> Table | None:
    """Every flag with its plain-language explanation: why not to trust a number."""
    # Labels carry limits in brackets ([cpus=1.5]): text, not Rich markup.
    rows = [(escape(f"{r.stack_label} · {r.workload}"), f.name, escape(f.detail)) for r in results for f in r.flags]
    if not rows:
        return None
    table = Table("cell", "check", "what it means", title="⚑ flags", title_justify="left", show_lines=True)
    for row in rows:
        table.add_row(*row)
    return table


def limits_table(rows: list[dict[str, str]]) -> Table:
    table = Table("stack", "limit-applied", "read back from the cgroup", title="limits", title_justify="left")
    for r in rows:
        table.add_row(escape(r["cell"]), r["status"], escape(r["detail"]))
    return table


def job_options_table(cells: Sequence[CellOptions]) -> Table:
    """Per job file's cell, each option its workload gave fio as fio's command line gives one, the jobs that
    took it and those whose own value in the file won."""
    table = Table(
        "cell", "option", "applied to", "the file's own in", title="job files: what the workload gave fio",
        title_justify="left",
    )  # fmt: skip
    for c in cells:
        for i, o in enumerate(c.options):
            table.add_row(
                escape(c.label) if i == 0 else "", escape(f"{o.option}={o.value}"),
                escape(", ".join(o.applied) or "—"), escape(", ".join(o.overridden) or "—"),
            )  # fmt: skip
    return table


def job_options_json(cells: Sequence[CellOptions]) -> list[dict[str, Any]]:
    return [{"cell_id": c.cell_id, "label": c.label, "options": [o.to_json() for o in c.options]} for c in cells]


def cluster_states_table(states: Sequence[TrialState]) -> Table:
    """Each trial on a cluster layerbench built: the cluster's state as it began, and a verify read-back's word."""
    table = Table("cell", "#", "status", "cluster as the trial began", "read back", title="cluster state",
                  title_justify="left")  # fmt: skip
    for s in states:
        table.add_row(escape(s.label), str(s.repetition), s.status, escape(s.note), escape(s.verified or "—"))
    return table


def cluster_states_json(states: Sequence[TrialState]) -> list[dict[str, Any]]:
    return [plain(s) for s in states]


def refused_table(refused: Sequence[RefusedRow]) -> Table:
    table = Table("refused stack", "reason", title="refused before running", title_justify="left")
    for label in dict.fromkeys((r.label.split(" · ")[0], r.reason) for r in refused):
        table.add_row(*label)
    return table


def scaling_tables(scalings: list[Scaling]) -> list[Table]:
    """Seed 000's scaling, one table per group: per instance count, aggregate throughput, p99, what the host gave;
    the verdict (peak, and what saturated first: CPU or device ≥ 90%, memory ≥ 95% of the limit) below."""
    tables = []
    for sc in scalings:
        table = Table(
            f"{sc.counted}s", "aggregate ops/s", "p99 ms", "CPU %", "iowait %", "device %", "mem % of limit",
            title=f"scaling · {sc.group} · {sc.workload}", caption=sc.verdict(),
        )  # fmt: skip
        for pt in sc.points:
            u, t = pt.usage, pt.throughput
            ci = f" ±{t.ci_halfwidth_pct:.0f}%" if t.n > 1 else ""
            peak = " [green]peak[/]" if pt.instances == sc.peak else ""
            memory = "—" if u.memory != u.memory else f"{100 * u.memory:.0f}"
            table.add_row(
                f"{pt.instances}{peak}", f"{_si(t.mean)}{ci}", f"{pt.p99_us / 1000:.2f}",
                f"{u.cpu_busy:.0f}", f"{u.iowait:.0f}", f"{u.disk_util:.0f}", memory,
            )  # fmt: skip
        tables.append(table)
    return tables


def clients_table(rows: pd.DataFrame) -> Table:
    """Many clients per cell (docs/how-to/many-clients.md): each client's mean IOPS and MiB/s (fio) or ops/s (a
    database client), each database instance's where there are several, the cell's total, and how far apart the
    clients started and finished (mean over trials)."""
    table = Table("stack", "workload", "client", "IOPS or ops/s", "MiB/s", "start spread ms", "finish spread ms",
                  title="clients", title_justify="left")  # fmt: skip
    for r in rows.itertuples(index=False):
        total = r.client == "all"
        spread = (f"{r.start_spread_ms:.0f}", f"{r.finish_spread_ms:.0f}") if total else ("", "")
        name = "[bold]all[/]" if total else f"[bold]{r.client}[/]" if "c" not in r.client else r.client
        name += f" on {r.node}" if r.node else ""
        database = r.ops == r.ops  # not NaN: a database client's ops/s
        rate, mib = (_si(r.ops), "") if database else (_si(r.iops), f"{r.bw_bytes / 2**20:.1f}")
        table.add_row(r.stack, r.workload, name, rate, mib, *spread)
    return table


def scaling_json(scalings: list[Scaling]) -> list[dict[str, Any]]:
    return [
        plain(
            {
                "group": sc.group,
                "workload": sc.workload,
                "peak_instances": sc.peak,
                "within_noise_of_peak": list(sc.ties),
                "saturated_first_at": sc.saturated,
                "bottleneck": sc.bottleneck,
                "verdict": sc.verdict(),
                "points": [asdict(pt) for pt in sc.points],
            }
        )
        for sc in scalings
    ]


def remote_latency_table(rows: Sequence[AddedLatency]) -> Table:
    """Seed 000's Fig. 4 as numbers: mean latency at QD1, local and remote, and what the remote path adds."""
    table = Table(
        "remote stack", "workload", "local slat/clat µs", "remote slat/clat µs", "added µs", "of it clat",
        title="what the remote device adds per I/O at queue depth 1 (means over trials)",
        caption="added = remote − local total latency (slat + clat); local: the same stack on the local device",
    )  # fmt: skip
    for r in rows:
        local, remote = r.local_us, r.remote_us
        table.add_row(
            r.stack_label, f"{r.workload} ({r.direction})",
            f"{_us(local['slat'])} / {_us(local['clat'])}", f"{_us(remote['slat'])} / {_us(remote['clat'])}",
            f"{r.added_us('lat'):+.1f} ({r.added_us('lat') / local['lat']:+.0%})", _pct(r.clat_share()),
        )  # fmt: skip
    return table


def _us(v: float) -> str:
    return "—" if v != v else f"{v:.1f}"


def _pct(v: float) -> str:
    return "—" if v != v else f"{v:.0%}"


def remote_latency_json(rows: Sequence[AddedLatency]) -> list[dict[str, Any]]:
    return [
        plain(r) | {"added_us": plain({k: r.added_us(k) for k in r.local_us}), "clat_share": plain(r.clat_share())}
        for r in rows
    ]


def run_json(run: RunRow) -> dict[str, Any]:
    """A run as `show --json` gives it under "run", without its spec (the runs list of `serve` shows this)."""
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "host": run.host,
    }


def show_json(v: RunView) -> dict[str, Any]:
    """The same content as the tables, with NaN as null so strict JSON parsers accept it."""
    return {
        "run": {**run_json(v.data.run), "spec": v.data.run.spec},
        "cells": [plain(r) for r in v.results],
        "refused": [{"label": r.label, "reason": r.reason} for r in v.data.refused],
        "limits": v.limits,
        "job_options": job_options_json(v.job_options),
        "cluster_states": cluster_states_json(v.cluster_states),
        "latency_ns": _records(v.fio_latency),
        "client_latency_us": _records(v.client_latency),
        "scaling": scaling_json(v.scalings),
        "clients": [plain(r) for r in v.clients.to_dict("records")],
        "remote_latency": remote_latency_json(v.remote_latency),
        "findings": [plain(f) | {"change_pct": plain(f.change_pct)} for f in v.findings],
        "advice": advice_json(v.advice),
        "cpu_per_io": [plain(k) for k in v.cpu_per_io],
        "decisions": decisions_json(v),
    }


def decisions_json(v: RunView) -> dict[str, Any] | None:
    """The run's decided count and, per open comparison, what would decide it (None for a run without comparisons)."""
    if v.decided is None:
        return None
    return {
        "decided": v.decided.decided,
        "total": v.decided.total,
        "open": [plain(o) | {"advice": o.advice()} for o in v.decided.open],
    }


def advice_json(a: Advised) -> dict[str, Any]:
    return {"advice": [plain(x) for x in a.advice], "undecided": a.undecided, "chance": a.chance}


UNDECIDED_SHOWN = 10


def advice_lines(a: Advised) -> list[str]:
    """Numbered recommendations, each with its confidence and its evidence indented beneath it."""
    out = []
    advised = [x for x in a.advice if not x.measure]
    for i, x in enumerate(advised, 1):
        out.append(f"{i}. {x.text}. [{x.confidence} confidence]")
        out += [f"     - {e}" for e in x.evidence]
    if not advised:
        out.append("No advice: no layer differed significantly and materially from the one beneath it.")
    suggested = [x for x in a.advice if x.measure]
    if suggested:
        out.append("To measure next (a recommendation needs a comparison this run did not make):")
        for x in suggested:
            out.append(f"   - {x.text}.")
            out += [f"     - {e}" for e in x.evidence]
    if a.undecided:
        out.append(f"What this run cannot decide ({len(a.undecided)}):")
        out += [f"     - {u}" for u in a.undecided[:UNDECIDED_SHOWN]]
        if len(a.undecided) > UNDECIDED_SHOWN:
            out.append(f"     ... {len(a.undecided) - UNDECIDED_SHOWN} more (advise --json lists them all)")
    if a.chance:
        out.append(
            f"Not acted on: {len(a.chance)} material difference(s) no more than this run's many comparisons give by"
            " chance (p below 5% alone, q not once corrected over them); rerun those cells to tell:"
        )
        out += [f"     - {c}" for c in a.chance]
    return out


def _records(table: pd.DataFrame | None) -> list[dict[str, Any]]:
    return table.to_dict("records") if table is not None else []


def comparison_json(c: RunComparison) -> dict[str, Any]:
    return {
        "a": c.a,
        "b": c.b,
        "environment_differences": c.environment_differences,
        "cells": [plain(r) for r in c.cells],
    }


def plain(obj: Any) -> Any:
    """A dataclass (or dict, list) as JSON-ready values, NaN as null so strict parsers accept it; in one
    pass, without asdict's deep copies and a second pass: 0.3 s of show --json's 10,500 cells. Each type is
    asked once whether it is a dataclass (is_dataclass on each of 470,000 values was 0.4 s)."""
    kind = type(obj)
    if kind is float:
        return None if obj != obj or obj in (math.inf, -math.inf) else obj  # no interval yet: null, as NaN
    if kind in _AS_IS:
        return obj
    names = _field_names(kind)
    if names is not None:
        return {name: plain(getattr(obj, name)) for name in names}
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, float) and obj != obj:
        return None
    return obj


_AS_IS = frozenset({str, int, bool, type(None)})


@cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """A dataclass's fields; None for any other type (a class itself is no dataclass instance)."""
    return tuple(f.name for f in fields(cls)) if is_dataclass(cls) and not issubclass(cls, type) else None


def comparison_table(rows: Sequence[Comparison], run_a: str, run_b: str) -> Table:
    """Per common cell: B/A with its interval and verdict (corrected over the cells compared); red where B is
    named slower, green where faster."""
    table = Table(
        "cell", "n (A, B)", f"{run_b} / {run_a}", "95% CI", "q", "verdict",
        title="comparison", title_justify="left", caption=LEGEND, caption_justify="left",
    )  # fmt: skip
    for r in rows:
        q = r.ratio
        style = VERDICT_STYLE.get(r.verdict, "")
        ratio_text = f"[{style}]×{q.ratio:.3f}[/]" if style else f"×{q.ratio:.3f}"
        ci = bounds_text(q.ci_low, q.ci_high, 3, "–") if q.ci_low == q.ci_low else (r.note or "n<2")
        p = f"{r.q_value:.3g}" if r.q_value == r.q_value else "—"
        said = shown(r.verdict, q, note=r.note).split(" (")[0] if q.ratio == q.ratio else "—"
        table.add_row(r.label, f"{r.n_a}, {r.n_b}", ratio_text, ci, p, said)
    return table


def latency_table(pct: pd.DataFrame, cells: Sequence[StoredCell]) -> Table:
    """p50/p99/p99.9 completion latency (µs) per cell and direction, from merged histograms."""
    label = {c.cell_id: c.label for c in cells}
    table = Table(
        "cell",
        "dir",
        "trials",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        title="completion latency (fio histograms merged over jobs and trials)",
        title_justify="left",
    )
    for row in pct.to_dict("records") if not pct.empty else []:
        table.add_row(
            label.get(row["cell_id"], row["cell_id"]),
            row["direction"],
            str(row["trials"]),
            *(f"{row.get(p, float('nan')) / 1000:,.0f}" for p in ("p50", "p99", "p99.9")),
        )
    return table


# Seed 001's set: the tail, up to the worst operation.
CLIENT_COLUMNS = ("p50", "p90", "p99", "p99.9", "max")


def client_latency_table(pct: pd.DataFrame, cells: Sequence[StoredCell]) -> Table:
    """Database clients' latency (ms) per cell and operation, from their histograms merged over
    instances and trials."""
    label = {c.cell_id: c.label for c in cells}
    table = Table(
        "cell", "operation", "trials", "operations", *(f"{c} ms" for c in CLIENT_COLUMNS),
        title="client latency (histograms of every instance's client, merged over trials)",
        title_justify="left",
    )  # fmt: skip
    for row in pct.to_dict("records"):
        table.add_row(
            label.get(row["cell_id"], row["cell_id"]), row["operation"], str(row["trials"]), _si(row["operations"]),
            *(f"{row[p] / 1000:,.2f}" for p in CLIENT_COLUMNS),
        )  # fmt: skip
    return table


def ratio_table_render(table: RatioTable, title: str) -> Table:
    """Rows: operations and personalities; columns: layers; cells: ratio to the baseline (geometric mean)."""
    out = Table("operation", *table.columns, title=title, title_justify="left")
    for row in table.rows:
        cells = []
        for col in table.columns:
            value = table.values.get((row, col))
            n = table.points.get((row, col), 0)
            text = "" if value is None else f"×{value:.2f}" + (f" [dim](gm of {n})[/]" if n > 1 else "")
            style = "red" if value is not None and value < 0.9 else ("yellow" if value and value > 1.1 else "")
            cells.append(f"[{style}]{text}[/]" if style and text else text)
        out.add_row(row, *cells)
    return out
