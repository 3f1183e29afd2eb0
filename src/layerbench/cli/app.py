"""layerbench's commands: parse, call the library, print. Nothing else lives here."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from layerbench.cli import gates as gates_cli
from layerbench.cli import plan as plan_cli
from layerbench.cli.boundary import EXIT_TRIALS_FAILED, UsageError, boundary, err_console
from layerbench.cli.progress import TrialProgress
from layerbench.errors import PrerequisiteError, SpecError
from layerbench.report import json_text
from layerbench.report.bigtable import print_table
from layerbench.report.doctor import DOCTOR_IMAGES, DoctorRow, doctor_rows
from layerbench.run import nodes
from layerbench.spec import load as spec_load
from layerbench.spec import schema as spec_schema
from layerbench.spec import seeds
from layerbench.spec.matrix import Matrix
from layerbench.spec.models import Experiment, StackSpec
from layerbench.spec.traits import HOST_PROBES
from layerbench.store.db import RunRow, Store, collector_paused

if TYPE_CHECKING:
    from layerbench.cli.live import Serve

# What reads a run (report/, analysis/, store/read.py) is imported by the commands that read one: pandas with
# pyarrow was 10.8 s of the 14 s this module took to import under emulation (the modern-host tier's guest),
# which `cleanup`, `doctor`, `--help` and a run until its end never use.


class ProfileKind(StrEnum):
    """`run --profile`: the choices typer lists in --help."""

    none = "none"
    cpu = "cpu"


app = typer.Typer(
    help=(
        "Measure what each layer of the container storage stack costs a real workload.\n\n"
        "Start with `layerbench doctor` (what this host supports), then "
        "`layerbench run smoke` (under a minute) and `layerbench run quick` (about six minutes on 2 cores); "
        "`layerbench show latest` prints the results again."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Piped output is read by people too: give tables room rather than Rich's 80 columns.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)

DB_OPTION = typer.Option(Path("layerbench.db"), "--db", envvar="LAYERBENCH_DB", help="Results database (SQLite).")
WORK_OPTION = typer.Option(
    Path("/var/tmp/layerbench"),
    "--work-dir",
    envvar="LAYERBENCH_WORK_DIR",
    help="Where loop-device files and mount points go; it must be on a real disk with room for the devices.",
)
STATE_DEFAULT = Path("/var/lib/layerbench")
STATE_OPTION = typer.Option(
    STATE_DEFAULT,
    "--state-dir",
    envvar="LAYERBENCH_STATE_DIR",
    help="Where the ledger of created resources lives (shared by all runs on this host).",
)
KUBECONFIG_OPTION = typer.Option(
    None,
    "--kubeconfig",
    envvar="KUBECONFIG",
    metavar="FILE",
    help="The Kubernetes cluster of kubernetes cells (engine: {kind: kubernetes, node: NAME}); "
    "default: $KUBECONFIG, then ~/.kube/config.",
)


def use_kubeconfig(path: Path | None) -> None:
    """Where the engine, the probe and a later `cleanup` (through the ledger) find the cluster."""
    if path is not None:
        os.environ["KUBECONFIG"] = str(path.resolve())


SWARM_ENV = "LAYERBENCH_SWARM_MANAGER"  # engines/swarm/swarm_api.py's MANAGER_ENV (the CLI imports no stack module)
SWARM_OPTION = typer.Option(
    None,
    "--swarm-manager",
    envvar=SWARM_ENV,
    metavar="URL",
    help="The Docker Swarm of swarm cells (engine: {kind: swarm, node: HOSTNAME}): a manager's Docker socket, "
    "unix:///PATH/docker.sock (a bare path is taken as one).",
)


def use_swarm_manager(url: str | None) -> None:
    """Where the engine and the probe find the swarm's manager (a later `cleanup` finds it in the ledger)."""
    if url:
        os.environ[SWARM_ENV] = url if "://" in url else f"unix://{Path(url).resolve()}"


# stack/target.py's DEFAULT_CACHE: the commands that read a run import no stack module (0.5 s of their start),
# so the ones that run import it, and host and session, where they need them.
CACHE_DEFAULT = Path("/var/cache/layerbench")
CACHE_OPTION = typer.Option(
    CACHE_DEFAULT,
    "--cache-dir",
    envvar="LAYERBENCH_CACHE_DIR",
    help="Where `make setup` put the database clients' jars (YCSB and its bindings).",
)
JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")
FORMAT_OPTION = typer.Option(
    [],
    "--format-device",
    metavar="DEV",
    help="Agree that the spec's block device DEV is formatted, losing its data (repeat for each). "
    "Without it, layerbench asks on a terminal and refuses otherwise.",
)


