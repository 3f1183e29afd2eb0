"""What several commands share: the console, their common options, and where those options point the engines."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console


class ProfileKind(StrEnum):
    """`run --profile`: the choices typer lists in --help."""

    none = "none"
    cpu = "cpu"


# Piped output is read by people too: give tables room rather than Rich's 80 columns.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)

DB_OPTION = typer.Option(
    "layerbench.db",
    "--db",
    envvar="LAYERBENCH_DB",
    help="Results database: an SQLite file, or a postgresql:// URL (a shared store, docs/how-to/team-results.md).",
)
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
FAULTS_OPTION = typer.Option(
    [],
    "--allow-faults-on",
    metavar="FSID",
    help="Allow cluster.state degraded or recovering on the Ceph cluster you run whose fsid (`ceph fsid`) is FSID "
    "(repeat for each): layerbench then holds one of its OSDs down (`ceph osd add-noup`, `ceph osd down`) around "
    "each such trial. Without it, those cells are refused.",
)
FORMAT_OPTION = typer.Option(
    [],
    "--format-device",
    metavar="DEV",
    help="Agree that the spec's block device DEV is formatted, losing its data (repeat for each). "
    "Without it, layerbench asks on a terminal and refuses otherwise.",
)
