"""Terminal tables (Rich) and the JSON twin of `show`."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from rich.table import Table

from layerbench.analysis.overhead import CellResult

UNITS = {"iops": "IOPS", "bw": "MiB/s"}


def fmt_value(r: CellResult) -> str:
    s = r.summary
    if s.n == 0:
        return f"[red]failed ({r.failure})[/]" if r.failed else "[dim]—[/]"
    value = s.mean / 2**20 if r.metric == "bw" else s.mean
    text = f"{_si(value)} {UNITS[r.metric]}"
    text += f" ±{s.ci_halfwidth_pct:.0f}%" if s.n >= 2 else " [dim]n=1[/]"
    if r.is_baseline:
        text += " [dim](baseline)[/]"
    elif r.ratio.ratio == r.ratio.ratio:
        text += f" [bold]×{r.ratio.ratio:.2f}[/]"
        if r.ratio.ci_low == r.ratio.ci_low:
            text += f" [dim][{r.ratio.ci_low:.2f}–{r.ratio.ci_high:.2f}][/]"
    if r.failed:
        text += f" [red]+{r.failed} failed[/]"
    return text


def _si(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e4:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def results_table(results: list[CellResult], title: str = "") -> Table:
    workloads = list(dict.fromkeys(r.workload for r in results))
    table = Table(title=title or None, show_lines=False, title_justify="left")
    table.add_column("stack (device/filesystem/engine/placement)", style="cyan", no_wrap=True)
    for w in workloads:
        table.add_column(w, justify="right")
    for stack in dict.fromkeys(r.stack_label for r in results):
        row = {r.workload: fmt_value(r) for r in results if r.stack_label == stack}
        table.add_row(stack, *[row.get(w, "") for w in workloads])
    return table


def refused_table(refused: list) -> Table:
    table = Table("refused stack", "reason", title="refused before running", title_justify="left")
    for label in dict.fromkeys((r.label.split(" · ")[0], r.reason) for r in refused):
        table.add_row(*label)
    return table


def show_json(run: Any, results: list[CellResult], refused: list) -> dict[str, Any]:
    return {
        "run": {
            "id": run.id,
            "name": run.name,
            "status": run.status,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "host": run.host,
            "spec": json.loads(run.spec_json),
        },
        "cells": [_nan_to_none(asdict(r)) for r in results],
        "refused": [{"label": r.label, "reason": r.reason} for r in refused],
    }


def _nan_to_none(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, float) and obj != obj:
        return None
    return obj
