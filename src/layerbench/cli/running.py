"""The commands that run trials: run (a new run) and resume (one that died). They parse, confirm and print;
starting, executing and resuming a run is the library's (api.py, run/start.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from layerbench.cli.boundary import EXIT_TRIALS_FAILED, UsageError, boundary, err_console
from layerbench.cli.cells import print_plan
from layerbench.cli.options import (
    CACHE_OPTION,
    DB_OPTION,
    FAULTS_OPTION,
    FORMAT_OPTION,
    KUBECONFIG_OPTION,
    STATE_OPTION,
    SWARM_OPTION,
    WORK_OPTION,
    ProfileKind,
    console,
    use_kubeconfig,
    use_swarm_manager,
)
from layerbench.cli.progress import TrialProgress
from layerbench.cli.results import prepare_reads, print_run
from layerbench.errors import SpecError
from layerbench.run import nodes
from layerbench.spec import load as spec_load
from layerbench.spec.matrix import Matrix
from layerbench.spec.models import Experiment
from layerbench.store.db import Store
from layerbench.store.open import open_store

if TYPE_CHECKING:  # the run stage imports the stack: the CLI loads it only for a command that runs trials
    from layerbench.cli.live import Serve
    from layerbench.records.trial import TrialRecord
    from layerbench.run.loop import OnTrial
    from layerbench.run.schedule import Trial
    from layerbench.run.start import Action, Run


def run(
    spec: str = typer.Argument(..., help="A preset name (see `layerbench presets`) or a path to a YAML spec."),
    db: str = DB_OPTION,
    work_dir: Path = WORK_OPTION,
    state_dir: Path = STATE_OPTION,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the cells and the refused ones with reasons; touch nothing."
    ),
    seed: int = typer.Option(0, help="Seed of the shuffled trial order; the same seed gives the same order."),
    cache_dir: Path = CACHE_OPTION,
    format_device: list[str] = FORMAT_OPTION,
    allow_faults_on: list[str] = FAULTS_OPTION,
    profile: ProfileKind | None = typer.Option(
        None,
        "--profile",
        help="cpu: record the whole machine with perf during each cell's first trial, for the report's flame "
        "graphs and `advise` (the spec's `profile:` field, overridden).",
    ),
    budget: str | None = typer.Option(
        None,
        "--budget",
        metavar="TIME|TRIALS",
        help="Decide by comparisons within this budget (6m, 1.5h: the trials' own time; 200: trials): every cell "
        "gets its first rounds, then each round goes to the comparisons still undecided that can be decided "
        "within what is left; the verdicts hold whenever the run stops, and `show` says what would decide the "
        "rest (the spec's trials.budget).",
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
        if budget is not None:
            exp = spec_load.with_budget(exp, budget)
        matrix = cells_here(exp, cache_dir, allow_faults_on)
        if node is not None:
            matrix = nodes.only(matrix, node)
        serve = _serve(metrics_address, metrics_port)
        if parallel_nodes and serve is not None:
            raise UsageError("--metrics-port serves one run: run each node with --node and its own port instead")
        if parallel_nodes and not dry_run:
            own = _own_argv(spec, db, work_dir, state_dir, cache_dir, seed, format_device, profile)
            own += [x for fsid in allow_faults_on for x in ("--allow-faults-on", fsid)]
            own += ["--budget", budget] if budget is not None else []
            print_plan(matrix)
            _warn_shared(matrix)
            raise typer.Exit(nodes.run_all(nodes.children(matrix, own), typer.echo))
        if dry_run or not matrix.cells:
            print_plan(matrix)
        if dry_run:
            return
        if not matrix.cells:
            raise SpecError(f"every cell of {exp.name!r} was refused on this host", hint="see the reasons above")
        from layerbench import api

        agreed = confirm_formatting(matrix, format_device)
        places = api.Places(work_dir, state_dir, cache_dir)
        handle = api.start_run(exp, db, places, seed, agreed, matrix, node, allow_faults_on)
        store = open_store(db)
        print_plan(matrix, header=f"run {handle.run_id}: {exp.name}")
        if _execute(handle, store, serve):
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
    db: str,
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


def confirm_formatting(matrix: Matrix, agreed: list[str]) -> list[str]:
    """The block devices the owner agreed to format: on the command line, or at a prompt on a terminal. The
    library refuses any other (run/start.py), so one not agreed here ends the command with the reason."""
    from layerbench.run import host
    from layerbench.run.start import refuse_unagreed, unagreed

    confirmed = list(agreed)
    for dev in unagreed(matrix, agreed):
        if not sys.stdin.isatty():
            break
        answer = typer.prompt(
            f"layerbench will FORMAT {host.describe_block(dev)}; everything on it is lost. Type {dev} to go on",
            default="",
            show_default=False,
        )
        if answer.strip() == dev:
            confirmed.append(dev)
    refuse_unagreed(matrix, confirmed)
    return confirmed


def _execute(handle: Run, store: Store, serve: Serve | None = None) -> int:
    """Execute the run with a progress bar (and the live metrics with --metrics-port), then print its results."""
    from layerbench.api import Events
    from layerbench.cli.live import both, live

    total = handle.pending()
    with TrialProgress(console, total) as progress, live(serve, handle.run_id, total) as state:
        on_trial = _said(handle, progress) if state is None else both(_said(handle, progress), state)
        events = Events(on_trial, state.monitor_point if state is not None else None, _reclaimed)
        outcome = handle.execute(events)
    print_run(store, handle.run_id, as_json=False)
    prepare_reads(store, handle.run_id)
    again = f" ({outcome.again} measured again: the host was busy)" if outcome.again else ""
    where = f"results in {store.location} (run {handle.run_id})"
    console.print(f"{outcome.ok} trials ok{again}, {outcome.failed} failed · {where}")
    return outcome.failed


def _said(handle: Run, progress: TrialProgress) -> OnTrial:
    """The bar's on_trial, and a budget run's line of what is decided each time a new round was chosen."""
    seen: list[object] = [None]

    def on_trial(trial: Trial, record: TrialRecord) -> None:
        if handle.status is not None and handle.status is not seen[0]:
            seen[0] = handle.status
            progress.decisions(handle.status.line(), handle.status.round_trials)
        progress.advance(trial, record)

    return on_trial


def _reclaimed(action: Action) -> None:
    err_console.print(f"[dim]reclaimed from a dead run:[/] {action.describe()} {action.error or ''}")


def resume(
    run_ref: str = typer.Argument(..., metavar="RUN", help="The run to continue: an id, a unique prefix, or 'latest'."),
    db: str = DB_OPTION,
    work_dir: Path = WORK_OPTION,
    state_dir: Path = STATE_OPTION,
    cache_dir: Path = CACHE_OPTION,
    format_device: list[str] = FORMAT_OPTION,
    allow_faults_on: list[str] = FAULTS_OPTION,
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
        from layerbench import api

        use_kubeconfig(kubeconfig)
        use_swarm_manager(swarm_manager)
        store = open_store(db, create=False, writes=True)
        places = api.Places(work_dir, state_dir, cache_dir)
        handle = api.resume_run(run_ref, store, places, format_device, allow_faults_on)
        handle.agreed = tuple(confirm_formatting(handle.matrix, format_device))
        if _execute(handle, store):
            raise typer.Exit(EXIT_TRIALS_FAILED)
