"""The commands about this host: what it supports (doctor) and what dead runs left on it (cleanup)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from layerbench.cli.boundary import boundary
from layerbench.cli.options import (
    CACHE_OPTION,
    JSON_OPTION,
    KUBECONFIG_OPTION,
    STATE_OPTION,
    SWARM_OPTION,
    console,
    use_kubeconfig,
    use_swarm_manager,
)
from layerbench.report.doctor import DOCTOR_IMAGES, DoctorRow, doctor_rows
from layerbench.spec.traits import HOST_PROBES


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
    ceph_conf: Path | None = typer.Option(
        None,
        "--ceph-conf",
        metavar="FILE",
        help="Also ask the Ceph cluster you run whose ceph.conf this is (a cell's device.remote.cluster.conf), "
        "with --ceph-pool: whether it answers and is healthy, whether the pool is an RBD pool, what the user "
        "may do. Read-only: nothing is created.",
    ),
    ceph_pool: str | None = typer.Option(None, "--ceph-pool", metavar="NAME", help="The pool of --ceph-conf."),
    ceph_id: str = typer.Option("admin", "--ceph-id", metavar="USER", help="The Ceph user (client.USER)."),
    ceph_keyring: Path | None = typer.Option(
        None, "--ceph-keyring", metavar="FILE", help="That user's keyring (default: where the conf says)."
    ),
) -> None:
    """What this host supports: devices, filesystems, Docker storage drivers, databases, tools, and why not.

    With --kubeconfig (or $KUBECONFIG), also the Kubernetes cluster: its version, each node (Ready, and
    whether it is this host, where the filesystem under test can reach its pods), its StorageClasses.
    With --swarm-manager, also the Docker Swarm: its manager and each node (ready, and whether its own
    daemon answers on this host, where layerbench loads the image and runs commands).
    With --docker-host URL, also that daemon: whether it answers, its version, storage driver and the
    filesystem beneath it.
    With --ceph-conf FILE --ceph-pool NAME, also the Ceph cluster you run: whether it answers as --ceph-id
    and how healthy it is, whether the pool is an RBD pool, and the user's capabilities; nothing is created.
    """
    if ceph_conf is not None and ceph_pool is None:
        raise typer.BadParameter("--ceph-conf needs --ceph-pool: the pool a run would make its image in")
    with boundary():
        from layerbench.run import host

        use_kubeconfig(kubeconfig)
        use_swarm_manager(swarm_manager)
        caps = host.caps(cache_dir, probes=HOST_PROBES, profiler=True, images=DOCTOR_IMAGES)
        rows = doctor_rows(caps) + [DoctorRow(*row) for row in host.engine_rows(docker_host)]
        if ceph_conf is not None and ceph_pool is not None:
            keyring = str(ceph_keyring) if ceph_keyring else None
            rows += [DoctorRow(*row) for row in host.ceph_rows(str(ceph_conf), ceph_pool, ceph_id, keyring)]
        if as_json:
            typer.echo(json.dumps([r._asdict() for r in rows], indent=2))
            return
        table = Table("axis", "value", "status", "why not / notes")
        for r in rows:
            status = "[green]yes[/]" if r.ok else "[red]no[/]"
            table.add_row(r.axis, r.value, status, r.note)
        console.print(table)
