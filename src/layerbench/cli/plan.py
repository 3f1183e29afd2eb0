"""`layerbench plan` and `plan-check`: parse, call analysis.plan, print. Registered in cli/app.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
import yaml
from rich.console import Console

from layerbench.analysis.strategies import STRATEGIES
from layerbench.cli.boundary import UsageError, boundary, err_console
from layerbench.cli.options import DB_OPTION
from layerbench.spec import load as spec_load
from layerbench.store.db import collector_paused
from layerbench.store.open import open_store

if TYPE_CHECKING:
    from layerbench.report import plan as planner

# report/plan.py and store/read.py (pandas, the analysis) are imported where a plan is made: cli/app.py
# registers these commands, and every other command's start would pay for them.

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
DEFAULT_DB = "layerbench.db"


def plan_command(
    runs: list[str] = typer.Argument(
        None,
        metavar="[RUN]...",
        help="Runs to plan from (ids, unique prefixes or 'latest'); default: the latest run of each --db.",
    ),
    db: list[str] = typer.Option(
        [], "--db", help="Results database; repeat for runs of other hosts (one RUN each, in order)."
    ),
    alias: list[str] = typer.Option(
        [], "--host-name", help="What to call each run's host (default: the host name it recorded); one per run."
    ),
    hosts: int = typer.Option(1, "--hosts", min=1, max=64, help="Hosts of each curve's kind available."),
    target_ops: float = typer.Option(None, "--target-ops", min=0.001, help="Aggregate ops/s to reach, cheapest."),
    p99_ms: float = typer.Option(None, "--p99-ms", min=0.001, help="Ceiling on every host's p99 latency (ms)."),
    only: str = typer.Option(
        None, "--only", metavar="TEXT", help="Only curves whose 'host: storage · workload' holds TEXT."
    ),
    emit_spec: Path = typer.Option(
        None,
        "--emit-spec",
        metavar="FILE",
        help="Write a spec measuring the chosen proposal's counts to FILE, and the proposal to FILE.proposal.json.",
    ),
    strategy: str = typer.Option(
        None, "--strategy", help=f"The proposal --emit-spec writes: {', '.join(STRATEGIES)} (default: the ★ one)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables."),
) -> None:
    """How many database containers to run on how many hosts: seed 000's container assignment (sec. 6.3).

    From runs whose cells differ in `instances` (the db-scaling and xu-cassandra presets), per curve:
    saturate-bandwidth (one host, containers until its device is ≥90% busy), peak-one-host (one host at
    its throughput peak), and with --hosts N saturate-each and peak-each (the paper's (4,4)); with
    --target-ops and/or --p99-ms, the cheapest assignment meeting them. Counts between measured ones are
    interpolated; nothing beyond the largest measured count is predicted. Hosts are assumed to share
    nothing. --emit-spec writes a spec that measures a proposal; `plan-check` compares.
    """
    with boundary(), collector_paused():
        from layerbench.report import plan as planner
        from layerbench.report.plan import Target, plan_json, plan_lines, plan_table

        curves = _curves(runs or [], db or [DEFAULT_DB], alias, only)
        result = planner.make_plan(curves, hosts, Target(target_ops, None if p99_ms is None else 1000 * p99_ms))
        if emit_spec is not None:
            _emit(result, emit_spec, strategy)
        if as_json:
            typer.echo(json.dumps(plan_json(result), indent=2))
            return
        console.print(plan_table(result))
        for line in plan_lines(result):
            console.print(line, markup=False, highlight=False)


def _curves(runs: list[str], dbs: list[Path], aliases: list[str], only: str | None) -> list[planner.Curve]:
    from layerbench.report import plan as planner
    from layerbench.store.read import load

    sources = _sources(runs, dbs)
    if aliases and len(aliases) != len(sources):
        raise UsageError(f"{len(aliases)} --host-name for {len(sources)} runs: give one per run, in order")
    curves: list[planner.Curve] = []
    for i, (db, ref) in enumerate(sources):
        data = load(open_store(db, create=False), ref)
        found = planner.curves(data, aliases[i] if aliases else None)
        if not found:
            raise UsageError(
                f"run {data.run.id} ({data.run.name}) in {db} has no cells that differ only in instances",
                hint=f"plan needs a scaling curve: run a preset with an instances axis ({_scaling_presets()}), "
                "or give a spec's stack `instances: [1, 2, 4]`",
            )
        curves += found
    chosen = [c for c in curves if only is None or only in c.label]
    if not chosen:
        raise UsageError(f"no curve matches --only {only!r}", hint="curves: " + "; ".join(c.label for c in curves))
    return chosen


def _sources(runs: list[str], dbs: list[Path]) -> list[tuple[Path, str]]:
    if not runs:
        return [(db, "latest") for db in dbs]
    if len(dbs) == 1:
        return [(dbs[0], r) for r in runs]
    if len(runs) != len(dbs):
        raise UsageError(f"{len(runs)} runs for {len(dbs)} --db: give one run per database, or none (each's latest)")
    return list(zip(dbs, runs, strict=True))


def _scaling_presets() -> str:
    """The built-in presets with a stack of more than one instance count."""
    names = []
    for name in spec_load.preset_names():
        exp = spec_load.parse(spec_load.preset_text(name), name)
        if any(isinstance(s.get("instances"), list) and len(s["instances"]) > 1 for s in exp.stacks):
            names.append(name)
    return ", ".join(names)


def _emit(result: planner.Plan, path: Path, strategy: str | None) -> None:
    from layerbench.report import plan as planner

    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", path.stem)[:80] or "plan-check"
    record = path.with_name(path.name + ".proposal.json")
    chosen, spec, proposal = planner.emitted(result, strategy, name, str(path))
    spec_load.validate(spec, str(path))  # what `run` will read: refuse to write a spec it would refuse
    header = (
        f"# layerbench plan: {chosen.strategy} {chosen.name} for {chosen.curve.label}\n"
        f"# measure: layerbench run {path} --db CHECK.db\n"
        f"# compare: layerbench plan-check --db CHECK.db --proposal {record}\n"
    )
    path.write_text(header + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    record.write_text(json.dumps(proposal, indent=2) + "\n")
    err_console.print(f"wrote {path} and {record}")


def check_command(
    proposal: Path = typer.Option(..., "--proposal", help="The FILE.proposal.json that plan --emit-spec wrote."),
    run_ref: str = typer.Argument("latest", metavar="RUN", help="The run of the emitted spec: an id, or 'latest'."),
    db: str = DB_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables."),
) -> None:
    """A plan's prediction against its measurement: per host and in aggregate, throughput and p99, error in %.

    Run the spec that `plan --emit-spec FILE` wrote (`layerbench run FILE --db CHECK.db`), then
    `layerbench plan-check --db CHECK.db --proposal FILE.proposal.json`. Each host's count is measured on
    one host; the aggregate measured is their sum, so this tests the curves and their interpolation. With
    several hosts the spec also runs all their containers together on one host: that row says what hosts
    sharing one machine (nodes of a local cluster) give instead of the sum. Each count's clients (one per
    container) start together; their widest start spread is shown, and trials whose clients ran apart
    (the clients-in-step check) are flagged.
    """
    with boundary(), collector_paused():
        from layerbench.report import plan as planner
        from layerbench.report.plan import check_json, check_lines, check_table
        from layerbench.store.read import load

        try:
            data = json.loads(proposal.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"cannot read {proposal}: {exc}") from exc
        run = load(open_store(db, create=False), run_ref)
        result = planner.measured_against(data, str(proposal), run)
        if as_json:
            typer.echo(json.dumps(check_json(result), indent=2))
            return
        console.print(check_table(result))
        for line in check_lines(result):
            console.print(line, markup=False, highlight=False)
