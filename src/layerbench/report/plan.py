"""`layerbench plan` and `plan-check`: what the commands ask of analysis.plan, and its tables and JSON.

The CLI's door to the planner (it imports no analysis module itself): curves
of a loaded run, the plan, the proposal it writes down, and the check of one.
"""

from __future__ import annotations

import math
from typing import Any

from rich.markup import escape
from rich.table import Table

from layerbench.analysis.plan import Curve, Plan, Proposal, Target, curves_of, plan, recommended
from layerbench.analysis.plan_check import (
    TOGETHER,
    Check,
    HostCheck,
    check,
    proposal_file,
    proposal_record,
    read_proposal,
    spec_for,
)
from layerbench.analysis.scaling import points_of_run
from layerbench.analysis.strategies import STRATEGIES
from layerbench.errors import SpecError
from layerbench.report.terminal import plain
from layerbench.store.read import RunData

PLAN_SCHEMA = "layerbench.plan/1"
__all__ = ["STRATEGIES", "Curve", "Plan", "Target", "curves", "emitted", "make_plan", "measured_against"]


def curves(data: RunData, host: str | None = None) -> list[Curve]:
    """The run's scaling curves, labelled with ``host`` or the host name the run recorded."""
    return curves_of(data, host)


def make_plan(found: list[Curve], hosts: int, target: Target) -> Plan:
    return plan(found, hosts, target)


def emitted(
    p: Plan, strategy: str | None, name: str, spec_path: str
) -> tuple[Proposal, dict[str, Any], dict[str, Any]]:
    """The proposal to measure (``strategy``'s, or the recommended one), its spec and its proposal file."""
    if strategy is not None and strategy not in STRATEGIES:
        raise SpecError(f"--strategy {strategy!r} is not one of: {', '.join(STRATEGIES)}")
    if strategy is None:
        chosen = recommended(p)
        if chosen is None:
            raise SpecError("no proposal meets the target: nothing to emit", hint="name one with --strategy")
    else:
        matching = [x for x in p.proposals if x.strategy == strategy]
        if len(matching) != 1:
            where = "this plan has none" if not matching else f"{len(matching)} curves have one: narrow with --only"
            hint = "saturate-each and peak-each need --hosts 2 or more; a target strategy needs its target"
            raise SpecError(f"--strategy {strategy}: {where}", hint=hint if not matching else None)
        chosen = matching[0]
    return chosen, spec_for(chosen, name), proposal_file(chosen, spec_path)


def measured_against(data: Any, source: str, run: RunData) -> Check:
    """A proposal file's parsed JSON against the run that measured it."""
    verdicts: dict[str, list[str]] = {}
    for c in run.checks:
        if c.name == "clients-in-step" and c.status in ("pass", "flag"):
            verdicts.setdefault(c.cell_id, []).append(c.status)
    return check(read_proposal(data, source), points_of_run(run), run.run.id, verdicts)


def plan_json(p: Plan) -> dict[str, Any]:
    best = recommended(p)
    return {
        "schema": PLAN_SCHEMA,
        "target": {"ops": p.target.ops, "p99_us": p.target.p99_us, "describe": p.target.describe()},
        "hosts_per_curve": p.hosts,
        "curves": [_curve_json(c) for c in p.curves],
        "proposals": [proposal_record(x) for x in p.proposals],
        "recommended": None if best is None else p.proposals.index(best),
        "unreachable": list(p.unreachable),
        "caveats": list(p.caveats),
    }


def _curve_json(c: Curve) -> dict[str, Any]:
    sc = c.scaling
    points = [
        {
            "instances": pt.instances,
            "throughput": pt.throughput.mean,
            "ci_low": pt.throughput.ci_low,
            "ci_high": pt.throughput.ci_high,
            "trials": pt.throughput.n,
            "p99_us": pt.p99_us,
            "p99_worst_trial_us": pt.p99_high_us,
            "cpu_busy_pct": pt.usage.cpu_busy,
            "device_busy_pct": pt.usage.disk_util,
            "device_bandwidth_pct": pt.usage.bandwidth,
        }
        for pt in sc.points
    ]
    return plain(
        {
            "host": c.host,
            "storage": c.storage,
            "workload": c.workload,
            "run": c.origin.run_id if c.origin else None,
            "peak": sc.peak,
            "within_noise_of_peak": list(sc.ties),
            "saturated_first_at": sc.saturated,
            "points": points,
        }
    )


def plan_table(p: Plan) -> Table:
    """One row per proposal: the paper's notation (4,4), what it predicts, and whether it meets the target."""
    one_curve = len(p.curves) == 1
    title = f"plan · {p.curves[0].label}" if one_curve else "plan"
    columns = ["strategy", *([] if one_curve else ["curve"]), "containers per host", "predicted ops/s",
               "CI (hosts summed)", "worst p99 ms", *([] if p.target.is_max else ["meets target"])]  # fmt: skip
    table = Table(*columns, title=escape(title), title_justify="left", caption=f"target: {p.target.describe()}")
    best = recommended(p)
    for x in p.proposals:
        low, high = x.ci
        row = [x.strategy + (" [green]★[/]" if x is best else "")]
        row += [] if one_curve else [escape(x.curve.label)]
        row += [x.name, f"{x.throughput:,.0f}", _interval(low, high), _ms(x.p99_us)]
        if not p.target.is_max:
            said = {"meets": "[green]yes[/]", "may meet": f"[yellow]may ({_interval(low, high)})[/]"}
            row.append(said.get(x.verdict, "[red]no[/]"))
        table.add_row(*row)
    return table


