"""A Ceph cluster layerbench builds for a cell: one monitor and one manager here, one OSD (BlueStore on a
backing device made as any device is) on each storage host, a pool of the cell's replicas, an image of the
run's own; refused with Ceph's own words unless it is healthy within a deadline. Torn down in reverse.

The monitor and the manager run on this host, at the first link's near address: they are on no write's path,
and every storage host reaches this host over its own link. Replication between OSDs goes from one storage
host through this host to another (a star, as hosts on one switch), so it crosses two shaped links; this
host forwards only what arrives on the cluster's own veths (their per-device ``forwarding``).
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.spec.models import DeviceSpec, LinkSpec
from layerbench.spec.transports import ClusterSpec
from layerbench.spec.transports.rbd import RecoverySpec
from layerbench.stack.device import device
from layerbench.stack.ledger import tracked
from layerbench.stack.remote.ceph import cli, daemons
from layerbench.stack.remote.ceph.conf import PGS, Paths, conf_text, mon_addr
from layerbench.stack.remote.host import StorageHost, storage_host
from layerbench.stack.remote.link import shaped
from layerbench.stack.target import BuildContext, Device

OSDS_UP_LIMIT_S = 120.0  # measured: three OSDs started at once are up in the map within 6 s
HEALTHY_LIMIT_S = 180.0  # measured: 3 OSDs to HEALTH_OK, 33 PGs active+clean, in 23 s
POLL_S = 1.0
POOL = "lb"
APPLIED_LIMIT_S = 60.0  # an OSD reports its settings to the manager every few seconds
FILL_BYTES = 256 * 2**20  # written while an OSD is down (cluster.state recovering): 64 objects of 4 MiB


@dataclass(frozen=True)
class Cluster:
    paths: Paths
    pool: str
    image: str
    image_bytes: int
    osds: list[tuple[Device, StorageHost]]  # each OSD's backing device and its storage host
    daemons: list[tuple[int, daemons.Daemon]]  # each OSD's id and its process, in the same order
    fill: str | None = None  # an image written while an OSD is down (cluster.state recovering): data to recover
    user: str = cli.USER  # who the clients act as (a cluster the user runs: their user)
    # Their keyring (a file, or /etc/ceph where Ceph looks for one by default) on a cluster the user runs; None:
    # client.admin's of a cluster layerbench builds.
    keyring: Path | None = None

    @property
    def conf(self) -> Path:
        return self.paths.conf

    @property
    def client_keyring(self) -> Path:
        return self.keyring or self.paths.admin_keyring

    @property
    def access(self) -> cli.Access:
        return cli.Access(self.paths.conf, self.user)


@contextmanager
def built(spec: DeviceSpec, cluster: ClusterSpec, link: LinkSpec, ctx: BuildContext) -> Iterator[Cluster]:
    local = spec.model_copy(update={"remote": None})
    paths = Paths(ctx.work_dir / f"ceph-{uuid.uuid4().hex[:8]}")
    with ExitStack() as stack:
        stack.enter_context(directory(paths.root, ctx))
        osds = [stack.enter_context(_osd_host(local, link, ctx)) for _ in range(cluster.osds)]
        mon_address = osds[0][1].address
        _write_config(paths, mon_address, cluster.osds, ctx.runner)
        stack.enter_context(_mon(paths, ctx))
        stack.enter_context(_mgr(paths, ctx))
        osd_daemons = stack.enter_context(_osds(paths, osds, ctx))
        _pool(paths.conf, cluster, ctx.runner)
        recovery_set(paths.conf, cluster.recovery, [i for i, _ in osd_daemons], ctx.runner)
        healthy(paths.conf, ctx.runner)
        image_bytes = _image_bytes(local)
        image = stack.enter_context(_image(paths.conf, image_bytes, ctx))
        fill = stack.enter_context(_image(paths.conf, FILL_BYTES, ctx)) if cluster.state == "recovering" else None
        yield Cluster(paths, POOL, image, image_bytes, osds, osd_daemons, fill)


@contextmanager
def directory(
    root: Path, ctx: BuildContext, subs: tuple[str, ...] = ("mon", "mgr", "osd", "run", "log")
) -> Iterator[Path]:
    """The cluster's own directory (and ``subs`` in it), recorded first, removed whole at the end."""

    def create(rid: int) -> Path:
        root.mkdir(mode=0o700)
        for sub in subs:
            (root / sub).mkdir(mode=0o700)
        return root

    with tracked(ctx.ledger, "dir", str(root), create, lambda p: shutil.rmtree(p, ignore_errors=True)) as made:
        yield made


