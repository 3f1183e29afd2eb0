"""RBD: a Ceph cluster layerbench builds (cluster.py: daemons.py, conf.py, the `ceph`/`rbd` adapter cli.py) or
one the user runs (own.py), and the image's clients here (clients.py). Unlike the other transports it owns its
whole build: N backing devices, N storage hosts, one cluster (``built``, the registry's ``build``), or an image
in the user's pool."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.proc import Runner
from layerbench.spec.models import DeviceSpec
from layerbench.spec.transports import FIO_CLIENT, FUSE_CLIENT
from layerbench.spec.transports.rbd import OWN, OwnClusterSpec
from layerbench.stack.ledger import Resource
from layerbench.stack.remote.ceph import clients, cluster, faults, own
from layerbench.stack.remote.ceph.state import Observed, States, Stopped
from layerbench.stack.remote.needs import Need
from layerbench.stack.target import BuildContext, Device, TrialStates

# What the cluster and each client need of this host (features of HostCaps.remote, named by spec/transports/rbd.py).
NEEDS = {
    "rbd": Need(
        {
            "ceph-mon": "ceph-mon",
            "ceph-mgr": "ceph-mgr",
            "ceph-osd": "ceph-osd",
            "monmaptool": "ceph-base",
            "ceph": "ceph-common",
            "rbd": "ceph-common",
            "ceph-authtool": "ceph-common",
        }
    ),
    OWN: Need({"ceph": "ceph-common", "rbd": "ceph-common"}),
    "rbd-fio": Need(
        {"fio": "fio"}, tried=(("fio", "--enghelp=rbd"), "this fio has no rbd engine (it is built without librbd)")
    ),
    "rbd-fuse": Need({"rbd-fuse": "rbd-fuse", "fusermount": "fuse"}),
    "rbd-kernel": Need({"rbd": "ceph-common"}, clients.MODULES),
}


@contextmanager
def built(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    remote = spec.remote
    assert remote is not None
    theirs = remote.own_cluster()
    if theirs is not None:
        with (
            own.attached(theirs, int(spec.size), ctx) as c,
            _client(c, remote.client, _info(c, remote.transport), _their_states(c, theirs, ctx), ctx) as dev,
        ):
            yield dev
        return
    plan = remote.cluster_built()
    assert plan is not None
    with cluster.built(spec, plan, remote.link, ctx) as c:
        first, host = c.osds[0]
        info = _info(c, remote.transport) | {
            # The block device whose counters judge a trial where fio reaches the image itself: the first OSD's.
            "backing": first.path,
            "backing_kind": first.kind,
            "storage_host": host.netns,
            "storage_hosts": [h.netns for _, h in c.osds],
            "link": remote.link.label() or "unshaped",
        }
        # Each trial's cluster state, applied and recorded (state.py).
        with _client(c, remote.client, info, States(c, plan, ctx.runner, Stopped(c, ctx.runner)), ctx) as dev:
            yield dev


def _their_states(c: cluster.Cluster, theirs: OwnClusterSpec, ctx: BuildContext) -> TrialStates:
    """A cluster the user runs: observed only, or (a fault they allowed: own.attached checked) one of its OSDs
    that hold the image held down around each trial."""
    if theirs.state == "healthy":
        return Observed(c, ctx.runner)
    held = faults.HeldDown(c.access, faults.victim(c.access, c.pool, c.image, ctx.runner), ctx.ledger, ctx.runner)
    return States(c, theirs, ctx.runner, held)


def _info(c: cluster.Cluster, transport: str) -> dict[str, object]:
    # The settings in force are read with each trial (state.py), where they are recorded: not here too.
    return {"transport": transport, "image": f"{c.pool}/{c.image}"}


@contextmanager
def _client(
    c: cluster.Cluster, client: str, info: dict[str, object], states: TrialStates, ctx: BuildContext
) -> Iterator[Device]:
    """The image as the cell's client reaches it: fio's rbd engine (no device here), rbd-fuse or krbd."""
    if client == FIO_CLIENT:
        dev = clients.fio_device(c)
        yield Device(dev.path, dev.kind, dev.size_bytes, {**dev.info, **info}, states)
        return
    make = clients.fuse_device if client == FUSE_CLIENT else clients.kernel_device
    with make(c, ctx) as dev:
        yield Device(dev.path, dev.kind, dev.size_bytes, {**dev.info, **info}, states)


def _gone_with_its_cluster(res: Resource, runner: Runner) -> None:
    """A dead run's image: its cluster's daemons, devices and namespaces are removed by their own rows, and the
    image goes with the OSDs' devices."""


def _unmapped(res: Resource, runner: Runner) -> None:
    """A dead run's krbd mapping, removed through sysfs with ``force``: `rbd device unmap` would ask the cluster,
    which died with the run."""
    num = Path(res.ident).name.removeprefix("rbd")
    if num.isdigit() and (SYS_RBD / "devices" / num).exists():
        (SYS_RBD / "remove").write_text(f"{num} force")


SYS_RBD = Path("/sys/bus/rbd")
# What cleanup removes of a dead run's, by ledger kind (daemons are "server" rows).
REMOVERS = {
    "rbd-image": _gone_with_its_cluster,
    own.IMAGE_KIND: own.reclaim_image,
    "rbd-map": _unmapped,
    "rbd-fuse": clients.reclaim_fuse,
    faults.NOUP_KIND: faults.reclaim_noup,
}
unallowed = faults.unallowed
