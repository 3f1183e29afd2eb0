"""A fault on a Ceph cluster the user runs, and only where they named it (`run --allow-faults-on FSID`): one OSD
of their pool held down around each trial of a degraded or recovering cell. Its daemon is not touched: the OSD
gets a noup flag of its own (`ceph osd add-noup`, so that it cannot mark itself up again) and is marked down
(`ceph osd down`); it comes back when the flag is removed (`ceph osd rm-noup`). The flag is in the ledger
before it is set, so `layerbench cleanup` removes a killed run's.

Asked twice: before anything runs, against the fsid the user's conf names (``unallowed``), and as the cell is
built, against the fsid the cluster's monitors answer with (``allowed``), so a conf that names no fsid, or
names another cluster's, cannot lead the fault elsewhere.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.spec.models import RemoteSpec
from layerbench.spec.transports.rbd import OwnClusterSpec
from layerbench.stack.ledger import Ledger, Resource
from layerbench.stack.remote.ceph import cli
from layerbench.stack.remote.ceph.cluster import osd_up
from layerbench.stack.target import BuildContext

FLAG = "--allow-faults-on"
NOUP_KIND = "rbd-own-noup"  # a ledger row: an OSD of the user's cluster held down, with the conf to free it
UP_LIMIT_S = 180.0  # an OSD freed of its flag boots back into the map in seconds


def unallowed(remote: RemoteSpec, faults_on: Sequence[str]) -> str | None:
    """Why a degraded or recovering cell on a cluster the user runs is refused before anything runs: no
    `--allow-faults-on`, or one naming other clusters than the fsid its conf names."""
    own = remote.own_cluster()
    if own is None or own.state == "healthy":
        return None
    what = f"cluster.state {own.state} on the cluster at {own.conf}"
    if not faults_on:
        return (
            f"{what}: layerbench would hold one of your OSDs down; allow it with {FLAG} FSID naming that "
            "cluster (`ceph fsid` prints it), or measure degraded and recovering on a cluster layerbench builds"
        )
    fsid = conf_fsid(own.conf)
    if fsid is not None and fsid not in faults_on:
        return f"{what}: {FLAG} names {', '.join(faults_on)}, not this cluster (fsid {fsid} in its conf)"
    return None  # named, or a conf without an fsid: the monitors' own answer decides (``allowed``)


def conf_fsid(path: str) -> str | None:
    """The fsid a ceph.conf names in [global], or None (no fsid, or no file to read: the build says why)."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    section = ""
    for line in text.splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0].strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        found = re.fullmatch(r"fsid\s*=\s*(\S+)", line)
        if found and section == "global":
            return found.group(1)
    return None


def allowed(access: cli.Access, own: OwnClusterSpec, ctx: BuildContext) -> None:
    """The cluster the conf reaches is one the user named, and its pool keeps taking writes with one OSD down;
    refused with the reason otherwise."""
    fsid = str((cli.ceph_json(ctx.runner, access, "fsid") or {}).get("fsid", ""))
    if fsid not in ctx.faults_on:
        raise PrerequisiteError(
            f"cluster.state {own.state}: the cluster at {own.conf} answers with fsid {fsid}, which {FLAG} does not "
            "name: no OSD of it is touched",
            hint=f"{FLAG} {fsid}, if a fault on that cluster is yours to cause",
        )
    pool = cli.parse_pool(own.pool, cli.ceph(ctx.runner, access, "osd", "pool", "get", own.pool, "all"))
    if pool.size - 1 < pool.min_size:
        raise PrerequisiteError(
            f"cluster.state {own.state}: pool {own.pool} has size {pool.size} and min_size {pool.min_size}; with "
            "one OSD down its PGs would stop taking writes",
        )


def victim(access: cli.Access, pool: str, image: str, runner: Runner) -> int:
    """The OSD to hold down: the last of the acting set of the image's id object, so it holds the image's data."""
    mapped = cli.ceph_json(runner, access, "osd", "map", pool, f"rbd_id.{image}") or {}
    acting = [int(i) for i in mapped.get("acting", []) if int(i) >= 0]
    if len(acting) < 2:
        raise PrerequisiteError(f"pool {pool}: the image's data is on {len(acting)} OSD(s); a fault needs two")
    return acting[-1]


@dataclass
class HeldDown:
    """An OSD of the user's cluster held down by a noup flag of its own (state.py's Switch)."""

    access: cli.Access
    osd_id: int
    ledger: Ledger
    runner: Runner
    _row: int | None = field(default=None, init=False)

    def down(self) -> None:
        held = f"osd.{self.osd_id}"
        self._row = self.ledger.record(NOUP_KIND, held, conf=str(self.access.conf), user=self.access.user)
        cli.ceph(self.runner, self.access, "osd", "add-noup", f"osd.{self.osd_id}")
        cli.ceph(self.runner, self.access, "osd", "down", f"osd.{self.osd_id}")

    def up(self) -> None:
        free(self.access, self.osd_id, self.runner)
        if self._row is not None:
            self.ledger.removed(self._row)
            self._row = None
        wait_up(self.access, self.osd_id, self.runner)

    def is_up(self) -> bool:
        return self._row is None and osd_up(self.access, self.osd_id, self.runner)


def free(access: cli.Access, osd_id: int, runner: Runner) -> None:
    cli.ceph(runner, access, "osd", "rm-noup", f"osd.{osd_id}")


def wait_up(access: cli.Access, osd_id: int, runner: Runner) -> None:
    deadline = time.monotonic() + UP_LIMIT_S
    while not osd_up(access, osd_id, runner):
        if time.monotonic() > deadline:
            raise PrerequisiteError(f"osd.{osd_id} is not up {UP_LIMIT_S:.0f} s after its noup flag was removed")
        time.sleep(1.0)


def reclaim_noup(res: Resource, runner: Runner) -> None:
    """A dead run's OSD held down: its flag removed through the conf that set it (the OSD then boots back)."""
    conf = Path(str(res.detail.get("conf", "")))
    if conf.is_file():
        free(cli.Access(conf, str(res.detail.get("user", cli.USER))), int(res.ident.removeprefix("osd.")), runner)