@app.command()
def run(
    spec: str = typer.Argument(..., help="A preset name (see `layerbench presets`) or a path to a YAML spec."),
    db: Path = DB_OPTION,
    work_dir: Path = WORK_OPTION,
    state_dir: Path = STATE_OPTION,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the cells and the refused ones with reasons; touch nothing."
    ),
    seed: int = typer.Option(0, help="Seed of the shuffled trial order; the same seed gives the same order."),
    cache_dir: Path = CACHE_OPTION,
    format_device: list[str] = FORMAT_OPTION,
    profile: ProfileKind | None = typer.Option(
        None,
        "--profile",
        help="cpu: record the whole machine with perf during each cell's first trial, for the report's flame "
        "graphs and `advise` (the spec's `profile:` field, overridden).",
    ),
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    swarm_manager: str | None = SWARM_OPTION,
    node: str | None = typer.Option(
        None, "--node", metavar="NAME", help="Run only the cells on this node (engine.node; 'this host' for the rest)."
    ),
    parallel_nodes: bool = typer.Option(
        False,
        "--parallel-nodes",
        help="Cells on different nodes at once: one run per node (each as with --node), in parallel; "
        "on each node one cell at a time. Nodes that share one machine contend: for numbers there, run without.",
    ),
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        metavar="PORT",
        min=0,
        max=65535,
        help="While the run goes on, serve its progress, the last trial's results and the monitor's current "
        "figures for Prometheus at http://127.0.0.1:PORT/metrics (0: any free port; the URL is printed).",
    ),
    metrics_address: str = typer.Option(
        "127.0.0.1",
        "--metrics-address",
        metavar="ADDR",
        help="The address --metrics-port listens on; 0.0.0.0 or :: serves every interface (no authentication).",
    ),
) -> None:
    """Run an experiment: build every stack, run every trial, save each as it ends.

    Impossible cells (a btrfs driver on xfs, a filesystem this kernel lacks) are
    refused with their reason before anything runs. Exit code 0 when every trial
    succeeded, 1 when some failed (they are saved with the tool's stderr).
    """
    with boundary():
        from layerbench.run.session import cells_here

        use_kubeconfig(kubeconfig)
        use_swarm_manager(swarm_manager)
        exp = spec_load.load(spec)
        if profile is not None:
            exp = Experiment.model_validate({**exp.model_dump(), "profile": profile.value})
        matrix = cells_here(exp, cache_dir)
        if node is not None:
            matrix = nodes.only(matrix, node)
        serve = _serve(metrics_address, metrics_port)
        if parallel_nodes and serve is not None:
            raise UsageError("--metrics-port serves one run: run each node with --node and its own port instead")
        if parallel_nodes and not dry_run:
            own = _own_argv(spec, db, work_dir, state_dir, cache_dir, seed, format_device, profile)
            _print_plan(matrix)
            _warn_shared(matrix)
            code = nodes.run_all(nodes.children(matrix, own), typer.echo)
            raise typer.Exit(code)
        if dry_run:
            _print_plan(matrix)
            return
        if not matrix.cells:
            _print_plan(matrix)
            raise SpecError(f"every cell of {exp.name!r} was refused on this host", hint="see the reasons above")
        confirm_formatting(matrix, format_device)
        failed = _run(exp, matrix, db, Places(work_dir, state_dir, cache_dir), seed, node, serve)
        if failed:
            raise typer.Exit(EXIT_TRIALS_FAILED)


def _serve(address: str, port: int | None) -> Serve | None:
    if port is None:
        return None
    from layerbench.cli.live import Serve

    return Serve(address, port)


def _warn_shared(matrix: Matrix) -> None:
    """Parallel parts on one machine compete for its CPUs and memory: say so before their numbers exist."""
    from layerbench.run import host

    local = host.on_this_machine([e for c in matrix.cells for e in c.stack.node_engines()])
    shared = nodes.on_this_machine(matrix, local)
    if len(shared) > 1:
        err_console.print(
            f"[yellow]warning:[/] {', '.join(shared)} run on this one machine and contend for its CPUs and memory: "
            "their numbers test function, not speed (run without --parallel-nodes for those)"
        )


