"""layerbench's commands: parse, call the library, print. Nothing else lives here."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from layerbench import proc
from layerbench.analysis.overhead import results
from layerbench.cli.boundary import EXIT_TRIALS_FAILED, boundary
from layerbench.cli.progress import TrialProgress
from layerbench.errors import SpecError
from layerbench.pipeline import execute, pending, register_cells
from layerbench.report.doctor import doctor_rows
from layerbench.report.terminal import flags_table, refused_table, results_table, show_json
from layerbench.spec import load as spec_load
from layerbench.spec.matrix import Matrix, expand
from layerbench.stack.capabilities import probe
from layerbench.stack.environment import describe_host
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext
from layerbench.store.db import Store

app = typer.Typer(
    help=(
        "Measure what each layer of the container storage stack costs a real workload.\n\n"
        "Start with `layerbench doctor` (what this host supports), then "
        "`layerbench run smoke` (under a minute) and `layerbench run quick` (about ten minutes); "
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
STATE_OPTION = typer.Option(
    Path("/var/lib/layerbench"),
    "--state-dir",
    envvar="LAYERBENCH_STATE_DIR",
    help="Where the ledger of created resources lives (shared by all runs on this host).",
)
JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


@app.command()
def run(
    spec: str = typer.Argument(..., help="A preset name (see `layerbench presets`) or a path to a YAML spec."),
    db: Path = DB_OPTION,
    work_dir: Path = WORK_OPTION,
    state_dir: Path = STATE_OPTION,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the cells and the refused ones with reasons; touch nothing."
    ),
    seed: int = typer.Option(0, help="Seed for the trial order within each stack."),
) -> None:
    """Run an experiment: build every stack, run every trial, save each as it ends.

    Impossible cells (a btrfs driver on xfs, a filesystem this kernel lacks) are
    refused with their reason before anything runs. Exit code 0 when every trial
    succeeded, 1 when some failed (they are saved with the tool's stderr).
    """
    with boundary():
        exp = spec_load.load(spec)
        matrix = expand(exp, probe(proc.run))
        if dry_run:
            _print_plan(matrix)
            return
        if not matrix.cells:
            _print_plan(matrix)
            raise SpecError(f"every cell of {exp.name!r} was refused on this host", hint="see the reasons above")
        failed = _run(exp, matrix, db, work_dir, state_dir, seed)
        if failed:
            raise typer.Exit(EXIT_TRIALS_FAILED)


def _run(exp, matrix: Matrix, db: Path, work_dir: Path, state_dir: Path, seed: int) -> int:
    store = Store.open(db)
    host = describe_host(proc.run)
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), host)
    register_cells(store, run_id, matrix)
    _print_plan(matrix, header=f"run {run_id}: {exp.name}")
    run_dir = _private_dir(work_dir / run_id)
    ledger = Ledger(state_dir / "ledger.db", run_id)
    ctx = BuildContext(work_dir=run_dir, ledger=ledger, run_id=run_id, runner=proc.run)
    status = "failed"
    try:
        with TrialProgress(console, pending(exp, matrix, store, run_id)) as progress:
            outcome = execute(exp, matrix, store, run_id, ctx, on_trial=progress.advance, seed=seed)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        store.finish_run(run_id, status)
        ledger.close()
        _remove_empty(run_dir)
    _show(store, run_id, as_json=False)
    console.print(f"{outcome.ok} trials ok, {outcome.failed} failed · results in {db} (run {run_id})")
    return outcome.failed


@app.command()
def show(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: Path = DB_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Print a run's results: one row per stack, one column per workload, with the ratio to the baseline."""
    with boundary():
        store = Store.open(db, create=False)
        _show(store, store.resolve_run(run_ref), as_json)


def _show(store: Store, run_id: str, as_json: bool) -> None:
    run = store.run(run_id)
    rows = results(store.samples_frame(run_id), store.cells(run_id), store.trials(run_id), store.checks(run_id))
    refused = store.refused(run_id)
    if as_json:
        typer.echo(json.dumps(show_json(run, rows, refused), indent=2))
        return
    console.print(results_table(rows, title=f"run {run.id} · {run.name} · {run.status}"))
    flags = flags_table(rows)
    if flags:
        console.print(flags)
    if refused:
        console.print(refused_table(refused))


@app.command()
def presets(
    name: str = typer.Option(
        None,
        "--show",
        metavar="NAME",
        help="Print one preset's YAML (a starting point for your own spec).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """List the built-in experiments, or print one as YAML."""
    with boundary():
        if name:
            typer.echo(spec_load.preset_text(name))
            return
        items = {n: spec_load.parse(spec_load.preset_text(n), n).description.strip() for n in spec_load.preset_names()}
        if as_json:
            typer.echo(json.dumps(items, indent=2))
            return
        table = Table("preset", "what it runs", show_lines=True)
        for preset, text in items.items():
            table.add_row(preset, text)
        console.print(table)


@app.command()
def doctor(as_json: bool = JSON_OPTION) -> None:
    """What this host supports: devices, filesystems, Docker storage drivers, tools, and why not."""
    with boundary():
        caps = probe(proc.run)
        rows = doctor_rows(caps)
        if as_json:
            typer.echo(json.dumps([r._asdict() for r in rows], indent=2))
            return
        table = Table("axis", "value", "status", "why not / notes")
        for r in rows:
            status = "[green]yes[/]" if r.ok else "[red]no[/]"
            table.add_row(r.axis, r.value, status, r.note)
        console.print(table)


def _print_plan(matrix: Matrix, header: str | None = None) -> None:
    if header:
        console.print(f"[bold]{header}[/]")
    stacks = matrix.stacks()
    n_work = len({c.workload.name for c in matrix.cells})
    shape = f"{len(stacks)} stacks x {n_work} workloads"
    console.print(f"{len(matrix.cells)} cells ({shape}), {len(matrix.refused)} refused")
    for stack in stacks:
        names = ", ".join(c.workload.name for c in matrix.cells if c.stack == stack)
        console.print(f"  [cyan]{stack.label()}[/]  {names}")
    for refusal in {r.cell.stack.label(): r for r in matrix.refused}.values():
        console.print(f"  [red]refused[/] {refusal.cell.stack.label()}: {refusal.reason}")


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def _remove_empty(path: Path) -> None:
    # Not empty means something is still live in the ledger: cleanup handles it.
    with contextlib.suppress(OSError):
        path.rmdir()


def main() -> None:
    app()
