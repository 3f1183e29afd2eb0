"""The commands that read a run: show, advise, report, export. What reads a run (report/, analysis/,
store/read.py, pandas) is imported inside them: pandas with pyarrow was 10.8 s of a command's 14 s start under
emulation, which `cleanup`, `doctor`, `--help` and a run until its end never use."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.markup import escape

from layerbench.cli.boundary import UsageError, boundary, err_console
from layerbench.cli.options import DB_OPTION, JSON_OPTION, STATE_DEFAULT, STATE_OPTION, console
from layerbench.report import json_text
from layerbench.report.bigtable import print_table
from layerbench.store.db import RunRow, Store, collector_paused
from layerbench.store.open import open_store


def show(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: str = DB_OPTION,
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
        print_run(open_store(db, create=False), run_ref, as_json, latency, state_dir, checks)


def _status(run: RunRow, state_dir: Path, local: bool = True) -> str:
    """A run recorded as running whose lock is free died without saying so. A shared store's (``local``
    False) may be running on another host, whose locks this one cannot see."""
    if run.status != "running" or not local:
        return run.status
    from layerbench.run import host  # here: the stack's modules are half a second of every other `show`

    if not host.run_is_live(state_dir, run.id):
        return f"interrupted: continue with `layerbench resume {run.id}`"
    return run.status


def print_run(
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
        console,
        terminal.results_table(
            v.results,
            f"run {run.id} · {run.name} · {_status(run, state_dir, store.path is not None)}",
            v.data.trials_rule.sequential,
        ),
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
    if v.job_options:
        console.print(terminal.job_options_table(v.job_options))
    if v.cluster_states:
        console.print(terminal.cluster_states_table(v.cluster_states))
    flags = terminal.flags_table(v.results) if checks else None
    if flags:
        console.print(flags)
    for line in [] if checks else terminal.flag_lines(v.results, run.id):
        console.print(line, markup=False, highlight=False)
    if v.data.refused:
        console.print(terminal.refused_table(v.data.refused))


def advise(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: str = DB_OPTION,
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

        v = cached_view(open_store(db, create=False), run_ref, profiles=True)
        if as_json:
            typer.echo(json_text.dumps(advice_json(v.advice)))
            return
        console.print(f"[bold]run {v.data.run.id} · {v.data.run.name}: advice[/bold]")
        for line in advice_lines(v.advice):
            console.print(line, markup=False, highlight=False)


def report(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: str = DB_OPTION,
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
        store = open_store(db, create=False)
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


def export(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: str = DB_OPTION,
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
        from layerbench.report.exporters import EXPORTERS

        exporter = EXPORTERS.get(fmt)
        if exporter is None:
            raise UsageError(f"--format {fmt!r} is not one of: {', '.join(EXPORTERS)}")
        if exporter.binary and output is None and sys.stdout.isatty():
            raise UsageError(f"{fmt} is binary: name a file with -o FILE, or redirect standard output")
        where, count = exporter.export(open_store(db, create=False), run_ref, output)
        err_console.print(f"wrote {count} {exporter.unit} to {where}")


def prepare_reads(store: Store, run_id: str) -> None:
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