def _own_argv(
    spec: str,
    db: Path,
    work_dir: Path,
    state_dir: Path,
    cache_dir: Path,
    seed: int,
    format_device: list[str],
    profile: ProfileKind | None,
) -> list[str]:
    """This `run`'s arguments for a child run of one node (KUBECONFIG is inherited)."""
    argv = ["run", spec, "--db", str(db), "--work-dir", str(work_dir), "--state-dir", str(state_dir)]
    argv += ["--cache-dir", str(cache_dir), "--seed", str(seed)]
    argv += [x for dev in format_device for x in ("--format-device", dev)]
    return argv + (["--profile", profile.value] if profile is not None else [])


def confirm_formatting(matrix: Matrix, agreed: list[str]) -> None:
    """A block device is formatted only once its owner agreed: on the command line, or at a prompt."""
    from layerbench.run import host

    named = sorted({str(c.stack.device.path) for c in matrix.cells if c.stack.device.kind == "block"})
    agreed_real = {os.path.realpath(a) for a in agreed}
    for dev in named:
        if os.path.realpath(dev) in agreed_real:
            continue
        if sys.stdin.isatty():
            answer = typer.prompt(
                f"layerbench will FORMAT {host.describe_block(dev)}; everything on it is lost. Type {dev} to go on",
                default="",
                show_default=False,
            )
            if answer.strip() == dev:
                continue
        raise PrerequisiteError(
            f"{dev} would be formatted, and that was not agreed to",
            hint=f"add --format-device {dev} if its data may be lost",
        )


@dataclass(frozen=True)
class Places:
    """Where a run keeps its files on this host."""

    work_dir: Path
    state_dir: Path
    cache_dir: Path


def _run(
    exp: Experiment,
    matrix: Matrix,
    db: Path,
    places: Places,
    seed: int,
    node: str | None = None,
    serve: Serve | None = None,
) -> int:
    from layerbench.run import host
    from layerbench.run.loop import register_cells
    from layerbench.run.session import check_server_access, check_space, needed_bytes

    check_space(places.work_dir, needed_bytes(matrix))
    check_server_access(places.work_dir, matrix)
    store = Store.open(db)
    described = {**host.describe(places.cache_dir), "seed": seed, **({"node": node} if node else {})}
    urls = nodes.docker_hosts(matrix)
    if urls:  # the machines the cells run on, as their daemons describe them
        described["docker_hosts"] = host.describe_daemons(urls)
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), described)
    register_cells(store, run_id, matrix)
    _print_plan(matrix, header=f"run {run_id}: {exp.name}")
    return _execute(exp, matrix, store, run_id, places, seed, serve)


def _execute(
    exp: Experiment, matrix: Matrix, store: Store, run_id: str, places: Places, seed: int, serve: Serve | None = None
) -> int:
    from layerbench.cli.live import both, live
    from layerbench.run.loop import execute, pending
    from layerbench.run.session import budget_for, running

    budget = budget_for(exp, matrix, store.run(run_id).host)
    with running(store, run_id, places.work_dir, places.state_dir, budget, places.cache_dir) as (ctx, reclaimed):
        for action in reclaimed:
            err_console.print(f"[dim]reclaimed from a dead run:[/] {action.describe()} {action.error or ''}")
        total = pending(exp, matrix, store, run_id)
        with TrialProgress(console, total) as progress, live(serve, run_id, total) as state:
            on_trial = progress.advance
            if state is not None:
                ctx = dataclasses.replace(ctx, on_monitor=state.monitor_point)
                on_trial = both(progress.advance, state)
            outcome = execute(exp, matrix, store, run_id, ctx, on_trial=on_trial, seed=seed)
    _show(store, run_id, as_json=False)
    _prepare_reads(store, run_id)
    again = f" ({outcome.again} measured again: the host was busy)" if outcome.again else ""
    console.print(f"{outcome.ok} trials ok{again}, {outcome.failed} failed · results in {store.path} (run {run_id})")
    return outcome.failed