@contextmanager
def _osd_host(local: DeviceSpec, link: LinkSpec, ctx: BuildContext) -> Iterator[tuple[Device, StorageHost]]:
    with device(local, ctx) as backing, storage_host(ctx) as host, shaped(host, link, ctx):
        routed(host, ctx.runner)
        yield backing, host


def routed(host: StorageHost, runner: Runner) -> None:
    """The storage host reaches the monitor and the other storage hosts through this host; this host forwards
    what arrives on this link (the setting goes with the veth)."""
    runner(host.argv(["ip", "route", "add", "default", "via", host.address]), timeout=30).check()
    Path(f"/proc/sys/net/ipv4/conf/{host.veth}/forwarding").write_text("1")


def _write_config(paths: Paths, mon_address: str, osds: int, runner: Runner) -> None:
    fsid = str(uuid.uuid4())
    paths.conf.write_text(conf_text(fsid, mon_address, paths, osds))
    for argv in setup_argvs(paths, fsid, mon_address):
        runner(argv, timeout=60).check()


def setup_argvs(paths: Paths, fsid: str, mon_address: str) -> list[list[str]]:
    """The keys (the monitor's, the administrator's), the monitor map and the monitor's store."""
    caps = [w for kind in ("mon", "osd", "mgr", "mds") for w in ("--cap", kind, "allow *")]
    admin, mon = str(paths.admin_keyring), str(paths.mon_keyring)
    return [
        ["ceph-authtool", "--create-keyring", admin, "--gen-key", "-n", "client.admin", *caps],
        ["ceph-authtool", "--create-keyring", mon, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"],
        ["ceph-authtool", mon, "--import-keyring", admin],
        ["monmaptool", "--create", "--addv", "a", mon_addr(mon_address), "--fsid", fsid, str(paths.monmap)],
        ["ceph-mon", "--conf", str(paths.conf), "--mkfs", "--id", "a", "--monmap", str(paths.monmap), "--keyring", mon],
    ]


def _answers(conf: Path, runner: Runner, *words: str) -> bool:
    done = runner(cli.ceph_argv(conf, *words), timeout=cli.DEADLINE_S)
    return done.rc == 0


@contextmanager
def _mon(paths: Paths, ctx: BuildContext) -> Iterator[None]:
    ready = lambda: _answers(paths.conf, ctx.runner, "mon", "stat")  # noqa: E731
    with daemons.running(daemons.mon_argv(paths.conf, "a"), ready, paths.log("mon.a.stdout"), ctx):
        yield


@contextmanager
def _mgr(paths: Paths, ctx: BuildContext) -> Iterator[None]:
    data = paths.data("mgr", "x")
    data.mkdir(mode=0o700)
    keyring = str(data / "keyring")
    ctx.runner(["ceph-authtool", "--create-keyring", keyring, "--gen-key", "-n", "mgr.x"], timeout=30).check()
    caps = ["mon", "allow profile mgr", "osd", "allow *", "mds", "allow *"]
    cli.ceph(ctx.runner, paths.conf, "auth", "add", "mgr.x", *caps, "-i", keyring)

    def ready() -> bool:
        done = ctx.runner(cli.ceph_argv(paths.conf, "mgr", "stat"), timeout=cli.DEADLINE_S)
        return done.rc == 0 and bool(json.loads(done.stdout or "{}").get("available"))

    with daemons.running(daemons.mgr_argv(paths.conf, "x"), ready, paths.log("mgr.x.stdout"), ctx):
        yield


@contextmanager
def _osds(
    paths: Paths, osds: list[tuple[Device, StorageHost]], ctx: BuildContext
) -> Iterator[list[tuple[int, daemons.Daemon]]]:
    """Every OSD made at once, started at once and waited for together: one at a time, each took 7.5 s here
    (BlueStore's mkfs 2.2 s, then 5 s to boot into the map), 22 s of a three-OSD cluster's 41."""
    # Their ids one by one, in the hosts' order (the last is the one a degraded trial stops); the rest at once.
    news = [_new_osd(paths, ctx.runner) for _ in osds]
    with ThreadPoolExecutor(len(osds)) as pool:
        ids = list(pool.map(lambda n, made: _prepared(paths, made[0], ctx.runner, *n), news, osds))
    with ExitStack() as stack:
        started = []
        for osd_id, (_, host) in zip(ids, osds, strict=True):
            argv = daemons.osd_argv(paths.conf, osd_id, host.remote_address, host.netns)
            log = paths.log(f"osd.{osd_id}.stdout")
            started.append((osd_id, stack.enter_context(daemons.running(argv, lambda: True, log, ctx, host))))
        _all_up(paths.conf, started, ctx.runner)
        yield started


def _all_up(conf: Path, started: list[tuple[int, daemons.Daemon]], runner: Runner) -> None:
    """Every OSD of ``started`` up in the map; one that died or stalls is an error with its log's tail."""
    deadline = time.monotonic() + OSDS_UP_LIMIT_S
    while True:
        done = runner(cli.ceph_argv(conf, "osd", "dump"), timeout=cli.DEADLINE_S)
        up = cli.up_osds(done.stdout) if done.rc == 0 else set()
        if all(osd_id in up for osd_id, _ in started):
            return
        for osd_id, daemon in started:
            daemon.check_alive()
            if time.monotonic() > deadline and osd_id not in up:
                daemon.stalled(f"osd.{osd_id} not up after {OSDS_UP_LIMIT_S:.0f}s")
        time.sleep(POLL_S)


def _new_osd(paths: Paths, runner: Runner) -> tuple[int, str]:
    """A new OSD's id in the map, and its uuid."""
    osd_uuid = str(uuid.uuid4())
    return cli.parse_osd_id(cli.ceph(runner, paths.conf, "osd", "new", osd_uuid)), osd_uuid


def _prepared(paths: Paths, backing: Device, runner: Runner, osd_id: int, osd_uuid: str) -> int:
    """The new OSD ``osd_id``: its BlueStore made on ``backing`` and its key registered with the monitor."""
    data = paths.data("osd", str(osd_id))
    data.mkdir(mode=0o700)
    (data / "block").symlink_to(backing.path)
    # --no-mon-config: a new OSD has no key the monitor knows yet, and would wait for its config.
    mkfs = ["ceph-osd", "--conf", str(paths.conf), "--id", str(osd_id), "--mkfs", "--mkkey", "--no-mon-config"]
    runner([*mkfs, "--osd-uuid", osd_uuid], timeout=300).check()
    caps = ["osd", "allow *", "mon", "allow profile osd", "mgr", "allow profile osd"]
    cli.ceph(runner, paths.conf, "auth", "add", f"osd.{osd_id}", *caps, "-i", str(data / "keyring"))
    return osd_id


def osd_up(conf: cli.Conf, osd_id: int, runner: Runner) -> bool:
    done = runner(cli.ceph_argv(conf, "osd", "dump"), timeout=cli.DEADLINE_S)
    return done.rc == 0 and osd_id in cli.up_osds(done.stdout)


def _pool(conf: Path, cluster: ClusterSpec, runner: Runner) -> None:
    cli.ceph(runner, conf, "osd", "pool", "create", POOL, str(PGS), str(PGS), "replicated")
    sure = ["--yes-i-really-mean-it"] if cluster.size == 1 else []
    cli.ceph(runner, conf, "osd", "pool", "set", POOL, "size", str(cluster.size), *sure)
    cli.ceph(runner, conf, "osd", "pool", "set", POOL, "min_size", str(cluster.writes_need()))
    cli.rbd(runner, conf, "pool", "init", POOL, timeout=120)


# Each recovery setting of the spec and the names Ceph reads it by: the plain name wins only where it is not 0,
# else the device class's (an OSD on a device it takes for a hard disk sleeps 0.1 s between recovery operations).
RECOVERY_NAMES = {
    "osd_recovery_sleep": ("osd_recovery_sleep", "osd_recovery_sleep_hdd", "osd_recovery_sleep_ssd",
                           "osd_recovery_sleep_hybrid"),
    "osd_recovery_max_active": ("osd_recovery_max_active", "osd_recovery_max_active_hdd",
                                "osd_recovery_max_active_ssd"),
    "osd_max_backfills": ("osd_max_backfills",),
}  # fmt: skip


def recovery_set(conf: Path, recovery: RecoverySpec | None, osd_ids: list[int], runner: Runner) -> None:
    """The spec's recovery settings on every OSD, for every device class (``ceph config set osd``), once each
    OSD reports them in force (what a trial records is that report: it lags a change by seconds)."""
    wanted = {}
    for key, value in (recovery.given() if recovery else {}).items():
        for name in RECOVERY_NAMES[key]:
            cli.ceph(runner, conf, "config", "set", "osd", name, f"{value:g}")
            wanted[name] = float(value)
    deadline = time.monotonic() + APPLIED_LIMIT_S
    for osd_id in osd_ids if wanted else []:
        while not _in_force(conf, osd_id, wanted, runner):
            if time.monotonic() > deadline:
                raise PrerequisiteError(f"osd.{osd_id} does not report {wanted} in force after {APPLIED_LIMIT_S:.0f}s")
            time.sleep(POLL_S)


def _in_force(conf: Path, osd_id: int, wanted: dict[str, float], runner: Runner) -> bool:
    found = cli.parse_config_show(cli.ceph(runner, conf, "config", "show-with-defaults", f"osd.{osd_id}"), wanted)
    return all(name in found and float(found[name]) == value for name, value in wanted.items())


def healthy(
    conf: cli.Conf,
    runner: Runner,
    limit_s: float = HEALTHY_LIMIT_S,
    wanted: Callable[[cli.Status], bool] = cli.Status.clean,
) -> cli.Status:
    """The cluster's status once ``wanted`` (HEALTH_OK with every PG active+clean); refused in Ceph's words after
    ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while True:
        now = cli.status(runner, conf)
        if wanted(now):
            return now
        if time.monotonic() > deadline:
            raise PrerequisiteError(f"the Ceph cluster is not healthy after {limit_s:.0f}s: {now.said()}")
        time.sleep(POLL_S)


def _image_bytes(local: DeviceSpec) -> int:
    """Half of one OSD's device: room for a whole replica beside BlueStore's own metadata."""
    return int(local.size) // 2 // 2**20 * 2**20


@contextmanager
def _image(conf: Path, size: int, ctx: BuildContext) -> Iterator[str]:
    name = f"lb-{ctx.run_id[:12]}-{uuid.uuid4().hex[:6]}"

    def create(rid: int) -> str:
        cli.rbd(ctx.runner, conf, "create", f"{POOL}/{name}", "--size", f"{size // 2**20}M")
        return name

    remove = lambda n: cli.rbd(ctx.runner, conf, "rm", "--no-progress", f"{POOL}/{name}", timeout=300)  # noqa: E731
    with tracked(ctx.ledger, "rbd-image", name, create, remove, conf=str(conf)) as made:
        yield made


def settings(conf: cli.Conf, runner: Runner, pool_name: str = POOL) -> dict[str, object]:
    """What the cluster runs with, read back from it (not from the spec): the pool and each OSD's device."""
    pool = cli.parse_pool(pool_name, cli.ceph(runner, conf, "osd", "pool", "get", pool_name, "all"))
    osds = cli.parse_osd_metadata(cli.ceph(runner, conf, "osd", "metadata"))
    return {"size": pool.size, "min_size": pool.min_size, "pg_num": pool.pg_num, "osds": osds}