def plan_lines(p: Plan) -> list[str]:
    """Below the table: why each proposal, its notes, what cannot be reached, and the caveats."""
    lines = []
    best = recommended(p)
    if best is not None:
        lines.append(f"★ {best.strategy} {best.name}: {best.throughput:,.0f} ops/s predicted on {len(best.hosts)} "
                     f"host{'s' if len(best.hosts) > 1 else ''} ({best.curve.label})")  # fmt: skip
    said: set[str] = set()
    for x in p.proposals:
        lines.append(f"{x.strategy} {x.name}: {x.why}")
        if x.may_meet:
            low, high = x.ci
            lines.append(f"    may meet the target: its interval, {_interval(low, high)} ops/s, does not support it")
        lines += [f"    note: {n}" for n in x.notes if n not in said]  # a curve's note once, under its first
        said.update(x.notes)
    lines += [f"cannot: {u}" for u in p.unreachable]
    lines += [f"caveat: {c}" for c in p.caveats]
    return lines


# What plan-check measures and what it does not: a reader of the aggregate row must not take it for a
# measurement of several hosts at once.
SUMMED = (
    "each host's count was measured on one host; the aggregate is their sum, so sharing nothing between hosts "
    "is assumed here, not measured"
)


def check_table(c: Check) -> Table:
    table = Table(
        "host", "containers", "predicted ops/s", "measured ops/s", "error", "predicted p99 ms", "measured p99 ms",
        "error", "clients' start spread ms", title=escape(f"plan-check · {c.strategy} {c.assignment} · {c.label}"),
        title_justify="left", caption=SUMMED if len(c.hosts) > 1 else None,
    )  # fmt: skip
    for h in c.hosts:
        mark = " (interpolated)" if h.interpolated else ""
        table.add_row(
            h.host, f"{h.instances}{mark}", f"{h.predicted:,.0f}", f"{h.measured:,.0f}", _pct(h.error_pct),
            _ms(h.predicted_p99_us), _ms(h.measured_p99_us), _pct(h.p99_error_pct), _spread(h),
        )  # fmt: skip
    table.add_row(
        "[bold]aggregate[/]", str(sum(h.instances for h in c.hosts)), f"{c.predicted:,.0f}", f"{c.measured:,.0f}",
        _pct(c.error_pct), _ms(c.predicted_p99_us), _ms(c.measured_p99_us), _pct(c.p99_error_pct), "",
    )  # fmt: skip
    if c.together is not None:
        t = c.together
        table.add_row(
            f"[italic]{t.host}[/]", str(t.instances), f"{t.predicted:,.0f}", f"{t.measured:,.0f}", _pct(t.error_pct),
            "", _ms(t.measured_p99_us), "", _spread(t),
        )  # fmt: skip
    return table


def check_lines(c: Check) -> list[str]:
    """What the table's spread column means where a count's clients did not run side by side."""
    apart = [h for h in (*c.hosts, c.together) if h is not None and h.apart]
    lines = [
        f"⚑ {h.host}: in {h.apart} of {h.judged} trials of {h.instances} containers the clients started or finished "
        "more than their clients-in-step share of the runtime apart, so the throughput summed over them is of "
        "loads that overlapped for less than the runtime"
        for h in apart
    ]
    if c.together is not None:
        share = c.together.measured / c.measured if c.measured else math.nan
        lines.append(
            f"{TOGETHER}: all {c.together.instances} containers at once on this one host give "
            f"{c.together.measured:,.0f} ops/s, ×{share:.2f} of the sum measured apart and "
            f"{_pct(c.together.error_pct)} from the aggregate predicted: what hosts that share a machine (nodes of "
            "one machine) give instead of the sum"
        )
    return lines


def _spread(h: HostCheck) -> str:
    if math.isnan(h.start_spread_ms):
        return "— (one client)" if h.instances == 1 else "—"
    return f"{h.start_spread_ms:,.0f}" + (f" ⚑ {h.apart} of {h.judged} apart" if h.apart else "")


def check_json(c: Check) -> dict[str, Any]:
    hosts = [
        {
            "host": h.host,
            "instances": h.instances,
            "interpolated": h.interpolated,
            "trials": h.trials,
            "throughput": {"predicted": h.predicted, "measured": h.measured, "error_pct": h.error_pct},
            "p99_us": {"predicted": h.predicted_p99_us, "measured": h.measured_p99_us, "error_pct": h.p99_error_pct},
            "clients": {"start_spread_ms": h.start_spread_ms, "apart_trials": h.apart, "judged_trials": h.judged},
        }
        for h in c.hosts
    ]
    together = c.together
    return plain(
        {
            "note": SUMMED,
            "together": None
            if together is None
            else {
                "instances": together.instances,
                "throughput": {"measured": together.measured, "error_pct": together.error_pct},
                "p99_us": together.measured_p99_us,
                "clients": {
                    "start_spread_ms": together.start_spread_ms,
                    "apart_trials": together.apart,
                    "judged_trials": together.judged,
                },
            },
            "strategy": c.strategy,
            "assignment": c.assignment,
            "curve": c.label,
            "hosts": hosts,
            "throughput": {"predicted": c.predicted, "measured": c.measured, "error_pct": c.error_pct},
            "p99_us": {"predicted": c.predicted_p99_us, "measured": c.measured_p99_us, "error_pct": c.p99_error_pct},
        }
    )


def _interval(low: float, high: float) -> str:
    return "—" if math.isnan(low) or math.isnan(high) else f"{low:,.0f}–{high:,.0f}"


def _ms(us: float) -> str:
    return "—" if math.isnan(us) else f"{us / 1000:.2f}"


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:+.1f}%"