@app.command()
def resume(
    run_ref: str = typer.Argument(..., metavar="RUN", help="The run to continue: an id, a unique prefix, or 'latest'."),
    db: Path = DB_OPTION,
    work_dir: Path = WORK_OPTION,
    state_dir: Path = STATE_OPTION,
    cache_dir: Path = CACHE_OPTION,
    format_device: list[str] = FORMAT_OPTION,
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    swarm_manager: str | None = SWARM_OPTION,
) -> None:
    """Continue a run that was interrupted (Ctrl-C, kill -9, a crash, a reboot).

    Finished trials are kept and not repeated; what the dead run left on the
    host is removed first. Refused, with the reason, if the host changed since
    (kernel, fio binary, tool versions) or if this host can no longer build the
    same cells, so results of unlike conditions are never mixed in one run.
    """
    with boundary():
        from layerbench.run import host
        from layerbench.run.loop import register_cells
        from layerbench.run.session import cells_here

        use_kubeconfig(kubeconfig)
        use_swarm_manager(swarm_manager)
        store = Store.open(db, create=False, writes=True)
        run_id = store.resolve_run(run_ref)
        row = store.run(run_id)
        exp = spec_load.validate(row.spec, f"run {run_id}")
        changed = host.changes_since(row.host, cache_dir)
        if changed:
            raise PrerequisiteError(
                f"run {run_id} cannot be resumed here: {'; '.join(changed)}",
                hint="start a new run: layerbench run SPEC",
            )
        matrix = cells_here(exp, cache_dir)
        if "node" in row.host:  # one node's run of --parallel-nodes: that node's cells only
            matrix = nodes.only(matrix, row.host["node"])
        stored = {c.cell_id for c in store.cells(run_id)}
        if not stored:  # it died between recording the run and its cells
            register_cells(store, run_id, matrix)
            stored = {c.id for c in matrix.cells}
        if {c.id for c in matrix.cells} != stored:
            raise PrerequisiteError(
                f"this host no longer builds the same cells as run {run_id} did",
                hint="see `layerbench run SPEC --dry-run` for what it refuses now",
            )
        confirm_formatting(matrix, format_device)
        store.mark(run_id, "running")
        places = Places(work_dir, state_dir, cache_dir)
        failed = _execute(exp, matrix, store, run_id, places, int(row.host.get("seed", 0)))
        if failed:
            raise typer.Exit(EXIT_TRIALS_FAILED)


