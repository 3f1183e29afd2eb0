"""A run's life around the run loop: its lock, ledger, work directory and status.

Shared by `run` (a new run) and `resume` (a run that died): both reclaim what
dead runs left, hold the run's lock, and mark the run's status when it ends,
whether it finished, failed or was interrupted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from layerbench import proc
from layerbench.errors import PrerequisiteError
from layerbench.profiling import perf
from layerbench.run.results import Results
from layerbench.spec.devices import device_traits
from layerbench.spec.matrix import Matrix, expand, expand_stacks
from layerbench.spec.models import Experiment
from layerbench.spec.profiles import Budget
from layerbench.spec.rules import why_not
from layerbench.spec.traits import traits
from layerbench.stack.capabilities import DEFAULT_CACHE, probe
from layerbench.stack.cleanup import Action, reclaim
from layerbench.stack.fleet import check_passable
from layerbench.stack.ledger import Ledger
from layerbench.stack.remote import fault_refused
from layerbench.stack.runlock import hold
from layerbench.stack.target import BuildContext
from layerbench.workloads import footprint

# Room beyond the loop files: mkfs metadata, the tools image, logs.
HEADROOM = 1 * 2**30


def cells_here(exp: Experiment, cache_dir: Path, faults_on: Sequence[str] = ()) -> Matrix:
    """The experiment's cells on this host: refused where the host lacks a layer or a tool, where a cell's files
    would not fit on its device, or where a cell's fault is on a Ceph cluster the user runs that ``faults_on``
    does not name (`run --allow-faults-on`)."""
    stacks = expand_stacks(exp)
    images = tuple(sorted({s.server.image for s in stacks if s.server is not None and s.server.image}))
    caps = probe(
        proc.run,
        cache_dir,
        profiler=perf.missing if exp.profile != "none" else None,
        images=images,
        engines=tuple(e for s in stacks for e in s.node_engines()),  # each engine's probe learns what they ask
    )
    rule = lambda s, c: why_not(s, c) or fault_refused(s, faults_on)  # noqa: E731
    return expand(exp, caps, rule, footprint.files, footprint.USABLE_SHARE, footprint.refused)


def needed_bytes(matrix: Matrix) -> int:
    """The largest loop file (a device whose size is the disk's): what a run needs at least (the pool holds more
    only where the disk has room)."""
    loops = [int(c.stack.device.size) for c in matrix.cells if device_traits(c.stack.device.kind).takes == "disk"]
    return max(loops, default=0) + HEADROOM


def check_space(work_dir: Path, need: int) -> None:
    probe = work_dir
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < need:
        raise PrerequisiteError(
            f"{probe} has {free / 2**30:.1f} GiB free; this experiment needs about {need / 2**30:.1f} GiB",
            hint="free space, shrink device.size, or point --work-dir at a larger disk",
        )


def check_server_access(work_dir: Path, matrix: Matrix) -> None:
    """Native servers run unprivileged, with their data below --work-dir: its parents must let them pass."""
    if any(c.stack.server is not None and not traits(c.stack.engine.kind).layer for c in matrix.cells):
        check_passable(work_dir)


def budget_for(exp: Experiment, matrix: Matrix, host: dict[str, Any]) -> Budget:
    """What the resource profiles divide: the spec's resources, else this host's; by the most instances."""
    res = exp.resources
    most = max((c.stack.instances for c in matrix.cells if c.stack.server is not None), default=1)
    cpus = res.cpus or float(host.get("cpus") or os.cpu_count() or 1)
    memory = res.memory or int(host.get("memory_bytes") or 0)
    return Budget(cpus, memory, most, res.read_bps, res.write_bps)


@contextlib.contextmanager
def running(
    store: Results,
    run_id: str,
    work_dir: Path,
    state_dir: Path,
    budget: Budget | None = None,
    cache_dir: Path = DEFAULT_CACHE,
    faults_on: Sequence[str] = (),
) -> Iterator[tuple[BuildContext, list[Action]]]:
    """Lock the run, reclaim what dead runs left, yield the build context; record how the run ended."""
    with hold(state_dir, run_id):
        ledger = Ledger(state_dir / "ledger.db", run_id)
        reclaimed = reclaim(ledger, state_dir, proc.run)
        run_dir = _private_dir(work_dir / run_id)
        status = "failed"
        try:
            ctx = BuildContext(run_dir, ledger, run_id, proc.run, budget, cache_dir, faults_on=frozenset(faults_on))
            yield ctx, reclaimed
            status = "finished"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            store.finish_run(run_id, status)
            ledger.close()
            # Not empty means something is still live in the ledger: cleanup handles it.
            with contextlib.suppress(OSError):
                run_dir.rmdir()


def _private_dir(path: Path) -> Path:
    """The run's own directory, private (0700), in a work directory others may pass but not list."""
    if not path.parent.exists():
        # Parallel runs (--parallel-nodes' children) start together: another may make it first.
        with contextlib.suppress(FileExistsError):
            path.parent.mkdir(parents=True, mode=0o711)
            os.chmod(path.parent, 0o711)  # mkdir's mode is masked by the umask
    path.mkdir(exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path
