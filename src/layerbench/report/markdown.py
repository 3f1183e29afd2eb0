"""The results as a Markdown table, for issues and wikis."""

from __future__ import annotations

from collections.abc import Sequence

from layerbench.analysis.overhead import BYTE_METRICS, UNITS, CellResult
from layerbench.analysis.verdicts import MARKS, bounds_text, legend
from layerbench.store.db import RefusedRow, RunRow


def cell_md(r: CellResult) -> str:
    s, q = r.summary, r.ratio
    if s.n == 0:
        return f"failed ({r.failure})" if r.failed else "—"
    text = f"{(s.mean / 2**20 if r.metric in BYTE_METRICS else s.mean):,.0f}"
    if s.n >= 2:
        text += f" ±{s.ci_halfwidth_pct:.1f}%"
    if r.is_baseline:
        text += " (baseline)"
    elif q.ratio == q.ratio:
        text += f" **×{q.ratio:.2f}**{MARKS.get(r.verdict, '')}"
        if q.ci_low == q.ci_low:
            text += f" [{bounds_text(q.ci_low, q.ci_high, sep='–')}]"
    if r.flags:
        text += " ⚑"
    return text


def render(run: RunRow, results: Sequence[CellResult], refused: Sequence[RefusedRow]) -> str:
    workloads = list(dict.fromkeys(r.workload for r in results))
    units = {r.workload: UNITS[r.metric] for r in results}
    grid = {(r.stack_label, r.workload): r for r in results}
    lines = [
        f"### layerbench · {run.name} · run {run.id} ({run.status})",
        "",
        f"Host: {run.host.get('kernel')} · {run.host.get('cpu_model')} · {run.host.get('cpus')} CPUs · "
        f"{(run.host.get('tools') or {}).get('fio')}",
        "",
        "| stack | " + " | ".join(f"{w} ({units[w]})" for w in workloads) + " |",
        "|---|" + "---:|" * len(workloads),
    ]
    for stack in dict.fromkeys(r.stack_label for r in results):
        cells = [cell_md(grid[(stack, w)]) if (stack, w) in grid else "" for w in workloads]
        lines.append(f"| {stack} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "×: ratio to the baseline paired by round, [its CI], as the findings show it; "
        f"{legend(bool((run.spec.get('trials') or {}).get('budget')))}; ±: CI half-width of the mean; ⚑: flagged.",
    ]
    flags = [(f"{r.stack_label} · {r.workload}", f) for r in results for f in r.flags]
    if flags:
        lines += ["", "**Flags**", ""] + [f"- {cell}: `{f.name}`: {f.detail}" for cell, f in flags]
    if refused:
        lines += ["", "**Refused**", ""] + [f"- {r.label}: {r.reason}" for r in refused]
    return "\n".join(lines) + "\n"