@app.command()
def cleanup(
    state_dir: Path = STATE_OPTION,
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be removed; remove nothing."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove what dead runs left: containers, volumes, daemons, mounts, loop and zram devices, files.

    Everything layerbench creates is written to a ledger before it exists;
    this walks the ledger newest first and removes what runs that are no
    longer alive left behind. A live run's resources are never touched.
    Running it twice is harmless.
    """
    with boundary():
        from layerbench.run import host

        actions = host.clean_up(state_dir, dry_run)
        if as_json:
            typer.echo(
                json.dumps(
                    [
                        {
                            "kind": a.resource.kind,
                            "ident": a.resource.ident,
                            "run": a.resource.run_id,
                            "removed": a.done,
                            "error": a.error,
                        }
                        for a in actions
                    ],
                    indent=2,
                )
            )
        elif not actions:
            console.print("nothing to clean up")
        for a in actions if not as_json else []:
            verb = "would remove" if dry_run else ("removed" if a.done else "[red]could not remove[/]")
            console.print(f"{verb} {a.describe()} {a.error or ''}")
        if any(a.error for a in actions):
            raise typer.Exit(5)


@app.command()
def show(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: Path = DB_OPTION,
    as_json: bool = JSON_OPTION,
    latency: bool = typer.Option(False, "--latency", help="Also print latency percentiles per cell."),
    checks: bool = typer.Option(
        False, "--checks", help="Each flagged cell's own detail (without it: one line per kind of flag)."
    ),
    state_dir: Path = STATE_OPTION,
) -> None:
    """Print a run's results: one row per stack, one column per workload, with the ratio to the baseline.

    With --latency, the latency percentiles too, from histograms merged over all jobs (fio's
    completion latency) or all instances' clients (YCSB, pgbench) and all trials of a cell:
    never averaged percentiles.
    """
    with boundary(), collector_paused():  # a command that reads, writes and exits: its memory goes at exit
        _show(Store.open(db, create=False), run_ref, as_json, latency, state_dir, checks)


def _status(run: RunRow, state_dir: Path) -> str:
    """A run recorded as running whose lock is free died without saying so."""
    if run.status != "running":
        return run.status
    from layerbench.run import host  # here: the stack's modules are half a second of every other `show`

    if not host.run_is_live(state_dir, run.id):
        return f"interrupted: continue with `layerbench resume {run.id}`"
    return run.status


def _show(
    store: Store,
    run_ref: str,
    as_json: bool,
    latency: bool = False,
    state_dir: Path = STATE_DEFAULT,
    checks: bool = False,
) -> None:
    from layerbench.report import terminal
    from layerbench.report.view import cached_view

    v = cached_view(store, run_ref, latency=latency or as_json)
    run = v.data.run
    if as_json:
        typer.echo(json_text.dumps(terminal.show_json(v)))
        return
    if v.findings:  # what each layer costs, before the table that gives every cell against the baseline
        console.print(f"[bold]run {run.id} · {run.name}: each layer against the one beneath it[/bold]")
        for line in v.finding_lines:
            console.print(f"  {line}", markup=False, highlight=False)
    print_table(
        console, terminal.results_table(v.results, title=f"run {run.id} · {run.name} · {_status(run, state_dir)}")
    )
    for table in terminal.scaling_tables(v.scalings):
        console.print(table)
    if not v.clients.empty:
        console.print(terminal.clients_table(v.clients))
    if v.ratios is not None:  # seed 004's table: layers against native on each filesystem
        console.print(
            terminal.ratio_table_render(v.ratios, "ratio to the baseline on the same filesystem, per operation")
        )
    if v.remote_latency:
        console.print(terminal.remote_latency_table(v.remote_latency))
    if latency and v.fio_latency is not None:
        if not v.fio_latency.empty or v.client_latency.empty:
            console.print(terminal.latency_table(v.fio_latency, v.data.cells))
        if not v.client_latency.empty:
            console.print(terminal.client_latency_table(v.client_latency, v.data.cells))
    if v.limits:
        console.print(terminal.limits_table(v.limits))
    flags = terminal.flags_table(v.results) if checks else None
    if flags:
        console.print(flags)
    for line in [] if checks else terminal.flag_lines(v.results, run.id):
        console.print(line, markup=False, highlight=False)
    if v.data.refused:
        console.print(terminal.refused_table(v.data.refused))


@app.command()
def advise(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: Path = DB_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """What to do about a run's findings: recommendations, each with the cells and numbers behind it.

    Advice comes only from differences that are significant and at least 5% (each layer against the
    one beneath it, paired by round), from checks that flagged a trial (a cache that answered, a busy
    host, a container's CPU limit) and, for runs with `profile: cpu`, from where the CPU time went.
    Confidence is high when every interval behind it clears 5% and nothing flagged it. What the run
    cannot decide (one round, an interval holding both "no cost" and a material one) is listed apart.
    """
    with boundary(), collector_paused():
        from layerbench.report.terminal import advice_json, advice_lines
        from layerbench.report.view import cached_view

        v = cached_view(Store.open(db, create=False), run_ref, profiles=True)
        if as_json:
            typer.echo(json_text.dumps(advice_json(v.advice)))
            return
        console.print(f"[bold]run {v.data.run.id} · {v.data.run.name}: advice[/bold]")
        for line in advice_lines(v.advice):
            console.print(line, markup=False, highlight=False)


@app.command()
def report(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: Path = DB_OPTION,
    html: Path = typer.Option(
        None, "--html", metavar="DIR", help="Write DIR/report.html (self-contained) and DIR/figures/*.png|svg."
    ),
    markdown: bool = typer.Option(False, "--markdown", help="Print the results as Markdown, for issues and wikis."),
    figures: str = typer.Option(
        "12",
        "--figures",
        metavar="N|all",
        help="How many workloads the figures draw (the run's first N), or 'all': a sweep of hundreds takes minutes.",
    ),
) -> None:
    """A report of one run: a self-contained HTML page with figures (--html DIR), or Markdown (--markdown)."""
    with boundary(), collector_paused():  # a command that reads, writes and exits: its memory goes at exit
        if html is None and not markdown:
            raise UsageError("say what to write: --html DIR and/or --markdown")
        from layerbench.report import markdown as markdown_report
        from layerbench.report import prepared
        from layerbench.report.view import cached_view

        shown = figure_workloads(figures)
        store = Store.open(db, create=False)
        v = cached_view(store, run_ref, latency=html is not None, profiles=html is not None)
        if markdown:
            typer.echo(markdown_report.render(v.data.run, v.results, v.data.refused))
        if html is not None:
            # Here, not at the top: show and export never write HTML (and matplotlib only when it draws).
            from layerbench.report import html as html_report

            path = html_report.render(v, html, shown, lambda v, n: prepared.figures(store, v, n))
            err_console.print(f"wrote {path} and its figures in {path.parent / 'figures'}")


def figure_workloads(text: str) -> int | None:
    """``--figures``: a count of workloads, or None for "all"."""
    if text == "all":
        return None
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--figures {text!r} is neither a count of workloads (1 or more) nor 'all'")
    return int(text)


@app.command()
def export(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: Path = DB_OPTION,
    fmt: str = typer.Option(
        "csv", "--format", help="csv, json or parquet; openmetrics: every trial's headline metrics and checks."
    ),
    output: Path = typer.Option(None, "--output", "-o", help="The file to write (default: standard output)."),
) -> None:
    """Every sample of a run, one row each, with the cell's configuration as columns.

    --format openmetrics writes every trial's headline metric, p99 latency, checks and status instead, labelled
    by run, cell, stack, workload and repetition and stamped with the trial's end (for promtool's backfill).
    """
    with boundary(), collector_paused():  # a command that reads, writes and exits: its memory goes at exit
        from layerbench.report import kept_export

        if fmt not in kept_export.FORMATS:
            raise UsageError(f"--format {fmt!r} is not one of: {', '.join(kept_export.FORMATS)}")
        if fmt == "parquet" and output is None and sys.stdout.isatty():
            raise UsageError("parquet is binary: name a file with -o FILE, or redirect standard output")
        store = Store.open(db, create=False)
        if fmt == "openmetrics":
            from layerbench.report import metrics
            from layerbench.store.read import load

            data = load(store, run_ref)
            where = metrics.write(data, output)
            err_console.print(f"wrote {len(data.trials)} trials to {where}")
            return
        run_id = store.resolve_run(run_ref)
        kept = kept_export.write(store, run_id, fmt, output)  # a big run's end made it: pandas is not needed
        if kept is None:
            from layerbench.report import prepared
            from layerbench.report.export import write_samples

            samples, config, csv, parquet = prepared.export_parts(store, run_id, fmt)
            kept = write_samples(samples, config, fmt, output, csv, parquet), len(samples)
        where, count = kept
        err_console.print(f"wrote {count} samples to {where}")


def _prepare_reads(store: Store, run_id: str) -> None:
    """A big run's first reader waits no longer than the next (report/prepared.py)."""
    from layerbench.report import prepared

    if not prepared.worth_preparing(store, run_id):
        return
    try:
        with err_console.status("preparing the run for reading") as status:
            took = prepared.ahead(store, run_id, lambda part: status.update(f"preparing the run for reading: {part}"))
    except KeyboardInterrupt:  # the run is whole: only its first reads will be slower
        err_console.print("[dim]not prepared for reading (interrupted): the first show or report builds it[/]")
        return
    except Exception as e:  # a finished run's outcome is its trials', not its cache's
        err_console.print(f"[yellow]not prepared for reading:[/] {type(e).__name__}: {escape(str(e))}")
        return
    parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in took)
    err_console.print(f"[dim]prepared for reading ({parts}): the first show, report and export read the cache[/]")


