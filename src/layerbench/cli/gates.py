"""`layerbench compare`, `baseline save|list` and `check`: two runs compared, and gated for CI.

Registered in cli/app.py. A gate (--fail-if-slower, --fail-if-faster) makes the command exit with
EXIT_REGRESSION when a comparison is worse than allowed; analysis/gates.py says what that means.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from layerbench.cli.boundary import EXIT_REGRESSION, UsageError, boundary, err_console
from layerbench.cli.options import DB_OPTION
from layerbench.store import baseline
from layerbench.store.db import collector_paused
from layerbench.store.open import open_store

if TYPE_CHECKING:
    from layerbench.report.view import Gate, RunComparison

# report/ and store/read.py (pandas, the analysis) are imported where runs are compared: cli/app.py
# registers these commands, and every other command's start would pay for them.

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)

JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")
SLOWER_OPTION = typer.Option(
    None,
    "--fail-if-slower",
    metavar="PCT",
    help="Exit 7 if a comparison is significantly (after the run's correction) and at least PCT slower: "
    "throughput B/A at or below 1/(1+PCT). PCT: 5% or more, e.g. 10% or 0.10.",
)
FASTER_OPTION = typer.Option(
    None,
    "--fail-if-faster",
    metavar="PCT",
    help="Exit 7 if a comparison's metric is significantly and at least PCT higher (B/A at or above 1+PCT): "
    "for cost metrics such as latency (--metric clat_p99).",
)
METRIC_OPTION = typer.Option(
    None,
    "--metric",
    metavar="NAME",
    help="Compare this sample metric (e.g. clat_p99, lat_mean, iops) instead of each cell's headline "
    "(IOPS, bandwidth or ops/s); only cells that report it in one job and direction.",
)
JUNIT_OPTION = typer.Option(
    None, "--junit", metavar="FILE", help="Also write JUnit XML: one test case per comparison, a failure per breach."
)
BASELINES_OPTION = typer.Option(
    None,
    "--baselines",
    metavar="DIR",
    envvar="LAYERBENCH_BASELINES",
    help="Where named baselines are kept (default: $XDG_DATA_HOME/layerbench/baselines, "
    "i.e. ~/.local/share/layerbench/baselines).",
)
PERCENT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*$")


def amount(text: str | None, flag: str) -> float | None:
    """``10%`` or ``0.10`` as 0.10; a gate below 5% is refused (analysis/gates.py says why)."""
    if text is None:
        return None
    m = PERCENT.match(text)
    if not m:
        raise UsageError(f"{flag} {text!r} is not a percentage (e.g. 10% or 0.10)")
    value = float(m.group(1)) / (100 if m.group(2) else 1)
    from layerbench.report.view import check_amount

    why = check_amount(value)
    if why:
        raise UsageError(f"{flag} {text}: {why}")
    return value


def compare_command(
    run_a: str = typer.Argument(..., metavar="RUN_A", help="The reference run."),
    run_b: str = typer.Argument(..., metavar="RUN_B", help="The run compared with it (B / A)."),
    db: str = DB_OPTION,
    db_b: str | None = typer.Option(
        None, "--db-b", help="RUN_B's database, when it is another file or URL (another host)."
    ),
    as_json: bool = JSON_OPTION,
    fail_if_slower: str = SLOWER_OPTION,
    fail_if_faster: str = FASTER_OPTION,
    metric: str = METRIC_OPTION,
    junit_file: Path = JUNIT_OPTION,
) -> None:
    """The same cells across two runs: the ratio B/A with its 95% CI and whether it is significant.

    Cells are matched by their full configuration. Differences between the two
    hosts' environments that change what a number means (kernel, CPU, memory,
    fio binary, tool versions) are printed as warnings first. With --fail-if-slower
    or --fail-if-faster, exits 7 when a comparison is worse than allowed, naming it.
    """
    with boundary(), collector_paused():  # a command that reads, writes and exits: its memory goes at exit
        from layerbench.report.view import Gate, comparison
        from layerbench.store.read import load_samples

        gate = Gate(amount(fail_if_slower, "--fail-if-slower"), amount(fail_if_faster, "--fail-if-faster"))
        store_a = open_store(db, create=False)
        store_b = open_store(db_b, create=False) if db_b else store_a
        c = comparison(load_samples(store_a, run_a), load_samples(store_b, run_b), metric)  # their samples alone
        _finish(c, gate, as_json, junit_file, f"layerbench compare {c.a} {c.b}")


def check_command(
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    against: str = typer.Option(
        ..., "--against", metavar="NAME|FILE", help="A baseline saved with `baseline save`, or its file."
    ),
    db: str = DB_OPTION,
    baselines: Path = BASELINES_OPTION,
    as_json: bool = JSON_OPTION,
    fail_if_slower: str = SLOWER_OPTION,
    fail_if_faster: str = FASTER_OPTION,
    metric: str = METRIC_OPTION,
    junit_file: Path = JUNIT_OPTION,
) -> None:
    """A run against a stored baseline (B = RUN, A = the baseline), gated as `compare` gates: exits 7 when
    a comparison is worse than --fail-if-slower / --fail-if-faster allow."""
    with boundary(), collector_paused():
        from layerbench.report.view import Gate, comparison
        from layerbench.store.read import load_samples

        gate = Gate(amount(fail_if_slower, "--fail-if-slower"), amount(fail_if_faster, "--fail-if-faster"))
        if not gate.active:
            err_console.print("[yellow]warning:[/] no gate: pass --fail-if-slower PCT (or --fail-if-faster PCT)")
        path = baseline.path_of(against, baselines or baseline.default_dir())
        with baseline.opened(path) as base:
            c = comparison(load_samples(base, "latest"), load_samples(open_store(db, create=False), run_ref), metric)
        _finish(c, gate, as_json, junit_file, f"layerbench check {c.b} --against {against}")


def _finish(c: RunComparison, gate: Gate, as_json: bool, junit_file: Path | None, suite: str) -> None:
    """Print the comparison and what breached the gate; write the JUnit file; exit 7 on a breach."""
    from layerbench.report import json_text, junit
    from layerbench.report.bigtable import print_table
    from layerbench.report.terminal import comparison_json, comparison_table, plain
    from layerbench.report.view import gated

    broken = gated(c, gate)
    if junit_file is not None:
        junit.write(junit_file, suite, c.cells, broken, gate)
    if as_json:
        out = comparison_json(c)
        out["regressions"] = [{"cell_id": b.comparison.cell_id, "why": b.why} for b in broken]
        typer.echo(json_text.dumps(plain(out)))
    else:
        for d in c.environment_differences:
            err_console.print(f"[yellow]warning:[/] environments differ: {d}")
        print_table(console, comparison_table(c.cells, c.a, c.b))  # thousands of rows: not through Rich
    if not c.cells:
        err_console.print(f"[yellow]warning:[/] runs {c.a} and {c.b} share no cell: nothing was compared")
    if gate.active and not as_json:
        for b in broken:
            # One line each, however narrow the terminal: CI logs are searched by line.
            err_console.print(f"[bold red]regression:[/] {escape(b.comparison.label)}: {escape(b.why)}", soft_wrap=True)
        if not broken:
            err_console.print(f"no regression beyond the gate in {len(c.cells)} comparisons")
    if junit_file is not None:
        err_console.print(f"wrote {junit_file}")
    if broken:
        raise typer.Exit(EXIT_REGRESSION)


baseline_app = typer.Typer(
    help="Baselines: a run kept in a file of its own, for `layerbench check RUN --against NAME`.",
    no_args_is_help=True,
)


@baseline_app.command("save")
def save_command(
    name: str = typer.Argument(..., metavar="NAME", help="The baseline's name (letters, digits, '.', '_', '-')."),
    run_ref: str = typer.Argument("latest", metavar="RUN", help="A run id, a unique prefix of one, or 'latest'."),
    db: str = DB_OPTION,
    baselines: Path = BASELINES_OPTION,
    force: bool = typer.Option(False, "--force", help="Replace a baseline of that name."),
) -> None:
    """Keep RUN as baseline NAME: one SQLite file, DIR/NAME.lbbaseline, to commit or carry to CI."""
    with boundary(), collector_paused():
        path, run_id = baseline.save(
            open_store(db, create=False), run_ref, name, baselines or baseline.default_dir(), force
        )
        err_console.print(f"saved run {run_id} as baseline {name!r}: {path}")
        typer.echo(str(path))


@baseline_app.command("list")
def list_command(baselines: Path = BASELINES_OPTION) -> None:
    """The baselines saved in the baselines directory."""
    with boundary():
        directory = baselines or baseline.default_dir()
        for name in baseline.names(directory):
            typer.echo(name)
        err_console.print(f"(in {directory})")
