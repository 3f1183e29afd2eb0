"""Starting and resuming a run, as a library call: the run is recorded (its host, its cells) and handed back
as a ``Run``, which executes its rounds when asked and tells its caller of each trial as it ends. The CLI,
the public API (api.py) and the tests start runs the same way; none of them holds a rule of its own."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.errors import PrerequisiteError, SpecError
from layerbench.run import host, nodes
from layerbench.run.decide import Decide, every_cell
from layerbench.run.kinds.single import OnPoint
from layerbench.run.loop import OnTrial, Tally, execute, pending, register_cells
from layerbench.run.results import Results
from layerbench.run.session import budget_for, cells_here, check_server_access, check_space, needed_bytes, running
from layerbench.spec import load as spec_load
from layerbench.spec.devices import device_traits
from layerbench.spec.matrix import Matrix
from layerbench.spec.models import STORED_CONTEXT, Experiment
from layerbench.stack.cleanup import Action


@dataclass(frozen=True)
class Places:
    """Where a run keeps its files on this host."""

    work_dir: Path
    state_dir: Path
    cache_dir: Path


@dataclass(frozen=True)
class Events:
    """What the caller of ``Run.execute`` hears as the run goes on: each trial as it is saved, each monitor
    point as it is taken, and what was reclaimed from a dead run before the first trial."""

    on_trial: OnTrial | None = None
    on_monitor: OnPoint = None
    on_reclaimed: Callable[[Action], None] | None = None


@dataclass
class Run:
    """A recorded run, ready to execute: its experiment, its cells here, where its results go."""

    exp: Experiment
    matrix: Matrix
    store: Results
    run_id: str
    places: Places
    seed: int = 0
    decide: Decide = every_cell  # which cells a round runs: the caller's rule (api.py: a precision target)
    agreed: tuple[str, ...] = ()  # the block devices their owner agreed to format
    faults_on: tuple[str, ...] = ()  # the fsids of Ceph clusters the user runs that may take a fault
    status: Any = None  # what ``decide`` last said of the run's comparisons (api.py: decided, open, what it takes)

    def pending(self) -> int:
        """Trials still to run at most (a precision target may stop cells sooner)."""
        return pending(self.exp, self.matrix, self.store, self.run_id)

    def execute(self, events: Events = Events()) -> Tally:
        """Run the rounds: each trial saved as it ends; an interrupt leaves every finished trial saved and the
        run marked interrupted, so that ``resume`` continues it."""
        refuse_unagreed(self.matrix, self.agreed)
        places = self.places
        budget = budget_for(self.exp, self.matrix, self.store.run(self.run_id).host)
        self.store.mark(self.run_id, "running")
        with running(
            self.store, self.run_id, places.work_dir, places.state_dir, budget, places.cache_dir, self.faults_on
        ) as (ctx, reclaimed):
            for action in reclaimed:
                if events.on_reclaimed:
                    events.on_reclaimed(action)
            if events.on_monitor is not None:
                ctx = dataclasses.replace(ctx, on_monitor=events.on_monitor)
            return execute(self.exp, self.matrix, self.store, self.run_id, ctx, events.on_trial, self.seed, self.decide)


def unagreed(matrix: Matrix, agreed: Sequence[str]) -> list[str]:
    """The block devices the cells would format that their owner has not agreed to (by any of their paths)."""
    named = sorted({str(c.stack.device.path) for c in matrix.cells if device_traits(c.stack.device.kind).named})
    agreed_real = {os.path.realpath(a) for a in agreed}
    return [dev for dev in named if os.path.realpath(dev) not in agreed_real]


def refuse_unagreed(matrix: Matrix, agreed: Sequence[str]) -> None:
    """Never format a device the user did not name: the library refuses what the CLI's prompt did not get."""
    for dev in unagreed(matrix, agreed):
        raise PrerequisiteError(
            f"{dev} would be formatted, and that was not agreed to",
            hint=f"add --format-device {dev} if its data may be lost",
        )


def preflight(exp: Experiment, matrix: Matrix, places: Places, agreed: Sequence[str] = ()) -> None:
    """What refuses a run before anything is recorded or made: no cell left, a device not agreed to, too little
    room in the work directory, a work directory native servers cannot pass."""
    if not matrix.cells:
        raise SpecError(f"every cell of {exp.name!r} was refused on this host", hint="see the reasons with --dry-run")
    refuse_unagreed(matrix, agreed)
    check_space(places.work_dir, needed_bytes(matrix))
    check_server_access(places.work_dir, matrix)


def start(
    exp: Experiment,
    matrix: Matrix,
    store: Results,
    places: Places,
    seed: int = 0,
    node: str | None = None,
    agreed: Sequence[str] = (),
    faults_on: Sequence[str] = (),
) -> Run:
    """Record a new run of ``matrix`` (this host's cells of ``exp``) with this host's description."""
    preflight(exp, matrix, places, agreed)
    described = {**host.describe(places.cache_dir), "seed": seed, **({"node": node} if node else {})}
    urls = nodes.docker_hosts(matrix)
    if urls:  # the machines the cells run on, as their daemons describe them
        described["docker_hosts"] = host.describe_daemons(urls)
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), described)
    register_cells(store, run_id, matrix)
    return Run(exp, matrix, store, run_id, places, seed, agreed=tuple(agreed), faults_on=tuple(faults_on))


def resume(
    store: Results, run_ref: str, places: Places, agreed: Sequence[str] = (), faults_on: Sequence[str] = ()
) -> Run:
    """A run that died (Ctrl-C, kill -9, a crash, a reboot), to continue: refused where the host changed since
    or no longer builds the same cells, so results of unlike conditions are never mixed in one run. A block
    device not in ``agreed`` is refused when the run executes (the CLI asks its owner in between)."""
    run_id = store.resolve_run(run_ref)
    row = store.run(run_id)
    exp = spec_load.validate(row.spec, f"run {run_id}")
    changed = host.changes_since(row.host, places.cache_dir)
    if changed:
        raise PrerequisiteError(
            f"run {run_id} cannot be resumed here: {'; '.join(changed)}",
            hint="start a new run: layerbench run SPEC",
        )
    edited = edited_files(Experiment.model_validate(row.spec, context=STORED_CONTEXT), exp)
    if edited:  # its cells would be another file's: results of two files are never pooled under one cell
        raise PrerequisiteError(
            f"run {run_id} cannot be resumed: {'; '.join(edited)}",
            hint="start a new run of the files as they are now: layerbench run SPEC",
        )
    matrix = cells_here(exp, places.cache_dir, faults_on)
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
    seed = int(row.host.get("seed", 0))
    return Run(exp, matrix, store, run_id, places, seed, agreed=tuple(agreed), faults_on=tuple(faults_on))


def edited_files(stored: Experiment, now: Experiment) -> list[str]:
    """The workloads' own files (job files and their includes, pgbench scripts) whose content is not what the
    run ``stored`` read when it started: each as ``NAME: PATH changed since the run started``."""
    out = []
    for was, is_ in zip(stored.workloads, now.workloads, strict=False):
        before, after = was.own_files(), is_.own_files()
        for path, digest in after.items():
            if path in before and before[path] != digest:
                why = "changed" if before[path] else "may have changed (the layerbench that started it kept no digest)"
                why += " since the run started"
                out.append(f"{is_.name}: {path} {why}")
    return out