@app.command()
def presets(
    name: str = typer.Argument(None, metavar="[NAME]", help="Print this preset's YAML, as --show NAME does."),
    show: str = typer.Option(
        None,
        "--show",
        metavar="NAME",
        help="Print one preset's YAML (a starting point for your own spec).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """List the built-in experiments grouped by the paper (seed) each reproduces, or print one as YAML
    (`layerbench presets NAME`, or `--show NAME`)."""
    with boundary():
        if name and show and name != show:
            raise UsageError(f"two presets named: {name} and --show {show}; name one")
        if name or show:
            typer.echo(spec_load.preset_text(name or show))
            return
        items = {n: spec_load.parse(spec_load.preset_text(n), n).description.strip() for n in spec_load.preset_names()}
        groups = seeds.grouped(list(items))
        if as_json:
            listed = {p: {"seed": seed, "description": items[p]} for seed, ps in groups.items() for p in ps}
            typer.echo(json.dumps(listed, indent=2))
            return
        for seed, names in groups.items():
            table = Table("preset", "what it runs", title=seed, title_justify="left", show_lines=True)
            for preset in names:
                table.add_row(preset, items[preset])
            console.print(table)


@app.command()
def schema() -> None:
    """Print the JSON Schema of a spec (generated from its models), for editors that complete and check YAML.

    docs/reference/spec.schema.json is this output, committed; every preset names it in its first line.
    """
    with boundary():
        typer.echo(spec_schema.schema_text(), nl=False)


@app.command()
def doctor(
    as_json: bool = JSON_OPTION,
    cache_dir: Path = CACHE_OPTION,
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    swarm_manager: str | None = SWARM_OPTION,
    docker_host: list[str] = typer.Option(
        [],
        "--docker-host",
        metavar="URL",
        help="Also ask the Docker daemon at URL (a docker-host cell's node: tcp://HOST:2375, unix:///PATH); "
        "repeatable.",
    ),
) -> None:
    """What this host supports: devices, filesystems, Docker storage drivers, databases, tools, and why not.

    With --kubeconfig (or $KUBECONFIG), also the Kubernetes cluster: its version, each node (Ready, and
    whether it is this host, where the filesystem under test can reach its pods), its StorageClasses.
    With --swarm-manager, also the Docker Swarm: its manager and each node (ready, and whether its own
    daemon answers on this host, where layerbench loads the image and runs commands).
    With --docker-host URL, also that daemon: whether it answers, its version, storage driver and the
    filesystem beneath it.
    """
    with boundary():
        from layerbench.run import host

        use_kubeconfig(kubeconfig)
        use_swarm_manager(swarm_manager)
        caps = host.caps(cache_dir, probes=HOST_PROBES, profiler=True, images=DOCTOR_IMAGES)
        rows = doctor_rows(caps) + [DoctorRow(*row) for row in host.engine_rows(docker_host)]
        if as_json:
            typer.echo(json.dumps([r._asdict() for r in rows], indent=2))
            return
        table = Table("axis", "value", "status", "why not / notes")
        for r in rows:
            status = "[green]yes[/]" if r.ok else "[red]no[/]"
            table.add_row(r.axis, r.value, status, r.note)
        console.print(table)


PLAN_NAMES_SHOWN = 12


def _names(names: list[str]) -> str:
    """A few names and how many more: a 500-point sweep's names are a screenful nobody reads."""
    if len(names) <= PLAN_NAMES_SHOWN:
        return ", ".join(names)
    return f"{', '.join(names[: PLAN_NAMES_SHOWN - 2])}, ... {names[-1]} ({len(names)} in all)"


def _print_plan(matrix: Matrix, header: str | None = None) -> None:
    if header:
        console.print(f"[bold]{header}[/]")
    per_stack: dict[StackSpec, list[str]] = {}
    for c in matrix.cells:  # one pass: a sweep makes thousands of cells
        per_stack.setdefault(c.stack, []).append(c.workload.name)
    n_work = len({c.workload.name for c in matrix.cells})
    shape = f"{len(per_stack)} stacks x {n_work} workloads"
    console.print(f"{len(matrix.cells)} cells ({shape}), {len(matrix.refused)} refused")
    shared = len({tuple(v) for v in per_stack.values()}) == 1
    if shared and per_stack:
        console.print(f"  workloads: {_names(next(iter(per_stack.values())))}")
    for stack, names in per_stack.items():
        console.print(f"  [cyan]{escape(stack.label())}[/]" + ("" if shared else f"  {_names(names)}"))
    # A stack's own reason once; a reason some of its workloads have (a job file's) with their names.
    refused: dict[tuple[str, str], list[str]] = {}
    for r in matrix.refused:
        refused.setdefault((r.cell.stack.label(), r.reason), []).append(r.cell.workload.name)
    reasons_of: dict[str, int] = {}
    for label, _ in refused:
        reasons_of[label] = reasons_of.get(label, 0) + 1
    running = {stack.label() for stack in per_stack}
    for (label, reason), names in refused.items():
        which = f" {_names(names)}" if label in running or reasons_of[label] > 1 else ""
        console.print(f"  [red]refused[/] {escape(label)}{escape(which)}: {escape(reason)}")


# Registered here, not by importing cli/plan.py for its side effects: the list of commands stays in this file.
app.command("plan")(plan_cli.plan_command)
app.command("plan-check")(plan_cli.check_command)
app.command("compare")(gates_cli.compare_command)
app.command("check")(gates_cli.check_command)
app.add_typer(gates_cli.baseline_app, name="baseline")


def main() -> None:
    app()
